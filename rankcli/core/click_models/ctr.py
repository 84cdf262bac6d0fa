"""The click-through-rate models (Chuklin, Markov and de Rijke 2015, sections 3.1-3.2): a click is one coin flip,
with one probability for every result (GCTR, the random click model), one per rank (RCTR) or one per item (DCTR).
Closed-form maximum likelihood: clicks over impressions, with the prior's pseudo-counts. Pure numpy.
"""

from __future__ import annotations

import numpy as np

from rankcli.core.click_models.base import ITEM, RANK, SINGLE, ClickModel, Family
from rankcli.core.click_models.sessions import Block


class _CTR(ClickModel):
    """``P(C_k = 1) = rho``, whatever is above: conditional and full click probabilities are the same."""

    em = False

    def counts(self, b: Block):
        return {"ctr": (b.c, 1.0)}

    def probabilities(self, b: Block, p: dict):
        full = np.broadcast_to(p["ctr"], (b.L, b.m))
        return np.where(b.click, full, 1.0 - full), full

    def simulate(self, p: dict, shape, rng):
        clicks = rng.random(shape) < np.broadcast_to(p["ctr"], shape)
        return clicks, np.ones(shape, bool)


class GCTR(_CTR):
    """Global CTR (the random click model): one click probability for every result."""

    name, title = "gctr", "global click-through rate (random click model)"
    families = (Family("ctr", SINGLE, "the click probability of every result"),)

    def relevance(self, values):
        return None


class RCTR(_CTR):
    """Rank-based CTR: one click probability per rank."""

    name, title = "rctr", "rank-based click-through rate"
    families = (Family("ctr", RANK, "the click probability at each rank"),)


class DCTR(_CTR):
    """Document-based CTR: one click probability per item."""

    name, title = "dctr", "document-based click-through rate"
    families = (Family("ctr", ITEM, "the click probability of each document"),)

    def relevance(self, values):
        return values["ctr"]
