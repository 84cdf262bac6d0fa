"""LightGBM Datasets built once and trained on many times: :func:`prepare` and :class:`PreparedData`.

Binning a training set (LightGBM's Dataset construction: a sample of rows fixes each feature's bins, then every row is
binned) is most of the time of a short training, and it is the same for every loss and every hyperparameter that does
not change the bins. :class:`PreparedData` holds a split's labels and query offsets in memory and its features as a
matrix or as rows read on demand (:class:`MatrixRows`, or a Parquet file's
:class:`rankcli.formats.feature_rows.ParquetFeatureRows`), and builds the LightGBM training and validation Datasets
once per distinct *binning* (:func:`binning_params`), keeping them for every later training with that binning.

Three LightGBM facts make a Dataset reusable (LightGBM 4.7, ``python-package/lightgbm/basic.py``):

- A constructed Dataset is checked against the parameters of each training (``LGBM_DatasetUpdateParamChecking``):
  a change of a binning parameter (``max_bin``, ``min_data_in_bin``, ``bin_construct_sample_cnt``, ``use_missing``,
  ``zero_as_missing``, ...) is refused ("Cannot change max_bin after constructed Dataset handle"), and so is a smaller
  ``min_data_in_leaf`` while ``feature_pre_filter`` is true. rankcli builds with ``feature_pre_filter=False`` (a
  feature is then never dropped at construction because of ``min_data_in_leaf``, which becomes a training parameter
  only) and builds another Dataset for another binning instead of asking LightGBM to change one.
- When the check fails and the raw data is still attached, LightGBM silently frees the Dataset and bins it again; the
  Datasets here are built with ``free_raw_data=True`` from a :class:`lightgbm.Sequence` or a matrix they do not keep,
  so that can never happen unseen: a refusal is an error.
- ``seed`` is not a Dataset parameter, but the row sample that fixes the bins is drawn with ``data_random_seed``,
  which LightGBM derives from ``seed`` (:func:`lightgbm_data_random_seed`); it is part of the binning, passed
  explicitly (a Dataset built from a Sequence receives only LightGBM's Dataset parameters).

A Dataset built from a Sequence and one built from the same rows as a matrix hold the same bins (LightGBM samples the
same row numbers, ``LGBM_SampleIndices``, and bins the same values), so the model is the same; the tests check it
byte for byte.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from rankcli.core.groups import sizes
from rankcli.dataset import Dataset
from rankcli.errors import SchemaError
from rankcli.runtime.memory import release_free_memory

#: Rows per batch pushed into a Dataset built from a Sequence (LightGBM's default is 4096; larger is faster).
SEQUENCE_BATCH_ROWS = 65_536


class FeatureRows(Protocol):
    """A feature matrix addressed by rows, as LightGBM's :class:`lightgbm.Sequence` reads one: ``rows[i]`` (one row,
    float64), ``rows[a:b]`` and ``rows[[i, j, ...]]`` (float32 ``(rows, features)``) and ``len(rows)``."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: Any) -> np.ndarray: ...


class MatrixRows:
    """Rows ``rows`` of an in-memory feature ``matrix`` (all rows when ``None``), without copying them: a trial's
    training queries drawn from a pooled dataset are binned straight from the pooled matrix.

    Parameters
    ----------
    matrix : (n, features) float32, any memory order.
    rows : (m,) int row numbers of ``matrix``, or ``None``.
    """

    def __init__(self, matrix: np.ndarray, rows: np.ndarray | None = None):
        self.matrix = matrix
        self.rows = None if rows is None else np.asarray(rows, dtype=np.int64)

    def __len__(self) -> int:
        return int(self.matrix.shape[0] if self.rows is None else self.rows.shape[0])

    @property
    def shape(self) -> tuple[int, int]:
        return len(self), int(self.matrix.shape[1])

    def take(self, index: np.ndarray) -> np.ndarray:
        """The rows numbered ``index`` (float32)."""
        index = np.asarray(index, dtype=np.int64)
        return self.matrix[index if self.rows is None else self.rows[index]]

    def __getitem__(self, index: Any) -> np.ndarray:
        if isinstance(index, (int, np.integer)):
            row = int(index) if self.rows is None else int(self.rows[index])
            return self.matrix[row].astype(np.float64)
        if isinstance(index, slice) and self.rows is None:
            return self.matrix[index]
        if isinstance(index, slice):
            return self.matrix[self.rows[index]]
        return self.take(index)


