"""Query-level partitions of a dataset into parts, for ``rankcli split``: parts balanced in queries, the MSLR fold
rotation, and groups of queries that must stay in one part.

Pure numpy (and scipy for connected components), no I/O. Queries are addressed by position (``0 .. n_queries - 1``).
Everything random comes from the :class:`numpy.random.Generator` passed in.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from rankcli.core.perturb import partition_queries
from rankcli.errors import InputError


class FoldParts(NamedTuple):
    """Which parts (0-based) fold ``k`` trains, validates and tests on."""

    train: list[int]
    valid: int
    test: int


def balanced_sizes(n_units: int, k: int) -> np.ndarray:
    """``k`` part sizes summing to ``n_units`` that differ by at most one: the first ``n_units mod k`` parts hold
    ``ceil(n_units / k)``, the others ``floor(n_units / k)``."""
    base, extra = divmod(int(n_units), int(k))
    return np.array([base + 1] * extra + [base] * (k - extra), dtype=np.int64)


def fold_rotation(k: int) -> list[FoldParts]:
    """The parts of every fold of ``k`` in MSLR-WEB's rotation (parts S1..SK are 0..K-1 here).

    Fold ``f`` (1-based) trains on the ``k - 2`` parts from part ``f`` on, validates on the next and tests on the one
    after, cyclically: for ``k = 5``, Fold1 is S1,S2,S3 / S4 / S5 and Fold2 is S2,S3,S4 / S5 / S1, as MSLR-WEB10K's
    folds are. Every part is the test part of exactly one fold.
    """
    out = []
    for f in range(k):
        order = [(f + j) % k for j in range(k)]
        out.append(FoldParts(order[: k - 2], order[k - 2], order[k - 1]))
    return out


def query_groups(offsets: np.ndarray, row_values: np.ndarray) -> np.ndarray:
    """The group of every query, when rows sharing a value must stay together: the connected components of queries
    linked by a value their rows share (a query's rows are always together).

    Parameters
    ----------
    offsets : the query boundaries (length ``n_queries + 1``).
    row_values : one integer code per row (``0 .. n_values - 1``), e.g. a topic column's codes.

    Returns one group number per query, numbered ``0, 1, ...`` in the order of each group's first query, so that when
    every query is a group of its own, query ``q`` is group ``q``.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    offsets = np.asarray(offsets, dtype=np.int64)
    n_queries = offsets.shape[0] - 1
    codes = np.asarray(row_values, dtype=np.int64)
    n_values = int(codes.max()) + 1 if codes.shape[0] else 0
    query_of_row = np.repeat(np.arange(n_queries, dtype=np.int64), np.diff(offsets))
    n = n_queries + n_values  # nodes: the queries, then the values; an edge joins a row's query and its value
    graph = coo_matrix((np.ones(codes.shape[0], dtype=np.int8), (query_of_row, n_queries + codes)), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    _, first, inverse = np.unique(labels[:n_queries], return_index=True, return_inverse=True)
    rank = np.empty(first.shape[0], dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.shape[0])
    return rank[inverse.reshape(-1)]


def assign_groups(group_sizes: np.ndarray, targets: Sequence[int], rng: np.random.Generator) -> np.ndarray:
    """The part of every group, filling parts towards ``targets`` queries each.

    The groups are taken in a random order, then (stably) largest first; each goes to the part furthest below its
    target (the most queries missing), ties between parts broken by a random order of the parts drawn once. Groups of
    one query therefore fill every part exactly to its target; larger groups leave each part within one group's size
    of it. A part with a target of 0 gets nothing.
    """
    group_sizes = np.asarray(group_sizes, dtype=np.int64)
    order = rng.permutation(group_sizes.shape[0])
    order = order[np.argsort(-group_sizes[order], kind="stable")]
    tie = rng.permutation(len(targets))
    heap = [(-int(t), int(tie[p]), p) for p, t in enumerate(targets)]
    heapq.heapify(heap)
    part = np.empty(group_sizes.shape[0], dtype=np.int64)
    for g in order.tolist():  # a loop over groups, O(groups * log parts): once per split, not a hot path
        missing, rank, p = heapq.heappop(heap)
        part[g] = p
        heapq.heappush(heap, (missing + int(group_sizes[g]), rank, p))
    return part


def partition(n_queries: int, targets: Sequence[int], rng: np.random.Generator,
              groups: np.ndarray | None = None) -> list[np.ndarray]:
    """A random partition of the queries into parts of about ``targets`` queries: one sorted array of query numbers
    per part.

    Without ``groups`` (or when every query is a group of its own) the parts hold exactly ``targets`` queries
    (:func:`rankcli.core.perturb.partition_queries`, the experiment's own splitter). With ``groups`` (one group number
    per query, :func:`query_groups`) the queries of a group stay in one part (:func:`assign_groups`); a part with a
    positive target left without a query is an :class:`InputError`.
    """
    if groups is None or np.unique(groups).shape[0] == n_queries:
        return partition_queries(n_queries, targets, rng)
    groups = np.asarray(groups, dtype=np.int64)
    sizes = np.bincount(groups)
    part_of_group = assign_groups(sizes, targets, rng)
    part_of_query = part_of_group[groups]
    parts = [np.flatnonzero(part_of_query == p).astype(np.int64) for p in range(len(targets))]
    for p, (t, q) in enumerate(zip(targets, parts)):
        if t > 0 and q.shape[0] == 0:
            raise InputError(f"cannot fill {len(targets)} parts with {sizes.shape[0]} groups of queries (the largest "
                             f"holds {int(sizes.max())} of {n_queries} queries): part {p + 1} would be empty; group by "
                             "a finer column, or ask for fewer parts")
    return parts
