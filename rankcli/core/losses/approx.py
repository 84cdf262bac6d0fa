"""ApproxNDCG (Qin, Liu and Li 2010): NDCG with each rank replaced by a smooth function of the scores.

Per query, with ``G_i = (2^y_i - 1) / maxDCG`` (:func:`rankcli.core.losses.common.ndcg_gains`, finite for labels of
any size) and the approximate rank ``pi_i = 1 + sum_{j != i} sigmoid((s_j - s_i) / T)``::

    loss = - sum_i G_i / log2(1 + pi_i)

the negative ApproxNDCG, already divided by the true ideal DCG. ``T`` is the temperature (default 0.1: TF-Ranking's
``alpha = 10``; allRank's default is ``alpha = 1``). TF-Ranking computes ``pi`` as the sum over every ``j``
including ``i`` (``sigmoid(0) = 1/2``) plus ``1/2``: the same number.

Gradient. With ``c_i = d loss / d pi_i = G_i ln 2 / ((1 + pi_i) ln^2(1 + pi_i)) >= 0`` and
``sigma'_kj = sigmoid'((s_j - s_k) / T)`` (symmetric in ``k, j``)::

    d loss / d s_k = (1 / T) sum_{j != k} sigma'_kj (c_j - c_k)

Step. ApproxNDCG is not convex; its exact diagonal curvature changes sign. The boosting step holds the rank weights
``c`` fixed (as LambdaMART holds ``|delta NDCG|`` fixed), which leaves a sum of pair terms
``(c_k - c_j) sigmoid((s_j - s_k) / T)``; since ``|sigmoid''| <= sigmoid'``, the hessian
``h_k = (1 / T^2) sum_{j != k} sigma'_kj |c_j - c_k|`` bounds each coordinate's curvature of that sum from above.
It is >= 0, and 0 only where the gradient is 0 too (every ``c_j = c_k``); each leaf's ``-sum g / sum h`` is then a
damped Newton step.

Cost ``O(n^2)`` per query, in memory-bounded pair blocks (:mod:`rankcli.core.losses.common`); the boosting step's
pair terms in float32 (what LightGBM consumes), the value and the exact gradient in float64.
"""

from __future__ import annotations

import numpy as np

from rankcli.core.groups import padded_rows
from rankcli.core.losses import common
from rankcli.core.losses.common import LN2, gain_pairs, usable_blocks, wrong_order_probabilities

#: Scores of padding cells, divided by the temperature: far below every real one (sigmoid 0 against it).
_FAR = 1e30


