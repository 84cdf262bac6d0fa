"""Ranking metrics over a whole batch of queries at once, with every convention explicit.

Metrics (``k`` omitted means the whole list):

- ``ndcg@k``, ``dcg@k``: gain ``2^label - 1`` (``Convention.gain="exponential"``, the paper's and LightGBM's) or
  ``label`` (``"linear"``, trec_eval's and scikit-learn's); discount ``1 / log2(1 + rank)``, rank 1-based. NDCG divides
  by the DCG@k of the ideal ordering (labels descending), which counts every judged document of the query, including
  judged documents that the run did not retrieve (``unranked_labels``, as trec_eval does).
- ``err@k``: expected reciprocal rank (Chapelle et al. 2009), ``R(g) = (2^g - 1) / 2^max_grade`` (``max_grade``
  defaults to 4; a label above it is an error). ERR always uses this exponential mapping, whatever ``gain`` says.
- ``mrr@k`` (alias ``rr@k``): ``1 / rank`` of the first relevant document in the top ``k``, 0 when there is none.
- ``map@k`` (alias ``ap@k``): sum over relevant documents in the top ``k`` of the precision at their rank, divided by
  the query's number of relevant documents ``R`` (trec_eval's ``map_cut``; unretrieved relevant documents count in R).
- ``precision@k``: relevant documents in the top ``k`` divided by ``k`` (trec_eval's ``P_k``: a query shorter than
  ``k`` is not rewarded for it); without ``k``, divided by the query's length.
- ``recall@k``: relevant documents in the top ``k`` divided by ``R``.

A document is *relevant* for the binary metrics (mrr, map, precision, recall) when ``label >= relevance_threshold``.

Queries without a relevant document (``Convention.no_relevant``). "Without a relevant document" means, for the graded
metrics (ndcg, dcg, err), that the ideal DCG is 0, i.e. no label is positive (negative labels have gain 0, as in
trec_eval); for the binary metrics, that no label reaches ``relevance_threshold``. With integer grades and the default
threshold 1 the two coincide. Then:

- ``skip`` (the paper's): the query gets NaN and is left out of the mean;
- ``one`` (LightGBM's): the query counts as perfectly ranked: ndcg, mrr, map, precision and recall score 1;
- ``zero`` (scikit-learn's, trec_eval's): every metric scores 0.

dcg and err are not normalised; under ``one`` and ``zero`` they keep their actual value, 0.

Ties between equal scores (``Convention.ties``):

- ``input``: documents with equal scores keep their input order (a stable sort by score, descending) — LightGBM's rule.
  The top ``k`` is exactly the first ``k`` rows of that stable order, also across the cut.
- ``docid-desc``: documents with equal scores are ordered by document id, descending in byte order — trec_eval's
  rule (its ``qsort`` comparator ``comp_sim_docno`` in ``form_res_rels.c``: ``sim`` descending, then
  ``strcmp(docno2, docno1)``). It needs the ``docids``; comparing code points of ``str`` equals comparing their UTF-8
  bytes, as ``strcmp`` does (which reads bytes as ``unsigned char``).
- ``average``: the expected value of the metric over all orderings of tied documents (McSherry & Najork, ECIR 2008),
  as scikit-learn's ``ndcg_score`` computes it. It is computed in closed form per tie group: for DCG, precision and
  recall a group contributes its mean gain (or relevant fraction) times the discounts (or count) of the positions it
  occupies; for AP and RR the expectation uses the distribution of relevant documents inside the group; for ERR the
  mean, over the group's j-subsets, of the product of the probabilities of reading on (a stable recurrence).

Speed: no Python loop over queries. Queries are laid out in padded matrices per size bucket
(:func:`rankcli.core.groups.size_buckets`); for a cutoff ``k`` only the top ``k`` of each row is selected
(``np.partition`` plus an exact tie repair) and sorted, and the ideal DCG comes from per-query counts of each grade
(labels are small integers in practice; other labels fall back to a per-query sort).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from rankcli.core.groups import padded_rows, query_index, size_buckets
from rankcli.core.measures import CORE, REGISTRY, MetricSpec, UnknownMetricError, parse_metric, parse_metrics  # noqa: F401
from rankcli.core.ranking import padded_ranking
from rankcli.errors import InputError, UsageError

GAINS = ("exponential", "linear")
NO_RELEVANT = ("skip", "one", "zero")
TIES = ("input", "average", "docid-desc")
PRESETS = ("paper", "lightgbm", "sklearn", "trec")
#: ERR's maximum grade when ``Convention.max_grade`` is None (the five-grade scale 0..4 of LETOR / Web30K / Yahoo).
DEFAULT_MAX_GRADE = 4.0


@dataclass(frozen=True)
class Convention:
    """How a metric treats gains, queries without relevant documents, ties, relevance and ERR's scale."""

    gain: str = "exponential"
    no_relevant: str = "skip"
    ties: str = "input"
    relevance_threshold: float = 1.0
    max_grade: float | None = None

    def __post_init__(self) -> None:
        for name, value, allowed in (("gain", self.gain, GAINS), ("no_relevant", self.no_relevant, NO_RELEVANT),
                                     ("ties", self.ties, TIES)):
            if value not in allowed:
                raise UsageError(f"unknown {name} {value!r}; expected one of: {', '.join(allowed)}")
        if not np.isfinite(self.relevance_threshold):
            raise UsageError(f"relevance threshold must be a finite number, got {self.relevance_threshold}")
        if self.max_grade is not None and not (np.isfinite(self.max_grade) and self.max_grade > 0):
            raise UsageError(f"max grade must be a positive number, got {self.max_grade}")

    @classmethod
    def preset(cls, name: str) -> Convention:
        """``paper``: exponential gain, skip, input order; ``lightgbm``: exponential, one, input order;
        ``sklearn``: linear gain, zero, average over ties; ``trec`` (trec_eval's): linear gain, zero, ties by docid
        descending in byte order."""
        if name == "paper":
            return cls(gain="exponential", no_relevant="skip", ties="input")
        if name == "lightgbm":
            return cls(gain="exponential", no_relevant="one", ties="input")
        if name == "sklearn":
            return cls(gain="linear", no_relevant="zero", ties="average")
        if name == "trec":
            return cls(gain="linear", no_relevant="zero", ties="docid-desc")
        raise UsageError(f"unknown convention preset {name!r}; expected one of: {', '.join(PRESETS)}")

    def with_(self, **changes) -> Convention:
        """A copy with some fields changed (None values are ignored), validated."""
        fields = {**asdict(self), **{k: v for k, v in changes.items() if v is not None}}
        return Convention(**fields)

    @property
    def err_max_grade(self) -> float:
        return DEFAULT_MAX_GRADE if self.max_grade is None else float(self.max_grade)

    def as_dict(self) -> dict:
        return {"gain": self.gain, "no_relevant": self.no_relevant, "ties": self.ties,
                "relevance_threshold": float(self.relevance_threshold), "max_grade": self.err_max_grade}

    def describe(self) -> str:
        """One line for reports: ``gain=exponential no_relevant=skip ties=input threshold=1 max_grade=4``."""
        return (f"gain={self.gain} no_relevant={self.no_relevant} ties={self.ties} "
                f"threshold={self.relevance_threshold:g} max_grade={self.err_max_grade:g}")


