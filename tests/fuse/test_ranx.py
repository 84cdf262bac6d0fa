"""rankcli fuse against ranx itself (ranx.fuse, its trained methods' training, ranx.optimize_fusion), the anchor the
fusion matches: the same fused scores to 1e-12 and a ranking consistent with ranx's scores, for every method and
normalisation both implement, on random runs over the same queries (ranx needs every run to hold the same queries;
queries missing from runs are checked against the references in tests/core/test_fusion.py).

Where ranx ranks by its stored order (documents with equal scores in an order of its own), the runs have no ties:
rank-based methods, trained methods and the rank and borda normalisations. Condorcet is compared where the majority
relation is a strict order (ranx's sort otherwise depends on a Python set's order).

Importing ranx and loading its numba functions costs ~20 s: the checks run as one test, so that under pytest-xdist
one worker pays it, once.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from rankcli.core.fusion import METHODS, NORMALIZATIONS, combine, prepare, ranking, resolve_params
from rankcli.core.fusion.trained import hit_lists, train
from tests.fusion_data import all_rows, as_dict, close, random_qrels, random_runs, write_qrels

ranx = pytest.importorskip("ranx")

WEIGHTS = [0.5, 0.3, 0.25]
PARAMS = {"weights": WEIGHTS, "gamma": 0.7, "phi": 0.8, "sigma": 0.05, "k": 60, "segments": 3, "window": 2}
RANX_NAMES = {"segments": "n_segments", "window": "w"}


def _warm():
    """ranx's numba functions compiled (or loaded from numba's cache) once: the first call of each does it."""
    small = [ranx.Run({"q1": {"a": 1.0, "b": 0.5}}), ranx.Run({"q1": {"b": 2.0, "c": 1.0}})]
    qrels = ranx.Qrels({"q1": {"a": 1}})
    for name, m in METHODS.items():
        if not m.trained:
            ranx.fuse(small, norm="min-max", method=name, params=_ranx_params(name, 2))
    for norm in ("min-max-inverted", "max", "sum", "zmuv", "rank", "borda"):
        ranx.fuse(small, norm=norm, method="sum")
    ranx.fuse(small, norm=None, method="sum")
    for name in ("posfuse", "probfuse", "segfuse", "slidefuse", "mapfuse", "bayesfuse"):
        ranx.fuse(small, method=name, params=_ranx_trained(name, qrels, small, {"segments": 2, "window": 1}))


def _ranx_params(name, n_runs):
    m = METHODS[name]
    out = {RANX_NAMES.get(p, p): PARAMS[p] for p in m.param_names}
    if "weights" in out:
        out["weights"] = WEIGHTS[:n_runs]
    return out


def _ranx_trained(name, qrels, runs, params):
    f = ranx.fusion
    if name == "probfuse":
        return {"probs": f.probfuse_train(qrels, runs, params["segments"])}
    if name == "slidefuse":
        return {"probs": f.slidefuse_train(qrels, runs), "w": params["window"]}
    if name == "mapfuse":
        return {"map_scores": f.mapfuse_train(qrels, runs)}
    if name == "bayesfuse":
        return {"log_odds": f.bayesfuse_train(qrels, runs)}
    return {"probs": getattr(f, f"{name}_train")(qrels, runs)}


def _ranking_consistent(ev, fused, names, theirs) -> bool:
    """Along rankcli's order of each query, ranx's fused scores never rise (beyond rounding)."""
    perm, _ = ranking(ev, fused)
    al = ev.aligned
    for qi, q in enumerate(names):
        seq = [theirs[q][al.names[c].decode()] for c in perm[al.offsets[qi]:al.offsets[qi + 1]]]
        if any(b > a + 1e-12 for a, b in zip(seq, seq[1:])):
            return False
    return True


def _check(runs, name, how, built=None):
    """``built``: ranx's Run objects of ``runs`` (built once for several methods)."""
    rows, names = all_rows(runs)
    ev, _ = prepare(rows, len(names), how)
    m = METHODS[name]
    fused = combine(ev, m, resolve_params(m, {k: PARAMS[k] for k in m.param_names}, len(runs)))
    theirs = ranx.fuse(built or [ranx.Run(r) for r in runs], norm=None if how == "none" else how, method=name,
                       params=_ranx_params(name, len(runs))).to_dict()
    assert close(as_dict(ev, fused, names), theirs) < 1e-12, (name, how)
    assert _ranking_consistent(ev, fused, names, theirs), (name, how)


def _score_based(how, rng, methods):
    ties = how not in ("rank", "borda")  # those read ranx's stored order
    runs = random_runs(rng, ties=ties)
    if how == "max":  # positive scores: under max normalisation a negative one is divided by 1e-9, and ranx's
        # CombMIN/CombMAX give a run without the document -1e9 / 1e9, which such scores pass
        runs = [{q: {d: s + 10 for d, s in docs.items()} for q, docs in run.items()} for run in runs]
    built = [ranx.Run(r) for r in runs]
    for name in methods:
        _check(runs, name, how, built)


def _rank_based(how, rng):
    runs = random_runs(rng, ties=False)
    built = [ranx.Run(r) for r in runs]
    for name in ("isr", "log_isr", "logn_isr", "rrf", "rbc", "bordafuse", "w_bordafuse"):
        _check(runs, name, how, built)


