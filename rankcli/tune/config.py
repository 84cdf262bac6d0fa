"""What ``rankcli tune`` runs: the losses, the budget, the training options every trial shares and the space."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from rankcli.errors import UsageError
from rankcli.train import check_loss
from rankcli.train.lightgbm_params import check_effective_across
from rankcli.tune.draws import DEFAULT_MAX_FAILURES, SAMPLER
from rankcli.tune.space import Space, check_space_effective, train_space


@dataclass
class TuneConfig:
    """What ``rankcli tune`` runs.

    Parameters
    ----------
    losses : the losses tuned, each on its own study with the same budget.
    budget : the trainings each loss gets (finished trials, trial 0 included).
    train : the training options every trial shares (a :class:`~rankcli.train.TrainConfig`; its ``loss`` is each
        loss in turn; ``params`` holds ``--param``, which fixes those parameters for every trial).
    space : a ``--space`` file read by :func:`rankcli.tune.space.read_space_file`, or ``None``.
    max_failures : trials without a finite validation value in a row that end a loss's study (exit 3).
    """

    losses: list[str]
    budget: int
    train: Any
    space: dict | None = None
    max_failures: int = DEFAULT_MAX_FAILURES

    def validate(self) -> None:
        """:class:`UsageError` for an option out of range (the message names the option)."""
        if not self.losses:
            raise UsageError("--loss: give at least one loss")
        if len(set(self.losses)) != len(self.losses):
            raise UsageError(f"--loss: a loss is given twice, got {', '.join(self.losses)}")
        for loss in self.losses:
            check_loss(loss)
        if self.budget < 1:
            raise UsageError(f"--budget must be at least 1 (trial 0 is train's own parameters), got {self.budget}")
        if self.max_failures < 1:
            raise UsageError(f"--max-failures must be at least 1, got {self.max_failures}")
        self.train.validate()
        self.check_effective()

    def check_effective(self) -> None:
        """:class:`UsageError` for a ``--param`` that none of the losses reads, or a parameter (given, fixed or
        searched) that LightGBM would ignore in a loss's trials (:func:`rankcli.tune.space.check_space_effective`)."""
        check_effective_across(self.train.params, self.losses)
        for loss in self.losses:
            check_space_effective(self.space_of(loss), self.train.params, loss)

    def loss_config(self, loss: str):
        """The base training configuration of ``loss`` (every trial's parameters are applied to it)."""
        return dataclasses.replace(self.train, loss=loss, params=dict(self.train.params))

    def space_of(self, loss: str) -> Space:
        """The search space of ``loss`` under these options (each default is what ``train`` uses)."""
        return train_space(self.loss_config(loss), self.space)

    def identity(self, loss: str, data: dict) -> dict:
        """What decides the trials of ``loss``: the data, every training option, the space and how the sampler
        draws (not the budget, nor ``max_failures``)."""
        t = self.train
        return {"loss": loss, "data": data, "space": self.space_of(loss).identity(), "sampler": SAMPLER,
                "train": {"select_by": t.select_by, "convention": t.convention, "trees": t.trees,
                          "early_stopping": t.early_stopping, "preset": t.preset, "params": t.params,
                          "threads": t.threads, "seed": t.seed, "label_grades": t.label_grades}}
