"""Ranking metrics over a whole batch of queries at once, with every convention explicit.

>>> from rankcli.core.metrics import Convention, evaluate
>>> evaluate(["ndcg@10"], labels, scores, offsets, Convention.preset("paper")).means   # doctest: +SKIP

Metrics (``k`` omitted means the whole list; each record in :mod:`rankcli.core.metrics.definitions` gives the formula
and the reference; :mod:`rankcli.core.metrics.specs` is the registry of every name and alias, trec_eval's included):

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
- trec_eval's other measures (bpref, infAP, Rprec, success@k, ...): :mod:`rankcli.core.metrics.trec_eval_measures`.
  ``rankcli trec_eval`` computes the measures it shares with these again, in trec_eval's order of operations
  (:mod:`rankcli.core.trec_eval`: the twins, checked equal by ``tests/evaluate/test_measure_twins.py``).

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

The modules: :mod:`~rankcli.core.metrics.convention` (the conventions), :mod:`~rankcli.core.metrics.judgments`
(what the judgments fix: R, the ideal DCG), :mod:`~rankcli.core.metrics.ties` (orders of equal scores),
:mod:`~rankcli.core.metrics.buckets` (queries laid out for the kernels), :mod:`~rankcli.core.metrics.definitions`
(one record per metric), :mod:`~rankcli.core.metrics.evaluation` (the entry points).
"""

from rankcli.core.metrics.convention import DEFAULT_MAX_GRADE, GAINS, NO_RELEVANT, PRESETS, TIES, Convention
from rankcli.core.metrics.definitions import KERNELS
from rankcli.core.metrics.evaluation import (
    EXPONENTIAL_GAIN_LABEL_LIMIT,
    EvalResult,
    aggregate,
    evaluate,
    per_query,
    summarize,
)
from rankcli.core.metrics.specs import MetricSpec, UnknownMetricError, parse_metric, parse_metrics

__all__ = [
    "Convention", "DEFAULT_MAX_GRADE", "EXPONENTIAL_GAIN_LABEL_LIMIT", "EvalResult", "GAINS", "KERNELS", "MetricSpec",
    "NO_RELEVANT", "PRESETS", "TIES", "UnknownMetricError", "aggregate", "evaluate", "parse_metric", "parse_metrics",
    "per_query", "summarize",
]