def lightgbm_data_random_seed(seed: int) -> int:
    """The ``data_random_seed`` LightGBM derives from ``seed`` (``Config::Set``: the first ``NextShort(0, 32767)`` of
    its ``Random(seed)``, a 32-bit linear congruential generator): the seed of the row sample that fixes the bins."""
    x = (214013 * int(seed) + 2531011) & 0xFFFFFFFF
    return ((x >> 16) & 0x7FFF) % 32767


#: Parameters passed to a Dataset's construction that do not change its bins (so they are not in the binning key).
_CONSTRUCTION_ONLY = ("verbosity", "num_threads")


def binning_params(params: dict[str, Any]) -> dict[str, Any]:
    """The parameters a LightGBM Dataset is built with for a training with ``params`` (LightGBM's main names): the
    one place that says what the binning is.

    They are LightGBM's own Dataset parameters among ``params`` (``lightgbm.Dataset.get_params``: ``max_bin``,
    ``max_bin_by_feature``, ``min_data_in_bin``, ``bin_construct_sample_cnt``, ``use_missing``, ``zero_as_missing``,
    ``enable_bundle``, ``is_enable_sparse``, ``linear_tree``, ``forcedbins_filename``, categorical features, ...),
    ``data_random_seed`` as LightGBM derives it from ``seed`` (:func:`lightgbm_data_random_seed`),
    ``feature_pre_filter=False`` (see the module's documentation), and ``verbosity`` and ``num_threads`` (they do not
    change the bins). Every other parameter, ``min_data_in_leaf`` included, is a training parameter.
    """
    from rankcli.runtime.startup import import_lightgbm_lean

    lightgbm = import_lightgbm_lean()
    out = dict(lightgbm.Dataset(None, params=dict(params)).get_params())
    out["feature_pre_filter"] = False
    if "seed" in params and "data_random_seed" not in out:
        out["data_random_seed"] = lightgbm_data_random_seed(params["seed"])
    for key in _CONSTRUCTION_ONLY:
        if key in params:
            out[key] = params[key]
    return out


def binning_key(params: dict[str, Any]) -> tuple:
    """A hashable key of the binning of ``params`` (:func:`binning_params` without the parameters that do not change
    the bins): trainings with equal keys share their Datasets."""
    bins = binning_params(params)
    return tuple(sorted((k, repr(v)) for k, v in bins.items() if k not in _CONSTRUCTION_ONLY))


def _sequence(rows: FeatureRows) -> Any:
    """``rows`` as a :class:`lightgbm.Sequence` (integer, slice and list indexing; batches of
    :data:`SEQUENCE_BATCH_ROWS`)."""
    import lightgbm

    class Rows(lightgbm.Sequence):
        batch_size = SEQUENCE_BATCH_ROWS

        def __len__(self) -> int:
            return len(rows)

        def __getitem__(self, index: Any) -> np.ndarray:
            return rows[index]

    return Rows()