def _strict_majority_runs(rng, weights, n_queries=10):
    """Three full rankings per query whose (weighted) pairwise majority is a strict order (no cycle, no tie)."""
    runs = [{}, {}, {}]
    w = np.asarray(weights, dtype=float)
    for q in range(n_queries):
        while True:
            n = int(rng.integers(2, 12))
            base = rng.random(n)
            scores = [base + rng.normal(0, 0.2, n) for _ in range(3)]
            rank = np.array([np.argsort(np.argsort(-s)) for s in scores])
            votes = np.einsum("r,rij->ij", w, (rank[:, :, None] < rank[:, None, :]).astype(float))
            wins = (votes > votes.T).sum(axis=1)
            if sorted(wins.tolist()) == list(range(n)):  # a transitive tournament
                break
        for r in range(3):
            runs[r][f"q{q:02d}"] = {f"d{i}": float(scores[r][i]) for i in range(n)}
    return runs


def _trained(name, rng):
    runs = random_runs(rng, n_queries=15, pool=40, ties=False)
    qrels = random_qrels(rng, runs, pool=40)
    rows, names = all_rows(runs)
    ev, _ = prepare(rows, len(names), "min-max")
    al = ev.aligned
    relevant = np.array([qrels[names[q]].get(al.names[c].decode(), 0) >= 1
                         for q in range(len(names)) for c in range(al.offsets[q], al.offsets[q + 1])])
    n_rel = np.array([sum(v >= 1 for v in qrels[q].values()) for q in names])
    m = METHODS[name]
    params = resolve_params(m, {k: PARAMS[k] for k in m.param_names}, 3)
    fused = combine(ev, m, params, train(name, hit_lists(ev, relevant, np.arange(len(names)), n_rel), params))
    normed = [ranx.normalization.norm_switch("min-max")(ranx.Run(r)) for r in runs]
    theirs = ranx.fuse([ranx.Run(r) for r in runs], norm="min-max", method=name,
                       params=_ranx_trained(name, ranx.Qrels(qrels), normed, params)).to_dict()
    assert close(as_dict(ev, fused, names), theirs) < 1e-12
    assert _ranking_consistent(ev, fused, names, theirs)


def _optimize(tmp_path, rng):
    """wsum's weight search: every vector ranx tries scores the same here (ndcg@10, trec_eval's gain); rankcli tries
    all 66 vectors of the 3-run simplex of step 0.1, ranx fewer (those whose float sum is not exactly 1.0 are
    dropped), so the best here is at least ranx's."""
    from rankcli.core.metrics import Convention, parse_metric
    from rankcli.fuse.judgments import read_judgments
    from rankcli.fuse.optimize import optimize
    from rankcli.fuse.scoring import Scorer

    # every run lists every document of a query: no fused ties (a zero weight would tie the documents only the
    # other runs list, and ranx orders ties in an order of its own)
    runs = [{f"q{q}": {f"d{d}": float(x) for d, x in enumerate(rng.normal(size=12))} for q in range(8)}
            for _ in range(3)]
    qrels = random_qrels(rng, runs, pool=12)
    rows, names = all_rows(runs)
    ev, _ = prepare(rows, len(names), "min-max")
    judg = read_judgments(write_qrels(tmp_path / "qrels", qrels), ev.aligned, np.array(names, dtype=object))
    scorer = Scorer.build(parse_metric("ndcg@10"), Convention.preset("trec"), ev.aligned, judg,
                          np.arange(len(names)))
    mine = optimize(ev, METHODS["wsum"], scorer, None, step=0.1, fixed={})
    best, report = ranx.optimize_fusion(ranx.Qrels(qrels), [ranx.Run(r) for r in runs], norm="min-max",
                                        method="wsum", metric="ndcg@10", return_optimization_report=True,
                                        show_progress=False)
    tried = {_weights(c): v for c, v in zip(report.configs, report.results)}
    assert len(mine.sets) == 66 and len(tried) == 62  # 0.1 + 0.2 + 0.7 != 1.0 in floating point, and 3 more
    table = {tuple(s["weights"]): v for s, v in zip(mine.sets, mine.means)}
    for config, value in tried.items():
        assert abs(table[config] - value) < 1e-12, config
    assert mine.means[mine.best] >= max(tried.values()) - 1e-12
    if table[tuple(best["weights"])] == mine.means[mine.best]:
        assert tuple(mine.params["weights"]) == tuple(best["weights"])  # the same point: ranx's tie rule too


def test_fusion_matches_ranx(tmp_path, rng):
    _warm()
    # every score-based method under ranx's default normalisation, every normalisation under CombSUM and CombMNZ
    # (borda's filling in shows in the counts); the cross product is checked against the references
    _score_based("min-max", rng, [name for name, m in METHODS.items() if m.reads == "scores"])
    for how in NORMALIZATIONS:
        _score_based(how, rng, ["sum", "mnz"])
    # rank-based methods read each run's ranking: as the normalisations keep it, or reverse it (ranx's borda
    # normalisation stores the candidates in a Python set's order)
    for how in ("min-max", "min-max-inverted"):
        _rank_based(how, rng)
    for name, weights in (("condorcet", [1, 1, 1]), ("w_condorcet", WEIGHTS)):
        _check(_strict_majority_runs(rng, weights), name, "min-max")
    for name in ("posfuse", "probfuse", "segfuse", "slidefuse", "mapfuse", "bayesfuse"):
        _trained(name, rng)
    _optimize(tmp_path, rng)


def _weights(config: str) -> tuple:
    """A configuration of ranx's optimisation report, ``(np.float64(0.1), ...)`` or ``(0.1, ...)``, as floats."""
    inner = re.findall(r"float64\(([^)]*)\)", config) or config.strip("()[]").split(",")
    return tuple(float(x) for x in inner)