# ---------------------------------------------------------------------------------------------------------------------
# Metric names

#: The core metric names (this module's kernels); the registry (:mod:`rankcli.core.measures`) holds every metric,
#: its aliases and trec_eval names, and parses every spelling.
METRICS = CORE
ALIASES = {a: m.name for m in REGISTRY if m.name in CORE for a in (m.name, *m.aliases)}
#: Metrics computed from graded gains; the others are binary (relevant iff label >= threshold).
GRADED = frozenset(m.name for m in REGISTRY if m.graded)
#: Metrics whose best possible value is 1; under ``no_relevant="one"`` they score 1 on queries without relevance.
NORMALISED = frozenset(m.name for m in REGISTRY if m.normalised and m.family != "info")


# ---------------------------------------------------------------------------------------------------------------------
# Results


@dataclass
class EvalResult:
    """Means and per-query values of several metrics under one convention.

    ``queries`` counts the queries evaluated by every metric, ``skipped`` those that at least one metric skipped
    (``no_relevant="skip"``); ``evaluated`` gives the count per metric (they differ only when the graded and the binary
    notions of "relevant" disagree, e.g. a threshold above the smallest positive label).
    """

    convention: Convention
    queries: int
    skipped: int
    means: dict[str, float]
    per_query: dict[str, np.ndarray]
    evaluated: dict[str, int] = field(default_factory=dict)

    @property
    def total_queries(self) -> int:
        return self.queries + self.skipped

    def as_dict(self) -> dict:
        """``{"convention": {...}, "queries": N, "skipped": K, "metrics": {"ndcg@5": ...}}``"""
        return {"convention": self.convention.as_dict(), "queries": self.queries, "skipped": self.skipped,
                "metrics": {name: float(v) for name, v in self.means.items()}}


# ---------------------------------------------------------------------------------------------------------------------
# Computation


