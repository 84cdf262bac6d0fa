"""The LightGBM glue of training: a library loss as a callable objective, the training datasets, the model-selection
callback (rankcli's early-stopping rule) and LightGBM's position-bias model.

Reproducibility: ``lightgbm.train`` deep-copies its parameters, a callable objective included, so no state that we
need to observe may live only in the objective object. The XE-NDCG gamma of iteration ``t`` is drawn from
``numpy.random.default_rng([seed, t])``: it depends only on the seed and the iteration, never on how many copies of
the objective exist.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from rankcli.core import losses as core_losses
from rankcli.errors import UsageError
from rankcli.runtime.compat import parse_position_bias_log
from rankcli.train.losses import LOSSES, check_loss

#: The first LightGBM with a position-bias model for lambdarank (Dataset ``position``,
#: ``lambdarank_position_bias_regularization``).
POSITION_BIAS_LIGHTGBM = (4, 1)


class LibraryObjective:
    """A library loss (:data:`rankcli.train.losses.LOSSES`, ``step`` set) as a LightGBM callable objective
    ``(preds, train_data) -> (grad, hess)``.

    ``lightgbm.train`` deep-copies it; ``__deepcopy__`` returns the object itself so that ``iteration`` stays
    observable, and the gamma of iteration ``t`` comes from ``default_rng([seed, t])`` so that results do not depend
    on it anyway. The hessian it returns is the loss's, floored so that no document's Newton step exceeds
    :data:`rankcli.core.losses.common.MAX_NEWTON_STEP` times its query's size in the loss's score unit
    (:func:`rankcli.core.losses.guard_hessian`).

    Parameters
    ----------
    loss : the name of a library loss.
    labels : the training labels (float64), grouped by query.
    offsets : query boundaries, length ``n_queries + 1``.
    gamma : XE-NDCG's gamma strategy (:func:`rankcli.core.losses.parse_gamma`), for a loss that takes it.
    seed : the seed of the iterations' random steps (the gamma draws, ListMLE's order among equal labels).
    options : the loss's options that are set (the others take their defaults).
    """

    def __init__(self, loss: str, labels: np.ndarray, offsets: np.ndarray, gamma: str = "uniform", seed: int = 0,
                 options: dict | None = None):
        record = LOSSES[check_loss(loss)]
        if record.step is None:
            raise ValueError(f"--loss {loss} is LightGBM's own objective ({record.lightgbm}), not a library loss")
        self.loss = loss
        self.labels = np.asarray(labels, dtype=np.float64)
        self.offsets = offsets
        self.gamma = core_losses.parse_gamma(gamma)
        self.takes_gamma = record.takes_gamma
        self.seed = int(seed)
        self.iteration = 0
        self.options = record.resolve_options(options)
        self.unit = record.score_unit(self.options)
        self._step = record.step(self.labels, offsets, self.options)

    def __deepcopy__(self, memo: dict) -> LibraryObjective:
        return self

    def rng_for(self, iteration: int) -> np.random.Generator:
        """The generator of ``iteration``'s (0-based) random steps: ``default_rng([seed, iteration])``."""
        return np.random.default_rng([self.seed, iteration])

    def gamma_for(self, iteration: int, rng: np.random.Generator | None = None) -> np.ndarray | float:
        """The gamma of ``iteration`` (0-based): drawn first from its generator (:meth:`rng_for`, or ``rng``) for
        ``uniform``."""
        if not self.takes_gamma:
            return 0.5
        if self.gamma.random:
            return self.gamma.draw(self.labels.shape[0], rng if rng is not None else self.rng_for(iteration))
        return self.gamma.value

    def __call__(self, preds: np.ndarray, train_data: Any = None) -> tuple[np.ndarray, np.ndarray]:
        rng = self.rng_for(self.iteration)
        gamma = self.gamma_for(self.iteration, rng)
        self.iteration += 1
        grad, hess = self._step(preds, gamma, rng)
        # no document's Newton step -g/h is unbounded where its curvature underflows (core.losses.guard_hessian)
        return grad, core_losses.guard_hessian(grad, hess, self.offsets, self.unit)


