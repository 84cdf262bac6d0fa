"""Kernels of the trec_eval measures beyond the core metrics, vectorised over padded query matrices, for ``eval``,
``compare`` and every command that scores with :mod:`rankcli.core.metrics`.

Twins: ``rankcli trec_eval`` computes each of these measures again in :mod:`rankcli.core.trec_eval` (as do ndcg,
map, P, recall and recip_rank, which are :mod:`rankcli.core.metrics`'s). The two stay apart because they answer to
different contracts: these run under every convention ``eval`` offers (exponential or linear gain, each tie rule but
``average``, any threshold, Parquet runs without judgment information), on size buckets with numpy's reductions and
per-grade counts, at ``eval``'s speed; the twins add in trec_eval's order along each ranking, so that every value is
trec_eval's double bit for bit (what ``rankcli trec_eval``'s byte-for-byte output and its differential tests against
the binary need). ``tests/evaluate/test_measure_twins.py`` checks the two equal per query on random inputs (to 1e-12
where the order of additions differs), and lists where they differ by design.

Every definition follows trec_eval 10.0's source (usnistgov/trec_eval, the ``m_<name>.c`` file named in each
kernel's docstring). Notation, per query: the ranking in trec_eval's order (score descending, ties by the
convention's rule), ``N`` documents retrieved, ``rel_i`` whether the document at rank ``i`` (1-based) is relevant
(judged with label >= the threshold, trec_eval's ``-l``), ``R`` the number of relevant documents in the qrels
(retrieved or not), ``c_i`` the relevant documents in the top ``i``.

Judgments as trec_eval reads them: a retrieved document absent from the qrels is *not in the pool*; one in the qrels
with a negative label is *pooled but unjudged* (infAP's sampling); the others are *judged*, relevant or not. bpref,
infAP and num_nonrel_judged_ret use the distinction; every other measure counts any non-relevant document alike.
Without judgment information (a Parquet run, whose every row has a label), every document is judged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rankcli.core.groups import size_buckets
from rankcli.core.metrics.judgments import gain
from rankcli.core.ranking import padded_ranking
from rankcli.errors import UsageError

#: trec_eval's floor for a per-query value entering a geometric mean (``MIN_GEO_MEAN`` in trec_eval.h).
MIN_GEO_MEAN = 1e-5
#: infAP's smoothing constant (``INFAP_EPSILON`` in trec_eval.h).
INFAP_EPSILON = 1e-5


@dataclass
class Bucket:
    """One size bucket of queries, laid out as padded rows in ranking order."""

    lab: np.ndarray      # (nb, W) labels in rank order (0 in padding)
    valid: np.ndarray    # (nb, W) real cells
    judged: np.ndarray   # (nb, W) judged documents (in the qrels with label >= 0)
    pooled: np.ndarray   # (nb, W) pooled but unjudged (in the qrels with label < 0)
    rel: np.ndarray      # (nb, W) relevant (judged, label >= threshold)
    relcum: np.ndarray   # (nb, W) relevant documents in the top i+1
    n_ret: np.ndarray    # (nb,) documents retrieved
    R: np.ndarray        # (nb,) relevant documents in the qrels
    nonrel_judged: np.ndarray  # (nb,) judged non-relevant documents in the qrels (retrieved or not)
    ge: list | None      # per grade i, the bucket's queries' documents with label >= grades[i]; then zeros
    gain: str
    D: np.ndarray        # D[p]: total discount of the first p ranks
    grades: np.ndarray | None = None  # the positive grades ascending, for ndcg_rel and Rndcg (with ge)
    cache: dict = field(default_factory=dict)  # matrices several kernels share (iprec's interpolated precision)

    @property
    def num_rel_ret(self) -> np.ndarray:
        return self.relcum[:, -1].astype(np.float64)

    def at(self, cut) -> np.ndarray:
        """Relevant documents in the top ``cut`` (per query; cut may exceed the width)."""
        cut = np.minimum(np.asarray(cut, dtype=np.int64), self.relcum.shape[1])
        cut = np.broadcast_to(cut, self.n_ret.shape)
        out = np.zeros(self.n_ret.shape[0])
        ok = cut > 0
        out[ok] = self.relcum[np.flatnonzero(ok), cut[ok] - 1]
        return out


def _div(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.broadcast_to(np.asarray(b, dtype=np.float64), a.shape)
    out = np.zeros(a.shape)
    np.divide(a, b, out=out, where=b != 0)
    return out


# ---------------------------------------------------------------------------------------------------------------------
# Kernels: f(bucket, param) -> (nb,) values


def num_q(b: Bucket, _):
    """``m_num_q.c``: 1 per query; the summary counts the queries."""
    return np.ones(b.n_ret.shape[0])


def num_ret(b: Bucket, _):
    """``m_num_ret.c``: N."""
    return b.n_ret.astype(np.float64)


def num_rel(b: Bucket, _):
    """``m_num_rel.c``: R."""
    return b.R.astype(np.float64)


def num_rel_ret(b: Bucket, _):
    """``m_num_rel_ret.c``: c_N."""
    return b.num_rel_ret


def num_nonrel_judged_ret(b: Bucket, _):
    """``m_num_nonrel_judged_ret.c``: retrieved documents judged and not relevant."""
    return (b.judged & ~b.rel).sum(axis=1).astype(np.float64)


def _relevant_cells(b: Bucket) -> tuple[np.ndarray, np.ndarray]:
    """The (row, column) of every relevant cell, row by row, in rank order (shared by map and iprec)."""
    cells = b.cache.get("relevant")
    if cells is None:
        cells = b.cache["relevant"] = np.nonzero(b.rel)
    return cells


def average_precision(b: Bucket, _):
    """``m_map.c`` (per query; gm_map averages it geometrically): sum over relevant ranks i of c_i / i, over R."""
    rows, cols = _relevant_cells(b)  # the relevant cells only: a small share of the matrix
    total = np.bincount(rows, weights=b.relcum[rows, cols] / (cols + 1.0), minlength=b.rel.shape[0])
    return _div(total, b.R)


def rprec(b: Bucket, _):
    """``m_Rprec.c``: c_R / R (a query retrieving fewer than R documents counts only those)."""
    return _div(b.at(b.R), b.R)


def bpref(b: Bucket, _):
    """``m_bpref.c``: (1/R) sum over retrieved judged relevant documents of 1 - min(n, R) / min(NJ, R), with n the
    judged non-relevant documents ranked above it and NJ those in the qrels (1 when n = 0)."""
    nonrel = b.judged & ~b.rel
    rows, cols = np.nonzero(b.rel & b.judged)  # the terms, at the relevant cells only
    above = (np.cumsum(nonrel, axis=1) - nonrel)[rows, cols]
    frac = _div(np.minimum(above, b.R[rows]), np.minimum(b.nonrel_judged, b.R)[rows])
    term = np.where(above > 0, 1.0 - frac, 1.0)
    return _div(np.bincount(rows, weights=term, minlength=b.rel.shape[0]), b.R)


def infap(b: Bucket, _):
    """``m_infap.c``: for each retrieved judged relevant document at 0-based rank j > 0,
    1/(j+1) + j/(j+1) * (r + n + u)/j * (r + eps)/(r + n + 2 eps), with r, n, u the relevant, judged non-relevant
    and pooled-unjudged documents above it (1 at j = 0); summed, over R."""
    rel = b.rel & b.judged
    nonrel = b.judged & ~b.rel
    r = (np.cumsum(rel, axis=1) - rel).astype(np.float64)
    n = (np.cumsum(nonrel, axis=1) - nonrel).astype(np.float64)
    u = (np.cumsum(b.pooled, axis=1) - b.pooled).astype(np.float64)
    j = np.arange(b.lab.shape[1], dtype=np.float64)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        term = 1.0 / (j + 1.0) + (j / (j + 1.0)) * ((r + n + u) / j) * \
            ((r + INFAP_EPSILON) / (r + n + 2 * INFAP_EPSILON))
    term[:, 0] = 1.0
    return _div(np.where(rel, term, 0.0).sum(axis=1), b.R)


def success(b: Bucket, k):
    """``m_success.c``: 1 when a relevant document is in the top k (the whole list without k)."""
    return (b.at(b.n_ret if k is None else k) > 0).astype(np.float64)


def relative_p(b: Bucket, k):
    """``m_rel_P.c``: c_k / min(k, R)."""
    return _div(b.at(k), np.minimum(k, b.R))


def rprec_mult(b: Bucket, x):
    """``m_Rprec_mult.c``: precision at rank m = (long)(x R + 0.9); c_N / m when m > N."""
    m = np.floor(x * b.R + 0.9).astype(np.int64)
    return _div(b.at(np.minimum(m, b.n_ret)), m)


def _recall_cuts(b: Bucket, levels) -> np.ndarray:
    """trec_eval 10's cutoffs in relevant documents, ``lround(level * R)`` (half away from zero), (nb, L)."""
    x = np.asarray(levels, dtype=np.float64)[None, :] * b.R[:, None]
    return np.floor(x + 0.5).astype(np.int64)


