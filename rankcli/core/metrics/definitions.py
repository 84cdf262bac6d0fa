"""The core metrics, one record each: its definition (formula and reference) and its kernels for both tie rules.

A record's name is its key in the metric registry (:mod:`rankcli.core.metrics.specs`), which holds the aliases, the
trec_eval names and the parser of every spelling; this module holds how each metric is computed:

- ``input(bucket, spec)``: the value on one ranking (ties in input order, or in trec_eval's docid order), from a
  :class:`~rankcli.core.metrics.buckets.RankedBucket`;
- ``average(bucket, spec)``: the expected value over all orders of tied documents (McSherry & Najork, "Computing
  information retrieval performance measures efficiently in the presence of tied scores", ECIR 2008), in closed
  form per tie group, from a :class:`~rankcli.core.metrics.buckets.TieBucket`.

Both return one float64 per query of the bucket. Notation: ranks ``i`` are 1-based, ``l_i`` is the label at rank
``i``, ``rel_i`` whether it is relevant (``l_i >= threshold``), ``R`` the query's number of relevant documents (ranked
or not), ``k`` the cutoff (the whole list when omitted). Queries without a relevant document are given their value
afterwards, by the convention (:func:`rankcli.core.metrics.evaluation.apply_no_relevant`).
"""

from __future__ import annotations

import numpy as np

from rankcli.core.metrics.buckets import TieBucket
from rankcli.core.metrics.specs import BY_NAME, Measure, MetricSpec


