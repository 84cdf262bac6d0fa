"""The cascade family (Chuklin, Markov and de Rijke 2015, sections 3.4 and 3.6): the user scans the list from the
top. Closed-form maximum likelihood (section 4.1) for both. Pure numpy.

CM, the cascade model (Craswell, Zoeter, Taylor and Ramsey, WSDM 2008)
    The user examines rank 1, clicks an examined result with its attractiveness ``alpha`` and stops at the first
    click: ``P(C_k = 1) = alpha_k prod_{j<k} (1 - alpha_j)``. ``alpha`` is estimated from the results at or above the
    first click (all of a session without one). The model gives a click below the first one probability 0; its
    conditional probabilities there are ``FLOOR`` for a click and ``1 - FLOOR`` for a skip, so that a log with
    several clicks per session keeps a finite log-likelihood.
DCM, the dependent click model (Guo, Liu and Wang, WSDM 2009)
    After a click at rank ``k`` the user goes on with probability ``lambda_k``, after a skip always. With the book's
    simplifying assumption that the last click satisfied the user, ``alpha`` is estimated from the results at or
    above the last click (all of a session without one) and ``lambda_k`` from the clicks at rank ``k`` (continued
    unless it is the session's last).
"""

from __future__ import annotations

import numpy as np

from rankcli.core.click_models.base import ITEM, RANK, ClickModel, Family
from rankcli.core.click_models.sessions import Block

#: The probability the cascade model gives an event it rules out (PyClick's ``CM.PROB_MIN``).
FLOOR = 1e-6


def examined_to_first(b: Block) -> np.ndarray:
    """``(L, m)`` bool: at or above the session's first click (every rank of a session without one)."""
    return b.rank <= b.first[None, :]


def examined_to_last(b: Block) -> np.ndarray:
    """``(L, m)`` bool: at or above the session's last click (every rank of a session without one)."""
    return (b.rank <= b.last[None, :]) | (b.last[None, :] < 0)


def cascade_walk(attractive: np.ndarray, goes_on: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(clicks, examined)`` of users who scan from rank 1, click an examined attractive result, and after a click
    go on only where ``goes_on`` (each ``(L, m)`` bool)."""
    clicks = np.zeros(attractive.shape, bool)
    examined = np.zeros(attractive.shape, bool)
    e = np.ones(attractive.shape[1], bool)
    for k in range(attractive.shape[0]):
        examined[k] = e
        clicks[k] = e & attractive[k]
        e = e & (~clicks[k] | goes_on[k])
    return clicks, examined


class CM(ClickModel):
    """The cascade model: one click at most, at the first attractive result."""

    name, title = "cascade", "cascade model"
    families = (Family("attr", ITEM, "attractiveness: P(click | examined)"),)
    em = False

    def counts(self, b: Block):
        seen = examined_to_first(b)
        return {"attr": (b.c * seen, seen)}

    def probabilities(self, b: Block, p: dict):
        a = np.broadcast_to(p["attr"], (b.L, b.m))
        before = examined_to_first(b)
        cond = np.where(before, np.where(b.click, a, 1.0 - a), np.where(b.click, FLOOR, 1.0 - FLOOR))
        exam = np.ones((b.L, b.m))
        if b.L > 1:
            exam[1:] = np.cumprod(1.0 - a[:-1], axis=0)
        return cond, a * exam

    def relevance(self, values):
        return values["attr"]

    def simulate(self, p: dict, shape, rng):
        return cascade_walk(rng.random(shape) < np.broadcast_to(p["attr"], shape), np.zeros(shape, bool))


class DCM(ClickModel):
    """The dependent click model: after a click at rank ``k`` the user goes on with probability ``lambda_k``."""

    name, title = "dcm", "dependent click model"
    families = (Family("attr", ITEM, "attractiveness: P(click | examined)"),
                Family("cont", RANK, "continuation after a click at this rank (lambda, 1 - satisfaction)"))
    em = False

    def counts(self, b: Block):
        seen = examined_to_last(b)
        went_on = b.click & (b.rank != b.last[None, :])
        return {"attr": (b.c * seen, seen), "cont": (went_on, b.c)}

    def probabilities(self, b: Block, p: dict):
        a = np.broadcast_to(p["attr"], (b.L, b.m))
        lam = np.broadcast_to(p["cont"], (b.L, b.m))
        cond = np.empty((b.L, b.m))
        e = np.ones(b.m)
        for k in range(b.L):
            ck = b.click[k]
            cond[k] = np.where(ck, a[k] * e, 1.0 - a[k] * e)
            e = np.where(ck, lam[k], e * (1.0 - a[k]) / cond[k])
        step = lam * a + (1.0 - a)
        exam = np.ones((b.L, b.m))
        if b.L > 1:
            exam[1:] = np.cumprod(step[:-1], axis=0)
        return cond, a * exam

    def relevance(self, values):
        return values["attr"]

    def simulate(self, p: dict, shape, rng):
        a = np.broadcast_to(p["attr"], shape)
        lam = np.broadcast_to(p["cont"], shape)
        attractive = rng.random(shape) < a
        return cascade_walk(attractive, rng.random(shape) < lam)
