"""``rankcli trec_eval``'s interpolated precision at recall levels (``m_iprec_at_recall.c``, ``m_11pt_avg.c``) and
precision at multiples of R (``m_Rprec_mult.c``).

trec_eval walks each ranking from the bottom up, keeping the best precision seen (``int_precis``) and a pointer into
its cutoffs (highest first): a cutoff of c relevant documents takes ``int_precis`` when the walk meets the c-th
relevant document, a cutoff above the relevant retrieved takes 0, and the cutoffs the walk never met (0, or after a
cutoff out of order: ``11pt_avg`` does not sort its levels) take ``int_precis`` at the end. :func:`_walk` replays
that pointer for every query at once; precision at a rank is ``rel_so_far / rank`` as trec_eval divides.
"""

from __future__ import annotations

import numpy as np

from rankcli.core.trec_eval.chunk import Chunk, divide


def _lround(x: np.ndarray) -> np.ndarray:
    """C's ``lround``: halves away from zero."""
    return (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(np.int64)


def _shift(ch: Chunk) -> np.ndarray:
    """What turns the running count of relevant documents into trec_eval's ``rel_so_far`` on reaching each rank
    from below, the last rank holding ``num_rel_ret``: 0 but under ``-l`` < 0, where a non-pool document counts as
    relevant in the walk but not in num_rel_ret."""
    total = ch.relcum[:, -1] if ch.rel.shape[1] else np.zeros(ch.n, dtype=np.int64)
    return ch.num_rel_ret - total


def _suffix_max(rows: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Per cell (``rows``: each cell's row, cells of a row adjacent and in column order), the largest of ``values``
    at it and after it in its row."""
    if not rows.shape[0]:
        return values
    count = np.bincount(rows, minlength=n)
    within = np.arange(rows.shape[0]) - np.repeat(np.cumsum(count) - count, count)
    table = np.full((n, int(count.max())), -np.inf)
    table[rows, within] = values
    return np.maximum.accumulate(table[:, ::-1], axis=1)[:, ::-1][rows, within]


def _walk(ch: Chunk, cuts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The value of each cutoff (``cuts``: (queries, m) numbers of relevant documents) and whether trec_eval's
    11pt_avg adds it to its sum (a cutoff skipped at the start is not added).

    The best precision at or below a rank is the best at the relevant ranks at or below it, where rel_so_far is
    positive: at a rank between two relevant ones, rel_so_far is that of the relevant rank above and the rank
    larger. So precision is computed at the relevant ranks only."""
    n, m = cuts.shape
    with np.errstate(invalid="ignore", divide="ignore"):
        start = ch.num_rel_ret / ch.num_ret.astype(np.float64)
    rows, cols = np.nonzero(ch.isrel)
    so_far = ch.relcum[rows, cols] + _shift(ch)[rows]
    visited = so_far > 0
    rows, cols, so_far = rows[visited], cols[visited], so_far[visited]
    best = _suffix_max(rows, divide(so_far, ch.ranks[cols]), n)
    best = np.where(np.isnan(start[rows]), start[rows], np.maximum(best, start[rows]))
    whole = np.full(n, -np.inf)
    np.maximum.at(whole, rows, best)  # the best over each whole row (at its first cell)
    final = np.where(np.isnan(start), start, np.maximum(whole, start))
    top = int(ch.num_rel_ret.max()) if n else 0
    event = np.zeros((n, top + 1))
    event[rows, so_far] = best
    skipped = np.logical_and.accumulate((cuts > ch.num_rel_ret[:, None])[:, ::-1], axis=1)[:, ::-1]
    values = np.zeros((n, m))
    previous = ch.num_rel_ret.copy()
    stuck = np.zeros(n, dtype=bool)
    for j in range(m - 1, -1, -1):
        c = cuts[:, j]
        active = ~skipped[:, j]
        match = active & ~stuck & (c >= 1) & (c <= previous)
        values[match, j] = event[np.flatnonzero(match), c[match]]
        previous = np.where(match, c, previous)
        stuck |= active & ~match
        late = active & ~match
        values[late, j] = final[late]
    return values, ~skipped


def _walk_levels(ch: Chunk, levels) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_walk` at the cutoffs of recall ``levels``, once per chunk and levels (iprec_at_recall and 11pt_avg
    share their default levels)."""
    key = ("walk", tuple(levels))
    if key not in ch.cache:
        cuts = _lround(np.asarray(levels, dtype=np.float64)[None, :] * ch.num_rel[:, None].astype(np.float64))
        ch.cache[key] = _walk(ch, cuts)
    return ch.cache[key]


def iprec_at_recall(ch: Chunk, levels):
    """``m_iprec_at_recall.c``: at each recall level x, the best precision at or below the rank of the
    lround(x R)-th relevant document (0 when fewer are retrieved); NaN for a query with nothing retrieved."""
    return _walk_levels(ch, levels)[0]


def pt11_avg(ch: Chunk, levels):
    """``m_11pt_avg.c``: the interpolated precisions at the levels (given order), summed from the last level to the
    first as trec_eval adds them, over the number of levels."""
    values, added = _walk_levels(ch, levels)
    total = np.zeros(ch.n)
    for j in range(values.shape[1] - 1, -1, -1):
        total = total + np.where(added[:, j], values[:, j], 0.0)
    return total / float(len(levels))


def Rprec_mult(ch: Chunk, multiples):  # noqa: N802 (trec_eval's name)
    """``m_Rprec_mult.c``: precision at rank (long)(x R + 0.9) for each multiple x (beyond the documents
    retrieved: relevant retrieved / that rank)."""
    cuts = (np.asarray(multiples, dtype=np.float64)[None, :] * ch.num_rel[:, None].astype(np.float64) + 0.9)
    cuts = np.trunc(cuts).astype(np.int64)
    shift = _shift(ch)
    out = np.zeros(cuts.shape)
    for j in range(cuts.shape[1]):
        c = cuts[:, j]
        beyond = c > ch.num_ret
        inside = ~beyond & (c >= 1)
        rows = np.flatnonzero(inside)
        counts = ch.relcum[rows, c[inside] - 1] + shift[rows] if rows.shape[0] else np.zeros(0, dtype=np.int64)
        out[rows, j] = np.where(counts > 0, divide(counts, c[inside].astype(np.float64)), 0.0)
        out[beyond, j] = divide(ch.num_rel_ret[beyond], c[beyond].astype(np.float64))
    return out
