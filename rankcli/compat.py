"""Every use rankcli makes of a private (underscore) name of a dependency, in one place, each with its reason.

A private name can move or vanish in any release of the dependency. Keeping each use here, behind a function with a
stable contract, means that a new release breaks one function and one test (``tests/test_compat.py``), not a command.

Uses
----
``lightgbm.basic._ConfigAliases._get_all_param_aliases``
    LightGBM's table of parameter names and their aliases, read from its C library (``LGBM_DumpParamAliases``). The
    public Python API has no way to ask which parameter names exist; ``rankcli train --param`` and ``rankcli experiment
    --param`` need exactly that to refuse a misspelt key (LightGBM itself ignores unknown keys with a warning that
    rankcli's ``verbosity=-1`` hides) and to recognise an alias of a parameter that a rankcli option sets. Used by
    :func:`lightgbm_parameter_aliases`. Present since LightGBM 3.3 (the C function) / 4.0 (the Python name).
"""

from __future__ import annotations

from functools import lru_cache

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


__all__ = ["DependencyChanged", "lightgbm_parameter_aliases"]
