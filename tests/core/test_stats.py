"""rankcli.core.stats against scipy, exact enumeration and hand-computed corrections."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from rankcli.core import stats
from rankcli.core.stats import (
    REASON_NO_VARIANCE,
    REASON_TOO_FEW,
    adjust_pvalues,
    paired_test,
    paired_tests,
    win_tie_loss,
)
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
    assert res.n == n and res.reason == REASON_TOO_FEW
    assert (n == 0 and math.isnan(res.mean_diff)) or res.mean_diff == 1.0


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


# ---------------------------------------------------------------------------------------------------------------------
# Wilcoxon: pinned method, against scipy with explicit arguments and against brute-force enumeration


def _wilcoxon_by_enumeration(d):
    """Drop zeros, rank |d| with average ranks, count all 2^m sign patterns: the obviously correct exact test."""
    d = [x for x in d if x != 0.0]
    m = len(d)
    absd = sorted(abs(x) for x in d)
    ranks = [sum(i + 1 for i, v in enumerate(absd) if v == abs(x)) / absd.count(abs(x)) for x in d]
    r_plus = sum(r for r, x in zip(ranks, d) if x > 0)
    r_minus = sum(r for r, x in zip(ranks, d) if x < 0)
    stat = min(r_plus, r_minus)
    below = sum(1 for signs in itertools.product((0, 1), repeat=m)
                if sum(r for r, s in zip(ranks, signs) if s) <= stat + 1e-9)
    return stat, min(1.0, 2 * below / 2 ** m)


@pytest.mark.parametrize("seed,n,zeros", [(0, 5, 0), (1, 8, 0), (2, 20, 3), (3, 50, 0), (4, 53, 3), (5, 12, 1)])
def test_wilcoxon_exact_equals_scipy_exact(seed, n, zeros):
    # At most 50 non-zero differences without ties: the exact signed-rank distribution, zeros dropped.
    d = np.random.default_rng(seed).normal(0.3, 1.0, n)
    d[:zeros] = 0.0
    ours = paired_test(d, np.zeros(n), "wilcoxon")
    ref = sps.wilcoxon(d, zero_method="wilcox", correction=False, method="exact")
    assert ours.exact and ours.statistic == ref.statistic
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-12, abs=0)


@pytest.mark.parametrize("seed,n,ties", [(0, 51, False), (1, 300, False), (2, 300, True), (3, 2000, True)])
def test_wilcoxon_normal_approximation_equals_scipy_asymptotic(seed, n, ties):
    # More than 50 non-zero differences: normal approximation, tie correction, no continuity correction.
    d = np.random.default_rng(seed).normal(0.05, 1.0, n)
    if ties:
        d = np.round(d, 1)                                          # many ties and some zeros (dropped)
    ref = sps.wilcoxon(d, zero_method="wilcox", correction=False, method="asymptotic")
    ours = paired_test(d, np.zeros(n), "wilcoxon")
    assert not ours.exact and ours.statistic == ref.statistic
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-10, abs=0)


def test_wilcoxon_exact_with_ties_and_zeros_equals_enumeration():
    rng = np.random.default_rng(0)
    for _trial in range(60):
        n = int(rng.integers(2, 13))
        d = rng.integers(-3, 4, n) / 10.0                           # ties and zeros everywhere
        if not np.any(d):
            continue
        ours = paired_test(d, np.zeros(n), "wilcoxon")
        stat, p = _wilcoxon_by_enumeration(list(d))
        assert ours.exact and ours.statistic == stat
        assert ours.p_value == pytest.approx(p, rel=1e-12, abs=0), d


def test_wilcoxon_does_not_depend_on_scipy_defaults():
    # scipy's defaults moved between versions (exact/approx thresholds; in 1.17 a permutation test for ties with
    # n <= 13). Ties with 14 queries: scipy's default uses the normal approximation, ours the exact enumeration.
    d = np.array([0.1, 0.1, 0.2, 0.2, 0.2, -0.1, 0.3, 0.3, 0.4, 0.1, 0.2, -0.2, 0.5, 0.1])
    ours = paired_test(d, np.zeros_like(d), "wilcoxon")
    assert ours.exact and ours.p_value == pytest.approx(_wilcoxon_by_enumeration(list(d))[1], rel=1e-12)


# ---------------------------------------------------------------------------------------------------------------------
# Bootstrap: the symmetric studentized, null-shifted test and the interval it inverts


def _bootstrap_reference(d, rng, resamples):
    """Sakai's test one resample at a time (same draws as rankcli: one (B, n) block of indices)."""
    d = np.asarray(d, dtype=np.float64)
    n = d.shape[0]
    t = d.mean() / (d.std(ddof=1) / math.sqrt(n))
    z = d - d.mean()
    idx = rng.integers(0, n, size=(resamples, n))
    abs_t = []
    for row in idx:
        x = z[row]
        if np.all(x == x[0]):
            abs_t.append(math.inf)                                  # no variance: as extreme as it gets
        else:
            abs_t.append(abs(x.mean() / (x.std(ddof=1) / math.sqrt(n))))
    hits = sum(1 for v in abs_t if v >= abs(t))
    return t, (hits + 1) / (resamples + 1), sorted(abs_t)


