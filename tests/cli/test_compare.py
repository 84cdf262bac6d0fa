"""rankcli compare end to end, on synthetic runs built with pyarrow."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import stats as sps

from rankcli.core.metrics import Convention, per_query
from rankcli.errors import ExitStatus
from tests.conftest import run_main as _run


def _labels(n_queries=60, seed=0, first_qid=1):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(4, 15, n_queries)
    qid = np.repeat(np.arange(n_queries, dtype=np.int64) * 2 + first_qid, sizes)
    label = rng.integers(0, 5, qid.shape[0]).astype(np.float64)
    return qid, label


def _write(path, qid, label, score, metadata=None):
    table = pa.table({"qid": pa.array(qid, pa.int64()), "label": pa.array(label, pa.float64()),
                      "score": pa.array(score, pa.float64())})
    if metadata:
        table = table.replace_schema_metadata(metadata)
    pq.write_table(table, str(path))
    return path


@pytest.fixture
def runs(tmp_path):
    """good: scores close to the labels; bad: much noisier; same queries and labels."""
    qid, label = _labels()
    rng = np.random.default_rng(1)
    good = _write(tmp_path / "good.parquet", qid, label, label + rng.normal(0, 1.0, qid.shape[0]))
    bad = _write(tmp_path / "bad.parquet", qid, label, label + rng.normal(0, 6.0, qid.shape[0]))
    return tmp_path, qid, label, good, bad


def _ndcg(path, k):
    t = pq.read_table(str(path)).to_pydict()
    qid = np.asarray(t["qid"])
    offsets = np.concatenate(([0], np.flatnonzero(np.diff(qid)) + 1, [qid.shape[0]]))
    return per_query([f"ndcg@{k}"], np.asarray(t["label"]), np.asarray(t["score"]), offsets, Convention())[f"ndcg@{k}"]


def test_json_numbers_match_scipy(runs, capsys):
    _, _, _, good, bad = runs
    status, out, err = _run(capsys, "compare", good, bad, "--json")
    assert status == 0, err
    report = json.loads(out)
    assert report["baseline"] == "good" and report["metrics"] == ["ndcg@5", "ndcg@10"]
    assert report["correction"] == "holm" and report["alpha"] == 0.01 and report["queries"] == 60
    for k, comp in zip((5, 10), report["comparisons"]):
        a, b = _ndcg(good, k), _ndcg(bad, k)
        ref = sps.ttest_rel(b, a)
        assert comp["a"] == "good" and comp["b"] == "bad" and comp["metric"] == f"ndcg@{k}"
        assert comp["p_value"] == pytest.approx(ref.pvalue, rel=1e-10)
        assert comp["statistic"] == pytest.approx(ref.statistic, rel=1e-10)
        assert comp["difference"] == pytest.approx(b.mean() - a.mean())
        assert comp["mean_a"] == pytest.approx(a.mean()) == report["means"]["good"][f"ndcg@{k}"]
        assert (comp["wins"], comp["ties"], comp["losses"]) == (
            int((b > a).sum()), int((b == a).sum()), int((b < a).sum()))
        assert comp["significant"] is True and comp["decision"] == "worse"
    p = [c["p_value"] for c in report["comparisons"]]
    holm = sorted([min(p) * 2, max(p)])
    assert sorted(c["p_adjusted"] for c in report["comparisons"]) == pytest.approx([holm[0], max(holm)])
    assert report["worse_than_baseline"] == [{"run": "bad", "metric": "ndcg@5"}, {"run": "bad", "metric": "ndcg@10"}]


@pytest.mark.parametrize("test", ["ttest", "permutation", "wilcoxon", "bootstrap"])
def test_run_against_itself_is_not_significant(runs, capsys, test):
    tmp, _, _, good, _ = runs
    copy = shutil.copy(good, tmp / "copy.parquet")
    status, out, err = _run(capsys, "compare", good, copy, "--test", test, "--json", "--fail-if-worse")
    assert status == 0, err
    for comp in json.loads(out)["comparisons"]:
        assert comp["p_value"] == 1.0 and comp["difference"] == 0.0 and not comp["significant"]
        assert comp["decision"] == "not significant" and comp["wins"] == comp["losses"] == 0


def test_fail_if_worse_both_directions(runs, cli, capsys):
    _, _, _, good, bad = runs
    worse = cli("compare", good, bad, "--fail-if-worse")             # a real process: the exit status a CI job sees
    assert worse.returncode == ExitStatus.WORSE_THAN_BASELINE
    assert worse.stderr.decode().startswith("Error: 2 comparisons significantly worse than the baseline good: bad on "
                                            "ndcg@5 (-0.")
    assert b"bad" in worse.stdout and "\u25bc".encode() in worse.stdout      # the table is still printed
    status, out, err = _run(capsys, "compare", bad, good, "--fail-if-worse")
    assert (status, err) == (0, "")
    assert "\u25b2" in out
    # With an explicit baseline among three runs, by path.
    status, _, err = _run(capsys, "compare", bad, good, bad, "--name", "b1", "--name", "g", "--name", "b2",
                          "--baseline", str(good), "--fail-if-worse")
    assert status == ExitStatus.WORSE_THAN_BASELINE and err.startswith("Error: 4 comparisons significantly worse")
    status, _, err = _run(capsys, "compare", bad, good, bad, "--name", "b1", "--name", "g", "--name", "b2",
                          "--baseline", "b1", "--fail-if-worse")
    assert (status, err) == (0, "")


def test_fail_if_worse_needs_a_baseline_for_more_than_two(runs, capsys):
    tmp, _, _, good, bad = runs
    third = shutil.copy(good, tmp / "third.parquet")
    status, _, err = _run(capsys, "compare", good, bad, third, "--fail-if-worse")
    assert status == ExitStatus.USAGE
    assert err == "Error: --fail-if-worse needs --baseline when comparing more than two runs\n"


def test_query_mismatch_and_intersect(runs, capsys):
    tmp, qid, label, good, _ = runs
    keep = qid != 7                                                # drop query 7 from one run
    rng = np.random.default_rng(5)
    other = _write(tmp / "other.parquet", qid[keep], label[keep], label[keep] + rng.normal(0, 1, keep.sum()))
    status, out, err = _run(capsys, "compare", good, other)
    assert status == ExitStatus.INVALID_INPUT and out == ""
    assert err == (f"Error: runs cover different queries: query 7 is in {good} but not in {other}; pass --intersect "
                   "to compare on the queries every run has\n")
    status, out, err = _run(capsys, "compare", good, other, "--intersect", "--json")
    assert status == 0, err
    report = json.loads(out)
    assert report["queries"] == 59 and report["dropped"] == 1
    status, out, _ = _run(capsys, "compare", good, other, "--intersect")
    assert "59 queries (1 dropped: not in every run or labels differ)" in out


def test_label_mismatch_and_intersect(runs, capsys):
    tmp, qid, label, good, _ = runs
    label2 = label.copy()
    rows = np.flatnonzero(qid == 9)
    label2[rows[0]] = label2[rows[0]] + 1                          # query 9 has other labels
    label2[np.flatnonzero(qid == 21)[-1]] += 2                     # and query 21
    other = _write(tmp / "other.parquet", qid, label2, np.random.default_rng(2).random(qid.shape[0]))
    status, _, err = _run(capsys, "compare", good, other)
    assert status == ExitStatus.INVALID_INPUT
    assert err.startswith(f"Error: runs have different labels: query 9 differs between {good} and {other}")
    status, out, err = _run(capsys, "compare", good, other, "--intersect", "--json")
    assert status == 0, err
    assert json.loads(out)["dropped"] == 2 and json.loads(out)["queries"] == 58


def test_documents_in_another_order_are_the_same_labels(runs, capsys):
    tmp, qid, label, good, _ = runs
    rng = np.random.default_rng(3)
    order = np.lexsort((rng.random(qid.shape[0]), qid))           # shuffle documents within each query
    shuffled = _write(tmp / "shuffled.parquet", qid[order], label[order], rng.random(qid.shape[0]))
    status, _, err = _run(capsys, "compare", good, shuffled)
    assert status == 0, err


def test_output_is_byte_identical_across_processes(runs, cli):
    tmp, _, _, good, bad = runs
    third = shutil.copy(good, tmp / "third.parquet")
    args = ["compare", good, bad, third, "--test", "permutation", "--permutations", "2000", "--seed", "7"]
    first, second = cli(*args), cli(*args)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout and b"permutation (2000 permutations, seed 7)" in first.stdout


@pytest.mark.parametrize("fmt", ["markdown", "latex", "tsv", "json"])
def test_output_is_byte_identical_for_the_same_seed(runs, capsys, fmt):
    tmp, _, _, good, bad = runs
    third = shutil.copy(good, tmp / "third.parquet")
    args = ["compare", good, bad, third, "--test", "bootstrap", "--permutations", "2000", "--seed", "7"]
    args += ["--json"] if fmt == "json" else ["--format", fmt]
    first, second = _run(capsys, *args), _run(capsys, *args)
    assert first[0] == 0, first[2]
    assert first == second and first[1]


def test_permutation_json_is_reproducible_and_seed_dependent(runs, capsys):
    tmp, qid, label, good, _ = runs
    close = _write(tmp / "close.parquet", qid, label, label + np.random.default_rng(9).normal(0, 1.0, qid.shape[0]))
    outs = []
    for seed in (1, 1, 2):
        status, out, err = _run(capsys, "compare", good, close, "--test", "permutation", "--permutations", "500",
                                "--seed", seed, "--json", "--metric", "ndcg@10")
        assert status == 0, err
        outs.append(json.loads(out)["comparisons"][0]["p_value"])
    assert outs[0] == outs[1]
    assert outs[0] != outs[2]
    hits = outs[0] * 501 - 1
    assert hits == pytest.approx(round(hits))


def test_all_pairs_letters_and_formats(runs, capsys):
    tmp, _, _, good, bad = runs
    third = shutil.copy(bad, tmp / "worse.parquet")
    status, out, _ = _run(capsys, "compare", bad, good, third, "--name", "B", "--name", "G", "--name", "W")
    assert status == 0
    lines = out.splitlines()
    assert lines[0].startswith("test ttest; alpha 0.01; correction holm over 6 tests; all pairs; 60 queries;")
    g_row = next(line for line in lines if line.startswith("(b) G"))
    assert "\u1d43\u1d9c" in g_row                                  # G is better than a (B) and c (W)
    status, out, _ = _run(capsys, "compare", bad, good, third, "--name", "B", "--name", "G", "--name", "W",
                          "--format", "latex")
    assert r"\textsuperscript{ac}" in out and out.count(r"\\") == 4 and r"\begin{tabular}{lrr}" in out
    status, out, _ = _run(capsys, "compare", bad, good, "--format", "markdown", "--metric", "ndcg@5")
    assert "| good | **" in out and "\u25b2" in out and "| bad (baseline) |" in out
    status, out, _ = _run(capsys, "compare", bad, good, "--format", "tsv", "--metric", "ndcg@1,3")
    rows = [line.split("\t") for line in out.splitlines()]
    assert rows[0][:3] == ["a", "b", "metric"] and [r[2] for r in rows[1:]] == ["ndcg@1", "ndcg@3"]
    assert rows[0][12:14] == ["p_value", "p_adjusted"]


def test_per_query_metric_files(runs, capsys):
    tmp, _, _, good, bad = runs
    files = []
    for path in (good, bad):
        t = pq.read_table(str(path))
        qid = np.unique(t.column("qid").to_numpy())
        table = pa.table({"qid": qid, "ndcg@5": _ndcg(path, 5), "ndcg@10": _ndcg(path, 10)})
        table = table.replace_schema_metadata({b"rankcli.kind": b"per-query"})
        out_path = tmp / f"{path.stem}.pq.parquet"
        pq.write_table(table, str(out_path))
        files.append(out_path)
    status, out_runs, err = _run(capsys, "compare", good, bad, "--json", "--name", "good", "--name", "bad")
    assert status == 0, err
    status, out_files, err = _run(capsys, "compare", *files, "--json", "--name", "good", "--name", "bad")
    assert status == 0, err
    a, b = json.loads(out_runs), json.loads(out_files)
    assert a["comparisons"] == b["comparisons"] and a["means"] == b["means"]
    assert [r["kind"] for r in b["runs"]] == ["per-query", "per-query"]
    status, _, err = _run(capsys, "compare", *files, "--metric", "map")
    assert status == ExitStatus.INVALID_INPUT and "has no column map" in err


def test_queries_without_a_value_are_left_out(tmp_path, capsys):
    qid, label = _labels(30, seed=4)
    label[qid == 3] = 0.0                                          # no relevant document: skipped by default
    rng = np.random.default_rng(0)
    a = _write(tmp_path / "a.parquet", qid, label, rng.random(qid.shape[0]))
    b = _write(tmp_path / "b.parquet", qid, label, rng.random(qid.shape[0]))
    status, out, err = _run(capsys, "compare", a, b, "--json")
    assert status == 0, err
    report = json.loads(out)
    assert report["queries"] == 30 and report["queries_used"] == {"ndcg@5": 29, "ndcg@10": 29}
    assert report["comparisons"][0]["n"] == 29
    status, out, err = _run(capsys, "compare", a, b, "--json", "--convention", "lightgbm")
    assert json.loads(out)["queries_used"]["ndcg@5"] == 30 and json.loads(out)["convention"]["no_relevant"] == "one"


def test_fewer_than_two_queries_is_not_testable(tmp_path, capsys):
    qid = np.array([1, 1, 1], dtype=np.int64)
    label = np.array([1.0, 0.0, 2.0])
    a = _write(tmp_path / "a.parquet", qid, label, np.array([0.1, 0.2, 0.3]))
    b = _write(tmp_path / "b.parquet", qid, label, np.array([0.3, 0.2, 0.1]))
    status, out, err = _run(capsys, "compare", a, b, "--json", "--fail-if-worse")
    assert status == 0, err
    comp = json.loads(out)["comparisons"][0]
    assert comp["p_value"] is None and comp["decision"] == "not testable" and comp["n"] == 1
    status, out, err = _run(capsys, "compare", a, b)
    assert "2 comparisons not testable (fewer than two queries with a value in every run)." in out
    assert "n/a" in out


def test_usage_errors(runs, capsys, tmp_path):
    _, _, _, good, bad = runs
    cases = [
        (["--name", "x"], "Error: --name given 1 times for 2 runs; give one name per run, in order\n"),
        (["--name", "x", "--name", "x"], "Error: two runs are named 'x'; tell them apart with --name (once per run, "
                                         "in order)\n"),
        (["--baseline", "nope"], "Error: --baseline 'nope' is not one of the runs (names: good, bad)\n"),
        (["--format", "latex", "--json"], "Error: --json and --format cannot be used together\n"),
        (["--alpha", "0"], "Error: --alpha must be between 0 and 1, got 0.0\n"),
    ]
    for extra, message in cases:
        status, out, err = _run(capsys, "compare", good, bad, *extra)
        assert (status, out, err) == (ExitStatus.USAGE, "", message)
    for extra in (["--test", "tt"], ["--correction", "fdr"], ["--format", "html"]):
        status, out, err = _run(capsys, "compare", good, bad, *extra)
        assert status == ExitStatus.USAGE and f"Invalid value for '{extra[0]}'" in err and out == ""
    text = tmp_path / "run.txt"
    text.write_text("1 Q0 d1 1 0.5 x\n")
    status, _, err = _run(capsys, "compare", good, text)
    assert status == ExitStatus.USAGE and err == f"Error: {text}: not a Parquet file; a TREC run needs --qrels QRELS\n"
    status, _, err = _run(capsys, "compare", good, tmp_path / "missing.parquet")
    assert status == ExitStatus.INVALID_INPUT and err == f"Error: {tmp_path / 'missing.parquet'}: no such file\n"


def test_corrections_in_report(runs, capsys):
    _, _, _, good, bad = runs
    status, out, _ = _run(capsys, "compare", good, bad, "--json", "--correction", "bonferroni", "-m", "ndcg@1,3,5")
    comps = json.loads(out)["comparisons"]
    assert [c["p_adjusted"] for c in comps] == pytest.approx([min(1.0, 3 * c["p_value"]) for c in comps])
    status, out, _ = _run(capsys, "compare", good, bad, "--json", "-m", "ndcg@5")
    report = json.loads(out)
    assert report["correction"] == "none"
    assert report["comparisons"][0]["p_adjusted"] == report["comparisons"][0]["p_value"]


QRELS = """q1 0 d1 2
q1 0 d2 0
q1 0 d3 1
q2 0 d1 1
q2 0 d4 3
q3 0 d5 1
q3 0 d6 0
q4 0 d7 0
"""


def _trec(path, rows):
    path.write_text("".join(f"{q} Q0 {d} {i + 1} {s} tag\n" for i, (q, d, s) in enumerate(rows)))
    return path


def test_trec_runs_with_qrels(tmp_path, capsys):
    from rankcli.evaluate import evaluate_trec

    qrels = tmp_path / "qrels.txt"
    qrels.write_text(QRELS)
    r1 = _trec(tmp_path / "r1.txt", [("q1", "d1", 3), ("q1", "d3", 2), ("q1", "d2", 1), ("q2", "d4", 2),
                                      ("q2", "d1", 1), ("q3", "d5", 1), ("q4", "d7", 1)])
    r2 = _trec(tmp_path / "r2.txt", [("q1", "d2", 3), ("q1", "d1", 2), ("q2", "d1", 2), ("q2", "d9", 1),
                                      ("q3", "d6", 2), ("q3", "d5", 1), ("q4", "d7", 1)])
    status, out, err = _run(capsys, "compare", r1, r2, "--qrels", qrels, "-m", "ndcg@2,map", "--json")
    assert status == 0, err
    report = json.loads(out)
    assert [r["kind"] for r in report["runs"]] == ["trec", "trec"] and report["queries"] == 4
    # The trec convention by default: q4 has no relevant document and scores 0, as in trec_eval.
    assert report["convention"] == Convention.preset("trec").as_dict()
    assert report["queries_used"] == {"ndcg@2": 4, "map": 4}
    for run in ("r1", "r2"):
        ev = evaluate_trec(tmp_path / f"{run}.txt", qrels, ["ndcg@2", "map"])
        assert report["means"][run]["ndcg@2"] == pytest.approx(ev.result.means["ndcg@2"])
    a = evaluate_trec(r1, qrels, ["map"]).result.per_query["map"]
    b = evaluate_trec(r2, qrels, ["map"]).result.per_query["map"]
    assert report["comparisons"][1]["p_value"] == pytest.approx(sps.ttest_rel(b, a).pvalue)
    # An explicit --convention paper is honoured: q4 is skipped.
    status, out, err = _run(capsys, "compare", r1, r2, "--qrels", qrels, "-m", "ndcg@2,map", "--json",
                            "--convention", "paper")
    assert status == 0, err
    assert json.loads(out)["queries_used"] == {"ndcg@2": 3, "map": 3}
    assert json.loads(out)["convention"] == Convention().as_dict()
    # A run that misses a query: exit 3 naming it, or --intersect.
    r3 = _trec(tmp_path / "r3.txt", [("q1", "d1", 3), ("q3", "d5", 1), ("q4", "d7", 1)])
    status, _, err = _run(capsys, "compare", r1, r3, "--qrels", qrels)
    assert status == ExitStatus.INVALID_INPUT
    assert err == (f"Error: runs cover different queries: query q2 is in {r1} but not in {r3}; pass --intersect to "
                   "compare on the queries every run has\n")
    status, out, err = _run(capsys, "compare", r1, r3, "--qrels", qrels, "--intersect", "--json")
    assert status == 0, err
    assert json.loads(out)["dropped"] == 1 and json.loads(out)["queries"] == 3


def test_string_query_ids_are_byte_identical_across_runs_and_formats(tmp_path, capsys):
    """Non-numeric TREC query ids ("q1"), and numeric-looking ones mixed with them: aligned by id, same bytes twice."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(QRELS + "10 0 d1 1\n10 0 d2 0\n")
    r1 = _trec(tmp_path / "r1.txt", [("q1", "d1", 3), ("q1", "d3", 2), ("q2", "d4", 2), ("q2", "d1", 1),
                                      ("q3", "d5", 1), ("10", "d1", 2), ("10", "d2", 1)])
    r2 = _trec(tmp_path / "r2.txt", [("10", "d2", 2), ("10", "d1", 1), ("q3", "d6", 2), ("q3", "d5", 1),
                                      ("q2", "d1", 2), ("q1", "d2", 3), ("q1", "d1", 2)])
    for fmt in ("table", "markdown", "latex", "tsv", "json"):
        args = ["compare", r1, r2, "--qrels", qrels, "-m", "ndcg@2", "--test", "permutation", "--seed", "3"]
        args += ["--json"] if fmt == "json" else ["--format", fmt] if fmt != "table" else []
        first = _run(capsys, *args)
        assert first[0] == 0, first[2]
        assert _run(capsys, *args)[1] == first[1]
    report = json.loads(first[1])
    assert report["queries"] == 4 and report["comparisons"][0]["n"] == 4


