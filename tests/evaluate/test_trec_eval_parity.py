"""Every trec_eval measure rankcli computes, against pytrec_eval (trec_eval 9's code) to 1e-9 per query and on the
summary, on random tie-heavy runs: documents missing from the qrels, judged documents missing from the run, qrels
queries missing from the run and run queries missing from the qrels, relevance 0..4 with ``-l 2`` (and 1), pooled
but unjudged documents (negative qrels labels). iprec_at_recall and 11pt_avg changed in trec_eval 10 (cutoffs
``lround(level R)`` instead of ``(long)(level R + 0.9)``): they are checked against pytrec_eval with the old rounding
swapped in, and against values worked out by hand from trec_eval 10's source."""

from __future__ import annotations

import numpy as np
import pytest

from rankcli import evaluate as E
from rankcli.core import metrics as M
from rankcli.core.metrics import specs as MS
from rankcli.core.metrics import trec_eval_measures as K

pytrec_eval = pytest.importorskip("pytrec_eval")

#: pytrec_eval names -> what rankcli is asked for (trec_eval's own spelling, so the parser is exercised too)
MEASURES = ["num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret", "map", "gm_map", "Rprec", "bpref",
            "recip_rank", "iprec_at_recall", "P", "recall", "infAP", "gm_bpref", "Rprec_mult", "11pt_avg", "ndcg",
            "ndcg_rel", "Rndcg", "ndcg_cut", "map_cut", "relative_P", "success", "set_P", "set_recall", "set_F"]
GEOMETRIC = {"gm_map", "gm_bpref"}


def _random_case(seed: int, n_queries: int = 30):
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(n_queries):
        qid = f"q{q}"
        pool = [f"d{int(i)}" for i in rng.choice(60, size=int(rng.integers(2, 40)), replace=False)]
        if rng.random() > 0.1:  # ~10% of the run's queries have no judgments
            judged = [d for d in pool if rng.random() < 0.6] + [f"u{int(i)}" for i in range(int(rng.integers(0, 4)))]
            labels = rng.choice([-1, 0, 0, 0, 1, 2, 3, 4], size=len(judged))
            if len(judged):
                qrels[qid] = {d: int(y) for d, y in zip(judged, labels)}
        scores = rng.choice(np.array([0.5, 1.0, 1.5, 2.0, 3.0]), size=len(pool))  # heavy ties
        run[qid] = {d: float(s) for d, s in zip(pool, scores)}
    for q in range(3):  # judged queries absent from the run
        qrels[f"x{q}"] = {"d1": 2, "d2": 0}
    return qrels, run


def _write(tmp_path, qrels, run):
    qp, rp = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qp.write_text("".join(f"{q} 0 {d} {y}\n" for q, docs in qrels.items() for d, y in docs.items()))
    lines = []
    for q, docs in run.items():
        for i, (d, s) in enumerate(docs.items()):
            lines.append(f"{q}\tQ0  {d} {i + 1} {s} tag\n")  # a tab and padding spaces, as trec_eval's test files
    rp.write_text("".join(lines))
    return qp, rp


def _pytrec(qrels, run, level, judged_only=False):
    # pytrec_eval evaluates the queries in both files, as trec_eval without -c
    ev = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES), relevance_level=level,
                                        judged_docs_only_flag=judged_only)
    return ev.evaluate({q: d for q, d in run.items() if q in qrels})


def _compare(tmp_path, seed, level, judged_only=False):
    qrels, run = _random_case(seed)
    qp, rp = _write(tmp_path, qrels, run)
    theirs = _pytrec(qrels, run, level, judged_only)
    specs = M.parse_metrics(MEASURES)
    conv = M.Convention.preset("trec").with_(relevance_threshold=float(level))
    report = E.evaluate_trec(rp, qp, specs, conv, judged_only=judged_only)
    qids = [str(q) for q in report.qids]
    assert sorted(qids) == sorted(theirs)
    if judged_only:
        # a query left without a judged document has num_ret 0: trec_eval divides 0 by 0 in a few measures
        # (iprec_at_recall, 11pt_avg: nan); rankcli scores such a query 0 (documented). Compare the others.
        emptied = [q for q in qids if theirs[q]["num_ret"] == 0]
        assert all(report.result.per_query["num_ret"][qids.index(q)] == 0 for q in emptied)
        keep = [i for i, q in enumerate(qids) if q not in emptied]
        qids = [qids[i] for i in keep]
        report.result.per_query = {k: v[keep] for k, v in report.result.per_query.items()}
        report.result.means = {str(s): M.aggregate(s, report.result.per_query[str(s)]) for s in specs}
    checked = 0
    for spec in specs:
        name = spec.trec_name
        ours = report.result.per_query[str(spec)]
        want = np.array([theirs[q][name] for q in qids])
        if spec.name in ("gm_map", "gm_bpref"):
            ours = np.log(np.maximum(ours, 1e-5))  # trec_eval keeps log(max(v, 1e-5)) per query
            mean_want = float(np.exp(want.mean()))
        else:
            mean_want = float(want.sum() if spec.record.aggregate == "sum" else want.mean())
        np.testing.assert_allclose(ours, want, rtol=0, atol=1e-9, err_msg=name)
        assert report.result.means[str(spec)] == pytest.approx(mean_want, abs=1e-9), name
        checked += 1
    assert checked == len(specs) > 70


