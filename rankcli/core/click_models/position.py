"""The examination-hypothesis family (Chuklin, Markov and de Rijke 2015, sections 3.3 and 3.5): a result is clicked
when it is examined and attractive, two independent events. EM (section 4.2). Pure numpy.

PBM, the position-based model (Richardson, Dominowska and Ragno, WWW 2007; Craswell et al., WSDM 2008)
    ``P(C_k = 1) = alpha_{item} gamma_k``: examination depends on the rank alone.
UBM, the user browsing model (Dupret and Piwowarski, SIGIR 2008)
    ``P(C_k = 1 | C_<k) = alpha_{item} gamma_{k, k'}``: examination depends on the rank ``k`` and on the rank ``k'``
    of the last click above it (0 when there is none; the distance to it is ``k - k'``).

The E-step of both (the book's equations 4.13-4.14, PyClick's ``PBMAttrEM``, ``UBMExamEM``, ...): a click means
examined and attractive; a skip gives ``P(A = 1 | skip) = alpha (1 - gamma) / (1 - alpha gamma)`` and
``P(E = 1 | skip) = gamma (1 - alpha) / (1 - alpha gamma)``. Clicks at different ranks are independent given the
observed clicks above (UBM), so these posteriors are exact.
"""

from __future__ import annotations

import numpy as np

from rankcli.core.click_models.base import ITEM, RANK, RANK_PREV, ClickModel, Family, skip_posterior
from rankcli.core.click_models.sessions import Block


def examination_e_step(b: Block, a: np.ndarray, g: np.ndarray):
    """The E-step of the examination hypothesis: contributions to attractiveness and examination, and each
    session's log-likelihood, for attractiveness ``a`` and examination ``g`` per cell."""
    ag = a * g
    attr = np.where(b.click, 1.0, skip_posterior(a, g))
    exam = np.where(b.click, 1.0, skip_posterior(g, a))
    with np.errstate(divide="ignore"):  # a click's probability underflowed to 0: -inf, which em.fit refuses
        ll = np.log(np.where(b.click, ag, 1.0 - ag)).sum(axis=0)
    return {"attr": (attr, 1.0), "exam": (exam, 1.0)}, ll


class PBM(ClickModel):
    """The position-based model: ``P(click at k) = alpha_item gamma_k``."""

    name, title = "pbm", "position-based model"
    families = (Family("attr", ITEM, "attractiveness: P(click | examined)", static_den=True),
                Family("exam", RANK, "examination probability at this rank", static_den=True))
    em = True

    def expectations(self, b: Block, p: dict, e_step: str):
        return examination_e_step(b, np.broadcast_to(p["attr"], (b.L, b.m)), np.broadcast_to(p["exam"], (b.L, b.m)))

    def probabilities(self, b: Block, p: dict):
        full = np.broadcast_to(p["attr"] * p["exam"], (b.L, b.m))
        return np.where(b.click, full, 1.0 - full), full

    def relevance(self, values):
        return values["attr"]

    def simulate(self, p: dict, shape, rng):
        examined = rng.random(shape) < np.broadcast_to(p["exam"], shape)
        return examined & (rng.random(shape) < np.broadcast_to(p["attr"], shape)), examined


class UBM(ClickModel):
    """The user browsing model: examination by rank and the rank of the last click above."""

    name, title = "ubm", "user browsing model"
    families = (Family("attr", ITEM, "attractiveness: P(click | examined)", static_den=True),
                Family("exam", RANK_PREV, "examination probability at this rank after the last click at the "
                       "previous rank (0: no click above)", static_den=True))
    em = True

    def expectations(self, b: Block, p: dict, e_step: str):
        return examination_e_step(b, np.broadcast_to(p["attr"], (b.L, b.m)), np.broadcast_to(p["exam"], (b.L, b.m)))

    def probabilities(self, b: Block, p: dict):
        a = np.broadcast_to(p["attr"], (b.L, b.m))
        observed = a * np.broadcast_to(p["exam"], (b.L, b.m))
        return np.where(b.click, observed, 1.0 - observed), self._full(b, a, p["exam:grid"])

    @staticmethod
    def _full(b: Block, a: np.ndarray, grid: np.ndarray) -> np.ndarray:
        """``P(C_k = 1)``, summed over the rank of the last click above (PyClick's recursion)."""
        L, m = b.L, b.m
        grid = grid[0] if grid.shape[0] == 1 or b.group is None else grid[b.group]  # (R, R) or (m, R, R)
        full = np.empty((L, m))
        lead = np.ones((L + 1, m))  # lead[j]: P(the chain starts at j): 1 for "no click", P(C_{j-1} = 1) after
        run = np.ones((L + 1, m))  # run[j]: P(no click from the start j up to the current rank)
        for k in range(L):
            g = grid[k, :k + 1][:, None] if grid.ndim == 2 else grid[:, k, :k + 1].T
            p_click = a[k][None, :] * g  # (k + 1, m)
            full[k] = (lead[:k + 1] * run[:k + 1] * p_click).sum(axis=0)
            run[:k + 1] *= 1.0 - p_click
            lead[k + 1] = full[k]
        return full

    def relevance(self, values):
        return values["attr"]

    def simulate(self, p: dict, shape, rng):
        L, m = shape
        grid = p["exam:grid"][0]
        a = np.broadcast_to(p["attr"], shape)
        attractive = rng.random(shape) < a
        u = rng.random(shape)
        clicks = np.zeros(shape, bool)
        examined = np.zeros(shape, bool)
        prev = np.zeros(m, np.int64)
        for k in range(L):
            examined[k] = u[k] < grid[k, prev]
            clicks[k] = examined[k] & attractive[k]
            prev = np.where(clicks[k], k + 1, prev)
        return clicks, examined
