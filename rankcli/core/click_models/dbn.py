"""The dynamic Bayesian network models (Chuklin, Markov and de Rijke 2015, sections 3.8-3.9; Chapelle and Zhang, WWW
2009). Pure numpy.

DBN
    The user examines rank 1; an examined result is clicked with its attractiveness ``alpha``; a click satisfies with
    the item's satisfaction ``sigma`` and the user leaves; otherwise (a skip, or an unsatisfying click) the user goes
    on with probability ``gamma``. EM (section 4.3) over the chain's posteriors (:mod:`~.chain`).
SDBN, the simplified DBN
    ``gamma = 1``: every result down to the last click is examined, none below it (all of a session without a
    click). Closed-form (section 4.1): ``alpha`` is clicks over impressions at or above the last click, ``sigma``
    last clicks over clicks.
"""

from __future__ import annotations

from rankcli.core.click_models import chain
from rankcli.core.click_models.base import ITEM, SINGLE, ClickModel, Family
from rankcli.core.click_models.cascade import examined_to_last
from rankcli.core.click_models.sessions import Block

_ATTR = Family("attr", ITEM, "attractiveness: P(click | examined)", static_den=True)
_SAT = Family("sat", ITEM, "satisfaction: P(the user leaves satisfied | click)", static_den=True)


def _chain(b_shape, p: dict, gamma) -> chain.Chain:
    return chain.Chain.of(b_shape, p["attr"], p["sat"], gamma, gamma, 0.0)


class DBN(ClickModel):
    """The dynamic Bayesian network model: attractiveness and satisfaction per item, one continuation ``gamma``."""

    name, title = "dbn", "dynamic Bayesian network model"
    families = (_ATTR, _SAT, Family("cont", SINGLE, "continuation (gamma): P(go on | not satisfied)"))
    em = True

    def expectations(self, b: Block, p: dict, e_step: str):
        post = chain.posteriors(b, _chain((b.L, b.m), p, p["cont"]), e_step, satisfied_goes_on=False)
        return {"attr": (post["attr"], 1.0), "sat": (post["sat"], b.c),
                "cont": (post["go_num"], post["go_den"])}, post["ll"]

    def probabilities(self, b: Block, p: dict):
        return chain.probabilities(b, _chain((b.L, b.m), p, p["cont"]))

    def relevance(self, values):
        return values["attr"] * values["sat"]

    def simulate(self, p: dict, shape, rng):
        return chain.simulate(_chain(shape, p, p["cont"]), rng)


class SDBN(ClickModel):
    """The simplified DBN: ``gamma = 1``, closed-form."""

    name, title = "sdbn", "simplified dynamic Bayesian network model"
    families = (_ATTR, _SAT)
    em = False

    def counts(self, b: Block):
        seen = examined_to_last(b)
        is_last = b.click & (b.rank == b.last[None, :])
        return {"attr": (b.c * seen, seen), "sat": (is_last, b.c)}

    def probabilities(self, b: Block, p: dict):
        return chain.probabilities(b, _chain((b.L, b.m), p, 1.0))

    def relevance(self, values):
        return values["attr"] * values["sat"]

    def simulate(self, p: dict, shape, rng):
        return chain.simulate(_chain(shape, p, 1.0), rng)