def _iprec(b: Bucket, levels) -> np.ndarray:
    """``m_iprec_at_recall.c`` (trec_eval 10): at cutoff c = lround(level R) relevant documents, the highest
    precision at or below the rank of the c-th relevant document (of the first one for c = 0); 0 when c > c_N.
    Returns (nb, L)."""
    suffix_max = b.cache.get("iprec")
    if suffix_max is None:  # one per bucket, whichever levels are asked (official asks eleven)
        W = b.lab.shape[1]
        prec = np.where(b.valid, b.relcum / np.arange(1, W + 1, dtype=np.float64)[None, :], 0.0)
        suffix_max = b.cache["iprec"] = np.maximum.accumulate(prec[:, ::-1], axis=1)[:, ::-1]
    cuts = _recall_cuts(b, levels)
    nrr = b.relcum[:, -1]
    ok = (cuts <= nrr[:, None]) & (nrr[:, None] > 0)
    _, cols = _relevant_cells(b)
    if not cols.shape[0]:
        return np.zeros(cuts.shape)
    first = np.cumsum(nrr, dtype=np.int64) - nrr  # where each query's relevant cells start among all of them
    nth = np.where(ok, first[:, None] + np.maximum(cuts, 1) - 1, 0)
    pos = cols[nth]  # rank (0-based) of the c-th relevant document (of the first for c = 0)
    return np.where(ok, suffix_max[np.arange(b.lab.shape[0])[:, None], pos], 0.0)


