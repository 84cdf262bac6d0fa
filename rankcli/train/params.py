"""LightGBM parameters: the one ``--param`` parser and the checks of every parameter rankcli passes through.

``--param key=value`` may set any LightGBM parameter that no rankcli option sets (:data:`OPTION_PARAMS`) and that
rankcli does not manage itself (:data:`MANAGED_PARAMS`); keys are checked against LightGBM's own names and aliases
(:func:`rankcli.compat.lightgbm_parameter_aliases`) and returned under the main name.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable
from typing import Any

from rankcli.errors import UsageError
from rankcli.startup import import_lightgbm_lean

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

#: LightGBM parameters that no option sets but that ``--param`` may not set either (main name -> why). LightGBM's
#: command-line program reads and writes files with the first group; its Python API, which rankcli drives, ignores
#: them (``data`` and ``categorical_feature`` with a Python warning), so accepting them would be an option that lies.
_CLI_PROGRAM_ONLY = ("task", "config", "data", "valid", "input_model", "output_model", "output_result",
                     "snapshot_freq", "save_binary", "convert_model", "convert_model_language", "header",
                     "label_column", "weight_column", "group_column", "ignore_column", "categorical_feature",
                     "parser_config_file", "two_round", "precise_float_parser", "saved_feature_importance_type",
                     "predict_raw_score", "predict_leaf_index", "predict_contrib", "predict_disable_shape_check",
                     "start_iteration_predict", "num_iteration_predict", "pred_early_stop", "pred_early_stop_freq",
                     "pred_early_stop_margin")
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
