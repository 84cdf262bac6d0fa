"""rankcli.core.fusion against the per-query references of tests/reference_fusion.py: every method under every
normalisation, on random runs with ties, documents missing from runs and queries missing from runs."""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest

from rankcli.core.fusion import METHODS, NORMALIZATIONS, RunRows, combine, method, prepare, ranking, resolve_params
from rankcli.core.fusion.align import align
from rankcli.core.fusion.condorcet import condorcet_order
from rankcli.core.fusion.grid import candidates, simplex, simplex_points
from rankcli.core.fusion.order import order_within
from rankcli.core.fusion.ranked import int_power
from rankcli.core.fusion.trained import hit_lists, train
from rankcli.errors import InputError, UsageError
from tests import reference_fusion as ref
from tests.fusion_data import all_rows, as_dict, close, random_qrels, random_runs

PARAMS = {"weights": [0.5, 0.2, 0.3], "gamma": 0.7, "phi": 0.8, "sigma": 0.05, "k": 60, "segments": 3, "window": 2}


def _model(name, ev, names, qrels, params):
    al = ev.aligned
    relevant = np.zeros(al.n_candidates, dtype=bool)
    for qi, q in enumerate(names):
        for c in range(al.offsets[qi], al.offsets[qi + 1]):
            relevant[c] = qrels[q].get(al.names[c].decode(), 0) >= 1
    n_rel = np.array([sum(v >= 1 for v in qrels[q].values()) for q in names])
    return train(name, hit_lists(ev, relevant, np.arange(len(names)), n_rel), params)


@pytest.mark.parametrize("how", NORMALIZATIONS)
def test_every_method_against_the_reference(how, rng):
    for _ in range(2):
        runs = random_runs(rng, missing_queries=True)
        rows, names = all_rows(runs)
        qrels = random_qrels(rng, runs)
        ev, _ = prepare(rows, len(names), how)
        for name, m in METHODS.items():
            p = {k: PARAMS[k] for k in m.param_names}
            model = _model(name, ev, names, qrels, p) if m.trained else None
            want_model = ref.train(name, runs, qrels, names, p, ascending=how == "min-max-inverted") \
                if m.trained else None
            mine = as_dict(ev, combine(ev, m, resolve_params(m, p, len(runs)), model), names)
            assert close(mine, ref.fuse(runs, name, how, p, want_model)) < 1e-12, (name, how)


@pytest.mark.parametrize("name", [n for n, m in METHODS.items() if m.trained])
def test_trained_methods_learn_what_the_definition_says(name, rng):
    runs = random_runs(rng, n_queries=20, pool=30, max_docs=25, missing_queries=True)
    rows, names = all_rows(runs)
    qrels = random_qrels(rng, runs, pool=30)
    ev, _ = prepare(rows, len(names))
    p = {k: PARAMS[k] for k in METHODS[name].param_names}
    mine = _model(name, ev, names, qrels, p)
    want = ref.train(name, runs, qrels, names, p)
    (key, got), = mine.items()
    for a, b in zip(got, want[key]):
        np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=0, atol=1e-15)


def test_depth_fuses_each_runs_top(rng):
    runs = random_runs(rng, missing_queries=True)
    rows, names = all_rows(runs)
    ev, _ = prepare(rows, len(names), "min-max", depth=3)
    cut = [{q: {d: docs[d] for d in ref.ranking(docs)[:3]} for q, docs in run.items()} for run in runs]
    for name in ("sum", "mnz", "rrf", "bordafuse"):
        mine = as_dict(ev, combine(ev, name, resolve_params(method(name), {}, 3)), names)
        assert close(mine, ref.fuse(cut, name, "min-max", {"k": 60})) < 1e-12, name


def test_ranking_orders_equal_scores_by_docid_descending(rng):
    runs = random_runs(rng, n_queries=30)
    rows, names = all_rows(runs)
    ev, _ = prepare(rows, len(names))
    fused = combine(ev, "sum", {})  # many ties: scores on a few levels
    perm, ranks = ranking(ev, fused)
    got = as_dict(ev, fused, names)
    al = ev.aligned
    for qi, q in enumerate(names):
        order = [al.names[c].decode() for c in perm[al.offsets[qi]:al.offsets[qi + 1]]]
        assert order == ref.ranking(got[q])
    assert ranks.min() == 1


