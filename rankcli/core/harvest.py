"""Intervention harvesting (Agarwal, Zaitsev, Wang, Li, Najork and Joachims, "Estimating position bias without
intrusive interventions", WSDM 2019): examination propensities from the logs of several deterministic rankers. Pure
numpy; :func:`rankcli.core.propensity.estimate` (method ``harvest``) runs it and its module docstring gives the
estimator. Here: the per-query pair sums ``c(k, k')`` (:func:`pair_sums`), the pairs resting on enough clicks
(:func:`used_pairs`) and the weighted least-squares fit of their log-ratios (:func:`fit`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

#: Documents whose (R x R) pair sums are formed at once (bounds the documents-by-pairs block).
BLOCK = 1 << 22


class HarvestSums(NamedTuple):
    """The sums of :func:`pair_sums`."""

    pair_sums: np.ndarray  # (Q, 2 R R): c(k, k') then clicks(k, k'), per source query
    at_k: np.ndarray  # (R,) clicks at k on documents shown at another position too
    elsewhere: np.ndarray  # (R,) clicks elsewhere on documents shown at k
    query_of_document: np.ndarray  # (D,) source query of each (densely renumbered) document


def pair_sums(q_row: np.ndarray, document: np.ndarray, positions: np.ndarray, clicks: np.ndarray,
              n_query: np.ndarray, Q: int, R: int) -> HarvestSums:
    """Per source query, the pair sums of intervention harvesting, (Q, 2 R R): ``c(k, k')`` (see
    :mod:`rankcli.core.propensity`) then the clicks ``clicks(k, k')`` at ``k`` on documents also shown at ``k'``; and
    per position the clicks at ``k`` on documents shown at another position too, and the clicks elsewhere on
    documents shown at ``k``. Documents are renumbered densely; pairs are formed per document in blocks (a loop over
    blocks, not queries).

    Parameters
    ----------
    q_row : (n_rows,) int
        Source query of every displayed row, ``0..Q - 1``.
    document : (n_rows,) int
        The document every row shows, one number per (source query, document).
    positions : (n_rows,) int
        1-based display positions; rows below position ``R`` are left out.
    clicks : (n_rows,) float
        The clicks, 0 or 1.
    n_query : (Q,) int
        Impressions of each source query (all policies pooled).
    Q, R : int
        Source queries, and positions estimated.
    """
    keep = positions <= R
    docs, d_row = np.unique(document[keep], return_inverse=True)
    D = docs.shape[0]
    idx = d_row * R + (positions[keep] - 1)
    N = np.bincount(idx, minlength=D * R).reshape(D, R).astype(np.float64)
    C = np.bincount(idx, weights=clicks[keep], minlength=D * R).reshape(D, R)
    q_doc = np.zeros(D, np.int64)
    q_doc[d_row] = q_row[keep]
    shown = N > 0
    n_q = n_query[q_doc].astype(np.float64)
    A = C / n_q[:, None]  # C(d, k) / n(q)
    B = N / n_q[:, None]  # N(d, k') / n(q)
    out = np.zeros((Q, 2 * R * R))
    step = max(1, BLOCK // (R * R))
    for a in range(0, D, step):
        b = min(D, a + step)
        pair_c = (A[a:b, :, None] * B[a:b, None, :]).reshape(b - a, R * R)
        pair_k = (C[a:b, :, None] * shown[a:b, None, :]).reshape(b - a, R * R)
        np.add.at(out, q_doc[a:b], np.concatenate((pair_c, pair_k), axis=1))
    elsewhere = shown.sum(axis=1, keepdims=True) - shown > 0  # shown at some other position too
    at_k = (C * elsewhere).sum(axis=0)
    others = ((C.sum(axis=1, keepdims=True) - C) * shown).sum(axis=0)
    return HarvestSums(out, at_k, others, q_doc)


class UsedPairs(NamedTuple):
    """The position pairs the fit uses."""

    pairs: np.ndarray  # (P, 2) int, (k, k') with k < k', 0-based
    weights: np.ndarray  # (P,) inverse delta-method variance of each pair's log-ratio
    stop: int  # 0-based first position not linked by a used pair to an earlier estimated one


def used_pairs(pair_clicks: np.ndarray, min_clicks: int, R: int) -> UsedPairs:
    """The used pairs -- both directions resting on ``min_clicks`` clicks -- and their weights
    ``1 / (1/clicks(k, k') + 1/clicks(k', k))``, among the positions linked to position 1 in order.

    Parameters
    ----------
    pair_clicks : (R * R,) float
        ``clicks(k, k')`` summed over queries (the second half of :func:`pair_sums`' ``pair_sums``).
    min_clicks : int
        The fewest clicks each direction of a used pair rests on.
    R : int
        Positions estimated.
    """
    K = pair_clicks.reshape(R, R)
    ok = (K >= min_clicks) & (K.T >= min_clicks)
    np.fill_diagonal(ok, False)
    stop = R
    for k in range(1, R):  # a loop over positions (at most the list length)
        if not ok[k, :k].any():
            stop = k
            break
    i, j = np.nonzero(np.triu(ok[:stop, :stop], 1))
    with np.errstate(divide="ignore"):
        w = 1.0 / (1.0 / K[i, j] + 1.0 / K[j, i])
    return UsedPairs(np.stack((i, j), axis=1), w, stop)


def fit(stats: np.ndarray, pairs: np.ndarray, weights: np.ndarray, stop: int, R: int) -> np.ndarray:
    """Propensities (..., R) from summed pair sums ``stats`` (..., 2 R R): weighted least squares of the used pairs'
    log-ratios ``log c(k, k') - log c(k', k) = log theta_k - log theta_k'`` with ``log theta_1 = 0``. A pair whose
    log-ratio is not finite (a zero sum in a bootstrap replicate) is left out of that replicate; a replicate that then
    no longer links every position is NaN there. NaN from ``stop`` on.

    Parameters
    ----------
    stats : (..., 2 R R) float
        :func:`pair_sums`' ``pair_sums`` summed over (resampled) queries; leading axes are replicates.
    pairs, weights, stop
        :func:`used_pairs`' result.
    R : int
        Positions estimated.
    """
    lead = stats.shape[:-1]
    c = stats[..., :R * R].reshape(*lead, R, R)
    out = np.full((*lead, R), np.nan)
    out[..., 0] = 1.0
    if stop <= 1 or pairs.shape[0] == 0:
        return out
    i, j = pairs[:, 0], pairs[:, 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.log(c[..., i, j]) - np.log(c[..., j, i])  # (..., P)
    ok = np.isfinite(y)
    w = np.where(ok, weights, 0.0)
    y = np.where(ok, y, 0.0)
    n = stop - 1  # unknowns: log theta of positions 2..stop
    X = np.zeros((pairs.shape[0], n))
    rows = np.arange(pairs.shape[0])
    np.add.at(X, (rows[i > 0], i[i > 0] - 1), 1.0)
    np.add.at(X, (rows[j > 0], j[j > 0] - 1), -1.0)
    G = np.einsum("pa,...p,pb->...ab", X, w, X)
    h = np.einsum("pa,...p->...a", X, w * y)
    full = np.linalg.matrix_rank(G) == n
    theta = np.einsum("...ab,...b->...a", np.linalg.pinv(G), h)
    p = np.exp(theta)
    p[~full] = np.nan
    out[..., 1:stop] = p
    return out


def pair_support(pair_clicks: np.ndarray, pairs: np.ndarray, R: int) -> np.ndarray:
    """Per position, the clicks its estimate rests on: the most, over the used pairs that include it, of the pair's
    smaller click count (each direction must reach ``min_clicks``); 0 where no used pair includes the position.

    Parameters
    ----------
    pair_clicks : (R * R,) float
        ``clicks(k, k')`` summed over queries (as :func:`used_pairs` takes it).
    pairs : (P, 2) int
        :func:`used_pairs`' pairs.
    R : int
        Positions estimated.
    """
    K = pair_clicks.reshape(R, R)
    out = np.zeros(R)
    if pairs.shape[0]:
        i, j = pairs[:, 0], pairs[:, 1]
        least = np.minimum(K[i, j], K[j, i])
        np.maximum.at(out, i, least)
        np.maximum.at(out, j, least)
    return out
