"""The resume key of an experiment directory: what decides a unit's result, as data.

The rule, stated once: **the identity holds what decides a unit's result, each field as the version that introduced
it wrote it.** A field at its *neutral value* (the value with which every unit's result is that of a version without
the field) is left out, so that a directory written before the field existed keeps its identity and resumes. A field
that decides no unit's result is never in it. A field is recorded by what decides the results (a parameter file by
its parameters, a space file by its entries, a click model by its fingerprint), and a change in how a field acts is a
version key recorded beside it.

:data:`IDENTITY` applies the rule to every field of :class:`rankcli.experiment.config.ExperimentConfig`; a field
added to the configuration without an entry here fails its test (tests/experiment/test_identity.py) instead of
silently stopping existing directories from resuming.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from rankcli.tune.draws import SAMPLER

#: The marker of a field with no neutral value: always in the identity.
ALWAYS_KEPT = object()


def _tune_version() -> dict:
    """How the tuning draws: units tuned otherwise (an earlier version's) are not resumed."""
    return {"tune_sampler": SAMPLER}


@dataclass(frozen=True)
class Field:
    """How one field of the configuration enters the identity.

    neutral : the value at which the field is left out (:data:`ALWAYS_KEPT`: never left out).
    recorded : what of the value decides the results (default: the value itself).
    read : the value from the configuration (default: the attribute of the field's name).
    with_it : fields that act only with this one, left out with it.
    written_as : keys written in its place at its neutral value (its earlier spelling).
    version : keys recorded beside it when it is in the identity.
    """

    neutral: Any = ALWAYS_KEPT
    recorded: Callable[[Any], Any] = lambda value: value
    read: Callable[[Any], Any] | None = None
    with_it: tuple[str, ...] = ()
    written_as: dict = field(default_factory=dict)
    version: Callable[[], dict] | None = None


#: A field that decides no unit's result.
NEVER = Field()
#: The training configuration: each of its hyperparameters by its own name (``ExperimentConfig.hyperparameters``).
EXPANDED = Field()

IDENTITY: dict[str, Field] = {
    "trials": NEVER,         # more trials extend an experiment
    "correction": NEVER,     # the summary's, not a unit's
    "test": NEVER,           # the summary's, not a unit's
    "allow_overlap": NEVER,  # the data are checked on every run
    "train": EXPANDED,
    "losses": Field(), "metrics": Field(), "seed": Field(), "augment_negatives": Field(), "label_noise": Field(),
    "click_noise": Field(), "click_impressions": Field(), "logging_fraction": Field(),
    "split": Field(recorded=list),
    # an option at the value that reproduces rankcli before it existed (LossOption.before) is left out
    "loss_options": Field(neutral={}, read=lambda config: config.recorded_loss_options()),
    "params_file": Field(neutral=None, recorded=lambda v: {loss: entry["params"] for loss, entry in v.items()}),
    "tune": Field(neutral=None, version=_tune_version),
    "tune_space": Field(neutral=None, recorded=lambda v: v["entries"]),
    "click_model": Field(neutral=None, recorded=lambda v: v["fingerprint"]),
    "fuse": Field(neutral=None),
    "position_bias": Field(neutral=[], with_it=("logging_fraction",)),  # logging_fraction acts only with the sweep
    "folds": Field(neutral=False, written_as={"use_given_splits": False}),  # its earlier name, at its neutral value
}


def identity(config) -> dict:
    """The identity of ``config`` (an :class:`~rankcli.experiment.config.ExperimentConfig`) by :data:`IDENTITY`: one
    flat dictionary with sorted keys, as config.json records it."""
    out: dict = {}
    left_out: set[str] = set()
    for f in fields(config):
        rule = IDENTITY[f.name]
        if rule is NEVER:
            continue
        if rule is EXPANDED:
            out.update(config.hyperparameters())
            continue
        value = rule.read(config) if rule.read else getattr(config, f.name)
        if rule.neutral is not ALWAYS_KEPT and value == rule.neutral:
            out.update(rule.written_as)
            left_out.update(rule.with_it)
            continue
        out[f.name] = rule.recorded(value)
        if rule.version:
            out.update(rule.version())
    for name in left_out:
        out.pop(name, None)
    return json.loads(json.dumps(out, sort_keys=True))
