"""Paired significance tests over per-query metric values, multiple-testing corrections, win/tie/loss counts.

Pure numpy + scipy: no I/O, no printing. Every test works on the per-query differences ``d = a - b`` of two runs
evaluated on the same queries (``a[i]`` and ``b[i]`` belong to the same query).

Tests (``paired_test(..., test=...)``), all two-sided:

``ttest``
    Student's paired t-test, the paper's test: ``t = mean(d) / (sd(d) / sqrt(n))`` with ``n - 1`` degrees of freedom;
    identical to :func:`scipy.stats.ttest_rel`. Also reports the t confidence interval of the mean difference.
``permutation``
    Paired randomization (sign-flip) test (Fisher; Smucker, Allan & Carterette, CIKM 2007). Under the null hypothesis
    the two runs are exchangeable within each query, so each difference's sign is a fair coin. The statistic is
    ``|sum(d)|``; ``permutations`` random sign vectors are drawn (seeded generator) and
    ``p = (hits + 1) / (permutations + 1)`` where ``hits`` counts sign vectors whose ``|sum(s * d)|`` is at least the
    observed one (a valid p-value that is never 0; Phipson & Smyth 2010). When ``2 ** n <= permutations`` every sign
    vector is enumerated instead and ``p = hits / 2 ** n`` exactly (the identity is one of them, so ``p > 0``); the
    result's ``test`` field then reads ``permutation`` and ``exact`` is True.
``wilcoxon``
    Wilcoxon signed-rank test, :func:`scipy.stats.wilcoxon` with its defaults (zero differences dropped, exact
    distribution for small samples without ties, normal approximation otherwise). The statistic is scipy's (the
    smaller of the positive and negative rank sums).
``bootstrap``
    Bootstrap over queries (Efron & Tibshirani 1993; Sakai, SIGIR 2006): ``permutations`` resamples of the ``n``
    queries with replacement (seeded). The confidence interval is the percentile interval of the resampled mean
    differences at ``confidence``. The p-value is the one that interval inverts: with ``B`` resamples of which
    ``lo`` have a mean difference ``<= 0`` and ``hi`` have one ``>= 0``,
    ``p = min(1, 2 * (min(lo, hi) + 1) / (B + 1))`` (the +1, as in the permutation test, keeps it above 0); so
    ``p < 1 - confidence`` when the percentile interval excludes 0, up to ``2 / (B + 1)`` and the interpolation of
    the interval's end points. The statistic is the mean difference.

Degenerate cases (decided here, the same for every test):

* fewer than two queries: nothing can be tested; ``statistic``, ``p_value`` and ``stderr`` are NaN (``mean_diff`` is
  the single difference, or NaN for no query). A NaN p-value is never significant, and :func:`adjust_pvalues` leaves
  it NaN and out of the family.
* all differences zero (e.g. a run compared with itself): the runs are indistinguishable, ``statistic = 0`` and
  ``p_value = 1``; never significant.
* all differences equal and non-zero (zero variance, every query moved by the same amount): the t statistic is
  ``+-inf`` and its p-value 0; the other tests are computed as usual.

Effect size: ``mean_diff = mean(a - b)`` and its standard error ``stderr = sd(a - b) / sqrt(n)`` (``ddof=1``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

from rankcli.errors import InputError, UsageError

TESTS = ("ttest", "permutation", "wilcoxon", "bootstrap")
CORRECTIONS = ("holm", "bonferroni", "bh", "none")

# Work on at most this many matrix elements at a time in the resampling tests (~32 MB of float64).
_CHUNK_ELEMENTS = 4_000_000
# Enumerate all 2**n sign vectors only up to this n (2**20 vectors x 20 queries is still small).
_EXACT_MAX_N = 20


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
    exact: bool = False          # permutation test by full enumeration of the sign vectors

    @property
    def testable(self) -> bool:
        return not math.isnan(self.p_value)

    def as_dict(self) -> dict:
        return asdict(self)


def _as_pair(a, b) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise UsageError(f"paired test needs two vectors of the same length, got {a.shape[0]} and {b.shape[0]}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise InputError("paired test needs finite values; drop the queries without a value (NaN) first")
    return a, b


def paired_test(a: np.ndarray, b: np.ndarray, test: str = "ttest", *, rng: np.random.Generator | None = None,
                permutations: int = 10000, confidence: float = 0.95) -> PairedTestResult:
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
        Level of the confidence interval (``ttest`` and ``bootstrap``).

    Examples
    --------
    >>> r = paired_test([0.5, 0.6, 0.7, 0.8], [0.4, 0.6, 0.5, 0.6])
    >>> round(r.mean_diff, 3), round(r.p_value, 4)
    (0.125, 0.0796)
    """
    if test not in TESTS:
        raise UsageError(f"unknown test {test!r}; choose one of {', '.join(TESTS)}")
    if permutations < 1:
        raise UsageError(f"permutations must be at least 1, got {permutations}")
    if not 0.0 < confidence < 1.0:
        raise UsageError(f"confidence must be between 0 and 1, got {confidence}")
    a, b = _as_pair(a, b)
    d = a - b
    n = int(d.shape[0])
    nan = float("nan")
    if n == 0:
        return PairedTestResult(test, nan, nan, nan, nan, 0)
    mean_diff = float(d.mean())
    if n < 2:
        return PairedTestResult(test, nan, nan, mean_diff, nan, n)
    sd = float(d.std(ddof=1))
    stderr = sd / math.sqrt(n)
    if not np.any(d):
        ci = (0.0, 0.0) if test in ("ttest", "bootstrap") else (None, None)
        return PairedTestResult(test, 0.0, 1.0, 0.0, 0.0, n, *ci, exact=test == "permutation" and 2 ** n <= permutations)
    if test == "ttest":
        return _ttest(d, mean_diff, stderr, n, confidence)
    if test == "wilcoxon":
        from scipy import stats

        res = stats.wilcoxon(d)
        return PairedTestResult(test, float(res.statistic), float(res.pvalue), mean_diff, stderr, n)
    if test == "permutation":
        return _permutation(d, mean_diff, stderr, n, rng, permutations)
    return _bootstrap(d, mean_diff, stderr, n, rng, permutations, confidence)


