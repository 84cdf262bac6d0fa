"""rankcli explain end to end on a model trained on the sample data: the table, --json, -o CSV and Parquet,
--per-query, --group / --groups, --plot, without data, and the errors."""

from __future__ import annotations

import csv
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

FAST = ["--trees", "8", "--threads", "1", "--num-leaves", "7", "--min-data-in-leaf", "5"]
KEYS = {"feature", "gain", "splits", "drop", "drop_stderr", "p_value", "n", "mean_abs_contribution"}


@pytest.fixture(scope="module")
def trained(tmp_path_factory, sample_dir):
    from rankcli.cli import main

    d = tmp_path_factory.mktemp("explain")
    assert main(["convert", str(sample_dir / "letor"), "-o", str(d / "data")]) == 0
    assert main(["train", str(d / "data" / "train.parquet"), "--valid", str(d / "data" / "vali.parquet"), "-o",
                 str(d / "model"), *FAST]) == 0
    return d / "model", d / "data" / "test.parquet"


def test_json_with_data(run, trained):
    model, test = trained
    status, out, err = run("explain", model, test, "--json", "--repeats", "2", "--seed", "3")
    assert status == 0, err
    d = json.loads(out)
    assert d["metric"] == "ndcg@10" and d["test"] == "ttest" and d["correction"] == "holm" and d["queries"] == 30
    assert d["convention"]["no_relevant"] == "skip"         # the model's recorded convention (paper)
    feats = d["features"]
    assert len(feats) == 40 and all(KEYS <= set(f) for f in feats)
    used = [f for f in feats if f["splits"] > 0]
    assert used and all(f["n"] == 27 for f in feats)        # 3 test queries have no relevant document
    assert all(0 <= f["p_value"] <= 1 and f["p_value"] >= f["p_raw"] for f in feats)
    drops = [f["drop"] for f in feats]
    assert drops == sorted(drops, reverse=True)
    assert all(f["drop"] == 0 and f["p_value"] == 1 for f in feats if f["splits"] == 0)
    assert all(f["mean_abs_contribution"] >= 0 for f in feats)
    again = json.loads(run("explain", model, test, "--json", "--repeats", "2", "--seed", "3")[1])
    assert again == d


