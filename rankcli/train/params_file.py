"""Parameter files: the best parameters ``rankcli tune`` found, or hand-written ones, read by ``train --params-file``
and ``experiment --params-file``.

A parameter file is JSON, in one of two shapes::

    {"format": "rankcli-params/1", "losses": {"xendcg": {"params": {"learning_rate": 0.03, "gamma": "mean"}}}}
    {"params": {"learning_rate": 0.03, "lambda_l2": 1.0}}

The first is what ``rankcli tune`` writes (``DIR/best.json`` for every loss it tuned, ``DIR/<loss>/best.json`` for
one); its entry for the loss being trained applies. The second applies to whatever loss is trained. A tune output
directory may be given for its ``best.json``.

A parameter is either a field of :class:`~rankcli.train.TrainConfig` (:data:`FIELD_PARAMS`: ``learning_rate``,
``num_leaves``, ``min_data_in_leaf``, XE-NDCG's ``gamma``), one of the loss's own options (``--loss-option``:
``TrainConfig.loss_options``), or a LightGBM parameter, checked as ``--param`` checks
it. Precedence, highest first: an option given on the command line, ``--param``, the file, ``--preset``, rankcli's
defaults (:func:`apply_params`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rankcli.errors import InputError, UsageError
from rankcli.train.loss_options import meaningful
from rankcli.train.losses import LOSSES
from rankcli.train.params import check_params

PARAMS_FORMAT = "rankcli-params/1"
#: The file a tune output directory holds the best parameters of every loss in.
BEST_FILE = "best.json"
#: Parameters that set a field of TrainConfig (an option of ``train``) rather than a LightGBM parameter.
FIELD_PARAMS = ("learning_rate", "num_leaves", "min_data_in_leaf", "gamma")
_INTEGER_FIELDS = ("num_leaves", "min_data_in_leaf")
#: The largest parameter file read (a tune result is a few kilobytes).
MAX_BYTES = 1 << 20


@dataclass(frozen=True)
class ParamsFile:
    """A parameter file read: its path, SHA-256, the parameters for any loss (``generic``) and per loss."""

    path: str
    sha256: str
    generic: dict[str, Any] | None
    losses: dict[str, dict[str, Any]]

    def params_for(self, loss: str) -> dict[str, Any]:
        """The parameters the file gives ``loss``; :class:`UsageError` when it gives it none."""
        if loss in self.losses:
            return dict(self.losses[loss])
        if self.generic is not None:
            return dict(self.generic)
        raise UsageError(f"--params-file {self.path}: has parameters for {', '.join(self.losses) or 'no loss'}, not "
                         f"for --loss {loss}; tune that loss too (rankcli tune ... --loss {loss}) or give its file")

    def record(self, loss: str) -> dict[str, Any]:
        """What ``rankcli.json`` and ``config.json`` record of the file for ``loss``: its path, SHA-256 and the
        parameters it gave."""
        return {"path": self.path, "sha256": self.sha256, "params": self.params_for(loss)}


def _check_entry(params: Any, where: str) -> dict[str, Any]:
    if not isinstance(params, dict):
        raise InputError(f"{where}: expected an object of parameters, got {type(params).__name__}")
    for key, value in params.items():
        if not isinstance(value, (int, float, str, bool)):
            raise InputError(f"{where}: parameter {key!r} must be a number, a word or true/false, got "
                             f"{json.dumps(value)[:40]}")
    return params


def read_params_file(path: Path | str) -> ParamsFile:
    """Read a parameter file (or a tune output directory's ``best.json``); :class:`InputError` naming the file when it
    is not one. The parameters are checked when applied (:func:`apply_params`)."""
    path = Path(path)
    if path.is_dir():
        path = path / BEST_FILE
    try:
        data = path.read_bytes() if path.is_file() else None
    except OSError as exc:
        raise InputError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if data is None:
        raise InputError(f"{path}: no such file (a parameter file, or a rankcli tune output directory)")
    if len(data) > MAX_BYTES:
        raise InputError(f"{path}: {len(data):,} bytes, more than a parameter file can be (at most {MAX_BYTES:,})")
    try:
        doc = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise InputError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or ("params" not in doc and "losses" not in doc):
        raise InputError(f"{path}: not a parameter file: expected a JSON object with \"params\" or \"losses\" (as "
                         "rankcli tune writes in best.json)")
    fmt = doc.get("format", PARAMS_FORMAT)
    if fmt != PARAMS_FORMAT:
        raise InputError(f"{path}: unknown format {str(fmt)[:40]!r} (this rankcli reads {PARAMS_FORMAT})")
    generic = _check_entry(doc["params"], f"{path}: params") if "params" in doc else None
    losses = doc.get("losses", {})
    if not isinstance(losses, dict):
        raise InputError(f"{path}: \"losses\" must be an object (loss -> entry), got {type(losses).__name__}")
    per_loss = {}
    for loss, entry in losses.items():
        if not isinstance(entry, dict) or "params" not in entry:
            raise InputError(f"{path}: losses.{loss} must be an object with \"params\"")
        per_loss[str(loss)] = _check_entry(entry["params"], f"{path}: losses.{loss}.params")
    return ParamsFile(str(path), hashlib.sha256(data).hexdigest(), generic, per_loss)


def _field_value(name: str, value: Any, where: str) -> Any:
    if name == "gamma":
        return str(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(f"{where}: {name} must be a number, got {value!r}")
    if name in _INTEGER_FIELDS:
        if float(value) != int(value):
            raise UsageError(f"{where}: {name} must be a whole number, got {value!r}")
        return int(value)
    return float(value)


def apply_params(config: Any, params: dict[str, Any], *, explicit: Iterable[str] = (), where: str = "--params-file"):
    """``config`` (a :class:`~rankcli.train.TrainConfig`) with ``params`` applied below its explicit options and
    ``--param``: a field of :data:`FIELD_PARAMS` is set unless it is in ``explicit`` (given on the command line);
    a LightGBM parameter is added to ``config.params`` unless ``--param`` set it there. The result is checked
    (:class:`UsageError` naming ``where`` for a parameter that ``--param`` could not set either).

    Parameters
    ----------
    config : the configuration the command line describes (``config.params`` holds ``--param``).
    params : name -> value (a parameter file's entry, or a tuning trial's parameters).
    explicit : the :data:`FIELD_PARAMS` given as options (they win over the file).
    where : how messages name the source of ``params``.
    """
    explicit = set(explicit)
    fields = {k: _field_value(k, v, where) for k, v in params.items() if k in FIELD_PARAMS and k not in explicit}
    # the loss's own options (--loss-option) go to loss_options, below the ones given
    record = LOSSES[config.loss]
    own = {o.name for o in record.options}
    options = {k: v for k, v in params.items() if k in own and k not in config.loss_options}
    if options:
        values = {**record.resolve_options(), **options, **config.loss_options}
        options = meaningful(record.options, values, options)
        try:
            record.resolve_options({**options, **config.loss_options})
        except UsageError as exc:
            raise UsageError(f"{where}: {exc}") from None
        fields["loss_options"] = {**options, **config.loss_options}
    lightgbm = {k: v for k, v in params.items() if k not in FIELD_PARAMS and k not in own}
    if lightgbm:
        from rankcli.runtime.startup import import_lightgbm_lean

        import_lightgbm_lean()  # the parameter table comes from LightGBM's library
        try:
            lightgbm = check_params(lightgbm)
        except UsageError as exc:
            raise UsageError(f"{where}: {str(exc).removeprefix('--param ')}") from None
    merged = {**{k: v for k, v in lightgbm.items() if k not in config.params}, **config.params}
    return dataclasses.replace(config, **fields, params=merged)
