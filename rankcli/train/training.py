"""Training a LightGBM ranker on in-memory datasets: the checks before training, the training loop with rankcli's
model selection, and the trees kept.

Model selection: with a validation set, the metric ``select_by`` (default ``ndcg@5``, the paper convention: queries
without a relevant document skipped) is computed after every tree with :mod:`rankcli.core.metrics` on LightGBM's
incrementally maintained validation scores (a ``feval``; no re-prediction), and the whole curve is kept. Training
stops after ``early_stopping`` trees without improvement and the model keeps the trees up to the best iteration
(:class:`rankcli.train.objective.EarlyStopping`). With ``early_stopping=0`` every tree is trained and kept; without
a validation set, too. LightGBM runs with ``deterministic=True``, ``force_row_wise=True`` and ``seed``: the same
data, configuration and seed give byte-identical ``model.txt`` (for a given thread count).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from rankcli.core import metrics
from rankcli.dataset import Dataset
from rankcli.errors import InputError, SchemaError, UsageError
from rankcli.train.config import TrainConfig, metric_function, resolve_params
from rankcli.train.datasets import PreparedData, prepare
from rankcli.train.losses import LOSSES, trainable_labels
from rankcli.train.model import TrainResult, feature_difference
from rankcli.train.objective import (
    LibraryObjective,
    Selection,
    check_position_bias_support,
    learned_position_bias,
    progress_callback,
)
from rankcli.train.params import check_boosting, check_params

#: ``on_iteration(trees, validation_metric, best_so_far)``: progress after every tree (``None`` without validation).
OnIteration = Callable[[int, "float | None", "float | None"], None]


class Checked(NamedTuple):
    """What the checks before training computed: the training labels and the validation metric."""

    labels: np.ndarray  # the labels LightGBM trains on (grades with label_grades), float64
    label_values: list[float] | None  # with label_grades: the label value of each grade
    metric_name: str  # the canonical name of select_by
    metric: Callable[[np.ndarray, np.ndarray, np.ndarray], float]  # f(labels, scores, offsets) -> mean


def check_finite_labels(ds: Dataset, what: str) -> None:
    """:class:`InputError` naming the first row whose label is not a finite number.

    Parameters
    ----------
    ds : the dataset.
    what : how messages name it (``training data``, a file name).
    """
    labels = np.asarray(ds.labels, dtype=np.float64)
    bad = ~np.isfinite(labels)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InputError(f"{what}: label of row {row} is not a finite number, got {labels[row]}")


def check_validation_gain(valid: Dataset, config: TrainConfig, name: str) -> None:
    """Refuse validation labels whose exponential gain overflows or underflows: NDCG/DCG would be NaN or 0, or a
    positive label would count as not relevant, not a number to select by. ``valid``: the validation set;
    ``config``: its ``select_by`` and ``convention``; ``name``: for messages."""
    limit = metrics.EXPONENTIAL_GAIN_LABEL_LIMIT  # the metrics core refuses it too, but only after the first tree
    spec = metrics.parse_metric(config.select_by)
    if spec.name not in ("ndcg", "dcg") or metrics.Convention.preset(config.convention).gain != "exponential":
        return
    top = float(np.max(valid.labels)) if valid.n_rows else 0.0
    if top > limit:
        raise InputError(f"{name}: a label of {top:g}: --select-by {spec} under the {config.convention} convention "
                         f"uses the gain 2^label - 1, which overflows beyond label {limit}; select by "
                         "--convention sklearn (linear gain), or validate on graded labels")
    # 2^label rounds to 1 below a label of about 1.6e-16: such a document's gain is 0, as if it were not relevant
    labels = np.asarray(valid.labels, dtype=np.float64)
    lost = (labels > 0) & (np.exp2(labels) - 1.0 == 0.0)
    if lost.any():
        raise InputError(f"{name}: a label of {float(labels[np.argmax(lost)]):g}: --select-by {spec} under the "
                         f"{config.convention} convention uses the gain 2^label - 1, which is 0 in float64 for "
                         "labels below about 1.6e-16, so the document would count as not relevant; rescale the "
                         "labels, or select by --convention sklearn (linear gain)")


def check_valid_rows(valid: Dataset, name: str) -> None:
    """:class:`InputError` for a validation set ``valid`` without rows (``name`` in the message; LightGBM's words were
    "Check failed: (num_data) > (0)")."""
    if valid.n_rows == 0:
        raise InputError(f"{name}: no rows to validate on; give a validation file with queries, or leave out --valid "
                         "(then every tree is trained and kept)")


def check_validation(feature_names: list[str], valid: Dataset, config: TrainConfig,
                     name: str = "validation data") -> None:
    """Every check of a validation set, for ``rankcli train`` and ``train --dask`` alike: the training data's
    ``feature_names``, rows, finite labels, a gain that does not overflow (:func:`check_validation_gain`), and some
    query that ``config``'s validation metric scores. ``name``: the validation set in messages."""
    metric_name, metric_fn = metric_function(config.select_by, config.convention)
    diff = feature_difference(feature_names, valid.feature_names)
    if diff:
        raise SchemaError(f"validation feature columns differ from the training data's: {diff}")
    check_valid_rows(valid, name)
    check_finite_labels(valid, name)
    check_validation_gain(valid, config, name)
    # The metric depends on the scores only through the order; with every query skipped (no relevant document,
    # under --no-relevant skip) it is NaN for any scores: model selection and early stopping would be blind
    # ("validation ndcg@5 n/a", every tree kept, exit 0).
    if math.isnan(metric_fn(np.asarray(valid.labels, dtype=np.float64), np.zeros(valid.n_rows), valid.offsets)):
        raise InputError(f"{name}: no validation query has a relevant document, so --select-by {metric_name} under "
                         f"the {config.convention} convention (which skips such queries) has no value for any model; "
                         "validate on queries with relevant documents (or train without validation: every tree is "
                         "then trained and kept)")


