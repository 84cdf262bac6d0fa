"""The convention a metric is computed under: gain, queries without a relevant document, ties, relevance, ERR's scale.

The choices are described in :mod:`rankcli.core.metrics`; the presets name the conventions of the paper, LightGBM,
scikit-learn and trec_eval.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from rankcli.errors import UsageError

GAINS = ("exponential", "linear")
NO_RELEVANT = ("skip", "one", "zero")
TIES = ("input", "average", "docid-desc")
PRESETS = ("paper", "lightgbm", "sklearn", "trec")
#: ERR's maximum grade when ``Convention.max_grade`` is None (the five-grade scale 0..4 of LETOR / Web30K / Yahoo).
DEFAULT_MAX_GRADE = 4.0


@dataclass(frozen=True)
class Convention:
    """How a metric treats gains, queries without relevant documents, ties, relevance and ERR's scale.

    Parameters
    ----------
    gain : ``"exponential"`` (``2^label - 1``) or ``"linear"`` (``label``); negative labels have gain 0.
    no_relevant : ``"skip"`` (NaN, left out of the mean), ``"one"`` or ``"zero"``: the value of a query without a
        relevant document.
    ties : ``"input"`` (equal scores in input order), ``"average"`` (the expectation over the orders of tied
        documents) or ``"docid-desc"`` (by document id, descending in byte order: trec_eval's rule).
    relevance_threshold : a document is relevant for the binary metrics when ``label >= relevance_threshold``.
    max_grade : ERR's top grade (None: :data:`DEFAULT_MAX_GRADE`).
    """

    gain: str = "exponential"
    no_relevant: str = "skip"
    ties: str = "input"
    relevance_threshold: float = 1.0
    max_grade: float | None = None

    def __post_init__(self) -> None:
        for name, value, allowed in (("gain", self.gain, GAINS), ("no_relevant", self.no_relevant, NO_RELEVANT),
                                     ("ties", self.ties, TIES)):
            if value not in allowed:
                raise UsageError(f"unknown {name} {value!r}; expected one of: {', '.join(allowed)}")
        if not np.isfinite(self.relevance_threshold):
            raise UsageError(f"relevance threshold must be a finite number, got {self.relevance_threshold}")
        if self.max_grade is not None and not (np.isfinite(self.max_grade) and self.max_grade > 0):
            raise UsageError(f"max grade must be a positive number, got {self.max_grade}")

    @classmethod
    def preset(cls, name: str) -> Convention:
        """The convention a preset names.

        Parameters
        ----------
        name : ``paper``: exponential gain, skip, input order; ``lightgbm``: exponential, one, input order;
            ``sklearn``: linear gain, zero, average over ties; ``trec`` (trec_eval's): linear gain, zero, ties by docid
            descending in byte order.
        """
        if name == "paper":
            return cls(gain="exponential", no_relevant="skip", ties="input")
        if name == "lightgbm":
            return cls(gain="exponential", no_relevant="one", ties="input")
        if name == "sklearn":
            return cls(gain="linear", no_relevant="zero", ties="average")
        if name == "trec":
            return cls(gain="linear", no_relevant="zero", ties="docid-desc")
        raise UsageError(f"unknown convention preset {name!r}; expected one of: {', '.join(PRESETS)}")

    def with_(self, **changes) -> Convention:
        """A copy with some fields changed (keyword arguments named as the fields; None values are ignored),
        validated."""
        fields = {**asdict(self), **{k: v for k, v in changes.items() if v is not None}}
        return Convention(**fields)

    @property
    def err_max_grade(self) -> float:
        """ERR's top grade: ``max_grade``, or :data:`DEFAULT_MAX_GRADE` when it is None."""
        return DEFAULT_MAX_GRADE if self.max_grade is None else float(self.max_grade)

    def as_dict(self) -> dict:
        """The fields as JSON values, ``max_grade`` resolved (the ``convention`` object of reports)."""
        return {"gain": self.gain, "no_relevant": self.no_relevant, "ties": self.ties,
                "relevance_threshold": float(self.relevance_threshold), "max_grade": self.err_max_grade}

    def describe(self) -> str:
        """One line for reports: ``gain=exponential no_relevant=skip ties=input threshold=1 max_grade=4``."""
        return (f"gain={self.gain} no_relevant={self.no_relevant} ties={self.ties} "
                f"threshold={self.relevance_threshold:g} max_grade={self.err_max_grade:g}")
