"""The softmax cross-entropy losses: XE-NDCG (with its gamma strategies) and ListNet, and the paper's
Newton-corrected step that both take.

``rho = softmax(scores)`` within each query. Both losses are ``-sum_i phi_i log rho_i`` for a target distribution
``phi`` of the labels (XE-NDCG: ``(2^y - gamma) / sum (2^y - gamma)``; ListNet: ``softmax(y)``), so both have the
gradient ``g = rho - phi`` and the Hessian ``H = diag(rho) - rho rho^T``. The paper (Bruch 2021, section 4.2) writes
that Hessian as ``H = D (I - S)`` with ``D = diag(rho (1 - rho))`` and ``S_ij = rho_j / (1 - rho_i)`` (``i != j``,
``S_ii = 0``) and approximates ``H^-1 ~ (I + S + S^2) D^-1``: :func:`softmax_newton_step` passes the booster the
numerator ``D (I + S + S^2) D^-1 g`` as the "gradient" and ``rho (1 - rho)`` as the "hessian", so that each leaf's
``-sum grad / sum hess`` is the approximate Newton step.

What the approximation needs. ``S`` is row-stochastic (``S 1 = 1``: each row sums to ``(1 - rho_i) / (1 - rho_i)``),
so its spectral radius is exactly 1, not below it (the paper's softmax has a small epsilon in its denominator, which
makes the rows sum to less than 1): ``I - S`` is singular, as ``H`` is (``H 1 = 0``: a constant added to a query's
scores changes nothing), and ``sum_k S^k`` does not converge as a matrix. The step needs the series only on
``D^-1 g``, where it does converge for a query of three or more documents: ``S``'s left eigenvector of the eigenvalue
1 is ``D``'s diagonal (``sum_i rho_i (1 - rho_i) S_ij = rho_j (1 - rho_j)``), and ``sum_i rho_i (1 - rho_i) (D^-1
g)_i = sum_i g_i = 0`` because ``rho`` and ``phi`` both sum to 1, so ``D^-1 g`` has no component along the eigenvector
``1``; every other eigenvalue of ``S`` lies strictly inside the unit circle when every ``rho_i > 0`` and ``n >= 3``
(``S^2`` is then positive, so ``S`` is primitive). The limit ``x = sum_k S^k D^-1 g`` solves ``H x = g``: the Newton
direction, up to a constant per query that rankings ignore; the step truncates it after ``S^2``. For two documents
``S = [[0, 1], [1, 0]]`` has the eigenvalue -1 on ``D^-1 g`` itself: the series oscillates, and the truncated step
``(I + S + S^2) D^-1 g = D^-1 g`` is twice the Newton step ``H^+ g``.

The hessian ``rho (1 - rho)`` is ``>= 0``; in exact arithmetic it is positive for every document of a query of two
or more, in float64 not always: 4e-18 for a document 40 below another (beside a gradient near its target weight), and
0 or rounding noise for one about 37 or more above the rest (``rho`` rounds to 1), 0 exactly from gaps of about 745
on. ``1 - rho`` is floored at 1e-12 where the step divides by it, and the boosting objective floors the hessian
(:func:`rankcli.core.losses.guard_hessian`) so that no Newton step is unbounded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rankcli.core.groups import broadcast, segment_max, segment_softmax, segment_sum, sizes
from rankcli.core.losses.common import log_softmax, single_rows
from rankcli.errors import UsageError

#: ``1 - rho`` is floored here so that a document holding (numerically) all of the softmax mass does not divide by 0.
TINY = 1e-12
#: ListNet's boosting steps: ``paper`` (the approximate inverse Hessian XE-NDCG takes) or ``diagonal``.
LISTNET_STEPS = ("paper", "diagonal")


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
    return -segment_sum(np.where(usable, phi * log_softmax(scores, offsets), 0.0), offsets)


def xendcg_gradient(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray,
                    gamma: np.ndarray | float = 0.5) -> np.ndarray:
    """The exact gradient of :func:`xendcg_value` with respect to the scores: ``rho - phi`` (same parameters)."""
    phi, usable = xendcg_targets(labels, offsets, gamma)
    return np.where(usable, segment_softmax(scores, offsets) - phi, 0.0)


def xendcg_grad_hess(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray,
                     gamma: np.ndarray | float = 0.5, *,
                     label_terms: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The Newton-corrected XE-NDCG step for gradient boosting: ``(D (I + S + S^2) D^-1 g, rho (1 - rho))`` with
    ``g = rho - phi`` (:func:`softmax_newton_step`).

    ``labels``, ``scores``, ``offsets`` and ``gamma`` as for :func:`xendcg_value`. ``label_terms``
    (:func:`xendcg_label_terms` of the labels) may be passed precomputed by a caller that takes many steps on the same
    queries (the boosting objective); the result is the same. The step is the paper's (Bruch 2021, section 4.2).
    """
    starts = offsets[:-1]
    if starts.shape[0] == 0:
        return np.zeros(0), np.zeros(0)
    sz = sizes(offsets)
    # phi = (2^y - gamma) / sum (2^y - gamma), both scaled by 2^-max(y) of the query (finite for any label)
    shifted, scale = label_terms if label_terms is not None else xendcg_label_terms(labels, offsets)
    numer = shifted - gamma * scale
    total = np.add.reduceat(numer, starts)
    usable_q = (total > 0) & (sz > 1)
    rho = _softmax_rows(scores, starts, sz)
    g = rho - numer / np.repeat(total if usable_q.all() else np.where(usable_q, total, 1.0), sz)
    return softmax_newton_step(rho, g, starts, sz, usable_q)


