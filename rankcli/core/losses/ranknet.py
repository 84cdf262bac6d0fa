"""RankNet: the pairwise logistic loss over every pair of a query with different labels, in memory-bounded pair
blocks (:mod:`rankcli.core.losses.common`).

``sum over pairs (i, j) of the query with y_i > y_j of log(1 + exp(-(s_i - s_j)))`` (sigma 1, no normalisation),
exact gradient and exact diagonal of the Hessian (the per-pair terms in float32, which is what LightGBM consumes,
summed in float64; the value in float64).
"""

from __future__ import annotations

import numpy as np

from rankcli.core.groups import broadcast, padded_rows, segment_max
from rankcli.core.losses import common
from rankcli.core.losses.common import size_groups


# ------------------------------------------------------------------------------------------------------------- ranknet
def _ranknet_block(s_i, y_i, s_j, y_j, want_loss: bool):
    """Pairs of rows ``i`` (``(q, r)``) against rows ``j`` (``(q, m)``) of the same queries.

    Only the ordered pairs with ``y_i > y_j`` are counted (padding carries NaN labels, which compare false), so every
    pair is seen once over all tiles. Returns ``(loss per query, None, None, None, None)`` with ``want_loss``, else
    ``(None, grad_i, grad_j, hess_i, hess_j)``: the contributions to the ``i`` rows (``(q, r)``) and to the ``j``
    rows (``(q, m)``).
    """
    better = y_i[:, :, None] > y_j[:, None, :]
    if want_loss:
        z = np.subtract(s_i[:, :, None], s_j[:, None, :])   # margin s_i - s_j of the more relevant document
        return np.where(better, np.logaddexp(0.0, -z), 0.0).sum(axis=(1, 2)), None, None, None, None
    # The step is computed in float32 (what LightGBM consumes; half the memory traffic), sums in float64.
    p = np.subtract(s_i[:, :, None].astype(np.float32), s_j[:, None, :].astype(np.float32))
    with np.errstate(over="ignore"):
        np.exp(p, out=p)
    p += 1.0
    np.reciprocal(p, out=p)                                 # probability of the wrong order, 1 / (1 + e^z)
    p *= better
    h = np.subtract(np.float32(1.0), p)
    h *= p                                                  # p (1 - p) on the counted pairs, 0 elsewhere
    f8 = np.float64
    return None, -p.sum(axis=2, dtype=f8), p.sum(axis=1, dtype=f8), h.sum(axis=2, dtype=f8), h.sum(axis=1, dtype=f8)


def _ranknet(labels, scores, offsets, want_grad: bool):
    s = np.asarray(scores, dtype=np.float64)
    if want_grad and s.shape[0]:
        # Only differences within a query matter: centre each query on its maximum before the float32 pair blocks,
        # so that large score offsets cost no precision.
        s = s - broadcast(segment_max(s, offsets), offsets)
    y = np.asarray(labels, dtype=np.float64)
    n = s.shape[0]
    value = np.zeros(offsets.shape[0] - 1)
    grad = np.zeros(n)
    hess = np.zeros(n)
    for qs, width in size_groups(offsets):
        if width <= 1:
            continue
        per_block = common.MAX_PAIR_ELEMENTS // (width * width)
        if per_block >= 1:
            for start in range(0, qs.shape[0], per_block):
                chunk = qs[start:start + per_block]
                rows, valid = padded_rows(offsets, chunk, width)
                sv, yv = s[rows], np.where(valid, y[rows], np.nan)
                loss, gi, gj, hi, hj = _ranknet_block(sv, yv, sv, yv, not want_grad)
                if want_grad:
                    grad[rows[valid]] = (gi + gj)[valid]
                    hess[rows[valid]] = (hi + hj)[valid]
                else:
                    value[chunk] = loss
        else:
            # Queries longer than sqrt(MAX_PAIR_ELEMENTS): one query at a time, in row tiles against the whole query.
            tile = max(1, common.MAX_PAIR_ELEMENTS // width)
            for q in qs:
                a, b = int(offsets[q]), int(offsets[q + 1])
                for t in range(a, b, tile):
                    u = min(t + tile, b)
                    loss, gi, gj, hi, hj = _ranknet_block(s[None, t:u], y[None, t:u], s[None, a:b], y[None, a:b],
                                                          not want_grad)
                    if want_grad:
                        grad[t:u] += gi[0]
                        grad[a:b] += gj[0]
                        hess[t:u] += hi[0]
                        hess[a:b] += hj[0]
                    else:
                        value[q] += loss[0]
    return value, grad, hess


def ranknet_value(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """RankNet per query: ``sum_{y_i > y_j} log(1 + exp(-(s_i - s_j)))`` over the query's pairs (sigma 1).

    Parameters
    ----------
    labels : relevance labels (any real value), one per document, grouped by query; only their order counts.
    scores : model scores, one per document.
    offsets : query boundaries, length ``n_queries + 1``.

    References
    ----------
    C. Burges, T. Shaked, E. Renshaw, A. Lazier, M. Deeds, N. Hamilton, G. Hullender. Learning to Rank using
    Gradient Descent. ICML 2005.
    """
    return _ranknet(labels, scores, offsets, want_grad=False)[0]


def ranknet_grad_hess(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact RankNet gradient and Hessian diagonal, ``sum_j p_ij (1 - p_ij)`` over the pairs a document is in.

    Parameters as for :func:`ranknet_value`; ``p_ij = 1 / (1 + exp(s_i - s_j))`` is the probability of the wrong
    order of a pair with ``y_i > y_j``.
    """
    _, grad, hess = _ranknet(labels, scores, offsets, want_grad=True)
    return grad, hess
