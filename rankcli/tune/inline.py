"""Tuning inside one experiment unit (``experiment --tune N``): a study in memory on the unit's own training and
validation data, with the same space, draws, budget and failure rule as ``rankcli tune`` (:mod:`rankcli.tune.draws`),
returning the best trial's model so that the unit tests it without training it again.

The unit's test queries never reach this module: it is given the training data (with its validation set) only.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from rankcli.tune.draws import DEFAULT_MAX_FAILURES, Failure, ask, failures_error, value_text
from rankcli.tune.space import train_space
from rankcli.tune.study import quiet_optuna
from rankcli.tune.trial import TrialOutcome, train_trial, trial_config


class Tuned(NamedTuple):
    """The best trial of a unit's tuning: its outcome (with the model), its parameters, the finished trials (the
    budget), ``train``'s value, and the trials that failed (no finite validation value; not counted)."""

    best: TrialOutcome
    params: dict[str, Any]
    trials: int
    default_value: float | None
    failed: int = 0


def tune_in_memory(prepared: Any, base: Any, budget: int, space_spec: dict | None = None,
                   objective: Any = None, max_failures: int = DEFAULT_MAX_FAILURES) -> Tuned:
    """Tune ``base``'s loss on ``prepared`` (a :class:`~rankcli.train.PreparedData` with its validation set) until
    ``budget`` trainings have a finite validation value, and return the best (the earliest among equal values).

    Parameters
    ----------
    prepared : the unit's training data and validation set, binned once for every trial.
    base : the unit's :class:`~rankcli.train.TrainConfig` (its seed seeds the draws; trial 0 is it unchanged).
    budget : the finished trainings (trial 0 included); a failed one takes a draw, not the budget.
    space_spec : a ``--space`` file (:func:`rankcli.tune.space.read_space_file`), or ``None``.
    objective : a callable objective replacing the loss's own (a click-log variant's), or ``None``.
    max_failures : failed trainings in a row that end the tuning: an :class:`~rankcli.errors.InputError` (exit 3)
        naming the last parameters and value.
    """
    import optuna

    quiet_optuna()
    space = train_space(base, space_spec)
    study = optuna.create_study(direction="maximize")
    study.enqueue_trial(space.defaults())
    best: tuple[TrialOutcome, dict] | None = None
    default_value, finished, draw, failed, streak = None, 0, 0, 0, 0
    while finished < budget:
        trial = ask(study, space, base.seed, draw, budget, finished)
        params = space.suggest(trial)
        outcome = train_trial(prepared, trial_config(base, params, where=f"tuning trial {draw} of {base.loss}"),
                              objective=objective)
        draw += 1
        if outcome.value is None or not math.isfinite(outcome.value):
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            failed, streak = failed + 1, streak + 1
            if streak >= max_failures:
                raise failures_error(base.loss, Failure(streak, trial.number, params, value_text(outcome.value)),
                                     base.select_by, max_failures, option=False)
            continue
        study.tell(trial, outcome.value)
        finished, streak = finished + 1, 0
        if trial.number == 0 and not space.clipped:
            default_value = outcome.value
        if best is None or outcome.value > best[0].value:
            best = (outcome, params)
    return Tuned(best[0], best[1], finished, default_value, failed)