def check_inputs(train: Dataset, valid: Dataset | None, config: TrainConfig,
                 names: tuple[str, str] | None = None) -> Checked:
    """Every check :func:`train_model` makes before training (options, feature columns, labels); raises on failure.

    Parameters
    ----------
    train, valid : the training and validation sets (``valid`` may be ``None``).
    config : the configuration (checked again: a configuration changed after it was built).
    names : how messages name the two datasets (training, validation), e.g. their file names.

    Returns the training labels and the validation metric (:class:`Checked`).
    """
    train_name, valid_name = names or ("training data", "validation data")
    config.validate()
    check_boosting(check_params(config.params), config.early_stopping, valid is not None)
    metric_name, metric_fn = metric_function(config.select_by, config.convention)
    if train.n_rows == 0:
        raise InputError(f"{train_name}: no rows to train on")
    if not train.feature_names:
        raise SchemaError(f"{train_name}: no feature columns (f1, f2, ...): a ranker needs at least one feature")
    if valid is not None:
        check_validation(train.feature_names, valid, config, valid_name)
    check_finite_labels(train, train_name)
    labels, label_values = trainable_labels(train.labels, config)
    return Checked(labels, label_values, metric_name, metric_fn)


def _check_position(train: Dataset, config: TrainConfig, position: np.ndarray) -> np.ndarray:
    if config.loss != "lambdamart":
        raise UsageError(f"--propensity learn is LightGBM's position-bias model for --loss lambdamart, not "
                         f"--loss {config.loss}")
    check_position_bias_support()
    position = np.asarray(position)
    if position.shape != (train.n_rows,):
        raise InputError(f"position: {position.shape[0] if position.ndim else 0} values for {train.n_rows} "
                         "training rows")
    return position


def _callbacks(valid: Dataset | None, config: TrainConfig, prepared: Checked, on_iteration: OnIteration | None):
    """(selection callback or None, feval or None, callbacks) for LightGBM."""
    if valid is None:
        return None, None, [progress_callback(on_iteration)] if on_iteration is not None else []
    v_labels = np.asarray(valid.labels, dtype=np.float64)
    v_offsets = valid.offsets

    def feval(preds: np.ndarray, eval_data: Any) -> tuple[str, float, bool]:
        return prepared.metric_name, prepared.metric(v_labels, np.asarray(preds, dtype=np.float64), v_offsets), True

    selection = Selection(config.early_stopping, on_iteration)
    return selection, feval, [selection]


