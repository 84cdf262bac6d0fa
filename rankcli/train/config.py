"""The training configuration: :class:`TrainConfig`, checked in one place when it is built, and the LightGBM
parameters it resolves to (:func:`resolve_params`)."""

from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rankcli.core import losses as core_losses
from rankcli.core import metrics
from rankcli.errors import UsageError
from rankcli.runtime.cpus import check_threads, default_threads
from rankcli.train.losses import LOSSES, check_grade_range, check_loss, options_by_loss
from rankcli.train.params import check_params, parse_params

DEFAULT_LEARNING_RATE = 0.05
DEFAULT_NUM_LEAVES = 31
DEFAULT_MIN_DATA_IN_LEAF = 20
#: The most leaves LightGBM grows in a tree (its config check: num_leaves <= 131072).
MAX_NUM_LEAVES = 131072
DEFAULT_TREES = 500
#: ``--early-stopping`` with a validation set (without one, every tree is trained).
DEFAULT_EARLY_STOPPING = 50

#: The paper's LightGBM settings (Bruch 2021, section 5): 500 trees at most, early stopping after 50 trees on
#: validation NDCG@5 (the TrainConfig defaults), and these parameters.
PRESETS: dict[str, dict[str, Any]] = {
    "paper-web30k": {"learning_rate": 0.02, "num_leaves": 400, "min_data_in_leaf": 50,
                     "params": {"max_bin": 255, "min_sum_hessian_in_leaf": 0.0}},
    "paper-yahoo": {"learning_rate": 0.02, "num_leaves": 200, "min_data_in_leaf": 100,
                    "params": {"max_bin": 255, "min_sum_hessian_in_leaf": 0.0}},
}
#: LambdaMART settings of the paper presets (sigma 1, no per-query normalisation).
PRESET_LAMBDARANK = {"sigmoid": 1.0, "lambdarank_norm": False}

#: LightGBM's seed is a 32-bit signed integer: a larger one would be silently wrapped.
MAX_SEED = 2**31 - 1


def check_seed(seed: int) -> int:
    """``seed`` if LightGBM can take it as it is (0 .. :data:`MAX_SEED`), else :class:`UsageError`.

    Parameters
    ----------
    seed : the ``--seed`` value.
    """
    if seed < 0:
        raise UsageError(f"--seed must be >= 0, got {seed}")
    if seed > MAX_SEED:
        raise UsageError(f"--seed must be at most {MAX_SEED} (LightGBM's seed is a 32-bit integer), got {seed}")
    return seed


