"""Condorcet fusion: each query's candidates sorted by pairwise majority votes of the runs, all queries at once.

Condorcet-fuse (Montague & Aslam 2002) orders the documents by a sort whose comparison is the majority vote: ``x``
before ``y`` when at least as many runs rank ``x`` above ``y`` as the other way round (weighted: the runs' weights
are summed instead). A run that lists ``x`` and not ``y`` ranks ``x`` above; a run listing neither does not vote.
When the majority relation is a strict order, every sort gives that order; with a Condorcet cycle or a tied vote the
result depends on the sort, so it is fixed here: a stable bottom-up merge sort, equal votes keeping the earlier
document first, starting from the Borda-fuse order (equal Borda counts by document id descending). ranx sorts the
candidates in the iteration order of a Python set with ``sorted`` and gives a tied vote (and a vote between two
documents a run does not list) to the second document, so the two agree wherever the majority relation is a strict
order. The fused score of the document at position ``i`` (0-based) of ``N`` is ``N - i``.

The merge sort runs on padded matrices of queries (one per size bucket) and merges every pair of blocks of every
query in step: ``2 w`` steps of whole-array operations per block width ``w``, no loop over queries.
"""

from __future__ import annotations

import numpy as np

from rankcli.core.fusion.normalize import Evidence
from rankcli.core.fusion.order import order_within
from rankcli.core.fusion.ranked import bordafuse
from rankcli.core.groups import padded_rows, size_buckets


def _votes(ranks: np.ndarray, weights: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The summed weights of the runs ranking ``x`` above ``y``, and ``y`` above ``x`` (``ranks``: ``(runs, cells)``
    with unlisted documents at a rank below every listed one; ``x``, ``y``: cell indices)."""
    rx, ry = ranks[:, x], ranks[:, y]
    return weights @ (rx < ry), weights @ (ry < rx)


def _merge_pass(seq: np.ndarray, width: int, ranks: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """One pass of the merge sort: every pair of adjacent blocks of ``width`` columns of ``seq`` (cells; -1 is
    padding, always last) merged. ``seq``'s width is a power of two."""
    q, total = seq.shape
    blocks = seq.reshape(q * total // (2 * width), 2, width)
    left, right = blocks[:, 0, :], blocks[:, 1, :]
    m = left.shape[0]
    i = np.zeros(m, dtype=np.int64)
    j = np.zeros(m, dtype=np.int64)
    out = np.empty((m, 2 * width), dtype=seq.dtype)
    rows = np.arange(m)
    for t in range(2 * width):
        a = left[rows, np.minimum(i, width - 1)]
        b = right[rows, np.minimum(j, width - 1)]
        a_gone = (i >= width) | (a < 0)
        b_gone = (j >= width) | (b < 0)
        va, vb = _votes(ranks, weights, np.maximum(a, 0), np.maximum(b, 0))
        take_a = ~a_gone & (b_gone | (va >= vb))
        out[:, t] = np.where(take_a, a, np.where(b_gone, -1, b))
        i += take_a
        j += ~take_a & ~b_gone
    return out.reshape(q, total)


def _sort_bucket(start: np.ndarray, ranks: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Merge-sort the rows of ``start`` (cells in their starting order, -1 padding at the end)."""
    width = 1
    seq = start
    while width < seq.shape[1]:
        seq = _merge_pass(seq, width, ranks, weights)
        width *= 2
    return seq


def condorcet_order(ev: Evidence, weights: np.ndarray) -> np.ndarray:
    """Each query's candidates in Condorcet order: a permutation of the candidates, query by query (see the module
    docstring)."""
    al = ev.aligned
    unlisted = int(al.ranks.max(initial=0)) + 1
    ranks = np.where(al.listed, al.ranks, unlisted)
    weights = np.asarray(weights, dtype=np.float64)
    start = order_within(bordafuse(ev, {}), al.offsets, al.names)
    perm = np.empty_like(start)
    sizes = np.diff(al.offsets)
    nonempty = np.flatnonzero(sizes > 0)
    compact = np.concatenate(([0], np.cumsum(sizes[nonempty]))).astype(np.int64)
    for qs, width in size_buckets(compact):
        rows, valid = padded_rows(compact, qs, width)
        rows = rows + (al.offsets[nonempty[qs]] - compact[qs])[:, None]
        padded = 1 << max(int(width - 1).bit_length(), 0)
        seq = np.full((qs.shape[0], padded), -1, dtype=np.int64)
        seq[:, :width] = np.where(valid, start[rows], -1)
        done = _sort_bucket(seq, ranks, weights)[:, :width]
        perm[rows[valid]] = done[valid]
    return perm


def _scores_from_order(ev: Evidence, perm: np.ndarray) -> np.ndarray:
    al = ev.aligned
    sizes = np.diff(al.offsets)
    position = np.arange(perm.shape[0]) - np.repeat(al.offsets[:-1], sizes)
    out = np.empty(perm.shape[0])
    out[perm] = np.repeat(sizes, sizes) - position
    return out.astype(np.float64)


def condorcet(ev: Evidence, params: dict) -> np.ndarray:
    r"""Condorcet fuse: the candidates sorted by the runs' pairwise majority votes, ``x`` before ``y`` when
    :math:`|\{r : \mathrm{rank}_r(x) < \mathrm{rank}_r(y)\}| \ge |\{r : \mathrm{rank}_r(y) < \mathrm{rank}_r(x)\}|`;
    fused score ``N - i`` at 0-based position ``i`` (see the module docstring for cycles and tied votes).

    Reference: Montague, M. & Aslam, J. A. (2002). Condorcet fusion for improved retrieval. CIKM 2002, 538-548.
    """
    return _scores_from_order(ev, condorcet_order(ev, np.ones(ev.n_runs)))


def w_condorcet(ev: Evidence, params: dict) -> np.ndarray:
    r"""Weighted Condorcet fuse: the candidates sorted by the runs' votes weighted by :math:`w_r`, ``x`` before
    ``y`` when :math:`\sum_{r: \mathrm{rank}_r(x) < \mathrm{rank}_r(y)} w_r \ge \sum_{r: \mathrm{rank}_r(y) <
    \mathrm{rank}_r(x)} w_r`.

    Reference: Montague, M. & Aslam, J. A. (2002). Condorcet fusion for improved retrieval. CIKM 2002, 538-548.
    """
    return _scores_from_order(ev, condorcet_order(ev, np.asarray(params["weights"], dtype=np.float64)))
