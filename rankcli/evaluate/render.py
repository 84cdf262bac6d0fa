"""An :class:`rankcli.evaluate.EvalReport` as ``rankcli eval`` shows it: the ``--json`` document and the rich table
(numbers written by :mod:`rankcli.display.numbers`). Never prints; the CLI writes what these return."""

from __future__ import annotations

import math

from rankcli.display.numbers import number


def eval_dict(report) -> dict:
    """``rankcli eval --json``: exactly ``{"convention": {...}, "queries": N, "skipped": K, "metrics": {...}}``."""
    return report.as_dict()


#: How a metric's per-query values are summarised, in words (the registry's ``aggregate``).
_AGGREGATES = {"mean": "mean", "sum": "sum", "count": "count", "gmean": "geometric mean"}


def eval_table(report):
    """A rich table of the summaries (means; sums, counts and geometric means said so when there are any), then the
    number of queries evaluated/skipped and the convention."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    result = report.result
    counts_differ = len(set(result.evaluated.values())) > 1
    records = {str(s): s.record for s in report.specs}
    how = {name: records[name].aggregate if name in records else "mean" for name in result.means}
    mixed = set(how.values()) != {"mean"}
    table = Table(title=f"rankcli eval: {report.source}" if report.source else "rankcli eval", title_justify="left")
    table.add_column("metric")
    table.add_column("value" if mixed else "mean", justify="right")
    if mixed:
        table.add_column("over queries")
    if counts_differ:
        table.add_column("queries", justify="right")
    for name, mean in result.means.items():
        whole = name in records and records[name].integer and how[name] in ("sum", "count") and math.isfinite(mean)
        cells = [name, f"{mean:.0f}" if whole else number(mean)]
        if mixed:
            cells.append(_AGGREGATES.get(how[name], how[name]))
        if counts_differ:
            cells.append(str(result.evaluated.get(name, 0)))
        table.add_row(*cells)
    conv = result.convention
    if counts_differ:
        counted = f"queries: {result.queries} evaluated by every metric, {result.skipped} skipped by some"
    else:
        counted = f"queries: {result.queries} evaluated, {result.skipped} skipped"
    lines = [counted + (" (no relevant document)" if result.skipped else "") + f"; {report.rows} rows",
             f"convention: {conv.describe()}"]
    lines += [f"note: {n}" for n in report.notes]
    return Group(table, Text("\n".join(lines)))