def _ttest(d: np.ndarray, mean_diff: float, stderr: float, n: int, confidence: float) -> PairedTestResult:
    from scipy import stats

    df = n - 1
    if stderr == 0.0:
        # Every difference is the same non-zero value: no variance, the evidence is as strong as it gets.
        t = math.copysign(math.inf, mean_diff)
        return PairedTestResult("ttest", t, 0.0, mean_diff, 0.0, n, mean_diff, mean_diff)
    t = mean_diff / stderr
    p = float(2.0 * stats.t.sf(abs(t), df))
    half = float(stats.t.ppf(0.5 + confidence / 2.0, df)) * stderr
    return PairedTestResult("ttest", float(t), min(p, 1.0), mean_diff, stderr, n, mean_diff - half, mean_diff + half)


def _need_rng(rng: np.random.Generator | None, test: str) -> np.random.Generator:
    if rng is None:
        raise UsageError(f"the {test} test is random: pass rng=numpy.random.default_rng(seed)")
    return rng


def _byte_tables(d: np.ndarray) -> np.ndarray:
    """``T[j, v]`` = the sum of ``d[8j + k]`` over the bits ``k`` set in the byte ``v`` (``d`` padded with zeros).

    A random sign vector is then a row of random bytes, and ``sum(flipped d)`` is a gather of ``n / 8`` table entries
    instead of ``n`` multiply-adds over a float sign matrix: one random bit and one eighth of a lookup per query.
    """
    nb = (d.shape[0] + 7) // 8
    padded = np.zeros(nb * 8)
    padded[: d.shape[0]] = d
    bits = (np.arange(256)[:, None] >> np.arange(8)) & 1          # (256, 8): bit k of byte value v
    return padded.reshape(nb, 8) @ bits.T.astype(np.float64)       # (nb, 256)


def _all_signs(n: int, start: int, stop: int) -> np.ndarray:
    # Row r holds the binary digits of start + r: over 0 .. 2**n, every sign vector exactly once.
    codes = np.arange(start, stop, dtype=np.int64)[:, None]
    bits = (codes >> np.arange(n, dtype=np.int64)) & 1
    return 1.0 - 2.0 * bits


def _permutation(d, mean_diff, stderr, n, rng, permutations) -> PairedTestResult:
    observed = abs(float(d.sum()))
    # Sums of the same numbers in another order differ by rounding; a relative tolerance keeps a sign vector that
    # reproduces the observed statistic (the identity, the full flip, swaps of equal values) counted as a hit.
    tol = 1e-9 * float(np.abs(d).sum())
    if n <= _EXACT_MAX_N and 2 ** n <= permutations:
        total = 2 ** n
        chunk = max(1, _CHUNK_ELEMENTS // n)
        hits = 0
        for start in range(0, total, chunk):
            sums = _all_signs(n, start, min(total, start + chunk)) @ d
            hits += int(np.count_nonzero(np.abs(sums) >= observed - tol))
        return PairedTestResult("permutation", observed, hits / 2 ** n, mean_diff, stderr, n, exact=True)
    rng = _need_rng(rng, "permutation")
    # With bits b (1 = flip), sum(s * d) = sum(d) - 2 * sum(b * d); sum(b * d) is read from per-byte tables.
    tables = _byte_tables(d)
    nb = tables.shape[0]
    flat = tables.ravel()
    base = np.arange(nb, dtype=np.intp) * 256
    total = float(d.sum())
    chunk = max(1, _CHUNK_ELEMENTS // nb)
    hits = 0
    done = 0
    while done < permutations:
        rows = min(chunk, permutations - done)
        codes = rng.integers(0, 256, size=(rows, nb), dtype=np.uint8)
        flipped = flat[codes + base].sum(axis=1)
        hits += int(np.count_nonzero(np.abs(total - 2.0 * flipped) >= observed - tol))
        done += rows
    return PairedTestResult("permutation", observed, (hits + 1) / (permutations + 1), mean_diff, stderr, n)


def _bootstrap(d, mean_diff, stderr, n, rng, resamples, confidence) -> PairedTestResult:
    rng = _need_rng(rng, "bootstrap")
    chunk = max(1, _CHUNK_ELEMENTS // n)
    means = np.empty(resamples, dtype=np.float64)
    done = 0
    while done < resamples:
        rows = min(chunk, resamples - done)
        idx = rng.integers(0, n, size=(rows, n))
        means[done:done + rows] = d[idx].mean(axis=1)
        done += rows
    lo = int(np.count_nonzero(means <= 0.0))
    hi = int(np.count_nonzero(means >= 0.0))
    p = min(1.0, 2.0 * (min(lo, hi) + 1) / (resamples + 1))
    tail = (1.0 - confidence) / 2.0
    ci_low, ci_high = (float(x) for x in np.quantile(means, [tail, 1.0 - tail]))
    return PairedTestResult("bootstrap", mean_diff, p, mean_diff, stderr, n, ci_low, ci_high)


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
