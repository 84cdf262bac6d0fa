"""Segment helpers of the preference counts (:mod:`.prefs_counts`), and the per-pair sums of ``m_prefs_pair*.c``
(``rankcli trec_eval -R prefs``, ``-R qrels_prefs``).

trec_eval keeps, per query, a count of preferences for every ordered pair of documents (docid ranks), summed over the
judgment groups, in an ``unsigned short``. ``prefs_pair`` and its variants walk the unordered pairs {lo < hi} with a
count either way: pairs of retrieved documents first (``hi < njr``), then pairs with only ``lo`` retrieved, each
adding count(lo > hi) / (count(lo > hi) + count(hi > lo)), in (lo, hi) order; pairs of unretrieved documents are
counted, adding nothing.
"""

from __future__ import annotations

import numpy as np

#: trec_eval keeps its preference counts per document pair in an ``unsigned short``.
COUNT_WRAP = 1 << 16


def runs(new: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Segments of consecutive elements (``new``: True where one starts): each element's segment, their starts and
    ends."""
    ids = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    return ids, starts, np.append(starts[1:], new.shape[0]) if starts.shape[0] else starts


def changes(*keys: np.ndarray) -> np.ndarray:
    """True where any of the aligned ``keys`` differs from the element before (and at the first element)."""
    n = keys[0].shape[0]
    out = np.zeros(n, dtype=bool)
    if n:
        out[0] = True
        for k in keys:
            out[1:] |= k[1:] != k[:-1]
    return out


def partners(elements: np.ndarray, begin: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (element, partner) with partner in ``[begin, end)`` of its element (``elements``, ``begin``, ``end``
    aligned), element-major."""
    k = np.maximum(end - begin, 0)
    which = np.repeat(np.arange(k.shape[0]), k)
    within = np.arange(which.shape[0]) - np.repeat(np.cumsum(k) - k, k)
    return elements[which], begin[which] + within


def prefix_sums(values: np.ndarray, segment: np.ndarray, n: int, counts: list[np.ndarray]) -> list[np.ndarray]:
    """For each array ``k`` of ``counts``: per segment ``s < n``, the sum of its first ``k[s]`` values added one after
    the other (C's loop; ``segment`` ascending). Rows padded per size class, so that memory stays within twice the
    values."""
    sizes = np.bincount(segment, minlength=n)
    starts = np.cumsum(sizes) - sizes
    out = [np.zeros(n) for _ in counts]
    width_class = np.ceil(np.log2(np.maximum(sizes, 1))).astype(np.int64)
    for c in np.unique(width_class[sizes > 0]):
        rows = np.flatnonzero((width_class == c) & (sizes > 0))
        width = int(sizes[rows].max())
        cols = np.arange(width)
        inside = cols[None, :] < sizes[rows, None]
        padded = np.zeros((rows.shape[0], width))
        padded[inside] = values[(starts[rows, None] + cols[None, :])[inside]]
        running = np.cumsum(padded, axis=1)  # sequential along each row: the C loop's additions, in order
        for k, o in zip(counts, out):
            take = k[rows]
            o[rows] = np.where(take > 0, running[np.arange(rows.shape[0]), np.maximum(take, 1) - 1], 0.0)
    return out


def pair_sums(n: int, query: np.ndarray, r1: np.ndarray, r2: np.ndarray, num_judged_ret: np.ndarray) -> dict:
    """Per query (of ``n``), from every counted preference ``r1 > r2`` of query ``query``: the pairs with a count
    either way among the retrieved (``n_ret``), with at least one retrieved (``n_imp``) and in all (``n_all``), and
    the running sums over the first two kinds (``sum_ret``, ``sum_imp``); see the module docstring."""
    lo, hi, forward = np.minimum(r1, r2), np.maximum(r1, r2), r1 < r2
    order = np.lexsort((hi, lo, query))
    q, lo, hi, forward = query[order], lo[order], hi[order], forward[order]
    _, starts, ends = runs(changes(q, lo, hi))
    fwd = np.add.reduceat(forward.astype(np.int64), starts) if q.shape[0] else np.zeros(0, dtype=np.int64)
    back = (ends - starts - fwd) % COUNT_WRAP
    fwd %= COUNT_WRAP
    pq, plo, phi = q[starts], lo[starts], hi[starts]
    njr = num_judged_ret[pq]
    loop = np.where(phi < njr, 1, np.where(plo < njr, 2, 3))
    counted = (fwd + back) > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        term = fwd / (fwd + back).astype(np.float64)
    summed = np.flatnonzero(counted & (loop < 3))
    summed = summed[np.lexsort((phi[summed], plo[summed], loop[summed], pq[summed]))]
    count = {k: np.bincount(pq[counted & (loop <= k)], minlength=n) for k in (1, 2, 3)}
    sum_ret, sum_imp = prefix_sums(term[summed], pq[summed], n, [count[1], count[2]])
    return {"n_ret": count[1], "n_imp": count[2], "n_all": count[3], "sum_ret": sum_ret, "sum_imp": sum_imp}
