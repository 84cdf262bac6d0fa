"""Each query's documents in rank order: by score, equal scores by document name descending (trec_eval's rule).

Fusion ranks twice: every input run (rank-based methods read its ranks, ``--depth`` its top), and the fused run.
Both orders must not depend on how the documents happen to be numbered (their keys are hashes, seeded per process),
so equal scores are always ordered by the documents' names, descending in byte order, as trec_eval orders a run.
Names are numpy ``S`` strings: they compare as ``strcmp`` compares (no name holds a NUL byte).

Queries are sorted in padded matrices, one per size bucket (:func:`rankcli.core.groups.size_buckets`), by numpy's
unstable row-wise argsort (three to four times faster than a stable one); the order among equal scores is then set
by sorting only the tied documents by name.
"""

from __future__ import annotations

import numpy as np

from rankcli.core.groups import padded_rows, size_buckets


def _boundaries(offsets: np.ndarray, n: int) -> np.ndarray:
    """``cut[i]``: rows ``i`` and ``i + 1`` belong to different segments (length ``n - 1``)."""
    cut = np.zeros(max(n - 1, 0), dtype=bool)
    inner = offsets[1:-1]
    cut[inner[(inner > 0) & (inner < n)] - 1] = True
    return cut


def sort_segments(keys: np.ndarray, offsets: np.ndarray, pad=np.inf) -> np.ndarray:
    """A permutation putting each segment's rows in ascending ``keys``, in any order among equal keys.

    ``pad``: a value above every key (padding cells must sort after the real ones): ``inf`` for finite floats.
    """
    perm = np.empty(keys.shape[0], dtype=np.int64)
    sizes = np.diff(offsets)
    nonempty = np.flatnonzero(sizes > 0)
    compact = np.concatenate(([0], np.cumsum(sizes[nonempty]))).astype(np.int64)
    for qs, width in size_buckets(compact):
        rows, valid = padded_rows(compact, qs, width)
        rows = rows + (offsets[nonempty[qs]] - compact[qs])[:, None]
        mat = keys[rows]
        mat[~valid] = pad  # padding after every real key
        ranked = np.take_along_axis(rows, np.argsort(mat, axis=1), axis=1)
        perm[rows[valid]] = ranked[valid]
    return perm


def group_segments(keys: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each segment's rows with equal uint64 ``keys`` brought together: ``(perm, sorted_keys)``, ``perm`` a
    permutation of the rows, segment by segment, and the keys in that order, their lowest bits cleared.

    The keys' top bits and each cell's column are packed into one uint64 and sorted by value, several times faster
    than an argsort: the column bits come from the low end of the key, so two keys differing only there are grouped
    together (their names are compared by whoever groups, as for any hash collision)."""
    n = keys.shape[0]
    perm = np.empty(n, dtype=np.int64)
    grouped = np.empty(n, dtype=np.uint64)
    sizes = np.diff(offsets)
    nonempty = np.flatnonzero(sizes > 0)
    compact = np.concatenate(([0], np.cumsum(sizes[nonempty]))).astype(np.int64)
    for qs, width in size_buckets(compact):
        bits = np.uint64(max(int(width).bit_length(), 1))  # 2^bits > width: a real cell never packs to all ones
        rows, valid = padded_rows(compact, qs, width)
        base = offsets[nonempty[qs]]
        rows = rows + (base - compact[qs])[:, None]
        packed = keys[rows] >> bits
        packed <<= bits
        packed |= np.arange(width, dtype=np.uint64)[None, :]
        packed[~valid] = np.iinfo(np.uint64).max
        packed.sort(axis=1)
        low = (np.uint64(1) << bits) - np.uint64(1)
        cols = (packed & low).astype(np.int64)
        dest = rows[valid]
        perm[dest] = (cols + base[:, None])[valid]  # a real cell's column, never a padding one's, sorts first
        packed >>= bits
        grouped[dest] = packed[valid]
    return perm, grouped


def break_ties(perm: np.ndarray, keys: np.ndarray, offsets: np.ndarray, names: np.ndarray) -> np.ndarray:
    """``perm`` (each segment's rows in ascending ``keys``) with every group of equal keys in a segment reordered by
    ``names``, descending. Only the tied rows are sorted.

    Parameters
    ----------
    perm : (n,) int64 rows, each segment's in ascending key order. keys : (n,) the sort keys, per row.
    offsets : (n_segments + 1,) segment boundaries. names : (n,) numpy ``S`` names, unique within a segment.
    """
    n = perm.shape[0]
    if n < 2:
        return perm
    sk = keys[perm]
    same = (sk[1:] == sk[:-1]) & ~_boundaries(offsets, n)
    if not same.any():
        return perm
    tied = np.zeros(n, dtype=bool)
    tied[:-1] |= same
    tied[1:] |= same
    idx = np.flatnonzero(tied)
    starts = np.ones(idx.shape[0], dtype=bool)
    starts[1:] = ~same[idx[1:] - 1]  # a tied row not tied to the one before it starts a group
    group = np.cumsum(starts) - 1
    order = np.lexsort((names[perm[idx]], group))  # by group, then name ascending
    first = np.flatnonzero(starts)
    last = np.append(first[1:], idx.shape[0]) - 1
    # descending names: each group's ascending order read backwards
    desc = order[first[group] + last[group] - np.arange(idx.shape[0])]
    out = perm.copy()
    out[idx] = perm[idx][desc]
    return out


def order_within(scores: np.ndarray, offsets: np.ndarray, names: np.ndarray, *, descending: bool = True
                 ) -> np.ndarray:
    """A permutation of the rows: each segment's rows by score (descending unless ``descending`` is False), equal
    scores by name descending in byte order.

    Parameters
    ----------
    scores : (n,) finite float64. offsets : (n_segments + 1,) int64 segment boundaries (empty segments allowed).
    names : (n,) numpy ``S`` document names, unique within a segment.

    Returns
    -------
    (n,) int64: ``perm[offsets[s]:offsets[s + 1]]`` are segment ``s``'s rows, best first.
    """
    scores = np.asarray(scores, dtype=np.float64)
    offsets = np.asarray(offsets, dtype=np.int64)
    n = scores.shape[0]
    keys = -scores if descending else scores
    perm = np.arange(n, dtype=np.int64)
    if n > 1 and ((keys[1:] < keys[:-1]) & ~_boundaries(offsets, n)).any():  # not in order already
        perm = sort_segments(keys, offsets)
    return break_ties(perm, keys, offsets, names)


def ranks_of(perm: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The 1-based rank of every row within its segment, given the order ``perm`` of :func:`order_within`."""
    n = perm.shape[0]
    sizes = np.diff(offsets)
    position = np.arange(n, dtype=np.int64) - np.repeat(offsets[:-1], sizes)
    ranks = np.empty(n, dtype=np.int64)
    ranks[perm] = position + 1
    return ranks
