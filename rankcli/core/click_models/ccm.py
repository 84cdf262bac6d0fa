"""The click chain model (Chuklin, Markov and de Rijke 2015, section 3.7; Guo, Liu, Kannan, Minka, Taylor, Wang and
Faloutsos, WWW 2009). Pure numpy.

The user examines rank 1; an examined result is clicked with its attractiveness ``alpha``; after a skip the user
goes on with ``tau_1``; after a click, which satisfies with probability ``alpha`` (the attractiveness read as
relevance), with ``tau_3`` if satisfied and ``tau_2`` if not. EM over the chain's posteriors (:mod:`~.chain`): the
M-step of ``alpha`` pools its two roles, ``(sum P(A = 1 | C) + sum_clicks P(S = 1 | C)) / (impressions + clicks)``
(PyClick's ``CCMAttrEM``).
"""

from __future__ import annotations

import numpy as np

from rankcli.core.click_models import chain
from rankcli.core.click_models.base import ITEM, SINGLE, ClickModel, Family
from rankcli.core.click_models.sessions import Block


def _chain(shape, p: dict) -> chain.Chain:
    return chain.Chain.of(shape, p["attr"], p["attr"], p["tau1"], p["tau2"], p["tau3"])


class CCM(ClickModel):
    """The click chain model: attractiveness per item, three continuation probabilities."""

    name, title = "ccm", "click chain model"
    families = (Family("attr", ITEM, "attractiveness: P(click | examined), also P(satisfied | click)",
                       static_den=True),
                Family("tau1", SINGLE, "continuation after a skip"),
                Family("tau2", SINGLE, "continuation after an unsatisfying click"),
                Family("tau3", SINGLE, "continuation after a satisfying click"))
    em = True

    def expectations(self, b: Block, p: dict, e_step: str):
        post = chain.posteriors(b, _chain((b.L, b.m), p), e_step)
        return {"attr": (post["attr"] + post["sat"], 1.0 + b.c),
                "tau1": (np.where(b.click, 0.0, post["go_num"]), np.where(b.click, 0.0, post["go_den"])),
                "tau2": (np.where(b.click, post["go_num"], 0.0), np.where(b.click, post["go_den"], 0.0)),
                "tau3": (post["sat_num"], post["sat_den"])}, post["ll"]

    def probabilities(self, b: Block, p: dict):
        return chain.probabilities(b, _chain((b.L, b.m), p))

    def relevance(self, values):
        return values["attr"] ** 2

    def simulate(self, p: dict, shape, rng):
        return chain.simulate(_chain(shape, p), rng)