def _step(sig: np.ndarray, c_rows: np.ndarray, c_cols: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
    """Gradient and hessian of rows ``k`` (module docstring) from ``sig[b, k, j] = sigmoid(x_j - x_k)`` against every
    column (overwritten). The sums are ``einsum``'s own loops (no BLAS, whose threads would compete with
    LightGBM's)."""
    tmp = np.multiply(sig, sig)
    sig -= tmp                                                        # sigmoid' = sigmoid (1 - sigmoid)
    c_r, c_c = c_rows.astype(sig.dtype), c_cols.astype(sig.dtype)
    toward = np.einsum("bij,bj->bi", sig, c_c).astype(np.float64)      # sum_j sigma'_kj c_j
    total = np.einsum("bij->bi", sig).astype(np.float64)
    grad = (toward - c_rows * total) / t
    np.subtract(c_c[:, None, :], c_r[:, :, None], out=tmp)
    np.abs(tmp, out=tmp)
    hess = np.einsum("bij,bij->bi", sig, tmp).astype(np.float64) / (t * t)
    return grad, hess


def _pi(sig: np.ndarray) -> np.ndarray:
    """Approximate ranks of the rows: ``1 + sum_{j != k} sigmoid(x_j - x_k)`` (the diagonal cell is 1/2)."""
    return np.einsum("bij->bi", sig).astype(np.float64) + 0.5


def _rank_weights(gains: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """``c = G ln 2 / ((1 + pi) ln^2(1 + pi))``: the derivative of ``-G / log2(1 + pi)`` in ``pi``."""
    log1 = np.log1p(pi)
    return gains * LN2 / ((1.0 + pi) * log1 * log1)


def _approx(labels, scores, offsets, temperature: float, gains, dtype, want: str):
    if not temperature > 0:
        raise ValueError(f"ApproxNDCG's temperature must be positive, got {temperature}")
    g_all, usable_q, x_all = gain_pairs(labels, scores, offsets, gains, 1.0 / temperature, dtype)
    value = np.zeros(offsets.shape[0] - 1)
    grad, hess = np.zeros(x_all.shape[0]), np.zeros(x_all.shape[0])
    for qs, width in usable_blocks(offsets, usable_q):
        rows, valid = padded_rows(offsets, qs, width)
        x = np.where(valid, x_all[rows], dtype(-_FAR))
        gq = np.where(valid, g_all[rows], 0.0)
        tile = common.row_tile(width) if qs.shape[0] == 1 else width
        if tile >= width:  # one pass: the sigmoids give the approximate ranks, then the step
            sig = wrong_order_probabilities(x, valid)
            pi = _pi(sig)
        else:  # a long query in row tiles: the ranks first, then the step (the sigmoids computed again)
            sig = None
            pi = np.concatenate([_pi(wrong_order_probabilities(x, valid, slice(t, t + tile)))
                                 for t in range(0, width, tile)], axis=1)
        if want == "value":
            value[qs] = -np.where(valid, gq / np.log2(1.0 + pi), 0.0).sum(axis=1)
            continue
        c = np.where(valid, _rank_weights(gq, pi), 0.0)  # padding rows' pi is garbage (NaN): no weight
        for t in range(0, width, tile):
            tile_sig = sig if sig is not None else wrong_order_probabilities(x, valid, slice(t, t + tile))
            g, h = _step(tile_sig, c[:, t:t + tile], c, temperature)
            keep = valid[:, t:t + tile]
            grad[rows[:, t:t + tile][keep]] = g[keep]
            hess[rows[:, t:t + tile][keep]] = h[keep]
    return value if want == "value" else (grad, hess)


def approxndcg_value(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray,
                     temperature: float = 0.1) -> np.ndarray:
    """ApproxNDCG loss per query, ``-sum_i G_i / log2(1 + pi_i)`` (module docstring); 0 for a query of one document
    or without gain.

    Parameters
    ----------
    labels : relevance labels ``y >= 0`` (any real value), one per document, grouped by query.
    scores : model scores, one per document.
    offsets : query boundaries, length ``n_queries + 1``.
    temperature : ``T > 0`` of the approximate ranks.

    References
    ----------
    T. Qin, T.-Y. Liu, H. Li. A General Approximation Framework for Direct Optimization of Information Retrieval
    Measures. Information Retrieval 13(4), 2010.
    """
    return _approx(labels, scores, offsets, temperature, None, np.float64, "value")


def approxndcg_gradient(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray,
                        temperature: float = 0.1) -> np.ndarray:
    """The exact gradient of :func:`approxndcg_value` (same parameters), in float64."""
    return _approx(labels, scores, offsets, temperature, None, np.float64, "grad_hess")[0]


def approxndcg_grad_hess(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray, temperature: float = 0.1, *,
                         gains: tuple[np.ndarray, np.ndarray] | None = None,
                         dtype: type = np.float32) -> tuple[np.ndarray, np.ndarray]:
    """The boosting step of ApproxNDCG: its gradient and the hessian that bounds the curvature with the rank
    weights held fixed (module docstring). Parameters as for :func:`approxndcg_value`; ``gains``
    (:func:`rankcli.core.losses.common.ndcg_gains` of the labels) may be passed precomputed; ``dtype`` is that of
    the pair terms (sums are float64)."""
    return _approx(labels, scores, offsets, temperature, gains, dtype, "grad_hess")