def _softmax_rows(scores: np.ndarray, starts: np.ndarray, sz: np.ndarray) -> np.ndarray:
    """softmax(scores) per query (queries starting at ``starts``, of sizes ``sz``), the query's maximum subtracted
    first; ``np.repeat`` onto the rows beats a gather."""
    s = np.asarray(scores, dtype=np.float64)
    rho = s - np.repeat(np.maximum.reduceat(s, starts), sz)
    np.exp(rho, out=rho)
    rho /= np.repeat(np.add.reduceat(rho, starts), sz)
    return rho


def softmax_newton_step(rho: np.ndarray, g: np.ndarray, starts: np.ndarray, sz: np.ndarray,
                        usable_q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The paper's approximate Newton step of a softmax cross entropy: ``(D (I + S + S^2) D^-1 g, rho (1 - rho))``.

    Per document ``k`` of a query: ``grad_k = g_k + rho_k sum_{i != k} g_i / (1 - rho_i) + rho_k sum_{i != k} rho_i
    (S D^-1 g)_i`` with ``(S D^-1 g)_i = sum_{j != i} g_j / (1 - rho_j) / (1 - rho_i)``; ``hess_k = rho_k (1 - rho_k)``.
    Each ``sum_{i != k}`` is the query's total minus the own term, so the whole step is three segment sums.

    Parameters
    ----------
    rho : the softmax of the scores per query, one per document.
    g : the gradient ``rho - phi``, one per document.
    starts, sz : the first row and the size of every query.
    usable_q : per query, whether it trains (the others get a zero gradient and hessian).
    """
    def rep(per_query: np.ndarray) -> np.ndarray:  # one value per query onto its rows
        return np.repeat(per_query, sz)

    one_minus = np.subtract(1.0, rho)
    hess = rho * one_minus
    np.maximum(one_minus, TINY, out=one_minus)
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
    if not usable_q.all():
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
    values = -segment_sum(phi * log_softmax(scores, offsets), offsets)
    return np.where(sizes(offsets) > 1, values, 0.0)


def listnet_gradient(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Exact gradient of :func:`listnet_value`: ``softmax(s) - softmax(y)`` (same parameters)."""
    grad = segment_softmax(scores, offsets) - listnet_target(labels, offsets)
    return np.where(single_rows(offsets), 0.0, grad)


def listnet_grad_hess(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray, *,
                      label_softmax: np.ndarray | None = None, step: str = "paper") -> tuple[np.ndarray, np.ndarray]:
    """ListNet's boosting step: ``paper`` (default), the approximate Newton step XE-NDCG takes
    (:func:`softmax_newton_step` with ``g = softmax(s) - softmax(y)``, Bruch 2021 section 4.2), or ``diagonal``,
    the gradient and the diagonal of the Hessian ``rho (1 - rho)``.

    ``labels``, ``scores`` and ``offsets`` as for :func:`listnet_value`; ``label_softmax`` (:func:`listnet_target`
    of the labels) may be passed precomputed; the result is the same.
    """
    if step not in LISTNET_STEPS:
        raise ValueError(f"ListNet's step is one of {', '.join(LISTNET_STEPS)}, got {step!r}")
    phi = label_softmax if label_softmax is not None else listnet_target(labels, offsets)
    if step == "paper":
        starts = offsets[:-1]
        if starts.shape[0] == 0:
            return np.zeros(0), np.zeros(0)
        sz = sizes(offsets)
        rho = _softmax_rows(scores, starts, sz)
        return softmax_newton_step(rho, rho - phi, starts, sz, sz > 1)
    rho = segment_softmax(scores, offsets)
    single = single_rows(offsets)
    grad = np.where(single, 0.0, rho - phi)
    hess = np.where(single, 0.0, rho * (1.0 - rho))
    return grad, hess
