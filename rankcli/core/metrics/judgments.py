"""What a query's judgments fix before any ranking: its number of relevant documents ``R``, its ideal DCG@k, whether
it has a relevant document at all; and the gains and discount sums every DCG is built from.

The ideal DCG counts every judged document of the query, including judged documents the ranking does not contain
(``unranked_labels``, the qrels entries a TREC run misses), as trec_eval does.
"""

from __future__ import annotations

import numpy as np

from rankcli.core.groups import query_index
from rankcli.core.metrics.convention import Convention
from rankcli.errors import InputError


def gain(labels: np.ndarray, kind: str) -> np.ndarray:
    """The gain of each label: ``2^label - 1`` (``kind="exponential"``) or ``label`` (``"linear"``), negative labels
    (e.g. spam judgments) clipped to 0, i.e. simply not relevant."""
    clipped = np.maximum(labels, 0.0)
    return np.exp2(clipped) - 1.0 if kind == "exponential" else clipped


def discount_prefix(n: int) -> np.ndarray:
    """``D[p] = sum_{i < p} 1 / log2(i + 2)``: the total discount of the first ``p`` positions (``n + 1`` entries)."""
    out = np.zeros(n + 1)
    np.cumsum(1.0 / np.log2(np.arange(n, dtype=np.float64) + 2.0), out=out[1:])
    return out


def harmonic_prefix(n: int) -> np.ndarray:
    """``H[p] = sum_{i < p} 1 / (i + 1)`` (``n + 1`` entries)."""
    out = np.zeros(n + 1)
    np.cumsum(1.0 / (np.arange(n, dtype=np.float64) + 1.0), out=out[1:])
    return out


