"""``rankcli click-model``: fit the click models of Chuklin, Markov and de Rijke (2015) to click logs, evaluate them
on held-out logs, compare them with paired tests, and simulate from them.

Orchestration only (no printing): :func:`fit_log` (``fit``), :func:`evaluate_log` (``eval``),
:func:`compare_models` and :func:`compare_split` (``compare``) return report objects that :mod:`.render` turns into
tables and JSON. The mathematics is :mod:`rankcli.core.click_models`; the files are
:mod:`rankcli.formats.click_logs` (the logs) and :mod:`rankcli.formats.click_model_dir` (a fitted model).
"""

from rankcli.click_model.comparing import CompareReport, compare_models, compare_split
from rankcli.click_model.evaluating import EvalReport, evaluate_log, score
from rankcli.click_model.fitting import FitOptions, FitReport, fit_log
from rankcli.click_model.logs import BY, CodedLog, code_log
from rankcli.click_model.stored import LoadedModel, load_model

__all__ = ["BY", "CodedLog", "CompareReport", "EvalReport", "FitOptions", "FitReport", "LoadedModel", "code_log",
           "compare_models", "compare_split", "evaluate_log", "fit_log", "load_model", "score"]