def _refusal(exc: Exception, params: dict, rows: int) -> InputError:
    """LightGBM's refusal of the training data or parameters as an :class:`InputError` saying what to change."""
    hint = ""
    if "num_features()) > (0)" in str(exc):  # every feature was dropped as unsplittable
        hint = (f"; no feature is usable: LightGBM drops features it cannot bin or split with {rows} "
                f"training rows (min_data_in_leaf={params.get('min_data_in_leaf')}, "
                f"min_data_in_bin={params.get('min_data_in_bin', 3)}): train on more data, or lower "
                "--min-data-in-leaf and --param min_data_in_bin=1")
    message = str(exc).strip().rstrip(" .")
    return InputError(f"LightGBM refused the training data or parameters: {message}{hint}")


def _run_lightgbm(run_params: dict, params: dict, train_set: Any, valid_sets: list | None, trees: int,
                  feval: Callable | None, callbacks: list, learn_positions: bool, rows: int) -> tuple[Any, list[str]]:
    """``lightgbm.train``; a refusal is an :class:`InputError` saying what to change. Returns the booster and, when
    learning position biases, LightGBM's debug log (where it shows them)."""
    import lightgbm

    log_lines: list[str] = []
    kwargs = dict(num_boost_round=int(trees), valid_sets=valid_sets, valid_names=["valid"] if valid_sets else None,
                  feval=feval, callbacks=callbacks, keep_training_booster=True)
    try:
        if not learn_positions:
            return lightgbm.train(run_params, train_set, **kwargs), log_lines
        # LightGBM shows the position biases it learns only in its debug log: train at verbosity 2 with every
        # message collected in memory (none reaches stdout, which carries rankcli's results).
        from rankcli.runtime.compat import capture_lightgbm_log

        run_params["verbosity"] = params["verbosity"] = 2
        with capture_lightgbm_log() as log_lines:
            booster = lightgbm.train(run_params, train_set, **kwargs)
        return booster, log_lines
    except lightgbm.basic.LightGBMError as exc:
        raise _refusal(exc, params, rows) from None


def keep_trees(booster: Any, best_iteration: int) -> Any:
    """``booster`` with only its first ``best_iteration`` trees, so that it and its ``model.txt`` predict alike: a
    booster read back from its text model, which holds none of the training's state (the training booster keeps
    gradients, histograms and a row-wise copy of the binned training set, as large as the Dataset itself)."""
    import lightgbm

    text = booster.model_to_string(num_iteration=best_iteration)
    check_finite_leaves(text)
    booster = lightgbm.Booster(model_str=text)
    booster.best_iteration = best_iteration
    return booster


def check_finite_leaves(model_text: str) -> None:
    """:class:`InputError` when a LightGBM text model's scores may not be numbers: a leaf value that is not finite,
    or leaves whose largest magnitudes add up beyond float64 (a bound on every score). Boosting with a learning rate
    such as 1e308 gives such leaves; the model would be written and every command reading it would refuse it."""
    bound = 0.0
    for tree, line in enumerate(re.findall(r"^leaf_value=(.*)$", model_text, flags=re.MULTILINE)):
        leaves = np.array(line.split(), dtype=np.float64)
        bad = leaves[~np.isfinite(leaves)]
        bound += float(np.max(np.abs(leaves))) if bad.size == 0 else math.inf
        if not math.isfinite(bound):
            what = f"is {bad[0]}" if bad.size else "makes the leaves' sum overflow float64"
            raise InputError(f"training diverged: a leaf of tree {tree} {what}, so the model's scores would not be "
                             "numbers; lower --learning-rate (or --param values that scale the steps), or rescale "
                             "the labels")


def train_model(train: Dataset, valid: Dataset | None, config: TrainConfig, on_iteration: OnIteration | None = None,
                objective: Callable | None = None, position: np.ndarray | None = None) -> TrainResult:
    """Train a LightGBM ranker with rankcli's checks and model selection.

    Parameters
    ----------
    train, valid : the training set and the validation set (``None``: every tree is trained and kept).
    config : the training configuration.
    on_iteration : ``on_iteration(trees, valid_metric, best_so_far)`` after every tree.
    objective : a callable objective that replaces a library loss's own (IPS RankNet, :mod:`rankcli.train.ips`).
    position : one per training row, ``lambdamart`` only: the position each document was displayed at, for
        LightGBM's position-bias model (unbiased LambdaMART, LightGBM >= 4.1; ``--propensity learn``); the learned
        biases come back in :attr:`TrainResult.position_bias`.

    To train several models on one split, :func:`rankcli.train.prepare` it once and call :func:`train_prepared`:
    the LightGBM Datasets are then built once per binning, not once per model.
    """
    return train_prepared(prepare(train, valid, position=position), config, on_iteration, objective)


