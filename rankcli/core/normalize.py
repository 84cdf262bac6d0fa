"""Feature normalisation as RankLib defines it (``-norm zscore|linear|sum``), per query or over a whole dataset.

One function applies a transform, :func:`normalize`; it works batch by batch: per-query normalisation needs batches
of whole queries (each query's statistics are its own rows'), per-dataset normalisation takes recorded statistics
(:class:`Normalization` ``.stats``, gathered once by :class:`DatasetStats`) and any rows.

Formulas, per feature column ``x`` over a group ``G`` (one query's rows, or every row of the dataset), on the finite
values of ``x`` in ``G`` (``n`` of them; NaN, LightGBM's missing value, and infinities are left as they are and take
no part in the statistics). Computed in float64 from the float32 features and rounded to float32 once (float64
features, ``convert --float64``, stay float64).

``zscore`` (RankLib's ``ZScoreNormalizor``)
    ``mean = sum(x) / n``, ``std = sqrt(sum((x - mean)^2) / (n - 1))`` (the sample standard deviation, as RankLib
    divides by ``n - 1``); ``x' = (x - mean) / std`` when ``std > 0``, else ``x`` is left unchanged (RankLib's rule
    for a constant feature; a single document, ``n = 1``, is left unchanged too: RankLib's ``0 / 0`` is NaN, which
    fails its ``std > 0``).
``minmax`` (RankLib's ``LinearNormalizer``, ``-norm linear``)
    ``x' = (x - min) / (max - min)`` when ``max > min``, else ``x' = 0`` (RankLib's rule). RankLib starts its running
    maximum at ``Float.MIN_VALUE``, the smallest *positive* float, so a feature whose values in a query are all
    negative gets a wrong maximum there; rankcli uses the true maximum. RankLib computes this one in float32
    arithmetic; rankcli in float64, rounded once (the results can differ in the last float32 bit).
``sum`` (RankLib's ``SumNormalizor``)
    ``x' = x / sum(|x|)`` when ``sum(|x|) > 0``, else ``x`` is left unchanged (it is all zeros then).

``per="query"`` is RankLib's (it normalises each ranked list on its own); ``per="dataset"`` applies the same formula
with the statistics of a whole dataset (the training data's, recorded with the model), so that documents of different
queries stay comparable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from rankcli.errors import InputError, UsageError

METHODS = ("zscore", "minmax", "sum")
SCOPES = ("query", "dataset")
#: The statistics a per-dataset transform records, per method (one number per feature each).
STAT_NAMES = {"zscore": ("mean", "std"), "minmax": ("min", "max"), "sum": ("abs_sum",)}
# Bytes of float64 temporaries one column block may use (the columns are normalised a block at a time).
_BLOCK_BYTES = 32 << 20


@dataclass(frozen=True)
class Normalization:
    """A feature transform: ``method`` (:data:`METHODS`) ``per`` query or dataset (:data:`SCOPES`); a per-dataset
    transform carries its ``stats``: name -> one float per feature (:data:`STAT_NAMES`)."""

    method: str
    per: str
    stats: dict = field(default=None, compare=True, hash=False)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise UsageError(f"unknown normalisation {self.method!r}; choose one of {', '.join(METHODS)}")
        if self.per not in SCOPES:
            raise UsageError(f"normalisation per {self.per!r}: choose one of {', '.join(SCOPES)}")

    @property
    def n_features(self) -> int | None:
        """The number of features the recorded statistics cover (None per query)."""
        if self.stats is None:
            return None
        return len(self.stats[STAT_NAMES[self.method][0]])

    def describe(self) -> str:
        """``zscore per query`` / ``minmax per dataset``."""
        return f"{self.method} per {self.per}"

    def as_dict(self) -> dict:
        """The JSON form recorded in a Parquet footer and in ``rankcli.json``."""
        out: dict = {"method": self.method, "per": self.per}
        if self.stats is not None:
            out["stats"] = {k: [float(v) for v in vals] for k, vals in self.stats.items()}
        return out

    @classmethod
    def from_dict(cls, obj, where: str) -> Normalization:
        """The transform a footer or ``rankcli.json`` records; anything malformed is an :class:`InputError` naming
        ``where``."""
        if not isinstance(obj, dict) or obj.get("method") not in METHODS or obj.get("per") not in SCOPES:
            raise InputError(f"{where}: not a feature normalisation (expected {{\"method\": "
                             f"{'|'.join(METHODS)}, \"per\": query|dataset, ...}}), got {str(obj)[:80]!r}")
        method, per, stats = obj["method"], obj["per"], obj.get("stats")
        if per == "query":
            if stats is not None:
                raise InputError(f"{where}: a per-query normalisation records no statistics")
            return cls(method, per)
        names = STAT_NAMES[method]
        ok = isinstance(stats, dict) and set(stats) == set(names) and all(
            isinstance(stats[k], list) and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                               and math.isfinite(v) for v in stats[k]) for k in names)
        if not ok or len({len(stats[k]) for k in names}) != 1:
            raise InputError(f"{where}: a {method} normalisation per dataset records {', '.join(names)}: one finite "
                             "number per feature each")
        return cls(method, per, {k: tuple(float(v) for v in stats[k]) for k in names})


def _center_scale(method: str, stats: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``(center, scale)`` of the formula ``(x - center) / scale``, from a method's statistics."""
    if method == "zscore":
        return stats["mean"], stats["std"]
    if method == "minmax":
        return stats["min"], stats["max"] - stats["min"]
    return np.zeros_like(stats["abs_sum"]), stats["abs_sum"]


