"""rankcli simulate-clicks end to end: output layout, footer metadata, summary, determinism, errors and statuses."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from rankcli.dataset import Dataset
from rankcli.formats.parquet import read_dataset, read_metadata, write_dataset
from tests.letor_sample import load_letor

N_FEATURES = 46


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("clicks")
    train = load_letor("train", N_FEATURES)
    write_dataset(d / "train.parquet", train)
    nodoc = load_letor("vali", N_FEATURES)
    nodoc.docids = None
    write_dataset(d / "nodoc.parquet", nodoc)
    real = load_letor("test", N_FEATURES)
    real.labels = real.labels * 0.25 + 0.01
    write_dataset(d / "real.parquet", real)
    return {"train": d / "train.parquet", "nodoc": d / "nodoc.parquet", "real": d / "real.parquet", "dir": d,
            "train_ds": train, "nodoc_ds": nodoc}


def test_cascade_output_layout_and_summary(cli, data, tmp_path):
    out = tmp_path / "clicks.parquet"
    r = cli("simulate-clicks", data["train"], "-o", out, "--seed", "7", "--impressions", "5", "--json")
    assert r.returncode == 0, r.stderr.decode()
    summary = json.loads(r.stdout)
    table = pq.read_table(out)
    names = table.column_names
    assert names[:7] == ["qid", "label", "docid", "source_qid", "position", "relevance", "f1"]
    assert names[6:] == [f"f{i}" for i in range(1, N_FEATURES + 1)]
    src = data["train_ds"]
    n_q = src.n_queries
    assert summary["impressions"] == 5 * n_q
    assert summary["kept_impressions"] + summary["dropped_impressions"] == 5 * n_q
    assert summary["kept_impressions"] == summary["clicks"] == int(table.column("label").to_numpy().sum())
    assert summary["rows"] == table.num_rows
    assert [g["grade"] for g in summary["by_grade"]] == [0, 1, 2, 3, 4]
    assert summary["by_position"][0]["position"] == 1
    assert summary["params"]["click_probs"] == [0.05, 0.3, 0.5, 0.7, 0.95]

    clicks = read_dataset(out, extra_columns=["source_qid", "position", "relevance"])
    qids = clicks.qids
    assert np.array_equal(np.unique(qids), np.arange(1, summary["kept_impressions"] + 1))
    # Every impression: positions 1..n, exactly one click and it is the last row; rows are documents of the source.
    sizes = np.diff(clicks.offsets)
    starts = clicks.offsets[:-1]
    assert np.array_equal(clicks.extra["position"], np.arange(clicks.n_rows) - np.repeat(starts, sizes) + 1)
    assert np.all(clicks.labels[clicks.offsets[1:] - 1] == 1) and clicks.labels.sum() == clicks.n_queries
    by_docid = {(int(q), d): (float(lab), tuple(f)) for q, d, lab, f in
                zip(src.qids, src.docids, src.labels, src.features)}
    for q, d, rel, f in zip(clicks.extra["source_qid"], clicks.docids, clicks.extra["relevance"], clicks.features):
        assert by_docid[(int(q), d)] == (float(rel), tuple(f))

    meta = read_metadata(out)
    info = json.loads(meta["clicks"])
    assert info == {"model": "cascade", "ranker": "random", "seed": 7, "policy": "random",
                    "click_probs": [0.05, 0.3, 0.5, 0.7, 0.95],
                    "impressions": 5, "keep_no_click": False, "label_grades": False}
    assert meta["kind"] == "dataset" and meta["source"] == str(data["train"])


def test_same_seed_same_bytes(run, data, tmp_path):
    a, b, c = tmp_path / "a.parquet", tmp_path / "b.parquet", tmp_path / "c.parquet"
    for path, seed in ((a, "3"), (b, "3"), (c, "4")):
        status, _, err = run("simulate-clicks", data["train"], "-o", path, "--seed", seed)
        assert status == 0, err
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()


def test_pbm_label_ranker_source_row_and_table(run, data, tmp_path):
    out = tmp_path / "pbm.parquet"
    status, stdout, err = run("simulate-clicks", data["nodoc"], "-o", out, "--model", "pbm", "--eta", "0.5",
                              "--max-rank", "4", "--ranker", "label", "--keep-no-click", "--impressions", "3")
    assert status == 0, err
    assert "pbm clicks, ranker label" in stdout and "click rate per grade" in stdout
    table = pq.read_table(out)
    assert "docid" not in table.column_names and "source_row" in table.column_names
    src = data["nodoc_ds"]
    rows = table.column("source_row").to_numpy()
    pos = table.column("position").to_numpy()
    assert pos.max() == 4
    np.testing.assert_array_equal(table.column("relevance").to_numpy(), src.labels[rows])
    # The label ranker shows the highest labels first (within each impression relevance never increases).
    rel = table.column("relevance").to_numpy()
    same_imp = np.diff(table.column("qid").to_numpy()) == 0
    assert np.all(np.diff(rel)[same_imp] <= 0)
    sizes = np.diff(src.offsets)
    assert table.num_rows == 3 * int(np.minimum(sizes, 4).sum())
    assert json.loads(read_metadata(out)["clicks"])["max_rank"] == 4


def test_real_valued_labels_need_label_grades(run, data, tmp_path):
    out = tmp_path / "x.parquet"
    status, _, err = run("simulate-clicks", data["real"], "-o", out)
    assert status == 3
    assert err == ("Error: click simulation (one click probability per grade) needs non-negative integer labels, "
                   "got 0.51; pass --label-grades to map the distinct label values to grades 0..n-1 in order\n")
    assert not out.exists()
    status, stdout, err = run("simulate-clicks", data["real"], "-o", out, "--label-grades", "--json")
    assert status == 0, err
    summary = json.loads(stdout)
    assert [g["label"] for g in summary["by_grade"]][:3] == [0.01, 0.26, 0.51]


def test_grade_beyond_click_probs(run, data, tmp_path):
    status, _, err = run("simulate-clicks", data["train"], "-o", tmp_path / "x.parquet", "--click-probs", "0.1,0.5,0.9")
    assert status == 3
    assert err == ("Error: labels go up to grade 4 but the 3 click probabilities cover grades 0..2 only; "
                        "give one probability per grade (--click-probs)\n")


@pytest.mark.parametrize("args,message", [
    (["--click-probs", "0.1,x"], "Error: --click-probs: expected comma-separated probabilities like "
                                 "0.05,0.3,0.5,0.7,0.95, got 'x'\n"),
    (["--click-probs", "0.1,1.2"], "Error: --click-probs: probabilities must be within [0, 1], got 1.2\n"),
    (["--model", "dbn"], "Error: --model: expected one of cascade, pbm, got 'dbn'\n"),
    (["--impressions", "0"], "Error: --impressions: must be at least 1, got 0\n"),
    (["--max-rank", "0"], "Error: --max-rank: must be at least 1, got 0\n"),
    (["--eta", "-1"], "Error: --eta: must be non-negative, got -1\n"),
    (["--ranker", "best"], "Error: --ranker: expected random, label, input or a model directory, got 'best'\n"),
    (["--ranker", "label", "--randomize", "top:0"],
     "Error: --randomize: expected top:N (shuffle the ranker's top N per impression) or swap:K (swap position K with "
     "a random position), N and K positive integers, got 'top:0'\n"),
    (["--ranker", "label", "--randomize", "swap:x"],
     "Error: --randomize: expected top:N (shuffle the ranker's top N per impression) or swap:K (swap position K with "
     "a random position), N and K positive integers, got 'swap:x'\n"),
    (["--ranker", "label", "--randomize", "shuffle:3"],
     "Error: --randomize: expected top:N (shuffle the ranker's top N per impression) or swap:K (swap position K with "
     "a random position), N and K positive integers, got 'shuffle:3'\n"),
    (["--randomize", "top:3"],
     "Error: --randomize: the random ranker is already fully randomised (RandTop-n with n the list length); give "
     "--ranker label, input or a model directory to randomise its order\n"),
    (["--ranker", "label", "--randomize", "swap:5", "--max-rank", "4"],
     "Error: --randomize swap:5: position 5 is never displayed with --max-rank 4\n"),
])
def test_usage_errors(run, data, tmp_path, args, message):
    status, _, err = run("simulate-clicks", data["train"], "-o", tmp_path / "x.parquet", *args)
    assert status == 2
    assert err == message


def test_existing_output_and_missing_input(run, data, tmp_path):
    out = tmp_path / "x.parquet"
    out.write_bytes(b"keep me")
    status, _, err = run("simulate-clicks", data["train"], "-o", out, "--overwrite")
    assert status == 4 and err.startswith(f"Error: {out}: exists and is not a rankcli click log; "), err
    assert out.read_bytes() == b"keep me"
    out.unlink()
    assert run("simulate-clicks", data["train"], "-o", out)[0] == 0
    status, _, err = run("simulate-clicks", data["train"], "-o", out)
    assert status == 4 and err == f"Error: {out}: already exists; pass --overwrite to replace it\n"
    status, _, err = run("simulate-clicks", data["train"], "-o", out, "--overwrite", "--json")
    assert status == 0, err
    status, _, err = run("simulate-clicks", tmp_path / "nope.parquet", "-o", tmp_path / "y.parquet")
    assert status == 3 and err == f"Error: {tmp_path / 'nope.parquet'}: no such file\n"


def test_model_ranker_and_train_on_clicks(run, data, tmp_path):
    """Rank-then-click with a trained model directory, then `rankcli train` directly on the click log."""
    from rankcli.train import TrainConfig, load_model, save_model, train_model

    src = data["train_ds"]
    config = TrainConfig(loss="lambdamart", trees=5, num_leaves=7, min_data_in_leaf=5, threads=1, early_stopping=0)
    model = tmp_path / "model"
    save_model(train_model(src, None, config), config, model, feature_names=src.feature_names)
    out = tmp_path / "clicks.parquet"
    status, _, err = run("simulate-clicks", data["train"], "-o", out, "--ranker", model, "--impressions", "4", "--json")
    assert status == 0, err
    assert json.loads(read_metadata(out)["clicks"])["ranker"] == str(model)
    # The model's order is deterministic: all impressions of a query show the same prefix of one fixed order.
    clicks = read_dataset(out, extra_columns=["source_qid", "position"])
    scores = load_model(model).predict(src)
    score_of = dict(zip(src.docids, scores))
    s = np.array([score_of[d] for d in clicks.docids])
    same = np.diff(clicks.qids) == 0
    assert np.all(np.diff(s)[same] <= 0)

    status, _, err = run("train", out, "-o", tmp_path / "click_model", "--trees", "3", "--threads", "1",
                         "--num-leaves", "4", "--min-data-in-leaf", "2")
    assert status == 0, err

    # A model whose features the data lacks: exit 3, naming the data file.
    narrow = tmp_path / "narrow.parquet"
    write_dataset(narrow, Dataset(qids=src.qids, labels=src.labels, features=src.features[:, :5],
                                  feature_names=src.feature_names[:5], docids=src.docids))
    status, _, err = run("simulate-clicks", narrow, "-o", tmp_path / "x.parquet", "--ranker", model)
    assert status == 3 and err.startswith(f"Error: {narrow}: feature columns do not match the model's")
    assert not (tmp_path / "x.parquet").exists()


@pytest.mark.parametrize("which", ["train", "nodoc"])
def test_cli_output_equals_library_output(run, data, tmp_path, which):
    """The CLI gathers features with Arrow (no feature matrix); its file holds what simulate_clicks computes."""
    import pyarrow as pa

    from rankcli.formats.parquet import dataset_table
    from rankcli.simulate import simulate_clicks

    out = tmp_path / "clicks.parquet"
    code, _, err = run("simulate-clicks", str(data[which]), "-o", str(out), "--seed", "7", "--impressions", "3")
    assert code == 0, err
    ds = read_dataset(data[which])
    clicks, _ = simulate_clicks(ds, impressions=3, rng=np.random.default_rng(7))
    expected = dataset_table(clicks, clicks.extra)
    expected = expected.cast(pa.schema([f.with_nullable(f.name == "docid") for f in expected.schema]))
    got = pq.read_table(out)
    assert pq.ParquetFile(out).metadata.num_row_groups >= 1
    assert got.schema.remove_metadata() == expected.schema
    assert got.equals(expected.replace_schema_metadata(got.schema.metadata))


@pytest.mark.parametrize("policy", ["top:4", "swap:2"])
def test_randomised_policy_recorded_deterministic_and_ranker_rank(run, data, tmp_path, policy):
    a, b, c = tmp_path / "a.parquet", tmp_path / "b.parquet", tmp_path / "c.parquet"
    for path, seed in ((a, "3"), (b, "3"), (c, "4")):
        status, stdout, err = run("simulate-clicks", data["train"], "-o", path, "--seed", seed, "--ranker", "label",
                                  "--randomize", policy, "--model", "pbm", "--keep-no-click", "--max-rank", "6",
                                  "--impressions", "20", "--json")
        assert status == 0, err
    assert a.read_bytes() == b.read_bytes() and a.read_bytes() != c.read_bytes()
    summary = json.loads(stdout)
    assert summary["params"]["policy"] == policy and summary["model"] == "pbm"
    assert summary["params"]["keep_no_click"] is True
    info = json.loads(read_metadata(a)["clicks"])
    assert info["policy"] == policy and info["model"] == "pbm" and info["keep_no_click"] is True
    table = pq.read_table(a, columns=["qid", "position", "ranker_rank", "relevance"])
    pos = table.column("position").to_numpy()
    rr = table.column("ranker_rank").to_numpy()
    kind, k = policy.split(":")
    k = int(k)
    if kind == "top":
        assert np.array_equal(rr[pos > k], pos[pos > k]) and np.all(rr[pos <= k] <= k)
        assert np.any(rr != pos)
    else:
        moved = rr != pos
        # A displaced document either came from position k or went there.
        assert np.all((rr[moved] == k) | (pos[moved] == k)) and np.any(moved)
    # The label ranker's order: relevance never increases along ranker_rank within an impression.
    qid = table.column("qid").to_numpy()
    rel = table.column("relevance").to_numpy()
    order = np.lexsort((rr, qid))
    same = np.diff(qid[order]) == 0
    assert np.all(np.diff(rel[order])[same] <= 0)


def test_default_policy_has_no_ranker_rank_column(run, data, tmp_path):
    out = tmp_path / "x.parquet"
    status, stdout, err = run("simulate-clicks", data["train"], "-o", out, "--ranker", "label", "--json")
    assert status == 0, err
    assert json.loads(stdout)["params"]["policy"] == "none"
    assert "ranker_rank" not in pq.read_table(out).column_names


def test_per_position_table_marks_the_positions_it_leaves_out(run, data, tmp_path):
    """Lists longer than 12: the table shows positions 1..10 and the last, the rows between marked as left out (it
    jumped from 10 to the last without a mark); --json lists every position."""
    out = tmp_path / "c.parquet"
    status, stdout, err = run("simulate-clicks", data["train"], "-o", out, "--model", "pbm", "--impressions", "2")
    assert status == 0, err
    table = stdout[stdout.index("click rate per position"):]
    last = max(np.diff(data["train_ds"].offsets))
    rows = [line.split("│")[1].strip() for line in table.splitlines() if line.startswith("│")]
    assert rows == [str(r) for r in range(1, 11)] + ["...", str(last)]
    assert f"positions 11 to {last - 1} left out (--json lists every position)" in table
    status, stdout, err = run("simulate-clicks", data["train"], "-o", out, "--model", "pbm", "--impressions", "2",
                              "--overwrite", "--json")
    assert status == 0, err
    assert [p["position"] for p in json.loads(stdout)["by_position"]] == list(range(1, last + 1))
    # short lists: every position, no mark
    status, stdout, _ = run("simulate-clicks", data["train"], "-o", out, "--model", "pbm", "--impressions", "2",
                            "--max-rank", "12", "--overwrite")
    assert "left out" not in stdout and "..." not in stdout