def test_order_within_on_unsorted_and_sorted_segments(rng):
    for _ in range(20):
        n = int(rng.integers(1, 60))
        scores = rng.integers(0, 5, n).astype(float)
        names = np.array([f"x{i}" for i in rng.permutation(n)], dtype="S8")
        cuts = np.sort(rng.choice(np.arange(1, n), min(3, n - 1), replace=False)) if n > 1 else np.zeros(0, int)
        offsets = np.concatenate(([0], cuts, [n])).astype(np.int64)
        perm = order_within(scores, offsets, names)
        for a, b in zip(offsets[:-1], offsets[1:]):
            docs = {names[i].decode(): scores[i] for i in range(a, b)}
            assert [names[i].decode() for i in perm[a:b]] == ref.ranking(docs)


def test_alignment_survives_hash_collisions(rng):
    runs = random_runs(rng, missing_queries=True)
    rows, names = all_rows(runs)
    colliding = [RunRows(r.queries, r.offsets, np.zeros_like(r.keys), r.names, r.scores, r.label) for r in rows]
    want = as_dict(*_fused(rows, names), names)
    got = as_dict(*_fused(colliding, names), names)
    assert close(want, got) == 0


def _fused(rows, names):
    ev, _ = prepare(rows, len(names))
    return ev, combine(ev, "mnz", {})


def test_a_document_twice_in_a_run_is_refused():
    names = np.array([b"a", b"b", b"a"], dtype="S8")
    run = RunRows(np.array([0]), np.array([0, 3]), np.array([1, 2, 1], dtype=np.uint64), names, np.ones(3), "r.txt")
    with pytest.raises(InputError, match=r"r.txt: document .a. appears twice for query q1"):
        align([run, run], 1, query_names=["q1"])


def test_fusion_does_not_depend_on_the_hash_seed(rng):
    from rankcli.formats.trec.parse import doc_hash, words_of

    runs = random_runs(rng)
    rows, names = all_rows(runs)
    out = []
    for seed in (1, 12345):
        seeded = [RunRows(r.queries, r.offsets, doc_hash(words_of(r.names), seed), r.names, r.scores) for r in rows]
        ev, _ = prepare(seeded, len(names))
        fused = combine(ev, "condorcet", {})
        perm, _ = ranking(ev, fused)
        out.append((ev.aligned.names[perm].tolist(), np.sort(fused).tolist()))
    assert out[0] == out[1]


def test_condorcet_is_a_path_of_majority_wins(rng):
    """Each document in the Condorcet order wins (or ties) its vote against the next one, cycles or not."""
    for _ in range(5):
        runs = random_runs(rng, n_runs=4, n_queries=8, pool=20)
        rows, names = all_rows(runs)
        ev, _ = prepare(rows, len(names))
        perm = condorcet_order(ev, np.ones(4))
        al = ev.aligned
        for qi, q in enumerate(names):
            seq = [al.names[c].decode() for c in perm[al.offsets[qi]:al.offsets[qi + 1]]]
            ranks = [{d: i + 1 for i, d in enumerate(ref.ranking(run.get(q, {})))} for run in runs]
            assert all(ref._beats(x, y, ranks, [1] * 4) for x, y in zip(seq, seq[1:]))


def test_condorcet_of_a_strict_majority_order_is_that_order(rng):
    base = rng.permutation(12)
    runs = [{"q": {f"d{d}": float(-i) for i, d in enumerate(base)}} for _ in range(2)]
    runs.append({"q": {f"d{d}": float(i) for i, d in enumerate(base)}})  # outvoted
    rows, names = all_rows(runs)
    ev, _ = prepare(rows, 1)
    perm, _ = ranking(ev, combine(ev, "condorcet", {}))
    assert [ev.aligned.names[c].decode() for c in perm] == [f"d{d}" for d in base]


def test_int_power_is_repeated_squaring():
    exps = np.arange(0, 1000)
    for base in (0.0, 0.37, 0.8, 0.99, 1.0):
        want = []
        for e in exps.tolist():
            r, a = 1.0, base
            while e:
                if e & 1:
                    r *= a
                e >>= 1
                a *= a
            want.append(r)
        assert int_power(base, exps).tolist() == want
        assert np.allclose(int_power(base, exps), np.power(base, exps), rtol=1e-12, atol=0)  # rounding only