def _group_stats(x: np.ndarray, finite: np.ndarray, offsets: np.ndarray, method: str) -> dict[str, np.ndarray]:
    """Each query's statistics of the columns of ``x`` (rows, k), float64: ``(n_queries, k)`` arrays."""
    starts = offsets[:-1]
    sizes = np.diff(offsets)
    if method == "minmax":
        return {"min": np.minimum.reduceat(np.where(finite, x, np.inf), starts, axis=0),
                "max": np.maximum.reduceat(np.where(finite, x, -np.inf), starts, axis=0)}
    if method == "sum":
        return {"abs_sum": np.add.reduceat(np.where(finite, np.abs(x), 0.0), starts, axis=0)}
    count = np.add.reduceat(finite, starts, axis=0, dtype=np.float64)
    mean = np.add.reduceat(np.where(finite, x, 0.0), starts, axis=0) / np.maximum(count, 1.0)
    dev = np.where(finite, x - np.repeat(mean, sizes, axis=0), 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        std = np.sqrt(np.add.reduceat(dev * dev, starts, axis=0) / (count - 1.0))
    return {"mean": mean, "std": np.where(count > 1, std, 0.0)}


def _apply(x: np.ndarray, finite: np.ndarray, center: np.ndarray, scale: np.ndarray, method: str) -> np.ndarray:
    """``(x - center) / scale`` where the scale is positive; elsewhere RankLib's rule (0 for minmax, else x)."""
    usable = scale > 0
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        out = np.where(usable, (x - center) / np.where(usable, scale, 1.0), 0.0 if method == "minmax" else x)
    return np.where(finite, out, x)  # NaN (missing) and infinities stay as they were


def _column_blocks(rows: int, columns: int):
    width = max(1, min(columns, _BLOCK_BYTES // max(1, rows * 8 * 4)))
    for a in range(0, columns, width):
        yield a, min(columns, a + width)


def normalize(features: np.ndarray, offsets: np.ndarray, transform: Normalization, *,
              feature_names: list[str] | None = None) -> np.ndarray:
    """``features`` normalised by ``transform``: a new ``(rows, features)`` array in Fortran order, float32 (float64
    for float64 features: their precision is kept).

    Parameters
    ----------
    features : (rows, n_features) float32 or float64
        The raw features of whole queries (per query) or of any rows (per dataset).
    offsets : (n_queries + 1,) int64
        The batch's query boundaries (read per query only).
    transform : Normalization
        The method, the scope and, per dataset, the recorded statistics (one per feature of ``features``).
    feature_names : list of str, optional
        How messages name the columns (default ``f1..fN``).

    A finite value that the transform takes beyond float32 (a value far outside the recorded range) is an
    :class:`InputError` for float32 features: rankcli never hands a silent infinity to a model.
    """
    features = np.asarray(features)
    rows, width = features.shape
    names = feature_names or [f"f{j + 1}" for j in range(width)]
    if transform.per == "dataset" and transform.n_features != width:
        raise InputError(f"the {transform.describe()} statistics cover {transform.n_features} features, the data "
                         f"has {width}")
    out = np.empty((rows, width), dtype=np.float64 if features.dtype == np.float64 else np.float32, order="F")
    if rows == 0:
        return out
    sizes = np.diff(offsets)
    for a, b in _column_blocks(rows, width):
        x = features[:, a:b].astype(np.float64)
        finite = np.isfinite(x)
        if transform.per == "query":
            stats = _group_stats(x, finite, offsets, transform.method)
            center, scale = (np.repeat(v, sizes, axis=0) for v in _center_scale(transform.method, stats))
        else:
            stats = {k: np.asarray(v[a:b], dtype=np.float64)[None, :] for k, v in transform.stats.items()}
            center, scale = _center_scale(transform.method, stats)
        y = _apply(x, finite, center, scale, transform.method)
        with np.errstate(over="ignore"):
            out[:, a:b] = y
        bad = finite & ~np.isfinite(out[:, a:b])
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise InputError(f"{names[a + c]} row {r}: the value {features[r, a + c]!r} normalised "
                             f"({transform.describe()}) is beyond the float32 range")
    return out


def normalize_values(values: np.ndarray, columns: np.ndarray, transform: Normalization) -> np.ndarray:
    """``values[i]`` (of feature column ``columns[i]``) as :func:`normalize` transforms it with the per-dataset
    ``transform``: the same formula and rounding, one value at a time (an export folds the transform into split
    thresholds with it). ``values`` may be float32 or float64 (computed in float64 and rounded to float32 once, as
    :func:`normalize` does); a value transformed beyond the float32 range becomes infinite here instead of an error."""
    if transform.per != "dataset":
        raise UsageError(f"{transform.describe()}: only a per-dataset transform applies value by value")
    x = np.asarray(values).astype(np.float64)
    columns = np.asarray(columns, dtype=np.int64)
    stats = {k: np.asarray(v, dtype=np.float64)[columns] for k, v in transform.stats.items()}
    center, scale = _center_scale(transform.method, stats)
    with np.errstate(over="ignore"):
        return _apply(x, np.isfinite(x), center, scale, transform.method).astype(np.float32)


class DatasetStats:
    """The per-dataset statistics of one method, gathered batch by batch (any rows, in any batches).

    Counts, sums of absolute values, minima and maxima add up exactly; means and squared deviations are merged with
    Chan, Golub & LeVeque's pairwise update (1979), which keeps the variance as accurate as a two-pass computation.

    >>> acc = DatasetStats("zscore", 1)
    >>> acc.add(np.array([[1.0], [2.0]], np.float32)); acc.add(np.array([[3.0], [4.0]], np.float32))
    >>> acc.result().stats["std"][0] == np.std([1, 2, 3, 4], ddof=1)
    True
    """

    def __init__(self, method: str, n_features: int):
        if method not in METHODS:
            raise UsageError(f"unknown normalisation {method!r}; choose one of {', '.join(METHODS)}")
        self.method = method
        self.count = np.zeros(n_features)
        self.mean = np.zeros(n_features)
        self.m2 = np.zeros(n_features)
        self.lo = np.full(n_features, np.inf)
        self.hi = np.full(n_features, -np.inf)
        self.abs_sum = np.zeros(n_features)

    def add(self, features: np.ndarray) -> None:
        """Take the rows ``features`` (rows, n_features) into the statistics."""
        for a, b in _column_blocks(features.shape[0], features.shape[1]):
            x = features[:, a:b].astype(np.float64)
            finite = np.isfinite(x)
            if self.method == "minmax":
                self.lo[a:b] = np.minimum(self.lo[a:b], np.where(finite, x, np.inf).min(axis=0, initial=np.inf))
                self.hi[a:b] = np.maximum(self.hi[a:b], np.where(finite, x, -np.inf).max(axis=0, initial=-np.inf))
            elif self.method == "sum":
                self.abs_sum[a:b] += np.where(finite, np.abs(x), 0.0).sum(axis=0)
            else:
                n = finite.sum(axis=0).astype(np.float64)
                mean = np.where(finite, x, 0.0).sum(axis=0) / np.maximum(n, 1.0)
                m2 = (np.where(finite, x - mean, 0.0) ** 2).sum(axis=0)
                total = self.count[a:b] + n
                delta = mean - self.mean[a:b]
                share = np.divide(n, total, out=np.zeros_like(n), where=total > 0)
                self.m2[a:b] += m2 + delta * delta * self.count[a:b] * share
                self.mean[a:b] += delta * share
                self.count[a:b] = total

    def result(self) -> Normalization:
        """The per-dataset :class:`Normalization` of the rows added (a feature without a finite value gets the
        statistics that leave it unchanged)."""
        if self.method == "minmax":
            empty = self.lo > self.hi
            stats = {"min": np.where(empty, 0.0, self.lo), "max": np.where(empty, 0.0, self.hi)}
        elif self.method == "sum":
            stats = {"abs_sum": self.abs_sum}
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                std = np.sqrt(self.m2 / (self.count - 1.0))
            stats = {"mean": self.mean, "std": np.where(self.count > 1, std, 0.0)}
        return Normalization(self.method, "dataset", {k: tuple(float(v) for v in vals) for k, vals in stats.items()})
