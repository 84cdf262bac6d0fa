"""The LightGBM glue: a loss name -> an objective, early stopping on a rankcli metric, the model directory.

Losses
------
``lambdamart`` (LightGBM ``lambdarank``), ``xendcg-native`` (LightGBM ``rank_xendcg``) and ``pointwise`` (LightGBM
``regression``) are LightGBM's own objectives. ``xendcg``, ``listnet`` and ``ranknet`` are the library's
(:mod:`rankcli.core.losses`) passed to LightGBM as a callable objective.

Reproducibility
---------------
``lightgbm.train`` deep-copies its parameters, a callable objective included, so no state that we need to observe
may live only in the objective object. The XE-NDCG gamma of iteration ``t`` is drawn from
``numpy.random.default_rng([seed, t])``: it depends only on the seed and the iteration, never on how many copies of
the objective exist. LightGBM runs with ``deterministic=True``, ``force_row_wise=True`` and ``seed``; the same data,
configuration and seed give byte-identical ``model.txt`` (for a given thread count).

Model selection
---------------
With a validation set, the metric ``select_by`` (default ``ndcg@5``, the paper convention: queries without a relevant
document skipped) is computed after every tree with :mod:`rankcli.core.metrics` on LightGBM's incrementally
maintained validation scores (a ``feval``; no re-prediction), and the whole curve is kept. Training stops after
``early_stopping`` trees without improvement and the model keeps the trees up to the best iteration. With
``early_stopping=0`` every tree is trained and kept; without a validation set, too.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import math
import stat
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rankcli import __version__
from rankcli.core import losses
from rankcli.core.groups import sizes
from rankcli.core.labels import require_integer_grades, to_grades
from rankcli.cpus import check_threads, default_threads
from rankcli.dataset import Dataset
from rankcli.errors import InputError, SchemaError, UsageError
from rankcli.formats.atomic import atomic_directory
from rankcli.startup import import_lightgbm_lean

#: Loss name -> LightGBM objective (``None``: the library's callable objective).
LOSSES: dict[str, str | None] = {
    "lambdamart": "lambdarank",
    "xendcg": None,
    "xendcg-native": "rank_xendcg",
    "listnet": None,
    "ranknet": None,
    "pointwise": "regression",
}
#: Losses whose LightGBM implementation needs integer grades.
INTEGER_LABEL_LOSSES = ("lambdamart", "xendcg-native")
REAL_LABEL_HINT = "--loss xendcg or --loss listnet, which take real-valued labels"
#: The largest grade each integer-label loss can take, and why. LightGBM's rank_xendcg computes 2^label in a 32-bit
#: integer (Common::Pow(2, int)), exact up to 2^30; lambdamart's gain table 2^g - 1 must stay finite in the sums of
#: DCG over a query (2^1000 times any query size below 2^23 documents is within float64's range).
MAX_GRADE: dict[str, tuple[int, str]] = {
    "xendcg-native": (30, "LightGBM's rank_xendcg computes 2^label in a 32-bit integer"),
    "lambdamart": (1000, "its gains 2^grade - 1 overflow the DCG sums beyond that"),
}

DEFAULT_LEARNING_RATE = 0.05
DEFAULT_NUM_LEAVES = 31
DEFAULT_MIN_DATA_IN_LEAF = 20

#: The paper's LightGBM settings (Bruch 2021, section 5): 500 trees at most, early stopping after 50 rounds on
#: validation NDCG@5 (the TrainConfig defaults), and these parameters.
PRESETS: dict[str, dict[str, Any]] = {
    "paper-web30k": {"learning_rate": 0.02, "num_leaves": 400, "min_data_in_leaf": 50,
                     "params": {"max_bin": 255, "min_sum_hessian_in_leaf": 0.0}},
    "paper-yahoo": {"learning_rate": 0.02, "num_leaves": 200, "min_data_in_leaf": 100,
                    "params": {"max_bin": 255, "min_sum_hessian_in_leaf": 0.0}},
}
#: LambdaMART settings of the paper presets (sigma 1, no per-query normalisation).
PRESET_LAMBDARANK = {"sigmoid": 1.0, "lambdarank_norm": False}

MODEL_FILE = "model.txt"
INFO_FILE = "rankcli.json"
#: The largest rankcli.json read (a validation curve of a million trees is about 20 MB).
INFO_MAX_BYTES = 64 << 20

#: LightGBM parameters that a rankcli option sets (main name -> the option): ``--param`` may set neither them nor any
#: of their aliases. Every LightGBM ``*_seed`` is derived from ``seed``, so ``--seed`` owns them too.
OPTION_PARAMS: dict[str, str] = {
    "objective": "--loss",
    "metric": "--select-by",
    "num_iterations": "--trees",
    "learning_rate": "--learning-rate",
    "num_leaves": "--num-leaves",
    "min_data_in_leaf": "--min-data-in-leaf",
    "early_stopping_round": "--early-stopping",
    "early_stopping_min_delta": "--early-stopping",
    "num_threads": "--threads",
    "seed": "--seed",
}


@dataclass
class TrainConfig:
    """Everything that determines a trained model (with the data and the seed), checked when it is built.

    Parameters
    ----------
    loss : a name of :data:`LOSSES` (see :mod:`rankcli.core.losses` for the library's).
    gamma : XE-NDCG's gamma (``uniform``, ``mean`` or ``fixed:<g>``; :func:`rankcli.core.losses.parse_gamma`); read
        only with ``loss="xendcg"``.
    trees : the largest number of trees trained (at least 1).
    early_stopping : trees without improvement of the validation metric before training stops (0: off; without a
        validation set every tree is trained).
    select_by, convention : the validation metric (``ndcg@5``) and its convention preset (``paper``, ``lightgbm`` or
        ``sklearn``; ``trec`` breaks ties by document id, which training data need not have).
    learning_rate, num_leaves, min_data_in_leaf : ``None`` takes the preset's value, else 0.05, 31 and 20.
    params : any other LightGBM parameter (checked by :func:`check_params`: a name LightGBM knows and no option here
        sets); it overrides the preset's and rankcli's other defaults.
    threads : LightGBM's threads (``None``: the CPUs this process may use, :func:`rankcli.cpus.default_threads`).
    seed : the seed of every random step (0 .. :data:`MAX_SEED`).
    label_grades : map the distinct label values to the grades ``0 .. n-1`` in increasing order.
    preset : a name of :data:`PRESETS` or ``None``.

    Every check is made in :meth:`validate`, which construction (and :func:`dataclasses.replace`) runs: an invalid
    configuration is a :class:`~rankcli.errors.UsageError` (exit 2) whose message names the command-line option.
    """

    loss: str = "xendcg"
    gamma: str = "uniform"
    trees: int = 500
    early_stopping: int = 50
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
        check_preset(self.preset)
        check_seed(self.seed)
        if self.loss == "xendcg":
            losses.parse_gamma(self.gamma)
        if self.trees < 1:
            raise UsageError(f"--trees must be at least 1, got {self.trees}")
        if self.early_stopping < 0:
            raise UsageError(f"--early-stopping must be 0 (off) or a positive number of trees, got {self.early_stopping}")
        check_params(self.params)
        check_threads(self.threads)
        if self.learning_rate is not None and not self.learning_rate > 0:
            raise UsageError(f"--learning-rate must be positive, got {self.learning_rate:g}")
        if self.num_leaves is not None and self.num_leaves < 2:
            raise UsageError(f"--num-leaves must be at least 2, got {self.num_leaves}")
        if self.min_data_in_leaf is not None and self.min_data_in_leaf < 0:
            raise UsageError(f"--min-data-in-leaf must be 0 or more, got {self.min_data_in_leaf}")
        metric_function(self.select_by, self.convention)
        return self

    @classmethod
    def from_options(cls, *, validating: bool, trees: int | None = None, early_stopping: int | None = None,
                     param: Iterable[str] = (), **fields: Any) -> TrainConfig:
        """The configuration that ``rankcli train``'s options describe.

        Parameters
        ----------
        validating : whether a validation set is given (``--valid``).
        trees : ``--trees``; ``None`` is 500.
        early_stopping : ``--early-stopping``; ``None`` is 50 with a validation set, else 0 (a positive value
            without a validation set is a :class:`~rankcli.errors.UsageError`: nothing to stop on).
        param : the ``--param key=value`` texts (:func:`parse_params`).
        fields : the other fields of :class:`TrainConfig`, by name.
        """
        if early_stopping is None:
            early_stopping = 50 if validating else 0
        config = cls(trees=500 if trees is None else trees, early_stopping=early_stopping, **fields)
        if early_stopping and not validating:
            raise UsageError(f"--early-stopping {early_stopping} needs a validation set: pass --valid VALID.parquet "
                             "(or --early-stopping 0)")
        params = parse_params(param)
        return dataclasses.replace(config, params=params) if params else config

    def as_dict(self) -> dict:
        """The fields as a dictionary (a copy)."""
        return asdict(self)


@dataclass
class TrainResult:
    booster: Any  # lightgbm.Booster, holding the trees up to best_iteration
    best_iteration: int  # number of trees the model keeps
    curve: list[float]  # validation metric (select_by) after each trained tree; [] without a validation set
    seconds: float
    params: dict  # every LightGBM parameter used (a callable objective shown as "rankcli:<loss>")
    trees_trained: int = 0
    metric: str | None = None  # canonical name of the validation metric
    label_values: list[float] | None = None  # with label_grades: the label value of each grade
    # with position (--propensity learn): LightGBM's learned additive score bias of each position at best_iteration
    position_bias: dict | None = None


# -------------------------------------------------------------------------------------------------- validation
def check_loss(name: str) -> str:
    """The loss name, or :class:`UsageError` suggesting the closest known one."""
    if name in LOSSES:
        return name
    folded = str(name).strip().lower()   # 'XENDCG' or ' xendcg' had no suggestion
    close = [folded] if folded in LOSSES else difflib.get_close_matches(folded, list(LOSSES), n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise UsageError(f"unknown loss {name!r}{hint} (choose from {', '.join(LOSSES)})")


def check_preset(name: str | None) -> str | None:
    if name is None or name in PRESETS:
        return name
    close = difflib.get_close_matches(name, list(PRESETS), n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise UsageError(f"unknown preset {name!r}{hint} (choose from {', '.join(PRESETS)})")


#: LightGBM parameters that no option sets but that ``--param`` may not set either (main name -> why). LightGBM's
#: command-line program reads and writes files with the first group; its Python API, which rankcli drives, ignores
#: them (``data`` and ``categorical_feature`` with a Python warning), so accepting them would be an option that lies.
_CLI_PROGRAM_ONLY = ("task", "config", "data", "valid", "input_model", "output_model", "output_result", "snapshot_freq",
                     "save_binary", "convert_model", "convert_model_language", "header", "label_column",
                     "weight_column", "group_column", "ignore_column", "categorical_feature", "parser_config_file",
                     "two_round", "precise_float_parser", "saved_feature_importance_type", "predict_raw_score",
                     "predict_leaf_index", "predict_contrib", "predict_disable_shape_check", "start_iteration_predict",
                     "num_iteration_predict", "pred_early_stop", "pred_early_stop_freq", "pred_early_stop_margin")
_NETWORK = ("num_machines", "machines", "machine_list_filename", "local_listen_port", "time_out", "pre_partition")
MANAGED_PARAMS: dict[str, str] = {
    "num_class": "a ranker gives each document one score (num_class 1; more classes broke rankcli's losses)",
    "verbosity": "rankcli keeps LightGBM quiet (verbosity -1): LightGBM writes its log to standard output, which "
                 "carries rankcli's results and --json",
    **{k: "it is a setting of LightGBM's command-line program, which rankcli does not run (rankcli reads and "
          "writes every file itself, and LightGBM's Python API ignores it)" for k in _CLI_PROGRAM_ONLY},
    **{k: "rankcli trains on one machine here; --dask runs LightGBM's distributed training and sets up its network"
       for k in _NETWORK},
}


def _check_param_value(key: str, value: Any) -> None:
    """A value LightGBM's ``key=value key=value`` parameter string can carry: not empty, no whitespace, no ``=``."""
    items = value if isinstance(value, (list, tuple)) else [value]
    for item in items:
        if isinstance(item, str) and (not item or "=" in item or any(c.isspace() for c in item)):
            raise UsageError(f"--param {key}: LightGBM cannot take the value {str(value)!r} (its parameters travel as "
                             "'key=value' separated by spaces, so a value may be neither empty nor hold spaces or "
                             "'='); give a number, true/false, a word or a comma-separated list")
        numbers = []
        for part in (item.split(",") if isinstance(item, str) else [item]):   # a list such as label_gain=0,1,3
            try:
                numbers.append(float(part) if not isinstance(part, bool) else 0.0)
            except (TypeError, ValueError):
                pass
        if not all(math.isfinite(x) for x in numbers):
            # lambda_l2=inf trained a constant model; max_delta_step=nan wrote a model.txt that LightGBM cannot load
            # again (a traceback in predict) and a rankcli.json holding NaN, which is not JSON
            raise UsageError(f"--param {key}: the value must be a finite number, got {str(value)!r}")


def _option_of(main: str, options: dict[str, str]) -> str | None:
    if main in options:
        return options[main]
    return options.get("seed") if main.endswith("_seed") else None


def check_params(items: Any, options: dict[str, str] | None = None) -> dict[str, Any]:
    """``--param`` keys checked against LightGBM's own parameter names and aliases; returns them under main names.

    ``items`` is a mapping or ``(key, value)`` pairs. A key LightGBM does not know is a :class:`UsageError` naming the
    closest known parameter; so is a key (or an alias of one) that a rankcli option sets (:data:`OPTION_PARAMS`;
    ``options`` overrides the option names, e.g. ``{"objective": "--losses"}`` for ``experiment``), and two keys that
    are one parameter. Aliases are replaced by the main name, so that a value given under an alias is the one
    LightGBM uses (LightGBM prefers the main name when both are present, and rankcli or a preset may set it).
    """
    from rankcli.compat import lightgbm_parameter_aliases

    pairs = list(items.items()) if isinstance(items, dict) else list(items)
    if not pairs:
        return {}
    table = lightgbm_parameter_aliases()
    main_of = {alias: main for main, aliases in table.items() for alias in aliases}
    opts = {**OPTION_PARAMS, **(options or {})}
    out: dict[str, Any] = {}
    given_as: dict[str, str] = {}
    for key, value in pairs:
        key = str(key)
        main = main_of.get(key)
        if main is None:
            # LightGBM's names are lower case: NUM_LEAVES means num_leaves, whatever difflib's ratio says
            close = [key.lower()] if key.lower() in main_of else \
                difflib.get_close_matches(key, list(main_of), n=1, cutoff=0.6)
            hint = ""
            if close:
                suggestion = main_of[close[0]]
                hint = f"; did you mean {suggestion!r}?"
                option = _option_of(suggestion, opts)
                if option:
                    hint += f" (rankcli sets it: use {option})"
            raise UsageError(f"--param {key}: LightGBM has no parameter {key!r}{hint} "
                             "(LightGBM's parameters: https://lightgbm.readthedocs.io/en/stable/Parameters.html)")
        option = _option_of(main, opts)
        if option:
            what = key if key == main else f"{key} (LightGBM's alias of {main})"
            why = "rankcli derives every LightGBM seed from --seed" if option == opts.get("seed") and main != "seed" \
                else f"it is set by {option}"
            raise UsageError(f"--param {key}: {what} cannot be set with --param, {why}; use {option}")
        if main in MANAGED_PARAMS:
            what = key if key == main else f"{key} (LightGBM's alias of {main})"
            raise UsageError(f"--param {key}: {what} cannot be set with --param: {MANAGED_PARAMS[main]}")
        _check_param_value(key, value)
        if main in out:
            raise UsageError(f"--param {key}: sets {main} again (already given as --param {given_as[main]}); "
                             "give each parameter once")
        out[main] = value
        given_as[main] = key
    return out


def parse_param(text: str) -> tuple[str, Any]:
    """One ``--param`` text ``key=value`` -> ``(key, value)``, the value an int, float, bool or string.

    Parameters
    ----------
    text : ``key=value``; a text without ``=`` or without a key is a :class:`~rankcli.errors.UsageError`.
    """
    key, sep, value = text.partition("=")
    key, value = key.strip(), value.strip()
    if not sep or not key:
        raise UsageError(f"--param expects key=value, got {text!r}")
    low = value.lower()
    if low in ("true", "false"):
        return key, low == "true"
    for cast in (int, float):
        try:
            return key, cast(value)
        except ValueError:
            pass
    return key, value


def parse_params(items: Iterable[str], options: dict[str, str] | None = None) -> dict[str, Any]:
    """Every ``--param key=value`` parsed (:func:`parse_param`) and checked (:func:`check_params`), under LightGBM's
    main names: the one parser of ``--param`` for every command.

    Parameters
    ----------
    items : the ``key=value`` texts.
    options : overrides the option named in messages for a parameter that an option sets (see :func:`check_params`).
    """
    pairs = [parse_param(p) for p in items]
    if not pairs:
        return {}
    import_lightgbm_lean()  # the parameter table comes from LightGBM's library
    return check_params(pairs, options)


def feature_difference(expected: list[str], got: list[str]) -> str | None:
    """A human description of how two feature column lists differ, or ``None`` when they are equal."""
    if list(expected) == list(got):
        return None
    exp_set, got_set = set(expected), set(got)
    missing = [f for f in expected if f not in got_set]
    extra = [f for f in got if f not in exp_set]
    parts = []

    def show(names: list[str]) -> str:
        return ", ".join(names[:8]) + (f", ... ({len(names)} in all)" if len(names) > 8 else "")

    if missing:
        parts.append(f"missing {show(missing)}")
    if extra:
        parts.append(f"unexpected {show(extra)}")
    if not parts:
        parts.append("same columns in a different order")
    return f"{'; '.join(parts)} (expected {len(expected)} features, got {len(got)})"


def _check_labels(ds: Dataset, what: str) -> None:
    labels = np.asarray(ds.labels, dtype=np.float64)
    bad = ~np.isfinite(labels)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InputError(f"{what}: label of row {row} is not a finite number, got {labels[row]}")


def _training_labels(train: Dataset, config: TrainConfig) -> tuple[np.ndarray, list[float] | None]:
    _check_labels(train, "training data")
    labels = np.asarray(train.labels, dtype=np.float64)
    values = None
    if config.label_grades:
        grades, vals = to_grades(labels)
        labels, values = grades.astype(np.float64), [float(v) for v in vals]
    if config.loss in INTEGER_LABEL_LOSSES:
        consumer = f"--loss {config.loss} (LightGBM {LOSSES[config.loss]})"
        # the range first: a label of 1e300 is an integer value that no int64 holds (the cast warned and wrapped)
        check_grade_range(config.loss, labels, config.label_grades)
        labels = require_integer_grades(labels, consumer, REAL_LABEL_HINT).astype(np.float64)
    elif LOSSES[config.loss] is not None and labels.shape[0] and np.abs(labels).max() > _FLOAT32_MAX:
        # LightGBM keeps labels as float32: a larger one became inf (with a numpy warning) and trained on it
        top = float(labels[np.argmax(np.abs(labels))])
        raise InputError(f"--loss {config.loss} (LightGBM {LOSSES[config.loss]}) keeps labels as 32-bit floats, "
                         f"which end at {_FLOAT32_MAX:.4g}, got a label of {top:g}; rescale the labels, pass "
                         "--label-grades to map the distinct label values to grades 0..n-1, or use --loss xendcg, "
                         "which takes any label >= 0")
    elif config.loss == "xendcg" and (labels < 0).any():
        raise InputError(f"--loss xendcg needs non-negative labels (2^label - gamma), got {labels.min():g}; "
                         "pass --label-grades to map the distinct label values to grades 0..n-1")
    return labels, values


_FLOAT32_MAX = float(np.finfo(np.float32).max)


def check_grade_range(loss: str, grades: np.ndarray, label_grades: bool = False) -> None:
    """:class:`InputError` when an integer-label loss cannot take the largest of ``grades`` (:data:`MAX_GRADE`)."""
    if loss not in MAX_GRADE or np.asarray(grades).shape[0] == 0:
        return
    limit, why = MAX_GRADE[loss]
    top = float(np.max(grades))
    if top <= limit:
        return
    fix = (f"the data have {int(top) + 1} distinct label values" if label_grades else
           "pass --label-grades to map the distinct label values to grades 0..n-1")
    raise InputError(f"--loss {loss} takes grades up to {limit} ({why}), got a label of {top:g}; {fix}, or use "
                     "--loss xendcg, which takes any label >= 0")


# ---------------------------------------------------------------------------------------------------- params
def resolve_params(config: TrainConfig, max_grade: int | None = None) -> dict[str, Any]:
    """The LightGBM parameters for ``config`` (objective as a name; the callable is added by :func:`train_model`)."""
    check_loss(config.loss)
    preset = PRESETS[check_preset(config.preset)] if config.preset else {}

    def pick(name: str, default: Any) -> Any:
        value = getattr(config, name)
        return value if value is not None else preset.get(name, default)

    objective = LOSSES[config.loss]
    params: dict[str, Any] = {
        "objective": objective if objective is not None else "none",
        "learning_rate": float(pick("learning_rate", DEFAULT_LEARNING_RATE)),
        "num_leaves": int(pick("num_leaves", DEFAULT_NUM_LEAVES)),
        "min_data_in_leaf": int(pick("min_data_in_leaf", DEFAULT_MIN_DATA_IN_LEAF)),
        "seed": int(config.seed),
        "deterministic": True,
        "force_row_wise": True,
        "verbosity": -1,
        "metric": "None",
        "num_threads": default_threads(config.threads),  # not 0 (every core of the node): the CPUs we may use
    }
    params.update(preset.get("params", {}))
    if config.preset and config.loss == "lambdamart":
        params.update(PRESET_LAMBDARANK)
    if config.loss == "lambdamart" and max_grade is not None and max_grade >= 31:
        check_grade_range("lambdamart", np.array([max_grade]), config.label_grades)
        # LightGBM's default label_gain has 31 entries (grades 0..30); extend it with the same 2^g - 1 gains.
        params["label_gain"] = [float(2.0**g - 1.0) for g in range(max_grade + 1)]
    params.update(check_params(config.params))
    return params


# ---------------------------------------------------------------------------------------------------- objective
class LibraryObjective:
    """A library loss as a LightGBM callable objective ``(preds, train_data) -> (grad, hess)``.

    ``lightgbm.train`` deep-copies it; ``__deepcopy__`` returns the object itself so that ``iteration`` stays
    observable, and the gamma of iteration ``t`` comes from ``default_rng([seed, t])`` so that results do not depend
    on it anyway.
    """

    def __init__(self, loss: str, labels: np.ndarray, offsets: np.ndarray, gamma: str = "uniform", seed: int = 0):
        self.loss = loss
        self.labels = np.asarray(labels, dtype=np.float64)
        self.offsets = offsets
        self.gamma = losses.parse_gamma(gamma)
        self.seed = int(seed)
        self.iteration = 0
        # Constant over the iterations: computed once.
        self._label_terms = losses.xendcg_label_terms(self.labels, offsets) if loss == "xendcg" else None
        self._phi = losses.listnet_target(self.labels, offsets) if loss == "listnet" else None

    def __deepcopy__(self, memo: dict) -> LibraryObjective:
        return self

    def gamma_for(self, iteration: int) -> np.ndarray | float:
        if self.loss != "xendcg":
            return 0.5
        if self.gamma.random:
            return self.gamma.draw(self.labels.shape[0], np.random.default_rng([self.seed, iteration]))
        return self.gamma.value

    def __call__(self, preds: np.ndarray, train_data: Any = None) -> tuple[np.ndarray, np.ndarray]:
        gamma = self.gamma_for(self.iteration)
        self.iteration += 1
        if self.loss == "xendcg":
            return losses.xendcg_grad_hess(preds, self.labels, self.offsets, gamma,
                                           label_terms=self._label_terms)
        if self.loss == "listnet":
            return losses.listnet_grad_hess(preds, self.labels, self.offsets, label_softmax=self._phi)
        return losses.loss_grad_hess(self.loss, np.asarray(preds, dtype=np.float64), self.labels, self.offsets, gamma)


# ---------------------------------------------------------------------------------------------- validation metric
def metric_function(select_by: str, convention: str) -> tuple[str, Callable[[np.ndarray, np.ndarray, np.ndarray], float]]:
    """The canonical metric name and ``f(labels, scores, offsets) -> mean`` from the metrics core."""
    from rankcli.core import metrics

    spec = metrics.parse_metric(select_by)
    conv = metrics.Convention.preset(convention)
    if conv.ties == "docid-desc":  # the trec preset orders ties by document id, which training data need not have
        raise UsageError(f"--convention {convention} is for evaluating TREC runs (it breaks ties by document id); "
                         "select a model by paper, lightgbm or sklearn")

    def f(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray) -> float:
        return float(metrics.evaluate([spec], labels, scores, offsets, conv).means[str(spec)])

    return str(spec), f


def _check_validation_gain(valid: Dataset, config: TrainConfig, name: str) -> None:
    """Refuse validation labels whose exponential gain overflows: NDCG/DCG would be NaN or 0, not a number to select by."""
    from rankcli.core import metrics

    limit = metrics.EXPONENTIAL_GAIN_LABEL_LIMIT  # the metrics core refuses it too, but only after the first tree
    spec = metrics.parse_metric(config.select_by)
    if spec.name not in ("ndcg", "dcg") or metrics.Convention.preset(config.convention).gain != "exponential":
        return
    top = float(np.max(valid.labels)) if valid.n_rows else 0.0
    if top > limit:
        raise InputError(f"{name}: a label of {top:g}: --select-by {spec} under the {config.convention} convention uses "
                         f"the gain 2^label - 1, which overflows beyond label {limit}; select by "
                         "--convention sklearn (linear gain), or validate on graded labels")


class _Selection:
    """LightGBM callback: keeps the validation curve, reports progress, stops after ``patience`` flat rounds."""

    order = 40

    def __init__(self, patience: int, on_iteration: Callable | None):
        self.patience = patience
        self.on_iteration = on_iteration
        self.curve: list[float] = []
        self.best = -math.inf
        self.best_iter = -1  # 0-based
        self.best_results: list = []

    def __call__(self, env: Any) -> None:
        import lightgbm

        value = float(env.evaluation_result_list[0].metric_value) if env.evaluation_result_list else math.nan
        self.curve.append(value)
        if not math.isnan(value) and value > self.best:
            self.best, self.best_iter, self.best_results = value, env.iteration, list(env.evaluation_result_list)
        if self.on_iteration is not None:
            self.on_iteration(env.iteration + 1, value, self.best if self.best_iter >= 0 else None)
        if self.patience > 0 and self.best_iter >= 0 and env.iteration - self.best_iter >= self.patience:
            raise lightgbm.callback.EarlyStopException(self.best_iter, self.best_results)


def _lgb_dataset(ds: Dataset, labels: np.ndarray, params: dict, reference: Any = None,
                 position: np.ndarray | None = None) -> Any:
    import lightgbm

    if ds.features is None:
        raise SchemaError("the dataset was read without its feature columns")
    extra = {} if position is None else {"position": np.asarray(position, dtype=np.int32)}
    return lightgbm.Dataset(ds.features, label=labels, group=sizes(ds.offsets), feature_name=list(ds.feature_names),
                            params={k: v for k, v in params.items() if k in ("max_bin", "verbosity", "seed")},
                            reference=reference, free_raw_data=True, **extra)


#: The first LightGBM with a position-bias model for lambdarank (Dataset ``position``,
#: ``lambdarank_position_bias_regularization``).
POSITION_BIAS_LIGHTGBM = (4, 1)


def check_position_bias_support() -> None:
    """:class:`UsageError` unless the installed LightGBM learns position biases (>= 4.1: unbiased LambdaMART)."""
    import re

    import lightgbm

    # the leading number of the major and minor parts: "4.0rc1" is 4.0, "4.10.0" is 4.10
    parts = [int(m.group()) if (m := re.match(r"\d{1,6}", piece)) else 0
             for piece in (str(lightgbm.__version__).split(".") + ["0"])[:2]]
    if tuple(parts) < POSITION_BIAS_LIGHTGBM:
        raise UsageError(f"--propensity learn needs LightGBM 4.1 or later (its position-bias model for lambdarank), "
                         f"this is LightGBM {lightgbm.__version__}: pip install \"lightgbm>=4.1\", or estimate "
                         "propensities with rankcli propensity and train --loss ranknet --propensity FILE")


def _position_bias(log_lines: list[str], best_iteration: int) -> dict | None:
    """LightGBM's learned position biases after tree ``best_iteration`` (one table per tree in its debug log)."""
    from rankcli.compat import parse_position_bias_log

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


#: LightGBM's seed is a 32-bit signed integer: a larger one would be silently wrapped.
MAX_SEED = 2**31 - 1


def check_seed(seed: int) -> int:
    """``seed`` if LightGBM can take it as it is (0 .. :data:`MAX_SEED`), else :class:`UsageError`."""
    if seed < 0:
        raise UsageError(f"--seed must be >= 0, got {seed}")
    if seed > MAX_SEED:
        raise UsageError(f"--seed must be at most {MAX_SEED} (LightGBM's seed is a 32-bit integer), got {seed}")
    return seed


def check_boosting(params: dict, early_stopping: int, validating: bool) -> None:
    """:class:`UsageError` for ``boosting=dart`` with early stopping (``params`` under main names, as checked).

    dart rescales the earlier trees whenever it adds one, so the first ``best_iteration`` trees of the final model are
    not the model that scored best on validation: cutting there (what early stopping keeps) would store a model whose
    recorded validation score is not its own. LightGBM's own early stopping refuses dart for the same reason.
    """
    if validating and early_stopping > 0 and str(params.get("boosting", "")).lower() == "dart":
        raise UsageError("--param boosting=dart does not combine with early stopping: dart reweights the earlier "
                         "trees whenever it adds one, so the model cut at its best iteration is not the one that "
                         "scored best; pass --early-stopping 0 (every tree is trained and kept)")


def check_valid_rows(valid: Dataset, name: str) -> None:
    """:class:`InputError` for a validation set without rows (LightGBM's words were "Check failed: (num_data) > (0)")."""
    if valid.n_rows == 0:
        raise InputError(f"{name}: no rows to validate on; give a validation file with queries, or leave out --valid "
                         "(then every tree is trained and kept)")


def _prepare(train: Dataset, valid: Dataset | None, config: TrainConfig, names: tuple[str, str] | None = None):
    train_name, valid_name = names or ("training data", "validation data")
    config.validate()  # a configuration changed after it was built is checked again
    check_boosting(check_params(config.params), config.early_stopping, valid is not None)
    metric_name, metric_fn = metric_function(config.select_by, config.convention)
    if train.n_rows == 0:
        raise InputError(f"{train_name}: no rows to train on")
    if not train.feature_names:
        raise SchemaError(f"{train_name}: no feature columns (f1, f2, ...): a ranker needs at least one feature")
    if valid is not None:
        diff = feature_difference(train.feature_names, valid.feature_names)
        if diff:
            raise SchemaError(f"validation feature columns differ from the training data's: {diff}")
        check_valid_rows(valid, valid_name)
        _check_labels(valid, "validation data")
        _check_validation_gain(valid, config, valid_name)
        # The metric depends on the scores only through the order; with every query skipped (no relevant document,
        # under --no-relevant skip) it is NaN for any scores: model selection and early stopping would be blind
        # ("validation ndcg@5 n/a", every tree kept, exit 0).
        if math.isnan(metric_fn(np.asarray(valid.labels, dtype=np.float64), np.zeros(valid.n_rows), valid.offsets)):
            raise InputError(f"{valid_name}: no validation query has a relevant document, so --select-by "
                             f"{metric_name} under the {config.convention} convention (which skips such queries) has "
                             "no value for any model; validate on queries with relevant documents (or train without "
                             "validation: every tree is then trained and kept)")
    labels, label_values = _training_labels(train, config)
    return labels, label_values, metric_name, metric_fn


def check_inputs(train: Dataset, valid: Dataset | None, config: TrainConfig,
                 names: tuple[str, str] | None = None) -> None:
    """Every check :func:`train_model` makes before training (options, feature columns, labels); raises on failure.

    ``names`` (training, validation) name the two datasets in messages, e.g. their file names.
    """
    _prepare(train, valid, config, names)


# ----------------------------------------------------------------------------------------------------- training
def train_model(train: Dataset, valid: Dataset | None, config: TrainConfig,
                on_iteration: Callable[[int, float | None, float | None], None] | None = None,
                objective: Callable | None = None, position: np.ndarray | None = None) -> TrainResult:
    """Train a LightGBM ranker; ``on_iteration(iteration, valid_metric, best_so_far)`` after every tree.
    ``objective``: a callable objective that replaces a library loss's own (IPS RankNet, :mod:`rankcli.ips`).
    ``position`` (one per training row, ``lambdamart`` only): the position each document was displayed at, for
    LightGBM's position-bias model (unbiased LambdaMART, LightGBM >= 4.1; ``--propensity learn``); the learned biases
    come back in :attr:`TrainResult.position_bias`."""
    import lightgbm

    if position is not None:
        if config.loss != "lambdamart":
            raise UsageError(f"--propensity learn is LightGBM's position-bias model for --loss lambdamart, not "
                             f"--loss {config.loss}")
        check_position_bias_support()
        position = np.asarray(position)
        if position.shape != (train.n_rows,):
            raise InputError(f"position: {position.shape[0] if position.ndim else 0} values for {train.n_rows} "
                             "training rows")
    labels, label_values, metric_name, metric_fn = _prepare(train, valid, config)
    max_grade = int(labels.max()) if config.loss == "lambdamart" else None
    params = resolve_params(config, max_grade)

    callbacks = []
    selection = None
    feval = None
    if valid is not None:
        v_labels = np.asarray(valid.labels, dtype=np.float64)
        v_offsets = valid.offsets

        def feval(preds: np.ndarray, eval_data: Any) -> tuple[str, float, bool]:
            return metric_name, metric_fn(v_labels, np.asarray(preds, dtype=np.float64), v_offsets), True

        selection = _Selection(config.early_stopping, on_iteration)
        callbacks.append(selection)
    elif on_iteration is not None:
        def _progress(env: Any) -> None:
            on_iteration(env.iteration + 1, None, None)
        _progress.order = 40  # type: ignore[attr-defined]
        callbacks.append(_progress)

    run_params = dict(params)
    if LOSSES[config.loss] is None:
        run_params["objective"] = objective if objective is not None else \
            LibraryObjective(config.loss, labels, train.offsets, config.gamma, config.seed)
    # LightGBM reads the labels only for its own objectives; rankcli's losses take the float64 labels themselves, and
    # rankcli scores validation itself. LightGBM keeps labels as float32, where labels beyond 3.4e38 (which xendcg,
    # listnet and ranknet take) would become inf with a numpy warning: give it zeros where it does not read them.
    lgb_labels = labels if isinstance(run_params["objective"], str) else np.zeros(train.n_rows, dtype=np.float32)
    train_set = _lgb_dataset(train, lgb_labels, params, position=position)
    valid_sets = [_lgb_dataset(valid, np.zeros(valid.n_rows, dtype=np.float32), params, train_set)] if valid else None
    start = time.perf_counter()
    log_lines: list[str] = []
    try:
        if position is None:
            booster = lightgbm.train(run_params, train_set, num_boost_round=int(config.trees), valid_sets=valid_sets,
                                     valid_names=["valid"] if valid else None, feval=feval, callbacks=callbacks,
                                     keep_training_booster=True)
        else:
            # LightGBM shows the position biases it learns only in its debug log: train at verbosity 2 with every
            # message collected in memory (none reaches stdout, which carries rankcli's results).
            from rankcli.compat import capture_lightgbm_log

            run_params["verbosity"] = params["verbosity"] = 2
            with capture_lightgbm_log() as log_lines:
                booster = lightgbm.train(run_params, train_set, num_boost_round=int(config.trees),
                                         valid_sets=valid_sets, valid_names=["valid"] if valid else None, feval=feval,
                                         callbacks=callbacks, keep_training_booster=True)
    except lightgbm.basic.LightGBMError as exc:
        hint = ""
        if "num_features()) > (0)" in str(exc):  # every feature was dropped as unsplittable
            hint = (f"; no feature is usable: LightGBM drops features it cannot bin or split with {train.n_rows} "
                    f"training rows (min_data_in_leaf={params.get('min_data_in_leaf')}, "
                    f"min_data_in_bin={params.get('min_data_in_bin', 3)}): train on more data, or lower "
                    "--min-data-in-leaf and --param min_data_in_bin=1")
        message = str(exc).strip().rstrip(" .")
        raise InputError(f"LightGBM refused the training data or parameters: {message}{hint}") from None
    seconds = time.perf_counter() - start
    trees_trained = booster.current_iteration()
    if selection is not None and config.early_stopping > 0 and selection.best_iter >= 0:
        best_iteration = selection.best_iter + 1
    else:
        best_iteration = trees_trained
    booster.best_iteration = best_iteration
    if best_iteration < trees_trained:
        # Keep only the selected trees, so that the in-memory booster and model.txt predict alike.
        booster = lightgbm.Booster(model_str=booster.model_to_string(num_iteration=best_iteration))
        booster.best_iteration = best_iteration
    if LOSSES[config.loss] is None:
        params["objective"] = f"rankcli:{config.loss}"
    return TrainResult(booster=booster, best_iteration=best_iteration,
                       curve=list(selection.curve) if selection else [], seconds=seconds, params=params,
                       trees_trained=trees_trained, metric=metric_name if valid is not None else None,
                       label_values=label_values,
                       position_bias=_position_bias(log_lines, best_iteration) if position is not None else None)


# ----------------------------------------------------------------------------------------------------- artifact
def file_sha256(path: Path | str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def lightgbm_resolved_params(booster: Any) -> dict[str, Any]:
    """Every parameter as LightGBM resolved it (the ``parameters:`` section of its text model), values parsed."""
    text = booster.model_to_string(num_iteration=1)
    out: dict[str, Any] = {}
    inside = False
    for line in text.splitlines():
        if line == "parameters:":
            inside = True
        elif line == "end of parameters":
            break
        elif inside and line.startswith("[") and line.endswith("]") and ": " in line:
            key, value = line[1:-1].split(": ", 1)
            out[key] = value
            for cast in (int, float):
                try:
                    parsed = cast(value)
                except ValueError:
                    continue
                if math.isfinite(parsed):  # "inf"/"nan" stay strings: they are not JSON
                    out[key] = parsed
                break
    return out


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def model_info(result: TrainResult, config: TrainConfig, *, train_path: Path | str | None = None,
               valid_path: Path | str | None = None, feature_names: list[str]) -> dict:
    """The content of ``rankcli.json`` for a trained model."""
    import lightgbm

    loss: dict[str, Any] = {"name": config.loss, "label_grades": config.label_grades}
    if config.loss == "xendcg":
        loss["gamma"] = str(losses.parse_gamma(config.gamma))
    if result.label_values is not None:
        loss["label_values"] = result.label_values
    curve = [_finite(v) for v in result.curve]
    best_value = result.curve[result.best_iteration - 1] if result.curve and result.best_iteration > 0 else None
    return {
        "format": "rankcli-model/1",
        "loss": loss,
        # every LightGBM parameter: LightGBM's resolved values, overridden by the ones rankcli set (typed as passed)
        "params": {**lightgbm_resolved_params(result.booster), **result.params},
        "seed": config.seed,
        "preset": config.preset,
        "trees": config.trees,
        "early_stopping": config.early_stopping,
        "select_by": result.metric or config.select_by,
        "convention": config.convention,
        "features": list(feature_names),
        "data_sha256": {"train": file_sha256(train_path) if train_path else None,
                        "valid": file_sha256(valid_path) if valid_path else None},
        "best_iteration": result.best_iteration,
        "trees_trained": result.trees_trained,
        "best_valid_metric": _finite(best_value) if best_value is not None else None,
        "curve": curve,
        "versions": {"rankcli": __version__, "lightgbm": lightgbm.__version__, "numpy": np.__version__},
        "seconds": round(result.seconds, 3),
    }


def save_model(result: TrainResult, config: TrainConfig, model_dir: Path | str, *, train_path=None, valid_path=None,
               feature_names: list[str], overwrite: bool = False) -> dict:
    """Write ``model.txt`` and ``rankcli.json`` atomically into ``model_dir``; returns the ``rankcli.json`` content."""
    info = model_info(result, config, train_path=train_path, valid_path=valid_path, feature_names=feature_names)
    return write_model_dir(model_dir, result.booster.model_to_string(num_iteration=result.best_iteration), info,
                           overwrite=overwrite)


def write_model_dir(model_dir: Path | str, model_text: str, info: dict, *, overwrite: bool = False) -> dict:
    """Write a model directory (``model.txt`` and ``rankcli.json``) atomically, for every way of training.

    ``rankcli.json`` records the SHA-256 of the exact ``model.txt`` bytes (``model_sha256``), which
    :func:`load_model` verifies before LightGBM parses the file. Returns the ``rankcli.json`` content written.
    """
    data = model_text.encode("utf-8")
    info = {**info, "model_sha256": hashlib.sha256(data).hexdigest()}
    with atomic_directory(model_dir, overwrite) as tmp:
        (tmp / MODEL_FILE).write_bytes(data)
        (tmp / INFO_FILE).write_text(json.dumps(info, indent=2) + "\n")
    return info


# ------------------------------------------------------------------------------------------------------ loading
#: The ``format`` values of ``rankcli.json`` this version reads.
MODEL_FORMATS = ("rankcli-model/1",)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return f"a string ({value[:40]!r})"
    return "a list" if isinstance(value, list) else "an object"


def _list_of(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, list) and all(check(x) for x in v)


def _optional(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: v is None or check(v)


_is_str = lambda v: isinstance(v, str)  # noqa: E731
_SHA256 = lambda v: isinstance(v, str) and len(v) == 64 and all(c in "0123456789abcdef" for c in v)  # noqa: E731

#: ``rankcli.json`` keys -> (required, check, what it must be). Keys not listed are allowed (and not used).
INFO_SCHEMA: dict[str, tuple[bool, Callable[[Any], bool], str]] = {
    "format": (True, _is_str, "a string"),
    "loss": (True, lambda v: isinstance(v, dict), "an object"),
    "features": (True, _list_of(_is_str), "a list of feature names (strings)"),
    "model_sha256": (False, _SHA256, "64 lowercase hexadecimal digits"),
    "params": (False, lambda v: isinstance(v, dict), "an object"),
    "seed": (False, _is_int, "an integer"),
    "preset": (False, _optional(_is_str), "a string or null"),
    "trees": (False, _is_int, "an integer"),
    "early_stopping": (False, _is_int, "an integer"),
    "select_by": (False, _is_str, "a string"),
    "convention": (False, _is_str, "a string"),
    "data_sha256": (False, lambda v: isinstance(v, dict) and all(x is None or _SHA256(x) for x in v.values()),
                    "an object of SHA-256 digests or nulls"),
    "best_iteration": (False, _is_int, "an integer"),
    "trees_trained": (False, _is_int, "an integer"),
    "best_valid_metric": (False, _optional(_is_number), "a number or null"),
    "curve": (False, _list_of(_optional(_is_number)), "a list of numbers or nulls"),
    "versions": (False, lambda v: isinstance(v, dict), "an object"),
    "seconds": (False, _is_number, "a number"),
    "dask": (False, lambda v: isinstance(v, dict), "an object"),
}
LOSS_SCHEMA: dict[str, tuple[bool, Callable[[Any], bool], str]] = {
    "name": (True, _is_str, "a string"),
    "label_grades": (False, lambda v: isinstance(v, bool), "true or false"),
    "gamma": (False, _is_str, "a string"),
    "label_values": (False, _list_of(_is_number), "a list of numbers"),
}


def _check_schema(obj: dict, schema: dict, where: str, prefix: str = "") -> None:
    for key, (required, check, what) in schema.items():
        name = repr(prefix + key)
        if key not in obj:
            if required:
                raise InputError(f"{where}: not a rankcli model description, key {name} is missing")
            continue
        if not check(obj[key]):
            raise InputError(f"{where}: key {name} must be {what}, got {_json_type(obj[key])}")


def validate_model_info(info: Any, where: str) -> dict:
    """``rankcli.json`` checked: an object, a ``format`` this version reads, every known key of the right type."""
    if not isinstance(info, dict):
        raise InputError(f"{where}: not a rankcli model description, expected a JSON object, got {_json_type(info)}")
    fmt = info.get("format")
    if isinstance(fmt, str) and fmt.startswith("rankcli-model/") and fmt not in MODEL_FORMATS:
        raise InputError(f"{where}: unknown model format {fmt!r} (this rankcli {__version__} reads "
                         f"{', '.join(MODEL_FORMATS)}); it was written by another rankcli version: use that version, "
                         "or retrain the model")
    _check_schema(info, INFO_SCHEMA, where)
    if fmt not in MODEL_FORMATS:
        raise InputError(f"{where}: not a rankcli model description, key 'format' must be "
                         f"{' or '.join(map(repr, MODEL_FORMATS))}, got {fmt[:40]!r}")
    _check_schema(info["loss"], LOSS_SCHEMA, where, "loss.")
    return info


def _json_ok(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


def _check_model_text(text: str, model_path: Path, info: dict, info_path: Path) -> None:
    """Refuse a ``model.txt`` that LightGBM could crash on (it aborts or segfaults on some truncated files).

    With ``model_sha256`` (every model since rankcli records it) the bytes must match exactly; an older model is
    checked for its structure instead: every tree that the header's ``tree_sizes`` announces is present, whole, and
    followed by ``end of trees``.
    """
    expected = info.get("model_sha256")
    if expected is not None:
        got = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()
        if got != expected:
            raise InputError(f"{model_path}: the file was changed or truncated after training (its SHA-256 is "
                             f"{got[:12]}..., {info_path.name} records {expected[:12]}...); restore it or retrain")
        return
    header, sep, rest = text.partition("\n\n")
    sizes_line = next((line for line in header.splitlines() if line.startswith("tree_sizes=")), None)
    problem = None
    if not text.startswith("tree\n") or not sep:
        problem = "it does not start with a LightGBM model header"
    elif sizes_line is None:
        problem = "its header has no tree_sizes line"
    else:
        try:
            tree_sizes = [int(x) for x in sizes_line[len("tree_sizes="):].split()]
        except ValueError:
            tree_sizes = None
        body = rest.encode("utf-8", "surrogateescape")
        if tree_sizes is None or any(n <= 0 for n in tree_sizes):
            problem = "its tree_sizes line is not a list of sizes"
        else:
            end = sum(tree_sizes)
            trees, tail = body[:end], body[end:].lstrip(b"\n")
            last = tail.rstrip(b"\n").rsplit(b"\n", 1)[-1]
            if len(trees) < end or trees.count(b"Tree=") != len(tree_sizes) or not tail.startswith(b"end of trees"):
                problem = f"the {len(tree_sizes)} trees its header announces are not all there (truncated?)"
            elif (b"\nparameters:\n" in tail and b"\nend of parameters\n" not in tail) or not tail.endswith(b"\n") \
                    or not last.startswith(b"pandas_categorical:") or not _json_ok(last[len(b"pandas_categorical:"):]):
                problem = "it ends before its last section (truncated?)"
    if problem:
        raise InputError(f"{model_path}: not a whole LightGBM model ({problem}); restore it or retrain")


class TrainedModel:
    """A model directory loaded for prediction."""

    def __init__(self, booster: Any, info: dict, path: Path | None = None):
        self.booster = booster
        self.info = info
        self.path = path
        self.feature_names: list[str] = list(info.get("features") or booster.feature_name())

    def check_features(self, feature_names: list[str], what: str = "data") -> None:
        diff = feature_difference(self.feature_names, feature_names)
        if diff:
            raise SchemaError(f"{what}: feature columns do not match the model's: {diff}")

    def predict(self, ds: Dataset, what: str = "data") -> np.ndarray:
        """Float64 scores, one per row; :class:`SchemaError` when the feature columns differ from the model's."""
        self.check_features(ds.feature_names, what)
        if ds.features is None:
            raise SchemaError(f"{what}: read without its feature columns")
        if ds.n_rows == 0:
            return np.zeros(0)
        # LightGBM's default is every core of the node; use the CPUs this process may use (rankcli.cpus)
        scores = np.asarray(self.booster.predict(ds.features, num_threads=default_threads()), dtype=np.float64)
        bad = ~np.isfinite(scores)
        if bad.any():
            # trees hold finite leaf values: an inf or NaN score means a damaged model.txt (a model without the
            # checksum is checked only for its structure), and predict wrote the infs, eval --model ranked by them
            row = int(np.flatnonzero(bad)[0])
            where = self.path / MODEL_FILE if self.path is not None else "the model"
            raise InputError(f"{where}: scores {what} row {row} as {scores[row]} ({int(bad.sum())} rows not finite); "
                             "the model file holds a value that is not a number: restore it or retrain")
        return scores


def load_model(model_dir: Path | str) -> TrainedModel:
    """Load a model directory for prediction (``predict``, ``eval --model``, ``simulate-clicks --ranker``).

    ``rankcli.json`` is validated (:func:`validate_model_info`) and ``model.txt`` verified against the SHA-256 it
    records (or, for a model written before rankcli recorded one, checked for its structure) before LightGBM parses
    it: LightGBM can abort or segfault on a truncated model file. Every problem is an :class:`InputError` (exit 3)
    naming the file.
    """
    import lightgbm

    model_dir = Path(model_dir)
    info_path, model_path = model_dir / INFO_FILE, model_dir / MODEL_FILE
    if not model_dir.is_dir():
        raise InputError(f"{model_dir}: not a model directory (expected {MODEL_FILE} and {INFO_FILE})")
    for p in (model_path, info_path):
        if not p.exists():
            raise InputError(f"{model_dir}: not a model directory, {p.name} is missing")
        mode = p.stat().st_mode
        if not stat.S_ISREG(mode):
            # /dev/zero read until memory ran out (a MemoryError traceback), a FIFO blocked forever
            kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else
                    "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode)
                    else "not a regular file")
            raise InputError(f"{p}: {kind}, not a file; a model directory holds {MODEL_FILE} and {INFO_FILE} as "
                             "regular files (restore them, or retrain)")
    if info_path.stat().st_size > INFO_MAX_BYTES:
        raise InputError(f"{info_path}: {info_path.stat().st_size:,} bytes, more than a model description can be "
                         f"(rankcli writes a few kilobytes; at most {INFO_MAX_BYTES:,} are read)")
    try:
        info = json.loads(info_path.read_bytes().decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise InputError(f"{info_path}: not valid JSON ({exc})") from None
    except OSError as exc:
        raise InputError(f"{info_path}: cannot read it ({exc.strerror or exc})") from None
    validate_model_info(info, str(info_path))
    try:
        text = model_path.read_bytes().decode("utf-8", "surrogateescape")
    except OSError as exc:
        raise InputError(f"{model_path}: cannot read it ({exc.strerror or exc})") from None
    _check_model_text(text, model_path, info, info_path)
    try:
        booster = lightgbm.Booster(model_str=text)
    except (lightgbm.basic.LightGBMError, ValueError) as exc:  # ValueError: a parameter line it cannot parse back
        raise InputError(f"{model_path}: not a LightGBM model ({exc})") from None
    if len(info["features"]) != booster.num_feature():
        raise InputError(f"{info_path}: lists {len(info['features'])} features, but {model_path.name} was trained on "
                         f"{booster.num_feature()}; the two files do not belong together")
    trained_on = booster.feature_name()
    if list(info["features"]) != trained_on:
        # predict picks the data's columns by rankcli.json's names: other names or another order would blame the data
        # (or, with matching data columns, feed the trees the wrong features)
        diff = feature_difference(trained_on, list(info["features"]))
        raise InputError(f"{info_path}: its feature names differ from those {model_path.name} was trained on ({diff}); "
                         "the two files do not belong together")
    return TrainedModel(booster, info, model_dir)


__all__ = ["LOSSES", "PRESETS", "TrainConfig", "TrainResult", "TrainedModel", "LibraryObjective", "check_inputs",
           "check_boosting", "check_grade_range", "check_loss", "check_params", "check_seed", "feature_difference", "file_sha256", "load_model",
           "model_info", "resolve_params", "save_model", "train_model", "validate_model_info", "write_model_dir"]