def test_per_query_files_written_by_eval(runs, capsys):
    from rankcli.core.metrics import Convention
    from rankcli.evaluate import evaluate_path, write_per_query

    tmp, _, _, good, bad = runs
    files = {}
    for path in (good, bad):
        for conv in ("paper", "lightgbm"):
            out_path = tmp / f"{path.stem}.{conv}.parquet"
            write_per_query(out_path, evaluate_path(path, ["ndcg@5", "mrr"], Convention.preset(conv)))
            files[path.stem, conv] = out_path
    status, out_files, err = _run(capsys, "compare", files["good", "paper"], files["bad", "paper"], "--json")
    assert status == 0, err
    status, out_runs, err = _run(capsys, "compare", good, bad, "--json", "-m", "ndcg@5,mrr")
    a, b = json.loads(out_files), json.loads(out_runs)
    assert a["metrics"] == ["ndcg@5", "mrr"] and a["comparisons"][0]["p_value"] == b["comparisons"][0]["p_value"]
    assert a["convention"] == b["convention"]
    # Per-query files under another convention are refused (a per-query file next to a run: test_kinds_are_not_mixed)
    status, _, err = _run(capsys, "compare", files["good", "paper"], files["bad", "lightgbm"])
    assert status == ExitStatus.INVALID_INPUT and "was evaluated under a different convention" in err


