"""The measures that ``rankcli eval`` and ``rankcli trec_eval`` both compute, each computed twice: ``eval`` (and
``compare --qrels``) reads a TREC run with its qrels through :mod:`rankcli.evaluate.runs` (read, join, rank) and
measures it with :mod:`rankcli.core.metrics` (ndcg, map, P, recall, recip_rank and their cutoffs) and
:mod:`rankcli.core.metrics.trec_eval_measures` (the other trec_eval measures); ``trec_eval`` reads the same files
through :mod:`rankcli.trec_eval.pipeline` (trec_eval's own reading, :mod:`rankcli.core.trec_eval.join`) and measures
them with the kernels of :mod:`rankcli.core.trec_eval` on padded blocks (:class:`rankcli.core.trec_eval.chunk.Chunk`).

Each twin is checked against its own oracle elsewhere (pytrec_eval in test_trec_eval_parity.py, trec_eval itself in
tests/trec_eval/test_differential.py); here the two are checked against each other, per query, on the same text: graded,
negative (pooled but unjudged) and missing (not in the pool) judgments, ties, judged documents the run misses, queries
the run lacks (``-c``), queries without a relevant document, one-document rankings, rankings that ``-J`` empties, ``-l``
thresholds and ``-M`` cutoffs, through the C join and the numpy one. ``eval`` runs under the ``trec`` convention with
``-l`` as its threshold: there it claims trec_eval's numbers.

Where the twins agree only to rounding (their sums run in different orders), the tolerance is 1e-12; the others are
equal to the bit. A case where they disagree is marked ``xfail(strict=True)`` with what differs: when one
implementation serves both commands, it passes, and the marker must go.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

from rankcli.core.metrics import Convention, parse_metrics
from rankcli.errors import UsageError
from rankcli.evaluate import evaluate_trec, render
from rankcli.formats.trec import join_native as trec_fast
from rankcli.trec_eval import pipeline
from rankcli.trec_eval.getopt import Options
from rankcli.trec_eval.measures import select
from rankcli.trec_eval.render import Renderer

#: num_q and the measures of test_trec_eval_parity.py:MEASURES, in trec_eval's ``-m`` syntax; the cutoff measures
#: with short cutoffs too (the random rankings are 1 to 30 documents long) besides trec_eval's defaults.
MEASURES = ["num_q", "num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret", "map", "gm_map", "Rprec", "bpref",
            "recip_rank", "iprec_at_recall", "P.1,2,3,5,10,30,100", "recall.1,3,5,10,30,1000", "infAP", "gm_bpref",
            "Rprec_mult.0.2,0.5,1.0,2.0,3.0", "11pt_avg", "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut.1,3,5,10,1000",
            "map_cut.1,2,5,10,1000", "relative_P.1,3,5,10,1000", "success.1,2,5,10", "set_P", "set_recall", "set_F"]
#: The values whose twins round differently (an entry ending in ``_``: every cutoff), compared to 1e-12; every other
#: value is equal to the bit. These sum in different orders: core/metrics (and its trec_eval_measures) with numpy's
#: reductions and grade counts, core/trec_eval along each ranking as trec_eval's loops add.
INEXACT = ("map", "map_cut_", "infAP", "11pt_avg", "ndcg", "ndcg_cut_", "ndcg_rel", "Rndcg")
#: trec_eval keeps log(max(value, 1e-5)) per query for the geometric means; eval keeps the value.
GEOMETRIC = ("gm_map", "gm_bpref")
#: The measures where trec_eval divides 0 by 0 for a query with nothing retrieved (``-J`` emptied it): NaN there,
#: where eval scores an empty ranking 0 (docs/trec_eval.md, "Differences from trec_eval").
ZERO_BY_ZERO = ("iprec_at_recall_", "11pt_avg")
#: The measure where trec_eval divides 0 by 0 for a query whose relevant documents all have gain 0 (under ``-l 0``,
#: labels 0 only): NaN there, where eval scores 0 as for any query without gain (docs/trec_eval.md, "Differences from
#: trec_eval").
NO_GAIN = ("Rndcg",)
DOCS = [f"d{i}" for i in range(40)]  # d1, d10, d2, ...: byte order is not numeric order
LABELS = [-2, -1, 0, 0, 0, 1, 1, 2, 3, 4]
SCORES = ["0.5", "1", "1.5", "2", "3", "-1"]  # six values: ties in every long ranking


@functools.cache
def _case(seed: int, n_queries: int = 48) -> tuple[str, str]:
    """Random qrels and run text; query ``q`` has the shape ``q % 8`` picks (besides random labels and ties): 0 no
    judgments (eval and trec_eval both leave it out), 1 judged but not ranked (``-c``), 2 no relevant document
    (labels 0 and negative), 3 one document ranked, 4 judged documents none of them ranked."""
    rng = np.random.default_rng(seed)
    qrels, run = [], []
    for q in range(n_queries):
        qid, shape = f"q{q}", q % 8
        ranked = [DOCS[i] for i in rng.choice(len(DOCS), size=1 if shape == 3 else int(rng.integers(2, 31)),
                                             replace=False)]
        if shape != 0:
            pool = [] if shape == 4 else [d for d in ranked if rng.random() < 0.6]
            pool += [f"u{i}" for i in range(int(rng.integers(1 if shape in (1, 4) else 0, 5)))]
            labels = [-1, 0, 0, -2] if shape == 2 else LABELS
            qrels += [f"{qid} 0 {d} {int(rng.choice(labels))}" for d in pool]
        if shape != 1:
            run += [f"{qid} Q0 {d} {i + 1} {SCORES[int(rng.integers(len(SCORES)))]} tag" for i, d in enumerate(ranked)]
    qrels.append("q5 0 z0 3")  # a relevant document ranked first: every run shares a judged pair with its qrels
    run.append("q5 Q0 z0 1 9 tag")
    return "\n".join(qrels) + "\n", "\n".join(run) + "\n"


def _options(qrels: Path, run: Path, flags: dict, query: bool = False, measures=MEASURES) -> Options:
    o = Options(level=flags.get("level", 1), complete=flags.get("complete", False),
                judged_only=flags.get("judged_only", False), query=query, files=[str(qrels), str(run)],
                measures=list(measures))
    if "max_docs" in flags:
        o.max_docs = flags["max_docs"]
    return o


def _eval(qrels: Path, run: Path, names: list[str], flags: dict):
    """``rankcli eval --qrels QRELS --run RUN -m NAMES`` under the trec convention, ``-l`` its threshold."""
    convention = Convention.preset("trec").with_(relevance_threshold=float(flags.get("level", 1)))
    return evaluate_trec(run, qrels, parse_metrics(names), convention, max_docs=flags.get("max_docs"),
                         judged_only=flags.get("judged_only", False), complete=flags.get("complete", False))


def _both(tmp_path: Path, flags: dict, seed: int) -> tuple[list[str], dict, dict]:
    """Per value name (trec_eval's, e.g. ``P_5``), its per-query values from each twin on the case ``seed``, aligned
    by query id."""
    return _both_on(tmp_path, flags, *_case(seed))


def _both_on(tmp_path: Path, flags: dict, qrels_text: str, run_text: str, measures=MEASURES):
    """:func:`_both` on given qrels and run text and ``-m`` measures."""
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text(qrels_text)
    run.write_text(run_text)
    o = _options(qrels, run, flags, measures=measures)
    active = select(o.measures, o.rel_format)
    names = [n.decode() if isinstance(n, bytes) else n for n in Renderer(active, o).column_names]
    theirs: dict[str, np.ndarray] = {}
    prepared = pipeline.prepare(o, (qrels_text.encode(), run_text.encode()))
    for qids, values, _ in pipeline.measure(prepared, active, o):
        for qid, row in zip(qids.tolist(), values):
            theirs[qid.decode()] = row
    report = _eval(qrels, run, names, flags)
    ours = {str(q): i for i, q in enumerate(report.qids.tolist())}
    assert sorted(ours) == sorted(theirs), "the twins evaluate different queries"
    qids = sorted(theirs)
    te = {n: np.array([theirs[q][c] for q in qids]) for c, n in enumerate(names)}
    specs = {s.trec_name: s for s in report.specs}
    ev = {n: report.result.per_query[str(specs[n])][[ours[q] for q in qids]] for n in names}
    for n in set(GEOMETRIC) & set(ev):
        ev[n] = np.log(np.where(ev[n] > 1e-5, ev[n], 1e-5))
    return names, te, ev


def _inexact(name: str) -> str | None:
    """The entry of :data:`INEXACT` that covers the value ``name`` (one ending in ``_`` covers its cutoffs)."""
    return next((p for p in INEXACT if name == p or (p.endswith("_") and name.startswith(p))), None)


def _disagreements(names: list[str], te: dict, ev: dict) -> dict[str, int]:
    """Value name -> queries where the twins differ (beyond rounding for the :data:`INEXACT` ones); a NaN of
    trec_eval's is allowed where the rule of :data:`ZERO_BY_ZERO` says eval gives 0."""
    empty = ev["num_ret"] == 0
    out = {}
    for n in names:
        a, b = te[n], ev[n]
        same = (a == b) if _inexact(n) is None else np.isclose(a, b, rtol=0, atol=1e-12)
        if n.startswith(ZERO_BY_ZERO):
            same |= np.isnan(a) & empty & (b == 0)
        if n in NO_GAIN:
            same |= np.isnan(a) & (b == 0)
        if not same.all():
            out[n] = int((~same).sum())
    return out


#: trec_eval's flags under which the twins agree (-l 1 unless given).
AGREE = {"default": {}, "-l2": {"level": 2}, "-l3": {"level": 3}, "-M1": {"max_docs": 1}, "-M3": {"max_docs": 3},
         "-c": {"complete": True}, "-J": {"judged_only": True}, "-c -J": {"complete": True, "judged_only": True},
         "-c -M2 -l2": {"complete": True, "max_docs": 2, "level": 2}, "-J -M4": {"judged_only": True, "max_docs": 4}}


#: The flag sets also run through the numpy joins (the others through the C module's, each command's default).
NUMPY_JOIN = ("default", "-M3", "-c -J")


@pytest.mark.parametrize("join, flags", [("C", f) for f in AGREE] + [("numpy", f) for f in NUMPY_JOIN],
                         ids=[f"C {f}" for f in AGREE] + [f"numpy {f}" for f in NUMPY_JOIN])
def test_the_twins_agree_per_query(tmp_path, monkeypatch, join, flags):
    if join == "C" and not trec_fast.available():
        pytest.skip("the C module is not built")
    monkeypatch.setenv("RANKCLI_PURE_PYTHON", "1" if join == "numpy" else "0")
    flags = AGREE[flags]
    names, te, ev = _both(tmp_path, flags, seed=len(str(flags)))
    assert len(names) == 67
    assert _disagreements(names, te, ev) == {}
    if flags.get("judged_only"):  # the empty rankings were there to be checked
        assert (ev["num_ret"] == 0).any()


def test_the_inexact_twins_still_round_differently(tmp_path):
    """Each value of :data:`INEXACT` still differs in its last bits somewhere: when one implementation serves both
    commands, the tolerance goes with it (remove its entry)."""
    names, te, ev = _both(tmp_path, {}, seed=2)
    rounding = {_inexact(n) for n in names if not np.array_equal(te[n], ev[n])}
    assert rounding == set(INEXACT)


def test_the_random_cases_hold_what_the_twins_must_agree_on(tmp_path):
    """The cases exercise what the comparison is for: each kind of judgment ranked, ties among them, queries
    without a relevant document, judged documents the run misses, one-document rankings."""
    qrels_text, run_text = _case(0)
    labels = {tuple(line.split()[::2]): int(line.split()[3]) for line in qrels_text.splitlines()}
    ranked = [line.split() for line in run_text.splitlines()]
    kinds = {labels.get((q, d), "absent") for q, _, d, _, _, _ in ranked}
    assert {"absent", -2, -1, 0, 1, 4} <= kinds
    by_query: dict[str, list] = {}
    for q, _, _, _, score, _ in ranked:
        by_query.setdefault(q, []).append(score)
    assert any(len(s) != len(set(s)) for s in by_query.values()) and any(len(s) == 1 for s in by_query.values())
    assert len({q for q, _ in labels} - set(by_query)) >= 6  # judged queries the run lacks
    names, te, ev = _both(tmp_path, {}, seed=0)
    assert (te["num_rel"] == 0).any() and (te["num_rel"] > te["num_rel_ret"]).any()


def test_the_twins_agree_at_a_threshold_of_zero(tmp_path):
    """Under ``-l 0`` a judged label 0 is relevant and a document absent from the qrels is not (eval measures it
    with trec_eval's judgment -1); the one difference left, :data:`NO_GAIN`, is exercised."""
    names, te, ev = _both(tmp_path, {"level": 0}, seed=5)
    assert _disagreements(names, te, ev) == {}
    assert (np.isnan(te["Rndcg"]) & (ev["Rndcg"] == 0)).any()


def test_eval_refuses_a_threshold_below_zero(tmp_path):
    """Below 0 trec_eval counts the documents absent from the qrels as relevant in its ranking measures but not in R
    (AP above 1): eval refuses the threshold (exit 2), ``rankcli trec_eval`` reproduces the reading."""
    with pytest.raises(UsageError, match="below 0"):
        _both(tmp_path, {"level": -1}, seed=5)


def test_the_twins_agree_on_labels_above_31(tmp_path):
    """ndcg_rel and Rndcg take grades of any size, as trec_eval does (the per-grade counts of the ideal DCG stop at
    31; these count the grades present)."""
    names, te, ev = _both_on(tmp_path, {}, "q1 0 a 40\nq1 0 b 1\nq1 0 c 0\nq2 0 a 2\n",
                             "q1 Q0 a 1 1 t\nq1 Q0 b 2 2 t\nq1 Q0 d 3 2 t\nq2 Q0 a 1 1 t\n",
                             measures=["num_ret", "ndcg", "ndcg_rel", "Rndcg"])
    assert _disagreements(names, te, ev) == {}


def _layouts(tmp_path: Path, flags: dict, seed: int) -> tuple[list[str], list[str]]:
    """trec_eval's output with -q from each command: ``rankcli trec_eval`` and ``rankcli eval --format trec_eval``."""
    qrels_text, run_text = _case(seed)
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text(qrels_text)
    run.write_text(run_text)
    o = _options(qrels, run, flags, query=True)
    o.measures.append("runid")
    theirs = b"".join(pipeline.evaluate(o)).decode()
    names = [n.decode() if isinstance(n, bytes) else n for n in Renderer(select(o.measures, "qrels"), o).column_names]
    report = _eval(qrels, run, [*names, "runid"], flags)
    ours = "".join(render.trec_eval_layout(report, queries=True))
    return theirs.splitlines(), ours.splitlines()


@pytest.mark.parametrize("flags", [{}, {"level": 2}, {"max_docs": 3}, {"complete": True}],
                         ids=["default", "-l2", "-M3", "-c"])
def test_eval_prints_trec_eval_s_lines(tmp_path, flags):
    """Every line, per query and ``all``, of ``eval --format trec_eval -q`` is ``trec_eval -q``'s: the twins' rounding
    differences stay below %6.4f, and the summaries (running sums against numpy's means) agree too."""
    theirs, ours = _layouts(tmp_path, flags, seed=7)
    assert len(theirs) > 2000
    assert [a for a, b in zip(theirs, ours) if a != b] == [] and len(theirs) == len(ours)


def test_eval_prints_trec_eval_s_num_rel_with_c_and_a_threshold(tmp_path):
    """With -c, trec_eval's num_rel ``all`` line counts every qrels label > 0 whatever -l says (trec_eval/render.py,
    positive_labels), where eval's own summary sums each query's labels >= -l: ``eval --format trec_eval`` prints
    trec_eval's figure (rankcli.evaluate.render.trec_eval_means); the table and --json keep eval's sum."""
    theirs, ours = _layouts(tmp_path, {"complete": True, "level": 2}, seed=7)
    assert [a for a, b in zip(theirs, ours) if a != b] == []
