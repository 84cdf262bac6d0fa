"""rankcli fuse end to end, in process: TREC and Parquet runs in and out, what eval / compare / trec_eval read of the
fused run, training and optimisation queries left out, --optimize --folds, --compare, and the refusals."""

from __future__ import annotations

import gzip
import io
import json
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rankcli.errors import ExitStatus
from tests import reference_fusion as ref
from tests.fusion_data import close, random_qrels, random_runs, write_qrels, write_trec


def _read_trec(path) -> dict:
    out: dict = {}
    for line in open(path):
        q, _, d, rank, score, _ = line.split()
        out.setdefault(q, {})[d] = float(score)
    return out


def _ranks(path) -> dict:
    out: dict = {}
    for line in open(path):
        q, _, d, rank, _, _ = line.split()
        out.setdefault(q, []).append((int(rank), d))
    return {q: [d for _, d in sorted(v)] for q, v in out.items()}


@pytest.fixture
def case(tmp_path, rng):
    runs = random_runs(rng, n_runs=3, n_queries=16, pool=20, missing_queries=True)
    runs = [{str(int(q[1:]) + 1): docs for q, docs in run.items()} for run in runs]  # integer query ids
    paths = [write_trec(tmp_path / f"r{i}.txt", run) for i, run in enumerate(runs)]
    qrels = random_qrels(rng, runs, pool=20)
    return tmp_path, runs, paths, qrels


def test_fused_trec_run_is_the_definition_and_eval_and_trec_eval_read_it(case, run):
    tmp, runs, paths, qrels = case
    out = tmp / "fused.txt"
    status, _, err = run("fuse", *paths, "-o", out, "--method", "combmnz", "--normalize", "zscore")
    assert status == 0, err
    assert "fused 3 runs with mnz" in err
    want = ref.fuse(runs, "mnz", "zmuv")
    assert close(_read_trec(out), want) < 1e-12
    assert _ranks(out) == {q: ref.ranking(docs) for q, docs in want.items()}  # ties by docid descending
    q = write_qrels(tmp / "qrels", qrels)
    status, text, err = run("eval", "--qrels", q, "--run", out, "--metric", "map", "--json")
    assert status == 0, err
    status, te, err = run("trec_eval", "-m", "map", q, out)
    assert status == 0, err
    assert abs(float(te.split()[-1]) - json.loads(text)["metrics"]["map"]) < 5e-5


def test_mixed_inputs_gzip_stdin_and_parquet(case, run, monkeypatch):
    tmp, runs, paths, _ = case
    gz = tmp / "r1.txt.gz"
    gz.write_bytes(gzip.compress(paths[1].read_bytes()))
    rows = [(int(q), d, s) for q, docs in runs[2].items() for d, s in docs.items()]
    pq.write_table(pa.table({"qid": [r[0] for r in rows], "docid": [r[1] for r in rows],
                             "score": [r[2] for r in rows]}), tmp / "r2.parquet")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(paths[0].read_bytes())))
    out = tmp / "fused.txt"
    status, _, err = run("fuse", "-", gz, tmp / "r2.parquet", "-o", out, "--method", "rrf", "--k", "10")
    assert status == 0, err
    assert close(_read_trec(out), ref.fuse(runs, "rrf", params={"k": 10})) < 1e-12


def test_parquet_runs_give_a_parquet_run_with_labels_that_eval_and_compare_read(tmp_path, run, rng):
    qid = np.repeat(np.arange(1, 11), 8)
    docid = [f"doc{i % 8}" for i in range(qid.shape[0])]
    label = rng.integers(0, 3, qid.shape[0]).astype(float)
    paths = []
    for r in range(2):
        paths.append(tmp_path / f"m{r}.parquet")
        pq.write_table(pa.table({"qid": qid, "docid": docid, "label": label,
                                 "score": label + rng.normal(size=qid.shape[0])}), paths[-1])
    out = tmp_path / "fused.parquet"
    status, _, err = run("fuse", *paths, "-o", out, "--method", "wsum", "--weights", "0.7,0.3")
    assert status == 0, err
    t = pq.read_table(out)
    assert t.column_names == ["qid", "docid", "label", "score"] and t.num_rows == 80
    status, text, err = run("eval", out, "--metric", "ndcg@5", "--json")
    assert status == 0, err
    status, text, err = run("compare", paths[0], out, "--metric", "ndcg@5", "--json")
    assert status == 0, err