def test_kinds_are_not_mixed_and_each_input_s_kind_is_shown(runs, capsys):
    """A per-query file next to runs would be compared without a word (as when an --overwrite has replaced a run
    with one). The mix is refused, in either order; the report names each input's kind."""
    from rankcli.evaluate import evaluate_path, write_per_query

    tmp, _, _, good, bad = runs
    per_query = tmp / "kinds-good.parquet"
    write_per_query(per_query, evaluate_path(good, ["ndcg@5"], Convention.preset("paper")))
    for args in ([per_query, bad], [bad, per_query], [good, bad, per_query]):
        status, out, err = _run(capsys, "compare", *args, "-m", "ndcg@5")
        assert (status, out) == (ExitStatus.USAGE, ""), err
        assert err.startswith(f"Error: cannot compare per-query files with runs: {per_query} is a per-query file "), err
    status, out, err = _run(capsys, "compare", good, bad)
    assert status == 0, err
    assert f"inputs: {good.stem} = Parquet run {good}; {bad.stem} = Parquet run {bad}" in " ".join(out.split())
    status, out, _ = _run(capsys, "compare", good, bad, "--json")
    assert [r["kind"] for r in json.loads(out)["runs"]] == ["run", "run"]


def test_per_query_conventions_asked_for_missing_or_corrupt(runs, capsys):
    """`compare a.pq b.pq --convention lightgbm` (or --gain linear) printed the files' paper values with exit 0, the
    option silently ignored; a footer convention that is not JSON or not an object was accepted; a file without one
    was reported under another file's convention without a word."""
    from rankcli.evaluate import evaluate_path, write_per_query

    tmp, _, _, good, bad = runs
    a, b = tmp / "conv-a.parquet", tmp / "conv-b.parquet"
    for src, dst in ((good, a), (bad, b)):
        write_per_query(dst, evaluate_path(src, ["ndcg@5"], Convention.preset("paper")))
    for option in (["--convention", "lightgbm"], ["--gain", "linear"], ["--no-relevant", "zero"]):
        status, out, err = _run(capsys, "compare", a, b, *option)
        assert status == ExitStatus.INVALID_INPUT and out == ""
        assert err.startswith(f"Error: {a} was evaluated under another convention (") and "asked for" in err, err
    status, out, err = _run(capsys, "compare", a, b, "--convention", "paper", "--json")   # the same one is fine
    assert status == 0, err
    table = pq.read_table(a)
    meta = dict(table.schema.metadata)
    for bad_conv in (b"not json{", b"[1, 2]", b'{"colour": "blue"}'):
        pq.write_table(table.replace_schema_metadata({**meta, b"rankcli.convention": bad_conv}),
                       tmp / "corrupt.parquet")
        status, _, err = _run(capsys, "compare", tmp / "corrupt.parquet", b)
        assert status == ExitStatus.INVALID_INPUT
        assert err.startswith(f"Error: {tmp / 'corrupt.parquet'}: its footer's rankcli.convention is not a metric "
                              "convention"), err
    del meta[b"rankcli.convention"]
    pq.write_table(table.replace_schema_metadata(meta), tmp / "unknown.parquet")
    status, out, err = _run(capsys, "compare", tmp / "unknown.parquet", b, "--json")
    assert status == 0, err
    note = f"{tmp / 'unknown.parquet'} records no convention"
    assert note in err and any(n.startswith(note) for n in json.loads(out)["notes"])