@pytest.mark.parametrize("seed,n", [(0, 3), (1, 5), (2, 12), (3, 40), (4, 7)])
def test_bootstrap_equals_one_resample_at_a_time(seed, n):
    rng = np.random.default_rng(seed)
    d = rng.normal(0.2, 1.0, n)
    if seed == 4:
        d = np.round(d, 0)                                          # ties: all-equal resamples beyond the diagonal
    ours = paired_test(d, np.zeros(n), "bootstrap", rng=np.random.default_rng(seed), permutations=999, alpha=0.05)
    t, p, sorted_abs_t = _bootstrap_reference(d, np.random.default_rng(seed), 999)
    assert ours.statistic == pytest.approx(t, rel=1e-12)
    assert ours.p_value == p
    # q* = the (k+1)-th largest |t*|, k = 48: the largest hit count with (k + 1) / 1000 < 0.05.
    q = sorted_abs_t[999 - 49]
    se = np.std(d, ddof=1) / math.sqrt(n)
    if math.isinf(q):
        assert (ours.ci_low, ours.ci_high) == (-math.inf, math.inf)
    else:
        assert ours.ci_low == pytest.approx(d.mean() - q * se, rel=1e-9)
        assert ours.ci_high == pytest.approx(d.mean() + q * se, rel=1e-9)


def test_bootstrap_p_value_formula_and_reproducibility():
    a, b = _pair(5, 200, shift=0.02)
    r1 = paired_test(a, b, "bootstrap", rng=np.random.default_rng(3), permutations=4000, confidence=0.99)
    r2 = paired_test(a, b, "bootstrap", rng=np.random.default_rng(3), permutations=4000, confidence=0.99)
    assert r1 == r2
    hits = r1.p_value * 4001 - 1
    assert hits == pytest.approx(round(hits)) and 0.0 < r1.p_value <= 1.0
    assert r1.statistic == pytest.approx(r1.mean_diff / r1.stderr)
    assert r1.ci_low < r1.mean_diff < r1.ci_high
    assert r1.mean_diff - r1.ci_low == pytest.approx(r1.ci_high - r1.mean_diff)     # symmetric
    # With 200 queries the studentized bootstrap is close to the t-test.
    assert r1.p_value == pytest.approx(paired_test(a, b).p_value, abs=0.01)
    strong = paired_test(a, a + 0.05 + np.random.default_rng(1).normal(0, 0.01, 200), "bootstrap",
                         rng=np.random.default_rng(3), permutations=999)
    assert strong.p_value == pytest.approx(1 / 1000)                # no resample reaches |t|


def test_bootstrap_interval_and_p_value_never_disagree():
    # Many random inputs: small and tie-heavy samples, several levels and resample counts (some too few for alpha).
    rng = np.random.default_rng(2026)
    checked = rejected = 0
    for n in (2, 3, 4, 5, 8, 13, 30):
        for resamples in (19, 99, 999):
            for alpha in (0.2, 0.1, 0.05, 0.01):
                shift = rng.normal(0.0, 0.7, (60, 1))
                d = rng.standard_t(3, (60, n)) + shift
                d[::4] = np.round(d[::4])                           # ties, zeros, all-equal resamples
                res = paired_tests(d, np.zeros_like(d), "bootstrap", rng=np.random.default_rng(n), alpha=alpha,
                                   permutations=resamples)
                ok = ~np.isnan(res.p_value)
                excludes = (res.ci_low > 0) | (res.ci_high < 0)
                reject = res.p_value < alpha
                assert np.array_equal(excludes[ok], reject[ok]), (n, resamples, alpha)
                assert np.all(res.ci_low[ok] <= res.mean_diff[ok]) and np.all(res.mean_diff[ok] <= res.ci_high[ok])
                checked += int(ok.sum())
                rejected += int(reject[ok].sum())
    assert checked > 4500 and rejected > 500