class PreparedData:
    """A training split ready to train on many times: :func:`prepare` makes one, and
    :func:`rankcli.train.train_prepared` trains on it.

    Attributes
    ----------
    train, valid : the training and validation sets (labels, offsets, feature names; features optional).
    train_rows, valid_rows : their features by row (:class:`FeatureRows`), or ``None`` to use ``Dataset.features``.
    position : each training row's displayed position (LightGBM's position-bias model), or ``None``.
    constructions : how many LightGBM Datasets (training and validation) were built: one training set per binning.
    """

    def __init__(self, train: Dataset, valid: Dataset | None = None, *, train_rows: FeatureRows | None = None,
                 valid_rows: FeatureRows | None = None, position: np.ndarray | None = None):
        self.train, self.valid = train, valid
        self.train_rows, self.valid_rows = train_rows, valid_rows
        self.position = position
        self.constructions = 0
        self._sets: dict[tuple, tuple[Any, Any]] = {}
        for ds, rows, what in ((train, train_rows, "training"), (valid, valid_rows, "validation")):
            if ds is not None and rows is None and ds.features is None:
                raise SchemaError(f"the {what} data was read without its feature columns")
            if ds is not None and rows is not None and len(rows) != ds.n_rows:
                raise ValueError(f"{what} features: {len(rows)} rows for {ds.n_rows} labels")

    def _build(self, ds: Dataset, rows: FeatureRows | None, labels: np.ndarray, bins: dict, reference: Any = None,
               position: np.ndarray | None = None) -> Any:
        import lightgbm

        data = ds.features if rows is None else _sequence(rows)
        extra = {} if position is None else {"position": np.asarray(position, dtype=np.int32)}
        built = lightgbm.Dataset(data, label=labels, group=sizes(ds.offsets), feature_name=list(ds.feature_names),
                                 params=dict(bins), reference=reference, free_raw_data=True, **extra).construct()
        release = getattr(rows, "release", None)
        if release is not None:  # a Parquet reader's decoded row group is no longer needed
            release()
        release_free_memory()  # the binning's freed memory, before training allocates its own (rankcli.runtime.memory)
        self.constructions += 1
        return built

    def lightgbm_sets(self, params: dict[str, Any], labels: np.ndarray) -> tuple[Any, Any]:
        """The LightGBM (training, validation or ``None``) Datasets for a training with ``params``, built on the
        first call with their binning (:func:`binning_key`) and kept; the training labels become ``labels`` (what
        LightGBM sees; the validation set's are zeros, rankcli scores validation itself)."""
        key = binning_key(params)
        if key not in self._sets:
            bins = binning_params(params)
            train_set = self._build(self.train, self.train_rows, labels, bins, position=self.position)
            valid_set = None
            if self.valid is not None:
                valid_set = self._build(self.valid, self.valid_rows, np.zeros(self.valid.n_rows, dtype=np.float32),
                                        bins, reference=train_set)
            self._sets[key] = (train_set, valid_set)
        train_set, valid_set = self._sets[key]
        train_set.set_label(labels)
        return train_set, valid_set

    def clear(self) -> None:
        """Drop every Dataset built (their memory is freed once no booster refers to them)."""
        self._sets.clear()


def prepare(train: Dataset, valid: Dataset | None = None, *, train_rows: FeatureRows | None = None,
            valid_rows: FeatureRows | None = None, position: np.ndarray | None = None) -> PreparedData:
    """A training split to train many models on, binning it once per distinct binning (:class:`PreparedData`).

    Parameters
    ----------
    train, valid : the training set and the validation set (``None``: every tree is trained and kept).
    train_rows, valid_rows : their features read by row (a Parquet file's
        :class:`~rankcli.formats.feature_rows.ParquetFeatureRows`, or :class:`MatrixRows`); ``None``: the datasets'
        ``features`` matrices.
    position : each training row's displayed position (``lambdamart`` with LightGBM's position-bias model).
    """
    return PreparedData(train, valid, train_rows=train_rows, valid_rows=valid_rows, position=position)


def predict_rows(booster: Any, rows: FeatureRows, num_iteration: int | None = None,
                 batch_rows: int = SEQUENCE_BATCH_ROWS) -> np.ndarray:
    """``booster``'s float64 scores of the feature rows ``rows``, ``batch_rows`` rows at a time (the same scores as
    one call on the whole matrix: each row is scored alone)."""
    n = len(rows)
    out = np.empty(n, dtype=np.float64)
    for at in range(0, n, max(1, int(batch_rows))):
        out[at:at + batch_rows] = booster.predict(rows[at:at + batch_rows], num_iteration=num_iteration)
    return out