def check_splittable(rows: int, config: TrainConfig) -> None:
    """:class:`InputError` when no tree could split ``rows`` training rows into two leaves of ``min_data_in_leaf``
    rows each under ``config``: every tree would be a constant (``rankcli train`` refuses such data; the Datasets are
    built with ``feature_pre_filter=False``, so LightGBM no longer refuses it by dropping every feature)."""
    least = int(resolve_params(config).get("min_data_in_leaf", 20))
    if rows < 2 * max(least, 1):
        raise InputError(f"{rows} training rows: no tree can split them into two leaves of at least "
                         f"min_data_in_leaf={least} rows, so every tree would be a constant; train on more data, or "
                         "lower --min-data-in-leaf")


def _lightgbm_sets(data: PreparedData, params: dict, labels: np.ndarray) -> tuple[Any, list | None]:
    import lightgbm

    try:
        train_set, valid_set = data.lightgbm_sets(params, labels)
    except lightgbm.basic.LightGBMError as exc:
        raise _refusal(exc, params, data.train.n_rows) from None
    return train_set, [valid_set] if valid_set is not None else None


def train_prepared(data: PreparedData, config: TrainConfig, on_iteration: OnIteration | None = None,
                   objective: Callable | None = None) -> TrainResult:
    """Train a LightGBM ranker on a prepared split (:func:`rankcli.train.prepare`), building its LightGBM Datasets
    only if no earlier training used the same binning (:func:`rankcli.train.datasets.binning_params`).

    Parameters
    ----------
    data : the split: training and validation sets, their features, the training rows' positions.
    config, on_iteration, objective : as :func:`train_model`.

    The same split, configuration and seed give the same model as :func:`train_model`, byte for byte, whatever was
    trained on ``data`` before.
    """
    train, valid = data.train, data.valid
    position = _check_position(train, config, data.position) if data.position is not None else None
    checked = check_inputs(train, valid, config)
    labels = checked.labels
    params = resolve_params(config, int(labels.max()) if config.loss == "lambdamart" else None, rows=train.n_rows)
    selection, feval, callbacks = _callbacks(valid, config, checked, on_iteration)
    run_params = dict(params)
    native = LOSSES[config.loss].native
    if not native:
        run_params["objective"] = objective if objective is not None else \
            LibraryObjective(config.loss, labels, train.offsets, config.gamma, config.seed, config.loss_options)
    # LightGBM reads the labels only for its own objectives; rankcli's losses take the float64 labels themselves, and
    # rankcli scores validation itself. LightGBM keeps labels as float32, where labels beyond 3.4e38 (which xendcg,
    # listnet and ranknet take) would become inf with a numpy warning: give it zeros where it does not read them.
    lgb_labels = labels if native else np.zeros(train.n_rows, dtype=np.float32)
    start = time.perf_counter()  # binning included when this training builds the Datasets
    train_set, valid_sets = _lightgbm_sets(data, params, lgb_labels)
    booster, log_lines = _run_lightgbm(run_params, params, train_set, valid_sets, config.trees, feval, callbacks,
                                       position is not None, train.n_rows)
    seconds = time.perf_counter() - start
    trees_trained = booster.current_iteration()
    best_iteration = selection.rule.best_iteration(trees_trained) if selection is not None else trees_trained
    booster = keep_trees(booster, best_iteration)
    if not native:
        params["objective"] = f"rankcli:{config.loss}"
    return TrainResult(booster=booster, best_iteration=best_iteration,
                       curve=list(selection.rule.curve) if selection else [], seconds=seconds, params=params,
                       trees_trained=trees_trained, metric=checked.metric_name if valid is not None else None,
                       label_values=checked.label_values,
                       position_bias=learned_position_bias(log_lines, best_iteration) if position is not None else None)
