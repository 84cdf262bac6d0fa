"""A tune's results as people read them: the table ``rankcli tune`` prints (numbers written by
:mod:`rankcli.display.numbers`) with each loss's best parameters, and the best-so-far plot
(:mod:`rankcli.display.plot`). Never prints; the CLI prints what these return."""

from __future__ import annotations

from pathlib import Path

from rankcli.display.numbers import number
from rankcli.display.plot import have_matplotlib, plot_best_so_far
from rankcli.tune.draws import show_params


def tune_table(result, shape: dict) -> list:
    """The table of every loss (trials, the validation value of train's parameters and of the best trial, its
    number and trees) and a line per loss with its best parameters; ``shape`` is
    :func:`rankcli.tune.results.json_shape` of ``result``."""
    from rich.table import Table
    from rich.text import Text

    cfg = result.config
    t = Table(title=f"tune: validation {cfg.train.select_by} ({cfg.train.convention} convention), budget "
                    f"{cfg.budget} trials per loss", title_justify="left")
    for col in ("loss", "trials", "train's parameters", "best", "best trial", "its trees"):
        t.add_column(col, justify="left" if col == "loss" else "right")
    for loss, s in shape["losses"].items():
        t.add_row(Text(loss), str(s["trials"]), number(s["default_value"]), number(s["best_value"]),
                  *("" if s[k] is None else str(s[k]) for k in ("best_trial", "best_trees")))
    return [t] + [f"{loss} best parameters: {show_params(s['best_params'] or {})}"
                  for loss, s in shape["losses"].items()]


def best_so_far_plot(curves: dict[str, list[float]], path: Path, select_by: str, budget: int) -> Path | None:
    """The best-so-far curves plotted to ``path`` when matplotlib is installed and a trial has finished; None
    otherwise."""
    if not have_matplotlib() or not any(curves.values()):
        return None
    return plot_best_so_far(curves, path, select_by, budget)