def test_run_names_are_not_markup_and_no_common_query(tmp_path, capsys):
    qid, label = _labels(10)
    rng = np.random.default_rng(0)
    a = _write(tmp_path / "a.parquet", qid, label, rng.random(qid.shape[0]))
    b = _write(tmp_path / "b.parquet", qid + 1000, label, rng.random(qid.shape[0]))
    status, out, err = _run(capsys, "compare", a, a, "--name", "[bold]x", "--name", "y_1")
    assert status == 0, err
    assert "[bold]x (baseline)" in out
    status, _, err = _run(capsys, "compare", a, b, "--intersect")
    assert (status, err) == (ExitStatus.INVALID_INPUT, "Error: the runs have no query in common (with identical "
                                                       "labels); nothing to compare\n")


def test_bad_run_is_exit_3_naming_the_file(runs, capsys):
    tmp, qid, label, good, _ = runs
    score = np.zeros(qid.shape[0])
    score[4] = np.nan
    broken = _write(tmp / "broken.parquet", qid, label, score)
    status, out, err = _run(capsys, "compare", good, broken)
    assert status == ExitStatus.INVALID_INPUT and out == ""
    assert err.startswith(f"Error: {broken}: column score: NaN at row 4")
    pq.write_table(pa.table({"qid": qid, "label": label}), str(tmp / "nolabel.parquet"))
    pq.write_table(pa.table({"qid": qid, "score": label}), str(tmp / "noscore.parquet"))
    status, _, err = _run(capsys, "compare", good, tmp / "noscore.parquet")
    assert status == ExitStatus.INVALID_INPUT and "missing column label" in err
    status, _, err = _run(capsys, "compare", good, tmp / "nolabel.parquet")
    assert status == ExitStatus.INVALID_INPUT and "missing column score" in err


