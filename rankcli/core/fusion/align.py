"""Several runs' documents aligned per query: the candidates of a fusion and what every run says about each.

A run comes as :class:`RunRows`: its rows grouped by query (``offsets``), each row a document's key, name and score.
:func:`align` gives the union of the runs' documents per query, the *candidates*, as :class:`Aligned`: matrices of
shape ``(runs, candidates)`` holding each run's score and rank of each candidate (and whether it lists it at all).

How, without a loop over queries: every run's rows are laid out query by query (run 0's rows of a query, then run
1's, ...) by index arithmetic on the runs' offsets; each query's rows are sorted by document key in padded matrices
(:mod:`rankcli.core.fusion.order`), equal keys are one candidate. Keys are 64-bit hashes of the names: two names of a
query with one hash would be one candidate, so the names of every candidate's rows are compared, and on a collision
the keys are replaced by the names' ranks among all names (exact, slower) and the alignment done again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rankcli.core.fusion.order import group_segments, order_within, ranks_of
from rankcli.errors import InputError


@dataclass
class RunRows:
    """One run, rows grouped by query.

    ``queries`` (int64, one per query of the run, distinct) numbers the queries in the fusion's numbering
    (``0..n_queries-1``); rows ``offsets[j]:offsets[j + 1]`` are query ``queries[j]``'s. Per row: ``keys`` (uint64;
    equal names have equal keys), ``names`` (numpy ``S``; unique within a query), ``scores`` (finite float64) and
    optionally ``labels`` (carried along, for a fused run that keeps them). ``label`` names the run in errors.
    """

    queries: np.ndarray
    offsets: np.ndarray
    keys: np.ndarray
    names: np.ndarray
    scores: np.ndarray
    label: str = ""
    labels: np.ndarray | None = None

    @property
    def n_rows(self) -> int:
        """The number of rows."""
        return int(self.scores.shape[0])

    def ranks(self, *, ascending: bool = False) -> np.ndarray:
        """Each row's 1-based rank in its query: score descending (ascending when ``ascending``), equal scores by
        name descending."""
        perm = order_within(self.scores, self.offsets, self.names, descending=not ascending)
        return ranks_of(perm, self.offsets)

    def top(self, depth: int, ranks: np.ndarray) -> tuple[RunRows, np.ndarray]:
        """The run cut to each query's ``depth`` best rows (by ``ranks``), and their ranks."""
        keep = ranks <= depth
        if keep.all():
            return self, ranks
        sizes = np.add.reduceat(keep.astype(np.int64), self.offsets[:-1]) if self.n_rows else np.zeros(0, np.int64)
        offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        return RunRows(self.queries, offsets, self.keys[keep], self.names[keep], self.scores[keep], self.label,
                       None if self.labels is None else self.labels[keep]), ranks[keep]


@dataclass
class Aligned:
    """The candidates of every query and each run's evidence about them.

    ``offsets`` (``n_queries + 1``): query ``q``'s candidates are columns ``offsets[q]:offsets[q + 1]`` (a query no
    run lists has none). ``names`` (``S``) per candidate. Per run and candidate (``(runs, candidates)``): ``listed``
    and ``ranks`` (1-based, int32, 0 where not listed).
    ``lengths`` (``(runs, n_queries)``): how many documents each run lists for each query. ``columns[r]``: the
    candidate of each of run ``r``'s rows.
    """

    offsets: np.ndarray
    names: np.ndarray
    listed: np.ndarray
    ranks: np.ndarray
    lengths: np.ndarray
    columns: list[np.ndarray]

    @property
    def n_runs(self) -> int:
        """The number of runs."""
        return int(self.listed.shape[0])

    @property
    def n_candidates(self) -> int:
        """The number of candidates (all queries)."""
        return int(self.names.shape[0])

    def per_candidate(self, per_query: np.ndarray) -> np.ndarray:
        """A per-query array (last axis: queries) repeated onto each query's candidates."""
        return np.repeat(per_query, np.diff(self.offsets), axis=-1)


def _layout(runs: Sequence[RunRows], n_queries: int) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Where each run's rows go when the rows of all runs are laid out query by query, run by run within a query:
    the layout's query offsets, the per-(run, query) counts and each run's destination indices."""
    counts = np.zeros((n_queries, len(runs)), dtype=np.int64)
    for r, run in enumerate(runs):
        counts[run.queries, r] = np.diff(run.offsets)
    start = np.concatenate(([0], np.cumsum(counts.ravel())))[:-1].reshape(counts.shape)
    dests = []
    for r, run in enumerate(runs):
        sizes = np.diff(run.offsets)
        base = np.repeat(start[run.queries, r] - run.offsets[:-1], sizes)
        dests.append(base + np.arange(run.n_rows, dtype=np.int64))
    offsets = np.concatenate(([0], np.cumsum(counts.sum(axis=1)))).astype(np.int64)
    return offsets, counts.T.copy(), dests


def _group(keys: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Candidates from the laid-out rows: each row's candidate (numbered query by query, by key) and the candidates'
    query offsets."""
    n = keys.shape[0]
    perm, sk = group_segments(keys, offsets)
    new = np.ones(n, dtype=bool)
    new[1:] = sk[1:] != sk[:-1]
    new[offsets[:-1][offsets[:-1] < n]] = True
    cand = np.empty(n, dtype=np.int64)
    cand[perm] = np.cumsum(new) - 1
    cand_offsets = np.concatenate(([0], np.cumsum(new)))[offsets].astype(np.int64)
    return cand, cand_offsets


