"""Fused scores evaluated with rankcli's metrics on judged queries, as ``rankcli eval --qrels`` would evaluate the
fused run once written: labels from the qrels (unjudged documents 0), judged documents no run retrieved counted in
the ideal DCG and in R, equal scores by document id descending under the ``trec`` convention (the order the written
run is read in).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rankcli.core.fusion import Aligned
from rankcli.core.metrics import Convention, MetricSpec, per_query
from rankcli.fuse.judgments import Judgments


@dataclass
class Scorer:
    """The evaluation of fused scores on the queries ``queries`` (numbers; judged and with candidates):
    :meth:`per_query` gives one value per query (NaN where the convention skips it)."""

    spec: MetricSpec
    convention: Convention
    queries: np.ndarray
    cols: np.ndarray
    offsets: np.ndarray
    labels: np.ndarray
    judged: np.ndarray
    names: np.ndarray
    unranked: np.ndarray
    unranked_offsets: np.ndarray

    @classmethod
    def build(cls, spec: MetricSpec, convention: Convention, aligned: Aligned, judg: Judgments,
              queries: np.ndarray) -> Scorer:
        """The scorer of ``queries`` (those that are judged and have candidates)."""
        sizes = np.diff(aligned.offsets)
        queries = np.asarray(queries, dtype=np.int64)
        queries = queries[judg.has[queries] & (sizes[queries] > 0)]
        starts = aligned.offsets[queries]
        counts = sizes[queries]
        offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        cols = np.repeat(starts - offsets[:-1], counts) + np.arange(offsets[-1])
        u_counts = np.diff(judg.unranked_offsets)[queries]
        u_off = np.concatenate(([0], np.cumsum(u_counts))).astype(np.int64)
        u_rows = np.repeat(judg.unranked_offsets[queries] - u_off[:-1], u_counts) + np.arange(u_off[-1])
        return cls(spec, convention, queries, cols, offsets, judg.labels[cols], judg.judged[cols],
                   aligned.names[cols], judg.unranked[u_rows], u_off)

    @property
    def n_queries(self) -> int:
        """The number of queries evaluated."""
        return int(self.queries.shape[0])

    def per_query(self, fused: np.ndarray) -> np.ndarray:
        """The metric's value on each query, for the fused scores of every candidate."""
        values = per_query([self.spec], self.labels, fused[self.cols], self.offsets, self.convention,
                           unranked_labels=self.unranked, unranked_offsets=self.unranked_offsets,
                           docids=self.names, judged=self.judged)
        return values[str(self.spec)]

    def subset(self, positions: np.ndarray) -> Scorer:
        """The scorer of some of its queries (positions into :attr:`queries`)."""
        positions = np.asarray(positions, dtype=np.int64)
        counts = np.diff(self.offsets)[positions]
        offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        rows = np.repeat(self.offsets[positions] - offsets[:-1], counts) + np.arange(offsets[-1])
        u_counts = np.diff(self.unranked_offsets)[positions]
        u_off = np.concatenate(([0], np.cumsum(u_counts))).astype(np.int64)
        u_rows = np.repeat(self.unranked_offsets[positions] - u_off[:-1], u_counts) + np.arange(u_off[-1])
        return Scorer(self.spec, self.convention, self.queries[positions], self.cols[rows], offsets,
                      self.labels[rows], self.judged[rows], self.names[rows], self.unranked[u_rows], u_off)