def test_latex_escapes_names(runs, capsys):
    _, _, _, good, bad = runs
    status, out, _ = _run(capsys, "compare", good, bad, "--name", "a_b & c", "--name", "50%", "--format", "latex")
    assert status == 0
    assert r"a\_b \& c (baseline) & " in out and r"50\% & " in out


def test_difference_is_labelled_with_the_names_it_subtracts(runs, capsys):
    """One sign convention, so that no reader guesses which way a difference runs: the row of b against a reads
    "b - a" and its value is mean(b) - mean(a), in the table and in Markdown, as in the JSON (a, b, difference)."""
    _, _, _, good, bad = runs
    status, out, _ = _run(capsys, "compare", good, bad, "--json", "--metric", "ndcg@5")
    comp = json.loads(out)["comparisons"][0]
    assert (comp["a"], comp["b"]) == ("good", "bad") and comp["difference"] < 0
    assert comp["difference"] == pytest.approx(comp["mean_b"] - comp["mean_a"])
    for fmt in ("table", "markdown"):
        status, out, _ = _run(capsys, "compare", good, bad, "--format", fmt, "--metric", "ndcg@5")
        assert status == 0
        row = next(line for line in out.splitlines() if "bad - good" in line)
        assert f"{comp['difference']:+.4f}" in row and " vs " not in out


