"""The search space of ``rankcli tune``, declared in one place: the ranges every loss shares (:data:`GENERAL`), each
loss's own parameters (``search`` of its record in :mod:`rankcli.train.losses`), and a ``--space`` file that
narrows, widens, fixes or adds dimensions.

The defaults follow published LightGBM ranking practice: a log-scaled learning rate around LightGBM's and the
paper's (0.05; 0.02 in the paper presets), leaves from 8 to 512 (the paper presets use 200 and 400), at least 5 to
200 documents per leaf, L2 regularisation from none to 10 in decades, and feature subsampling down to half. Each
range holds ``rankcli train``'s value (under ``--preset``, the preset's), so trial 0 can be exactly ``train``'s
model. Binning parameters (``max_bin`` and the like) stay out of the default space: changing them rebuilds the
binned dataset, and a ``--space`` file that adds them pays for that.

A space file is TOML (Python 3.11+, or ``tomli`` installed on 3.10) or JSON; each entry names a parameter::

    [num_leaves]            # narrow (or widen) a range
    low = 16
    high = 128
    [feature_fraction]      # fix a parameter
    value = 0.8
    [bagging_fraction]      # add one: its default is what train uses (LightGBM's own default)
    low = 0.5
    high = 1.0
    default = 1.0
    [xendcg.gamma]          # a table named after a loss applies to that loss only
    choices = ["uniform", "mean", "fixed:0.5"]

An entry naming a loss's own parameter (``gamma``, ``sigmoid``, ...) at the top level applies to the losses that have
it; any other top-level entry applies to every loss. The file's form (a table per parameter, known keys, numbers for
bounds) is checked as input (exit 3); values no search can take (not finite, bounds out of order, a log scale at or
below 0) are usage errors (exit 2), as ``--param``'s are.

Two kinds of a loss's own parameters are special: one that only rescales the model under Newton boosting is left out
of the default space (:func:`rescale_only`; a space file naming it searches it), and one that means something only
with another's value (LambdaLoss's ``mu``, with ``ndcg-loss2++``) is drawn only in the trials that have that value
(:attr:`Dimension.only_with`, from its record's ``only_with``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rankcli.errors import InputError, UsageError
from rankcli.runtime.compat import lightgbm_parameter_aliases

#: The dimensions every loss searches: name -> range and LightGBM's (or rankcli's) default.
GENERAL: dict[str, dict[str, Any]] = {
    "learning_rate": {"low": 0.01, "high": 0.2, "log": True, "default": 0.05},
    "num_leaves": {"low": 8, "high": 512, "log": True, "int": True, "default": 31},
    "min_data_in_leaf": {"low": 5, "high": 200, "log": True, "int": True, "default": 20},
    # a log scale cannot hold LightGBM's default of 0: decades, with 0 among them
    "lambda_l2": {"choices": [0.0, 0.01, 0.1, 1.0, 10.0], "default": 0.0},
    "feature_fraction": {"low": 0.5, "high": 1.0, "default": 1.0},
}
#: Parameters that decide the binned dataset: never searched by default (a space that adds them rebuilds it).
BINNING = ("max_bin", "max_bin_by_feature", "min_data_in_bin", "bin_construct_sample_cnt", "use_missing",
           "zero_as_missing", "feature_pre_filter", "linear_tree")
_KEYS = {"low", "high", "log", "int", "choices", "value", "default"}


@dataclass(frozen=True)
class Dimension:
    """One searched (or fixed) parameter.

    Attributes
    ----------
    name : a field of TrainConfig (``learning_rate``, ``num_leaves``, ``min_data_in_leaf``, ``gamma``) or a
        LightGBM parameter.
    default : what ``rankcli train`` uses (trial 0's value).
    low, high, log, integer : a numeric range (inclusive), log-scaled or not, of integers or not.
    choices : the values of a categorical dimension (instead of a range).
    value : a fixed value: not searched, every trial uses it.
    only_with : ``(other dimension, value)``: the dimension is drawn only in trials where the other has that value
        (LambdaLoss's ``mu`` weighs a term of ``ndcg-loss2++`` only); ``None``: always.
    """

    name: str
    default: Any
    low: float | None = None
    high: float | None = None
    log: bool = False
    integer: bool = False
    choices: tuple | None = None
    value: Any = None
    only_with: tuple[str, Any] | None = None

    def applies(self, values: dict[str, Any]) -> bool:
        """Whether a trial whose earlier parameters are ``values`` draws this dimension (see :attr:`only_with`)."""
        return self.only_with is None or values.get(self.only_with[0]) == self.only_with[1]

    @property
    def fixed(self) -> bool:
        """Whether every trial uses one value (:attr:`value`)."""
        return self.value is not None

    def contains(self, x: Any) -> bool:
        """Whether ``x`` is a value of the dimension."""
        if self.fixed:
            return x == self.value
        if self.choices is not None:
            return x in self.choices
        return self.low <= x <= self.high

    def clip(self, x: Any) -> Any:
        """``x`` if the dimension holds it, else the nearest value it holds."""
        if self.contains(x):
            return x
        if self.fixed:
            return self.value
        if self.choices is not None:
            numeric = [c for c in self.choices if isinstance(c, (int, float)) and not isinstance(c, bool)]
            if numeric and isinstance(x, (int, float)):
                return min(numeric, key=lambda c: abs(c - x))
            return self.choices[0]
        return min(max(x, self.low), self.high)

    def suggest(self, trial: Any) -> Any:
        """The value Optuna's ``trial`` suggests (the fixed value, without asking it)."""
        if self.fixed:
            return self.value
        if self.choices is not None:
            return trial.suggest_categorical(self.name, list(self.choices))
        if self.integer:
            return trial.suggest_int(self.name, int(self.low), int(self.high), log=self.log)
        return trial.suggest_float(self.name, float(self.low), float(self.high), log=self.log)

    def describe(self) -> dict[str, Any]:
        """The dimension as JSON (the study's identity, the reports)."""
        if self.fixed:
            return {"value": self.value}
        when = {} if self.only_with is None else {"only_with": list(self.only_with)}
        if self.choices is not None:
            return {"choices": list(self.choices), "default": self.default, **when}
        return {"low": self.low, "high": self.high, "log": self.log, "int": self.integer, "default": self.default,
                **when}


@dataclass(frozen=True)
class Space:
    """One loss's search space: its dimensions in a fixed order, and trial 0's parameters."""

    loss: str
    dimensions: tuple[Dimension, ...]
    clipped: tuple[str, ...] = field(default=())  # defaults outside a narrowed range, moved into it for trial 0

    @property
    def searched(self) -> list[Dimension]:
        """The dimensions Optuna samples."""
        return [d for d in self.dimensions if not d.fixed]

    @property
    def fixed(self) -> dict[str, Any]:
        """The fixed dimensions' values."""
        return {d.name: d.value for d in self.dimensions if d.fixed}

    def defaults(self) -> dict[str, Any]:
        """Trial 0's parameters: ``train``'s values (clipped into a range that excludes them, see :attr:`clipped`),
        each conditional one where its condition holds."""
        values: dict[str, Any] = {}
        for d in self.dimensions:
            if d.applies(values):
                values[d.name] = d.value if d.fixed else d.clip(d.default)
        return {d.name: values[d.name] for d in self.searched if d.name in values}

    def suggest(self, trial: Any) -> dict[str, Any]:
        """Every parameter of one trial: Optuna's suggestions and the fixed values (a conditional dimension only
        where its condition holds)."""
        values: dict[str, Any] = {}
        for d in self.dimensions:
            if d.applies(values):
                values[d.name] = d.suggest(trial)
        return values

    def identity(self) -> list[dict[str, Any]]:
        """The space as JSON, for the study's identity (a rerun with another space is refused)."""
        return [{"name": d.name, **d.describe()} for d in self.dimensions]


# ------------------------------------------------------------------------------------------------- the space file
def _toml_module():
    """The TOML reader: the standard library's ``tomllib`` (Python 3.11+), else ``tomli`` (its origin, the tune
    extra's on 3.10), else ``None``."""
    try:
        import tomllib
    except ImportError:
        try:
            import tomli as tomllib
        except ImportError:
            return None
    return tomllib


def _read_toml(path: Path, data: bytes) -> dict:
    tomllib = _toml_module()
    if tomllib is None:
        raise UsageError(f"--space {path}: TOML needs Python 3.11 or the tomli package (pip install tomli); or "
                         "write the space as JSON (a .json file)")
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not valid TOML ({exc})") from None


def read_space_file(path: Path | str) -> dict[str, Any]:
    """A ``--space`` file (``.toml`` or ``.json``) as a dictionary of entries (checked by :func:`loss_space`)."""
    path = Path(path)
    if path.suffix.lower() not in (".toml", ".json"):
        raise UsageError(f"--space {path}: give a .toml or .json file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if path.suffix.lower() == ".toml":
        doc = _read_toml(path, data)
    else:
        try:
            doc = json.loads(data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise InputError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise InputError(f"{path}: expected a table of parameters, got {type(doc).__name__}")
    return {"path": str(path), "entries": doc}


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _check_finite(name: str, entry: dict, where: str) -> None:
    """A non-finite number anywhere in an entry (TOML's ``inf``/``nan``, JSON's ``Infinity``/``NaN``) is a usage
    error: no search range, fixed value, choice or default can hold one."""
    for key, v in entry.items():
        for x in v if isinstance(v, list) else [v]:
            if isinstance(x, float) and not math.isfinite(x):
                raise UsageError(f"--space {where}: {name}: {key} must be a finite number, got {x!r}")


def _check_range(name: str, low: Any, high: Any, log: bool, integer: bool, where: str) -> None:
    """A range that no search can take is a usage error: bounds out of order, a log scale reaching 0 or below (its
    logarithm does not exist), fractional bounds of an integer range."""
    if low >= high:
        raise UsageError(f"--space {where}: {name}: low must be a number below high, got low={low!r}, high={high!r}")
    if log and low <= 0:
        raise UsageError(f"--space {where}: {name}: a log scale needs low > 0, got low={low!r}")
    if integer and (low != int(low) or high != int(high)):
        raise UsageError(f"--space {where}: {name}: an integer range needs whole bounds, got low={low!r}, "
                         f"high={high!r}")


def _check_entry(name: str, entry: Any, where: str) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise InputError(f"{where}: {name}: expected a table (low/high, choices or value), got {entry!r}")
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise InputError(f"{where}: {name}: unknown key {unknown[0]!r} (a dimension has low, high, log, int, "
                         "choices, value, default)")
    _check_finite(name, entry, where)
    if "value" in entry:
        if len(set(entry) - {"value", "default"}) or not isinstance(entry["value"], (int, float, str, bool)):
            raise InputError(f"{where}: {name}: a fixed value is a number or a word, alone (got {entry!r})")
        return entry
    if "choices" in entry:
        ch = entry["choices"]
        if not isinstance(ch, list) or not ch or not all(isinstance(c, (int, float, str, bool)) for c in ch) \
                or set(entry) - {"choices", "default"}:
            raise InputError(f"{where}: {name}: choices is a non-empty list of numbers or words, alone (got {entry!r})")
        return entry
    if {"low", "high"} - set(entry):
        raise InputError(f"{where}: {name}: give low and high, choices, or value (got {entry!r})")
    low, high = entry["low"], entry["high"]
    if not (_number(low) and _number(high)):
        raise InputError(f"{where}: {name}: low and high must be numbers, got low={low!r}, high={high!r}")
    _check_range(name, low, high, bool(entry.get("log")), bool(entry.get("int")), where)
    return entry


def _own_parameters() -> dict[str, set[str]]:
    from rankcli.train.losses import LOSSES

    return {name: set(loss.search) for name, loss in LOSSES.items()}


def _entries_for(loss: str, spec: dict | None) -> dict[str, dict]:
    """The entries of a space file that apply to ``loss``: top-level ones (a loss's own parameter only to the losses
    having it), then the loss's own table."""
    if not spec:
        return {}
    from rankcli.train.losses import LOSSES

    where, doc = spec["path"], spec["entries"]
    own = _own_parameters()
    anyone_own = set().union(*own.values())
    out: dict[str, dict] = {}
    for name, entry in doc.items():
        if name in LOSSES:
            continue
        if name in anyone_own and name not in own[loss]:
            continue
        out[name] = _check_entry(name, entry, where)
    table = doc.get(loss, {})
    if not isinstance(table, dict):
        raise InputError(f"{where}: {loss}: expected a table of that loss's parameters, got {table!r}")
    for name, entry in table.items():
        out[name] = _check_entry(name, entry, where)
    return out


def _check_name(name: str, where: str) -> None:
    from rankcli.train.params import check_params
    from rankcli.train.params_file import FIELD_PARAMS

    if name in FIELD_PARAMS:
        return
    from rankcli.runtime.startup import import_lightgbm_lean

    import_lightgbm_lean()
    main = next((m for m, aliases in lightgbm_parameter_aliases().items() if name in aliases), None)
    if main is not None and main != name:
        raise UsageError(f"--space {where}: {name} is LightGBM's alias of {main}: name it {main}")
    try:
        check_params({name: 1})
    except UsageError as exc:
        raise UsageError(f"--space {where}: {str(exc).removeprefix('--param ')}") from None


def _dimension(name: str, declared: dict | None, entry: dict | None, default: Any, where: str,
               only_with: tuple[str, Any] | None = None) -> Dimension:
    merged = {**(declared or {}), **(entry or {})}
    if entry and ("choices" in entry or "value" in entry or ("low" in entry and "choices" in merged)):
        merged = {**entry, "default": merged.get("default")}  # a new kind of dimension replaces the declared one
    if "value" in merged:
        return Dimension(name, merged["value"], value=merged["value"])
    if default is None:  # a declared parameter keeps its declared default: trial 0 stays train's model
        default = (declared if declared is not None else merged).get("default")
    if default is None:
        raise InputError(f"{where}: {name}: a parameter rankcli does not search by default needs its default (the "
                         "value train uses: LightGBM's own default), e.g. default = 1.0")
    if "choices" in merged:
        return Dimension(name, default, choices=tuple(merged["choices"]), only_with=only_with)
    integer, log = bool(merged.get("int")), bool(merged.get("log"))
    _check_range(name, merged["low"], merged["high"], log, integer, where)  # a narrowed range keeps the scale
    cast = int if integer else float
    return Dimension(name, default, cast(merged["low"]), cast(merged["high"]), log, integer, only_with=only_with)


def rescale_only(loss: str, params: dict[str, Any]) -> set[str]:
    """The own parameters of ``loss`` that, under the LightGBM parameters ``params``, only rescale the model: left
    out of the default space (a ``--space`` entry naming one searches it).

    Under Newton boosting a leaf's value is ``-G / (H + lambda_l2)`` and a split's gain ``G^2 / (H + lambda_l2)``.
    ApproxNDCG's ``temperature`` T and LambdaLoss's ``sigma`` (as 1/T) enter the loss only as ``s / T``, so the
    gradient scales as ``1/T`` and the hessian as ``1/T^2``: with ``lambda_l2 = 0`` every split is the same and every
    leaf value, hence every score, is T times the one at T = 1, which ranks alike (the validation curves agree to
    the last digit). What T changes is the weight of ``lambda_l2`` (as ``T^2 lambda_l2``), ``lambda_l1``,
    ``max_delta_step`` and ``min_sum_hessian_in_leaf`` against the gradients, and the default space searches
    ``lambda_l2`` already. LambdaMART's ``sigmoid`` is the same only with ``lambdarank_norm`` off: LightGBM's default
    normalisation multiplies each query's gradients by ``log2(1 + L) / L`` (``L`` its summed lambdas, which grow
    with sigmoid), which reweighs the queries against each other, so it stays in the space."""
    out = {"approxndcg": {"temperature"}, "lambdaloss": {"sigma"}}.get(loss, set())
    if loss == "lambdamart" and params.get("lambdarank_norm", True) in (False, 0, "false", "0"):
        out = {"sigmoid"}
    return out


def loss_space(loss: str, base_defaults: dict[str, Any], spec: dict | None = None,
               fixed_by_param: set[str] | frozenset = frozenset()) -> Space:
    """The search space of ``loss``.

    Parameters
    ----------
    loss : a loss of :data:`rankcli.train.LOSSES`.
    base_defaults : what ``rankcli train`` uses under the same options, by parameter name (the resolved LightGBM
        parameters and ``gamma``): each dimension's default, so that trial 0 is ``train``'s model.
    spec : a space file (:func:`read_space_file`), or ``None``.
    fixed_by_param : parameters ``--param`` sets: not searched (``--param`` fixes them for every trial).
    """
    from rankcli.train.losses import LOSSES

    where = spec["path"] if spec else "the default space"
    declared = {**GENERAL, **LOSSES[loss].search}
    conditions = {o.name: o.only_with for o in LOSSES[loss].options if o.only_with is not None}
    entries = _entries_for(loss, spec)
    scale = rescale_only(loss, base_defaults)
    dims, clipped = [], []
    for name in [n for n in declared if n not in scale or n in entries] + [n for n in entries if n not in declared]:
        if name in fixed_by_param:
            if name in entries:
                raise UsageError(f"--space {where}: {name} is also set by --param; give it in one place")
            continue
        if name not in declared:
            _check_name(name, where)
        dim = _dimension(name, declared.get(name), entries.get(name), base_defaults.get(name), where,
                         conditions.get(name))
        if not dim.fixed and not dim.contains(dim.default):
            clipped.append(name)
        dims.append(dim)
    return Space(loss, tuple(dims), tuple(clipped))


def train_space(base: Any, spec: dict | None = None) -> Space:
    """The search space of ``base``'s loss around ``rankcli train``'s values under ``base`` (a
    :class:`~rankcli.train.TrainConfig`): each dimension's default is what ``train`` uses (the resolved LightGBM
    parameters, ``gamma`` and the loss's own options), so that trial 0 is ``train``'s model, and ``--param``
    (``base.params``) fixes what it sets. ``spec``: a ``--space`` file (:func:`read_space_file`), or ``None``."""
    from rankcli.train import resolve_params

    defaults = {**resolve_params(base), "gamma": base.gamma, **base.resolved_loss_options}
    return loss_space(base.loss, defaults, spec, fixed_by_param=set(base.params))


def check_space_effective(space: Space, given: dict[str, Any], loss: str) -> None:
    """:class:`UsageError` for a dimension of ``space`` (fixed or searched) that LightGBM would ignore in ``loss``'s
    trials, with the ``--param`` values ``given``: a searched ``bagging_fraction`` without ``bagging_freq`` is a
    dimension the search spends its budget on while every trial trains alike (:mod:`rankcli.train.lightgbm_params`)."""
    from rankcli.train.lightgbm_params import SEARCHED, check_effective_across, reads

    drawn = {**space.fixed, **{d.name: SEARCHED for d in space.searched}}
    params = {k: v for k, v in {**given, **drawn}.items() if reads(k, loss)}

    def where(key: str) -> str:
        return f"--param {key}" if key in given and key not in drawn else f"the search space's {key}"

    check_effective_across(params, [loss], where=where)
