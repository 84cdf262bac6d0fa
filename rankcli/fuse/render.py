"""What ``rankcli fuse`` prints: the summary line, the parameter search (chosen set, best candidates, folds), and
the JSON of ``--json``. Rendering only: the objects come from :mod:`rankcli.fuse`."""

from __future__ import annotations

import numpy as np

from rankcli.fuse import FuseResult
from rankcli.fuse.optimize import Optimization

#: The candidates the table shows (``--json`` lists them all).
TOP = 10


def format_params(params: dict) -> str:
    """``k=60``, ``weights=0.3,0.7``: a parameter set on one line."""
    parts = []
    for k, v in params.items():
        if isinstance(v, (list, tuple)):
            parts.append(f"{k}=" + ",".join(f"{x:g}" for x in v))
        else:
            parts.append(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}")
    return " ".join(parts) or "(none)"


def summary(result: FuseResult) -> str:
    """The one-line log of a fusion."""
    left = f", {result.left_out} judged queries left out" if result.left_out else ""
    params = f"{format_params(result.params)}; " if result.params else ""
    return (f"fused {len(result.runs)} runs with {result.method} ({params}{result.normalization} normalization) -> "
            f"{result.output}: {result.rows:,} documents of {result.written:,} queries{left}")


def search_table(opt: Optimization, top: int = TOP):
    """A rich table of the best ``top`` parameter sets, best first, the chosen one marked."""
    from rich.table import Table

    order = sorted(range(len(opt.sets)), key=lambda i: (-(opt.means[i] if not np.isnan(opt.means[i]) else -np.inf),
                                                        -i))
    table = Table(title=f"{opt.metric} over {opt.queries} optimisation queries ({len(opt.sets)} candidates"
                  f"{'; --json lists all' if len(opt.sets) > top else ''})", header_style="bold")
    table.add_column("", justify="right")
    table.add_column("parameters")
    table.add_column(opt.metric, justify="right")
    for i in order[:top]:
        mark = "chosen" if i == opt.best else ""
        table.add_row(mark, format_params(opt.sets[i]), f"{opt.means[i]:.4f}")
    return table


def folds_table(opt: Optimization):
    """A rich table of each fold's choice and held-out score, and the out-of-fold score."""
    from rich.table import Table

    table = Table(title=f"{len(opt.folds)}-fold cross-validation of the choice (seed {opt.seed})",
                  header_style="bold")
    table.add_column("fold", justify="right")
    table.add_column("queries", justify="right")
    table.add_column("chosen on the other folds")
    table.add_column(f"held-out {opt.metric}", justify="right")
    for f in opt.folds:
        table.add_row(str(f["fold"]), str(f["queries"]), format_params(f["params"]),
                      "n/a" if f["score"] is None else f"{f['score']:.4f}")
    oof = "n/a" if opt.out_of_fold is None else f"{opt.out_of_fold:.4f}"
    table.add_row("all", str(sum(f["queries"] for f in opt.folds)), "out-of-fold", oof, style="bold")
    return table


def result_dict(result: FuseResult, comparison=None) -> dict:
    """``--json``: the result, with the comparison's report when ``--compare`` made one."""
    out = result.as_dict()
    if comparison is not None:
        out["comparison"] = comparison.as_dict()
    return out
