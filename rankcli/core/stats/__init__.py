"""Paired significance tests over per-query metric values, multiple-testing corrections, win/tie/loss counts.

Pure numpy + scipy special functions: no I/O, no printing. Every test works on the per-query differences
``d = a - b`` of two runs evaluated on the same queries (``a[i]`` and ``b[i]`` belong to the same query).
:func:`paired_test` tests one pair of vectors; :func:`paired_tests` tests many at once, one per row of two
``(datasets, n)`` matrices (the calibration simulations use it), and row ``i`` of its result equals
``paired_test(a[i], b[i])`` exactly, given a generator in the same state for the random tests: every row is tested
with the same random sign vectors or resamples.

Tests (``test=...``), all two-sided; ``n`` is the number of queries, ``mean`` and ``sd`` (``ddof=1``) are those of
``d`` and ``se = sd / sqrt(n)``. docs/statistics.md says which to prefer when.

``ttest``
    Student's paired t-test, the paper's test. Null hypothesis: the differences have mean 0 (exact for normal
    differences). ``t = mean / se`` with ``n - 1`` degrees of freedom, ``p = 2 P(T_{n-1} >= |t|)``: identical to
    :func:`scipy.stats.ttest_rel`. Interval: ``mean +- t_{n-1, 1 - alpha/2} se``.
``permutation``
    Paired randomization (sign-flip) test (Fisher; Smucker, Allan & Carterette, CIKM 2007). Null hypothesis: the
    two runs are exchangeable within each query, so each difference is symmetric about 0 and its sign a fair coin.
    The statistic is ``|sum(d)|``; ``permutations`` random sign vectors are drawn (seeded generator) and
    ``p = (hits + 1) / (permutations + 1)`` where ``hits`` counts sign vectors whose ``|sum(s * d)|`` is at least the
    observed one (a valid p-value that is never 0; Phipson & Smyth 2010). When ``2 ** n <= permutations`` every sign
    vector is enumerated instead and ``p = hits / 2 ** n`` exactly (the identity is one of them, so ``p > 0``), and
    ``exact`` is True. No interval.
``wilcoxon``
    Wilcoxon signed-rank test, pinned here rather than left to the installed scipy. Null hypothesis: the differences
    are symmetric about 0 (a statement about the median, not the mean). Zero differences are dropped (Wilcoxon's
    ``zero_method="wilcox"``); ``m`` non-zero differences remain. Their absolute values are ranked, equal values
    sharing their average rank; ``R+`` and ``R-`` are the rank sums of the positive and negative differences and the
    statistic is ``min(R+, R-)``. When ``m <= 50`` the p-value is exact, ``p = min(1, 2 P(R+ <= min(R+, R-)))`` over
    the ``2 ** m`` equally likely sign patterns of the observed ranks (``exact`` is True): without ties that is the
    classic signed-rank distribution (:func:`scipy.stats.wilcoxon` with ``zero_method="wilcox", method="exact"``);
    with ties it is the same enumeration over the average ranks (so ``m`` equal differences give ``2 / 2 ** m``, where
    the normal approximation would give less than the smallest p-value possible). For ``m > 50`` the normal
    approximation with the tie correction and no continuity correction, ``z = (min(R+, R-) - m(m+1)/4) /
    sqrt((m(m+1)(2m+1) - sum(t^3 - t)/2) / 24)`` over the tie groups of sizes ``t``, and ``p = 2 Phi(z)``
    (scipy's ``zero_method="wilcox", correction=False, method="asymptotic"``). No interval.
``bootstrap``
    Symmetric studentized bootstrap test of the mean, null-shifted (Efron & Tibshirani 1993, ch. 16; Sakai, SIGIR
    2006). Null hypothesis: the differences have mean 0. The observed statistic is ``t = mean / se``. The centred
    differences ``z = d - mean`` (which satisfy the null) are resampled with replacement ``B = permutations`` times
    (seeded); each resample ``z*`` gives ``t* = mean(z*) / (sd(z*) / sqrt(n))``, and
    ``p = (#{|t*| >= |t|} + 1) / (B + 1)``. A resample whose values are all equal has no variance; its ``|t*|``
    counts as infinite, i.e. as at least as extreme as the data (conservative; it matters only for ``n <= 4``, where
    such resamples are frequent: with ``n = 2`` or ``3`` the test cannot reject at 0.05). The interval is the one this
    test inverts, ``mean +- q* se`` where ``q*`` is the ``(k + 1)``-th largest ``|t*|`` and ``k`` the largest hit count
    whose ``(k + 1) / (B + 1)`` is below ``alpha = 1 - confidence``: so the interval excludes 0 exactly when
    ``p < alpha`` (both computed from the same ``|t*|``; a rounding guard of one ulp keeps them in step). With too few
    resamples to reach ``p < alpha`` (``B + 1 <= 1 / alpha``) the interval is the whole line. The statistic is ``t``.

Degenerate cases (decided here):

* fewer than two queries: nothing can be tested, for every test; ``statistic``, ``p_value`` and ``stderr`` are NaN
  (``mean_diff`` is the single difference, or NaN for no query) and ``reason`` says why. A NaN p-value is never
  significant, and :func:`adjust_pvalues` leaves it NaN and out of the family.
* all differences zero (e.g. a run compared with itself), for every test: the runs are indistinguishable,
  ``statistic = 0``, ``p_value = 1``, ``mean_diff = stderr = 0``. Differences that are all within the rounding of the
  values they come from (``|d| <= 8 eps max(|a|, |b|)``, ``eps`` the float64 machine epsilon) count as zero.
* all differences equal and non-zero (zero variance: every query moved by the same amount, as when one
  deterministic result is repeated), and differences that agree within that rounding: ``ttest`` and ``bootstrap``
  have no variance to use and are *not testable* (``p_value`` and ``statistic`` NaN, ``reason`` says so), never
  ``p = 0``. ``permutation`` and ``wilcoxon`` are computed as usual and give their exact ``p = 2 / 2 ** n``
  (``permutation`` when enumerated, ``wilcoxon`` for ``n <= 50``; a random permutation test gives about that).

Each row is scaled by a power of two (exactly) before the statistics are computed, so huge or tiny values neither
overflow nor underflow; differences that overflow float64 are refused.

Effect size: ``mean_diff = mean(a - b)`` and its standard error ``stderr = sd(a - b) / sqrt(n)`` (``ddof=1``).

Over repeated random splits of one pool (``rankcli experiment``'s trials) the units are not independent and none of
the tests above holds its level; :func:`corrected_ttest` (``corrected-ttest``, :mod:`rankcli.core.stats.corrected`) is
the corrected resampled t-test of Nadeau and Bengio (2003) for them: the paired t-test with its variance multiplied
by ``1 + J n_test / n_train`` (``J`` trials), i.e. ``(1/J + n_test/n_train) sd^2``.
"""

from rankcli.core.stats.corrected import CORRECTED_TTEST, corrected_ttest, corrected_ttests
from rankcli.core.stats.multiple import CORRECTIONS, adjust_pvalues, win_tie_loss
from rankcli.core.stats.paired import (
    MAX_RESAMPLES,
    REASON_NO_VARIANCE,
    REASON_TOO_FEW,
    TESTS,
    PairedTestBatch,
    PairedTestResult,
    paired_test,
    paired_tests,
)
from rankcli.core.stats.wilcoxon import WILCOXON_EXACT_MAX_N

__all__ = [
    "CORRECTED_TTEST", "CORRECTIONS", "MAX_RESAMPLES", "REASON_NO_VARIANCE", "REASON_TOO_FEW", "TESTS",
    "WILCOXON_EXACT_MAX_N", "PairedTestBatch", "PairedTestResult", "adjust_pvalues", "corrected_ttest",
    "corrected_ttests", "paired_test", "paired_tests", "win_tie_loss",
]
