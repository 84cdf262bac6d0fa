"""One tuning trial's training: the single place where ``rankcli tune`` and ``experiment --tune`` train a model.

Every trial trains with :func:`rankcli.train.train_prepared` on data that ``rankcli train``'s own loading produced
(:func:`rankcli.train.load_training_data`), so a trial with ``train``'s parameters is ``train``'s model and its
validation value is the one ``train`` reports. The split is prepared once (:func:`rankcli.train.prepare`): its
LightGBM Datasets are built for the first trial and reused by every later trial with the same binning.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple


class TrialOutcome(NamedTuple):
    """What a trial reports: the validation value of the model kept, its trees and the training time."""

    value: float | None  # the validation metric (select_by) of the kept model; None without a value
    trees: int  # trees kept (the best iteration)
    trees_trained: int
    seconds: float
    result: Any  # the TrainResult (its booster, for experiment --tune)


def train_trial(prepared: Any, config: Any, objective: Any = None) -> TrialOutcome:
    """Train ``config`` (a :class:`~rankcli.train.TrainConfig`) on ``prepared`` (a
    :class:`~rankcli.train.PreparedData`, with its validation set) and report the validation value.

    ``objective`` : a callable objective replacing the loss's own (:attr:`rankcli.train.TrainingData.objective`)."""
    from rankcli.train import train_prepared

    result = train_prepared(prepared, config, objective=objective)
    value = result.curve[result.best_iteration - 1] if result.curve and result.best_iteration > 0 else None
    return TrialOutcome(value, int(result.best_iteration), int(result.trees_trained), float(result.seconds), result)


def trial_config(base: Any, params: dict[str, Any], where: str) -> Any:
    """``base`` (a :class:`~rankcli.train.TrainConfig`) with one trial's ``params``: they replace ``train``'s values,
    the loss's own options included (an option set in ``base`` is trial 0's value, not a fixed one: the trial draws
    it; one that means nothing with the trial's values, LambdaLoss's ``mu`` beside ``ndcg-loss2``, is dropped), and
    stay below ``--param``. ``where`` names the trial in messages."""
    from rankcli.train.losses import LOSSES
    from rankcli.train.params_file import apply_params

    options = LOSSES[base.loss].options
    values = {**base.resolved_loss_options, **params}
    dropped = set(params) | {o.name for o in options
                             if o.only_with is not None and values.get(o.only_with[0]) != o.only_with[1]}
    base = dataclasses.replace(base, loss_options={k: v for k, v in base.loss_options.items() if k not in dropped})
    return apply_params(base, params, where=where)
