"""The resampling tests of :mod:`rankcli.core.stats`: the paired sign-flip permutation test and the symmetric
studentized bootstrap, vectorised over rows (data sets) that share one set of random draws.
"""

from __future__ import annotations

import math

import numpy as np

from rankcli.errors import UsageError

#: Work on at most this many matrix elements at a time in the resampling tests (~32 MB of float64).
CHUNK_ELEMENTS = 4_000_000
# Enumerate all 2**n sign vectors only up to this n (2**20 vectors x 20 queries is still small).
_EXACT_MAX_N = 20


def need_rng(rng: np.random.Generator | None, test: str) -> np.random.Generator:
    """``rng``, or a :class:`~rankcli.errors.UsageError` naming the random ``test`` that needs one."""
    if rng is None:
        raise UsageError(f"the {test} test is random: pass rng=numpy.random.default_rng(seed)")
    return rng


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
    step = max(1, CHUNK_ELEMENTS // max(1, k * nb))
    hits = np.zeros(rows, dtype=np.int64)
    for r0 in range(0, rows, step):
        r1 = min(rows, r0 + step)
        flipped = np.take(flat[r0:r1], where, axis=1).sum(axis=2)       # (rows, k): sum(b * d), bits b = 1 flip
        # With bits b, sum(s * d) = sum(d) - 2 * sum(b * d).
        sums = total[r0:r1, None] - 2.0 * flipped
        hits[r0:r1] = np.count_nonzero(np.abs(sums) >= threshold[r0:r1, None], axis=1)
    return hits



def permutation(d: np.ndarray, rng: np.random.Generator | None, permutations: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The two-sided paired sign-flip test of ``|sum(d)|`` on every row of ``d``.

    Parameters
    ----------
    d : (rows, n) float64 paired differences (scaled so that no sum overflows).
    rng : the generator of the random sign vectors (not needed when every sign vector is enumerated).
    permutations : random sign vectors; when ``2 ** n <= permutations`` (and ``n <= 20``) all are enumerated.

    Returns
    -------
    ``(statistic, p_value, exact)``, each of length ``rows``.
    """
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
        step = max(1, CHUNK_ELEMENTS // nb)
        shifts = np.arange(nb, dtype=np.int64) * 8
        for start in range(0, total_codes, step):
            # Row c holds the bytes of c: over 0 .. 2**n, every sign vector exactly once.
            codes = (np.arange(start, min(total_codes, start + step), dtype=np.int64)[:, None] >> shifts) & 255
            hits += _count_hits(flat, codes, total, threshold)
        return observed, hits / float(total_codes), np.ones(rows, dtype=bool)
    rng = need_rng(rng, "permutation")
    step = max(1, CHUNK_ELEMENTS // nb)
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


def bootstrap(d: np.ndarray, mean: np.ndarray, se: np.ndarray, rng: np.random.Generator, resamples: int,
              alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The symmetric studentized bootstrap test of the mean, null-shifted, on every row of ``d``.

    Parameters
    ----------
    d : (rows, n) float64 paired differences, each row with variance (``se > 0``).
    mean, se : (rows,) their means and standard errors.
    rng : the generator of the resamples (rewound for each group of rows: every row sees the same resamples).
    resamples : how many resamples ``B``.
    alpha : the level whose interval is inverted (it excludes 0 exactly when ``p < alpha``).

    Returns
    -------
    ``(statistic, p_value, ci_low, ci_high)``, each of length ``rows``.
    """
    rows = d.shape[0]
    group = max(1, CHUNK_ELEMENTS // resamples)
    if rows > group:
        return _in_row_groups(d, mean, se, rng, resamples, alpha, group)
    t_obs = mean / se                                    # se > 0: constant rows never get here
    abs_t = _resampled_abs_t(d - mean[:, None], rng, resamples)  # centred: the null hypothesis holds for them
    hits = np.count_nonzero(abs_t >= np.abs(t_obs)[:, None], axis=1)
    p = (hits + 1) / (resamples + 1)
    lo, hi = _inverted_interval(abs_t, mean, se, p, alpha)
    return t_obs, p, lo, hi


def _in_row_groups(d: np.ndarray, mean: np.ndarray, se: np.ndarray, rng: np.random.Generator, resamples: int,
                   alpha: float, group: int) -> tuple[np.ndarray, ...]:
    """:func:`bootstrap` on ``group`` rows at a time, to bound the (rows, resamples) matrix of |t*|: the generator is
    rewound for each group, so every row still sees the resamples a single test would."""
    state = rng.bit_generator.state
    parts = []
    for g0 in range(0, d.shape[0], group):
        rng.bit_generator.state = state
        sl = slice(g0, min(d.shape[0], g0 + group))
        parts.append(bootstrap(d[sl], mean[sl], se[sl], rng, resamples, alpha))
    return tuple(np.concatenate(x) for x in zip(*parts))


def _resampled_abs_t(z: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """(rows, resamples): |t*| of each resample of the rows of the centred differences ``z``, drawn a chunk of
    resamples at a time (the same draws for every row) and computed a block of rows at a time."""
    rows, n = z.shape
    abs_t = np.empty((rows, resamples))
    step = max(1, CHUNK_ELEMENTS // n)                  # resamples drawn at a time: independent of the rows
    done = 0
    while done < resamples:
        k = min(step, resamples - done)
        idx = rng.integers(0, n, size=(k, n))
        rstep = max(1, CHUNK_ELEMENTS // (k * n))
        for r0 in range(0, rows, rstep):
            r1 = min(rows, r0 + rstep)
            abs_t[r0:r1, done:done + k] = _abs_t(np.take(z[r0:r1], idx, axis=1))
        done += k
    return abs_t


def _abs_t(x: np.ndarray) -> np.ndarray:
    """(rows, k): |t| of the mean of each resample ``x[r, j]`` (an (rows, k, n) C-order array, overwritten)."""
    n = x.shape[2]
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
    t[var == 0.0] = np.inf                               # no variance: as extreme as it gets (also 0 / 0)
    return t


def _inverted_interval(abs_t: np.ndarray, mean: np.ndarray, se: np.ndarray, p: np.ndarray,
                       alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """``(ci_low, ci_high)``: mean -/+ q* se, q* the order statistic of the |t*| at which ``p`` crosses ``alpha``,
    so that the interval excludes 0 exactly when ``p < alpha``."""
    rows, resamples = abs_t.shape
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
    return mean - half, mean + half
