"""Checks of an experiment's data before any unit runs: labels named by file and row, and fold test queries that
overlap.

A query is identified by its ``qid``, as everywhere in rankcli (per-query files, ``compare`` and ``eval`` pair queries
by qid): the folds' test queries are pooled per qid, so two files holding one qid hold one query for the tests.
Rows are counted from 0 (the first row of a Parquet file is row 0), as in every rankcli message about a row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rankcli.dataset import offsets_from_qids
from rankcli.errors import InputError
from rankcli.train import check_training_labels as check_loss_labels


def check_file_labels_finite(path: Path | str, labels: np.ndarray) -> None:
    """:class:`InputError` ``<path>: label is NaN at row N`` (or infinite) for the first such row of ``path``."""
    labels = np.asarray(labels, dtype=np.float64)
    bad = ~np.isfinite(labels)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        what = "NaN" if np.isnan(labels[row]) else "infinite"
        raise InputError(f"{path}: label is {what} at row {row}; every document needs a finite label")


def _distinct_in_order(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of ``labels`` in order of first appearance, and the row of each's first appearance."""
    values, first = np.unique(labels, return_index=True)
    order = np.argsort(first, kind="stable")
    return values[order], first[order]


def _first_failing(values: np.ndarray, check: Callable[[np.ndarray], None]) -> int | None:
    """The index of the first of ``values`` that ``check`` refuses (it raises :class:`InputError` for a set of values
    holding a bad one), or None. A prefix holding a bad value fails, so bisection finds it in about log2(len(values))
    vectorised checks."""

    def fails(m: int) -> bool:
        try:
            check(values[:m])
        except InputError:
            return True
        return False

    if not fails(values.shape[0]):
        return None
    lo, hi = 0, values.shape[0]  # fails(hi) holds, fails(lo) does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if fails(mid) else (mid, hi)
    return hi - 1


def check_training_labels(path: Path | str, labels: np.ndarray, losses: list[str]) -> None:
    """:class:`InputError` ``<path>: label at row N: <why>`` when one of ``losses`` cannot train on a label of the
    training file ``path`` (every loss trains on it in the baseline: better now than after hours of other units)."""
    values, first = _distinct_in_order(np.asarray(labels, dtype=np.float64))
    for loss in losses:
        bad = _first_failing(values, lambda v, loss=loss: check_loss_labels(loss, v))
        if bad is not None:
            try:
                check_loss_labels(loss, values[bad:bad + 1])
            except InputError as exc:
                raise InputError(f"{path}: label at row {int(first[bad])}: {exc}") from None


@dataclass
class Overlap:
    """Queries that more than one part holds, found by :func:`find_overlaps`.

    ``tests``: ``(qid, fold a, fold b)`` for each test query of two folds (``a < b``, the first two folds holding it);
    ``inside``: per fold number, ``(qid, part)`` of each of its test queries that its train or validation file holds.
    """

    tests: list[tuple[int, int, int]] = field(default_factory=list)
    inside: dict[int, list[tuple[int, str]]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.tests) or any(self.inside.values())

    def notes(self) -> list[str]:
        """One sentence per kind of overlap, for the summary of an experiment run with ``allow_overlap``."""
        out = []
        if self.tests:
            qid, a, b = self.tests[0]
            out.append(f"{len(self.tests)} test quer{'y is' if len(self.tests) == 1 else 'ies are'} in the test sets "
                       f"of more than one fold (e.g. qid {qid}: Fold{a} and Fold{b}); the pooled tests count each once "
                       "per fold, so they do not run over independent queries")
        for k, found in sorted(self.inside.items()):
            if found:
                qid, part = found[0]
                out.append(f"Fold{k}: {len(found)} of its test queries {'is' if len(found) == 1 else 'are'} also in "
                           f"its {part} data (e.g. qid {qid}): its models were trained or selected on queries they "
                           "are tested on")
        return out


def _query_ids(path: Path) -> np.ndarray:
    """The qids of the queries of ``path``, one per query (rows of a query are contiguous)."""
    from rankcli.formats.parquet import qids_as_int64, read_table

    qids = qids_as_int64(path, read_table(path, ["qid"]).column("qid"))
    try:
        offsets = offsets_from_qids(qids)
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None
    return qids[offsets[:-1]]


def _tests_in_two_folds(test_qids: dict[int, np.ndarray]) -> list[tuple[int, int, int]]:
    """``(qid, first fold, second fold)`` of every qid in the test sets of two folds, by qid."""
    if not test_qids:
        return []
    qids = np.concatenate(list(test_qids.values()))
    folds = np.concatenate([np.full(q.shape[0], k, dtype=np.int64) for k, q in test_qids.items()])
    order = np.lexsort((folds, qids))
    qids, folds = qids[order], folds[order]
    again = np.flatnonzero(qids[1:] == qids[:-1]) + 1
    first_again = again[np.concatenate(([True], qids[again[1:]] != qids[again[:-1]]))] if again.shape[0] else again
    return [(int(qids[i]), int(folds[i - 1]), int(folds[i])) for i in first_again]


def find_overlaps(folds: list) -> Overlap:
    """The overlaps of ``folds`` (:class:`rankcli.experiment.Fold`): test queries in two folds' test sets, and test
    queries in their own fold's train or validation file. Reads only the ``qid`` columns."""
    test_qids = {f.number: _query_ids(f.test) for f in folds}
    out = Overlap(tests=_tests_in_two_folds(test_qids))
    for f in folds:
        found: list[tuple[int, str]] = []
        for part, path in (("training", f.train), ("validation", f.valid)):
            if path is not None:
                both = np.intersect1d(test_qids[f.number], _query_ids(path))
                found += [(int(q), part) for q in both]
        out.inside[f.number] = found
    return out


def check_overlaps(folds: list, allow: bool) -> list[str]:
    """:class:`InputError` for folds whose test queries overlap (:func:`find_overlaps`), unless ``allow``; then the
    notes the summary prints (none when nothing overlaps)."""
    found = find_overlaps(folds)
    if not found or allow:
        return found.notes()
    by_number = {f.number: f for f in folds}
    hint = ("; if these are different queries that share a number, give every query its own qid (rankcli split "
            "writes folds that never overlap), or pass --allow-overlap if you mean it")
    if found.tests:
        qid, a, b = found.tests[0]
        more = f" ({len(found.tests) - 1} more test queries are in two folds)" if len(found.tests) > 1 else ""
        raise InputError(f"qid {qid} is a test query of Fold{a} ({by_number[a].test}) and of Fold{b} "
                         f"({by_number[b].test}){more}; the pooled tests would count it twice{hint}")
    k, inside = next((k, v) for k, v in sorted(found.inside.items()) if v)
    qid, part = inside[0]
    f = by_number[k]
    path = f.train if part == "training" else f.valid
    more = f" ({len(inside) - 1} more of its test queries too)" if len(inside) > 1 else ""
    raise InputError(f"{f.test}: qid {qid} is also in {path}{more}; a fold's test queries must be new to its "
                     f"models (trained or selected on them, they would be tested on what they saw){hint}")