def test_training_queries_are_left_out_or_kept_with_allow_overlap(case, run):
    tmp, runs, paths, qrels = case
    train = {q: qrels[q] for q in list(qrels)[:6]}
    tq = write_qrels(tmp / "train.qrels", train)
    out = tmp / "fused.txt"
    status, text, err = run("fuse", *paths, "-o", out, "--method", "probfuse", "--segments", "4",
                            "--train-qrels", tq, "--json")
    assert status == 0, err
    res = json.loads(text)
    assert set(_read_trec(out)) == set(qrels) - set(train)
    assert res["queries"]["left_out"] == 6 and res["training"]["queries"] == 6
    want_model = ref.train("probfuse", runs, qrels, sorted(train, key=int), {"segments": 4})
    assert np.allclose(np.array(res["model"]["probabilities"]), np.array(want_model["probabilities"]))
    status, _, err = run("fuse", *paths, "-o", out, "--method", "probfuse", "--segments", "4", "--train-qrels", tq,
                         "--allow-overlap", "--overwrite")
    assert status == 0 and "kept (--allow-overlap)" in err
    assert set(_read_trec(out)) == set(qrels)
    status, _, err = run("fuse", *paths, "-o", tmp / "x.txt", "--method", "posfuse")
    assert status == ExitStatus.USAGE and "--train-qrels" in err


def test_optimize_with_folds_reports_an_out_of_fold_score(case, run):
    tmp, runs, paths, qrels = case
    opt = write_qrels(tmp / "opt.qrels", {q: qrels[q] for q in list(qrels)[:10]})
    out = tmp / "fused.txt"
    status, text, err = run("fuse", *paths, "-o", out, "--method", "wsum", "--optimize", opt, "--folds", "5",
                            "--seed", "3", "--json")
    assert status == 0, err
    res = json.loads(text)["optimization"]
    assert len(res["candidates"]) == 66 and res["queries"] == 10
    assert [f["queries"] for f in res["folds"]] == [2] * 5 and res["out_of_fold"] is not None
    best = max(c["score"] for c in res["candidates"])
    assert res["score"] == best and res["chosen"] == [c for c in res["candidates"] if c["score"] == best][-1]["params"]
    assert res["out_of_fold"] <= best + 1e-12
    assert set(_read_trec(out)) == set(qrels) - set(list(qrels)[:10])
    status, text2, _ = run("fuse", *paths, "-o", out, "--method", "wsum", "--optimize", opt, "--folds", "5",
                           "--seed", "3", "--json", "--overwrite")
    assert json.loads(text2)["optimization"] == res  # seeded
    status, table, err = run("fuse", *paths, "-o", out, "--method", "rrf", "--optimize", opt, "--overwrite")
    assert status == 0 and "chosen: k=" in table and "10 candidates" in table


def test_compare_tests_the_fusion_against_each_input(case, run):
    tmp, runs, paths, qrels = case
    q = write_qrels(tmp / "qrels", qrels)
    out = tmp / "fused.txt"
    status, text, err = run("fuse", *paths, "-o", out, "--compare", "--qrels", q, "--metric", "map", "--json")
    assert status == 0, err
    report = json.loads(text)["comparison"]
    assert [(c["a"], c["b"]) for c in report["comparisons"]] == [("r0", "fused"), ("r1", "fused"), ("r2", "fused")]
    status, piped, err = run("compare", *paths, out, "--qrels", q, "--metric", "map", "--json", "--intersect")
    means = json.loads(piped)["means"]
    assert means == report["means"]
    status, table, err = run("fuse", *paths, "-o", out, "--compare", "--qrels", q, "--overwrite")
    assert status == 0 and "each run against fused" in table


def test_the_output_does_not_depend_on_the_process_hash_seed(case, run, monkeypatch):
    from rankcli.formats.trec import parse as trec_read

    tmp, runs, paths, _ = case
    outs = []
    for seed in (7, 99991):
        monkeypatch.setattr(trec_read, "HASH_SEED", seed)
        out = tmp / f"f{seed}.txt"
        assert run("fuse", *paths, "-o", out, "--method", "condorcet")[0] == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


@pytest.mark.parametrize("args, status, message", [
    (["--method", "foo"], ExitStatus.USAGE, "unknown fusion method 'foo'; choose one of min, max"),
    (["--method", "wsum", "--weights", "1,2"], ExitStatus.USAGE, "2 weights for 3 runs"),
    (["--weights", "a,b"], ExitStatus.USAGE, "--weights takes numbers"),
    (["--method", "rbc"], ExitStatus.USAGE, "rbc needs --phi"),
    (["--normalize", "l2"], ExitStatus.USAGE, "unknown normalization 'l2'"),
    (["--format", "parquet", "--tag", "x"], 0, ""),
    (["--folds", "3"], ExitStatus.USAGE, "--folds cross-validates --optimize"),
    (["--depth", "0"], ExitStatus.USAGE, "--depth must be at least 1"),
    (["--qrels", "qrels"], ExitStatus.USAGE, "add --compare"),
])
def test_usage_errors(case, run, args, status, message):
    tmp, runs, paths, qrels = case
    write_qrels(tmp / "qrels", qrels)
    args = [str(tmp / a) if a == "qrels" else a for a in args]
    got, _, err = run("fuse", *paths, "-o", tmp / "out", *args)
    assert got == status, err
    assert message in err