def _gain(labels: np.ndarray, gain: str) -> np.ndarray:
    clipped = np.maximum(labels, 0.0)  # negative labels (e.g. spam judgments) are simply not relevant
    return np.exp2(clipped) - 1.0 if gain == "exponential" else clipped


def _discount_prefix(n: int) -> np.ndarray:
    """``D[p] = sum_{i < p} 1 / log2(i + 2)``: the total discount of the first ``p`` positions."""
    out = np.zeros(n + 1)
    np.cumsum(1.0 / np.log2(np.arange(n, dtype=np.float64) + 2.0), out=out[1:])
    return out


def _harmonic_prefix(n: int) -> np.ndarray:
    """``H[p] = sum_{i < p} 1 / (i + 1)``."""
    out = np.zeros(n + 1)
    np.cumsum(1.0 / (np.arange(n, dtype=np.float64) + 1.0), out=out[1:])
    return out


def _check_inputs(labels, scores, offsets):
    labels = np.asarray(labels, dtype=np.float64)
    scores = np.asarray(scores, dtype=np.float64)
    offsets = np.asarray(offsets, dtype=np.int64)
    if labels.ndim != 1 or scores.shape != labels.shape:
        raise InputError(f"labels and scores must be 1-d arrays of equal length, got shapes {labels.shape} and "
                         f"{scores.shape}")
    if offsets.ndim != 1 or offsets.shape[0] < 1 or offsets[0] != 0 or offsets[-1] != labels.shape[0]:
        raise InputError(f"offsets must start at 0 and end at the number of rows ({labels.shape[0]})")
    if np.any(np.diff(offsets) <= 0):
        q = int(np.flatnonzero(np.diff(offsets) <= 0)[0])
        raise InputError(f"query {q} is empty or offsets decrease (offsets must be strictly increasing)")
    bad = np.isnan(scores)  # +-inf scores sort fine; NaN has no place in an order
    if bad.any():
        raise InputError(f"score is NaN at row {int(np.flatnonzero(bad)[0])}")
    if np.isnan(labels).any():
        raise InputError(f"label is NaN at row {int(np.flatnonzero(np.isnan(labels))[0])}")
    if np.isinf(labels).any():  # an infinite gain makes every DCG inf/inf: no number, so refused
        raise InputError(f"label is infinite at row {int(np.flatnonzero(np.isinf(labels))[0])}")
    return labels, scores, offsets


#: The largest label whose exponential gain ``2^label - 1`` a DCG can sum without overflowing float64
#: (2^1000 times any list shorter than 2^23 documents stays finite). Beyond it NDCG would be inf/inf.
EXPONENTIAL_GAIN_LABEL_LIMIT = 1000


def _check_exponential_gain(specs, labels, judg: _Judgments, convention: Convention) -> None:
    """Refuse labels whose exponential gain overflows, rather than print NaN or count the query as skipped."""
    if convention.gain != "exponential" or not judg.nq or not any("dcg" in s.name for s in specs):
        return
    top = float(judg.max_label.max())
    if top > EXPONENTIAL_GAIN_LABEL_LIMIT:
        above = np.flatnonzero(labels > EXPONENTIAL_GAIN_LABEL_LIMIT)
        where = f" at row {int(above[0])}" if above.shape[0] else " (an unranked judgment)"
        raise InputError(f"label {top:g}{where}: the exponential gain 2^label - 1 overflows beyond label "
                         f"{EXPONENTIAL_GAIN_LABEL_LIMIT}; use a linear gain (--gain linear, or --convention sklearn "
                         "or trec) or map the labels to grades")


class _Judgments:
    """Per-query facts that do not depend on the ranking: R, the ideal DCG@k, whether anything is relevant."""

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

    def _grades_at_least(self):
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

    def idcg(self, k: int | None) -> np.ndarray:
        """The ideal DCG@k of every query (all judged documents, labels descending)."""
        if k in self._idcg:
            return self._idcg[k]
        kk = self.max_len if k is None else min(k, self.max_len)
        D = _discount_prefix(max(self.max_len, 1))
        ge = self._grades_at_least()
        if ge is not None:
            ng = len(ge) - 1
            gains = _gain(np.arange(ng, dtype=np.float64), self.convention.gain)
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
            mat[valid] = _gain(all_labels, self.convention.gain)
            self._sorted_gains = -np.sort(-mat, axis=1)
        return self._sorted_gains[:, :kk] @ np.diff(D)[:kk]