def test_bootstrap_interval_is_the_set_of_null_values_it_does_not_reject():
    # Shifting d by c leaves the centred differences, hence every |t*|, as they are: testing mean = c is testing
    # d - c against 0 with the same resamples. Just inside the interval: not rejected; just outside: rejected.
    d = np.random.default_rng(8).normal(0.3, 1.0, 15)
    res = paired_test(d, np.zeros(15), "bootstrap", rng=np.random.default_rng(1), permutations=999, alpha=0.05)
    width = res.ci_high - res.ci_low
    for c, rejects in ((res.ci_low - 1e-6 * width, True), (res.ci_low + 1e-6 * width, False),
                       (res.ci_high - 1e-6 * width, False), (res.ci_high + 1e-6 * width, True)):
        shifted = paired_test(d - c, np.zeros(15), "bootstrap", rng=np.random.default_rng(1), permutations=999,
                              alpha=0.05)
        assert (shifted.p_value < 0.05) == rejects, c


@pytest.mark.parametrize("n", [2, 3])
def test_bootstrap_cannot_reject_with_two_or_three_queries(n):
    # With 2 queries half the resamples, with 3 one in nine, have no variance and count as extreme: p >= 0.11.
    d = np.random.default_rng(n).normal(0.0, 1.0, (200, n)) + 3.0
    res = paired_tests(d, np.zeros_like(d), "bootstrap", rng=np.random.default_rng(0), permutations=999)
    assert np.all(res.p_value > 0.1)
    assert np.all(np.isinf(res.ci_low[res.p_value > 0.2]))   # the whole line when even 1 - alpha cannot be reached


def test_bootstrap_too_few_resamples_for_alpha_gives_the_whole_line():
    d = np.random.default_rng(0).normal(1.0, 0.1, 30)
    res = paired_test(d, np.zeros(30), "bootstrap", rng=np.random.default_rng(0), permutations=50, alpha=0.01)
    assert res.p_value == pytest.approx(1 / 51) and (res.ci_low, res.ci_high) == (-math.inf, math.inf)


# ---------------------------------------------------------------------------------------------------------------------
# Degenerate inputs: constant differences, rounding, huge and tiny values


@pytest.mark.parametrize("test", ["ttest", "bootstrap"])
@pytest.mark.parametrize("n", [2, 5, 30])
def test_constant_nonzero_difference_is_not_testable_for_ttest_and_bootstrap(test, n):
    # Repeats of one result are not samples: no variance, so no t statistic, never p = 0 (it was t = inf, p = 0).
    res = paired_test(np.full(n, 0.5), np.full(n, 0.25), test, rng=np.random.default_rng(0))
    assert math.isnan(res.p_value) and math.isnan(res.statistic) and not res.testable
    assert res.reason == REASON_NO_VARIANCE and res.mean_diff == 0.25 and res.stderr == 0.0
    assert res.ci_low is None and res.ci_high is None
    # A constant difference that float rounding made unequal (b + 0.1 - b is not 0.1 for every b) is the same case.
    b = np.random.default_rng(1).random(n) * 7
    near = paired_test(b + 0.1, b, test, rng=np.random.default_rng(0))
    assert np.ptp((b + 0.1) - b) > 0 or n == 2
    assert near.reason == REASON_NO_VARIANCE and math.isnan(near.p_value)


@pytest.mark.parametrize("n", [2, 5, 12])
def test_constant_nonzero_difference_exact_p_for_permutation_and_wilcoxon(n):
    for sign in (1.0, -1.0):
        a = np.full(n, 0.5 + sign * 0.25)
        for test in ("permutation", "wilcoxon"):
            res = paired_test(a, np.full(n, 0.5), test)
            assert res.exact and res.reason is None
            assert res.p_value == 2 / 2 ** n


def test_differences_at_rounding_level_count_as_zero():
    b = np.random.default_rng(0).random(20)
    a = (b + 0.7) - 0.7                                             # b again, up to rounding
    assert np.any(a != b)
    for test in stats.TESTS:
        res = paired_test(a, b, test, rng=np.random.default_rng(0))
        assert (res.p_value, res.statistic, res.mean_diff, res.stderr) == (1.0, 0.0, 0.0, 0.0)


