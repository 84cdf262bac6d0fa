"""Listwise and pairwise ranking losses: value, gradient and hessian for a whole batch of queries at once.

Every function takes ``(labels, scores, offsets)``, the argument order of :mod:`rankcli.core.metrics`: flat
per-document arrays sorted by query plus ``offsets`` (length ``n_queries + 1``; see :mod:`rankcli.core.groups`), and
never loops over queries in Python (RankNet loops over padded *blocks* of queries, see below). Values are returned
per query; gradients and hessians per document. Scores are raw model outputs. Which loss trains how (LightGBM's own
objective or these functions as a callable objective) is recorded once per loss in :mod:`rankcli.train.losses`.

Losses
------
``xendcg``
    XE-NDCG (Bruch, WWW 2021). ``rho = softmax(scores)`` and ``phi_i = (2^y_i - gamma_i) / sum_j (2^y_j - gamma_j)``
    within the query; ``loss = -sum_i phi_i log rho_i``; exact gradient ``rho - phi``. For boosting,
    :func:`xendcg_grad_hess` returns the paper's Newton-corrected step: with ``H = D (I - S)``,
    ``D = diag(rho (1 - rho))``, ``S_ij = rho_j / (1 - rho_i)`` (``i != j``), ``H^-1 ~ (I + S + S^2) D^-1`` and the
    "gradient" passed to the booster is ``D (I + S + S^2) D^-1 g`` (the numerator of the Newton direction), the
    "hessian" ``rho (1 - rho)``; the leaf value ``-sum grad / sum hess`` is then the approximate Newton step. This is
    what LightGBM's ``rank_xendcg`` computes, but labels may be real (``2^y - gamma`` is defined for any ``y >= 0``;
    LightGBM casts labels to int).
``listnet``
    ``phi = softmax(labels)``, ``loss = -sum_i phi_i log rho_i``, gradient ``rho - phi``, hessian ``rho (1 - rho)``
    (the diagonal of the softmax cross-entropy Hessian).
``ranknet``
    ``sum over pairs (i, j) of the query with y_i > y_j of log(1 + exp(-(s_i - s_j)))`` (sigma 1, no
    normalisation), exact gradient and exact diagonal of the Hessian (the per-pair terms in float32, which is what
    LightGBM consumes, summed in float64; the value in float64).

Degenerate queries
------------------
A query with one document carries no ranking information: its value, gradient and hessian are zero (as LightGBM's
``rank_xendcg``). For XE-NDCG a query whose target mass ``sum_j (2^y_j - gamma_j)`` is zero (all labels 0 and
``gamma = 1``) has no defined target distribution and is treated the same way.

Memory bound of RankNet
-----------------------
All pairs of a query are formed in padded ``(q, r, m)`` blocks: queries are grouped by size (a geometric grid of ratio
1.125, so at most ~27% padding cells), ``m`` is the bucket's width, and each block holds at most
:data:`MAX_PAIR_ELEMENTS` cells (queries per block ``q = MAX_PAIR_ELEMENTS // m^2``; a query longer than
``sqrt(MAX_PAIR_ELEMENTS)`` is cut into row tiles of ``r = MAX_PAIR_ELEMENTS // m`` documents against all ``m``). The
gradient path keeps a boolean mask and two float32 arrays per cell, the value path three float64 ones, so the working
memory stays below ``32 * MAX_PAIR_ELEMENTS`` bytes (32 MiB) whatever the list lengths.

References
----------
- S. Bruch. An Alternative Cross Entropy Loss for Learning-to-Rank. The Web Conference (WWW) 2021 (XE-NDCG).
- Z. Cao, T. Qin, T.-Y. Liu, M.-F. Tsai, H. Li. Learning to Rank: From Pairwise Approach to Listwise Approach.
  ICML 2007 (ListNet).
- C. Burges, T. Shaked, E. Renshaw, A. Lazier, M. Deeds, N. Hamilton, G. Hullender. Learning to Rank using Gradient
  Descent. ICML 2005 (RankNet).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rankcli.core.groups import broadcast, padded_rows, segment_max, segment_softmax, segment_sum, sizes
from rankcli.errors import UsageError

#: Cells of one padded pair block in RankNet (bounds its working memory; see the module docstring).
MAX_PAIR_ELEMENTS = 1 << 20
#: ``1 - rho`` is floored here so that a document holding (numerically) all of the softmax mass does not divide by 0.
_TINY = 1e-12


# --------------------------------------------------------------------------------------------------------------- gamma
@dataclass(frozen=True)
class GammaStrategy:
    """How XE-NDCG's ``gamma`` is chosen: ``uniform`` (redrawn per document per iteration), ``fixed:<g>``, ``mean``."""

    kind: str  # "uniform" | "fixed"
    value: float = 0.5  # for "fixed"

    def __str__(self) -> str:
        return "uniform" if self.kind == "uniform" else f"fixed:{self.value:g}"

    @property
    def random(self) -> bool:
        return self.kind == "uniform"

    def draw(self, n: int, rng: np.random.Generator | None) -> np.ndarray | float:
        """Gamma for ``n`` documents: an array for ``uniform`` (drawn from ``rng``, required), a constant otherwise.

        Parameters
        ----------
        n : the number of documents.
        rng : the generator of a ``uniform`` draw (ignored otherwise).
        """
        if self.kind == "uniform":
            if rng is None:
                raise ValueError("gamma strategy 'uniform' needs a random generator")
            return rng.random(n)
        return self.value


