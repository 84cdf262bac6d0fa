"""ListMLE and Position-Aware ListMLE: the negative log Plackett-Luce likelihood of the ranking by label.

For a query whose documents, in the order ``pi`` of the ranking by label (labels decreasing), have the scores
``x_1 .. x_n``, with ``Z_p = sum_{k >= p} exp(x_k)``::

    loss = sum_p w_p (log Z_p - x_p)
    d loss / d x_p = -w_p + exp(x_p) sum_{i <= p} w_i / Z_i
    d^2 loss / d x_p^2 = sum_{i <= p} w_i q_ip (1 - q_ip),  q_ip = exp(x_p) / Z_i

ListMLE (Xia et al. 2008) has ``w_p = 1``. Position-Aware ListMLE (Lan et al. 2014) weights position ``p`` of ``n``
by ``alpha(p) = 2^(n - p) - 1``; rankcli divides the weights of each query by its first, ``2^(n - 1) - 1``, so that
they stay finite for any ``n`` (``2^(n - 1)`` overflows float64 from ``n = 1025`` on) and the first position weighs 1
in every query: ``w_p = (2^(n - p) - 1) / (2^(n - 1) - 1)``, ``n`` the query's own length. The weighting across
lengths is therefore rankcli's own. TF-Ranking (``create_p_list_mle_lambda_weight(list_size)``) pads every list of a
batch to one ``list_size`` ``L`` and weighs position ``p`` by ``2^(L - p) - 1`` whatever the query's length: with
``L = 7`` a 3-document query's positions weigh 63, 31, 15 (rankcli: 1, 1/3, 0, the ratio of ``alpha`` for 3
documents) and a 7-document query's 63, 31, ..., 1, 0 (rankcli: the same divided by 63). At equal scores the
3-document query's loss is 0.388 of the 7-document query's in rankcli and 0.420 in TF-Ranking (the tests compute
both). For queries of one length the two differ by a constant factor, which a boosting step ``-sum g / sum h`` does
not see; across lengths, they weigh the queries differently.

Every term is convex in the scores (a log-sum-exp minus a linear term, with ``w_p >= 0``), so the exact diagonal of
the Hessian is the boosting step's hessian: each ``q (1 - q) >= 0``, and in exact arithmetic it is positive for every
document of a query of two or more (the last position collects the terms of every earlier one). In float64 it is not
always: at the scores ``(-40, 0, 0)`` the best document's hessian is 2.1e-18 beside a gradient of -1, and from
about 37 above the rest of its query ``q`` rounds to 1, so that a document's hessian is 0 or rounding noise (at
``(0, 0, 40)`` the worst document's is 0 in Position-Aware ListMLE and 2e-14 in ListMLE, for an exact value below
1e-17) beside a gradient of 1.3 or 2. The boosting objective floors it
(:func:`rankcli.core.losses.guard_hessian`), so that no Newton step is unbounded; the hessian here is ``>= 0``.

Documents with equal labels have no order of their own: as allRank does, a random order among them is drawn
(:func:`listmle_order`, from a generator the caller passes: the boosting objective redraws it every tree from the
seed), and the value and gradient functions take that order as an argument, so that they are deterministic. It may
be left out when the labels within each query are distinct.

Computed in log space (``log Z_p`` and the cumulative sums of ``w_i / Z_i`` by ``logaddexp.accumulate``) on
queries laid out as padded matrices per size bucket (:func:`rankcli.core.groups.size_buckets`), so scores of any
spread give finite values: ``O(n)`` per query after the ``O(n log n)`` order.
"""

from __future__ import annotations

import numpy as np

from rankcli.core.groups import order_within, padded_rows, query_index, size_buckets, sizes
from rankcli.core.losses.common import LN2


