"""`rankcli split`: query-level folds in MSLR's rotation, one split as experiment draws it, groups kept together;
every column and the provenance kept; atomic, with the --overwrite rules of directory outputs; read by experiment."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rankcli.formats.parquet import read_metadata, write_dataset
from tests.conftest import run_main
from tests.experiment.test_experiment import synthetic


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """23 queries with a topic column (a string; queries 2k and 2k+1 share topic k) and a docid column."""
    ds = synthetic(23, seed=5)
    ds.docids = np.array([f"d{i}" for i in range(ds.n_rows)], dtype=object)
    path = tmp_path_factory.mktemp("split") / "data.parquet"
    query = np.repeat(np.arange(23), np.diff(ds.offsets))
    write_dataset(path, ds, extra_columns={"topic": np.array([f"t{q // 2}" for q in query], dtype=object)})
    return path


def split(capsys, *args):
    return run_main(capsys, "split", *args)


def _table(path):
    return pq.read_table(path)


def _query_ids(path):
    q = _table(path).column("qid").to_numpy()
    return q[np.concatenate(([True], q[1:] != q[:-1]))]


def _rows_by_qid(path):
    t = _table(path).to_pylist()
    out = {}
    for r in t:
        out.setdefault(r["qid"], []).append(r)
    return out


def test_folds_in_mslr_rotation_keep_every_row_and_column(capsys, data, tmp_path):
    status, out, err = split(capsys, data, "-o", tmp_path / "f", "--folds", "5", "--seed", "7")
    assert status == 0, err
    assert "S1 5, S2 5, S3 5, S4 4, S5 4 (seed 7)" in err  # 23 queries: the first 23 mod 5 parts hold one more
    source = _rows_by_qid(data)
    parts = {}
    for k in range(1, 6):
        d = tmp_path / "f" / f"Fold{k}"
        assert sorted(p.name for p in d.iterdir()) == ["test.parquet", "train.parquet", "vali.parquet"]
        qids = {name: _query_ids(d / f"{name}.parquet") for name in ("train", "vali", "test")}
        assert not set(qids["test"]) & (set(qids["train"]) | set(qids["vali"]))
        assert not set(qids["train"]) & set(qids["vali"])
        assert sorted(np.concatenate(list(qids.values())).tolist()) == sorted(source)
        for name in ("train", "vali", "test"):
            path = d / f"{name}.parquet"
            assert _table(path).column_names == _table(data).column_names  # topic and docid kept
            assert _rows_by_qid(path) == {q: source[q] for q in qids[name]}  # every row as it was
            meta = read_metadata(path)
            assert (meta["split_source"], meta["split_seed"], meta["split_method"], meta["split_part"],
                    meta["split_fold"]) == (str(data), "7", "folds=5", name, str(k))
            assert meta["kind"] == "dataset" and len(meta["split_source_blake2b"]) == 64
            for s, q in zip(meta["split_parts"].split(","), [qids[name]] if name != "train" else [None]):
                if q is not None:
                    assert parts.setdefault(s, tuple(q)) == tuple(q)  # S4 is Fold1's vali and Fold2's train...
        assert read_metadata(d / "train.parquet")["split_parts"] == ",".join(
            f"S{(k - 1 + j) % 5 + 1}" for j in range(3))
    assert sorted(parts) == ["S1", "S2", "S3", "S4", "S5"]
    tested = np.concatenate([_query_ids(tmp_path / "f" / f"Fold{k}" / "test.parquet") for k in range(1, 6)])
    assert sorted(tested.tolist()) == sorted(source)  # every query tested exactly once
    assert "Fold1/train.parquet" in out and "S1,S2,S3" in out
    marker = json.loads((tmp_path / "f" / ".rankcli-output.json").read_text())
    assert marker["kind"] == "split" and marker["files"] == [f"Fold{k}" for k in range(1, 6)]


def test_a_seed_reproduces_the_files_and_another_seed_draws_others(capsys, data, tmp_path):
    for name, seed in (("a", "1"), ("b", "1"), ("c", "2")):
        assert split(capsys, data, "-o", tmp_path / name, "--folds", "3", "--seed", seed)[0] == 0
    for k in (1, 2, 3):
        for part in ("train", "vali", "test"):
            rel = f"Fold{k}/{part}.parquet"
            assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes()
    assert any(not np.array_equal(_query_ids(tmp_path / "a" / f"Fold{k}/test.parquet"),
                                  _query_ids(tmp_path / "c" / f"Fold{k}/test.parquet")) for k in (1, 2, 3))


def test_one_split_is_what_experiment_draws_for_trial_0(capsys, data, tmp_path):
    from rankcli import experiment as ex
    from rankcli.experiment.data import trial_split

    status, _, err = split(capsys, data, "-o", tmp_path / "s", "--split", "0.6,0.2,0.2", "--seed", "11")
    assert status == 0, err
    trial = trial_split(ex.load_data(data), ex.ExperimentConfig(split=(0.6, 0.2, 0.2), seed=11), 0)
    for name, ds in zip(("train", "vali", "test"), trial):
        assert _query_ids(tmp_path / "s" / f"{name}.parquet").tolist() == ds.qids[ds.offsets[:-1]].tolist()
    # no validation fraction: no vali.parquet
    status, out, err = split(capsys, data, "-o", tmp_path / "nv", "--split", "0.7,0,0.3", "--json")
    assert status == 0, err
    doc = json.loads(out)
    assert [f["path"] for f in doc["files"]] == ["train.parquet", "test.parquet"]
    assert doc["part_queries"] == [16, 0, 7] and doc["method"] == "split" and doc["queries"] == 23


def test_group_by_keeps_rows_sharing_a_value_in_one_part(capsys, data, tmp_path):
    status, out, err = split(capsys, data, "-o", tmp_path / "g", "--folds", "4", "--group-by", "topic", "--json")
    assert status == 0, err
    assert json.loads(out)["groups"] == 12
    where = {}
    for k in range(1, 5):
        t = _table(tmp_path / "g" / f"Fold{k}" / "test.parquet")
        for topic in set(t.column("topic").to_pylist()):
            assert topic not in where  # a topic is tested in one fold only
            where[topic] = k
        assert read_metadata(tmp_path / "g" / f"Fold{k}" / "test.parquet")["split_group_by"] == "topic"
    assert len(where) == 12


def test_experiment_reads_the_folds_as_they_are(capsys, data, tmp_path):
    assert split(capsys, data, "-o", tmp_path / "f", "--folds", "3")[0] == 0
    status, _, err = run_main(capsys, "experiment", tmp_path / "f", "--folds", "-o", tmp_path / "e", "--losses",
                              "lambdamart,xendcg", "--trees", "2", "--no-plots", "--json")
    assert status == 0, err
    assert "6 units (2 losses x 3 folds" in err
    assert split(capsys, data, "-o", tmp_path / "s", "--split", "0.5,0.25,0.25")[0] == 0
    status, _, err = run_main(capsys, "experiment", tmp_path / "s", "--folds", "-o", tmp_path / "e1", "--losses",
                              "xendcg", "--trees", "2", "--no-plots")
    assert status == 0, err


@pytest.mark.parametrize("args, status, message", [
    ([], 2, "give --folds K (K folds in MSLR's rotation) or --split TRAIN,VALID,TEST (one split), got neither"),
    (["--folds", "3", "--split", "0.6,0.2,0.2"], 2, "give --folds K"),
    (["--folds", "2"], 2, "--folds must be >= 3 (each fold trains on K-2 parts, validates on one and tests on one)"),
    (["--split", "0.6,0.6"], 2, "--split: expected three fractions"),
    (["--folds", "24"], 3, "23 queries, too few for 24 parts (24 folds)"),
    (["--folds", "3", "--group-by", "nope"], 3, "no column 'nope' to group by (columns: qid, label, docid, topic"),
    (["--folds", "13", "--group-by", "topic"], 3, "12 groups of queries, too few for 13 parts"),
    (["--folds", "3", "--seed", "-1"], 2, "--seed must be >= 0, got -1"),
])
def test_usage_and_data_errors(capsys, data, tmp_path, args, status, message):
    got, _, err = split(capsys, data, "-o", tmp_path / "x", *args)
    said = err.splitlines()[0][len("Error: "):].replace(f"{data}: ", "")
    assert got == status and said.startswith(message), err
    assert not (tmp_path / "x").exists()


def test_bad_data_is_refused_naming_it(capsys, tmp_path):
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"qid": [1, 2, 1], "label": [0.0, 1.0, 0.0]}), bad)
    status, _, err = split(capsys, bad, "-o", tmp_path / "x", "--folds", "3")
    assert status == 3 and err.startswith(f"Error: {bad}: qid 1 reappears at row 2")
    pq.write_table(pa.table({"qid": [1, 2, 3], "label": [0.0, 1.0, 0.0], "topic": ["a", None, "b"]}), bad)
    status, _, err = split(capsys, bad, "-o", tmp_path / "x", "--folds", "3", "--group-by", "topic")
    assert status == 3 and err.startswith(f"Error: {bad}: column topic: missing value at row 1")
    pq.write_table(pa.table({"qid": [1, 2, 3]}), bad)
    status, _, err = split(capsys, bad, "-o", tmp_path / "x", "--folds", "3")
    assert status == 3 and err.startswith(f"Error: {bad}: missing column label")


def test_a_float_group_column_groups_as_numbers_compare(capsys, tmp_path):
    """-0.0 and 0.0 are one value: one group (Arrow's encoding compares bits and made them two). NaN equals nothing,
    and is how a missing float is often written: refused as a missing value is."""
    path = tmp_path / "g.parquet"
    qid = np.repeat(np.arange(8), 2)
    g = np.array([0.0, 0.0, -0.0, -0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 4.0, 5.0, 5.0, 6.0, 6.0])
    pq.write_table(pa.table({"qid": qid, "label": np.ones(16), "g": g}), path)
    status, out, err = split(capsys, path, "-o", tmp_path / "f", "--folds", "3", "--group-by", "g", "--json")
    assert status == 0, err
    assert json.loads(out)["groups"] == 7  # {0, -0}, 1, 2, 3, 4, 5, 6
    for k in range(1, 4):
        test = set(_query_ids(tmp_path / "f" / f"Fold{k}" / "test.parquet").tolist())
        assert {0, 1} <= test or not {0, 1} & test  # the zero group's two queries stay together
    pq.write_table(pa.table({"qid": qid, "label": np.ones(16), "g": np.where(np.arange(16) == 9, np.nan, g)}),
                   path)
    status, _, err = split(capsys, path, "-o", tmp_path / "x", "--folds", "3", "--group-by", "g")
    assert status == 3 and err.startswith(f"Error: {path}: column g: NaN at row 9; every row needs a value to group "
                                          "by"), err


def test_output_rules_of_directory_outputs(capsys, data, tmp_path):
    out = tmp_path / "f"
    assert split(capsys, data, "-o", out, "--folds", "3")[0] == 0
    status, _, err = split(capsys, data, "-o", out, "--folds", "4")
    assert status == 4 and err == f"Error: {out}: already exists; pass --overwrite to replace it\n"
    status, _, err = split(capsys, data, "-o", out, "--folds", "4", "--overwrite")
    assert status == 0, err
    assert sorted(p.name for p in out.iterdir()) == [".rankcli-output.json", "Fold1", "Fold2", "Fold3", "Fold4"]
    (out / "notes.txt").write_text("mine")  # a user's file in it: never replaced
    status, _, err = split(capsys, data, "-o", out, "--folds", "3", "--overwrite")
    assert status == 4 and "holding files rankcli did not write (Fold1, Fold2, Fold3, Fold4, notes.txt)" in err
    # a converted directory or a model is not a split: --overwrite does not replace it
    conv = tmp_path / "conv"
    conv.mkdir()
    (conv / "train.parquet").write_bytes(data.read_bytes())
    (conv / ".rankcli-output.json").write_text(json.dumps({"kind": "converted", "files": ["train.parquet"]}))
    status, _, err = split(capsys, data, "-o", conv, "--folds", "3", "--overwrite")
    assert status == 4 and "holds a rankcli converted directory, not a split directory" in err
    status, _, err = split(capsys, data, "-o", data.parent, "--folds", "3")
    assert status == 2 and "holds the input" in err
    status, _, err = split(capsys, data, "-o", "-", "--folds", "3")
    assert status == 2


def test_a_failure_midway_leaves_nothing(capsys, data, tmp_path, monkeypatch):
    import rankcli.formats.subsets as subsets

    real, calls = subsets.write_queries, []

    def fail_on_fourth(*args, **kwargs):
        calls.append(1)
        if len(calls) == 4:
            raise OSError(28, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(subsets, "write_queries", fail_on_fourth)
    status, _, err = split(capsys, data, "-o", tmp_path / "f", "--folds", "3")
    assert status == 4 and "No space left on device" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("values,kind", [
    (pa.array([[i % 4] for i in range(12)]), "list<"),
    (pa.array([{"topic": i % 4} for i in range(12)]), "struct<topic: int64>"),
    (pa.array([{i % 4: 1} for i in range(12)], pa.map_(pa.int64(), pa.int64())), "map<int64, int64"),
    (pa.nulls(12), "null"),
], ids=["list", "struct", "map", "null"])
def test_a_nested_group_column_is_refused_naming_it(capsys, tmp_path, values, kind):
    """A list, struct or map column has no single value per row to group by: exit 3 naming the column and its type
    (Arrow's dictionary encoding has no kernel for them and raised, a traceback)."""
    path = tmp_path / "n.parquet"
    pq.write_table(pa.table({"qid": np.repeat(np.arange(6), 2), "label": np.ones(12), "g": values}), path)
    status, _, err = split(capsys, path, "-o", tmp_path / "x", "--folds", "3", "--group-by", "g")
    assert status == 3 and err.startswith(f"Error: {path}: column g holds {kind}"), err
    assert "values, which do not group: --group-by takes a column of single values" in err
    assert not (tmp_path / "x").exists()
