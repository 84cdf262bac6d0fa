"""The in-memory data model: flat numpy arrays sorted by query, plus offsets. Independent of any file format.

Offsets (int64, length ``n_queries + 1``): the rows of query ``q`` are ``offsets[q]:offsets[q + 1]``. They are built
once from the qid column (:func:`offsets_from_qids`) when data is read, and every loss, metric and simulator of
:mod:`rankcli.core` takes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rankcli.errors import InputError


class NonContiguousQueryError(InputError):
    """A query id that reappears after a different one: its rows are not contiguous."""

    def __init__(self, qid: int, row: int, first_row: int):
        self.qid, self.row, self.first_row = qid, row, first_row
        super().__init__(
            f"qid {qid} reappears at row {row} (first seen at row {first_row}); rows of a query must be contiguous"
        )


def offsets_from_qids(qids: np.ndarray) -> np.ndarray:
    """Offsets of the runs of equal ``qids``; raises :class:`NonContiguousQueryError` if a qid reappears."""
    qids = np.asarray(qids)
    n = qids.shape[0]
    if n == 0:
        return np.zeros(1, dtype=np.int64)
    starts = np.flatnonzero(qids[1:] != qids[:-1]) + 1
    offsets = np.concatenate(([0], starts, [n])).astype(np.int64)
    run_qids = qids[offsets[:-1]]
    if np.unique(run_qids).shape[0] != run_qids.shape[0]:
        # Find the first run whose qid was already seen, in row order, for a precise message.
        order = np.argsort(run_qids, kind="stable")
        sorted_q = run_qids[order]
        dup = np.flatnonzero(sorted_q[1:] == sorted_q[:-1])
        # For each duplicate pair (order[dup], order[dup+1]) the later run reappears; report the earliest such row.
        later = order[dup + 1]
        first_run = later.min()
        qid = run_qids[first_run]
        first_seen = int(offsets[np.flatnonzero(run_qids == qid)[0]])
        raise NonContiguousQueryError(int(qid), int(offsets[first_run]), first_seen)
    return offsets


@dataclass
class Dataset:
    """Rows of a ranking dataset, queries contiguous.

    ``features`` is ``(n_rows, n_features)`` float32 (or ``None`` when not loaded); ``docids`` is an object array of
    strings or ``None``; ``offsets`` has length ``n_queries + 1``.
    """

    qids: np.ndarray
    labels: np.ndarray
    features: np.ndarray | None = None
    feature_names: list[str] = field(default_factory=list)
    docids: np.ndarray | None = None
    offsets: np.ndarray | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    extra: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.offsets is None:
            self.offsets = offsets_from_qids(self.qids)

    @property
    def n_rows(self) -> int:
        return int(self.qids.shape[0])

    @property
    def n_queries(self) -> int:
        return int(self.offsets.shape[0] - 1)

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    def take_queries(self, query_numbers: np.ndarray) -> Dataset:
        """A new dataset with the given queries (by position), in the given order."""
        query_numbers = np.asarray(query_numbers, dtype=np.int64)
        sz = np.diff(self.offsets)[query_numbers]
        starts = self.offsets[query_numbers]
        new_offsets = np.concatenate(([0], np.cumsum(sz))).astype(np.int64)
        rows = np.repeat(starts - new_offsets[:-1], sz) + np.arange(new_offsets[-1], dtype=np.int64)
        return self.take_rows(rows, new_offsets)

    def take_rows(self, rows: np.ndarray, offsets: np.ndarray | None = None) -> Dataset:
        """A new dataset of the given ``rows`` (by position, queries contiguous), with their ``offsets`` when known
        (else built from the qids)."""
        return Dataset(
            qids=self.qids[rows],
            labels=self.labels[rows],
            features=None if self.features is None else self.features[rows],
            feature_names=list(self.feature_names),
            docids=None if self.docids is None else self.docids[rows],
            offsets=offsets,
            metadata=dict(self.metadata),
            extra={k: v[rows] for k, v in self.extra.items()},
        )


@dataclass
class Run:
    """A ranking to evaluate: rows grouped by query (``offsets``), one ``qids`` entry per query.

    ``labels`` and ``scores`` are per row. TREC runs joined with their qrels also carry the judged documents each
    query's ranking lacks (``unranked_labels`` grouped by ``unranked_offsets``: they count in the ideal DCG and in R),
    whether each row is in the qrels (``judged``), the queries evaluated with an empty ranking (``empty_qids`` with the
    labels of their judgments), the number of queries none of whose documents is judged and the run's tag (``runid``);
    read with trec_eval's ``-c``, the qrels' lines that trec_eval counts as positive (``qrels_positive``, its summary
    ``num_rel`` then, whatever the threshold).
    ``docids`` (per row) names the documents for the ``docid-desc`` tie rule. ``ranked``: each query's rows are in
    trec_eval's rank order already (score descending, equal scores by docid descending), as the C path of the TREC
    readers gives them; ``docids`` may then be None, the order holding all the tie rule needs.
    """

    qids: np.ndarray
    labels: np.ndarray
    scores: np.ndarray
    offsets: np.ndarray
    unranked_labels: np.ndarray | None = None
    unranked_offsets: np.ndarray | None = None
    source: str = ""
    notes: list[str] = field(default_factory=list)
    docids: np.ndarray | None = None
    queries_without_judged: int = 0
    judged: np.ndarray | None = None
    empty_qids: list = field(default_factory=list)
    empty_labels: list = field(default_factory=list)
    runid: str | None = None
    ranked: bool = False
    qrels_positive: int | None = None

    @property
    def n_rows(self) -> int:
        return int(self.labels.shape[0])
