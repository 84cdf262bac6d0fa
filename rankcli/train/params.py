"""LightGBM parameters: the one ``--param`` parser and the checks of every parameter rankcli passes through.

``--param key=value`` may set any LightGBM parameter that no rankcli option sets (:data:`OPTION_PARAMS`), that
rankcli does not set itself and that LightGBM does not ignore in rankcli's trainings (:data:`MANAGED_PARAMS`); the
class of every parameter is in :data:`rankcli.train.lightgbm_params.PARAMETERS`. Keys are checked against
LightGBM's own names and aliases (:func:`rankcli.runtime.compat.lightgbm_parameter_aliases`) and returned under the main
name.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable
from typing import Any

from rankcli.errors import UsageError
from rankcli.runtime.compat import lightgbm_parameter_aliases
from rankcli.runtime.startup import import_lightgbm_lean
from rankcli.train.lightgbm_params import MANAGED_PARAMS, OPTION_PARAMS

# OPTION_PARAMS and MANAGED_PARAMS, the refused classes by main name, live with the whole table
__all__ = ["MANAGED_PARAMS", "OPTION_PARAMS", "check_boosting", "check_params", "parse_param", "parse_params"]


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


def _refusal(key: str, main: str, value: Any, opts: dict[str, str]) -> UsageError | None:
    """Why ``--param key=value`` (``main`` its main name) may not be given, or ``None``."""
    what = key if key == main else f"{key} (LightGBM's alias of {main})"
    option = _option_of(main, opts)
    if option:
        if option == opts.get("seed") and main != "seed":
            why = "rankcli derives every LightGBM seed from --seed"
        elif option == "--select-by":
            why = ("it is set by --select-by (rankcli computes the validation metric of model selection and early "
                   "stopping itself; LightGBM computes none)")
            if main == "eval_at" and isinstance(value, int) and not isinstance(value, bool):
                option = f"--select-by ndcg@{value}"
        else:
            why = f"it is set by {option}"
        return UsageError(f"--param {key}: {what} cannot be set with --param, {why}; use {option}")
    if main in MANAGED_PARAMS:
        return UsageError(f"--param {key}: {what} cannot be set with --param: {MANAGED_PARAMS[main]}")
    return None


def _unknown(key: str, main_of: dict[str, str], opts: dict[str, str]) -> UsageError:
    """The error for a key LightGBM does not know, naming the closest parameter."""
    # LightGBM's names are lower case: NUM_LEAVES means num_leaves, whatever difflib's ratio says
    close = [key.lower()] if key.lower() in main_of else difflib.get_close_matches(key, list(main_of), n=1, cutoff=0.6)
    hint = ""
    if close:
        suggestion = main_of[close[0]]
        hint = f"; did you mean {suggestion!r}?"
        option = _option_of(suggestion, opts)
        if option:
            hint += f" (rankcli sets it: use {option})"
    return UsageError(f"--param {key}: LightGBM has no parameter {key!r}{hint} "
                      "(LightGBM's parameters: https://lightgbm.readthedocs.io/en/stable/Parameters.html)")


def check_params(items: Any, options: dict[str, str] | None = None) -> dict[str, Any]:
    """``--param`` keys checked against LightGBM's own parameter names and aliases; returns them under main names.

    ``items`` is a mapping or ``(key, value)`` pairs. A key LightGBM does not know is a :class:`UsageError` naming the
    closest known parameter; so is a key (or an alias of one) that a rankcli option sets (:data:`OPTION_PARAMS`;
    ``options`` overrides the option names, e.g. ``{"objective": "--losses"}`` for ``experiment``), one that rankcli
    sets itself or that LightGBM ignores in every rankcli training (:data:`MANAGED_PARAMS`), and two keys that are one
    parameter. Aliases are replaced by the main name, so that a value given under an alias is the one LightGBM uses
    (LightGBM prefers the main name when both are present, and rankcli or a preset may set it). Whether a parameter
    takes effect with the loss and the other parameters of a training is :func:`rankcli.train.check_effective`'s.
    """
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
            raise _unknown(key, main_of, opts)
        refusal = _refusal(key, main, value, opts)
        if refusal is not None:
            raise refusal
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


def check_boosting(params: dict, early_stopping: int, validating: bool) -> None:
    """:class:`UsageError` for ``boosting=dart`` with early stopping (``params`` under main names, as checked;
    ``early_stopping``: the patience; ``validating``: whether a validation set is given).

    dart rescales the earlier trees whenever it adds one, so the first ``best_iteration`` trees of the final model are
    not the model that scored best on validation: cutting there (what early stopping keeps) would store a model whose
    recorded validation score is not its own. LightGBM's own early stopping refuses dart for the same reason.
    """
    if validating and early_stopping > 0 and str(params.get("boosting", "")).lower() == "dart":
        raise UsageError("--param boosting=dart does not combine with early stopping: dart reweights the earlier "
                         "trees whenever it adds one, so the model cut at its best iteration is not the one that "
                         "scored best; pass --early-stopping 0 (every tree is trained and kept)")
