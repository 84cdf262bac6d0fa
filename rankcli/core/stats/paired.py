"""One paired test, or the same test on many rows at once: the degenerate cases, the scaling, the t-test, and the
dispatch to the Wilcoxon and resampling tests (the definitions are in :mod:`rankcli.core.stats`)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from rankcli.core.stats.resampling import bootstrap, need_rng, permutation
from rankcli.core.stats.wilcoxon import signed_rank
from rankcli.errors import InputError, UsageError

TESTS = ("ttest", "permutation", "wilcoxon", "bootstrap")

#: Why a test could not be run (the ``reason`` of an untestable result).
REASON_TOO_FEW = "fewer than two queries"
REASON_NO_VARIANCE = "all differences are equal (zero variance)"

#: The most resamples the bootstrap takes (``--permutations``): it keeps all their |t*| (80 MB per comparison here).
MAX_RESAMPLES = 10_000_000
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
        """Whether the test could be run (its p-value is a number)."""
        return not math.isnan(self.p_value)

    def as_dict(self) -> dict:
        """The fields as a dict (JSON values)."""
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
    """The test on every row of ``a - b``: the rows too short to test; then those whose differences are all zero (p =
    1) or, for the tests that need a variance, all equal (not testable); then the rest, tested together on
    differences scaled by a power of two so that no square or sum overflows."""
    rows, n = a.shape
    out = _unset(test, rows, n)
    if n == 0 or rows == 0:
        out.reason = [REASON_TOO_FEW] * rows
        return out
    d = _differences(a, b)
    if n < 2:
        out.mean_diff = d[:, 0].copy()
        out.reason = [REASON_TOO_FEW] * rows
        return out
    biggest = np.abs(d).max(axis=1)
    ds, exponent, mean, se = _scaled_moments(d, biggest, out)
    active = _settle_degenerate(out, a, b, biggest, ds, exponent, permutations)
    idx = np.flatnonzero(active)
    if idx.shape[0]:
        _test_rows(out, idx, ds[idx], mean[idx], se[idx], exponent[idx], rng, permutations, alpha)
    return out


def _unset(test: str, rows: int, n: int) -> PairedTestBatch:
    """A batch of ``rows`` results not decided yet: NaN numbers, no interval, not exact, no reason."""
    nan = np.full(rows, np.nan)
    return PairedTestBatch(test, n, nan.copy(), nan.copy(), nan.copy(), nan.copy(), nan.copy(), nan.copy(),
                           np.zeros(rows, dtype=bool), [None] * rows)


def _differences(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a - b``, refused where it overflows float64."""
    with np.errstate(over="ignore"):
        d = a - b
    if not np.isfinite(d).all():
        raise InputError("paired test: a difference a - b overflows float64 (values near 1.8e308); rescale the "
                         "values")
    return d


def _scaled_moments(d: np.ndarray, biggest: np.ndarray, out: PairedTestBatch):
    """``(ds, exponent, mean, se)``: each row of ``d`` scaled by ``2 ** -exponent`` so that its largest |d|,
    ``biggest``, is in [0.5, 1) (exact, and no square or sum overflows), with its mean and standard error on that
    scale; ``out`` gets both on the data's scale."""
    n = d.shape[1]
    exponent = np.frexp(biggest)[1]
    ds = np.ldexp(d, -exponent[:, None])
    mean = ds.mean(axis=1)
    se = ds.std(axis=1, ddof=1) / math.sqrt(n)
    with np.errstate(over="ignore"):                     # a stderr beyond float64 (values near 1e308) is inf
        out.mean_diff = np.ldexp(mean, exponent)
        out.stderr = np.ldexp(se, exponent)
    return ds, exponent, mean, se


def _settle_degenerate(out: PairedTestBatch, a: np.ndarray, b: np.ndarray, biggest: np.ndarray, ds: np.ndarray,
                       exponent: np.ndarray, permutations: int) -> np.ndarray:
    """Decide in ``out`` the rows whose differences are all zero (indistinguishable runs: p = 1 for every test) and,
    for the tests that need a variance, those whose differences are all equal (not testable); return the rows left
    to test. Equal means within rounding of the row's largest |value|."""
    test, n = out.test, out.n
    tol = _ROUNDING * np.maximum(np.abs(a).max(axis=1), np.abs(b).max(axis=1))
    zero = biggest <= tol
    constant = ~zero & ((ds.max(axis=1) - ds.min(axis=1)) <= np.ldexp(tol, -exponent))   # the range, scaled
    out.statistic[zero] = 0.0
    out.p_value[zero] = 1.0
    out.mean_diff[zero] = 0.0
    out.stderr[zero] = 0.0
    if test == "permutation":
        out.exact[zero] = 2 ** n <= permutations
    if test not in ("ttest", "bootstrap"):
        return ~zero
    out.ci_low[zero] = 0.0
    out.ci_high[zero] = 0.0
    for i in np.flatnonzero(constant):
        out.reason[i] = REASON_NO_VARIANCE
    return ~zero & ~constant


def _test_rows(out: PairedTestBatch, idx: np.ndarray, ds: np.ndarray, mean: np.ndarray, se: np.ndarray,
               exponent: np.ndarray, rng, permutations: int, alpha: float) -> None:
    """Run ``out.test`` on the rows ``idx`` of ``out`` (their scaled differences ``ds``, means and standard errors)
    and store the statistic, p-value, exactness and interval, scaled back by ``2 ** exponent``."""
    lo = hi = None
    if out.test == "ttest":
        stat, p, half = _ttest(mean, se, out.n, alpha)
        lo, hi = mean - half, mean + half
    elif out.test == "wilcoxon":
        stat, p, out.exact[idx] = signed_rank(ds)
    elif out.test == "permutation":
        stat, p, out.exact[idx] = permutation(ds, rng, permutations)
        stat = np.ldexp(stat, exponent)
    else:
        stat, p, lo, hi = bootstrap(ds, mean, se, need_rng(rng, "bootstrap"), permutations, alpha)
    out.statistic[idx] = stat
    out.p_value[idx] = p
    if lo is not None:
        with np.errstate(over="ignore"):                 # an interval reaching beyond float64 ends at -inf / inf
            out.ci_low[idx] = np.ldexp(lo, exponent)
            out.ci_high[idx] = np.ldexp(hi, exponent)


def _ttest(mean: np.ndarray, se: np.ndarray, n: int, alpha: float):
    from scipy import special

    df = n - 1
    t = mean / se
    p = np.minimum(2.0 * special.stdtr(df, -np.abs(t)), 1.0)
    half = float(special.stdtrit(df, 1.0 - alpha / 2.0)) * se
    return t, p, half
