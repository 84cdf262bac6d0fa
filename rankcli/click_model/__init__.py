"""``rankcli click-model``: fit the click models of Chuklin, Markov and de Rijke (2015) to click logs, evaluate them
on held-out logs, compare them with paired tests, and simulate from them.

Orchestration only (no printing): :func:`fit_log` (``fit``), :func:`evaluate_log` (``eval``),
:func:`compare_models` and :func:`compare_split` (``compare``) return report objects that :mod:`.render` turns into
tables and JSON. The mathematics is :mod:`rankcli.core.click_models`; the files are
:mod:`rankcli.formats.click_logs` (the logs) and :mod:`rankcli.formats.click_model_dir` (a fitted model).

The names below load their module when first used (PEP 562): ``simulate-clicks`` imports
:mod:`rankcli.click_model.simulation`, which runs this file, and must not pay for the comparing module's import of
``rankcli.compare`` (~0.1 s of imports it never uses).
"""

import importlib

#: Each public name and the module of this package that defines it.
_HOMES = {"CompareReport": "comparing", "compare_models": "comparing", "compare_split": "comparing",
          "EvalReport": "evaluating", "evaluate_log": "evaluating", "score": "evaluating",
          "FitOptions": "fitting", "FitReport": "fitting", "fit_log": "fitting",
          "BY": "logs", "CodedLog": "logs", "code_log": "logs",
          "LoadedModel": "stored", "load_model": "stored"}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