def check_preset(name: str | None) -> str | None:
    """``name`` if it is ``None`` or a preset of :data:`PRESETS`, else :class:`UsageError` suggesting the closest.

    Parameters
    ----------
    name : the ``--preset`` value.
    """
    if name is None or name in PRESETS:
        return name
    close = difflib.get_close_matches(name, list(PRESETS), n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise UsageError(f"unknown preset {name!r}{hint} (choose from {', '.join(PRESETS)})")


def metric_function(select_by: str, convention: str) -> tuple[str, Callable[[np.ndarray, np.ndarray, np.ndarray],
                                                                             float]]:
    """The canonical metric name and ``f(labels, scores, offsets) -> mean`` from the metrics core.

    Parameters
    ----------
    select_by : the validation metric, e.g. ``ndcg@5`` (:func:`rankcli.core.metrics.parse_metric`).
    convention : a convention preset; ``trec`` (ties by document id) is a :class:`UsageError`.
    """
    spec = metrics.parse_metric(select_by)
    if spec.record.family == "info":  # runid: the run's tag
        raise UsageError(f"--select-by {select_by}: {spec.record.name} is not a metric; it cannot select a model")
    if spec.record.aggregate in ("sum", "count"):  # every validation document is ranked: the counts are constant
        raise UsageError(f"--select-by {select_by}: {spec.record.name} is a count of queries or documents, which does "
                         "not change with the model; it cannot select a model")
    conv = metrics.Convention.preset(convention)
    if conv.ties == "docid-desc":  # the trec preset orders ties by document id, which training data need not have
        raise UsageError(f"--convention {convention} is for evaluating TREC runs (it breaks ties by document id); "
                         "select a model by paper, lightgbm or sklearn")

    def f(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray) -> float:
        return float(metrics.evaluate([spec], labels, scores, offsets, conv).means[str(spec)])

    return str(spec), f


@dataclass
class TrainConfig:
    """Everything that determines a trained model (with the data and the seed), checked when it is built.

    Parameters
    ----------
    loss : a name of :data:`rankcli.train.losses.LOSSES`.
    gamma : XE-NDCG's gamma (``uniform``, ``mean`` or ``fixed:<g>``; :func:`rankcli.core.losses.parse_gamma`); read
        only with ``loss="xendcg"``.
    loss_options : the loss's own options that are set (``--loss-option``, ``--step``), by name; the others take
        their defaults (:attr:`resolved_loss_options`).
    trees : the largest number of trees trained (at least 1).
    early_stopping : trees without improvement of the validation metric before training stops (0: off; without a
        validation set every tree is trained).
    select_by, convention : the validation metric (``ndcg@5``) and its convention preset (``paper``, ``lightgbm`` or
        ``sklearn``; ``trec`` breaks ties by document id, which training data need not have).
    learning_rate, num_leaves, min_data_in_leaf : ``None`` takes the preset's value, else 0.05, 31 and 20.
    params : any other LightGBM parameter (checked by :func:`check_params`: a name LightGBM knows and no option here
        sets); it overrides the preset's and rankcli's other defaults.
    threads : LightGBM's threads (``None``: the CPUs this process may use,
        :func:`rankcli.runtime.cpus.default_threads`).
    seed : the seed of every random step (0 .. :data:`MAX_SEED`).
    label_grades : map the distinct label values to the grades ``0 .. n-1`` in increasing order.
    preset : a name of :data:`PRESETS` or ``None``.

    Every check is made in :meth:`validate`, which construction (and :func:`dataclasses.replace`) runs: an invalid
    configuration is a :class:`~rankcli.errors.UsageError` (exit 2) whose message names the command-line option.
    """

    loss: str = "xendcg"
    gamma: str = "uniform"
    loss_options: dict = field(default_factory=dict)
    trees: int = DEFAULT_TREES
    early_stopping: int = DEFAULT_EARLY_STOPPING
    select_by: str = "ndcg@5"
    convention: str = "paper"
    learning_rate: float | None = None
    num_leaves: int | None = None
    min_data_in_leaf: int | None = None
    params: dict = field(default_factory=dict)
    threads: int | None = None
    seed: int = 0
    label_grades: bool = False
    preset: str | None = None

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> TrainConfig:
        """Check every field (the one place rankcli checks training options); returns ``self``.

        Raises :class:`~rankcli.errors.UsageError` naming the option: an unknown loss, preset, metric or convention
        (with the closest name), a gamma, seed, tree count, early-stopping patience, learning rate, leaf count,
        minimum leaf size or thread count out of range, or a ``params`` key that LightGBM does not know or that an
        option sets (:func:`check_params`).
        """
        check_loss(self.loss)
        _ = self.resolved_loss_options  # checks them
        check_preset(self.preset)
        check_seed(self.seed)
        if self.loss == "xendcg":
            core_losses.parse_gamma(self.gamma)
        if self.trees < 1:
            raise UsageError(f"--trees must be at least 1, got {self.trees}")
        if self.early_stopping < 0:
            raise UsageError("--early-stopping must be 0 (off) or a positive number of trees, got "
                             f"{self.early_stopping}")
        check_params(self.params)
        check_threads(self.threads)
        if self.learning_rate is not None and not self.learning_rate > 0:
            raise UsageError(f"--learning-rate must be positive, got {self.learning_rate:g}")
        if self.learning_rate is not None and math.isinf(self.learning_rate):  # every leaf value infinite
            raise UsageError(f"--learning-rate must be finite, got {self.learning_rate:g}")
        if self.num_leaves is not None and self.num_leaves < 2:
            raise UsageError(f"--num-leaves must be at least 2, got {self.num_leaves}")
        if self.num_leaves is not None and self.num_leaves > MAX_NUM_LEAVES:
            raise UsageError(f"--num-leaves must be at most {MAX_NUM_LEAVES} (LightGBM's limit), got {self.num_leaves}")
        if self.min_data_in_leaf is not None and self.min_data_in_leaf < 0:
            raise UsageError(f"--min-data-in-leaf must be 0 or more, got {self.min_data_in_leaf}")
        metric_function(self.select_by, self.convention)
        return self

    @property
    def resolved_loss_options(self) -> dict:
        """Every option of the loss with its value (the ones set, checked, and the defaults)."""
        return LOSSES[check_loss(self.loss)].resolve_options(self.loss_options)

    @classmethod
    def from_options(cls, *, validating: bool, trees: int | None = None, early_stopping: int | None = None,
                     param: Iterable[str] = (), loss_option: Iterable[str] = (), step: str | None = None,
                     **fields: Any) -> TrainConfig:
        """The configuration that ``rankcli train``'s options describe.

        Parameters
        ----------
        validating : whether a validation set is given (``--valid``).
        trees : ``--trees``; ``None`` is 500.
        early_stopping : ``--early-stopping``; ``None`` is 50 with a validation set, else 0 (a positive value
            without a validation set is a :class:`~rankcli.errors.UsageError`: nothing to stop on).
        param : the ``--param key=value`` texts (:func:`parse_params`).
        loss_option, step : the ``--loss-option [LOSS:]NAME=VALUE`` texts and ``--step`` (ListNet's), for the loss
            trained (:func:`rankcli.train.losses.options_by_loss`).
        fields : the other fields of :class:`TrainConfig`, by name.
        """
        if loss_option or step is not None:
            loss = check_loss(fields.get("loss", cls.loss))
            fields["loss_options"] = options_by_loss(list(loss_option), [loss], step).get(loss, {})
        if early_stopping is None:
            early_stopping = DEFAULT_EARLY_STOPPING if validating else 0
        config = cls(trees=DEFAULT_TREES if trees is None else trees, early_stopping=early_stopping, **fields)
        if early_stopping and not validating:
            raise UsageError(f"--early-stopping {early_stopping} needs a validation set: pass --valid VALID.parquet "
                             "(or --early-stopping 0)")
        params = parse_params(param)
        return dataclasses.replace(config, params=params) if params else config


def resolve_params(config: TrainConfig, max_grade: int | None = None, rows: int | None = None) -> dict[str, Any]:
    """The LightGBM parameters for ``config`` (a library loss's objective as ``"none"``; the callable is added by
    :func:`rankcli.train.training.train_model`).

    Parameters
    ----------
    config : the training configuration.
    max_grade : the largest training grade of ``lambdamart`` (LightGBM's default ``label_gain`` stops at 30).
    rows : the training rows, which bound the default thread count (:func:`rankcli.runtime.cpus.default_threads`).
    """
    check_loss(config.loss)
    preset = PRESETS[check_preset(config.preset)] if config.preset else {}

    def pick(name: str, default: Any) -> Any:
        value = getattr(config, name)
        return value if value is not None else preset.get(name, default)

    params: dict[str, Any] = {
        "objective": LOSSES[config.loss].lightgbm or "none",
        "learning_rate": float(pick("learning_rate", DEFAULT_LEARNING_RATE)),
        "num_leaves": int(pick("num_leaves", DEFAULT_NUM_LEAVES)),
        "min_data_in_leaf": int(pick("min_data_in_leaf", DEFAULT_MIN_DATA_IN_LEAF)),
        "seed": int(config.seed),
        "deterministic": True,
        "force_row_wise": True,
        "verbosity": -1,
        "metric": "None",
        # not 0 (every core of the node): the CPUs we may use, and no more than the training rows can keep busy
        "num_threads": default_threads(config.threads, rows),
    }
    params.update(preset.get("params", {}))
    if config.preset and config.loss == "lambdamart":
        params.update(PRESET_LAMBDARANK)
    if config.loss == "lambdamart" and max_grade is not None and max_grade >= 31:
        check_grade_range("lambdamart", np.array([max_grade]), config.label_grades)
        # LightGBM's default label_gain has 31 entries (grades 0..30); extend it with the same 2^g - 1 gains.
        params["label_gain"] = [float(2.0**g - 1.0) for g in range(max_grade + 1)]
    given = check_params(config.params)
    if _lightgbm_true(given.get("force_col_wise")):  # LightGBM refuses both; the user's choice wins
        params["force_row_wise"] = False
    params.update(given)
    return params


def _lightgbm_true(value: Any) -> bool:
    """Whether LightGBM reads the parameter value ``value`` as true (``true`` or ``+`` in any case)."""
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "+"))