def test_table_outputs_and_groups(run, trained, tmp_path):
    model, test = trained
    groups = tmp_path / "groups.txt"
    groups.write_text("# BM25-like\nbm25 = f1, f2 ,f3\n\nlm=f4,f5\n")
    status, out, err = run("explain", model, test, "--groups", groups, "--group", "six=f6", "--top", "5",
                           "-o", tmp_path / "imp.csv", "--per-query", tmp_path / "pq.parquet",
                           "--plot", tmp_path / "imp.png", "--repeats", "2", "--no-contributions")
    assert status == 0, err
    assert "drop: the mean loss of ndcg@10" in out and "top 5 of 37 features" in out
    assert "holm-adjusted over 37" in out and "|contrib.|" not in out
    with open(tmp_path / "imp.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 37
    byname = {r["feature"]: r for r in rows}
    assert byname["bm25"]["members"] == "f1,f2,f3" and byname["six"]["members"] == "f6"
    assert byname["bm25"]["mean_abs_contribution"] == ""      # not computed: empty, never 0
    pqt = pq.read_table(tmp_path / "pq.parquet")
    assert pqt.column_names[:2] == ["qid", "ndcg@10"] and "bm25" in pqt.column_names and pqt.num_rows == 30
    base = pqt.column("ndcg@10").to_numpy(zero_copy_only=False)
    drop = pqt.column(rows[0]["feature"]).to_numpy(zero_copy_only=False)
    assert np.isnan(base).sum() == 3 and np.nanmean(drop) == pytest.approx(float(rows[0]["drop"]))
    assert (tmp_path / "imp.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "wrote" in err


def test_parquet_output_and_no_data(run, trained, tmp_path):
    model, _ = trained
    status, out, err = run("explain", model, "-o", tmp_path / "imp.parquet", "--json")
    assert status == 0, err
    d = json.loads(out)
    assert d["metric"] is None and all(f["drop"] is None and f["n"] is None for f in d["features"])
    t = pq.read_table(tmp_path / "imp.parquet")
    assert t.column("drop").null_count == t.num_rows and t.column("gain").null_count == 0
    gains = t.column("gain").to_pylist()
    assert gains == sorted(gains, reverse=True) and t.num_rows == 40
    status, out, _ = run("explain", model, "--top", "3")
    assert status == 0 and "top 3 of 40" in out and "drop" not in out


def test_errors(run, trained, tmp_path, sample_dir):
    model, test = trained
    cases = [
        (("explain", model, "--per-query", tmp_path / "p.parquet"), 2, "--per-query needs DATA"),
        (("explain", model, test, "-o", tmp_path / "x.txt"), 2, "by the extension, .parquet or .csv"),
        (("explain", model, test, "-o", "-", "--json"), 2, "both write to standard output"),
        (("explain", model, test, "--convention", "trec"), 2, "explain ranks the data"),
        (("explain", model, test, "--group", "g=f1,f99"), 2, "no feature 'f99'"),
        (("explain", model, test, "--group", "g"), 2, "a group is NAME=FEATURE"),
        (("explain", model, test, "--repeats", "0"), 2, "--repeats must be between 1"),
        (("explain", model, test, "--test", "ztest"), 2, "unknown test"),
        (("explain", model, test, "--test", "wilcoxon"), 2, "--test wilcoxon with --repeats 2: the signed-rank test"),
        (("explain", model, test, "--test", "wilcoxon", "--repeats", "2"), 2, "Pass --repeats 1 with --test wilcoxon"),
        (("explain", model, test, "--group", "qid=f1,f2"), 2, "group name 'qid' is also the qid column of --per-query"),
        (("explain", model, test, "--group", "ndcg@10=f20"), 2,
         "group name 'ndcg@10' is also the column of the model's ndcg@10 in --per-query"),
        (("explain", model, test, "-m", "NDCG@5", "--group", "ndcg@5=f20"), 2, "group name 'ndcg@5' is also"),
        (("explain", model, test, "-m", "f1"), 2, "feature 'f1', a group of its own, is named as the column"),
        (("explain", model, test, "-o", tmp_path / "a.csv", "--per-query", f"{tmp_path}/./a.csv"), 2,
         "--per-query and -o name the same file"),
        (("explain", model, tmp_path / "none.parquet"), 3, "none.parquet"),
        (("explain", tmp_path, test), 3, "not a model directory"),
    ]
    for args, status, text in cases:
        got, out, err = run(*args)
        assert got == status and text in err, (args, got, err)
    from rankcli.formats.parquet import read_dataset, write_dataset

    ds = read_dataset(test)
    write_dataset(tmp_path / "empty.parquet", ds.take_queries(np.array([], dtype=np.int64)))
    norel = ds.take_queries(np.arange(ds.n_queries))
    norel.labels[:] = 0
    write_dataset(tmp_path / "norel.parquet", norel)
    norel.labels[3] = np.nan
    write_dataset(tmp_path / "nan.parquet", norel)
    for name, text in (("empty", "no rows to explain on"), ("norel", "no query has a relevant document"),
                       ("nan", "nan.parquet: label is NaN at row 3")):
        got, _, err = run("explain", model, tmp_path / f"{name}.parquet")
        assert got == 3 and text in err, (name, err)
    narrow = tmp_path / "narrow.parquet"
    assert run("convert", sample_dir / "letor" / "test.txt", "-o", narrow, "--num-features", "50")[0] == 0
    got, _, err = run("explain", model, narrow)
    assert got == 3 and "feature columns do not match" in err
    assert not list(tmp_path.glob("*.csv")) and not (tmp_path / "x.txt").exists()


def test_csv_to_standard_output(run, trained):
    model, _ = trained
    status, out, err = run("explain", model, "-o", "-", "--top", "2")
    assert status == 0 and out.startswith('"feature","members","gain"') and "top 2 of 40" in err


def test_wilcoxon_with_one_permutation(run, trained):
    model, test = trained
    status, out, err = run("explain", model, test, "--json", "--test", "wilcoxon", "--repeats", "1",
                           "--no-contributions", "--group", "qid2=f1,f2")
    assert status == 0, err
    d = json.loads(out)
    assert d["test"] == "wilcoxon" and d["repeats"] == 1 and d["warnings"] == []
    assert "warning" not in err


def test_a_warning_when_data_is_the_model_s_training_or_validation_file(run, trained, tmp_path):
    """rankcli.json records the SHA-256 of the training and validation files: explain on either (or on a copy with
    the same bytes) says, on stderr and in --json's warnings, that its drops and tests are not of held-out data."""
    model, test = trained
    data = test.parent
    copy = tmp_path / "copy.parquet"
    copy.write_bytes((data / "train.parquet").read_bytes())
    for path, what in ((data / "train.parquet", "training data"), (data / "vali.parquet", "validation data"),
                       (copy, "training data")):
        status, out, err = run("explain", model, path, "--json", "--repeats", "1", "--no-contributions")
        assert status == 0, err
        warnings = json.loads(out)["warnings"]
        assert len(warnings) == 1 and warnings[0].startswith(f"{path}: is the model's {what}"), warnings
        assert f"warning: {warnings[0]}" in err
    status, out, err = run("explain", model, "--json")
    assert status == 0 and json.loads(out)["warnings"] == []


def test_contributions_on_a_sample_of_queries(run, trained):
    model, test = trained
    status, out, err = run("explain", model, test, "--json", "--repeats", "1", "--contributions-queries", "7",
                           "--seed", "4")
    assert status == 0, err
    s = json.loads(out)["contributions"]
    assert (s["queries"], s["of"], s["sampled"], s["seed"], len(s["qids"])) == (7, 30, True, 4, 7)
    status, out, err = run("explain", model, test, "--json", "--repeats", "1", "--contributions-queries", "ALL")
    assert status == 0 and json.loads(out)["contributions"]["sampled"] is False, err
    status, out, err = run("explain", model, test, "--repeats", "1", "--contributions-queries", "7")
    assert status == 0 and "on 7 of 30 queries drawn at random (seed 0;" in " ".join(out.split()), (out, err)
    for bad in ("0", "-3", "some", "1.5"):
        got, _, err = run("explain", model, test, "--contributions-queries", bad)
        assert got == 2 and "--contributions-queries" in err and repr(bad) in err, (bad, err)


def test_labels_beyond_the_exponential_gain_get_advice_in_explain_s_options(run, trained, tmp_path):
    """The metrics' advice names --gain and --max-grade, which train and eval have; explain's is its --convention
    and -m, options it has."""
    from rankcli.formats.parquet import read_dataset, write_dataset

    model, test = trained
    ds = read_dataset(test)
    ds.labels[5] = 1500.0
    write_dataset(tmp_path / "big.parquet", ds)
    got, _, err = run("explain", model, tmp_path / "big.parquet", "--no-contributions", "--repeats", "1")
    assert got == 3 and "big.parquet: label 1500 at row 5" in err and "--convention sklearn" in err, err
    assert "--gain" not in err and "--max-grade" not in err
    got, out, err = run("explain", model, tmp_path / "big.parquet", "--no-contributions", "--repeats", "1",
                        "--convention", "sklearn", "--json")
    assert got == 0, err                                  # the advice works
    got, _, err = run("explain", model, tmp_path / "big.parquet", "-m", "err", "--repeats", "1")
    assert got == 3 and "exceeds err's maximum grade" in err and "--max-grade" not in err, err


def test_a_model_without_any_split_has_no_gain_shares(run, trained, tmp_path):
    """A model whose trees never split (every label equal: no gradient) has no total gain to share out: its shares
    are null and n/a, not 0.0 for every feature (shares that summed to 0, not 1)."""
    model, test = trained
    table = pq.read_table(test)
    same = table.set_column(table.schema.get_field_index("label"), "label",
                            pa.array(np.ones(table.num_rows)))
    pq.write_table(same.replace_schema_metadata(table.schema.metadata), tmp_path / "same.parquet")
    flat = tmp_path / "flat"
    status, _, err = run("train", tmp_path / "same.parquet", "-o", flat, "--loss", "lambdamart", *FAST)
    assert status == 0, err
    status, out, err = run("explain", flat, "--json")
    assert status == 0, err
    feats = json.loads(out)["features"]
    assert all(f["gain"] == 0 and f["splits"] == 0 for f in feats)
    assert all(f["gain_share"] is None and f["splits_share"] is None for f in feats)
    status, out, err = run("explain", flat, "--top", "2")
    assert status == 0, err
    assert "0.0%" not in out and "n/a" in out
    status, _, err = run("explain", flat, test, "-o", tmp_path / "flat.csv", "--no-contributions")
    assert status == 0, err
    with open(tmp_path / "flat.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and all(r["gain_share"] == "" and r["splits_share"] == "" for r in rows)
    status, _, err = run("explain", flat, "-o", tmp_path / "flat.parquet")
    assert status == 0, err
    shares = pq.read_table(tmp_path / "flat.parquet").column("gain_share")
    assert shares.type == pa.float64() and shares.null_count == len(shares)
    # a model that splits keeps shares summing to 1
    status, out, err = run("explain", model, "--json")
    feats = json.loads(out)["features"]
    assert abs(sum(f["gain_share"] for f in feats) - 1) < 1e-9 and abs(sum(f["splits_share"] for f in feats) - 1) < 1e-9