def _ratio(v: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """``v / denominator``, 0 where the denominator is 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, v / denominator, 0.0)


class CoreMetric:
    """A core metric: ``name`` (its registry key), its definition in the class docstring, and its two kernels, the
    static methods ``input(b: RankedBucket, spec) -> (nb,)`` and ``average(b: TieBucket, spec) -> (nb,)``."""

    name: str

    @classmethod
    def record(cls) -> Measure:
        """The registry record: aliases, trec_eval names, aggregation."""
        return BY_NAME[cls.name]


class DCG(CoreMetric):
    """Discounted cumulative gain (Järvelin & Kekäläinen, "Cumulated gain-based evaluation of IR techniques",
    ACM TOIS 20(4), 2002)::

        DCG@k = sum_{i <= k} g(l_i) / log2(1 + i)

    with the gain ``g(l) = 2^l - 1`` (exponential, Burges et al., ICML 2005: the paper's and LightGBM's) or
    ``g(l) = l`` (linear: trec_eval's and scikit-learn's), negative labels gaining 0. Not normalised.
    Averaged over ties, each document's expected discount is the mean discount of the positions its tie group
    occupies (inside the top k).
    """

    name = "dcg"

    @staticmethod
    def input(b, spec):
        """DCG@k of each ranking: the cumulated DCG at rank min(k, kk)."""
        return b.dcg_cum[:, b.cut(spec.k) - 1].copy()

    @staticmethod
    def average(b, spec):
        """Expected DCG@k: each gain times the mean discount of its tie group's positions in the top k."""
        _, s_k, e_k, _ = b.window(spec.k)
        return (b.gains * (b.D[e_k] - b.D[s_k]) / b.gsize).sum(axis=1)


class NDCG(CoreMetric):
    """Normalised DCG (Järvelin & Kekäläinen, ACM TOIS 2002)::

        NDCG@k = DCG@k / IDCG@k

    where IDCG@k is the DCG@k of the ideal ordering (labels descending) of every judged document of the query,
    including those the ranking does not contain (as trec_eval does). 0 when IDCG@k is 0 before the convention
    decides the value of queries without a relevant document.
    """

    name = "ndcg"

    @staticmethod
    def input(b, spec):
        """DCG@k over the ideal DCG@k, on one ranking."""
        return _ratio(DCG.input(b, spec), b.ideal(spec.k))

    @staticmethod
    def average(b, spec):
        """Expected DCG@k over the ideal DCG@k (the ideal does not depend on the order of ties)."""
        return _ratio(DCG.average(b, spec), b.ideal(spec.k))


class ERR(CoreMetric):
    """Expected reciprocal rank (Chapelle, Metzler, Zhang & Grinspan, "Expected reciprocal rank for graded
    relevance", CIKM 2009), the cascade model's expected ``1 / rank`` of the document that satisfies the user::

        ERR@k = sum_{i <= k} (1 / i) R_i prod_{j < i} (1 - R_j),   R_i = (2^{l_i} - 1) / 2^max_grade

    ``max_grade`` is the convention's (4 by default); ERR always uses this exponential mapping, whatever the gain.
    Averaged over ties, see :func:`_average_err`.
    """

    name = "err"

    @staticmethod
    def input(b, spec):
        """ERR@k of each ranking, from the running product of the probabilities of reading on."""
        c = b.cut(spec.k)
        R = (np.exp2(np.maximum(b.lab[:, :c], 0.0)) - 1.0) / np.exp2(b.convention.err_max_grade)
        R[~b.valid[:, :c]] = 0.0
        stop = np.cumprod(1.0 - R, axis=1)
        reach = np.ones_like(R)
        reach[:, 1:] = stop[:, :-1]
        return (R * reach / np.arange(1, c + 1, dtype=np.float64)[None, :]).sum(axis=1)

    @staticmethod
    def average(b, spec):
        """Expected ERR@k over the orders of tied documents (:func:`_average_err`)."""
        kk, _, _, _ = b.window(spec.k)
        return _average_err(b.lab, b.valid, b.new, b.start, b.gsize, kk, b.convention.err_max_grade)


class MRR(CoreMetric):
    """Reciprocal rank (Voorhees, "The TREC-8 question answering track report", TREC 1999; trec_eval's
    ``recip_rank``)::

        RR@k = 1 / min{i <= k : rel_i}, and 0 when no relevant document is in the top k

    MRR is its mean over queries. Averaged over ties, only the first tie group holding a relevant document matters:
    with ``n`` documents of which ``r`` relevant, the first relevant one sits at offset ``j`` with probability
    ``P(j) = C(n-1-j, r-1) / C(n, r)``; ``P(0) = r/n`` and ``P(j+1)/P(j) = (n-r-j)/(n-1-j)``.
    """

    name = "mrr"

    @staticmethod
    def input(b, spec):
        """1 / rank of the first relevant document in the top k, 0 without one."""
        c = b.cut(spec.k)
        r = b.rel[:, :c]
        first = np.argmax(r, axis=1)
        hit = r[np.arange(r.shape[0]), first]
        return np.where(hit, 1.0 / (first + 1.0), 0.0)

    @staticmethod
    def average(b, spec):
        """Expected 1 / rank of the first relevant document, from its tie group's offset distribution."""
        kk, _, _, _ = b.window(spec.k)
        nq_b, width = b.lab.shape
        has = b.rel.any(axis=1)
        first = np.argmax(b.rel, axis=1)
        idx = np.arange(nq_b)
        s0 = b.start[idx, first].astype(np.float64)
        n0 = b.gsize[idx, first]
        r0 = np.where(has, b.grel[idx, first], 1.0)  # queries without a relevant document: any r > 0, masked below
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
        return np.where(has, v, 0.0)


class MAP(CoreMetric):
    """Average precision (Buckley & Voorhees, "Evaluating evaluation measure stability", SIGIR 2000; trec_eval's
    ``map`` and ``map_cut``)::

        AP@k = (1 / R) sum_{i <= k, rel_i} P@i,   P@i = (relevant documents in the top i) / i

    ``R`` counts the relevant documents the ranking misses too; MAP is the mean over queries. Averaged over ties: a
    relevant document of a group (start ``s``, size ``n``, ``r`` relevant, ``c`` relevant before it) lands at each
    of the group's positions ``p`` with probability ``1/n`` and then has, in expectation, ``(r-1)(p-s)/(n-1)``
    relevant group mates above it: ``E[P] = (c + 1 + (r-1)(p-s)/(n-1)) / (p+1)``, summed over the positions in the
    top k with ``sum (p-s)/(p+1) = m - (s+1) (H[e] - H[s])``.
    """

    name = "map"

    @staticmethod
    def input(b, spec):
        """AP@k of each ranking: the precision at each relevant rank in the top k, summed, over R."""
        c = b.cut(spec.k)
        prec = b.relcum[:, :c] / np.arange(1, c + 1, dtype=np.float64)[None, :]
        s = np.where(b.rel[:, :c], prec, 0.0).sum(axis=1)
        return _ratio(s, b.n_rel)

    @staticmethod
    def average(b, spec):
        """Expected AP@k: each relevant document's expected precision over its tie group's positions."""
        _, s_k, e_k, m = b.window(spec.k)
        dH = b.H[e_k] - b.H[s_k]
        with np.errstate(divide="ignore", invalid="ignore"):
            mate = np.where(b.gsize > 1, (b.grel - 1.0) / (b.gsize - 1.0), 0.0)
        term = ((b.before + 1.0) * dH + mate * (m - (b.start + 1.0) * dH)) / b.gsize
        return _ratio((b.relf * term).sum(axis=1), b.n_rel)


class Precision(CoreMetric):
    """Precision at k (Manning, Raghavan & Schütze, "Introduction to Information Retrieval", 2008, ch. 8;
    trec_eval's ``P_k``)::

        P@k = (relevant documents in the top k) / k

    A query shorter than k is not rewarded for it; without k the divisor is the query's length (trec_eval's
    ``set_P``). Averaged over ties, each relevant document counts with the fraction of its group's positions that
    fall in the top k.
    """

    name = "precision"

    @staticmethod
    def input(b, spec):
        """Relevant documents in the top k over k (over the query's length without k)."""
        return b.relcum[:, b.cut(spec.k) - 1] / (b.sizes if spec.k is None else float(spec.k))

    @staticmethod
    def average(b, spec):
        """Expected relevant documents in the top k over k (over the query's length without k)."""
        return _expected_hits(b, spec) / (b.sizes if spec.k is None else float(spec.k))


class Recall(CoreMetric):
    """Recall at k (Manning, Raghavan & Schütze 2008, ch. 8; trec_eval's ``recall_k``)::

        recall@k = (relevant documents in the top k) / R

    ``R`` counts the relevant documents the ranking misses too. Averaged over ties as precision is.
    """

    name = "recall"

    @staticmethod
    def input(b, spec):
        """Relevant documents in the top k over R."""
        return _ratio(b.relcum[:, b.cut(spec.k) - 1], b.n_rel)

    @staticmethod
    def average(b, spec):
        """Expected relevant documents in the top k over R."""
        return _ratio(_expected_hits(b, spec), b.n_rel)


def _expected_hits(b: TieBucket, spec: MetricSpec) -> np.ndarray:
    """Expected relevant documents in the top k over the orders of tied documents."""
    _, _, _, m = b.window(spec.k)
    return (b.relf * m / b.gsize).sum(axis=1)


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


#: The core metrics by registry name (the same names as :data:`rankcli.core.metrics.specs.CORE`).
KERNELS: dict[str, type[CoreMetric]] = {m.name: m for m in (NDCG, DCG, ERR, MRR, MAP, Precision, Recall)}
