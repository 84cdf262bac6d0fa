"""The Wilcoxon signed-rank test, pinned here rather than left to the installed scipy (see :mod:`rankcli.core.stats`).

Exact null distribution up to :data:`WILCOXON_EXACT_MAX_N` non-zero differences (a subset-sum count, with or without
tied ranks), the normal approximation with the tie correction beyond.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from rankcli.core.stats import resampling

# The Wilcoxon test uses the exact null distribution up to this many non-zero differences.
WILCOXON_EXACT_MAX_N = 50


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



def signed_rank(d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The two-sided Wilcoxon signed-rank test on every row of ``d``.

    Parameters
    ----------
    d : (rows, n) float64 paired differences, each row with at least one non-zero difference (zeros are dropped).

    Returns
    -------
    ``(statistic, p_value, exact)``, each of length ``rows``: ``min(R+, R-)``, its two-sided p-value and whether it
    comes from the exact distribution.
    """
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
        step = max(1, resampling.CHUNK_ELEMENTS // (mm * (mm + 1) + 1))  # knapsack counts: (rows, m(m+1) + 1)
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
