"""Ranking importance (rankcli.explain.ranking): the permutation stays within queries, groups move together, the
feature matrix is restored, an informative feature outranks noise, and the per-feature test is calibrated under a
true null (a simulation)."""

from __future__ import annotations

import numpy as np
import pytest

from rankcli.core import stats
from rankcli.core.metrics import Convention, parse_metric, per_query
from rankcli.explain.grouping import feature_groups
from rankcli.explain.ranking import drop_tests, permutation, permuted_metrics


def _offsets(rng, n_queries, lo=1, hi=15):
    sizes = rng.integers(lo, hi + 1, n_queries)
    return np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)


def _metric(labels, offsets, name="ndcg@10", convention="paper"):
    spec, conv = parse_metric(name), Convention.preset(convention)
    return lambda scores: per_query([spec], labels, scores, offsets, conv)[str(spec)]


def test_the_permutation_is_within_queries_and_uniform(rng):
    offsets = _offsets(rng, 50)
    for r in range(3):
        perm = permutation(offsets, seed=7, repeat=r)
        for a, b in zip(offsets[:-1], offsets[1:]):
            assert sorted(perm[a:b].tolist()) == list(range(a, b))
    assert not np.array_equal(permutation(offsets, 7, 0), permutation(offsets, 7, 1))
    np.testing.assert_array_equal(permutation(offsets, 7, 1), permutation(offsets, 7, 1))
    # each of a 4-document query's rows lands in each position about equally often (4000 independent queries)
    fours = np.arange(0, 4001 * 4, 4)
    perm = permutation(fours, 3, 0).reshape(-1, 4) - fours[:-1, None]
    counts = np.stack([(perm == row).mean(axis=0) for row in range(4)])
    assert np.abs(counts - 0.25).max() < 0.03


def test_a_feature_constant_within_queries_loses_nothing(rng):
    """The model leans on a feature that only separates queries: permuting it within queries changes no ranking
    (a permutation across queries would)."""
    offsets = _offsets(rng, 40, 3, 12)
    n = int(offsets[-1])
    q = np.repeat(np.arange(40), np.diff(offsets))
    x = np.column_stack([rng.normal(size=n), rng.normal(size=40)[q]]).astype(np.float32)
    labels = (x[:, 0] > 0.3).astype(float) + (x[:, 0] > 1.0)

    def predict(m):
        return m[:, 0] + 10.0 * m[:, 1] ** 2

    base, permuted = permuted_metrics(predict, np.asfortranarray(x), _metric(labels, offsets), offsets,
                                      feature_groups(["f1", "f2"]), repeats=3, seed=0)
    drops = base - permuted
    np.testing.assert_array_equal(drops[1][~np.isnan(drops[1])], 0.0)
    assert np.nanmean(drops[0]) > 0.1


def test_groups_move_together_and_the_matrix_is_restored(rng):
    offsets = _offsets(rng, 30, 4, 10)
    n = int(offsets[-1])
    x1 = rng.normal(size=n)
    x = np.asfortranarray(np.column_stack([x1, x1, rng.normal(size=n)]).astype(np.float32))
    original = x.copy()
    labels = rng.integers(0, 3, n).astype(float)

    def predict(m):  # depends on f1 - f2 only: nothing while they move together
        return m[:, 2] - 5.0 * (m[:, 0].astype(np.float64) - m[:, 1]) ** 2

    alone = permuted_metrics(predict, x, _metric(labels, offsets), offsets, feature_groups(["f1", "f2", "f3"]),
                             repeats=2, seed=1)
    together = permuted_metrics(predict, x, _metric(labels, offsets), offsets,
                                feature_groups(["f1", "f2", "f3"], ["pair=f1,f2"]), repeats=2, seed=1)
    np.testing.assert_array_equal(x, original)
    assert np.nanmax(np.abs(alone[0] - alone[1][0])) > 0
    pair = together[0] - together[1][0]
    np.testing.assert_array_equal(pair[~np.isnan(pair)], 0.0)

    calls = []

    def failing(m):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return predict(m)

    with pytest.raises(KeyboardInterrupt):
        permuted_metrics(failing, x, _metric(labels, offsets), offsets, feature_groups(["f1", "f2", "f3"]),
                         repeats=2, seed=1)
    np.testing.assert_array_equal(x, original)


