"""The trained fusion methods: probabilities (or MAP, or log odds) learnt from each run's rankings of training
queries with judgments, then summed over the runs that list a document.

Training reads, for every run and training query, its *hit list*: whether the document at each rank is relevant
(label at or above the relevance threshold). A training query the run does not list has an empty hit list; averages
run over every training query, as ranx averages them. Notation as in :mod:`rankcli.core.fusion.ranked`; ``p`` is the
0-based position ``rank_r(d) - 1``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rankcli.core.fusion.combine import ordered_sum
from rankcli.core.fusion.normalize import Evidence

#: SegFuse's segment bounds as ranx uses them: the sizes ``10 * 2^(k-1) - 5`` (5, 15, 35, ...) taken as bounds, so
#: that the segments hold 5, 10, 20, 40, ... documents; positions from 5115 on are in no segment (probability 0).
SEGFUSE_BOUNDS = np.array([0] + [10 * 2 ** (k - 1) - 5 for k in range(1, 11)], dtype=np.int64)
#: BayesFuse's rank bands (ranx's): positions [0, 5), [5, 10), ..., [500, 1000). A document ranked below 1000 counts
#: as not retrieved.
BAYES_CUTS = np.array([0, 5, 10, 15, 20, 30, 100, 200, 500, 1000], dtype=np.int64)
#: BayesFuse's log odds of a document a run does not retrieve: ``ln(0.001 / 0.999)``.
MIN_LOG_ODDS = math.log(0.001 / 0.999)


@dataclass
class Hits:
    """One run's hit lists on the training queries: ``hits[t, p]`` (float 0/1) whether the document at position ``p``
    of query ``t`` is relevant, ``lengths[t]`` the list's length (0 when the run does not list ``t``) and
    ``n_relevant[t]`` the query's relevant documents in the judgments (retrieved or not)."""

    hits: np.ndarray
    lengths: np.ndarray
    n_relevant: np.ndarray

    @property
    def n_queries(self) -> int:
        """The number of training queries."""
        return int(self.lengths.shape[0])


def hit_lists(ev: Evidence, relevant: np.ndarray, train: np.ndarray, n_relevant: np.ndarray) -> list[Hits]:
    """Every run's :class:`Hits` on the training queries.

    Parameters
    ----------
    ev : the evidence. relevant : (candidates,) bool, whether each candidate is relevant.
    train : (t,) int64 the training queries' numbers. n_relevant : (t,) their relevant documents in the judgments.
    """
    al = ev.aligned
    position = np.full(al.offsets.shape[0] - 1, -1, dtype=np.int64)
    position[train] = np.arange(train.shape[0])
    t_of = al.per_candidate(position)
    out = []
    for r in range(al.n_runs):
        lengths = al.lengths[r, train]
        cols = np.flatnonzero((t_of >= 0) & al.listed[r])
        hits = np.zeros((train.shape[0], int(lengths.max(initial=0))))
        hits[t_of[cols], al.ranks[r, cols] - 1] = relevant[cols]
        out.append(Hits(hits, lengths, np.asarray(n_relevant, dtype=np.float64)))
    return out


def _sequential_mean(values: np.ndarray) -> np.ndarray:
    """The mean over axis 0 summed in order (``(v0 + v1) + ...``, then divided), as ranx accumulates it."""
    if values.shape[0] == 0:
        return np.zeros(values.shape[1:])
    return np.cumsum(values, axis=0)[-1] / values.shape[0]


def position_probabilities(h: Hits) -> np.ndarray:
    """P(relevant | position p): relevant documents at ``p`` over the training queries whose list reaches ``p``."""
    width = h.hits.shape[1]
    reach = (h.lengths[:, None] > np.arange(width)[None, :]).sum(axis=0)
    return h.hits.sum(axis=0) / np.maximum(reach, 1)


