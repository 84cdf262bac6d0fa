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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import cache

import numpy as np

from rankcli.errors import InputError, UsageError

TESTS = ("ttest", "permutation", "wilcoxon", "bootstrap")
CORRECTIONS = ("holm", "bonferroni", "bh", "none")

#: Why a test could not be run (the ``reason`` of an untestable result).
REASON_TOO_FEW = "fewer than two queries"
REASON_NO_VARIANCE = "all differences are equal (zero variance)"

# Work on at most this many matrix elements at a time in the resampling tests (~32 MB of float64).
_CHUNK_ELEMENTS = 4_000_000
#: The most resamples the bootstrap takes (``--permutations``): it keeps all their |t*| (80 MB per comparison here).
MAX_RESAMPLES = 10_000_000
# Enumerate all 2**n sign vectors only up to this n (2**20 vectors x 20 queries is still small).
_EXACT_MAX_N = 20
# The Wilcoxon test uses the exact null distribution up to this many non-zero differences without ties.
WILCOXON_EXACT_MAX_N = 50
# Differences within this much (relative to the largest |value| of the row) of each other, or of zero, are equal.
_ROUNDING = 8.0 * float(np.finfo(np.float64).eps)


@dataclass
class PairedTestResult:
    """The outcome of one paired test of ``a`` against ``b`` (differences ``a - b``)."""

    test: str
    statistic: float
    p_value: float
    mean_diff: float
    stderr: float
    n: int
    ci_low: float | None = None
    ci_high: float | None = None
    exact: bool = False          # permutation by enumeration, or wilcoxon by its exact distribution
    reason: str | None = None    # why the test could not be run (p_value NaN), else None

    @property
    def testable(self) -> bool:
        return not math.isnan(self.p_value)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class PairedTestBatch:
    """The outcomes of one paired test on each row of ``(datasets, n)`` matrices; arrays of length ``datasets``.

    ``ci_low``/``ci_high`` are NaN where the test has no interval (or could not be run); ``reason`` holds ``None``
    where the test ran.
    """

    test: str
    n: int
    statistic: np.ndarray
    p_value: np.ndarray
    mean_diff: np.ndarray
    stderr: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    exact: np.ndarray
    reason: list

    def __len__(self) -> int:
        return int(self.p_value.shape[0])

    def result(self, i: int) -> PairedTestResult:
        """Row ``i`` as a :class:`PairedTestResult` (a NaN interval end becomes None)."""
        lo, hi = float(self.ci_low[i]), float(self.ci_high[i])
        return PairedTestResult(self.test, float(self.statistic[i]), float(self.p_value[i]),
                                float(self.mean_diff[i]), float(self.stderr[i]), self.n,
                                None if math.isnan(lo) else lo, None if math.isnan(hi) else hi,
                                bool(self.exact[i]), self.reason[i])

    def rejects(self, alpha: float) -> np.ndarray:
        """Rows whose (raw) p-value is below ``alpha``; untestable rows never reject."""
        with np.errstate(invalid="ignore"):
            return np.asarray(self.p_value < alpha)


def _check_options(test: str, permutations: int, confidence: float, alpha: float | None) -> float:
    if test not in TESTS:
        raise UsageError(f"unknown test {test!r}; choose one of {', '.join(TESTS)}")
    if permutations < 1:
        raise UsageError(f"permutations must be at least 1, got {permutations}")
    if test == "bootstrap" and permutations > MAX_RESAMPLES:
        # checked before allocating: 10^8 resamples ended in a MemoryError traceback (a 763 MiB temporary, then more)
        raise UsageError(f"the bootstrap keeps every resample's |t*| to invert its interval (8 bytes each per "
                         f"comparison): at most {MAX_RESAMPLES:,} resamples, got {permutations:,}; its p-value "
                         "cannot be finer than 1/(resamples + 1) anyway")
    if alpha is not None:
        if not 0.0 < alpha < 1.0:
            raise UsageError(f"alpha must be between 0 and 1, got {alpha}")
        return float(alpha)
    if not 0.0 < confidence < 1.0:
        raise UsageError(f"confidence must be between 0 and 1, got {confidence}")
    return 1.0 - float(confidence)