@pytest.mark.parametrize("test", ["ttest", "permutation", "wilcoxon", "bootstrap"])
def test_huge_and_tiny_values_give_the_same_p_values(test):
    a, b = _pair(3, 25, shift=0.05)
    ref = paired_test(a, b, test, rng=np.random.default_rng(0))
    for factor in (2.0 ** 1000, 1e300, 1e-300, 2.0 ** -1020):       # squares would overflow or underflow
        res = paired_test(a * factor, b * factor, test, rng=np.random.default_rng(0))
        assert res.p_value == pytest.approx(ref.p_value, rel=1e-9)
        assert res.mean_diff == pytest.approx(ref.mean_diff * factor, rel=1e-9)
        assert res.stderr == pytest.approx(ref.stderr * factor, rel=1e-9)
    # Subnormal values keep fewer digits, so the data differ a little; the answer is still a number.
    res = paired_test(a * 2.0 ** -1060, b * 2.0 ** -1060, test, rng=np.random.default_rng(0))
    assert res.p_value == pytest.approx(ref.p_value, rel=0.05)


def test_overflowing_differences_are_refused():
    with pytest.raises(InputError, match="overflows"):
        paired_test([1e308, -1e308], [-1e308, 1e308])


def test_batched_bad_inputs():
    with pytest.raises(UsageError, match="same shape"):
        paired_tests(np.zeros((3, 4)), np.zeros((3, 5)))
    with pytest.raises(UsageError, match="same shape"):
        paired_tests(np.zeros(4), np.zeros(4))
    with pytest.raises(InputError, match="finite"):
        paired_tests(np.array([[1.0, np.inf]]), np.zeros((1, 2)))
    with pytest.raises(UsageError, match="alpha"):
        paired_tests(np.zeros((1, 4)), np.zeros((1, 4)), alpha=1.0)


# ---------------------------------------------------------------------------------------------------------------------
# Batched and single versions agree exactly