def probfuse_probabilities(h: Hits, segments: int) -> np.ndarray:
    """ProbFuse's P(relevant | segment k): the mean over the training queries of the fraction of relevant documents
    in segment ``k`` of the query's list, cut into ``segments`` segments of ``ceil(n / segments)`` documents."""
    size = -(-h.lengths // segments)
    k = np.arange(segments)
    start = np.minimum(k[None, :] * size[:, None], h.lengths[:, None])
    end = np.minimum((k[None, :] + 1) * size[:, None], h.lengths[:, None])
    cum = np.concatenate([np.zeros((h.n_queries, 1)), np.cumsum(h.hits, axis=1)], axis=1)
    found = np.take_along_axis(cum, end, axis=1) - np.take_along_axis(cum, start, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(end > start, found / (end - start), 0.0)
    return _sequential_mean(frac)


def segfuse_probabilities(h: Hits) -> np.ndarray:
    """SegFuse's P(relevant | segment k), segments :data:`SEGFUSE_BOUNDS`: relevant documents in the segment over its
    size, averaged over the training queries."""
    lo, hi = SEGFUSE_BOUNDS[:-1], SEGFUSE_BOUNDS[1:]
    cum = np.concatenate([np.zeros((h.n_queries, 1)), np.cumsum(h.hits, axis=1)], axis=1)
    width = cum.shape[1] - 1
    found = cum[:, np.minimum(hi, width)] - cum[:, np.minimum(lo, width)]
    return _sequential_mean(found / (hi - lo))


def mean_average_precision(h: Hits) -> float:
    """MAP over the training queries: the mean of AP = (sum of the precisions at the relevant ranks) / (relevant
    documents in the judgments); 0 for a query without one or not listed."""
    if h.n_queries == 0:
        return 0.0
    pos = np.arange(1, h.hits.shape[1] + 1)
    precision = np.cumsum(h.hits, axis=1) / pos[None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        ap = np.where(h.n_relevant > 0, (precision * h.hits).sum(axis=1) / h.n_relevant, 0.0)
    return float(ap.mean())


def bayes_log_odds(h: Hits) -> np.ndarray:
    """BayesFuse's log odds per rank band (:data:`BAYES_CUTS`): ``ln(p / (1 - p))`` with ``p`` the mean precision of
    the band over the training queries (0 and 1 moved by 0.001, as ranx moves them)."""
    lo, hi = BAYES_CUTS[:-1], BAYES_CUTS[1:]
    cum = np.concatenate([np.zeros((h.n_queries, 1)), np.cumsum(h.hits, axis=1)], axis=1)
    width = cum.shape[1] - 1
    precision = (cum[:, np.minimum(hi, width)] - cum[:, np.minimum(lo, width)]) / (hi - lo)
    p = np.cumsum(precision / max(h.n_queries, 1), axis=0)[-1] if h.n_queries else np.zeros(lo.shape[0])
    p = np.where(p == 0, p + 0.001, p)
    q = 1 - p
    q = np.where(q == 0, q + 0.001, q)
    return np.log(p / q)


def _positions(ev: Evidence) -> np.ndarray:
    return np.where(ev.aligned.listed, ev.aligned.ranks - 1, 0)


def _lookup(table: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """``table[p]`` where ``p`` is inside it, else 0."""
    inside = positions < table.shape[0]
    return np.where(inside, table[np.minimum(positions, max(table.shape[0] - 1, 0))] if table.shape[0] else 0.0, 0.0)


def _sum_over_runs(ev: Evidence, term) -> np.ndarray:
    """``sum_r term(r, positions of run r)`` over the runs listing each candidate (0 for the others)."""
    pos = _positions(ev)
    with np.errstate(invalid="ignore", divide="ignore"):  # cells the run does not list are dropped
        rows = [np.where(ev.aligned.listed[r], term(r, pos[r]), 0.0) for r in range(ev.n_runs)]
    return ordered_sum(np.array(rows))


def posfuse(ev: Evidence, params: dict, model: dict) -> np.ndarray:
    r"""PosFuse: :math:`f(d) = \sum_{r \in L_d} P_r(\mathrm{rel} \mid p)`, the probability that run ``r``'s document at
    position ``p`` is relevant, estimated on the training queries (0 beyond their longest list).

    Reference: Lillis, D., Zhang, L., Toolan, F., Collier, R., Leonard, D. & Dunnion, J. (2010). Estimating
    probabilities for effective data fusion. SIGIR 2010, 347-354.
    """
    probs = model["probabilities"]
    return _sum_over_runs(ev, lambda r, p: _lookup(np.asarray(probs[r]), p))


def probfuse(ev: Evidence, params: dict, model: dict) -> np.ndarray:
    r"""ProbFuse: :math:`f(d) = \sum_{r \in L_d} P_r(\mathrm{rel} \mid k) / k`, where run ``r``'s list of the query is
    cut into ``segments`` segments of :math:`\lceil n_r / segments \rceil` documents, ``k`` (1-based) is the segment
    holding ``d`` and :math:`P_r(\mathrm{rel} \mid k)` the mean fraction of relevant documents in segment ``k`` over
    the training queries.

    Reference: Lillis, D., Toolan, F., Collier, R. & Dunnion, J. (2006). ProbFuse: a probabilistic approach to data
    fusion. SIGIR 2006, 139-146.
    """
    probs = [np.asarray(p) for p in model["probabilities"]]
    segments = int(params["segments"])
    lengths = ev.aligned.per_candidate(ev.aligned.lengths)

    def term(r, p):
        size = np.maximum(-(-lengths[r] // segments), 1)
        k = np.minimum(p // size, segments - 1)
        return probs[r][k] / (k + 1)
    return _sum_over_runs(ev, term)


def segfuse(ev: Evidence, params: dict, model: dict) -> np.ndarray:
    r"""SegFuse: :math:`f(d) = \sum_{r \in L_d} P_r(\mathrm{rel} \mid k)\,(s_r(d) + 1)`, with ``k`` the segment of
    :data:`SEGFUSE_BOUNDS` holding ``d``'s position, :math:`P_r(\mathrm{rel} \mid k)` the mean fraction of relevant
    documents in it over the training queries, and :math:`s_r(d)` the normalised score.

    Reference: Shokouhi, M. (2007). Segmentation of search engine results for effective data-fusion. ECIR 2007,
    185-197.
    """
    probs = [np.asarray(p) for p in model["probabilities"]]
    scores = ev.scores

    def term(r, p):
        k = np.searchsorted(SEGFUSE_BOUNDS, p, side="right") - 1
        inside = p < SEGFUSE_BOUNDS[-1]
        return np.where(inside, probs[r][np.minimum(k, probs[r].shape[0] - 1)], 0.0) * (scores[r] + 1)
    return _sum_over_runs(ev, term)


def slidefuse(ev: Evidence, params: dict, model: dict) -> np.ndarray:
    r"""SlideFuse: :math:`f(d) = \sum_{r \in L_d} \frac{1}{b - a + 1} \sum_{i=a}^{b} P_r(\mathrm{rel} \mid i)`, the
    position probabilities of PosFuse averaged over a window around ``d``'s position ``p``: :math:`a = \max(p - w, 0)`,
    :math:`b = \min(p + w, n_r - 1)` (``window`` = w; positions beyond the training lists count 0).

    Reference: Lillis, D., Toolan, F., Collier, R. & Dunnion, J. (2008). Extending probabilistic data fusion using
    sliding windows. ECIR 2008, 358-369.
    """
    w = int(params["window"])
    lengths = ev.aligned.per_candidate(ev.aligned.lengths)
    sums = [np.concatenate(([0.0], np.cumsum(np.asarray(p, dtype=np.float64)))) for p in model["probabilities"]]

    def term(r, p):
        cs, size = sums[r], sums[r].shape[0] - 1
        a = np.maximum(p - w, 0)
        b = np.minimum(p + w, lengths[r] - 1)
        return (cs[np.minimum(b + 1, size)] - cs[np.minimum(a, size)]) / (b - a + 1)
    return _sum_over_runs(ev, term)


def mapfuse(ev: Evidence, params: dict, model: dict) -> np.ndarray:
    r"""MAPFuse: :math:`f(d) = \sum_{r \in L_d} \mathrm{MAP}_r / \mathrm{rank}_r(d)`, ``MAP_r`` the run's mean average
    precision on the training queries.

    Reference: Lillis, D., Zhang, L., Toolan, F., Collier, R., Leonard, D. & Dunnion, J. (2010). Estimating
    probabilities for effective data fusion. SIGIR 2010, 347-354.
    """
    maps = model["map"]
    return _sum_over_runs(ev, lambda r, p: maps[r] / (p + 1))


def bayesfuse(ev: Evidence, params: dict, model: dict) -> np.ndarray:
    r"""BayesFuse (Bayes-fuse): :math:`f(d) = \sum_r \ln \frac{P(\mathrm{rel} \mid \mathrm{rank}_r(d))}{1 -
    P(\mathrm{rel} \mid \mathrm{rank}_r(d))}`, the log odds of relevance of ``d``'s rank band in run ``r``
    (:data:`BAYES_CUTS`) estimated on the training queries; a run that does not retrieve ``d`` (or ranks it below
    1000) adds :data:`MIN_LOG_ODDS`.

    Reference: Aslam, J. A. & Montague, M. (2001). Models for metasearch. SIGIR 2001, 276-284.
    """
    odds = [np.asarray(o) for o in model["log_odds"]]
    pos = _positions(ev)
    rows = []
    for r in range(ev.n_runs):
        band = np.searchsorted(BAYES_CUTS, pos[r], side="right") - 1
        inside = ev.aligned.listed[r] & (pos[r] < BAYES_CUTS[-1])
        rows.append(np.where(inside, odds[r][np.minimum(band, odds[r].shape[0] - 1)], MIN_LOG_ODDS))
    return ordered_sum(np.array(rows))


def train(method: str, hits: list[Hits], params: dict) -> dict:
    """What ``method`` learns from the runs' hit lists (one entry per run): ``probabilities``, ``map`` or
    ``log_odds``."""
    if method in ("posfuse", "slidefuse"):
        return {"probabilities": [position_probabilities(h) for h in hits]}
    if method == "probfuse":
        return {"probabilities": [probfuse_probabilities(h, int(params["segments"])) for h in hits]}
    if method == "segfuse":
        return {"probabilities": [segfuse_probabilities(h) for h in hits]}
    if method == "mapfuse":
        return {"map": [mean_average_precision(h) for h in hits]}
    if method == "bayesfuse":
        return {"log_odds": [bayes_log_odds(h) for h in hits]}
    raise ValueError(f"{method} is not a trained method")