def test_unused_features_cost_no_call_and_drop_exactly_nothing(rng):
    offsets = _offsets(rng, 20, 2, 8)
    x = np.asfortranarray(rng.normal(size=(int(offsets[-1]), 2)).astype(np.float32))
    labels = rng.integers(0, 3, x.shape[0]).astype(float)
    calls = []

    def predict(m):
        calls.append(1)
        return m[:, 0].astype(np.float64)

    base, permuted = permuted_metrics(predict, x, _metric(labels, offsets), offsets, feature_groups(["f1", "f2"]),
                                      repeats=4, seed=0, used=[True, False])
    assert len(calls) == 1 + 4
    np.testing.assert_array_equal(permuted[1], base)
    comps, correction = drop_tests(base, permuted, "ndcg@10", test="ttest", correction=None, seed=0,
                                   permutations=100)
    assert comps[1].result.p_value == 1.0 and comps[1].difference == 0.0 and correction == "holm"


def test_the_tests_are_not_anticonservative_under_a_true_null():
    """A scorer that uses a feature of pure noise (independent of the labels and of the other features): permuting
    it within queries leaves the expected metric unchanged, so its p-values must reject at most alpha of the time
    (up to the simulation's error), for every test, here on 40 queries through the real permutation code
    (tests/explain/test_calibration.py simulates 1,500). The informative feature is rejected nearly always.

    The simulated data sets are stacked into one (their queries are independent), so one call per feature and repeat
    covers them all; each data set is then tested on its own queries."""
    rng = np.random.default_rng(11)
    sims, n_queries, size = 300, 40, 10
    offsets = np.arange(0, sims * n_queries * size + 1, size, dtype=np.int64)
    n = int(offsets[-1])
    x = np.asfortranarray(rng.normal(size=(n, 3)).astype(np.float32))
    labels = np.digitize(x[:, 0] + rng.normal(scale=1.0, size=n), [0.0, 1.0, 2.0]).astype(float)

    def predict(m):
        return m[:, 0] + 0.7 * m[:, 1]       # f2: noise the model uses; f3: unused

    # every query has a value (lightgbm's convention: 1 without a relevant document), so that each data set is
    # tested on its 40 queries
    metric = _metric(labels, offsets, convention="lightgbm")
    base, two = permuted_metrics(predict, x, metric, offsets, feature_groups(["f1", "f2", "f3"]), repeats=2, seed=5)
    np.testing.assert_array_equal(base, two[2])   # the unused feature: no drop at all (p = 1)
    one = permuted_metrics(predict, x, metric, offsets, feature_groups(["f1", "f2", "f3"]), repeats=1, seed=5)[1]
    rows = (sims, n_queries)
    for test in ("ttest", "permutation", "wilcoxon", "bootstrap"):
        permuted = one if test == "wilcoxon" else two   # the signed-rank test takes one permutation (check_test)
        # explain's test (drop_tests) is stats.paired_test of the model against the permuted mean, query by query;
        # the simulation runs it on every data set at once (stats.paired_tests, row i = data set i)
        for s in range(3):
            q = slice(s * n_queries, (s + 1) * n_queries)
            comps, _ = drop_tests(base[q], permuted[:, q], "ndcg@10", test=test, correction="none", seed=s,
                                  permutations=200)
            single = stats.paired_test(base[q], permuted[1, q], test, rng=np.random.default_rng([s, 1, 0]),
                                       permutations=200, alpha=0.01)
            assert comps[1].result.p_value == single.p_value
            assert comps[1].difference == pytest.approx(single.mean_diff)
        noise = stats.paired_tests(base.reshape(rows), permuted[1].reshape(rows), test,
                                   rng=np.random.default_rng(1), permutations=500).p_value
        signal = stats.paired_tests(base.reshape(rows), permuted[0].reshape(rows), test,
                                    rng=np.random.default_rng(2), permutations=500).p_value
        for alpha in (0.01, 0.05, 0.1):
            limit = alpha + 3 * np.sqrt(alpha * (1 - alpha) / sims)
            assert np.mean(noise < alpha) <= limit, (test, alpha, np.mean(noise < alpha))
        assert np.mean(signal < 0.05) > 0.9, test
