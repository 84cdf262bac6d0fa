"""Tuning inside one experiment unit (``experiment --tune N``): a study in memory on the unit's own training and
validation data, with the same space, start-up trials and per-slot seeds as ``rankcli tune``, returning the best
trial's model so that the unit tests it without training it again.

The unit's test queries never reach this module: it is given the training data (with its validation set) only.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from rankcli.tune.space import train_space
from rankcli.tune.study import quiet_optuna, sampler_seed, startup_trials
from rankcli.tune.trial import TrialOutcome, train_trial, trial_config


class Tuned(NamedTuple):
    """The best trial of a unit's tuning: its outcome (with the model), its parameters, and the trials run."""

    best: TrialOutcome
    params: dict[str, Any]
    trials: int
    default_value: float | None


def tune_in_memory(prepared: Any, base: Any, budget: int, space_spec: dict | None = None,
                   objective: Any = None) -> Tuned:
    """Tune ``base``'s loss on ``prepared`` (a :class:`~rankcli.train.PreparedData` with its validation set) for
    ``budget`` trainings and return the best (the earliest among equal values).

    Parameters
    ----------
    prepared : the unit's training data and validation set, binned once for every trial.
    base : the unit's :class:`~rankcli.train.TrainConfig` (its seed seeds the sampler; trial 0 is it unchanged).
    budget : the trainings (trial 0 included).
    space_spec : a ``--space`` file (:func:`rankcli.tune.space.read_space_file`), or ``None``.
    objective : a callable objective replacing the loss's own (a click-log variant's), or ``None``.
    """
    import optuna

    quiet_optuna()
    space = train_space(base, space_spec)
    study = optuna.create_study(direction="maximize")
    study.enqueue_trial(space.defaults())
    best: tuple[TrialOutcome, dict] | None = None
    default_value = None
    for slot in range(budget):
        study.sampler = optuna.samplers.TPESampler(seed=sampler_seed(base.seed, base.loss, slot),
                                                   n_startup_trials=startup_trials(budget))
        trial = study.ask()
        params = space.suggest(trial)
        outcome = train_trial(prepared, trial_config(base, params, where=f"tuning trial {slot} of {base.loss}"),
                              objective=objective)
        if outcome.value is None:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            continue
        study.tell(trial, outcome.value)
        if slot == 0 and not space.clipped:
            default_value = outcome.value
        if best is None or outcome.value > best[0].value:
            best = (outcome, params)
    if best is None:
        from rankcli.errors import InputError

        raise InputError(f"tuning {base.loss}: no trial has a validation value")
    return Tuned(best[0], best[1], budget, default_value)
