"""Query segments and the segment operations everything else is built on.

A batch of queries is a flat array of per-document values plus ``offsets`` (int64, length ``n_queries + 1``):
the documents of query ``q`` are rows ``offsets[q]:offsets[q + 1]``. Every function here works on all queries at
once; none loops over queries in Python. Queries are never empty. Offsets are built from a qid column by
:func:`rankcli.dataset.offsets_from_qids`, where data is read.

Operations that need a per-query sort (ranks, top-k) lay queries out in padded matrices, one per size bucket
(sizes rounded up to a power of two), so that padding wastes at most half of each matrix and numpy sorts many short
rows instead of one global ``lexsort`` (which is ~5x slower on millions of rows).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np


def sizes(offsets: np.ndarray) -> np.ndarray:
    """The number of documents of each query."""
    return np.diff(offsets)


def n_queries(offsets: np.ndarray) -> int:
    """The number of queries that ``offsets`` delimits."""
    return int(offsets.shape[0] - 1)


def query_index(offsets: np.ndarray) -> np.ndarray:
    """The query number of every row (length ``offsets[-1]``)."""
    return np.repeat(np.arange(n_queries(offsets), dtype=np.int64), sizes(offsets))


def segment_sum(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The sum of ``values`` over each query's rows (queries are never empty, so ``reduceat`` is exact)."""
    if offsets.shape[0] <= 1:
        return np.zeros(0, dtype=np.result_type(values.dtype, np.float64))
    return np.add.reduceat(values, offsets[:-1])


def segment_max(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The largest of ``values`` over each query's rows."""
    if offsets.shape[0] <= 1:
        return np.zeros(0, dtype=values.dtype)
    return np.maximum.reduceat(values, offsets[:-1])


def broadcast(per_query: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Repeat one value per query onto each of its rows."""
    return np.repeat(per_query, sizes(offsets))


def segment_softmax(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``exp(v_i) / sum_j exp(v_j)`` within each query, computed stably (the query's maximum subtracted first)."""
    values = np.asarray(values, dtype=np.float64)
    shifted = values - broadcast(segment_max(values, offsets), offsets)
    e = np.exp(shifted)
    return e / broadcast(segment_sum(e, offsets), offsets)


def size_buckets(offsets: np.ndarray) -> Iterator[tuple[np.ndarray, int]]:
    """Yield ``(query numbers, width)`` for groups of queries whose sizes round up to the same power of two."""
    sz = sizes(offsets)
    if sz.shape[0] == 0:
        return
    bucket = np.ceil(np.log2(np.maximum(sz, 1))).astype(np.int64)
    order = np.argsort(bucket, kind="stable")
    b_sorted = bucket[order]
    cuts = np.flatnonzero(b_sorted[1:] != b_sorted[:-1]) + 1
    for qs in np.split(order, cuts):
        yield qs, int(sz[qs].max())


def padded_rows(offsets: np.ndarray, qs: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Row indices of queries ``qs`` as a ``(len(qs), width)`` matrix, and the mask of real (non-padding) cells.

    Padding cells hold the query's first row so that gathering through them is always in bounds.
    """
    cols = np.arange(width, dtype=np.int64)
    start = offsets[qs][:, None]
    valid = cols[None, :] < (offsets[qs + 1] - offsets[qs])[:, None]
    rows = np.where(valid, start + cols[None, :], start)
    return rows, valid


def order_within(scores: np.ndarray, offsets: np.ndarray, descending: bool = True) -> np.ndarray:
    """A permutation of rows: each query's rows sorted by score, equal scores kept in input order (stable).

    ``perm[offsets[q]:offsets[q + 1]]`` are query ``q``'s row numbers, best first when ``descending``.
    """
    scores = np.asarray(scores)
    perm = np.empty(offsets[-1], dtype=np.int64)
    for qs, width in size_buckets(offsets):
        rows, valid = padded_rows(offsets, qs, width)
        keys = scores[rows].astype(np.float64)
        if descending:
            keys = -keys
        keys[~valid] = np.inf  # padding sorts after every real document, stable keeps real ties in input order
        ranked = np.take_along_axis(rows, np.argsort(keys, axis=1, kind="stable"), axis=1)
        dest, _ = padded_rows(offsets, qs, width)
        perm[dest[valid]] = ranked[valid]
    return perm


def rank_within(scores: np.ndarray, offsets: np.ndarray, descending: bool = True) -> np.ndarray:
    """1-based rank of every row within its query (ties broken by input order, as :func:`order_within`)."""
    perm = order_within(scores, offsets, descending)
    ranks = np.empty_like(perm)
    positions = np.arange(perm.shape[0], dtype=np.int64) - broadcast(offsets[:-1], offsets)
    ranks[perm] = positions + 1
    return ranks
