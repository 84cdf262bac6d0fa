"""The LightGBM glue: a loss name -> an objective, early stopping on a rankcli metric, the model directory.

Losses
------
One record per loss in :data:`LOSSES` (:mod:`rankcli.train.losses`): ``lambdamart`` (LightGBM ``lambdarank``),
``xendcg-native`` (LightGBM ``rank_xendcg``) and ``pointwise`` (LightGBM ``regression``) are LightGBM's own
objectives; ``xendcg``, ``listnet``, ``ranknet``, ``listmle``, ``listmle-pa``, ``approxndcg`` and ``lambdaloss``
are the library's (:mod:`rankcli.core.losses`) passed to LightGBM as a callable objective (:class:`LibraryObjective`).
A loss's own parameters are declared on its record (:mod:`rankcli.train.loss_options`).

Modules
-------
- :mod:`~rankcli.train.losses`: the loss registry and the labels each loss takes.
- :mod:`~rankcli.train.loss_options`: a loss's declared parameters (``--loss-option``), checked and resolved.
- :mod:`~rankcli.train.params`: ``--param`` parsing and the checks of LightGBM parameters.
- :mod:`~rankcli.train.lightgbm_params`: the class of every LightGBM parameter (applied, set by an option or by
  rankcli, ignored by LightGBM) and whether one takes effect in a given training.
- :mod:`~rankcli.train.config`: :class:`TrainConfig`, checked when built, and the LightGBM parameters it resolves to.
- :mod:`~rankcli.train.objective`: the callable objective, LightGBM datasets and callbacks, the early-stopping rule.
- :mod:`~rankcli.train.training`: the checks before training, :func:`train_model` and :func:`train_prepared`.
- :mod:`~rankcli.train.datasets`: :func:`prepare`: a split's LightGBM Datasets built once per binning and reused.
- :mod:`~rankcli.train.model`: the model directory (``model.txt`` and ``rankcli.json``): save, load, validate.
- :mod:`~rankcli.train.data`: ``rankcli train``'s inputs read from files, IPS click logs included.
- :mod:`~rankcli.train.params_file`: parameter files (``rankcli tune``'s ``best.json``) and their precedence.
- :mod:`~rankcli.train.ips`: a click log's impressions pooled into IPS training data (``train --propensity``).
- :mod:`~rankcli.train.scoring`: a model scoring a Parquet dataset batch by batch (``predict``, ``eval --model``).

Reproducibility: the XE-NDCG gamma of iteration ``t`` is drawn from ``numpy.random.default_rng([seed, t])``, and
LightGBM runs with ``deterministic=True``, ``force_row_wise=True`` and ``seed``: the same data, configuration and
seed give byte-identical ``model.txt`` (for a given thread count).
"""

from rankcli.train.config import (
    DEFAULT_EARLY_STOPPING,
    DEFAULT_TREES,
    MAX_SEED,
    PRESETS,
    TrainConfig,
    check_preset,
    check_seed,
    metric_function,
    resolve_params,
)
from rankcli.train.data import IpsOptions, TrainingData, ips_options, load_training_data
from rankcli.train.datasets import MatrixRows, PreparedData, binning_params, predict_rows, prepare
from rankcli.train.lightgbm_params import PARAMETERS, check_effective
from rankcli.train.loss_options import LossOption
from rankcli.train.losses import (
    LOSSES,
    REAL_LABEL_HINT,
    Loss,
    check_grade_range,
    check_loss,
    check_training_labels,
    options_by_loss,
    trainable_labels,
)
from rankcli.train.model import (
    INFO_FILE,
    MODEL_FILE,
    TrainedModel,
    TrainResult,
    feature_difference,
    file_sha256,
    lightgbm_resolved_params,
    load_model,
    model_info,
    save_model,
    validate_model_info,
    write_model_dir,
)
from rankcli.train.objective import EarlyStopping, LibraryObjective, check_position_bias_support
from rankcli.train.params import MANAGED_PARAMS, OPTION_PARAMS, check_boosting, check_params, parse_param, parse_params
from rankcli.train.training import check_inputs, check_valid_rows, check_validation, train_model, train_prepared

__all__ = [
    "DEFAULT_EARLY_STOPPING", "DEFAULT_TREES", "INFO_FILE", "LOSSES", "MANAGED_PARAMS", "MAX_SEED", "MODEL_FILE",
    "OPTION_PARAMS", "PARAMETERS", "PRESETS", "REAL_LABEL_HINT", "EarlyStopping", "IpsOptions", "LibraryObjective",
    "Loss", "LossOption", "MatrixRows", "PreparedData", "options_by_loss", "TrainConfig", "TrainResult",
    "TrainedModel", "TrainingData", "check_boosting", "check_effective", "check_grade_range", "check_inputs",
    "check_loss", "check_params", "check_position_bias_support", "check_preset", "check_seed",
    "check_training_labels", "check_valid_rows", "check_validation", "feature_difference", "file_sha256",
    "ips_options", "lightgbm_resolved_params", "load_model", "load_training_data", "metric_function", "model_info",
    "parse_param", "binning_params", "parse_params", "predict_rows", "prepare", "resolve_params", "save_model",
    "train_model", "train_prepared", "trainable_labels", "validate_model_info", "write_model_dir",
]