def test_bad_inputs_and_outputs(case, run):
    tmp, runs, paths, _ = case
    assert run("fuse", paths[0], "-o", tmp / "o.txt")[0] == ExitStatus.USAGE
    status, _, err = run("fuse", paths[0], tmp / "missing.txt", "-o", tmp / "o.txt")
    assert status == ExitStatus.INVALID_INPUT and "no such file" in err
    bad = tmp / "inf.txt"
    bad.write_text("1 Q0 d1 1 1.0 t\n1 Q0 d2 2 -inf t\n")
    status, _, err = run("fuse", paths[0], bad, "-o", tmp / "o.txt")
    assert status == ExitStatus.INVALID_INPUT and f"{bad}:2: score is infinite" in err
    words = tmp / "words.txt"
    words.write_text("a Q0 d1 1 1.0 t\n")
    status, _, err = run("fuse", paths[0], words, "-o", tmp / "o.parquet", "--format", "parquet")
    assert status == ExitStatus.USAGE and "integer query ids, got 'a'" in err
    assert run("fuse", *paths, "-o", tmp / "o.txt")[0] == 0
    status, _, err = run("fuse", *paths, "-o", tmp / "o.txt")
    assert status == ExitStatus.OUTPUT and "--overwrite" in err
    status, _, err = run("fuse", "-", "-", "-o", tmp / "o2.txt")
    assert status == ExitStatus.USAGE and "only one of the runs" in err


def test_row_keyed_parquet_runs_must_score_one_dataset(tmp_path, run):
    def write(name, data):
        table = pa.table({"qid": [1, 1], "row": [0, 1], "score": [1.0, 0.5]})
        pq.write_table(table.replace_schema_metadata({"rankcli.data": data, "rankcli.kind": "run"}),
                       tmp_path / name)
        return tmp_path / name
    a, b, c = write("a.parquet", "test.parquet"), write("b.parquet", "test.parquet"), write("c.parquet", "vali")
    assert run("fuse", a, b, "-o", tmp_path / "ok.txt")[0] == 0
    status, _, err = run("fuse", a, c, "-o", tmp_path / "no.txt")
    assert status == ExitStatus.INVALID_INPUT and "match only between runs of the same dataset" in err


def test_standard_output_is_a_trec_run_even_when_every_run_is_parquet(tmp_path, run):
    """-o - is a TREC run (the docs' contract), whatever the inputs' format; --format parquet asks for Parquet."""
    paths = []
    for r in range(2):
        paths.append(tmp_path / f"m{r}.parquet")
        pq.write_table(pa.table({"qid": [1, 1, 2], "docid": ["a", "b", "c"], "score": [1.0, 0.5 + r, 2.0]}),
                       paths[-1])
    status, out, err = run("fuse", *paths, "-o", "-")
    assert status == 0, err
    assert [line.split()[:3] for line in out.splitlines()] == [["1", "Q0", "b"], ["1", "Q0", "a"], ["2", "Q0", "c"]]


def test_folds_0_is_refused_like_folds_1(case, run):
    tmp, runs, paths, qrels = case
    opt = write_qrels(tmp / "opt.qrels", {q: qrels[q] for q in list(qrels)[:10]})
    for folds in ("0", "1"):
        status, _, err = run("fuse", *paths, "-o", tmp / "f.txt", "--method", "wsum", "--optimize", opt,
                             "--folds", folds)
        assert status == ExitStatus.USAGE and "--folds must be between 2 and" in err, (folds, err)


def test_a_docid_a_trec_run_cannot_hold_is_named_with_its_query_and_run(tmp_path, run):
    """A Parquet docid with a space fuses into a Parquet run, but not into a TREC run: exit 3 naming the run, the
    query (as text) and the document."""
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    pq.write_table(pa.table({"qid": [7, 7], "docid": ["d1", "d2"], "score": [1.0, 0.5]}), a)
    pq.write_table(pa.table({"qid": [7, 7], "docid": ["d1", "a b"], "score": [1.0, 0.5]}), b)
    assert run("fuse", a, b, "-o", tmp_path / "f.parquet")[0] == 0
    status, _, err = run("fuse", a, b, "-o", tmp_path / "f.txt", "--format", "trec")
    assert status == ExitStatus.INVALID_INPUT, err
    assert err.startswith(f"Error: {b}: query 7: docid 'a b' cannot name a document in a TREC file: it contains "
                          "whitespace"), err
    assert not (tmp_path / "f.txt").exists()