class EarlyStopping:
    """rankcli's model-selection rule over a validation curve, fed one value per tree with :meth:`update`.

    The best tree is the first at which the metric is highest (NaN never counts). With ``patience`` p > 0, training
    stops p trees after the best one and the model keeps the trees up to it; with 0, every tree is trained and kept.
    ``rankcli train`` applies it while LightGBM trains, ``train --dask`` to the curve computed after training.
    """

    def __init__(self, patience: int):
        """``patience``: trees without improvement before stopping (``--early-stopping``; 0: off)."""
        self.patience = patience
        self.curve: list[float] = []
        self.best = -math.inf
        self.best_iter = -1  # 0-based; -1 while no value is a number

    def update(self, value: float) -> bool:
        """Record the metric ``value`` after the next tree; whether training stops here."""
        self.curve.append(value)
        if not math.isnan(value) and value > self.best:
            self.best, self.best_iter = value, len(self.curve) - 1
        return self.patience > 0 and self.best_iter >= 0 and len(self.curve) - 1 - self.best_iter >= self.patience

    def best_iteration(self, trees_trained: int) -> int:
        """The number of trees the model keeps, of ``trees_trained``."""
        return self.best_iter + 1 if self.patience > 0 and self.best_iter >= 0 else trees_trained


class Selection:
    """LightGBM callback: keeps the validation curve, reports progress, stops by :class:`EarlyStopping`.

    Parameters
    ----------
    patience : ``--early-stopping`` (0: off).
    on_iteration : ``on_iteration(trees, value, best_so_far)`` after every tree, or ``None``.
    """

    order = 40

    def __init__(self, patience: int, on_iteration: Callable | None):
        self.rule = EarlyStopping(patience)
        self.on_iteration = on_iteration
        self.best_results: list = []

    def __call__(self, env: Any) -> None:
        import lightgbm

        value = float(env.evaluation_result_list[0].metric_value) if env.evaluation_result_list else math.nan
        stop = self.rule.update(value)
        if self.rule.best_iter == len(self.rule.curve) - 1:
            self.best_results = list(env.evaluation_result_list)
        if self.on_iteration is not None:
            self.on_iteration(env.iteration + 1, value, self.rule.best if self.rule.best_iter >= 0 else None)
        if stop:
            raise lightgbm.callback.EarlyStopException(self.rule.best_iter, self.best_results)


def progress_callback(on_iteration: Callable[[int, float | None, float | None], None]) -> Callable[[Any], None]:
    """A LightGBM callback reporting ``on_iteration(trees, None, None)`` after every tree (no validation set)."""
    def progress(env: Any) -> None:
        on_iteration(env.iteration + 1, None, None)

    progress.order = 40  # type: ignore[attr-defined]
    return progress


def check_position_bias_support() -> None:
    """:class:`UsageError` unless the installed LightGBM learns position biases (>= 4.1: unbiased LambdaMART)."""
    import lightgbm

    # the leading number of the major and minor parts: "4.0rc1" is 4.0, "4.10.0" is 4.10
    parts = [int(m.group()) if (m := re.match(r"\d{1,6}", piece)) else 0
             for piece in (str(lightgbm.__version__).split(".") + ["0"])[:2]]
    if tuple(parts) < POSITION_BIAS_LIGHTGBM:
        raise UsageError(f"--propensity learn needs LightGBM 4.1 or later (its position-bias model for lambdarank), "
                         f"this is LightGBM {lightgbm.__version__}: pip install \"lightgbm>=4.1\", or estimate "
                         "propensities with rankcli propensity and train --loss ranknet --propensity FILE")


def learned_position_bias(log_lines: list[str], best_iteration: int) -> dict | None:
    """LightGBM's learned position biases after tree ``best_iteration`` (one table per tree in its debug log).

    Parameters
    ----------
    log_lines : LightGBM's log of a training at verbosity 2 (:func:`rankcli.runtime.compat.capture_lightgbm_log`).
    best_iteration : the number of trees the model keeps.
    """
    tables = parse_position_bias_log(log_lines)
    if not tables or best_iteration < 1:
        return None
    ids, values = tables[min(best_iteration, len(tables)) - 1]
    positions: list[Any] = []
    for i in ids:
        try:
            positions.append(int(i))
        except ValueError:
            positions.append(i)
    return {"positions": positions, "bias_factor": [float(v) for v in values],
            "after_tree": min(best_iteration, len(tables))}
