"""One tuning trial's training: the single place where ``rankcli tune`` and ``experiment --tune`` train a model.

Every trial trains with :func:`rankcli.train.train_model` on data that ``rankcli train``'s own loading produced
(:func:`rankcli.train.load_training_data`), so a trial with ``train``'s parameters is ``train``'s model and its
validation value is the one ``train`` reports. A faster path that builds LightGBM's binned dataset once per split and
reuses it across trials replaces the body of :func:`train_trial` and nothing else.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class TrialOutcome(NamedTuple):
    """What a trial reports: the validation value of the model kept, its trees and the training time."""

    value: float | None  # the validation metric (select_by) of the kept model; None without a value
    trees: int  # trees kept (the best iteration)
    trees_trained: int
    seconds: float
    result: Any  # the TrainResult (its booster, for experiment --tune)


def train_trial(data: Any, config: Any) -> TrialOutcome:
    """Train ``config`` (a :class:`~rankcli.train.TrainConfig`) on ``data`` (a
    :class:`~rankcli.train.TrainingData`, with its validation set) and report the validation value."""
    from rankcli.train import train_model

    result = train_model(data.train, data.valid, config, objective=data.objective, position=data.position)
    value = result.curve[result.best_iteration - 1] if result.curve and result.best_iteration > 0 else None
    return TrialOutcome(value, int(result.best_iteration), int(result.trees_trained), float(result.seconds), result)