def listmle_order(labels: np.ndarray, offsets: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
    """The rows of every query in the order of the ranking by label, labels decreasing: ``order[offsets[q]:offsets[q
    + 1]]`` are query ``q``'s rows. Equal labels come in an order drawn from ``rng`` (every order equally likely), or
    in input order without one.

    Parameters
    ----------
    labels : relevance labels (any real value), one per document, grouped by query.
    offsets : query boundaries, length ``n_queries + 1``.
    rng : the generator of the order among equal labels.
    """
    y = np.asarray(labels, dtype=np.float64)
    base = order_within(y, offsets)
    if rng is None or y.shape[0] == 0:
        return base
    ranked = y[base]
    qi = query_index(offsets)
    new_run = np.ones(y.shape[0], dtype=bool)
    new_run[1:] = (ranked[1:] != ranked[:-1]) | (qi[1:] != qi[:-1])
    run = np.cumsum(new_run) - 1
    # runs keep their places, each run's rows are shuffled by a uniform key
    return base[np.argsort(run + rng.random(y.shape[0]), kind="stable")]


def check_order(labels: np.ndarray, offsets: np.ndarray, order: np.ndarray | None) -> np.ndarray:
    """``order`` if it ranks the rows of every query by label, decreasing (:func:`listmle_order`), else
    :class:`ValueError`; without ``order``, the input order of equal labels when no query has two equal labels.

    Parameters
    ----------
    labels, offsets : as for :func:`listmle_order`.
    order : the order to check, or ``None``.
    """
    y = np.asarray(labels, dtype=np.float64)
    qi = query_index(offsets)
    same_query = qi[1:] == qi[:-1]
    if order is None:
        order = order_within(y, offsets)
        if (same_query & (y[order][1:] == y[order][:-1])).any():
            raise ValueError("labels tie within a query: pass the order among them (listmle_order with a generator)")
        return order
    order = np.asarray(order, dtype=np.int64)
    if order.shape != y.shape or (order.size and (order.min() < 0 or order.max() >= y.shape[0])):
        raise ValueError("order must hold every row once")
    if (qi[order] != qi).any() or (np.bincount(order, minlength=y.shape[0]) != 1).any():
        raise ValueError("order must hold every row once, each query's rows in its own range")
    if (same_query & (y[order][1:] > y[order][:-1])).any():
        raise ValueError("order must rank each query's rows by label, decreasing")
    return order


def position_log_weights(n: np.ndarray, position: np.ndarray) -> np.ndarray:
    """``log(alpha(p) / alpha(1))`` of Position-Aware ListMLE, ``alpha(p) = 2^(n - p) - 1``, for positions
    ``position`` (1-based) of queries of ``n`` documents (arrays of one shape); ``-inf`` for the last position and
    for queries of one document.

    ``log(2^k - 1) = k ln 2 + log1p(-2^-k)``, so ``log(alpha(p) / alpha(1)) = (1 - p) ln 2 + log1p(-2^(p - n)) -
    log1p(-2^(1 - n))``: finite and exact to rounding for lists of any length.
    """
    n = np.asarray(n, dtype=np.float64)
    p = np.asarray(position, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (1.0 - p) * LN2 + np.log1p(-np.exp2(p - n)) - np.log1p(-np.exp2(1.0 - n))
    return np.where((p < n) & (n > 1), out, -np.inf)


def _plackett_luce(labels, scores, offsets, order, position_aware: bool, want: str):
    """The value per query (``want == "value"``) or ``(gradient, hessian)`` per row (``"grad_hess"``)."""
    order = check_order(labels, offsets, order)
    s = np.asarray(scores, dtype=np.float64)
    n_q = offsets.shape[0] - 1
    value = np.zeros(n_q)
    grad = np.zeros(s.shape[0])
    hess = np.zeros(s.shape[0])
    sz = sizes(offsets)
    for qs, width in size_buckets(offsets):
        if width <= 1:
            continue
        cells, valid = padded_rows(offsets, qs, width)
        rows = order[cells]                          # (queries, width): each query's rows in the order by label
        # Positions run down the columns of the transposed matrices: accumulate then vectorises over queries.
        x = np.where(valid, s[rows], -np.inf).T
        position = np.arange(1, width + 1, dtype=np.float64)[:, None]
        lw = position_log_weights(sz[qs][None, :], position) if position_aware else np.where(valid.T, 0.0, -np.inf)
        with np.errstate(invalid="ignore", over="ignore"):
            log_z = np.logaddexp.accumulate(x[::-1], axis=0)[::-1]          # log Z_p
            if want == "value":
                terms = np.exp(lw) * (log_z - x)
                value[qs] = np.where(valid.T, terms, 0.0).sum(axis=0)
                continue
            log_c = np.logaddexp.accumulate(np.where(valid.T, lw - log_z, -np.inf), axis=0)
            log_c2 = np.logaddexp.accumulate(np.where(valid.T, lw - 2.0 * log_z, -np.inf), axis=0)
            first = np.exp(x + log_c)                                        # sum_{i <= p} w_i q_ip
            g = first - np.exp(lw)
            h = np.maximum(first - np.exp(2.0 * x + log_c2), 0.0)            # minus sum w_i q_ip^2; >= 0 but rounding
        keep = valid & (sz[qs] > 1)[:, None]
        grad[rows[keep]] = g.T[keep]
        hess[rows[keep]] = h.T[keep]
    return value if want == "value" else (grad, hess)


def listmle_value(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray,
                  order: np.ndarray | None = None) -> np.ndarray:
    """ListMLE per query: ``sum_p (log sum_{k >= p} exp(x_k) - x_p)`` over the ranking by label; 0 for one document.

    Parameters
    ----------
    labels : relevance labels (any real value), one per document, grouped by query; only their order counts.
    scores : model scores, one per document.
    offsets : query boundaries, length ``n_queries + 1``.
    order : the ranking by label (:func:`listmle_order`); may be left out when no query has two equal labels.

    References
    ----------
    F. Xia, T.-Y. Liu, J. Wang, W. Zhang, H. Li. Listwise Approach to Learning to Rank: Theory and Algorithm.
    ICML 2008.
    """
    return _plackett_luce(labels, scores, offsets, order, False, "value")


def listmle_gradient(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray,
                     order: np.ndarray | None = None) -> np.ndarray:
    """The exact gradient of :func:`listmle_value` (same parameters)."""
    return listmle_grad_hess(labels, scores, offsets, order)[0]


def listmle_grad_hess(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray,
                      order: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The exact gradient of :func:`listmle_value` and the exact diagonal of its Hessian (same parameters)."""
    return _plackett_luce(labels, scores, offsets, order, False, "grad_hess")


def listmle_pa_value(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray,
                     order: np.ndarray | None = None) -> np.ndarray:
    """Position-Aware ListMLE per query: ``sum_p w_p (log sum_{k >= p} exp(x_k) - x_p)`` over the ranking by label,
    ``w_p = (2^(n - p) - 1) / (2^(n - 1) - 1)`` (module docstring); 0 for one document. Parameters as for
    :func:`listmle_value`.

    References
    ----------
    Y. Lan, Y. Zhu, J. Guo, S. Niu, X. Cheng. Position-Aware ListMLE: A Sequential Learning Process for Ranking.
    UAI 2014.
    """
    return _plackett_luce(labels, scores, offsets, order, True, "value")


def listmle_pa_gradient(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray,
                        order: np.ndarray | None = None) -> np.ndarray:
    """The exact gradient of :func:`listmle_pa_value` (same parameters)."""
    return listmle_pa_grad_hess(labels, scores, offsets, order)[0]


def listmle_pa_grad_hess(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray,
                         order: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The exact gradient of :func:`listmle_pa_value` and the exact diagonal of its Hessian (same parameters)."""
    return _plackett_luce(labels, scores, offsets, order, True, "grad_hess")