def _as_pairs(a, b, ndim: int) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if ndim == 1:
        a, b = a.ravel(), b.ravel()
        if a.shape != b.shape:
            raise UsageError(f"paired test needs two vectors of the same length, got {a.shape[0]} and {b.shape[0]}")
        a, b = a[None, :], b[None, :]
    elif a.ndim != 2 or a.shape != b.shape:
        raise UsageError(f"paired tests need two matrices (datasets, queries) of the same shape, got {a.shape} "
                         f"and {b.shape}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise InputError("paired test needs finite values; drop the queries without a value (NaN) first")
    return a, b


def paired_test(a, b, test: str = "ttest", *, rng: np.random.Generator | None = None, permutations: int = 10000,
                confidence: float = 0.95, alpha: float | None = None) -> PairedTestResult:
    """Two-sided paired test of ``a`` against ``b`` (one value per query each); see the module docstring.

    Parameters
    ----------
    a, b : array of shape (n,)
        Per-query values of the two runs, same queries in the same order, finite.
    test : {"ttest", "permutation", "wilcoxon", "bootstrap"}
    rng : numpy Generator
        The randomness of ``permutation`` and ``bootstrap`` (required for them unless the permutation test is exact);
        unused by the others.
    permutations : int
        Random sign vectors (``permutation``) or resamples (``bootstrap``).
    confidence : float
        Level of the interval (``ttest`` and ``bootstrap``).
    alpha : float, optional
        The test level the interval inverts, ``1 - confidence`` when not given. Pass the level the p-value will be
        compared with (``p < alpha``): the bootstrap interval then excludes 0 exactly when ``p < alpha``.

    Examples
    --------
    >>> r = paired_test([0.5, 0.6, 0.7, 0.8], [0.4, 0.6, 0.5, 0.6])
    >>> round(r.mean_diff, 3), round(r.p_value, 4)
    (0.125, 0.0796)
    >>> paired_test([0.5, 0.6, 0.7], [0.4, 0.5, 0.6]).reason     # every query 0.1 higher: no variance
    'all differences are equal (zero variance)'
    """
    alpha = _check_options(test, permutations, confidence, alpha)
    a, b = _as_pairs(a, b, 1)
    return _run(a, b, test, rng, permutations, alpha).result(0)


def paired_tests(a, b, test: str = "ttest", *, rng: np.random.Generator | None = None, permutations: int = 10000,
                 confidence: float = 0.95, alpha: float | None = None) -> PairedTestBatch:
    """:func:`paired_test` on every row of ``a`` and ``b``, vectorised over the rows.

    Parameters
    ----------
    a, b : array of shape (datasets, n)
        Row ``i`` holds the per-query values of the two runs of data set ``i``.
    test, rng, permutations, confidence, alpha
        As :func:`paired_test`. The random tests draw one set of sign vectors or resamples and apply it to every row,
        so row ``i`` of the result equals ``paired_test(a[i], b[i], rng=g)`` with ``g`` in the state ``rng`` had.
        The rows' data are independent; their randomization is shared (calibration studies that want it independent
        too split the rows into batches with their own generators).

    Examples
    --------
    >>> d = np.array([[0.1, 0.2, 0.3, -0.1], [0.1, 0.1, 0.1, 0.1]])
    >>> r = paired_tests(d, np.zeros_like(d))
    >>> r.p_value.round(4).tolist(), r.reason
    ([0.2394, nan], [None, 'all differences are equal (zero variance)'])
    """
    alpha = _check_options(test, permutations, confidence, alpha)
    a, b = _as_pairs(a, b, 2)
    return _run(a, b, test, rng, permutations, alpha)


def _run(a: np.ndarray, b: np.ndarray, test: str, rng, permutations: int, alpha: float) -> PairedTestBatch:
    rows, n = a.shape
    nan = np.full(rows, np.nan)
    out = PairedTestBatch(test, n, nan.copy(), nan.copy(), nan.copy(), nan.copy(), nan.copy(), nan.copy(),
                          np.zeros(rows, dtype=bool), [None] * rows)
    if n == 0 or rows == 0:
        out.reason = [REASON_TOO_FEW] * rows
        return out
    with np.errstate(over="ignore"):
        d = a - b
    if not np.isfinite(d).all():
        raise InputError("paired test: a difference a - b overflows float64 (values near 1.8e308); rescale the "
                         "values")
    if n < 2:
        out.mean_diff = d[:, 0].copy()
        out.reason = [REASON_TOO_FEW] * rows
        return out
    # Scale each row by a power of two so that max |d| is in [0.5, 1): exact, and no square or sum overflows.
    scale = np.maximum(np.abs(a).max(axis=1), np.abs(b).max(axis=1))
    biggest = np.abs(d).max(axis=1)
    exponent = np.frexp(biggest)[1]
    ds = np.ldexp(d, -exponent[:, None])
    mean = ds.mean(axis=1)
    sd = ds.std(axis=1, ddof=1)
    se = sd / math.sqrt(n)
    with np.errstate(over="ignore"):                     # a stderr beyond float64 (values near 1e308) is inf
        out.mean_diff = np.ldexp(mean, exponent)
        out.stderr = np.ldexp(se, exponent)
    tol = _ROUNDING * scale
    zero = biggest <= tol
    constant = ~zero & ((ds.max(axis=1) - ds.min(axis=1)) <= np.ldexp(tol, -exponent))   # the range, scaled
    # Zero: indistinguishable runs, the same for every test.
    out.statistic[zero] = 0.0
    out.p_value[zero] = 1.0
    out.mean_diff[zero] = 0.0
    out.stderr[zero] = 0.0
    if test in ("ttest", "bootstrap"):
        out.ci_low[zero] = 0.0
        out.ci_high[zero] = 0.0
        for i in np.flatnonzero(constant):
            out.reason[i] = REASON_NO_VARIANCE
        active = ~zero & ~constant
    else:
        active = ~zero
    if test == "permutation":
        out.exact[zero] = 2 ** n <= permutations
    idx = np.flatnonzero(active)
    if idx.shape[0] == 0:
        return out
    ds, mean, se = ds[idx], mean[idx], se[idx]
    if test == "ttest":
        stat, p, half = _ttest(mean, se, n, alpha)
        lo, hi = mean - half, mean + half
    elif test == "wilcoxon":
        stat, p, exact = _wilcoxon(ds)
        out.exact[idx] = exact
        lo = hi = None
    elif test == "permutation":
        stat, p, exact = _permutation(ds, rng, permutations)
        out.exact[idx] = exact
        stat = np.ldexp(stat, exponent[idx])
        lo = hi = None
    else:
        stat, p, lo, hi = _bootstrap(ds, mean, se, _need_rng(rng, "bootstrap"), permutations, alpha)
    out.statistic[idx] = stat
    out.p_value[idx] = p
    if lo is not None:
        with np.errstate(over="ignore"):                 # an interval reaching beyond float64 ends at -inf / inf
            out.ci_low[idx] = np.ldexp(lo, exponent[idx])
            out.ci_high[idx] = np.ldexp(hi, exponent[idx])
    return out


def _ttest(mean: np.ndarray, se: np.ndarray, n: int, alpha: float):
    from scipy import special

    df = n - 1
    t = mean / se
    p = np.minimum(2.0 * special.stdtr(df, -np.abs(t)), 1.0)
    half = float(special.stdtrit(df, 1.0 - alpha / 2.0)) * se
    return t, p, half


def _need_rng(rng: np.random.Generator | None, test: str) -> np.random.Generator:
    if rng is None:
        raise UsageError(f"the {test} test is random: pass rng=numpy.random.default_rng(seed)")
    return rng


# ---------------------------------------------------------------------------------------------------------------------
# Wilcoxon signed-rank


@cache
def _signed_rank_cdf(m: int) -> np.ndarray:
    """``cdf[k] = P(R+ <= k)`` for the signed-rank sum of ``m`` untied non-zero differences under the null.

    The number of subsets of ``{1, ..., m}`` with sum ``k`` (each sign pattern equally likely), counted exactly in
    int64 (at most ``2 ** 50`` for ``m = 50``) and divided by ``2 ** m``: exact in float64.
    """
    counts = np.zeros(m * (m + 1) // 2 + 1, dtype=np.int64)
    counts[0] = 1
    for r in range(1, m + 1):
        counts[r:] = counts[r:] + counts[:-r].copy()
    return np.cumsum(counts) / float(2 ** m)


def _average_ranks(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Row-wise average ranks (1-based) of ``x`` (rows, n), plus the tie groups: value, size and row of each."""
    rows, n = x.shape
    order = np.argsort(x, axis=1, kind="stable")
    s = np.take_along_axis(x, order, axis=1)
    new = np.ones((rows, n), dtype=bool)
    new[:, 1:] = s[:, 1:] != s[:, :-1]
    flat_new = new.ravel()
    group = np.cumsum(flat_new) - 1                      # a global group id (every row starts a new group)
    first = np.tile(np.arange(n), rows)[flat_new]         # position of each group's first element in its row
    size = np.bincount(group)
    avg = first + (size + 1) / 2.0                        # mean of the ranks first+1 .. first+size
    ranks = np.empty((rows, n))
    np.put_along_axis(ranks, order, avg[group].reshape(rows, n), axis=1)
    group_row = np.repeat(np.arange(rows), n)[flat_new]
    return ranks, s.ravel()[flat_new], size, group_row


def _tied_signed_rank_p(ranks2: np.ndarray, stat2: np.ndarray) -> np.ndarray:
    """Exact two-sided p-values when ranks are tied: ``ranks2`` (rows, m) are twice the average ranks (integers).

    The sum of a random subset of a row's ranks is counted over all ``2 ** m`` subsets, one rank at a time (a
    knapsack count, exact in int64 for ``m <= 50``); ``p = min(1, 2 P(2 R+ <= stat2))``.
    """
    rows, m = ranks2.shape
    top = int(ranks2.sum(axis=1).max())
    counts = np.zeros((rows, top + 1), dtype=np.int64)
    counts[:, 0] = 1
    grid = np.arange(top + 1)
    for i in range(m):
        src = grid[None, :] - ranks2[:, i:i + 1]
        shifted = np.take_along_axis(counts, np.maximum(src, 0), axis=1)
        counts = counts + np.where(src >= 0, shifted, 0)
    below = np.take_along_axis(np.cumsum(counts, axis=1), stat2[:, None], axis=1)[:, 0]
    return np.minimum(1.0, 2.0 * (below / float(2 ** m)))


def _wilcoxon(d: np.ndarray):
    from scipy import special

    rows, n = d.shape
    absd = np.abs(d)
    n_zero = np.count_nonzero(d == 0.0, axis=1)
    m = n - n_zero                                       # >= 1: all-zero rows never get here
    ranks, value, size, group_row = _average_ranks(absd)
    # Zeros are one tie group at the bottom: dropping them shifts every other rank down by their number.
    ranks = ranks - n_zero[:, None]
    r_plus = np.where(d > 0, ranks, 0.0).sum(axis=1)
    r_minus = np.where(d < 0, ranks, 0.0).sum(axis=1)
    stat = np.minimum(r_plus, r_minus)
    nonzero_group = value != 0.0
    tie_term = np.bincount(group_row, weights=np.where(nonzero_group, size ** 3.0 - size, 0.0), minlength=rows)
    tied = np.bincount(group_row, weights=(nonzero_group & (size > 1)), minlength=rows) > 0
    exact = m <= WILCOXON_EXACT_MAX_N
    p = np.empty(rows)
    for mm in np.unique(m[exact]):
        mm = int(mm)
        sel = exact & (m == mm) & ~tied
        if sel.any():
            p[sel] = np.minimum(1.0, 2.0 * _signed_rank_cdf(mm)[stat[sel].astype(np.int64)])
        tied_rows = np.flatnonzero(exact & (m == mm) & tied)
        step = max(1, _CHUNK_ELEMENTS // (mm * (mm + 1) + 1))          # the knapsack counts: (rows, m(m+1) + 1)
        for r0 in range(0, tied_rows.shape[0], step):
            sel = tied_rows[r0:r0 + step]
            # Twice the ranks of the non-zero differences are integers; sorting puts the zeros' entries first.
            ranks2 = np.sort(np.where(d[sel] != 0.0, np.rint(2.0 * ranks[sel]), 0.0), axis=1)[:, n - mm:]
            p[sel] = _tied_signed_rank_p(ranks2.astype(np.int64), np.rint(2.0 * stat[sel]).astype(np.int64))
    approx = ~exact
    if approx.any():
        mf = m[approx].astype(np.float64)
        mn = mf * (mf + 1.0) * 0.25
        var = mf * (mf + 1.0) * (2.0 * mf + 1.0)
        se = np.sqrt((var - tie_term[approx] / 2.0) / 24.0)
        z = (stat[approx] - mn) / se
        p[approx] = np.minimum(1.0, 2.0 * special.ndtr(-np.abs(z)))
    return stat, p, exact


# ---------------------------------------------------------------------------------------------------------------------
# Permutation (sign flip)


def _byte_tables(d: np.ndarray) -> np.ndarray:
    """``T[r, j, v]`` = the sum of ``d[r, 8j + k]`` over the bits ``k`` set in the byte ``v`` (zero-padded).

    A random sign vector is then a row of random bytes, and ``sum(flipped d)`` is a gather of ``n / 8`` table entries
    instead of ``n`` multiply-adds over a float sign matrix: one random bit and one eighth of a lookup per query.
    Built by doubling (the entries for bit ``k`` set are those without it plus ``d[8j + k]``), row by row alike.
    """
    rows, n = d.shape
    nb = (n + 7) // 8
    padded = np.zeros((rows, nb * 8))
    padded[:, :n] = d
    padded = padded.reshape(rows, nb, 8)
    tables = np.zeros((rows, nb, 256))
    for k in range(8):
        width = 1 << k
        tables[:, :, width:2 * width] = tables[:, :, :width] + padded[:, :, k:k + 1]
    return tables


def _count_hits(flat: np.ndarray, codes: np.ndarray, total: np.ndarray, threshold: np.ndarray) -> np.ndarray:
    """Per row, the sign vectors (rows of byte ``codes``) whose ``|sum(s * d)|`` reaches ``threshold``."""
    rows = flat.shape[0]
    k, nb = codes.shape
    where = codes.astype(np.intp) + np.arange(nb, dtype=np.intp) * 256
    step = max(1, _CHUNK_ELEMENTS // max(1, k * nb))
    hits = np.zeros(rows, dtype=np.int64)
    for r0 in range(0, rows, step):
        r1 = min(rows, r0 + step)
        flipped = np.take(flat[r0:r1], where, axis=1).sum(axis=2)       # (rows, k): sum(b * d), bits b = 1 flip
        # With bits b, sum(s * d) = sum(d) - 2 * sum(b * d).
        sums = total[r0:r1, None] - 2.0 * flipped
        hits[r0:r1] = np.count_nonzero(np.abs(sums) >= threshold[r0:r1, None], axis=1)
    return hits


def _permutation(d: np.ndarray, rng, permutations: int):
    rows, n = d.shape
    total = d.sum(axis=1)
    observed = np.abs(total)
    # Sums of the same numbers in another order differ by rounding; a relative tolerance keeps a sign vector that
    # reproduces the observed statistic (the identity, the full flip, swaps of equal values) counted as a hit.
    threshold = observed - 1e-9 * np.abs(d).sum(axis=1)
    tables = _byte_tables(d)
    nb = tables.shape[1]
    flat = tables.reshape(rows, nb * 256)
    hits = np.zeros(rows, dtype=np.int64)
    if n <= _EXACT_MAX_N and 2 ** n <= permutations:
        total_codes = 2 ** n
        step = max(1, _CHUNK_ELEMENTS // nb)
        shifts = np.arange(nb, dtype=np.int64) * 8
        for start in range(0, total_codes, step):
            # Row c holds the bytes of c: over 0 .. 2**n, every sign vector exactly once.
            codes = (np.arange(start, min(total_codes, start + step), dtype=np.int64)[:, None] >> shifts) & 255
            hits += _count_hits(flat, codes, total, threshold)
        return observed, hits / float(total_codes), np.ones(rows, dtype=bool)
    rng = _need_rng(rng, "permutation")
    step = max(1, _CHUNK_ELEMENTS // nb)
    done = 0
    while done < permutations:
        k = min(step, permutations - done)
        codes = rng.integers(0, 256, size=(k, nb), dtype=np.uint8)
        hits += _count_hits(flat, codes, total, threshold)
        done += k
    return observed, (hits + 1) / (permutations + 1), np.zeros(rows, dtype=bool)


# ---------------------------------------------------------------------------------------------------------------------
# Bootstrap (symmetric studentized, null-shifted)


def _largest_count_below(resamples: int, alpha: float) -> int:
    """The largest ``k`` in ``-1 .. resamples`` with ``(k + 1) / (resamples + 1) < alpha``, in float64 exactly as p is
    computed (the predicate is monotone in ``k``): O(1), where counting over ``arange(resamples + 1)`` took 16 bytes
    per resample."""
    below = lambda k: (k + 1) / (resamples + 1) < alpha  # noqa: E731
    k = min(resamples, max(-1, int(math.floor(alpha * (resamples + 1))) - 1))
    while k < resamples and below(k + 1):
        k += 1
    while k >= 0 and not below(k):
        k -= 1
    return k


def _bootstrap(d: np.ndarray, mean: np.ndarray, se: np.ndarray, rng: np.random.Generator, resamples: int,
               alpha: float):
    rows, n = d.shape
    group = max(1, _CHUNK_ELEMENTS // resamples)
    if rows > group:
        # Bound the (rows, resamples) matrix of |t*|: groups of rows, each with the same draws (the generator is
        # rewound), so every row still sees the resamples a single test would.
        state = rng.bit_generator.state
        parts = []
        for g0 in range(0, rows, group):
            rng.bit_generator.state = state
            sl = slice(g0, min(rows, g0 + group))
            parts.append(_bootstrap(d[sl], mean[sl], se[sl], rng, resamples, alpha))
        return tuple(np.concatenate(x) for x in zip(*parts))
    t_obs = mean / se                                    # se > 0: constant rows never get here
    z = d - mean[:, None]                                # centred: the null hypothesis holds for z
    abs_t = np.empty((rows, resamples))
    step = max(1, _CHUNK_ELEMENTS // n)                  # resamples drawn at a time: independent of the rows
    done = 0
    while done < resamples:
        k = min(step, resamples - done)
        idx = rng.integers(0, n, size=(k, n))
        rstep = max(1, _CHUNK_ELEMENTS // (k * n))
        for r0 in range(0, rows, rstep):
            r1 = min(rows, r0 + rstep)
            x = np.take(z[r0:r1], idx, axis=1)           # (rows, k, n), C order: the resampled centred differences
            # Shifted by each resample's first value: a resample of equal values gets exactly zero variance.
            first = x[:, :, 0].copy()
            x -= first[:, :, None]
            s1 = x.sum(axis=2)
            x *= x
            s2 = x.sum(axis=2)
            var = np.maximum(s2 - s1 * s1 / n, 0.0) / (n - 1)
            mu = first + s1 / n
            with np.errstate(divide="ignore", invalid="ignore"):
                t = np.abs(mu) / np.sqrt(var / n)
            t[var == 0.0] = np.inf                       # no variance: as extreme as it gets (also 0 / 0)
            abs_t[r0:r1, done:done + k] = t
        done += k
    hits = np.count_nonzero(abs_t >= np.abs(t_obs)[:, None], axis=1)
    p = (hits + 1) / (resamples + 1)
    # The largest hit count k with (k + 1) / (B + 1) < alpha, computed as p is: p < alpha iff hits <= k.
    k_max = _largest_count_below(resamples, alpha)
    if k_max < 0:
        q = np.full(rows, np.inf)
    else:
        # hits <= k_max iff the (k_max + 1)-th largest |t*| is below |t|: that order statistic is q*.
        pos = resamples - k_max - 1
        q = np.partition(abs_t, pos, axis=1)[:, pos]
    with np.errstate(invalid="ignore"):
        half = q * se
    absmean = np.abs(mean)
    reject = p < alpha
    # Rounding guard: q* se is |mean| within an ulp exactly when |t| is q* within one; keep the interval with the test.
    half = np.where(reject & ~(half < absmean), np.nextafter(absmean, 0.0), half)
    half = np.where(~reject & (half < absmean), absmean, half)
    return t_obs, p, mean - half, mean + half


def adjust_pvalues(p_values: Sequence[float], method: str = "holm") -> np.ndarray:
    """Adjust a family of p-values for multiple testing; returns them in the input order.

    ``holm`` (Holm 1979, step-down, controls the family-wise error rate), ``bonferroni`` (``m * p``), ``bh``
    (Benjamini & Hochberg 1995, step-up, controls the false discovery rate), ``none``. Adjusted values are capped at
    1 and are monotone in the raw ones, as in ``statsmodels.stats.multitest.multipletests``. NaN p-values (tests that
    could not be run) stay NaN and are not counted in the family size ``m``.

    >>> adjust_pvalues([0.01, 0.04, 0.03], "holm").round(4).tolist()
    [0.03, 0.06, 0.06]
    >>> adjust_pvalues([0.01, 0.04, 0.03], "bh").round(4).tolist()
    [0.03, 0.04, 0.04]
    """
    if method not in CORRECTIONS:
        raise UsageError(f"unknown correction {method!r}; choose one of {', '.join(CORRECTIONS)}")
    p = np.asarray(p_values, dtype=np.float64).ravel()
    out = np.full(p.shape, np.nan)
    valid = ~np.isnan(p)
    q = p[valid]
    m = q.shape[0]
    if m == 0:
        return out
    if method == "none":
        adj = q.copy()
    elif method == "bonferroni":
        adj = np.minimum(q * m, 1.0)
    else:
        order = np.argsort(q, kind="stable")
        ranked = q[order]
        i = np.arange(1, m + 1)
        if method == "holm":
            # p_(i) * (m - i + 1), made non-decreasing from the smallest upwards.
            stepped = np.maximum.accumulate(ranked * (m - i + 1))
        else:
            # p_(i) * m / i, made non-increasing from the largest downwards.
            stepped = np.minimum.accumulate((ranked * m / i)[::-1])[::-1]
        adj = np.empty(m)
        adj[order] = np.minimum(stepped, 1.0)
    out[valid] = adj
    return out


def win_tie_loss(a, b, tol: float = 0.0) -> tuple[int, int, int]:
    """Queries where ``a`` beats ``b`` by more than ``tol``, is within ``tol`` of it, and loses by more than ``tol``.

    Pairs where either value is NaN are not counted.

    >>> win_tie_loss([0.5, 0.2, 0.3], [0.4, 0.2, 0.9])
    (1, 1, 1)
    """
    d = np.asarray(a, dtype=np.float64).ravel() - np.asarray(b, dtype=np.float64).ravel()
    d = d[~np.isnan(d)]
    wins = int(np.count_nonzero(d > tol))
    losses = int(np.count_nonzero(d < -tol))
    return wins, int(d.shape[0]) - wins - losses, losses