def _topk_input_order(scores_mat: np.ndarray, kk: int) -> np.ndarray:
    """Column indices of the first ``kk`` cells of each row in the stable descending order of ``scores_mat``.

    Exact tie-break: among equal scores the lower column comes first, across the cut too. Padding cells must hold
    ``-inf`` and sit after the real cells, so they lose every tie.
    """
    q, w = scores_mat.shape
    if kk >= w or kk * 4 >= w:
        # Cheap enough to sort everything; a stable argsort of the negation gives exactly the order wanted.
        return np.argsort(-scores_mat, axis=1, kind="stable")[:, :kk]
    neg = -scores_mat
    cols = np.argpartition(neg, kk - 1, axis=1)[:, :kk]  # a top-kk set; arbitrary among ties at the cut
    cols.sort(axis=1)
    sel = np.take_along_axis(neg, cols, axis=1)
    t = sel.max(axis=1, keepdims=True)  # the kk-th largest score (negated)
    # The set is the exact one unless some row has a cell equal to the cut score left outside it: repair those rows
    # by taking, among the cells equal to the cut score, the lowest columns.
    ties_total = (neg == t).sum(axis=1)
    ties_taken = (sel == t).sum(axis=1)
    bad = np.flatnonzero(ties_total != ties_taken)
    if bad.shape[0]:
        nb, tb = neg[bad], t[bad]
        better = nb < tb
        equal = nb == tb
        need = kk - better.sum(axis=1)
        chosen = better | (equal & (np.cumsum(equal, axis=1) <= need[:, None]))
        cols[bad] = np.nonzero(chosen)[1].reshape(bad.shape[0], kk)
        sel[bad] = np.take_along_axis(nb, cols[bad], axis=1)
    # Columns ascend within each row, so a stable sort by score puts equal scores in input order.
    return np.take_along_axis(cols, np.argsort(sel, axis=1, kind="stable"), axis=1)


def _docid_tie_order(scores: np.ndarray, labels: np.ndarray, offsets: np.ndarray, docids) -> np.ndarray | None:
    """A permutation of the rows, within their queries, after which the stable "input" order of equal scores is the
    order of their document ids, descending in byte order (trec_eval's tie rule); None when no order changes.

    Only queries with a tie group whose labels differ are reordered: the order inside a group of equal labels cannot
    change any metric. Their document ids are compared as UTF-8 bytes (``bytes`` compare as ``strcmp`` does, unsigned;
    numpy's fixed-width bytes drop trailing NULs, where ``strcmp`` stops too), each query sorted on its own.
    """
    perm = None
    for qs, width in size_buckets(offsets):
        if width < 2:
            continue
        ranking = padded_ranking(scores, offsets, qs, width)
        rows, valid, smat = ranking.rows, ranking.valid, ranking.scores
        s_sorted, v_sorted = ranking.ranked(smat), ranking.ranked(valid)
        l_sorted = labels[ranking.ranked(rows)]
        # A group of equal scores with different labels has two neighbours (in sorted order) that differ in label.
        mixed = (s_sorted[:, 1:] == s_sorted[:, :-1]) & v_sorted[:, 1:] & (l_sorted[:, 1:] != l_sorted[:, :-1])
        need = np.flatnonzero(mixed.any(axis=1))
        if need.shape[0] == 0:
            continue
        rows, valid, smat = rows[need], valid[need], smat[need]
        if isinstance(docids, np.ndarray) and docids.dtype.kind == "S":  # already bytes (the TREC readers' form)
            encoded = docids[rows[valid]]
        else:
            names = np.asarray(docids, dtype=object)[rows[valid]]
            encoded = np.array([str(d).encode() for d in names.tolist()], dtype=bytes)
        key = np.zeros(rows.shape, dtype=encoded.dtype)  # padding: b""
        key[valid] = encoded
        rank = np.empty(rows.shape, dtype=np.int64)
        np.put_along_axis(rank, np.argsort(key, axis=1, kind="stable"), np.arange(width)[None, :], axis=1)
        # Real cells first (padding last, whatever its key), then score descending, then docid descending.
        new = np.lexsort((-rank, -smat, ~valid), axis=1)
        if perm is None:
            perm = np.arange(scores.shape[0])
        perm[rows[valid]] = np.take_along_axis(rows, new, axis=1)[valid]
    return perm


