"""LambdaLoss (Wang et al. 2018): pairwise logistic losses weighted so that they bound NDCG, with the rank-dependent
weights taken at the current scores.

Per query, over the pairs ``(i, j)`` with ``y_i > y_j``::

    loss = - sum_{y_i > y_j} w_ij log2 sigmoid(sigma (s_i - s_j))
    NDCG-Loss2++ (default):  w_ij = (rho_ij + mu delta_ij) |G_i - G_j|
    NDCG-Loss2:              w_ij = delta_ij |G_i - G_j|

with ``G = (2^y - 1) / maxDCG`` (:func:`rankcli.core.losses.common.ndcg_gains`, finite for labels of any size),
``rho_ij = |1 / D(r_i) - 1 / D(r_j)|``, ``delta_ij = |1 / D(|r_i - r_j|) - 1 / D(|r_i - r_j| + 1)|``,
``D(r) = log2(1 + r)`` and ``r`` the 1-based ranks under the current scores (equal scores in input order). As in the
paper (and allRank's ``lambdaLoss``, whose defaults ``mu = 10``, ``sigma = 1``, base-2 logarithm and no truncation
rankcli takes) the ranks are held fixed within a boosting iteration: with them fixed the loss is a weighted RankNet,
convex in the scores, and its exact gradient and exact Hessian diagonal are the boosting step::

    d loss / d s_i = -(sigma / ln 2) sum_j w_ij p_ij + (sigma / ln 2) sum_j w_ji p_ji
    p_ij = sigmoid(-sigma (s_i - s_j)), the probability of the wrong order
    hess_i = (sigma^2 / ln 2) sum over i's pairs of w p (1 - p) >= 0

Each query is laid out in rank order, where ``rho + mu delta`` depends on the two columns only: one matrix per
width, shared by every query of a block. Cost ``O(n^2)`` per query, in memory-bounded pair blocks
(:mod:`rankcli.core.losses.common`); the boosting step's pair terms in float32, the value and gradient in float64.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from rankcli.core.groups import padded_rows
from rankcli.core.losses import common
from rankcli.core.losses.common import LN2, gain_pairs, usable_blocks, wrong_order_probabilities

LAMBDALOSS_VARIANTS = ("ndcg-loss2++", "ndcg-loss2")


def rank_weights(first: int, last: int, width: int, variant: str, mu: float, dtype: type = np.float64) -> np.ndarray:
    """``rho_ij + mu delta_ij`` (NDCG-Loss2++) or ``delta_ij`` (NDCG-Loss2) for the ranks ``i = first .. last``
    (rows) against ``j = 1 .. width`` (columns): a ``(last - first + 1, width)`` matrix, 0 on equal ranks.

    ``delta`` depends on ``|i - j|`` only: row ``i`` is a window of one vector of ``2 width - 1`` values, so the
    matrix is a strided view of it, copied once."""
    gaps = np.arange(1.0, width)
    table = np.concatenate(([0.0], np.abs(1.0 / np.log2(1.0 + gaps) - 1.0 / np.log2(2.0 + gaps))))
    line = np.concatenate((table[:0:-1], table)).astype(dtype)     # line[width - 1 + d] = table[abs(d)]
    windows = np.lib.stride_tricks.sliding_window_view(line, width)  # windows[width - i][j - 1] = table[abs(i - j)]
    out = windows[width - last:width - first + 1][::-1].copy()
    if variant == "ndcg-loss2":
        return out
    out *= dtype(mu)
    inverse = (1.0 / np.log2(1.0 + np.arange(1, width + 1))).astype(dtype)
    rho = np.subtract(inverse[first - 1:last, None], inverse[None, :])
    np.abs(rho, out=rho)
    out += rho
    return out


@lru_cache(maxsize=64)
def _block_weights(width: int, variant: str, mu: float, dtype: str) -> np.ndarray:
    return rank_weights(1, width, width, variant, mu, np.dtype(dtype).type)


def _lambdaloss(labels, scores, offsets, variant, mu, sigma, ranks, gains, dtype, want: str):
    if variant not in LAMBDALOSS_VARIANTS:
        raise ValueError(f"LambdaLoss's variant is one of {', '.join(LAMBDALOSS_VARIANTS)}, got {variant!r}")
    if not (sigma > 0 and mu >= 0):
        raise ValueError(f"LambdaLoss needs sigma > 0 and mu >= 0, got sigma={sigma}, mu={mu}")
    g_all, usable_q, x_all = gain_pairs(labels, scores, offsets, gains, sigma, dtype)
    s = np.asarray(scores, dtype=np.float64)
    value = np.zeros(offsets.shape[0] - 1)
    grad, hess = np.zeros(s.shape[0]), np.zeros(s.shape[0])
    for qs, width in usable_blocks(offsets, usable_q):
        cells, valid = padded_rows(offsets, qs, width)
        key = -s[cells] if ranks is None else np.asarray(ranks, dtype=np.float64)[cells]
        key[~valid] = np.inf                                          # padding last; equal scores in input order
        rows = np.take_along_axis(cells, np.argsort(key, axis=1, kind="stable"), axis=1)  # in rank order
        x = x_all[rows]
        g = g_all[rows].astype(dtype)
        g_rows = np.where(valid, g, dtype(-1.0))                      # padding: never the more relevant of a pair
        g_cols = np.where(valid, g, dtype(2.0))                       # nor the less relevant (every G is in [0, 1])
        tile = common.row_tile(width) if qs.shape[0] == 1 else width
        for t in range(0, width, tile):
            u = min(width, t + tile)
            weights = (_block_weights(width, variant, float(mu), np.dtype(dtype).name) if tile >= width else
                       rank_weights(t + 1, u, width, variant, mu, dtype))
            out = _pair_terms(x, valid, slice(t, u), g_rows[:, t:u], g_cols, weights, want == "value")
            if want == "value":
                value[qs] += out
                continue
            k_rows, k_cols, h_rows, h_cols = out
            grad[rows[:, t:u][valid[:, t:u]]] -= k_rows[valid[:, t:u]]
            hess[rows[:, t:u][valid[:, t:u]]] += h_rows[valid[:, t:u]]
            grad[rows[valid]] += k_cols[valid]
            hess[rows[valid]] += h_cols[valid]
    if want == "value":
        return value
    return grad * (sigma / LN2), hess * (sigma * sigma / LN2)


def _pair_terms(x, valid, rows: slice, g_rows, g_cols, weights, want_value: bool):
    """Pair terms of the rows ``i`` of ``rows`` against every column ``j`` of each query of a block (``x = sigma s``,
    ``(q, m)``): the value per query, or ``(rowsum K, colsum K, rowsum H, colsum H)`` (float64) with ``K = w p`` and
    ``H = w p (1 - p)``."""
    w = np.subtract(g_rows[:, :, None], g_cols[:, None, :])          # G_i - G_j; > 0 exactly when y_i > y_j
    np.maximum(w, 0.0, out=w)
    w *= weights
    if want_value:
        z = np.subtract(x[:, rows, None], x[:, None, :])              # sigma (s_i - s_j)
        np.negative(z, out=z)
        np.logaddexp(0.0, z, out=z)                                   # -log sigmoid(sigma (s_i - s_j))
        z *= w
        return z.sum(axis=(1, 2)) / LN2
    z = wrong_order_probabilities(x, valid, rows)                     # p_ij = 1 / (1 + exp(sigma (s_i - s_j)))
    w *= z                                                            # K = w p
    z -= 1.0                                                          # p - 1: H = w p (1 - p) = -K (p - 1)
    # the sums are einsum's own loops (no BLAS, whose threads would compete with LightGBM's)
    f8 = np.float64
    return (np.einsum("bij->bi", w).astype(f8), np.einsum("bij->bj", w).astype(f8),
            -np.einsum("bij,bij->bi", w, z).astype(f8), -np.einsum("bij,bij->bj", w, z).astype(f8))


def lambdaloss_value(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray, variant: str = "ndcg-loss2++",
                     mu: float = 10.0, sigma: float = 1.0, ranks: np.ndarray | None = None) -> np.ndarray:
    """LambdaLoss per query (module docstring); 0 for a query of one document or without gain.

    Parameters
    ----------
    labels : relevance labels ``y >= 0`` (any real value), one per document, grouped by query.
    scores : model scores, one per document.
    offsets : query boundaries, length ``n_queries + 1``.
    variant : ``ndcg-loss2++`` (``rho + mu delta``) or ``ndcg-loss2`` (``delta``).
    mu : the weight of ``delta`` in NDCG-Loss2++ (``>= 0``).
    sigma : the scale of the score differences (``> 0``).
    ranks : the 1-based ranks ``r`` the weights are taken at (default: the ranks under ``scores``); given, the
        weights are held fixed, as within a boosting iteration.

    References
    ----------
    X. Wang, C. Li, N. Golbandi, M. Bendersky, M. Najork. The LambdaLoss Framework for Ranking Metric Optimization.
    CIKM 2018.
    """
    return _lambdaloss(labels, scores, offsets, variant, mu, sigma, ranks, None, np.float64, "value")


def lambdaloss_gradient(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray, variant: str = "ndcg-loss2++",
                        mu: float = 10.0, sigma: float = 1.0, ranks: np.ndarray | None = None) -> np.ndarray:
    """The exact gradient of :func:`lambdaloss_value` with its rank weights held fixed (same parameters), float64."""
    return _lambdaloss(labels, scores, offsets, variant, mu, sigma, ranks, None, np.float64, "grad_hess")[0]


def lambdaloss_grad_hess(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray, variant: str = "ndcg-loss2++",
                         mu: float = 10.0, sigma: float = 1.0, *, gains: tuple[np.ndarray, np.ndarray] | None = None,
                         dtype: type = np.float32) -> tuple[np.ndarray, np.ndarray]:
    """The boosting step of LambdaLoss: the exact gradient and Hessian diagonal with the rank weights taken at
    ``scores`` and held fixed. Parameters as for :func:`lambdaloss_value`; ``gains``
    (:func:`rankcli.core.losses.common.ndcg_gains` of the labels) may be passed precomputed; ``dtype`` is that of
    the pair terms (sums are float64)."""
    return _lambdaloss(labels, scores, offsets, variant, mu, sigma, None, gains, dtype, "grad_hess")