def parse_gamma(text: str) -> GammaStrategy:
    """The strategy ``text`` names: ``uniform`` | ``mean`` (= ``fixed:0.5``) | ``fixed:<g>`` with ``0 <= g <= 1``.

    Parameters
    ----------
    text : the ``--gamma`` value (case and surrounding blanks ignored); anything else is a :class:`UsageError`.
    """
    t = text.strip().lower()
    if t == "uniform":
        return GammaStrategy("uniform")
    if t == "mean":
        return GammaStrategy("fixed", 0.5)
    if t.startswith("fixed:"):
        try:
            g = float(t[len("fixed:"):])
        except ValueError:
            g = float("nan")
        if not (0.0 <= g <= 1.0):
            raise UsageError(f"--gamma fixed:<g> needs a number g in [0, 1], got {text!r}")
        return GammaStrategy("fixed", g)
    raise UsageError(f"--gamma must be uniform, mean or fixed:<g> with g in [0, 1], got {text!r}")


# ------------------------------------------------------------------------------------------------------------- helpers
def _log_softmax(scores: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    s = np.asarray(scores, dtype=np.float64)
    shifted = s - broadcast(segment_max(s, offsets), offsets)
    return shifted - broadcast(np.log(segment_sum(np.exp(shifted), offsets)), offsets)


def _single(offsets: np.ndarray) -> np.ndarray:
    """Per-row mask of documents alone in their query."""
    return broadcast(sizes(offsets) <= 1, offsets)


def xendcg_label_terms(labels: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(2^(y_i - m_q), 2^-m_q)`` per row, ``m_q`` the largest label of the row's query (``labels`` grouped by
    query, ``offsets`` the query boundaries): the scaled target mass.

    XE-NDCG's target ``phi_i = (2^y_i - gamma_i) / sum_j (2^y_j - gamma_j)`` is unchanged when numerator and
    denominator are both divided by ``2^m_q``: ``phi_i = (2^(y_i - m_q) - gamma_i 2^-m_q) / sum_j (...)``. In that
    form no term exceeds 1, so labels of any size give finite targets (``2^y`` itself overflows float64 from
    ``y = 1024`` on, which made every target NaN and trained a constant model). When ``2^-m_q`` underflows to 0
    (``m_q > 1074``) the gamma terms are below float64's resolution of the result and dropping them is exact to
    rounding. These two arrays depend on the labels only, so a boosting objective computes them once.
    """
    y = np.asarray(labels, dtype=np.float64)
    if y.shape[0] == 0:
        return np.zeros(0), np.zeros(0)
    top = broadcast(segment_max(y, offsets), offsets)
    return np.exp2(y - top), np.exp2(-top)


def xendcg_targets(labels: np.ndarray, offsets: np.ndarray, gamma: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """``phi_i = (2^y_i - gamma_i) / sum_j (2^y_j - gamma_j)`` per document, and the per-row mask of usable rows
    (``labels`` grouped by query, ``offsets`` the query boundaries, ``gamma`` a number or one per document).

    Computed stably for labels of any size (:func:`xendcg_label_terms`). A row is unusable when its query has one
    document or no target mass (see the module docstring); its ``phi`` is 0.
    """
    shifted, scale = xendcg_label_terms(labels, offsets)
    numer = shifted - gamma * scale
    total = segment_sum(numer, offsets)
    usable_q = (total > 0) & (sizes(offsets) > 1)
    usable = broadcast(usable_q, offsets)
    denom = broadcast(np.where(usable_q, total, 1.0), offsets)
    return np.where(usable, numer / denom, 0.0), usable


# -------------------------------------------------------------------------------------------------------------- xendcg
def xendcg_value(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray,
                 gamma: np.ndarray | float = 0.5) -> np.ndarray:
    """XE-NDCG per query (Bruch 2021), ``-sum_i phi_i(gamma) log rho_i``; 0 for degenerate queries.

    Parameters
    ----------
    labels : relevance labels ``y >= 0`` (any real value), one per document, grouped by query.
    scores : model scores, one per document.
    offsets : query boundaries, length ``n_queries + 1``.
    gamma : a number or one per document, in ``[0, 1]``.

    Notes
    -----
    ``rho = softmax(scores)`` and ``phi_i = (2^y_i - gamma_i) / sum_j (2^y_j - gamma_j)`` within the query.

    References
    ----------
    S. Bruch. An Alternative Cross Entropy Loss for Learning-to-Rank. The Web Conference (WWW) 2021.
    """
    phi, usable = xendcg_targets(labels, offsets, gamma)
    return -segment_sum(np.where(usable, phi * _log_softmax(scores, offsets), 0.0), offsets)


def xendcg_gradient(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray,
                    gamma: np.ndarray | float = 0.5) -> np.ndarray:
    """The exact gradient of :func:`xendcg_value` with respect to the scores: ``rho - phi`` (same parameters)."""
    phi, usable = xendcg_targets(labels, offsets, gamma)
    return np.where(usable, segment_softmax(scores, offsets) - phi, 0.0)


def xendcg_grad_hess(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray,
                     gamma: np.ndarray | float = 0.5, *,
                     label_terms: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The Newton-corrected XE-NDCG step for gradient boosting: ``(D (I + S + S^2) D^-1 g, rho (1 - rho))``.

    Per document ``k`` of a query (``g = rho - phi``):
    ``grad_k = g_k + rho_k sum_{i != k} g_i / (1 - rho_i) + rho_k sum_{i != k} rho_i (S D^-1 g)_i`` with
    ``(S D^-1 g)_i = sum_{j != i} g_j / (1 - rho_j) / (1 - rho_i)``; ``hess_k = rho_k (1 - rho_k)``.
    Each ``sum_{i != k}`` is the query's total minus the own term, so the whole step is three segment sums.

    ``labels``, ``scores``, ``offsets`` and ``gamma`` as for :func:`xendcg_value`. ``label_terms``
    (:func:`xendcg_label_terms` of the labels) may be passed precomputed by a caller that takes many steps on the same
    queries (the boosting objective); the result is the same. The step is the paper's (Bruch 2021, section 4.2).
    """
    starts = offsets[:-1]
    if starts.shape[0] == 0:
        return np.zeros(0), np.zeros(0)
    sz = sizes(offsets)

    def rep(per_query: np.ndarray) -> np.ndarray:  # one value per query onto its rows (np.repeat beats a gather)
        return np.repeat(per_query, sz)

    s = np.asarray(scores, dtype=np.float64)
    # rho = softmax(scores) per query, the query's maximum subtracted first
    rho = s - rep(np.maximum.reduceat(s, starts))
    np.exp(rho, out=rho)
    rho /= rep(np.add.reduceat(rho, starts))
    # phi = (2^y - gamma) / sum (2^y - gamma), both scaled by 2^-max(y) of the query (finite for any label);
    # g = rho - phi
    shifted, scale = label_terms if label_terms is not None else xendcg_label_terms(labels, offsets)
    numer = shifted - gamma * scale
    total = np.add.reduceat(numer, starts)
    usable_q = (total > 0) & (sz > 1)
    all_usable = bool(usable_q.all())
    g = rho - numer / rep(total if all_usable else np.where(usable_q, total, 1.0))
    one_minus = np.subtract(1.0, rho)
    hess = rho * one_minus
    np.maximum(one_minus, _TINY, out=one_minus)
    a = g / one_minus                                             # g_i / (1 - rho_i)
    t = rep(np.add.reduceat(a, starts))
    t -= a
    t *= rho                                                      # t1_k = rho_k sum_{i!=k} g_i / (1 - rho_i)
    grad = g + t
    t /= one_minus                                                # b_i = rho_i (S D^-1 g)_i
    t2 = rep(np.add.reduceat(t, starts))
    t2 -= t
    t2 *= rho                                                     # t2_k = rho_k sum_{i!=k} rho_i (S D^-1 g)_i
    grad += t2
    if not all_usable:
        usable = rep(usable_q)
        grad[~usable] = 0.0
        hess[~usable] = 0.0
    return grad, hess


# ------------------------------------------------------------------------------------------------------------- listnet
def listnet_target(labels: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """ListNet's target ``softmax(y)`` per query of ``labels`` (``offsets`` the query boundaries), for labels of
    any size.

    The query's maximum is subtracted first; labels further below it than float64 reaches (e.g. -1.7e308 against
    1.7e308) overflow to ``-inf``, whose ``exp`` is 0: their exact limit. Only numpy's overflow warning is silenced
    (it leaked to stderr from ``rankcli train --loss listnet``).
    """
    with np.errstate(over="ignore"):
        return segment_softmax(labels, offsets)


def listnet_value(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """ListNet (top-one cross entropy) per query: ``-sum_i softmax(y)_i log softmax(s)_i``; 0 for one document.

    Parameters
    ----------
    labels : relevance labels (any real value), one per document, grouped by query.
    scores : model scores, one per document.
    offsets : query boundaries, length ``n_queries + 1``.

    References
    ----------
    Z. Cao, T. Qin, T.-Y. Liu, M.-F. Tsai, H. Li. Learning to Rank: From Pairwise Approach to Listwise Approach.
    ICML 2007 (the top-one probability model).
    """
    phi = listnet_target(labels, offsets)
    values = -segment_sum(phi * _log_softmax(scores, offsets), offsets)
    return np.where(sizes(offsets) > 1, values, 0.0)


def listnet_gradient(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Exact gradient of :func:`listnet_value`: ``softmax(s) - softmax(y)`` (same parameters)."""
    grad = segment_softmax(scores, offsets) - listnet_target(labels, offsets)
    return np.where(_single(offsets), 0.0, grad)


def listnet_grad_hess(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray, *,
                      label_softmax: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """ListNet gradient and the diagonal of its Hessian, ``rho (1 - rho)``.

    ``labels``, ``scores`` and ``offsets`` as for :func:`listnet_value`; ``label_softmax``
    (:func:`listnet_target` of the labels) may be passed precomputed; the result is the same.
    """
    rho = segment_softmax(scores, offsets)
    single = _single(offsets)
    phi = label_softmax if label_softmax is not None else listnet_target(labels, offsets)
    grad = np.where(single, 0.0, rho - phi)
    hess = np.where(single, 0.0, rho * (1.0 - rho))
    return grad, hess


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


def _fine_buckets(offsets: np.ndarray, ratio: float = 1.125):
    """Like :func:`rankcli.core.groups.size_buckets` with sizes grouped on a finer geometric grid (ratio 1.125).

    Pair blocks cost ``width^2`` cells per query, so power-of-two buckets could waste up to 4x; here at most ~27%.
    """
    sz = sizes(offsets)
    if sz.shape[0] == 0:
        return
    bucket = np.ceil(np.log(np.maximum(sz, 1)) / np.log(ratio)).astype(np.int64)
    order = np.argsort(bucket, kind="stable")
    b_sorted = bucket[order]
    cuts = np.flatnonzero(b_sorted[1:] != b_sorted[:-1]) + 1
    for qs in np.split(order, cuts):
        yield qs, int(sz[qs].max())


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
    for qs, width in _fine_buckets(offsets):
        if width <= 1:
            continue
        per_block = MAX_PAIR_ELEMENTS // (width * width)
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
            tile = max(1, MAX_PAIR_ELEMENTS // width)
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
