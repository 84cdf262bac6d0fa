"""What a dataset looks like: rows, queries, features, documents per query, labels, queries without a relevant document.

Used by ``convert`` (accumulated block by block while streaming, through :class:`SummaryBuilder`) and ``info`` (on a
Parquet file, :func:`summarize_parquet`); any command that wants to describe its data can reuse
:func:`summarize_dataset`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rankcli.dataset import offsets_from_qids
from rankcli.errors import InputError, SchemaError

#: More distinct label values than this and the histogram is binned (real-valued relevance).
MAX_EXACT_LABELS = 20
HISTOGRAM_BINS = 10


def format_label(value: float) -> str:
    """A label as a histogram key: ``"2"``, ``"0.07"``, ``"nan"``."""
    if value != value:
        return "nan"
    if float(value).is_integer():
        return str(int(value))
    return format(float(value), ".12g")


@dataclass
class DatasetSummary:
    """A dataset at a glance; :meth:`as_dict` gives the JSON keys of ``convert --json`` and ``info --json``."""

    rows: int
    queries: int
    features: int
    docs_per_query: dict[str, float]
    label_histogram: dict[str, int]
    queries_without_relevant: int
    integer_labels: bool
    has_docid: bool = False
    seconds: float | None = None
    extra: dict = field(default_factory=dict)  # more JSON keys, after the others

    def as_dict(self) -> dict:
        """The JSON keys: rows, queries, features, docs_per_query, label_histogram, queries_without_relevant,
        integer_labels, docid, and seconds when known."""
        out = {
            "rows": self.rows,
            "queries": self.queries,
            "features": self.features,
            "docs_per_query": dict(self.docs_per_query),
            "label_histogram": dict(self.label_histogram),
            "queries_without_relevant": self.queries_without_relevant,
            "integer_labels": self.integer_labels,
            "docid": self.has_docid,
        }
        if self.seconds is not None:
            out["seconds"] = round(self.seconds, 3)
        out.update(self.extra)
        return out


class SummaryBuilder:
    """Accumulates a summary over chunks of whole queries (``add(labels, offsets)``), in constant memory per row.

    It keeps one size and one "has a relevant document" flag per query, and the count of each distinct label.
    """

    def __init__(self) -> None:
        self._sizes: list[np.ndarray] = []
        self._no_relevant = 0
        self._labels: dict[float, int] = {}
        self._nan_labels = 0

    def add(self, labels: np.ndarray, offsets: np.ndarray) -> None:
        """Count the whole queries ``offsets`` delimits in ``labels``."""
        labels = np.asarray(labels, dtype=np.float64)
        if labels.shape[0] == 0:
            return
        self._sizes.append(np.diff(offsets).astype(np.int64))
        # A relevant document is one with a label above zero (graded or real-valued relevance alike).
        best = np.maximum.reduceat(np.where(np.isnan(labels), -np.inf, labels), offsets[:-1])
        self._no_relevant += int((best <= 0).sum())
        nan = np.isnan(labels)
        self._nan_labels += int(nan.sum())
        values, counts = np.unique(labels[~nan], return_counts=True)
        for v, c in zip(values.tolist(), counts.tolist()):
            self._labels[v] = self._labels.get(v, 0) + c

    def build(self, features: int, *, has_docid: bool = False, seconds: float | None = None) -> DatasetSummary:
        """The summary of every query added, with the number of ``features``, whether there is a docid column and
        the ``seconds`` taken (``None``: not shown)."""
        sizes = np.concatenate(self._sizes) if self._sizes else np.zeros(0, dtype=np.int64)
        docs = ({"min": int(sizes.min()), "median": float(np.median(sizes)), "max": int(sizes.max()),
                 "mean": round(float(sizes.mean()), 3)} if sizes.size else
                {"min": 0, "median": 0.0, "max": 0, "mean": 0.0})
        values = np.array(sorted(self._labels), dtype=np.float64)
        counts = np.array([self._labels[v] for v in sorted(self._labels)], dtype=np.int64)
        integer = bool(values.size and np.all(values == np.round(values)) and self._nan_labels == 0)
        if values.size <= MAX_EXACT_LABELS:
            histogram = {format_label(v): int(c) for v, c in zip(values.tolist(), counts.tolist())}
        else:
            edges = np.linspace(values[0], values[-1], HISTOGRAM_BINS + 1)
            which = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, HISTOGRAM_BINS - 1)
            binned = np.bincount(which, weights=counts, minlength=HISTOGRAM_BINS).astype(np.int64)
            histogram = {}
            for i in range(HISTOGRAM_BINS):
                close = "]" if i == HISTOGRAM_BINS - 1 else ")"
                histogram[f"[{format_label(edges[i])}, {format_label(edges[i + 1])}{close}"] = int(binned[i])
        if self._nan_labels:
            histogram["nan"] = self._nan_labels
        return DatasetSummary(
            rows=int(sizes.sum()), queries=int(sizes.shape[0]), features=int(features), docs_per_query=docs,
            label_histogram=histogram, queries_without_relevant=self._no_relevant, integer_labels=integer,
            has_docid=has_docid, seconds=seconds,
        )


def summarize_dataset(labels: np.ndarray, offsets: np.ndarray, features: int, *, has_docid: bool = False,
              seconds: float | None = None) -> DatasetSummary:
    """The summary of whole queries: ``labels`` per row, query ``offsets``, the number of ``features``, whether the
    data have a docid column, and the ``seconds`` a conversion took (``None``: not shown)."""
    builder = SummaryBuilder()
    builder.add(labels, offsets)
    return builder.build(features, has_docid=has_docid, seconds=seconds)


def summarize_parquet(path: Path | str) -> DatasetSummary:
    """The summary of a Parquet dataset, reading only ``qid``, ``label`` and the footer, whose ``rankcli.*`` keys
    come as ``extra["metadata"]`` (the last JSON key of ``rankcli info --json``)."""
    from rankcli.formats.parquet import feature_columns, read_metadata
    from rankcli.formats.query_labels import read_query_labels

    qids, labels, names = read_query_labels(path)
    try:
        offsets = offsets_from_qids(qids)
    except InputError as exc:  # NonContiguousQueryError
        raise SchemaError(f"{path}: {exc}") from None
    summary = summarize_dataset(labels, offsets, len(feature_columns(names)), has_docid="docid" in names)
    summary.extra["metadata"] = read_metadata(path)
    return summary