def per_query(specs: Sequence[MetricSpec | str], labels, scores, offsets, convention: Convention = Convention(), *,
              unranked_labels=None, unranked_offsets=None, docids=None, judged=None) -> dict[str, np.ndarray]:
    """One float64 value per query for each metric (key ``str(spec)``); NaN where the query is skipped.

    Parameters
    ----------
    specs : metric specs or their names (``"ndcg@10"``).
    labels, scores : (n_rows,) relevance labels and model scores, rows of a query contiguous.
    offsets : (n_queries + 1,) int64, query ``q`` is rows ``offsets[q]:offsets[q + 1]``; no query is empty.
    convention : see :class:`Convention` and the module docstring.
    unranked_labels, unranked_offsets : judged documents of each query that the ranking does not contain (TREC qrels
        entries missing from a run): they count in the ideal DCG and in the number of relevant documents ``R``.
    docids : (n_rows,) document ids (``str``), needed by ``ties="docid-desc"`` and ignored otherwise.
    judged : (n_rows,) bool, whether each row is in the qrels (TREC runs); None: every row is judged. Only bpref,
        infAP and num_nonrel_judged_ret distinguish unjudged documents (see :mod:`rankcli.core.trec_kernels`).
    """
    specs = [parse_metric(s) for s in specs]
    specs = [s for s in specs if s.record.family != "info"]  # runid: printed, not computed
    labels, scores, offsets = _check_inputs(labels, scores, offsets)
    if judged is not None:
        judged = np.asarray(judged, dtype=bool)
        if judged.shape != labels.shape:
            raise InputError(f"judged must have one entry per row ({labels.shape[0]}), got {judged.shape[0]}")
    if (unranked_labels is None) != (unranked_offsets is None):
        raise UsageError("unranked_labels and unranked_offsets go together")
    if convention.ties == "docid-desc":
        if docids is None:
            raise UsageError("ties=docid-desc (the trec convention) orders equal scores by document id, and this "
                             "input has none; choose another tie rule (--ties input or average)")
        if len(docids) != labels.shape[0]:
            raise InputError(f"docids must have one entry per row ({labels.shape[0]}), got {len(docids)}")
        perm = _docid_tie_order(scores, labels, offsets, docids)
        if perm is not None:  # rows move only within their query: the per-query results keep their order
            labels, scores = labels[perm], scores[perm]
            if judged is not None:
                judged = judged[perm]
    nq = offsets.shape[0] - 1
    judg = _Judgments(labels, offsets, unranked_labels, unranked_offsets, convention)
    _check_exponential_gain(specs, labels, judg, convention)
    if any(s.name == "err" for s in specs):
        gmax = convention.err_max_grade
        top = float(max(judg.max_label.max(), 0.0)) if judg.nq else 0.0
        if top > gmax:
            above = np.flatnonzero(labels > gmax)
            where = f" at row {int(above[0])}" if above.shape[0] else " (an unranked judgment)"
            raise InputError(f"err: label {top:g}{where} exceeds the maximum grade {gmax:g}; "
                             "set the maximum grade (--max-grade) to the top of your label scale")
    out = {str(s): np.empty(nq) for s in specs}
    trec_specs = [s for s in specs if s.record.family == "trec"]
    if trec_specs:
        from rankcli.core import trec_kernels

        out.update(trec_kernels.per_query(trec_specs, labels, scores, offsets, judg, convention, judged))
    specs_all, specs = specs, [s for s in specs if s.record.family == "core"]
    if not specs:
        _apply_no_relevant(specs_all, out, judg, convention)
        return out
    ks = [s.k for s in specs]
    need_full = any(k is None for k in ks)
    kmax = None if need_full else max(ks)
    width_max = int(np.max(np.diff(offsets))) if nq else 0
    D = _discount_prefix(max(width_max, 1) + 1)
    H = _harmonic_prefix(max(width_max, 1) + 1)
    thr = convention.relevance_threshold
    for qs, width in size_buckets(offsets):
        rows, valid = padded_rows(offsets, qs, width)
        sizes = (offsets[qs + 1] - offsets[qs]).astype(np.float64)
        if convention.ties != "average":  # "docid-desc" rows are already in docid order within ties
            kk = width if kmax is None else min(kmax, width)
            smat = scores[rows]
            smat[~valid] = -np.inf
            cols = _topk_input_order(smat, kk)
            r_rows = np.take_along_axis(rows, cols, axis=1)
            r_valid = np.take_along_axis(valid, cols, axis=1)
            lab = labels[r_rows]
            values = _input_metrics(specs, lab, r_valid, kk, sizes, judg, qs, D, thr, convention)
        else:
            values = _average_metrics(specs, labels, scores, offsets, rows, valid, width, sizes, judg, qs, D, H, thr,
                                      convention)
        for name, v in values.items():
            out[name][qs] = v
    _apply_no_relevant(specs_all, out, judg, convention)
    return out


def _cut(k: int | None, kk: int) -> int:
    return kk if k is None else min(k, kk)


