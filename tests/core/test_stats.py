"""rankcli.core.stats against scipy, exact enumeration and hand-computed corrections."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from rankcli.core.stats import adjust_pvalues, paired_test, win_tie_loss
from rankcli.errors import InputError, UsageError


def _pair(seed, n, shift=0.03, ties=False):
    rng = np.random.default_rng(seed)
    a = rng.random(n)
    b = a + rng.normal(shift, 0.1, n)
    if ties:
        a, b = np.round(a, 1), np.round(b, 1)
    return a, b


def _exact_sign_flip_p(d):
    """All 2^n sign vectors, one by one: the obviously correct randomization test."""
    observed = abs(sum(d))
    hits = 0
    for signs in itertools.product((1.0, -1.0), repeat=len(d)):
        if abs(sum(s * x for s, x in zip(signs, d))) >= observed - 1e-9 * sum(abs(x) for x in d):
            hits += 1
    return hits / 2 ** len(d)


@pytest.mark.parametrize("seed,n", [(0, 5), (1, 30), (2, 200), (3, 1000)])
def test_ttest_equals_scipy_ttest_rel(seed, n):
    a, b = _pair(seed, n)
    ours = paired_test(a, b, "ttest")
    ref = sps.ttest_rel(a, b)
    assert ours.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-10, abs=1e-300)
    assert ours.n == n
    assert ours.mean_diff == pytest.approx(np.mean(a - b))
    assert ours.stderr == pytest.approx(np.std(a - b, ddof=1) / math.sqrt(n))
    ci = ref.confidence_interval(0.95)
    assert (ours.ci_low, ours.ci_high) == pytest.approx((ci.low, ci.high))


@pytest.mark.parametrize("seed,n,ties", [(0, 8, False), (1, 40, False), (2, 300, False), (3, 60, True)])
def test_wilcoxon_equals_scipy(seed, n, ties):
    a, b = _pair(seed, n, ties=ties)
    ours = paired_test(a, b, "wilcoxon")
    ref = sps.wilcoxon(a - b)
    assert ours.statistic == ref.statistic
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-12)


@pytest.mark.parametrize("seed,n,ties", [(0, 4, False), (1, 9, False), (2, 12, True), (3, 10, False)])
def test_permutation_exact_mode_equals_enumeration(seed, n, ties):
    a, b = _pair(seed, n, ties=ties)
    ours = paired_test(a, b, "permutation", permutations=10000)   # 2^n <= 10000: enumerated
    assert ours.exact
    assert ours.p_value == pytest.approx(_exact_sign_flip_p(list(a - b)), abs=1e-15)


def test_permutation_random_mode_agrees_with_enumeration():
    a, b = _pair(7, 14, shift=0.05)                                 # 2^14 = 16384 sign vectors
    exact = _exact_sign_flip_p(list(a - b))
    res = paired_test(a, b, "permutation", rng=np.random.default_rng(0), permutations=16000)
    assert not res.exact                                            # 2^14 > 16000: random sign vectors
    # Binomial standard error of the estimate is about 0.004 here.
    assert res.p_value == pytest.approx(exact, abs=0.016)
    assert res.p_value == paired_test(a, b, "permutation", rng=np.random.default_rng(0), permutations=16000).p_value


def test_permutation_reproducible_under_seed_and_p_formula():
    a, b = _pair(11, 500, shift=0.005)
    r1 = paired_test(a, b, "permutation", rng=np.random.default_rng(42), permutations=999)
    r2 = paired_test(a, b, "permutation", rng=np.random.default_rng(42), permutations=999)
    assert r1 == r2
    hits = r1.p_value * 1000 - 1
    assert hits == pytest.approx(round(hits))                     # p = (hits + 1) / (permutations + 1)
    assert 0.0 < r1.p_value <= 1.0
    # Close to the t-test on a large sample.
    assert r1.p_value == pytest.approx(paired_test(a, b).p_value, abs=0.05)


def test_permutation_needs_rng_when_random():
    a, b = _pair(0, 40)
    with pytest.raises(UsageError, match="rng"):
        paired_test(a, b, "permutation")


def test_bootstrap_reproducible_and_consistent_with_its_interval():
    a, b = _pair(5, 200, shift=0.02)
    r1 = paired_test(a, b, "bootstrap", rng=np.random.default_rng(3), permutations=4000, confidence=0.99)
    r2 = paired_test(a, b, "bootstrap", rng=np.random.default_rng(3), permutations=4000, confidence=0.99)
    assert r1 == r2
    assert r1.ci_low < r1.mean_diff < r1.ci_high
    excludes_zero = r1.ci_high < 0 or r1.ci_low > 0
    # p < 1 - confidence iff the interval excludes 0, up to the +1 in p's numerator and the quantile interpolation.
    assert r1.p_value < 0.01 + 2 / 4001 and excludes_zero
    for seed in range(10):
        x, y = _pair(seed, 100, shift=0.01 * seed)
        r = paired_test(x, y, "bootstrap", rng=np.random.default_rng(seed), permutations=2000, confidence=0.95)
        if abs(r.p_value - 0.05) > 2 / 2001:
            assert (r.p_value < 0.05) == (r.ci_high < 0 or r.ci_low > 0)
    # The percentile interval is close to the normal one for a mean over 200 queries.
    assert r1.ci_low == pytest.approx(r1.mean_diff - 2.576 * r1.stderr, abs=0.3 * r1.stderr)
    strong = paired_test(a, a + 0.05 + np.random.default_rng(1).normal(0, 0.01, 200), "bootstrap",
                         rng=np.random.default_rng(3), permutations=999)
    assert strong.p_value == pytest.approx(2 / 1000)                # no resample crosses zero


@pytest.mark.parametrize("test", ["ttest", "permutation", "wilcoxon", "bootstrap"])
def test_run_against_itself_is_not_significant(test):
    a, _ = _pair(0, 50)
    res = paired_test(a, a.copy(), test, rng=np.random.default_rng(0))
    assert (res.statistic, res.p_value, res.mean_diff) == (0.0, 1.0, 0.0)


@pytest.mark.parametrize("test", ["ttest", "permutation", "wilcoxon", "bootstrap"])
@pytest.mark.parametrize("n", [0, 1])
def test_fewer_than_two_queries_is_not_testable(test, n):
    res = paired_test(np.ones(n), np.zeros(n), test, rng=np.random.default_rng(0))
    assert math.isnan(res.p_value) and math.isnan(res.statistic) and not res.testable
    assert res.n == n
    assert (n == 0 and math.isnan(res.mean_diff)) or res.mean_diff == 1.0


def test_constant_nonzero_difference_ttest():
    res = paired_test(np.full(5, 0.5), np.zeros(5), "ttest")
    assert res.statistic == math.inf and res.p_value == 0.0 and res.stderr == 0.0


def test_bad_inputs():
    with pytest.raises(UsageError, match="same length"):
        paired_test([1, 2], [1, 2, 3])
    with pytest.raises(InputError, match="finite"):
        paired_test([1, np.nan], [1, 2])
    with pytest.raises(UsageError, match="unknown test 'tt'"):
        paired_test([1, 2], [1, 2], "tt")
    with pytest.raises(UsageError, match="unknown correction"):
        adjust_pvalues([0.1], "fdr")


def test_corrections_hand_computed():
    p = [0.01, 0.04, 0.03, 0.005]
    # Holm: sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04 -> monotone 0.02, 0.03, 0.06, 0.06
    assert adjust_pvalues(p, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert adjust_pvalues(p, "bonferroni") == pytest.approx([0.04, 0.16, 0.12, 0.02])
    # BH: sorted times 4/1, 4/2, 4/3, 4/4 = 0.02, 0.02, 0.04, 0.04 -> cumulative min from the top: same
    assert adjust_pvalues(p, "bh") == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert adjust_pvalues(p, "none") == pytest.approx(p)
    assert adjust_pvalues([0.5, 0.9], "bonferroni") == pytest.approx([1.0, 1.0])
    # BH step-up: a larger p-value can lift a smaller one's adjusted value down.
    assert adjust_pvalues([0.02, 0.03], "bh") == pytest.approx([0.03, 0.03])
    # NaN stays NaN and does not count in m.
    out = adjust_pvalues([0.01, float("nan"), 0.02], "bonferroni")
    assert out[0] == pytest.approx(0.02) and math.isnan(out[1]) and out[2] == pytest.approx(0.04)
    assert adjust_pvalues([], "holm").shape == (0,)


def test_corrections_match_statsmodels_when_available():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    p = np.random.default_rng(0).random(25) ** 3
    for ours, theirs in [("holm", "holm"), ("bonferroni", "bonferroni"), ("bh", "fdr_bh")]:
        assert adjust_pvalues(p, ours) == pytest.approx(multitest.multipletests(p, method=theirs)[1])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=30), st.sampled_from(["holm", "bonferroni", "bh", "none"]))
def test_corrections_properties(p, method):
    adj = adjust_pvalues(p, method)
    p = np.asarray(p)
    assert np.all(adj >= p - 1e-15) and np.all(adj <= 1.0)
    order = np.argsort(p, kind="stable")
    assert np.all(np.diff(adj[order]) >= -1e-15)                    # monotone in the raw p-values


def test_win_tie_loss():
    assert win_tie_loss([0.5, 0.2, 0.3, 0.4], [0.4, 0.2, 0.9, np.nan]) == (1, 1, 1)
    assert win_tie_loss([0.5, 0.2], [0.49, 0.3], tol=0.05) == (0, 1, 1)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1, 1, allow_nan=False).map(lambda x: round(x, 2)), min_size=2, max_size=11))
def test_exact_permutation_properties(diffs):
    d = np.asarray(diffs)
    res = paired_test(d, np.zeros_like(d), "permutation")
    assert res.exact and 0.0 < res.p_value <= 1.0
    # Swapping the runs flips every sign: the same p-value.
    assert paired_test(np.zeros_like(d), d, "permutation").p_value == res.p_value
    # At least the identity and the full flip reach the observed statistic.
    assert res.p_value >= min(1.0, 2 / 2 ** len(d)) or not np.any(d)
