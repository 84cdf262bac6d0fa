"""The training inputs of ``rankcli train`` read from files: the datasets, or a click log made into IPS training data
(:mod:`rankcli.train.ips`), checked as :func:`rankcli.train.training.check_inputs` checks them, and what
``rankcli.json`` records about them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rankcli.core.normalize import Normalization
from rankcli.dataset import Dataset
from rankcli.dataset.feature_transform import FOOTER_KEY, conform, pending, recorded
from rankcli.errors import UsageError
from rankcli.formats.feature_values import declared_dtype, precision_name
from rankcli.train import ips as ips_data
from rankcli.train.config import TrainConfig
from rankcli.train.datasets import PreparedData, prepare
from rankcli.train.ips import check_ips_loss, parse_propensity
from rankcli.train.model import TrainResult, lightgbm_resolved_params
from rankcli.train.objective import check_position_bias_support
from rankcli.train.training import check_inputs, check_splittable

#: The LightGBM parameter that regularises its position-bias model.
POSITION_BIAS_REGULARIZATION = "lambdarank_position_bias_regularization"


@dataclass(frozen=True)
class IpsOptions:
    """How a click log becomes training data.

    Attributes
    ----------
    propensity : :func:`rankcli.train.ips.parse_propensity` of ``--propensity``; ``None`` pools click-through rates
        (``--pool-impressions``).
    clip : the floor of the propensities (``--propensity-clip``).
    allow_graded : weight graded labels as clicks (``--allow-graded``).
    """

    propensity: tuple[str, Any] | None
    clip: float
    allow_graded: bool

    @property
    def learn(self) -> bool:
        """LightGBM's own position-bias model (``--propensity learn``)."""
        return self.propensity is not None and self.propensity[0] == "learn"


def ips_options(propensity: str | None, pool_impressions: bool, clip: float, allow_graded: bool, *, loss: str,
                dask: str | None = None, params: dict | None = None) -> IpsOptions | None:
    """The IPS options of ``rankcli train``, checked; ``None`` without ``--propensity`` and ``--pool-impressions``.

    Parameters
    ----------
    propensity : ``--propensity`` (a propensity file, ``pbm:ETA`` or ``learn``) or ``None``.
    pool_impressions : ``--pool-impressions``.
    clip : ``--propensity-clip``, in ``(0, 1]``.
    allow_graded : ``--allow-graded``.
    loss : ``--loss`` (:func:`rankcli.train.ips.check_ips_loss`).
    dask : ``--dask`` (IPS trains on one machine).
    params : the checked ``--param`` values (the position-bias regularisation needs ``--propensity learn``).
    """
    options = None
    if propensity is not None or pool_impressions:
        if propensity is not None and pool_impressions:
            raise UsageError("--propensity and --pool-impressions: give one (--propensity pbm:0 is the pooled "
                             "click-through rate too)")
        spec = parse_propensity(propensity) if propensity is not None else None
        check_ips_loss(loss, spec[0] if spec is not None else None)
        if dask is not None:
            raise UsageError("--propensity and --pool-impressions train on one machine; drop --dask")
        if not 0 < clip <= 1:
            raise UsageError(f"--propensity-clip: must be within (0, 1], got {clip:g}")
        options = IpsOptions(spec, clip, allow_graded)
        if options.learn:
            from rankcli.runtime.startup import import_lightgbm_lean

            import_lightgbm_lean()
            check_position_bias_support()
    if POSITION_BIAS_REGULARIZATION in (params or {}) and (options is None or not options.learn):
        raise UsageError(f"--param {POSITION_BIAS_REGULARIZATION}: it regularises LightGBM's position-bias "
                         "model, which only --loss lambdamart --propensity learn trains")
    return options