def _input_metrics(specs, lab, valid, kk, sizes, judg, qs, D, thr, convention) -> dict[str, np.ndarray]:
    res: dict[str, np.ndarray] = {}
    disc = np.diff(D[: kk + 1])
    cache: dict[str, np.ndarray] = {}

    def dcg_cum():
        if "dcg" not in cache:
            g = _gain(lab, convention.gain)
            g[~valid] = 0.0
            cache["dcg"] = np.cumsum(g * disc[None, :], axis=1)
        return cache["dcg"]

    def rel():
        if "rel" not in cache:
            r = (lab >= thr) & valid
            cache["rel"] = r
            cache["relcum"] = np.cumsum(r, axis=1)
        return cache["rel"], cache["relcum"]

    n_rel = judg.n_relevant[qs]
    for spec in specs:
        c = _cut(spec.k, kk)
        name = spec.name
        if name in ("dcg", "ndcg"):
            v = dcg_cum()[:, c - 1].copy()
            if name == "ndcg":
                ideal = judg.idcg(spec.k)[qs]
                with np.errstate(divide="ignore", invalid="ignore"):
                    v = np.where(ideal > 0, v / ideal, 0.0)
        elif name == "precision":
            _, relcum = rel()
            v = relcum[:, c - 1] / (sizes if spec.k is None else float(spec.k))
        elif name == "recall":
            _, relcum = rel()
            with np.errstate(divide="ignore", invalid="ignore"):
                v = np.where(n_rel > 0, relcum[:, c - 1] / n_rel, 0.0)
        elif name == "map":
            r, relcum = rel()
            prec = relcum[:, :c] / np.arange(1, c + 1, dtype=np.float64)[None, :]
            s = np.where(r[:, :c], prec, 0.0).sum(axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                v = np.where(n_rel > 0, s / n_rel, 0.0)
        elif name == "mrr":
            r, _ = rel()
            first = np.argmax(r[:, :c], axis=1)
            hit = r[:, :c][np.arange(r.shape[0]), first]
            v = np.where(hit, 1.0 / (first + 1.0), 0.0)
        elif name == "err":
            gmax = convention.err_max_grade
            R = (np.exp2(np.maximum(lab[:, :c], 0.0)) - 1.0) / np.exp2(gmax)
            R[~valid[:, :c]] = 0.0
            stop = np.cumprod(1.0 - R, axis=1)
            reach = np.ones_like(R)
            reach[:, 1:] = stop[:, :-1]
            v = (R * reach / np.arange(1, c + 1, dtype=np.float64)[None, :]).sum(axis=1)
        else:  # pragma: no cover - MetricSpec validates names
            raise AssertionError(name)
        res[str(spec)] = v
    return res


def _average_metrics(specs, labels, scores, offsets, rows, valid, width, sizes, judg, qs, D, H, thr, convention):
    """Expected metric values over all orderings of tied documents, in closed form per tie group."""
    nq_b = rows.shape[0]
    ranking = padded_ranking(scores, offsets, qs, width)
    s_sorted, v_sorted = ranking.ranked(ranking.scores), ranking.ranked(ranking.valid)
    lab = labels[ranking.ranked(ranking.rows)]
    pos = np.arange(width, dtype=np.int64)
    new = np.ones((nq_b, width), dtype=bool)
    new[:, 1:] = (s_sorted[:, 1:] != s_sorted[:, :-1]) | (v_sorted[:, 1:] != v_sorted[:, :-1])
    start = np.maximum.accumulate(np.where(new, pos[None, :], 0), axis=1)  # each cell's tie group's first position
    gid = (np.arange(nq_b, dtype=np.int64)[:, None] * width + start).ravel()  # unique group id over the bucket
    n_cells = nq_b * width
    vflat = v_sorted.ravel()
    gsize = np.bincount(gid, weights=vflat, minlength=n_cells)[gid].reshape(nq_b, width)
    gsize = np.where(v_sorted, gsize, 1.0)
    end = start + gsize.astype(np.int64)  # one past the group's last position
    res: dict[str, np.ndarray] = {}
    rel = (lab >= thr) & v_sorted
    relf = rel.astype(np.float64)
    grel = np.bincount(gid, weights=relf.ravel(), minlength=n_cells)[gid].reshape(nq_b, width)
    relcum_excl = np.cumsum(relf, axis=1) - relf
    before = np.take_along_axis(relcum_excl, start, axis=1)  # relevant documents in earlier groups
    n_rel = judg.n_relevant[qs]
    gains = _gain(lab, convention.gain)
    gains[~v_sorted] = 0.0
    for spec in specs:
        kk = width if spec.k is None else spec.k
        s_k = np.minimum(start, kk)
        e_k = np.minimum(end, kk)
        m = (e_k - s_k).astype(np.float64)  # positions of the cell's group inside the top k
        name = spec.name
        if name in ("dcg", "ndcg"):
            # Each document's expected discount: the mean discount of the positions its group occupies (in the top k).
            v = (gains * (D[e_k] - D[s_k]) / gsize).sum(axis=1)
            if name == "ndcg":
                ideal = judg.idcg(spec.k)[qs]
                with np.errstate(divide="ignore", invalid="ignore"):
                    v = np.where(ideal > 0, v / ideal, 0.0)
        elif name in ("precision", "recall"):
            hits = (relf * m / gsize).sum(axis=1)  # expected relevant documents in the top k
            if name == "precision":
                v = hits / (sizes if spec.k is None else float(spec.k))
            else:
                with np.errstate(divide="ignore", invalid="ignore"):
                    v = np.where(n_rel > 0, hits / n_rel, 0.0)
        elif name == "map":
            # A relevant document of a group (start s, size n, r relevant, c relevant before) lands at each of the
            # group's positions p with probability 1/n, and then has in expectation (r-1)(p-s)/(n-1) relevant group
            # mates above it: E[prec] = (c + 1 + (r-1)(p-s)/(n-1)) / (p+1). Summed over p in the top k with
            # sum (p-s)/(p+1) = m - (s+1) * (H[e] - H[s]).
            dH = H[e_k] - H[s_k]
            with np.errstate(divide="ignore", invalid="ignore"):
                mate = np.where(gsize > 1, (grel - 1.0) / (gsize - 1.0), 0.0)
            term = ((before + 1.0) * dH + mate * (m - (start + 1.0) * dH)) / gsize
            s = (relf * term).sum(axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                v = np.where(n_rel > 0, s / n_rel, 0.0)
        elif name == "mrr":
            # Only the first group holding a relevant document matters. With n documents of which r relevant, the
            # first relevant one sits at offset j with P(j) = C(n-1-j, r-1) / C(n, r); P(0) = r/n and
            # P(j+1)/P(j) = (n-r-j)/(n-1-j).
            has = rel.any(axis=1)
            first = np.argmax(rel, axis=1)
            idx = np.arange(nq_b)
            s0 = start[idx, first].astype(np.float64)
            n0 = gsize[idx, first]
            r0 = np.where(has, grel[idx, first], 1.0)  # queries without a relevant document: any r > 0, masked below
            j = np.arange(width, dtype=np.float64)[None, :]
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(j + 1.0 <= (n0 - r0)[:, None], (n0[:, None] - r0[:, None] - j) /
                                 (n0[:, None] - 1.0 - j), 0.0)
            p = np.empty((nq_b, width))
            p[:, 0] = r0 / n0
            if width > 1:
                p[:, 1:] = p[:, :1] * np.cumprod(ratio[:, :-1], axis=1)
            rank = s0[:, None] + j + 1.0
            v = np.where(rank <= kk, p / rank, 0.0).sum(axis=1)
            v = np.where(has, v, 0.0)
        elif name == "err":
            v = _average_err(lab, v_sorted, new, start, gsize, kk, convention.err_max_grade)
        else:  # pragma: no cover - MetricSpec validates names
            raise AssertionError(name)
        res[str(spec)] = v
    return res


def _average_err(lab, valid, new, start, gsize, kk, max_grade):
    """Expected ERR@kk over the orders of tied documents.

    With ``x = 1 - R`` the probability of reading past a document, ERR = sum_r (1/r) R_r prod_{i<r} x_i. Earlier tie
    groups contribute the same product ``P`` to every order of a group, and inside a group of n documents starting at
    position s, ``R_{(j)} prod_{i<j} x_{(i)} = prod_{i<j} x_{(i)} - prod_{i<=j} x_{(i)}``; so the group adds
    ``P * sum_j (T_j - T_{j+1}) / (s + j + 1)`` where ``T_j`` is the mean of ``prod x`` over the group's j-subsets
    (the expected product over the first j places of a random order). ``T`` comes from the stable recurrence
    ``T_m[j] = ((m - j) / m) T_{m-1}[j] + (j / m) x_m T_{m-1}[j-1]`` over the group's members, vectorised over groups.
    """
    nq_b, width = lab.shape
    x = 1.0 - (np.exp2(np.maximum(lab, 0.0)) - 1.0) / np.exp2(max_grade)
    x = np.where(valid, x, 1.0)
    before = np.ones_like(x)
    before[:, 1:] = np.cumprod(x, axis=1)[:, :-1]
    pos = np.arange(width, dtype=np.int64)[None, :]
    first = new & valid & (pos < kk)  # first cells of the groups that reach into the top kk
    gq, gcol = np.nonzero(first)
    if gq.shape[0] == 0:
        return np.zeros(nq_b)
    ng = gsize[gq, gcol].astype(np.int64)
    order = np.argsort(-ng, kind="stable")  # largest groups first: the active groups of step m are a prefix
    gq, gcol, ng = gq[order], gcol[order], ng[order]
    n_groups = gq.shape[0]
    number = np.full((nq_b, width), -1, dtype=np.int64)
    number[gq, gcol] = np.arange(n_groups)
    cell_group = np.take_along_axis(number, start, axis=1)
    member = (pos - start)
    sel = valid & (cell_group >= 0)
    maxn = int(ng[0])
    members = np.ones((n_groups, maxn))
    members[cell_group[sel], member[sel]] = x[sel]
    J = min(maxn, kk)
    T = np.zeros((n_groups, J + 1))
    T[:, 0] = 1.0
    neg_sizes = -ng  # ascending
    for m in range(1, maxn + 1):
        active = int(np.searchsorted(neg_sizes, -m, side="right"))  # groups with at least m members
        top = min(m, J)
        j = np.arange(1, top + 1, dtype=np.float64)
        sub = T[:active]
        sub[:, 1:top + 1] = ((m - j) / m) * sub[:, 1:top + 1] + (j / m) * members[:active, m - 1:m] * sub[:, :top]
    s = gcol.astype(np.float64)
    jj = np.arange(J, dtype=np.float64)[None, :]
    within = jj < np.minimum(ng, kk - gcol)[:, None]
    val = np.where(within, (T[:, :-1] - T[:, 1:]) / (s[:, None] + jj + 1.0), 0.0).sum(axis=1)
    return np.bincount(gq, weights=before[gq, gcol] * val, minlength=nq_b)


def _apply_no_relevant(specs, out, judg, convention) -> None:
    for spec in specs:
        if spec.record.aggregate in ("sum", "count"):
            continue  # counts are counts, whatever the query holds
        has = judg.has_graded if spec.graded else judg.has_binary
        if has.all():
            continue
        v = out[str(spec)]
        if convention.no_relevant == "skip":
            v[~has] = np.nan
        elif convention.no_relevant == "zero":
            v[~has] = 0.0
        else:
            v[~has] = 1.0 if spec.name in NORMALISED else 0.0


def aggregate(spec: MetricSpec, values: np.ndarray) -> float:
    """A metric's summary over the queries not skipped (NaN values): the mean, or as its registry record says: the
    sum (counts), the number of queries (num_q), the geometric mean with trec_eval's floor 1e-5 (gm_map, gm_bpref)."""
    v = values[~np.isnan(values)]
    how = spec.record.aggregate
    if how == "count":
        return float(v.shape[0])
    if how == "sum":
        return float(v.sum())
    if v.shape[0] == 0:
        return float("nan")
    if how == "gmean":
        return float(np.exp(np.log(np.maximum(v, 1e-5)).mean()))
    return float(v.mean())


def summarize(specs: Sequence[MetricSpec], pq: dict[str, np.ndarray], convention: Convention) -> EvalResult:
    """An :class:`EvalResult` from per-query values (NaN = skipped)."""
    nq = len(next(iter(pq.values()))) if pq else 0
    skipped_any = np.zeros(nq, dtype=bool)
    means, evaluated = {}, {}
    for spec in specs:
        name = str(spec)
        v = pq[name]
        ok = ~np.isnan(v)
        skipped_any |= ~ok
        evaluated[name] = int(ok.sum())
        means[name] = aggregate(spec, v)
    skipped = int(skipped_any.sum())
    return EvalResult(convention=convention, queries=nq - skipped, skipped=skipped, means=means, per_query=pq,
                      evaluated=evaluated)


def evaluate(specs: Sequence[MetricSpec | str], labels, scores, offsets, convention: Convention = Convention(), *,
             unranked_labels=None, unranked_offsets=None, docids=None, judged=None) -> EvalResult:
    """Per-query values and their summaries (means over the queries not skipped; sums for counts; see
    :func:`aggregate`) for several metrics."""
    specs = [s for s in (parse_metric(s) for s in specs) if s.record.family != "info"]
    pq = per_query(specs, labels, scores, offsets, convention, unranked_labels=unranked_labels,
                   unranked_offsets=unranked_offsets, docids=docids, judged=judged)
    return summarize(specs, pq, convention)