def test_the_grid_keeps_every_vector_of_the_simplex():
    points = simplex_points(5, 10)
    assert points.shape == (1001, 5) == (math.comb(14, 4), 5)
    assert (points.sum(axis=1) == 10).all() and np.unique(points, axis=0).shape[0] == 1001
    assert points.tolist() == [list(p) for p in itertools.product(range(11), repeat=5) if sum(p) == 10]
    # ranx's grid (ranx/fusion_optimization/optimize_weights.py) tests the sum of the floats with == 1.0
    floats = [round(x, 1) for x in np.arange(0, 1 + 0.1, 0.1)]
    kept = [seq for seq in itertools.product(*[floats] * 5) if sum(seq) == 1.0]
    assert len(kept) == 860
    ours = [tuple(w) for w in simplex(5, 0.1).tolist()]
    assert set(kept) < set(ours) and [w for w in ours if w in set(kept)] == kept  # ranx's order, none lost


def test_grid_steps_and_sizes():
    assert simplex(3, 0.25).shape == (15, 3)
    assert simplex(1, 0.1).tolist() == [[1.0]]
    with pytest.raises(UsageError, match="divide 1"):
        simplex(3, 0.3)
    with pytest.raises(UsageError, match="more than"):
        simplex(12, 0.01)
    sets = candidates(METHODS["rrf"], 3, 0.1, {})
    assert [s["k"] for s in sets] == list(range(10, 101, 10))
    assert len(candidates(METHODS["rbc"], 3, 0.1, {})) == 100
    with pytest.raises(UsageError, match="no parameter to optimise"):
        candidates(METHODS["wsum"], 3, 0.1, {"weights": (0.2, 0.3, 0.5)})


@pytest.mark.parametrize("name, params, message", [
    ("rbc", {}, "rbc needs --phi"), ("wsum", {"weights": [1, 2]}, "2 weights for 3 runs"),
    ("rrf", {"k": -1}, "k must be at least 0"), ("rbc", {"phi": 1.5}, r"phi must be in \[0, 1\]"),
    ("probfuse", {"segments": 2.5}, "segments must be an integer"), ("rrf", {"phi": 0.5}, "rrf takes no phi"),
    ("wsum", {"weights": [1, float("nan"), 1]}, "must be finite")])
def test_bad_parameters_are_usage_errors(name, params, message):
    with pytest.raises(UsageError, match=message):
        resolve_params(METHODS[name], params, 3)


def test_unknown_names_list_the_choices():
    with pytest.raises(UsageError, match="choose one of min, max"):
        method("combfoo")
    assert method("CombMNZ").name == "mnz" and method("reciprocal-rank-fusion").name == "rrf"
    assert method("w-condorcet").name == "w_condorcet"
    from rankcli.core.fusion import canonical

    assert canonical("zscore") == "zmuv" and canonical("minmax") == "min-max"
    with pytest.raises(UsageError, match="unknown normalization"):
        canonical("l2")


def test_scores_too_far_apart_are_refused():
    runs = [{"q": {"a": -1e308, "b": 1e308}}, {"q": {"a": 1.0}}]
    rows, names = all_rows(runs)
    with pytest.raises(InputError, match="non-finite score"):
        prepare(rows, 1, "min-max")
    rows, names = all_rows([{"q": {"a": 1e308}}, {"q": {"a": 1e308}}])
    ev, _ = prepare(rows, 1, "none")
    with pytest.raises(InputError, match="non-finite fused score"):
        combine(ev, "sum", {})


def test_every_method_has_a_definition_and_a_reference():
    for name, m in METHODS.items():
        doc = m.fn.__doc__ or ""
        assert "f(d)" in doc or "sorted by" in doc, name
        assert re.search(r"Reference: .+\(\d{4}\)", doc), name


def test_rrf_with_k_0_warns_of_nothing(rng):
    """k = 0 gives a listed document 1 / rank; the cells of documents a run does not list (rank 0) are never read,
    and dividing by them must not reach the user as a RuntimeWarning."""
    import warnings

    runs = random_runs(rng, missing_queries=True)
    rows, names = all_rows(runs)
    ev, _ = prepare(rows, len(names))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fused = combine(ev, METHODS["rrf"], resolve_params(METHODS["rrf"], {"k": 0}, len(runs)))
    assert close(as_dict(ev, fused, names), ref.fuse(runs, "rrf", params={"k": 0})) < 1e-12
