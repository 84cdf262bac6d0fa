"""One size bucket of queries laid out for the metric kernels, under each tie rule.

:class:`RankedBucket` holds the top ``kk`` of each query's one ranking (ties in input order, or already in docid
order); :class:`TieBucket` holds each query's documents by score with their tie groups, for the expectation over the
orders of tied documents. Both carry what every kernel needs (sizes, ``R``, the ideal DCG, the discount sums) and
compute shared intermediate matrices (cumulated DCG, relevant counts) once, for all the metrics that use them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from rankcli.core.metrics.convention import Convention
from rankcli.core.metrics.judgments import Judgments, gain
from rankcli.core.metrics.ties import topk_input_order
from rankcli.core.ranking import padded_ranking, padded_scores


@dataclass
class _Common:
    qs: np.ndarray            # (nb,) query numbers
    sizes: np.ndarray         # (nb,) float64 documents ranked per query
    judg: Judgments
    convention: Convention
    D: np.ndarray             # D[p]: total discount of the first p positions

    @property
    def n_rel(self) -> np.ndarray:
        """``R`` per query: relevant documents judged, ranked or not."""
        return self.judg.n_relevant[self.qs]

    def ideal(self, k: int | None) -> np.ndarray:
        """The ideal DCG@k per query."""
        return self.judg.idcg(k)[self.qs]

    @property
    def threshold(self) -> float:
        """The convention's relevance threshold."""
        return self.convention.relevance_threshold


@dataclass
class RankedBucket(_Common):
    """The first ``kk`` documents of each query's ranking: ``lab`` and ``valid`` are ``(nb, kk)`` in rank order."""

    lab: np.ndarray
    valid: np.ndarray
    kk: int

    @classmethod
    def build(cls, labels, scores, offsets, qs, width, kk, judg, convention, D) -> RankedBucket:
        """Rank queries ``qs`` (at most ``width`` long) and keep their top ``kk``.

        Parameters
        ----------
        labels : (n_rows,) float64 labels. scores : (n_rows,) float64 scores; rows already in the convention's order
            for equal scores.
        offsets : (n_queries + 1,) query boundaries. qs, width : the bucket (:func:`rankcli.core.groups.size_buckets`).
        kk : how many ranks the bucket's metrics look at (the largest cutoff, at most ``width``).
        judg : the queries' :class:`Judgments`. convention : the :class:`Convention`. D : the discount sums
            (:func:`rankcli.core.metrics.judgments.discount_prefix`).
        """
        rows, valid, smat, ranked = padded_scores(scores, offsets, qs, width)
        sizes = (offsets[qs + 1] - offsets[qs]).astype(np.float64)
        if ranked:  # the top kk are the first kk cells
            r_rows, r_valid = rows[:, :kk], valid[:, :kk]
        else:
            cols = topk_input_order(smat, kk)
            r_rows = np.take_along_axis(rows, cols, axis=1)
            r_valid = np.take_along_axis(valid, cols, axis=1)
        return cls(qs, sizes, judg, convention, D, labels[r_rows], r_valid, kk)

    def cut(self, k: int | None) -> int:
        """The ranks a metric at cutoff ``k`` looks at: ``k`` capped at ``kk`` (``kk`` for the whole list)."""
        return self.kk if k is None else min(k, self.kk)

    @cached_property
    def dcg_cum(self) -> np.ndarray:
        """``(nb, kk)``: DCG of the top ``i + 1`` ranks."""
        g = gain(self.lab, self.convention.gain)
        g[~self.valid] = 0.0
        disc = np.diff(self.D[: self.kk + 1])
        return np.cumsum(g * disc[None, :], axis=1)

    @cached_property
    def rel(self) -> np.ndarray:
        """``(nb, kk)``: relevant (label >= threshold) real documents."""
        return (self.lab >= self.threshold) & self.valid

    @cached_property
    def relcum(self) -> np.ndarray:
        """``(nb, kk)``: relevant documents in the top ``i + 1`` ranks."""
        return np.cumsum(self.rel, axis=1)


@dataclass
class TieBucket(_Common):
    """Each query's documents by score (``(nb, width)``), with the tie group of every cell.

    A tie group is a maximal run of equal scores; ``start`` is its first position, ``gsize`` its size (1 in padding),
    ``end`` one past its last position; ``grel`` its relevant documents; ``before`` the relevant documents of the
    earlier groups. ``new`` marks each group's first cell.
    """

    lab: np.ndarray
    valid: np.ndarray
    new: np.ndarray
    start: np.ndarray
    gsize: np.ndarray
    end: np.ndarray
    rel: np.ndarray
    relf: np.ndarray
    grel: np.ndarray
    before: np.ndarray
    gains: np.ndarray
    H: np.ndarray      # H[p]: sum of 1 / (i + 1) for i < p
    width: int

    @classmethod
    def build(cls, labels, scores, offsets, qs, width, judg, convention, D, H) -> TieBucket:
        """Lay out queries ``qs`` (at most ``width`` long) by score with their tie groups.

        Parameters
        ----------
        labels, scores, offsets, qs, width, judg, convention, D : as :meth:`RankedBucket.build`.
        H : the harmonic sums (:func:`rankcli.core.metrics.judgments.harmonic_prefix`).
        """
        sizes = (offsets[qs + 1] - offsets[qs]).astype(np.float64)
        nq_b = qs.shape[0]
        ranking = padded_ranking(scores, offsets, qs, width)
        s_sorted, v_sorted = ranking.ranked(ranking.scores), ranking.ranked(ranking.valid)
        lab = labels[ranking.ranked(ranking.rows)]
        pos = np.arange(width, dtype=np.int64)
        new = np.ones((nq_b, width), dtype=bool)
        new[:, 1:] = (s_sorted[:, 1:] != s_sorted[:, :-1]) | (v_sorted[:, 1:] != v_sorted[:, :-1])
        start = np.maximum.accumulate(np.where(new, pos[None, :], 0), axis=1)  # each cell's group's first position
        gid = (np.arange(nq_b, dtype=np.int64)[:, None] * width + start).ravel()  # unique group id over the bucket
        n_cells = nq_b * width
        gsize = np.bincount(gid, weights=v_sorted.ravel(), minlength=n_cells)[gid].reshape(nq_b, width)
        gsize = np.where(v_sorted, gsize, 1.0)
        end = start + gsize.astype(np.int64)
        rel = (lab >= convention.relevance_threshold) & v_sorted
        relf = rel.astype(np.float64)
        grel = np.bincount(gid, weights=relf.ravel(), minlength=n_cells)[gid].reshape(nq_b, width)
        relcum_excl = np.cumsum(relf, axis=1) - relf
        before = np.take_along_axis(relcum_excl, start, axis=1)
        gains = gain(lab, convention.gain)
        gains[~v_sorted] = 0.0
        return cls(qs, sizes, judg, convention, D, lab, v_sorted, new, start, gsize, end, rel, relf, grel, before,
                   gains, H, width)

    def window(self, k: int | None) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
        """``(kk, s_k, e_k, m)`` for cutoff ``k``: the cutoff (``width`` for the whole list), each cell's group start
        and end capped at it, and ``m = e_k - s_k`` the positions of the cell's group inside the top ``kk``."""
        kk = self.width if k is None else k
        s_k = np.minimum(self.start, kk)
        e_k = np.minimum(self.end, kk)
        return kk, s_k, e_k, (e_k - s_k).astype(np.float64)