#: trec_eval's eleven recall levels: asked together (official, 11pt_avg), computed together.
STANDARD_LEVELS = tuple(i / 10 for i in range(11))


def iprec_at_recall(b: Bucket, level):
    """``m_iprec_at_recall.c``: the interpolated precision at recall ``level`` (the largest precision at any rank
    whose recall reaches it), with trec_eval 10's cutoff ``lround(level * R)``."""
    table = b.cache.get("iprec_levels")
    if table is None:
        table = b.cache["iprec_levels"] = dict(zip(STANDARD_LEVELS, _iprec(b, STANDARD_LEVELS).T))
    if level not in table:
        table[level] = _iprec(b, [level])[:, 0]
    return table[level]


def pt11_avg(b: Bucket, _):
    """``m_11pt_avg.c``: the mean of iprec_at_recall over the levels 0.0, 0.1, ..., 1.0."""
    return _iprec(b, [i / 10 for i in range(11)]).mean(axis=1)


def set_f(b: Bucket, _):
    """``m_set_F.c`` with beta 1: 2 P R / (P + R) with P = c_N / N and R = c_N / R; 0 when nothing relevant is
    retrieved."""
    p = _div(b.num_rel_ret, b.n_ret)
    r = _div(b.num_rel_ret, b.R)
    return _div(2 * p * r, p + r)


def f1(b: Bucket, k):
    """ranx's f1@k: 2 P@k R@k / (P@k + R@k), 0 when no relevant document is in the top k."""
    if k is None:
        return set_f(b, None)
    hits = b.at(k)
    p = hits / float(k)
    r = _div(hits, b.R)
    return _div(2 * p * r, p + r)


def _grade_gains(b: Bucket) -> np.ndarray:
    """The gain of each positive grade (``b.grades``)."""
    if b.ge is None:
        raise UsageError("ndcg_rel and Rndcg need integer relevance labels (trec_eval's grades)")
    return gain(b.grades, b.gain)


def _ideal_dcg_at(b: Bucket, cut: np.ndarray) -> np.ndarray:
    """The ideal DCG of the top ``cut`` ranks (per query), from the per-grade counts."""
    gains = _grade_gains(b)
    cut = np.asarray(cut)
    shape = (-1,) + (1,) * (cut.ndim - 1)
    out = np.zeros(cut.shape)
    for i in range(len(b.grades) - 1, -1, -1):  # grade i fills the ideal ranks [#(label > it), #(label >= it))
        above, end = np.minimum(b.ge[i + 1].reshape(shape), cut), np.minimum(b.ge[i].reshape(shape), cut)
        out += gains[i] * (b.D[end] - b.D[above])
    return out


def _dcg_cum(b: Bucket) -> tuple[np.ndarray, np.ndarray]:
    _grade_gains(b)  # integer labels only
    g = gain(np.where(b.valid, b.lab, 0.0), b.gain)
    disc = np.diff(b.D[: b.lab.shape[1] + 1])
    return g, np.cumsum(g * disc[None, :], axis=1)


def ndcg_rel(b: Bucket, _):
    """``m_ndcg_rel.c``: with P the documents of positive gain in the qrels, the mean over them of
    DCG@i / IDCG@min(i, P) at the rank i of each one retrieved, and DCG@N / IDCG@P for each one not retrieved
    (0 when that sum is 0)."""
    g, dcg = _dcg_cum(b)
    P = b.ge[0]  # documents of positive gain (the zeros row when no grade is positive)
    W = b.lab.shape[1]
    ranks = np.arange(1, W + 1, dtype=np.int64)[None, :]
    ideal = _ideal_dcg_at(b, np.minimum(ranks, P[:, None]))  # the ideal DCG at min(i, P), per rank i
    pos = (g > 0) & b.valid
    s = np.where(pos, _div(dcg, ideal), 0.0).sum(axis=1)
    total = dcg[np.arange(g.shape[0]), b.n_ret - 1]
    s = s + (P - pos.sum(axis=1)) * _div(total, _ideal_dcg_at(b, P))
    return np.where(s > 0, _div(s, P), 0.0)