def words(names: np.ndarray) -> np.ndarray:
    """Names (numpy ``S``) as ``(n, w)`` uint64 words of their bytes, NUL-padded (a view when the width allows)."""
    width = names.dtype.itemsize
    if width % 8:
        names = names.astype(f"S{width + 8 - width % 8}")
    return np.ascontiguousarray(names).view(np.uint64).reshape(names.shape[0], -1)


def _same_names(run_names: np.ndarray, cand_words: np.ndarray, col: np.ndarray) -> bool:
    """Whether every row's name is its candidate's (compared as words: the candidates' may be wider)."""
    mine = words(run_names)
    theirs = cand_words[col]
    w = mine.shape[1]
    return bool((mine == theirs[:, :w]).all() and not theirs[:, w:].any())


def _exact_keys(runs: Sequence[RunRows]) -> list[np.ndarray]:
    """Keys that are equal exactly when names are: each name's number among all the runs' distinct names."""
    width = max(run.names.dtype.itemsize for run in runs)
    names = np.concatenate([run.names.astype(f"S{width}") for run in runs])
    _, inverse = np.unique(names, return_inverse=True)
    cuts = np.cumsum([run.n_rows for run in runs])[:-1]
    # the number in the high bits: group_segments keeps those
    return [part.astype(np.uint64) << np.uint64(32) for part in np.split(inverse, cuts)]


def _candidate_names(runs: Sequence[RunRows], columns: list[np.ndarray], n_cand: int) -> np.ndarray:
    """The name of each candidate, from the rows placed in it (any one: they are compared afterwards)."""
    width = max([run.names.dtype.itemsize for run in runs] + [1])
    names = np.zeros(n_cand, dtype=f"S{-(-width // 8) * 8}")
    for run, col in zip(runs, columns):
        names[col] = run.names
    return names


def _check_unique(runs: Sequence[RunRows], columns: list[np.ndarray], names: np.ndarray, query_of: np.ndarray,
                  query_names) -> None:
    """A run listing one document twice for a query is an :class:`InputError` naming them."""
    for run, col in zip(runs, columns):
        counts = np.bincount(col, minlength=names.shape[0])
        if counts.max(initial=0) > 1:
            c = int(np.flatnonzero(counts > 1)[0])
            q = int(query_of[c])
            qname = query_names[q] if query_names is not None else q
            raise InputError(f"{run.label or 'a run'}: document {names[c].decode(errors='replace')!r} appears twice "
                             f"for query {qname}")


def align(runs: Sequence[RunRows], n_queries: int, ranks: Sequence[np.ndarray] | None = None, *,
          query_names=None) -> Aligned:
    """The candidates of ``runs`` (see the module docstring).

    Parameters
    ----------
    runs : the runs, queries numbered ``0..n_queries-1`` in one numbering.
    n_queries : the number of queries of the numbering.
    ranks : per run, each row's 1-based rank in its query (default :meth:`RunRows.ranks`, score descending).
    query_names : per query number, its name for error messages.
    """
    if ranks is None:
        ranks = [run.ranks() for run in runs]
    offsets, counts, dests = _layout(runs, n_queries)
    n = int(offsets[-1])
    keys_per_run = [run.keys for run in runs]
    for _attempt in range(2):
        keys = np.empty(n, dtype=np.uint64)
        for dest, k in zip(dests, keys_per_run):
            keys[dest] = k
        cand, cand_offsets = _group(keys, offsets)
        columns = [cand[dest] for dest in dests]
        names = _candidate_names(runs, columns, int(cand_offsets[-1]))
        cand_words = words(names)
        # the last run's names are its candidates' names (placed last): the others are compared with them
        if all(_same_names(run.names, cand_words, col) for run, col in zip(runs[:-1], columns[:-1])):
            break
        keys_per_run = _exact_keys(runs)  # two names with one hash: align again on exact keys
    query_of = np.repeat(np.arange(n_queries), np.diff(cand_offsets))
    _check_unique(runs, columns, names, query_of, query_names)
    n_cand = names.shape[0]
    listed = np.zeros((len(runs), n_cand), dtype=bool)
    rank_mat = np.zeros((len(runs), n_cand), dtype=np.int32)
    for r, col in enumerate(columns):
        listed[r, col] = True
        rank_mat[r, col] = ranks[r]
    return Aligned(cand_offsets, names, listed, rank_mat, counts, columns)
