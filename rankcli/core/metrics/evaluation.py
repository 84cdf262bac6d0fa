"""Per-query values of any metrics of the registry, and their summaries: the entry points of
:mod:`rankcli.core.metrics`.

:func:`per_query` checks the inputs, puts equal scores in the convention's order, computes the core metrics bucket
by bucket with their kernels (:mod:`rankcli.core.metrics.definitions`) and the trec_eval measures with
:mod:`rankcli.core.metrics.trec_eval_measures`, then gives queries without a relevant document the convention's
value.
:func:`evaluate` adds the summaries (:func:`aggregate`) in an :class:`EvalResult`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from rankcli.core.groups import size_buckets
from rankcli.core.metrics import trec_eval_measures
from rankcli.core.metrics.buckets import RankedBucket, TieBucket
from rankcli.core.metrics.convention import Convention
from rankcli.core.metrics.definitions import KERNELS
from rankcli.core.metrics.judgments import Judgments, discount_prefix, harmonic_prefix
from rankcli.core.metrics.specs import MetricSpec, parse_metric
from rankcli.core.metrics.ties import docid_tie_order
from rankcli.errors import InputError, UsageError

#: The largest label whose exponential gain ``2^label - 1`` a DCG can sum without overflowing float64
#: (2^1000 times any list shorter than 2^23 documents stays finite). Beyond it NDCG would be inf/inf.
EXPONENTIAL_GAIN_LABEL_LIMIT = 1000


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

    def as_dict(self) -> dict:
        """``{"convention": {...}, "queries": N, "skipped": K, "metrics": {"ndcg@5": ...}}``"""
        return {"convention": self.convention.as_dict(), "queries": self.queries, "skipped": self.skipped,
                "metrics": {name: float(v) for name, v in self.means.items()}}


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


def _check_label_scale(specs, labels, judg: Judgments, convention: Convention) -> None:
    """Refuse labels whose exponential gain overflows, or above ERR's top grade, rather than print NaN or count the
    query as skipped."""
    if not judg.nq:
        return
    top = float(judg.max_label.max())
    if convention.gain == "exponential" and any("dcg" in s.name for s in specs) and top > EXPONENTIAL_GAIN_LABEL_LIMIT:
        raise InputError(f"label {top:g}{_where(labels, EXPONENTIAL_GAIN_LABEL_LIMIT)}: the exponential gain "
                         f"2^label - 1 overflows beyond label {EXPONENTIAL_GAIN_LABEL_LIMIT}; use a linear gain "
                         "(--gain linear, or --convention sklearn or trec) or map the labels to grades")
    gmax = convention.err_max_grade
    if any(s.name == "err" for s in specs) and max(top, 0.0) > gmax:
        raise InputError(f"err: label {max(top, 0.0):g}{_where(labels, gmax)} exceeds the maximum grade {gmax:g}; "
                         "set the maximum grade (--max-grade) to the top of your label scale")


def _where(labels: np.ndarray, limit: float) -> str:
    above = np.flatnonzero(labels > limit)
    return f" at row {int(above[0])}" if above.shape[0] else " (an unranked judgment)"


def _docid_order(labels, scores, offsets, docids, judged):
    """Rows reordered within their queries so that equal scores stand in docid order (descending)."""
    if docids is None:
        raise UsageError("ties=docid-desc (the trec convention) orders equal scores by document id, and this "
                         "input has none; choose another tie rule (--ties input or average)")
    if len(docids) != labels.shape[0]:
        raise InputError(f"docids must have one entry per row ({labels.shape[0]}), got {len(docids)}")
    perm = docid_tie_order(scores, labels, offsets, docids)
    if perm is None:
        return labels, scores, judged
    # rows move only within their query: the per-query results keep their order
    return labels[perm], scores[perm], None if judged is None else judged[perm]


def per_query(specs: Sequence[MetricSpec | str], labels, scores, offsets, convention: Convention = Convention(), *,
              unranked_labels=None, unranked_offsets=None, docids=None, judged=None) -> dict[str, np.ndarray]:
    """One float64 value per query for each metric (key ``str(spec)``); NaN where the query is skipped.

    Parameters
    ----------
    specs : metric specs or their names (``"ndcg@10"``).
    labels, scores : (n_rows,) relevance labels and model scores, rows of a query contiguous.
    offsets : (n_queries + 1,) int64, query ``q`` is rows ``offsets[q]:offsets[q + 1]``; no query is empty.
    convention : see :class:`Convention` and :mod:`rankcli.core.metrics`.
    unranked_labels, unranked_offsets : judged documents of each query that the ranking does not contain (TREC qrels
        entries missing from a run): they count in the ideal DCG and in the number of relevant documents ``R``.
    docids : (n_rows,) document ids (``str``), needed by ``ties="docid-desc"`` and ignored otherwise.
    judged : (n_rows,) bool, whether each row is in the qrels (TREC runs); None: every row is judged. Only bpref,
        infAP and num_nonrel_judged_ret distinguish unjudged documents (see
        :mod:`rankcli.core.metrics.trec_eval_measures`).
    """
    specs = [s for s in (parse_metric(s) for s in specs) if s.record.family != "info"]  # runid: printed only
    labels, scores, offsets = _check_inputs(labels, scores, offsets)
    if judged is not None:
        judged = np.asarray(judged, dtype=bool)
        if judged.shape != labels.shape:
            raise InputError(f"judged must have one entry per row ({labels.shape[0]}), got {judged.shape[0]}")
    if (unranked_labels is None) != (unranked_offsets is None):
        raise UsageError("unranked_labels and unranked_offsets go together")
    if convention.ties == "docid-desc":
        labels, scores, judged = _docid_order(labels, scores, offsets, docids, judged)
    judg = Judgments(labels, offsets, unranked_labels, unranked_offsets, convention)
    _check_label_scale(specs, labels, judg, convention)
    out = {str(s): np.empty(offsets.shape[0] - 1) for s in specs}
    trec_specs = [s for s in specs if s.record.family == "trec"]
    if trec_specs:
        out.update(trec_eval_measures.per_query(trec_specs, labels, scores, offsets, judg, convention, judged))
    core = [s for s in specs if s.record.family == "core"]
    if core:
        _core_per_query(core, labels, scores, offsets, judg, convention, out)
    apply_no_relevant(specs, out, judg, convention)
    return out


def _core_per_query(specs, labels, scores, offsets, judg, convention, out) -> None:
    """The core metrics' values into ``out``, one size bucket of queries at a time, by the convention's tie rule."""
    ks = [s.k for s in specs]
    kmax = None if any(k is None for k in ks) else max(ks)
    width_max = int(np.max(np.diff(offsets))) if offsets.shape[0] > 1 else 0
    D = discount_prefix(max(width_max, 1) + 1)
    H = harmonic_prefix(max(width_max, 1) + 1)
    for qs, width in size_buckets(offsets):
        if convention.ties != "average":  # "docid-desc" rows are already in docid order within ties
            kk = width if kmax is None else min(kmax, width)
            ranked = RankedBucket.build(labels, scores, offsets, qs, width, kk, judg, convention, D)
            for spec in specs:
                out[str(spec)][qs] = KERNELS[spec.name].input(ranked, spec)
        else:
            ties = TieBucket.build(labels, scores, offsets, qs, width, judg, convention, D, H)
            for spec in specs:
                out[str(spec)][qs] = KERNELS[spec.name].average(ties, spec)


def apply_no_relevant(specs: Sequence[MetricSpec], out: dict[str, np.ndarray], judg: Judgments,
                      convention: Convention) -> None:
    """Give the queries without a relevant document the convention's value, in place: NaN (``skip``), 0 (``zero``),
    or 1 for normalised metrics and 0 for the others (``one``). Counts (sums) keep their values.

    Parameters
    ----------
    specs : the metrics of ``out``. out : ``str(spec)`` -> per-query values. judg : the queries' judgments (which
        have a relevant document, graded or binary). convention : its ``no_relevant``.
    """
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
            v[~has] = 1.0 if spec.record.normalised else 0.0


def aggregate(spec: MetricSpec, values: np.ndarray) -> float:
    """A metric's summary over the queries not skipped (NaN values): the mean, or as its registry record says: the
    sum (counts), the number of queries (num_q), the geometric mean with trec_eval's floor 1e-5 (gm_map, gm_bpref).

    Parameters
    ----------
    spec : the metric. values : (n_queries,) its per-query values, NaN where skipped.
    """
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
    """An :class:`EvalResult` from per-query values.

    Parameters
    ----------
    specs : the metrics. pq : ``str(spec)`` -> (n_queries,) values, NaN = skipped. convention : recorded in the result.
    """
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
    :func:`aggregate`) for several metrics.

    Parameters
    ----------
    specs, labels, scores, offsets, convention, unranked_labels, unranked_offsets, docids, judged : as
        :func:`per_query`.

    >>> import numpy as np
    >>> r = evaluate(["ndcg@2"], np.array([0.0, 2.0, 1.0]), np.array([0.9, 0.8, 0.1]), np.array([0, 3]))
    >>> round(r.means["ndcg@2"], 4)
    0.5213
    """
    specs = [s for s in (parse_metric(s) for s in specs) if s.record.family != "info"]
    pq = per_query(specs, labels, scores, offsets, convention, unranked_labels=unranked_labels,
                   unranked_offsets=unranked_offsets, docids=docids, judged=judged)
    return summarize(specs, pq, convention)
