"""The model artifact: a model directory (LightGBM's ``model.txt`` and ``rankcli.json``) written atomically, read back
and checked before LightGBM parses it, and the trained model in memory.
"""

from __future__ import annotations

import hashlib
import json
import math
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rankcli import __version__
from rankcli.core import losses as core_losses
from rankcli.core.normalize import Normalization
from rankcli.dataset import Dataset
from rankcli.dataset.feature_transform import FOOTER_KEY, conform, pending, recorded
from rankcli.errors import InputError, SchemaError
from rankcli.formats.atomic import atomic_directory
from rankcli.runtime.cpus import default_threads
from rankcli.train.config import TrainConfig

MODEL_FILE = "model.txt"
INFO_FILE = "rankcli.json"
#: The largest rankcli.json read (a validation curve of a million trees is about 20 MB).
INFO_MAX_BYTES = 64 << 20


@dataclass
class TrainResult:
    """A trained model in memory, with what ``rankcli.json`` records about its training."""

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


def feature_difference(expected: list[str], got: list[str]) -> str | None:
    """A human description of how the feature columns ``got`` differ from ``expected``, or ``None`` when equal."""
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


# ----------------------------------------------------------------------------------------------------- artifact
def file_sha256(path: Path | str) -> str:
    """The SHA-256 of the file at ``path``, hexadecimal (read in 1 MiB blocks)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def lightgbm_resolved_params(booster: Any) -> dict[str, Any]:
    """Every parameter as LightGBM resolved it for ``booster`` (the ``parameters:`` section of its text model),
    numbers parsed."""
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
    """The content of ``rankcli.json`` for a trained model.

    Parameters
    ----------
    result : what :func:`rankcli.train.training.train_model` returned.
    config : the configuration it was trained with.
    train_path, valid_path : the data files (their SHA-256 is recorded), or ``None``.
    feature_names : the model's feature columns.
    """
    import lightgbm

    loss: dict[str, Any] = {"name": config.loss, "label_grades": config.label_grades}
    if config.loss == "xendcg":
        loss["gamma"] = str(core_losses.parse_gamma(config.gamma))
    if config.resolved_loss_options:  # the loss's own options, every one with the value it trained with
        loss["options"] = config.resolved_loss_options
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
               feature_names: list[str], overwrite: bool = False, extra: dict | None = None) -> dict:
    """Write ``model.txt`` and ``rankcli.json`` atomically into ``model_dir``; returns the ``rankcli.json`` content.

    ``result`` and ``config``: the trained model and its configuration (:func:`model_info`);
    ``train_path``/``valid_path``: the data files (their SHA-256 is recorded); ``feature_names``: the model's
    features; ``overwrite``: replace a model directory rankcli wrote; ``extra``: keys added to ``rankcli.json``
    (``dask`` for a distributed training)."""
    info = model_info(result, config, train_path=train_path, valid_path=valid_path, feature_names=feature_names)
    info.update(extra or {})
    return write_model_dir(model_dir, result.booster.model_to_string(num_iteration=result.best_iteration), info,
                           overwrite=overwrite)


def write_model_dir(model_dir: Path | str, model_text: str, info: dict, *, overwrite: bool = False) -> dict:
    """Write a model directory (``model.txt`` and ``rankcli.json``) atomically, for every way of training.

    ``rankcli.json`` records the SHA-256 of the exact ``model.txt`` bytes (``model_sha256``), which
    :func:`load_model` verifies before LightGBM parses the file. Returns the ``rankcli.json`` content written.

    Parameters
    ----------
    model_dir : the directory to write (new, empty, or a model directory rankcli wrote with ``overwrite``).
    model_text : LightGBM's text model.
    info : the ``rankcli.json`` content (:func:`model_info`).
    overwrite : replace an existing model directory.
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
    "normalize": (False, lambda v: v is None or isinstance(v, dict), "an object or null"),
    "engine_features": (False, _list_of(_is_str), "a list of feature names (strings)"),
    "feature_dtype": (False, lambda v: v in ("float32", "float64"), "\"float32\" or \"float64\""),
}
LOSS_SCHEMA: dict[str, tuple[bool, Callable[[Any], bool], str]] = {
    "name": (True, _is_str, "a string"),
    "label_grades": (False, lambda v: isinstance(v, bool), "true or false"),
    "gamma": (False, _is_str, "a string"),
    "options": (False, lambda v: isinstance(v, dict), "an object"),
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
    """``info`` (a parsed ``rankcli.json``) checked: an object, a ``format`` this version reads, every known key of
    the right type; ``where`` names the file in messages (:class:`InputError`). Returns ``info``."""
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
    """A model directory loaded for prediction.

    Parameters
    ----------
    booster : the ``lightgbm.Booster``.
    info : its ``rankcli.json``.
    path : the model directory (for messages), or ``None``.
    """

    def __init__(self, booster: Any, info: dict, path: Path | None = None):
        self.booster = booster
        self.info = info
        self.path = path
        self.feature_names: list[str] = list(info.get("features") or booster.feature_name())
        where = f"{path / INFO_FILE}" if path is not None else INFO_FILE
        #: The transform of the training data's features (None: raw), applied to raw data before scoring.
        self.normalization = None if info.get(FOOTER_KEY) is None else \
            Normalization.from_dict(info[FOOTER_KEY], f"{where}: key {FOOTER_KEY!r}")

    def check_features(self, feature_names: list[str], what: str = "data") -> None:
        """:class:`SchemaError` when ``feature_names`` differ from the model's; ``what`` names the data."""
        diff = feature_difference(self.feature_names, feature_names)
        if diff:
            raise SchemaError(f"{what}: feature columns do not match the model's: {diff}")

    def model_features(self, ds: Dataset, what: str = "data") -> np.ndarray:
        """The feature matrix of ``ds`` as the model was trained on it: :class:`SchemaError` when its feature columns
        differ from the model's, and the model's normalisation applied to raw data
        (:func:`rankcli.dataset.feature_transform.conform`: data already normalised the same way is used as it is,
        data normalised otherwise refused)."""
        self.check_features(ds.feature_names, what)
        if ds.features is None:
            raise SchemaError(f"{what}: read without its feature columns")
        return conform(ds, self.normalization, what).features

    def input_transform(self, metadata: dict, what: str = "data") -> Normalization | None:
        """The transform still to apply to the features of a file whose footer metadata is ``metadata`` (None:
        nothing), for scoring it batch by batch of whole queries with :func:`rankcli.dataset.feature_transform.apply`;
        decided once per file as :meth:`model_features` decides it (an :class:`InputError` for data normalised another
        way)."""
        return pending(recorded(metadata, what), self.normalization, what)

    def predict(self, ds: Dataset, what: str = "data") -> np.ndarray:
        """Float64 scores of ``ds``, one per row (its features as :meth:`model_features` gives them); ``what`` names
        the data in messages."""
        return self.score(self.model_features(ds, what), what)

    def score(self, features: np.ndarray, what: str = "data", first_row: int = 0) -> np.ndarray:
        """Float64 scores of a feature matrix already in the model's columns and transform (:meth:`model_features`,
        or :meth:`input_transform` batch by batch), one per row; a non-finite score is an :class:`InputError` naming
        the row (``first_row`` is the row number of the first row in ``what``): a damaged model."""
        if features.shape[0] == 0:
            return np.zeros(0)
        # LightGBM's default is every core of the node; use the CPUs this process may use (rankcli.runtime.cpus)
        scores = np.asarray(self.booster.predict(features, num_threads=default_threads()), dtype=np.float64)
        bad = ~np.isfinite(scores)
        if bad.any():
            # trees hold finite leaf values: an inf or NaN score means a damaged model.txt (a model without the
            # checksum is checked only for its structure), and predict wrote the infs, eval --model ranked by them
            row = int(np.flatnonzero(bad)[0])
            where = self.path / MODEL_FILE if self.path is not None else "the model"
            raise InputError(f"{where}: scores {what} row {first_row + row} as {scores[row]} ({int(bad.sum())} rows "
                             "not finite); the model file holds a value that is not a number: restore it or retrain")
        return scores


def booster_from_text(text: str):
    """A ``lightgbm.Booster`` parsed from LightGBM's model text, for a library that builds a model from part of a
    loaded one (explain's models of the trees that read a feature group) without importing LightGBM itself."""
    import lightgbm

    return lightgbm.Booster(model_str=text)


def load_model(model_dir: Path | str) -> TrainedModel:
    """Load the model directory ``model_dir`` for prediction (``predict``, ``eval --model``, ``simulate-clicks
    --ranker``).

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