def _per_query_file(path, qid, values):
    table = pa.table({"qid": pa.array(qid, pa.int64()), "ndcg@10": pa.array(values, pa.float64())})
    pq.write_table(table.replace_schema_metadata({b"rankcli.kind": b"per-query"}), str(path))
    return path


def test_constant_difference_is_not_testable_for_ttest_and_bootstrap(tmp_path, capsys):
    # Every query 0.25 lower: repeats of one shift, no variance. Was t = -inf and p = 0 ("worse", exit 5).
    qid = np.arange(1, 7, dtype=np.int64)
    base = np.array([0.5, 0.75, 0.625, 1.0, 0.875, 0.5])
    a = _per_query_file(tmp_path / "a.parquet", qid, base)
    b = _per_query_file(tmp_path / "b.parquet", qid, base - 0.25)
    reason = "all differences are equal (zero variance)"
    for test in ("ttest", "bootstrap"):
        status, out, err = _run(capsys, "compare", a, b, "--json", "--test", test, "--fail-if-worse")
        assert status == 0, err
        comp = json.loads(out)["comparisons"][0]
        assert comp["p_value"] is None and comp["p_adjusted"] is None and comp["statistic"] is None
        assert comp["decision"] == "not testable" and comp["reason"] == reason and comp["significant"] is False
        assert comp["difference"] == -0.25 and comp["n"] == 6 and comp["ci_low"] is None
        status, out, err = _run(capsys, "compare", a, b, "--test", test)
        assert status == 0, err
        assert f"not testable: {reason}" in out
        assert ("1 comparison not testable (every query differs by the same amount, so the test has no variance to "
                "use; permutation and wilcoxon give an exact p-value).") in out
        status, out, err = _run(capsys, "compare", a, b, "--test", test, "--format", "tsv")
        header, row = [line.split("\t") for line in out.splitlines()]
        assert row[header.index("reason")] == reason and row[header.index("p_value")] == "nan"
    for test in ("permutation", "wilcoxon"):
        # Their exact p-value: only the observed signs and the full flip are as extreme, 2 / 2^6.
        status, out, err = _run(capsys, "compare", a, b, "--json", "--test", test, "--alpha", "0.05")
        comp = json.loads(out)["comparisons"][0]
        assert comp["p_value"] == 2 / 2 ** 6 and comp["exact"] is True and comp["reason"] is None
        assert comp["decision"] == "worse"