@dataclass
class TrainingData:
    """The inputs of :func:`rankcli.train.training.train_model` and what ``rankcli.json`` records about them.

    Attributes
    ----------
    train, valid : the training and validation sets.
    objective : a callable objective replacing the loss's own (IPS RankNet), or ``None``.
    position : each training row's displayed position (``--propensity learn``), or ``None``.
    ips : what ``rankcli.json`` records about IPS training (its ``ips`` key), or ``None``.
    train_rows, valid_rows : the features read from the files by row when the datasets were read without them
        (:class:`rankcli.formats.feature_rows.ParquetFeatureRows`), else ``None``.
    normalization : the transform the training features had (their file's footer), ``None`` for raw features; the
        validation set is brought to it (:func:`rankcli.dataset.feature_transform.conform`).
    """

    train: Dataset
    valid: Dataset | None
    objective: Callable | None = None
    position: np.ndarray | None = None
    ips: dict | None = None
    normalization: Normalization | None = None
    train_rows: Any = None
    valid_rows: Any = None

    def prepare(self) -> PreparedData:
        """The split ready to train on (:func:`rankcli.train.prepare`)."""
        return prepare(self.train, self.valid, train_rows=self.train_rows, valid_rows=self.valid_rows,
                       position=self.position)

    @property
    def feature_dtype(self) -> str:
        """The precision the training features were stored in and LightGBM binned: ``float32`` (the default), or
        ``float64`` (``convert --float64``: LightGBM's own numbers for the same text)."""
        return precision_name(declared_dtype(self.train.metadata))

    def record(self, result: TrainResult) -> dict:
        """The keys this training adds to ``rankcli.json``: ``normalize`` (the training features' transform, null
        for raw features), ``feature_dtype`` (their precision) and ``ips`` (with the learned position biases of
        ``result``, the trained model)."""
        norm = {FOOTER_KEY: None if self.normalization is None else self.normalization.as_dict(),
                "feature_dtype": self.feature_dtype}
        engine = _engine_features(self.train)
        if engine is not None:  # the engine's feature names of a converted feature log: export-model writes them
            norm["engine_features"] = engine
        if self.ips is None:
            return norm
        if self.position is not None:  # LightGBM's learned additive score bias per position (None: not shown)
            self.ips["propensity"]["position_bias"] = result.position_bias
            key = POSITION_BIAS_REGULARIZATION
            resolved = result.params.get(key, lightgbm_resolved_params(result.booster).get(key))
            self.ips["propensity"]["regularization"] = resolved
        return {**norm, "ips": self.ips}


def _engine_features(ds: Dataset) -> list[str] | None:
    """The engine's name of each feature column (a converted feature log's footer ``rankcli.feature_names``)."""
    try:
        names = json.loads(ds.metadata.get("feature_names") or "null")
    except ValueError:
        return None
    ok = isinstance(names, list) and len(names) == len(ds.feature_names) and all(isinstance(n, str) for n in names)
    return names if ok else None


def _features_by_row(path: Path | str, what: Dataset) -> Any:
    """The feature columns of the Parquet file ``path`` read by row (LightGBM bins them batch by batch: the feature
    matrix is never in memory)."""
    from rankcli.formats.feature_rows import ParquetFeatureRows

    return ParquetFeatureRows(path, what.feature_names)


def _read_training_set(path: Path, config: TrainConfig, ips: IpsOptions | None) -> TrainingData:
    from rankcli.formats.parquet import read_dataset

    if ips is None:
        ds = read_dataset(path, features=False, docids=False)
        return TrainingData(ds, None, train_rows=_features_by_row(path, ds))

    if ips.learn:
        ds, position, info = ips_data.position_training_set(read_dataset(path, extra_columns=("position",)),
                                                            allow_graded=ips.allow_graded, what=str(path))
        return TrainingData(ds, None, position=position, ips=info)
    ds, info = ips_data.pooled_training_set(read_dataset(path, extra_columns=ips_data.LOG_COLUMNS), loss=config.loss,
                                            propensity=ips.propensity, clip=ips.clip, allow_graded=ips.allow_graded,
                                            what=str(path))
    return TrainingData(ds, None, objective=ips_data.objective_for(config.loss, ds), ips=info)


def load_training_data(train_path: Path, valid_path: Path | None, config: TrainConfig, *,
                       ips: IpsOptions | None = None, log: Callable[[str], None] | None = None) -> TrainingData:
    """Read and check the training inputs of ``rankcli train``.

    Parameters
    ----------
    train_path : the training data (Parquet), or a click log with ``ips``.
    valid_path : the validation data (Parquet), or ``None``.
    config : the training configuration (:func:`rankcli.train.training.check_inputs` checks the data against it).
    ips : how a click log becomes training data (:func:`ips_options`), or ``None``.
    log : receives one line saying what is trained on.
    """
    from rankcli.formats.parquet import read_dataset

    data = _read_training_set(train_path, config, ips)
    data.normalization = recorded(data.train.metadata, str(train_path))
    if valid_path is not None:
        data.valid = read_dataset(valid_path, features=False, docids=False)
        data.valid_rows = _features_by_row(valid_path, data.valid)
        if data.valid.feature_names == data.train.feature_names:  # else check_inputs names the difference
            reference = f"the training data {train_path}"
            if pending(recorded(data.valid.metadata, str(valid_path)), data.normalization, str(valid_path),
                       reference) is not None:  # raw features for a normalised training set: normalised in memory
                data.valid = conform(read_dataset(valid_path), data.normalization, str(valid_path), reference)
                data.valid_rows = None
    check_inputs(data.train, data.valid, config, names=(str(train_path), str(valid_path)))
    check_splittable(data.train.n_rows, config)
    if log is not None:
        ds, valid = data.train, data.valid
        log(f"training {config.loss} on {train_path}: {ds.n_rows} rows, {ds.n_queries} queries, {ds.n_features} "
            "features" + (f"; validating on {valid_path} ({valid.n_queries} queries)" if valid is not None else ""))
    return data