def rndcg(b: Bucket, _):
    """``m_Rndcg.c``: the mean of DCG@min(B, N) / IDCG@B over the boundaries B of the positive grades (the number of
    documents of each present grade or above), plus DCG@N / IDCG@P when P + 1 < N (P: positive-gain documents; the
    loop of m_Rndcg.c has consumed rank P + 1 when the ideal gain drops to 0); 0 when R = 0."""
    _, dcg = _dcg_cum(b)
    nb = b.lab.shape[0]
    rows = np.arange(nb)
    total = np.zeros(nb)
    count = np.zeros(nb)
    N = b.n_ret
    for i in range(len(b.grades)):
        present = b.ge[i] > b.ge[i + 1]
        B = b.ge[i]
        cut = np.minimum(B, N)
        val = _div(dcg[rows, np.maximum(cut, 1) - 1] * (cut > 0), _ideal_dcg_at(b, B))
        total += np.where(present, val, 0.0)
        count += present
    P = b.ge[0]
    # after the rank where the ideal gain drops to 0 (P + 1), trec_eval adds DCG@N / IDCG@P once if ranks remain
    extra = (P > 0) & (P + 1 < N)
    total += np.where(extra, _div(dcg[rows, N - 1], _ideal_dcg_at(b, P)), 0.0)
    count += extra
    return np.where(b.R > 0, _div(total, count), 0.0)


def per_query(specs, labels, scores, offsets, judg, convention, judged=None) -> dict[str, np.ndarray]:
    """Values per query of the trec-family ``specs``; rows already in the convention's tie order for equal scores
    (the caller applies the docid rule), ``judg`` the :class:`rankcli.core.metrics.judgments.Judgments`."""
    if convention.ties == "average":
        names = ", ".join(sorted({s.name for s in specs}))
        raise UsageError(f"{names}: defined on one ranking; choose a tie rule that gives one (--ties input or "
                         "docid-desc), not average")
    nq = offsets.shape[0] - 1
    thr = convention.relevance_threshold
    in_qrels = np.ones(labels.shape[0], dtype=bool) if judged is None else np.asarray(judged, dtype=bool)
    is_judged = in_qrels & (labels >= 0)
    pooled = in_qrels & (labels < 0)
    # judged non-relevant documents in the qrels, retrieved or not
    nrj = np.add.reduceat((is_judged & (labels < thr)).view(np.int8), offsets[:-1], dtype=np.int64) if nq else \
        np.zeros(0, dtype=np.int64)
    if judg.unranked is not None:
        ul, _, uq = judg.unranked
        nrj = nrj + np.bincount(uq, weights=(ul >= 0) & (ul < thr), minlength=nq).astype(np.int64)
    graded = {"ndcg_rel", "rndcg"}  # the kernels that read per-grade counts (b.ge); counted only for them
    grades, ge_all = (judg.positive_grades() if any(s.record.kernel in graded for s in specs) else None) or (None, None)
    D = np.zeros(max(judg.max_len, 1) + 2)
    np.cumsum(1.0 / np.log2(np.arange(D.shape[0] - 1, dtype=np.float64) + 2.0), out=D[1:])
    out = {str(s): np.empty(nq) for s in specs}
    for qs, width in size_buckets(offsets):
        ranking = padded_ranking(scores, offsets, qs, width)
        r_rows, r_valid = ranking.ranked(ranking.rows), ranking.ranked(ranking.valid)
        lab = np.where(r_valid, labels[r_rows], 0.0)
        jd = is_judged[r_rows] & r_valid
        pl = pooled[r_rows] & r_valid
        rel = jd & (lab >= thr)
        b = Bucket(lab=lab, valid=r_valid, judged=jd, pooled=pl, rel=rel, relcum=np.cumsum(rel, axis=1, dtype=np.int32),
                   n_ret=(offsets[qs + 1] - offsets[qs]).astype(np.int64), R=judg.n_relevant[qs],
                   nonrel_judged=nrj[qs], grades=grades, ge=None if ge_all is None else [g[qs] for g in ge_all],
                   gain=convention.gain, D=D)
        for spec in specs:
            out[str(spec)][qs] = globals()[spec.record.kernel](b, spec.k)  # the registry names the kernel
    return out