@pytest.mark.parametrize("seed, level", [(1, 2), (2, 2), (3, 1), (4, 2), (5, 2), (6, 3), (7, 2), (8, 1)])
def test_every_measure_matches_pytrec_eval(tmp_path, seed, level, monkeypatch):
    # pytrec_eval bundles trec_eval 9: its recall-level cutoffs are (long)(level R + 0.9)
    monkeypatch.setattr(K, "_recall_cuts", lambda b, levels: np.floor(
        np.asarray(levels)[None, :] * b.R[:, None] + 0.9).astype(np.int64))
    _compare(tmp_path, seed, level)


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_judged_only_matches_pytrec_eval(tmp_path, seed, monkeypatch):
    """-J: unjudged documents (absent from the qrels or with a negative label) leave the ranking before it is cut."""
    monkeypatch.setattr(K, "_recall_cuts", lambda b, levels: np.floor(
        np.asarray(levels)[None, :] * b.R[:, None] + 0.9).astype(np.int64))
    _compare(tmp_path, seed, 2, judged_only=True)


def test_iprec_at_recall_is_trec_eval_10_by_hand(tmp_path):
    # One query, R = 3 relevant (a, b, c), ranking: a (rel), x, b (rel), y, z; c not retrieved.
    # precisions at the relevant ranks: 1/1, 2/3; trec_eval 10 cutoffs lround(level * 3):
    # 0.0 -> 0, 0.1 -> 0, 0.2 -> 1 (0.6), 0.3 -> 1, 0.4 -> 1, 0.5 -> 2 (1.5 rounds away from zero), 0.6 -> 2,
    # 0.7 -> 2, 0.8 -> 2, 0.9 -> 3, 1.0 -> 3. Cutoff c <= 2 retrieved relevant: max precision from the c-th relevant
    # rank on (c = 0, 1: 1.0; c = 2: 2/3); c = 3 > 2 retrieved: 0.
    # trec_eval 9 would have (long)(0.1 * 3 + 0.9) = 1 and (long)(0.4 * 3 + 0.9) = 2: 0.4 -> 2/3, here 1.0.
    qp, rp = tmp_path / "q", tmp_path / "r"
    qp.write_text("1 0 a 1\n1 0 b 1\n1 0 c 1\n1 0 x 0\n")
    rp.write_text("".join(f"1 Q0 {d} {i} {5 - i} t\n" for i, d in enumerate("axbyz", 1)))
    report = E.evaluate_trec(rp, qp, M.parse_metrics(["iprec_at_recall", "11pt_avg"]))
    got = [report.result.means[f"iprec_at_recall@{x / 10:.2f}"] for x in range(11)]
    want = [1.0, 1.0, 1.0, 1.0, 1.0, 2 / 3, 2 / 3, 2 / 3, 2 / 3, 0.0, 0.0]
    assert got == pytest.approx(want, abs=1e-12)
    assert report.result.means["11pt_avg"] == pytest.approx(sum(want) / 11, abs=1e-12)


def test_iprec_rounds_half_away_from_zero_as_lround():
    # R = 5: level 0.1 -> 0.5 -> lround 1 (numpy's round would give 0)
    b = K.Bucket(lab=np.zeros((1, 1)), valid=np.ones((1, 1), bool), judged=np.ones((1, 1), bool),
                 pooled=np.zeros((1, 1), bool), rel=np.zeros((1, 1), bool), relcum=np.zeros((1, 1), np.int64),
                 n_ret=np.array([1]), R=np.array([5]), nonrel_judged=np.array([0]), ge=None, gain="linear",
                 D=np.zeros(3))
    assert K._recall_cuts(b, [0.1, 0.3, 0.5]).tolist() == [[1, 2, 3]]