def test_bootstrap_interval_in_report_agrees_with_p_value(runs, capsys):
    _, _, _, good, bad = runs
    status, out, err = _run(capsys, "compare", good, bad, "--json", "--test", "bootstrap", "--alpha", "0.05",
                            "--correction", "none", "--permutations", "999", "-m", "ndcg@1,3,5,10")
    assert status == 0, err
    for comp in json.loads(out)["comparisons"]:
        excludes = comp["ci_low"] > 0 or comp["ci_high"] < 0
        assert excludes == (comp["p_value"] < 0.05) == comp["significant"]
        assert comp["statistic"] == pytest.approx(comp["difference"] / comp["stderr"])


def test_trec_runs_sharing_no_document_with_the_qrels_exit_3(tmp_path, capsys):
    """A run whose documents are named otherwise than its qrels' would score 0 on every query: it is refused, not
    compared as "0 wins"."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(QRELS)
    good = _trec(tmp_path / "good.txt", [("q1", "d1", 2), ("q1", "d2", 1), ("q2", "d4", 1), ("q3", "d5", 1),
                                          ("q4", "d7", 1)])
    renamed = _trec(tmp_path / "renamed.txt", [(q, f"{q}-{d}", s) for q, d, s in
                                                [("q1", "d1", 2), ("q1", "d2", 1), ("q2", "d4", 1), ("q3", "d5", 1),
                                                 ("q4", "d7", 1)]])
    status, out, err = _run(capsys, "compare", good, renamed, "--qrels", qrels)
    assert status == ExitStatus.INVALID_INPUT and out == ""
    assert err == (f"Error: {renamed} and {qrels} share no document id: none of the 5 documents the run ranks for "
                   "its 4 judged queries is in the qrels (query q1: the run has 'q1-d1', the qrels 'd1'); were they "
                   "written from the same data?\n")
    # Partly unjudged: compared, and the notes (stderr and JSON) say how many queries had no judged document.
    partly = _trec(tmp_path / "partly.txt", [("q1", "d1", 2), ("q1", "d2", 1), ("q2", "x", 1), ("q3", "y", 1),
                                              ("q4", "d7", 1)])
    status, out, err = _run(capsys, "compare", good, partly, "--qrels", qrels, "--json")
    assert status == 0, err
    note = ("partly: 2 of the 4 evaluated queries have no judged document among those the run ranks (every one "
            f"counts as not relevant; do the run and {qrels} name documents alike?)")
    assert note in json.loads(out)["notes"] and note in err


def test_trec_ties_are_broken_by_docid_in_compare(tmp_path, capsys):
    # Same documents and scores, different file order: identical under the trec convention (as trec_eval), different
    # under --ties input. String query ids throughout.
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("qa 0 d10 1\nqa 0 d9 0\nqb 0 é 1\nqb 0 e 0\n")
    one = _trec(tmp_path / "one.txt", [("qa", "d10", 1), ("qa", "d9", 1), ("qb", "é", 1), ("qb", "e", 1)])
    two = _trec(tmp_path / "two.txt", [("qa", "d9", 1), ("qa", "d10", 1), ("qb", "e", 1), ("qb", "é", 1)])
    status, out, err = _run(capsys, "compare", one, two, "--qrels", qrels, "-m", "mrr", "--json")
    assert status == 0, err
    report = json.loads(out)
    # "d9" > "d10" and "é" (0xC3 0xA9) > "e" in byte order: the relevant d10 ranks 2nd, the relevant é 1st.
    assert report["means"] == {"one": {"mrr": 0.75}, "two": {"mrr": 0.75}}
    assert report["comparisons"][0]["ties"] == 2
    status, out, err = _run(capsys, "compare", one, two, "--qrels", qrels, "-m", "mrr", "--json", "--ties", "input")
    assert status == 0, err
    assert json.loads(out)["means"] == {"one": {"mrr": 1.0}, "two": {"mrr": 0.5}}


def test_parquet_runs_keep_the_paper_convention_by_default(runs, capsys):
    _, _, _, good, bad = runs
    status, out, err = _run(capsys, "compare", good, bad, "--json", "-m", "ndcg@5")
    assert status == 0, err
    assert json.loads(out)["convention"] == Convention().as_dict()
    status, out, err = _run(capsys, "compare", good, bad, "--json", "-m", "ndcg@5", "--convention", "trec")
    assert status == 0, err
    assert json.loads(out)["convention"]["ties"] == "docid-desc"
