"""A block of evaluated queries as padded matrices: trec_eval's ``RES_RELS`` of each query, one row each, for
``rankcli trec_eval``'s measures."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

#: trec_eval's judgments of a retrieved document absent from the qrels, and of one with a negative label.
NONPOOL, UNJUDGED = -1, -2


def padded(values: np.ndarray, offsets: np.ndarray, fill, width: int | None = None) -> np.ndarray:
    """Segments ``values[offsets[i]:offsets[i+1]]`` as rows of a matrix, ``fill`` after each row's end."""
    n = offsets.shape[0] - 1
    lengths = np.diff(offsets)
    w = int(lengths.max()) if width is None and n else (width or 0)
    out = np.full((n, w), fill, dtype=values.dtype)
    total = int(offsets[-1] - offsets[0]) if n else 0
    if total:
        rows = np.repeat(np.arange(n), lengths)
        cols = np.arange(total) - np.repeat(offsets[:-1] - offsets[0], lengths)
        out[rows, cols] = values[offsets[0]:offsets[-1]]
    return out


def padded_at(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray, fill) -> np.ndarray:
    """Segments ``values[starts[i]:starts[i] + lengths[i]]`` as rows of a matrix, ``fill`` after each row's end."""
    w = int(lengths.max()) if lengths.shape[0] else 0
    out = np.full((lengths.shape[0], w), fill, dtype=values.dtype)
    cols = np.arange(w)
    inside = cols[None, :] < lengths[:, None]
    out[inside] = values[(starts[:, None] + cols[None, :])[inside]]
    return out


def running_sum_at(mask: np.ndarray, values, k: np.ndarray) -> np.ndarray:
    """Per row, the sum in column order of ``values`` (one per cell of ``mask``, in ``np.nonzero``'s order) over the
    row's first ``k`` cells: a term computed only where a measure adds one, added in trec_eval's order (the zeros
    between change no sum)."""
    out = np.zeros(mask.shape)
    out[mask] = values
    return at(np.cumsum(out, axis=1), k)


def at(matrix: np.ndarray, k: np.ndarray, empty: float = 0.0) -> np.ndarray:
    """``matrix[i, k[i] - 1]`` (the prefix of row i through its first ``k[i]`` cells); ``empty`` where k <= 0."""
    n = matrix.shape[0]
    k = np.minimum(np.broadcast_to(np.asarray(k, dtype=np.int64), (n,)), matrix.shape[1])
    out = np.full(n, empty, dtype=np.float64)
    ok = k > 0
    out[ok] = matrix[np.flatnonzero(ok), k[ok] - 1]
    return out


@dataclass
class Chunk:
    """Queries ``rel`` (rows: ranked judgments, ``NONPOOL`` past ``num_ret``), their qrels labels >= 0 sorted
    descending (``labels``, -1 past ``num_labels``), trec_eval's ``-l`` (``level``) and ``-N`` (``num_docs``)."""

    rel: np.ndarray
    num_ret: np.ndarray
    labels: np.ndarray
    num_labels: np.ndarray
    level: int
    num_docs: int = 0
    cache: dict = field(default_factory=dict)

    @property
    def n(self) -> int:
        return self.rel.shape[0]

    @cached_property
    def valid(self) -> np.ndarray:
        return np.arange(self.rel.shape[1])[None, :] < self.num_ret[:, None]

    @cached_property
    def isrel(self) -> np.ndarray:
        """Relevant in the measures' sense: ``rel >= level`` (so a non-pool document is relevant under ``-l -1``)."""
        return self.valid & (self.rel >= self.level)

    @cached_property
    def relcum(self) -> np.ndarray:
        """Relevant documents in the top i+1 (int64)."""
        return np.cumsum(self.isrel, axis=1)

    @cached_property
    def ranks(self) -> np.ndarray:
        """i + 1 of every column, as doubles."""
        return np.arange(1, self.rel.shape[1] + 1, dtype=np.float64)

    @cached_property
    def log2_ranks(self) -> np.ndarray:
        """log2(i + 2) of every column (the DCG discount)."""
        return np.log2(np.arange(2, self.rel.shape[1] + 2, dtype=np.float64))

    @cached_property
    def num_rel(self) -> np.ndarray:
        """R: qrels labels >= level (and >= 0)."""
        return ((self.labels >= max(self.level, 0)) & self.label_valid).sum(axis=1)

    @cached_property
    def label_valid(self) -> np.ndarray:
        return np.arange(self.labels.shape[1])[None, :] < self.num_labels[:, None]

    @cached_property
    def num_rel_ret(self) -> np.ndarray:
        """Retrieved documents judged (label >= 0) and relevant (``form_res_rels.c`` counts no non-pool one)."""
        return (self.valid & (self.rel >= 0) & (self.rel >= self.level)).sum(axis=1)

    @cached_property
    def num_nonpool(self) -> np.ndarray:
        return (self.valid & (self.rel == NONPOOL)).sum(axis=1)

    @cached_property
    def num_unjudged(self) -> np.ndarray:
        return (self.valid & (self.rel == UNJUDGED)).sum(axis=1)

    @cached_property
    def num_rel_levels(self) -> np.ndarray:
        """The highest label >= 0 plus one (0 when the query has none)."""
        return np.where(self.num_labels > 0, self.labels[:, 0] + 1 if self.labels.shape[1] else 0, 0)

    def count_labels(self, low: int, high: int | None = None) -> np.ndarray:
        """Qrels labels in [low, high) (labels >= 0 only)."""
        m = self.label_valid & (self.labels >= low)
        if high is not None:
            m &= self.labels < high
        return m.sum(axis=1)

    @cached_property
    def ap_terms(self) -> np.ndarray:
        """rel_so_far / (i + 1) at each relevant rank, 0 elsewhere (``m_map.c``'s terms)."""
        out = np.zeros(self.rel.shape)
        return np.divide(self.relcum, self.ranks[None, :], out=out, where=self.isrel)

    @cached_property
    def ap_sum(self) -> np.ndarray:
        """Running sums of :attr:`ap_terms` along each row (trec_eval's order of addition)."""
        return np.cumsum(self.ap_terms, axis=1)


def divide(a, b) -> np.ndarray:
    """a / b as C divides doubles (x/0 is inf, 0/0 NaN with its sign bit set, as on x86-64)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(a, dtype=np.float64) / np.asarray(b, dtype=np.float64)