class Judgments:
    """Per-query facts that do not depend on the ranking: R, the ideal DCG@k, whether anything is relevant.

    Parameters
    ----------
    labels : (n_rows,) float64 labels of the ranked documents, rows of a query contiguous.
    offsets : (n_queries + 1,) int64 query boundaries.
    unranked_labels, unranked_offsets : judged documents of each query missing from the ranking (or None, None).
    convention : the gain and the relevance threshold are taken from it.
    """

    #: Labels that are integers in 0..MAX_COUNTED_GRADE get the ideal DCG from per-grade counts; others a sort.
    MAX_COUNTED_GRADE = 31

    def __init__(self, labels, offsets, unranked_labels, unranked_offsets, convention: Convention):
        self.convention = convention
        self.nq = nq = offsets.shape[0] - 1
        self.labels, self.offsets = labels, offsets
        thr = convention.relevance_threshold
        starts = offsets[:-1]
        if nq:
            self.n_relevant = np.add.reduceat((labels >= thr).view(np.int8), starts, dtype=np.int64)
            self.max_label = np.maximum.reduceat(labels, starts)
        else:
            self.n_relevant, self.max_label = np.zeros(0, dtype=np.int64), np.zeros(0)
        self.sizes = np.diff(offsets)
        self.unranked = None
        if unranked_labels is not None:
            ul = np.asarray(unranked_labels, dtype=np.float64)
            uo = np.asarray(unranked_offsets, dtype=np.int64)
            if uo.shape[0] != nq + 1 or uo[0] != 0 or uo[-1] != ul.shape[0] or np.any(np.diff(uo) < 0):
                raise InputError("unranked_offsets must run from 0 to len(unranked_labels), one entry per query + 1")
            if not np.isfinite(ul).all():
                raise InputError("unranked label is NaN or infinite")
            if ul.shape[0]:
                uq = query_index(uo)
                self.unranked = (ul, uo, uq)
                self.n_relevant = self.n_relevant + np.bincount(uq, weights=(ul >= thr), minlength=nq).astype(np.int64)
                umax = np.full(nq, -np.inf)
                np.maximum.at(umax, uq, ul)
                self.max_label = np.maximum(self.max_label, umax)
                self.sizes = self.sizes + np.diff(uo)
        self.has_graded = self.max_label > 0
        self.has_binary = self.n_relevant > 0
        self.max_len = int(self.sizes.max()) if nq else 0
        self._ge = None
        self._sorted_gains = None
        self._idcg: dict[int | None, np.ndarray] = {}

    def grades_at_least(self):
        """``ge[g][q]``: documents of query ``q`` with label >= g, for g = 0..top+1, when every label (clipped at 0)
        is an integer up to MAX_COUNTED_GRADE; None otherwise."""
        if self._ge is None:
            self._ge = False
            parts = [(self.labels, self.offsets)] + ([self.unranked[:2]] if self.unranked is not None else [])
            top = max((float(lab.max()) for lab, _ in parts if lab.shape[0]), default=0.0)
            integral = all(np.array_equal(lab, np.floor(lab)) for lab, _ in parts)
            if integral and top <= self.MAX_COUNTED_GRADE:
                ng = max(int(top), 0) + 1
                ge = [self.sizes.astype(np.int64)]  # label >= 0 after clipping: every document
                for g in range(1, ng):
                    c = np.add.reduceat((self.labels >= g).view(np.int8), self.offsets[:-1], dtype=np.int64)
                    if self.unranked is not None:
                        ul, _, uq = self.unranked
                        c = c + np.bincount(uq, weights=(ul >= g), minlength=self.nq).astype(np.int64)
                    ge.append(c)
                ge.append(np.zeros(self.nq, dtype=np.int64))
                self._ge = ge
        return None if self._ge is False else self._ge

    def positive_grades(self):
        """``(grades, ge)``: the positive grades ascending and, per grade ``i``, ``ge[i][q]`` the documents of query
        ``q`` (ranked or not) with label >= ``grades[i]``, then a row of zeros; None when a label is not an integer.
        A grade of any size: trec_eval's ndcg_rel and Rndcg take them all. Labels up to MAX_COUNTED_GRADE reuse
        :meth:`grades_at_least`'s counts (every integer grade, an absent one adding exact zeros); above it only the
        grades present are counted."""
        ge = self.grades_at_least()
        if ge is not None:
            return np.arange(1, len(ge) - 1, dtype=np.float64), ge[1:]
        parts = [self.labels] + ([self.unranked[0]] if self.unranked is not None else [])
        if not all(np.array_equal(lab, np.floor(lab)) for lab in parts):
            return None
        grades = np.unique(np.concatenate([lab[lab > 0] for lab in parts]))
        counts = []
        for v in grades.tolist():
            c = np.add.reduceat((self.labels >= v).view(np.int8), self.offsets[:-1], dtype=np.int64)
            if self.unranked is not None:
                ul, _, uq = self.unranked
                c = c + np.bincount(uq, weights=(ul >= v), minlength=self.nq).astype(np.int64)
            counts.append(c)
        return grades, counts + [np.zeros(self.nq, dtype=np.int64)]

    def idcg(self, k: int | None) -> np.ndarray:
        """The ideal DCG@k of every query (all judged documents, labels descending)."""
        if k in self._idcg:
            return self._idcg[k]
        kk = self.max_len if k is None else min(k, self.max_len)
        D = discount_prefix(max(self.max_len, 1))
        ge = self.grades_at_least()
        if ge is not None:
            ng = len(ge) - 1
            gains = gain(np.arange(ng, dtype=np.float64), self.convention.gain)
            out = np.zeros(self.nq)
            for g in range(ng - 1, 0, -1):
                # Grade g occupies the ideal positions [#(label > g), #(label >= g)).
                above, end = np.minimum(ge[g + 1], kk), np.minimum(ge[g], kk)
                out += gains[g] * (D[end] - D[above])
        else:
            out = self._idcg_by_sort(kk, D)
        self._idcg[k] = out
        return out

    def _idcg_by_sort(self, kk, D):
        if self._sorted_gains is None:
            if self.unranked is not None:
                ul, uo, uq = self.unranked
                qidx = np.concatenate([query_index(self.offsets), uq])
                order = np.argsort(qidx, kind="stable")
                all_labels = np.concatenate([self.labels, ul])[order]
            else:
                all_labels = self.labels
            mat = np.zeros((self.nq, self.max_len))
            valid = np.arange(self.max_len)[None, :] < self.sizes[:, None]
            mat[valid] = gain(all_labels, self.convention.gain)
            self._sorted_gains = -np.sort(-mat, axis=1)
        return self._sorted_gains[:, :kk] @ np.diff(D)[:kk]
