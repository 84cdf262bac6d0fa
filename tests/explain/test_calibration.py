"""The calibration of explain's per-feature tests under a true null, by simulation: every test explain offers rejects
a feature of pure noise at most alpha of the time at 1,500 queries (and at 50), with the default permutations per
feature (:data:`rankcli.explain.DEFAULT_REPEATS`) and with 5 (``wilcoxon`` with its one); and the signed-rank test
with repeats, which explain refuses, does not.

The null, and why the generator is exact for it. A feature of pure noise (independent of the labels and of the other
features, as on data the model was not trained on) that the model splits on: given a query (its labels, its other
features and the multiset of the noise feature's values), the model's metric on the data and on each of the R
permuted copies are R + 1 independent draws of one distribution, the metric under a uniformly random assignment of
those values to the documents. (The data's own assignment is uniform because the values are i.i.d.; each permutation
reassigns them uniformly and independently of it.) So the generator computes, with rankcli's own metric code, many
such draws for a pool of queries of realistic shapes (2 to 30 documents, graded labels, a model whose use of the noise
feature is a tree-like step of various sizes and thresholds), and a simulated data set of Q queries is Q pool queries
with R + 1 independent draws each: a thousand data sets are one numpy array, tested at once with
``stats.paired_tests`` (row i = data set i), which is what explain's ``drop_tests`` runs (checked on a few). The
LightGBM version of this check, a real model on fresh data, is bench/explain_calibration.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from rankcli.core import stats
from rankcli.core.groups import order_within
from rankcli.core.metrics import Convention, parse_metric, per_query
from rankcli.explain import DEFAULT_REPEATS
from rankcli.explain.ranking import drop_tests

SIMS, QUERIES, REPEATS = 1000, 1500, 5
RESAMPLES = 100  # of the permutation test and the bootstrap: p = 1/101 is still below alpha = 0.01


def _pool(rng: np.random.Generator, n_types: int = 500, draws: int = 64) -> np.ndarray:
    """``(n_types, draws)``: ndcg@10 of each pool query under ``draws`` uniform assignments of its noise values."""
    sizes = rng.integers(2, 31, n_types)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    n = int(offsets[-1])
    q = np.repeat(np.arange(n_types), sizes)
    labels = np.minimum(rng.geometric(0.55, n) - 1, 4).astype(np.float64)
    labels[offsets[:-1]] = np.maximum(labels[offsets[:-1]], 1.0)   # a relevant document in every query: no skips
    step, threshold, spread = rng.uniform(0.05, 0.6, n_types), rng.uniform(0, 2, n_types), rng.uniform(0.2, 1.5,
                                                                                                         n_types)
    signal = labels + spread[q] * rng.normal(size=n)                # what the model gets from the other features
    noise = (rng.normal(size=n) > threshold[q]) * step[q]           # its split on the noise feature
    big = np.concatenate(((offsets[None, :-1] + n * np.arange(draws)[:, None]).ravel(), [n * draws]))
    assignment = order_within(rng.random(n * draws), big) % n       # each draw a uniform within-query permutation
    spec = parse_metric("ndcg@10")
    values = per_query([spec], np.tile(labels, draws), np.tile(signal, draws) + noise[assignment], big,
                       Convention.preset("paper"))[str(spec)]
    return values.reshape(draws, n_types).T.copy()


@pytest.fixture(scope="module")
def null():
    """``{queries: (model, permuted mean of 5, first permuted, permuted mean of the default repeats)}``, each
    ``(SIMS, queries)``."""
    rng = np.random.default_rng(27)
    pool = _pool(rng)
    out = {}
    for queries in (QUERIES, 50):
        kind = rng.integers(0, pool.shape[0], (SIMS, queries))
        draw = rng.integers(0, pool.shape[1], (SIMS, queries, REPEATS + 1))
        v = pool[kind[..., None], draw]
        out[queries] = (v[..., 0], v[..., 1:].mean(axis=2), v[..., 1], v[..., 1:1 + DEFAULT_REPEATS].mean(axis=2))
    return out


def _rates(base: np.ndarray, permuted: np.ndarray, test: str) -> dict[float, float]:
    rng = np.random.default_rng(1)
    # 100 data sets at a time: the permutation test's lookup tables take 2 KB per query and data set
    p = np.concatenate([stats.paired_tests(base[i:i + 100], permuted[i:i + 100], test, rng=rng,
                                           permutations=RESAMPLES).p_value for i in range(0, base.shape[0], 100)])
    return {alpha: float(np.mean(p < alpha)) for alpha in (0.01, 0.05, 0.1)}


@pytest.mark.parametrize("repeats", ["default", 5])
@pytest.mark.parametrize("queries", [QUERIES, 50])
@pytest.mark.parametrize("test", ["ttest", "permutation", "bootstrap", "wilcoxon"])
def test_every_test_explain_offers_holds_alpha_under_a_true_null(null, test, queries, repeats):
    """At most alpha (up to 3 standard errors of the simulation) at both sizes; at 1,500 queries also no less than
    alpha - 4 standard errors. At 50 queries the t-test and the bootstrap are conservative on these skewed,
    heavy-tailed drops (docs/commands/explain.md gives the rates)."""
    if test == "wilcoxon" and repeats == 5:
        pytest.skip("wilcoxon takes one permutation (--repeats 1): the same case as with the default")
    base, mean5, first, default = null[queries]
    # wilcoxon: --repeats 1; the others: the default repeats, and 5
    permuted = first if test == "wilcoxon" else default if repeats == "default" else mean5
    rates = _rates(base, permuted, test)
    for alpha, rate in rates.items():
        se = np.sqrt(alpha * (1 - alpha) / SIMS)
        assert rate <= alpha + 3 * se, (test, queries, rates)
        assert queries < QUERIES or rate >= alpha - 4 * se, (test, queries, rates)


def test_the_signed_rank_test_with_repeats_rejects_too_often(null):
    """Why explain refuses ``--test wilcoxon --repeats 5``: each query's drop against the mean of 5 permutations has
    mean 0 but is not symmetric (more often positive than negative here), and the signed-rank test, which assumes
    symmetry, rejects the noise feature beyond alpha at 1,500 queries; against one permutation the drop is symmetric."""
    base, mean5, first, _ = null[QUERIES]
    for permuted, skewed in ((mean5, True), (first, False)):
        d = (base - permuted).ravel()
        moved = d[d != 0]
        share = float(np.mean(moved > 0))
        z = (share - 0.5) / np.sqrt(0.25 / moved.shape[0])
        assert (abs(z) > 10) == skewed, (share, z)
        assert abs(float(d.mean())) < 4 * float(d.std()) / np.sqrt(d.shape[0])   # the mean drop is 0 all the same
    rate = _rates(base, mean5, "wilcoxon")[0.05]
    assert rate > 0.05 + 3 * np.sqrt(0.05 * 0.95 / SIMS), rate


def test_explain_s_drop_tests_are_the_simulated_tests(null):
    """explain's own test of a feature (drop_tests: compare's paired test of the model against the permuted mean) is
    stats.paired_test on the same queries, the random tests drawing from the generator compare seeds."""
    base, _, first, default = null[50]
    for test in ("ttest", "permutation", "bootstrap", "wilcoxon"):
        permuted = first if test == "wilcoxon" else default
        for s in range(3):
            comps, _ = drop_tests(base[s], permuted[s][None, :], "ndcg@10", test=test, correction="none", seed=s,
                                  permutations=RESAMPLES)
            one = stats.paired_test(base[s], permuted[s], test, rng=np.random.default_rng([s, 0, 0]),
                                    permutations=RESAMPLES, alpha=0.01)
            assert comps[0].result.p_value == one.p_value
            assert comps[0].difference == pytest.approx(one.mean_diff)