def _mixed_rows(seed, rows, n):
    rng = np.random.default_rng(seed)
    a = rng.random((rows, n))
    b = a + rng.normal(0.05, 0.2, (rows, n))
    b[1] = a[1]                                                     # all zero
    b[2] = a[2] - 0.125                                             # constant
    b[3] = np.round(b[3], 1)
    a[3] = np.round(a[3], 1)                                        # ties and zeros
    b[4, : n // 2] = a[4, : n // 2]                                 # half zeros
    return a, b


@pytest.mark.parametrize("test", ["ttest", "permutation", "wilcoxon", "bootstrap"])
@pytest.mark.parametrize("n,permutations", [(2, 99), (5, 999), (9, 300), (13, 999), (60, 500)])
def test_batched_equals_single_exactly(test, n, permutations):
    a, b = _mixed_rows(n, 12, n)
    batch = paired_tests(a, b, test, rng=np.random.default_rng(4), permutations=permutations, alpha=0.05)
    assert len(batch) == 12 and batch.n == n
    for i in range(12):
        single = paired_test(a[i], b[i], test, rng=np.random.default_rng(4), permutations=permutations, alpha=0.05)
        assert _same(batch.result(i), single), (i, batch.result(i), single)
    # Chunked work (tiny chunks) gives the same answers for a fixed draw order.
    rejects = batch.rejects(0.05)
    assert rejects.dtype == bool and not rejects[1]


def _same(x, y):
    def norm(v):
        return "nan" if isinstance(v, float) and math.isnan(v) else v
    return all(norm(u) == norm(v) for u, v in zip(x.as_dict().values(), y.as_dict().values()))


def test_batched_result_is_independent_of_the_row_chunking(monkeypatch):
    a, b = _mixed_rows(1, 40, 30)
    ref = {t: paired_tests(a, b, t, rng=np.random.default_rng(0), permutations=700) for t in ("permutation",
                                                                                           "bootstrap")}
    # Fewer rows per chunk: same draws (their chunking depends on n only when the draws fit), same results.
    monkeypatch.setattr(stats.resampling, "CHUNK_ELEMENTS", 30 * 700)
    for t, r in ref.items():
        again = paired_tests(a, b, t, rng=np.random.default_rng(0), permutations=700)
        assert np.array_equal(again.p_value, r.p_value, equal_nan=True)
        assert np.array_equal(again.ci_low, r.ci_low, equal_nan=True)


def test_bootstrap_row_groups_see_the_same_resamples(monkeypatch):
    # Many rows: the |t*| matrix is built in groups of rows, the generator rewound for each: same answers.
    a, b = _mixed_rows(2, 30, 12)
    ref = paired_tests(a, b, "bootstrap", rng=np.random.default_rng(5), permutations=400)
    monkeypatch.setattr(stats.resampling, "CHUNK_ELEMENTS", 400 * 7)          # groups of 7 rows
    rng = np.random.default_rng(5)
    again = paired_tests(a, b, "bootstrap", rng=rng, permutations=400)
    assert np.array_equal(again.p_value, ref.p_value, equal_nan=True)
    assert np.array_equal(again.ci_high, ref.ci_high, equal_nan=True)
    single = paired_test(a[29], b[29], "bootstrap", rng=np.random.default_rng(5), permutations=400)
    assert single.p_value == again.p_value[29]


def test_wilcoxon_tied_rows_in_chunks(monkeypatch):
    d = np.round(np.random.default_rng(0).normal(0.2, 1.0, (9, 12)), 0)
    ref = paired_tests(d, np.zeros_like(d), "wilcoxon")
    monkeypatch.setattr(stats.resampling, "CHUNK_ELEMENTS", 400)              # two rows of knapsack counts at a time
    assert np.array_equal(paired_tests(d, np.zeros_like(d), "wilcoxon").p_value, ref.p_value)
    for i in range(9):
        if np.any(d[i]):
            assert ref.p_value[i] == pytest.approx(_wilcoxon_by_enumeration(list(d[i]))[1], rel=1e-12)


def test_values_near_the_float64_limit_give_numbers_not_warnings():
    with np.errstate(over="raise", invalid="raise", divide="raise"):  # underflow of tiny squares is harmless
        for test in stats.TESTS:
            res = paired_test([1e308, -1e308, 0.0, 5.0], [0.0, 0.0, 1.0, 2.0], test, rng=np.random.default_rng(0))
            assert res.mean_diff == pytest.approx((-1.0 + 3.0) / 4) and 0.0 < res.p_value <= 1.0
            if res.ci_low is not None:                              # may reach beyond float64: -inf / inf
                assert res.ci_low < -1e307 and res.ci_high > 1e307
        assert paired_test([1e308] * 3, [0.0] * 3).reason == REASON_NO_VARIANCE


def test_bootstrap_resamples_are_bounded_before_allocating():
    """compare --test bootstrap --permutations 100000000 ended in a MemoryError traceback (exit 1)."""
    from rankcli.core.stats import MAX_RESAMPLES
    from rankcli.errors import UsageError

    d = np.random.default_rng(0).normal(size=10)
    with pytest.raises(UsageError, match="at most 10,000,000 resamples, got 100,000,000"):
        paired_test(d, np.zeros(10), "bootstrap", rng=np.random.default_rng(1), permutations=100_000_000)
    assert MAX_RESAMPLES == 10_000_000
    # the permutation test streams its sign vectors: many permutations cost time, not memory, and stay allowed
    paired_test(d[:4], np.zeros(4), "permutation", rng=np.random.default_rng(1), permutations=100_000_000)


@pytest.mark.parametrize("resamples", [1, 2, 19, 99, 100, 999, 1000, 9999, 12345])
@pytest.mark.parametrize("alpha", [1e-9, 0.001, 0.01, 0.05, 0.05000000000000001, 0.1, 0.5, 0.99])
def test_bootstrap_rejection_count_equals_counting_every_hit_count(resamples, alpha):
    """The largest hit count that rejects, in O(1): the same as counting over arange(B + 1), which took 16 bytes per
    resample (1.6 GB of temporaries at 10^8 resamples)."""
    from rankcli.core.stats.resampling import _largest_count_below

    expected = int(np.count_nonzero((np.arange(resamples + 1) + 1) / (resamples + 1) < alpha)) - 1
    assert _largest_count_below(resamples, alpha) == expected
    for a in (1 / (resamples + 1), 2 / (resamples + 1)):
        assert _largest_count_below(resamples, a) == \
            int(np.count_nonzero((np.arange(resamples + 1) + 1) / (resamples + 1) < a)) - 1
