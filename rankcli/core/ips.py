"""Inverse-propensity scoring (IPS) of click logs for training: pooling impressions into one list per source query,
with each document's IPS relevance, and the training labels that put it into the library losses. Pure numpy.

The IPS relevance of document ``d`` of query ``q``, over the ``n_q`` impressions of ``q`` in the log::

    g_d = (1 / n_q) * sum over impressions i of q of  c_{i,d} / p(position of d in i)      (0 where not clicked)

Under the position-based model ``P(c = 1) = p(r) * gamma_d`` (examination times click-relevance), so when ``d`` is
displayed in every impression (full lists, or lists cut where every document still shows) and ``p`` is the true
propensity, ``E[g_d] = gamma_d``: an unbiased estimate of its click-relevance, whose variance shrinks as ``1 / n_q``.
Clipping (``p`` floored at ``clip``, a weight of at most ``1 / clip``) trades a bias at positions with ``p < clip``
for bounded variance. The weight enters linearly where the click enters each loss, never inside an exponential; the
labels below are chosen so that the library losses compute exactly that:

``pointwise``
    Regression on ``g_d``: its squared-error gradient ``s_d - g_d`` is linear in ``g_d``, so the IPS gradient is an
    unbiased estimate of the full-information gradient ``s_d - gamma_d`` (regression on the click-relevance).
``xendcg``
    With clicks ``c in {0, 1}`` XE-NDCG's gain ``2^c - 1`` equals ``c``; the IPS gain is ``g_d``, the target weight
    ``(1 - gamma_mix) + g_d`` before the per-query normalisation. The label ``log2(1 + g_d)`` makes the library loss
    compute exactly that (``2^label - gamma_mix = 1 + g_d - gamma_mix``). It estimates XE-NDCG with the gains
    ``gamma_d`` (labels ``log2(1 + gamma_d)``). The normalisation makes it a ratio estimator: consistent (the target
    converges to the full-information target as ``n_q`` grows, by the law of large numbers and continuity of the
    ratio where its denominator is positive), with a bias of order ``1 / n_q``, not unbiased.
``listnet``
    ListNet's target is ``softmax(y)``; with ``c in {0, 1}``, ``exp(c) = 1 + (e - 1) c``, and the IPS target weight is
    ``1 + (e - 1) g_d``: the label ``log(1 + (e - 1) g_d)``. It estimates ListNet on the labels
    ``log(1 + (e - 1) gamma_d)`` (equal to the click for ``gamma_d`` in {0, 1}); a ratio estimator, consistent as above.

``approxndcg``, ``lambdaloss``
    Both weight documents by NDCG's gain ``2^y - 1``, which is ``c`` for a click ``c in {0, 1}``: the label
    ``log2(1 + g_d)`` makes the gain exactly ``g_d``, so each numerator (``G_d / log2(1 + pi_d)`` of ApproxNDCG,
    ``|G_d - G_e|`` of LambdaLoss) holds the IPS relevance linearly; both divide by the ideal DCG of the gains, a
    continuous function of ``g`` (LambdaLoss's ``|G_d - G_e|`` over the pairs with ``g_d > g_e`` too: its weight
    vanishes where two relevances meet). Estimates of the losses with the gains ``gamma_d``; consistent (the loss
    converges to the full-information one as ``n_q`` grows, by the law of large numbers and continuity), with a bias
    of order ``1 / n_q``, not unbiased.

``ranknet``
    Pairwise IPS (Joachims et al. WSDM 2017): each clicked document paired with every other displayed document,
    weighted by ``1 / p(position of the clicked one)``. Pooled over a query's impressions (every document displayed in
    every impression) the pair ``(d, e)`` carries the weight ``g_d``, so the loss is
    ``sum_d g_d sum_{e != d} log(1 + exp(-(s_d - s_e)))`` (:func:`ranknet_ips_grad_hess`). It is *linear* in ``g``,
    so its gradient is an unbiased estimate of the gradient of the full-information loss with the click-relevances:
    ``sum_d gamma_d sum_{e != d} log(1 + exp(-(s_d - s_e)))``. The labels are ``g`` itself.

``listmle``, ``listmle-pa`` are refused (:data:`IPS_REFUSED`): they read only the order of the labels, which a sort
of the noisy estimates ``g`` decides; no weighting of the clicks enters them, and two documents of equal
click-relevance are ordered by the noise of their estimates however many impressions there are (the order of
``g`` does not converge where relevances tie), so neither unbiasedness nor consistency holds.

With every propensity 1 (``--propensity pbm:0`` or ``--pool-impressions``) ``g_d`` is the document's click-through rate
over its query's impressions: the naive pooled model, which learns the logging ranker's position bias.

The target scale. XE-NDCG's target weight ``1 + g - gamma_mix`` and ListNet's ``1 + (e - 1) g`` are not scale-free:
the same ranking of gains gives flatter or sharper targets as the gains shrink or grow. Click-through rates (around
0.1 under position bias) and IPS gains (around the click-relevance, several times larger) differ by such a scale even
on a randomised log, where both rank the documents alike, so that comparing them would credit IPS with what is scale.
Both are therefore put on one scale before the labels are made (:func:`target_scale`): the gains of the whole training
set are divided by **their mean over its pooled documents** (one global factor, not one per query, so the IPS gain
stays an unbiased estimate of the click-relevance up to that one constant; the factor is itself estimated from every
document of the log, a ratio estimator whose error shrinks with the log). The naive and the IPS variant then differ
only in the propensities: on a randomised log both scaled gains estimate ``gamma_d / mean(gamma)``. Pointwise
regression and the pairwise loss are linear in ``g`` (the factor scales gradient and hessian alike), so for them the
scale changes nothing but the size of the numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rankcli.errors import InputError, UsageError


@dataclass(frozen=True)
class IpsLabels:
    """How a library loss takes the IPS gain ``g`` through its labels (see the module docstring)."""

    formula: str  # the label as a function of g, as rankcli.json records it
    label: Callable[[np.ndarray], np.ndarray]


#: Loss -> its IPS labels: the losses that take IPS relevance through their labels.
IPS_LABELS: dict[str, IpsLabels] = {
    "xendcg": IpsLabels("log2(1 + g)", lambda g: np.log2(1.0 + g)),
    "listnet": IpsLabels("log(1 + (e - 1) g)", lambda g: np.log1p((np.e - 1.0) * g)),
    "pointwise": IpsLabels("g", lambda g: g.copy()),
    "ranknet": IpsLabels("g (pairs (d, e) weighted by g_d)", lambda g: g.copy()),
    "approxndcg": IpsLabels("log2(1 + g)", lambda g: np.log2(1.0 + g)),
    "lambdaloss": IpsLabels("log2(1 + g)", lambda g: np.log2(1.0 + g)),
}
#: Losses that refuse IPS training, and why (the module docstring has the argument).
IPS_REFUSED: dict[str, str] = {
    loss: f"--loss {loss} reads only the order of the labels, so no weighting of the clicks enters it, and the order "
          "of noisy IPS estimates does not converge where relevances tie: neither unbiased nor consistent"
    for loss in ("listmle", "listmle-pa")
}
IPS_LOSSES = tuple(IPS_LABELS)
#: How :func:`target_scale` scales the gains, as ``rankcli.json`` records it.
TARGET_SCALE = "g / mean(g over the pooled documents)"
#: Cells of one (queries x n x n) pair block of :func:`ranknet_ips_grad_hess` (bounds its working memory).
PAIR_CELLS = 1 << 20
DEFAULT_CLIP = 0.01


def pbm_propensities(eta: float, max_position: int) -> np.ndarray:
    """``(1/r)^eta`` for ``r = 1..max_position`` (index ``r - 1``)."""
    if not (eta >= 0):
        raise UsageError(f"--propensity pbm:ETA: eta must be non-negative, got {eta:g}")
    return np.arange(1, max_position + 1, dtype=np.float64) ** -float(eta)


def inverse_weights(positions: np.ndarray, propensity: np.ndarray, clip: float = DEFAULT_CLIP) -> np.ndarray:
    """``1 / max(p(position), clip)`` per row of ``positions`` (1-based); ``propensity[r - 1]`` is position ``r``'s.
    A position the propensities do not cover is an :class:`InputError` naming it (never extrapolated silently).
    Propensities are any finite numbers above 0: relative to a reference position (position 1 = 1), an estimate can
    exceed 1 by chance, and IPS needs only their ratios."""
    if not (0 < clip <= 1):
        raise UsageError(f"--propensity-clip: must be within (0, 1], got {clip:g}")
    positions = np.asarray(positions, dtype=np.int64)
    p = np.asarray(propensity, dtype=np.float64)
    if positions.size:
        if positions.min() < 1:
            raise InputError(f"column position: positions are 1-based, got {int(positions.min())}")
        if positions.max() > p.shape[0]:
            raise InputError(f"the propensities cover positions 1..{p.shape[0]}, but the log shows position "
                             f"{int(positions.max())}; estimate them on a log that shows it (or use --fit power), "
                             "or give pbm:ETA")
    bad = np.flatnonzero(~((p > 0) & np.isfinite(p)))
    if bad.shape[0]:
        raise InputError(f"propensity of position {int(bad[0]) + 1} must be a finite number above 0, got "
                         f"{p[bad[0]]:g}")
    return 1.0 / np.maximum(p, clip)[positions - 1]


@dataclass
class Pooled:
    """Impressions pooled per source query: ``rows`` (one source row per pooled document, the first row that showed
    it; queries contiguous, in ascending order of their key), ``offsets`` over them, ``gain`` (the IPS relevance) and
    per query the number of impressions ``impressions``."""

    rows: np.ndarray
    offsets: np.ndarray
    gain: np.ndarray
    impressions: np.ndarray
    query_keys: np.ndarray


def pool(query_key: np.ndarray, doc_key: np.ndarray, impression_key: np.ndarray, clicks: np.ndarray,
         weights: np.ndarray) -> Pooled:
    """Pool a click log's rows into one list per source query (see the module docstring for ``g``).

    Parameters
    ----------
    query_key, doc_key, impression_key : (n_rows,) array
        The source query, the document (docid or source row) and the impression of every row.
    clicks : (n_rows,) 0/1
    weights : (n_rows,) float
        The inverse propensity of every row's position (all 1 for the naive click-through rate).
    """
    q_keys, q = np.unique(np.asarray(query_key), return_inverse=True)
    q = q.reshape(-1)
    _, d = np.unique(np.asarray(doc_key), return_inverse=True)
    d = d.reshape(-1).astype(np.int64)
    code = q.astype(np.int64) * (int(d.max()) + 1 if d.size else 1) + d
    codes, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    value = np.asarray(clicks, dtype=np.float64) * np.asarray(weights, dtype=np.float64)
    sums = np.bincount(inverse, weights=value, minlength=codes.shape[0])
    imp = np.asarray(impression_key, dtype=np.int64)
    low = int(imp.min()) if imp.size else 0
    span = int(imp.max()) - low + 1 if imp.size else 1
    pairs = np.unique(q.astype(np.int64) * span + (imp - low))  # distinct (query, impression)
    n_imp = np.bincount(pairs // span, minlength=q_keys.shape[0]).astype(np.int64)
    q_of = q[first]
    counts = np.bincount(q_of, minlength=q_keys.shape[0])
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    return Pooled(rows=first.astype(np.int64), offsets=offsets, gain=sums / n_imp[q_of], impressions=n_imp,
                  query_keys=q_keys)


def target_scale(gain: np.ndarray) -> float:
    """The one factor every pooled gain of a training set is divided by before it becomes a label: the gains' mean
    over the pooled documents (1 when it is not positive, a log without a click; see the module docstring).

    >>> target_scale(np.array([0.0, 0.1, 0.3, 0.0]))
    0.1
    """
    gain = np.asarray(gain, dtype=np.float64)
    mean = float(gain.mean()) if gain.shape[0] else 0.0
    return mean if mean > 0 and np.isfinite(mean) else 1.0


def training_labels(loss: str, gain: np.ndarray) -> np.ndarray:
    """The labels that make the library loss ``loss`` use the IPS ``gain`` (one per document) linearly (module
    docstring)."""
    if loss not in IPS_LABELS:
        raise UsageError(f"--loss {loss}: IPS training supports {', '.join(IPS_LOSSES)}")
    return IPS_LABELS[loss].label(np.asarray(gain, dtype=np.float64))


def ranknet_ips_value(gain: np.ndarray, scores: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per query ``sum_d g_d sum_{e != d} log(1 + exp(-(s_d - s_e)))`` (see the module docstring).

    Parameters
    ----------
    gain : each document's IPS relevance ``g_d >= 0`` (the labels of a pooled training set), grouped by query.
    scores : model scores, one per document.
    offsets : query boundaries, length ``n_queries + 1``.

    References
    ----------
    T. Joachims, A. Swaminathan, T. Schnabel. Unbiased Learning-to-Rank with Biased Feedback. WSDM 2017.
    """
    out = np.zeros(offsets.shape[0] - 1)
    for qs, rows in _blocks(offsets):
        s, g = scores[rows], gain[rows]
        d = s[:, :, None] - s[:, None, :]  # d[k, j] = s_k - s_j
        pair = np.logaddexp(0.0, -d) * g[:, :, None]
        n = rows.shape[1]
        pair[:, np.arange(n), np.arange(n)] = 0.0
        out[qs] = pair.sum(axis=(1, 2))
    return out


