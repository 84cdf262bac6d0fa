"""Every use rankcli makes of a private (underscore) name of a dependency, in one place, each with its reason.

A private name can move or vanish in any release of the dependency. Keeping each use here, behind a function with a
stable contract, means that a new release breaks one function and one test (``tests/runtime/test_compat.py``), not a
command.

Uses
----
``lightgbm.basic._ConfigAliases._get_all_param_aliases``
    LightGBM's table of parameter names and their aliases, read from its C library (``LGBM_DumpParamAliases``). The
    public Python API has no way to ask which parameter names exist; ``rankcli train --param`` and ``rankcli experiment
    --param`` need exactly that to refuse a misspelt key (LightGBM itself ignores unknown keys with a warning that
    rankcli's ``verbosity=-1`` hides) and to recognise an alias of a parameter that a rankcli option sets. Used by
    :func:`lightgbm_parameter_aliases`. Present since LightGBM 3.3 (the C function) / 4.0 (the Python name).
``lightgbm.basic._LOGGER``, ``_INFO_METHOD_NAME``, ``_WARNING_METHOD_NAME``
    The logger that ``lightgbm.register_logger`` (public) installs, read so that :func:`capture_lightgbm_log` can put
    the previous one back: LightGBM has no public way to ask for it. ``rankcli train --loss lambdamart --propensity
    learn`` reads the position biases LightGBM learns from its debug log, the only place LightGBM shows them
    (``LambdarankNDCG::LogDebugPositionBiasFactors``, LightGBM >= 4.1); :func:`parse_position_bias_log` reads that log's
    table. Both are used by :mod:`rankcli.train`.
``typer._click.exceptions.ClickException``
    The base class of the usage errors typer's command parser raises (an unknown option, a missing argument, a bad
    choice). typer vendors click since 0.26 and exports only some of its subclasses (``typer.BadParameter``), not the
    base class; the CLI's error boundary (``rankcli.cli.main``) runs the command with ``standalone_mode=False`` to map
    every failure to rankcli's exit statuses itself, so it must catch that base class to show the usage error and
    return its status (2). Used by :func:`click_exception_type`.
``pyarrow._compute.call_function``
    Arrow's compute kernels called by name (``take``: a multi-threaded C++ gather). The public ``pyarrow.compute``
    generates a Python wrapper for every kernel when first imported (~70 ms of a short command's start-up); the
    private module calls the same kernel without them. Used by :func:`arrow_call_function` (the click simulator's row
    gather); without the private module it falls back to the public API.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import NamedTuple

from rankcli.errors import ExitStatus, RankcliError


class DependencyChanged(RankcliError):
    """A dependency no longer offers what rankcli relies on: rankcli does not support the installed version (a bug)."""

    exit_status = ExitStatus.INTERNAL_ERROR


@lru_cache(maxsize=1)
def lightgbm_parameter_aliases() -> dict[str, tuple[str, ...]]:
    """Every LightGBM parameter: its main name -> (main name, alias, ...), as the installed LightGBM knows them.

    Raises :class:`DependencyChanged` when the installed LightGBM no longer exposes the table where rankcli reads it.
    """
    import lightgbm

    getter = getattr(getattr(getattr(lightgbm, "basic", None), "_ConfigAliases", None), "_get_all_param_aliases", None)
    if getter is None:
        raise DependencyChanged(
            f"cannot read LightGBM's parameter names: LightGBM {lightgbm.__version__} no longer has "
            "lightgbm.basic._ConfigAliases._get_all_param_aliases, which rankcli uses to check --param; "
            "install the LightGBM version rankcli was tested with, or report this")
    table = getter()
    if not isinstance(table, dict) or not all(isinstance(v, (list, tuple)) for v in table.values()):
        raise DependencyChanged(f"LightGBM {lightgbm.__version__}: its parameter-alias table has an unknown shape "
                                f"({type(table).__name__}); rankcli cannot check --param")
    # LightGBM lists the main name first; make sure it is there whatever the version does.
    return {str(main): tuple(dict.fromkeys([str(main), *map(str, names)])) for main, names in table.items()}


class _LogCapture:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def info(self, msg: str) -> None:
        self.lines.append(str(msg))

    def warning(self, msg: str) -> None:
        self.lines.append(str(msg))


@contextmanager
def capture_lightgbm_log() -> Iterator[list[str]]:
    """Collect every message LightGBM logs (nothing reaches stdout or stderr) inside the block; yields the list.

    The logger registered before is restored on exit. Raises :class:`DependencyChanged` when LightGBM no longer keeps
    its logger where rankcli reads it back.
    """
    import lightgbm
    import lightgbm.basic as basic

    names = ("_LOGGER", "_INFO_METHOD_NAME", "_WARNING_METHOD_NAME")
    if not all(hasattr(basic, n) for n in names) or not hasattr(lightgbm, "register_logger"):
        raise DependencyChanged(f"LightGBM {lightgbm.__version__} no longer keeps its logger in "
                                "lightgbm.basic._LOGGER, which rankcli reads to restore it after capturing the "
                                "position biases of --propensity learn; install the LightGBM version rankcli was "
                                "tested with, or report this")
    logger, info_name, warning_name = (getattr(basic, n) for n in names)
    capture = _LogCapture()
    lightgbm.register_logger(capture)
    try:
        yield capture.lines
    finally:
        lightgbm.register_logger(logger, info_method_name=info_name, warning_method_name=warning_name)


_BIAS_HEADER = re.compile(r"^\[LightGBM\] \[Debug\]\s+position\s+bias_factor\s*$")
_BIAS_ROW = re.compile(r"^\[LightGBM\] \[Debug\]\s+(\S+)\s+(\S+)\s*$")


class BiasTable(NamedTuple):
    """One iteration's table of LightGBM's position biases: the position ids and their bias factors, in order."""

    positions: list[str]
    factors: list[float]


def parse_position_bias_log(lines: list[str]) -> list[BiasTable]:
    """The position-bias tables of a LightGBM lambdarank debug log, one per iteration, in order. LightGBM prints each
    table after updating the biases in an iteration's gradient step (a header line ``position bias_factor``, then one
    line per position id, 6 significant digits)."""
    tables: list[BiasTable] = []
    current: BiasTable | None = None
    for line in lines:
        if _BIAS_HEADER.match(line):
            current = BiasTable([], [])
            tables.append(current)
            continue
        row = _BIAS_ROW.match(line) if current is not None else None
        if row is None:
            current = None
            continue
        try:
            value = float(row.group(2))
        except ValueError:
            current = None
            continue
        current.positions.append(row.group(1))
        current.factors.append(value)
    return tables


def click_exception_type() -> type[Exception]:
    """The base class of the command-line usage errors that typer raises (its vendored click's ``ClickException``).

    Raises :class:`DependencyChanged` when the installed typer no longer vendors click where rankcli reads it.
    """
    import typer

    try:
        from typer._click.exceptions import ClickException
    except ImportError:
        raise DependencyChanged(f"typer {getattr(typer, '__version__', '?')} no longer vendors click as "
                                "typer._click, whose ClickException rankcli's error boundary catches; install the "
                                "typer version rankcli was tested with, or report this") from None
    return ClickException


def arrow_call_function(name: str, args: list) -> object:
    """Arrow's compute kernel ``name`` applied to ``args`` (e.g. ``("take", [table, indices])``), without importing
    ``pyarrow.compute``; through ``pyarrow.compute.call_function`` when the private module is gone."""
    try:
        from pyarrow._compute import call_function
    except ImportError:  # a pyarrow without the private module: the public one, ~70 ms slower to import
        from pyarrow.compute import call_function
    return call_function(name, args)


__all__ = ["BiasTable", "DependencyChanged", "arrow_call_function", "capture_lightgbm_log", "click_exception_type",
           "lightgbm_parameter_aliases", "parse_position_bias_log"]
