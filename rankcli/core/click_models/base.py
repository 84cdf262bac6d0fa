"""What every click model declares: its parameter families, its estimator, and the interface the EM driver calls.

A parameter family is one kind of parameter: per item (attractiveness, satisfaction), per rank (PBM's examination),
per rank and previous click (UBM's examination), or one value (DBN's continuation). Every parameter is a ratio
``(prior numerator + sum of numerator contributions) / (prior denominator + sum of denominator contributions)``, as
PyClick keeps its parameters (``Param.py``): the model's E-step (or, for the closed-form models, its counts) yields
each observation's contributions, the driver (:mod:`rankcli.core.click_models.em`) sums them per parameter.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rankcli.core.click_models.sessions import Block
from rankcli.errors import UsageError

ITEM, RANK, RANK_PREV, SINGLE = "item", "rank", "rank_prev", "single"
KINDS = (ITEM, RANK, RANK_PREV, SINGLE)
#: The E-step's posteriors: ``exact`` conditions on the whole session; ``pyclick`` reproduces PyClick's DBN and CCM
#: updates (docs/clicks.md lists how they differ), to compare with numbers computed with it.
E_STEPS = ("exact", "pyclick")


@dataclass(frozen=True)
class Family:
    """One kind of parameter of a model.

    ``static_den``: the denominator contributions do not depend on the parameters (an EM driver counts them once).
    """

    name: str
    kind: str
    description: str
    static_den: bool = False


@dataclass(frozen=True)
class Prior:
    """The starting value and pseudo-counts of every parameter, and the cap of EM values.

    Every parameter starts at ``numerator / denominator`` and its estimate adds these pseudo-counts to the data's
    (PyClick's ``ParamMLE`` and ``ParamEM``: 1 and 2, a start at 1/2); EM values are capped at ``1 - cap`` (PyClick's
    ``PROB_MIN``, 1e-6), which keeps ``log(1 - p)`` finite.
    """

    numerator: float = 1.0
    denominator: float = 2.0
    cap: float = 1e-6

    def __post_init__(self) -> None:
        # A start at 0 or 1 would make some posterior 0/0 (a skip of a certainly attractive, examined result).
        if not (np.isfinite(self.numerator) and np.isfinite(self.denominator)) \
                or not 0 < self.numerator < self.denominator:
            raise UsageError(f"prior: expected 0 < numerator < denominator, got "
                             f"{self.numerator:g}/{self.denominator:g}")
        if not 0 < self.cap < 1:
            raise UsageError(f"cap: expected a probability margin in (0, 1), got {self.cap:g}")

    @property
    def mean(self) -> float:
        """The value of a parameter no observation touched."""
        return float(self.numerator) / float(self.denominator)


def family_size(kind: str, n_items: int, max_rank: int, n_groups: int = 1) -> int:
    """How many parameters a family of ``kind`` has."""
    return {ITEM: n_items, RANK: n_groups * max_rank, RANK_PREV: n_groups * max_rank * max_rank,
            SINGLE: n_groups}[kind]


class ClickModel:
    """A click model: its families and the per-block computations the driver and the evaluation call.

    Subclasses set :attr:`name`, :attr:`families`, :attr:`em` (EM, or a closed-form estimate) and implement
    :meth:`counts` (closed-form models) or :meth:`expectations` (EM models), :meth:`probabilities`,
    :meth:`relevance` and :meth:`simulate`. Every array argument ``p[family]`` is the family's current values
    gathered for the block's cells, broadcastable to ``(L, m)``.
    """

    name: str = ""
    title: str = ""
    families: tuple[Family, ...] = ()
    em: bool = False

    def family(self, name: str) -> Family:
        """The family called ``name``."""
        return next(f for f in self.families if f.name == name)

    def counts(self, b: Block) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Closed-form models: the numerator and denominator contributions of every cell, per family."""
        raise NotImplementedError

    def expectations(self, b: Block, p: dict, e_step: str) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]],
                                                                    np.ndarray]:
        """EM models: the E-step's contributions per family under the values ``p``, and each session's
        log-likelihood under them (``(m,)``, natural log)."""
        raise NotImplementedError

    def probabilities(self, b: Block, p: dict) -> tuple[np.ndarray, np.ndarray]:
        """``(conditional, full)``, each ``(L, m)``: the probability of each observed click or skip given the clicks
        above it, ``P(C_k = c_k | C_<k)``, and the unconditional click probability ``P(C_k = 1)``."""
        raise NotImplementedError

    def relevance(self, values: dict[str, np.ndarray]) -> np.ndarray | None:
        """The relevance each item's parameters predict (None for a model without per-item parameters)."""
        return None

    def simulate(self, p: dict, shape: tuple[int, int], rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``(clicks, examined)``, each ``(L, m)`` bool: one draw of the model for ``m`` lists of ``L`` results."""
        raise NotImplementedError


def skip_posterior(p: np.ndarray | float, q: np.ndarray | float) -> np.ndarray:
    """``P(X = 1 | not (X and Y))`` for independent events of probabilities ``p`` (X) and ``q`` (Y):
    ``p (1 - q) / (1 - p q)``. A skipped result under the examination hypothesis: the attractiveness's posterior
    takes the examination as ``Y``, the examination's takes the attractiveness."""
    return p * (1.0 - q) / (1.0 - p * q)