def ranknet_ips_grad_hess(gain: np.ndarray, scores: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gradient and diagonal Hessian of :func:`ranknet_ips_value` (same parameters) per document::

        grad_k = -g_k sum_{j != k} sigma(s_j - s_k) + sum_{i != k} g_i sigma(s_k - s_i)
        hess_k = sum_{j != k} (g_k + g_j) sigma(s_k - s_j) sigma(s_j - s_k)

    With ``t_kj = tanh((s_k - s_j) / 2)``, ``sigma(s_k - s_j) = (1 + t_kj) / 2`` and
    ``sigma sigma' = (1 - t_kj^2) / 4``, so one ``tanh`` per pair and two row sums and two matrix-vector products per
    block give everything; the diagonal terms (``t = 0``) cancel in the gradient and add ``g_k / 2`` to the hessian,
    which is subtracted. The pair terms are float32 (what LightGBM consumes, as the library RankNet), summed in
    float64. Queries are processed in blocks of equal size (``(queries, n, n)`` arrays of at most
    :data:`PAIR_CELLS` cells), a loop over blocks, never over queries."""
    scores = np.asarray(scores, dtype=np.float64)
    gain = np.asarray(gain, dtype=np.float64)
    grad = np.zeros(scores.shape[0])
    hess = np.zeros(scores.shape[0])
    s32, g32 = scores.astype(np.float32), gain.astype(np.float32)
    for _, rows in _blocks(offsets):
        s, g = s32[rows], g32[rows]
        n = rows.shape[1]
        gk = gain[rows]
        g_total = gk.sum(axis=1, keepdims=True)
        t = s[:, :, None] - s[:, None, :]
        np.multiply(t, np.float32(0.5), out=t)
        np.tanh(t, out=t)
        t_rows = t.sum(axis=2, dtype=np.float64)
        t_g = np.matmul(t, g[:, :, None])[..., 0].astype(np.float64)
        grad[rows] = -gk * (n - t_rows) / 2 + (g_total + t_g) / 2
        np.square(t, out=t)
        t2_rows = t.sum(axis=2, dtype=np.float64)
        t2_g = np.matmul(t, g[:, :, None])[..., 0].astype(np.float64)
        hess[rows] = gk * (n - t2_rows) / 4 + (g_total - t2_g) / 4 - 0.5 * gk
    return grad, hess


def _blocks(offsets: np.ndarray):
    """``(query numbers, rows)`` of queries of one size ``n >= 2``, ``rows`` a ``(queries, n)`` matrix of row
    indices, at most :data:`PAIR_CELLS` pair cells per block."""
    offsets = np.asarray(offsets, dtype=np.int64)
    n_each = np.diff(offsets)
    order = np.argsort(n_each, kind="stable")
    sorted_n = n_each[order]
    cuts = np.flatnonzero(sorted_n[1:] != sorted_n[:-1]) + 1
    for part in np.split(order, cuts):
        if part.shape[0] == 0 or n_each[part[0]] < 2:
            continue
        n = int(n_each[part[0]])
        per = max(1, PAIR_CELLS // (n * n))
        for a in range(0, part.shape[0], per):
            qs = part[a:a + per]
            yield qs, offsets[qs][:, None] + np.arange(n, dtype=np.int64)[None, :]