def test_trec_names_and_sets_parse():
    assert [s.output_name() for s in M.parse_metrics("P.5,10")] == ["P_5", "P_10"]
    assert [str(s) for s in M.parse_metrics(["ndcg_cut.10", "ndcg_cut_5", "P_5", "recall_100", "map_cut_10",
                                             "recip_rank", "success_1", "iprec_at_recall_0.50", "Rprec_mult_0.20",
                                             "relative_P_5", "set_P", "set_recall", "Rprec"])] == [
        "ndcg@10", "ndcg@5", "precision@5", "recall@100", "map@10", "mrr", "success@1", "iprec_at_recall@0.50",
        "rprec_mult@0.20", "relative_p@5", "precision", "recall", "rprec"]
    official = [s.output_name() for s in M.parse_metrics("official")]
    assert official[:10] == ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec",
                             "bpref", "recip_rank"]
    assert official[10:21] == [f"iprec_at_recall_{x / 10:.2f}" for x in range(11)]
    assert official[21:] == [f"P_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)]
    assert len(M.parse_metrics("all_trec")) > len(official)
    # all_trec has trec_eval's recall at every default cutoff (a bare "recall" is rankcli's whole-list recall, so the
    # set once printed set_recall twice and no recall_k at all)
    all_trec = [s.output_name() for s in M.parse_metrics("all_trec")]
    assert [n for n in all_trec if n.startswith("recall_")] == [f"recall_{k}" for k in (5, 10, 15, 20, 30, 100, 200,
                                                                                         500, 1000)]
    assert all_trec.count("set_recall") == 1
    # rankcli's own spellings stay
    assert [str(s) for s in M.parse_metrics(["ndcg@10", "p@5", "mrr@10", "recall", "map"])] == [
        "ndcg@10", "precision@5", "mrr@10", "recall", "map"]


@pytest.mark.parametrize("text, fragment", [
    ("ndcg_cutt_10", "did you mean 'ndcg_cut'"),
    ("Rprc", "did you mean 'Rprec'"),
    ("bpreff", "did you mean 'bpref'"),
    ("utility", "does not compute"),
    ("P_0", "positive integer"),
])
def test_unknown_trec_names_suggest(text, fragment):
    with pytest.raises(MS.UnknownMetricError, match=fragment):
        M.parse_metrics([text])


def test_trec_order_is_trec_evals():
    specs = M.parse_metrics(["P_10", "ndcg_cut_5", "map", "map_cut_5", "P_5", "num_q", "err@5", "bpref"])
    assert [s.output_name() for s in MS.trec_order(specs)] == ["num_q", "map", "bpref", "P_5", "P_10", "ndcg_cut_5",
                                                               "map_cut_5", "err@5"]


def test_compare_scores_judgment_based_measures_as_eval(tmp_path, capsys):
    """compare reads TREC runs with eval's loader: bpref and num_nonrel_judged_ret see which documents are judged
    (an unjudged document ranked above a relevant one does not count against it)."""
    import json

    from rankcli.cli import main

    (tmp_path / "q.txt").write_text("1 0 a 1\n1 0 b 0\n1 0 c 0\n2 0 x 1\n2 0 y 0\n")
    (tmp_path / "r1.txt").write_text("1 Q0 u 1 9 t\n1 Q0 a 2 8 t\n1 Q0 b 3 7 t\n2 Q0 y 1 9 t\n2 Q0 x 2 8 t\n")
    (tmp_path / "r2.txt").write_text("1 Q0 b 1 9 t\n1 Q0 a 2 8 t\n1 Q0 u 3 7 t\n2 Q0 x 1 9 t\n2 Q0 v 2 8 t\n")
    status = main(["compare", str(tmp_path / "r1.txt"), str(tmp_path / "r2.txt"), "--qrels", str(tmp_path / "q.txt"),
                   "-m", "bpref,num_nonrel_judged_ret", "--json"])
    out = capsys.readouterr().out
    assert status == 0
    means = json.loads(out)["means"]
    for run in ("r1", "r2"):
        ev = E.evaluate_trec(tmp_path / f"{run}.txt", tmp_path / "q.txt", ["bpref", "num_nonrel_judged_ret"])
        assert means[run]["bpref"] == pytest.approx(ev.result.means["bpref"])
    # r1: q1 a (relevant) has only the unjudged u above it: 1; q2 x has y (judged non-relevant) above: 1 - 1/1 = 0
    assert means["r1"]["bpref"] == pytest.approx(0.5)
