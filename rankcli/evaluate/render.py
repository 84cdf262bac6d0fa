"""An :class:`rankcli.evaluate.EvalReport` as ``rankcli eval`` shows it: the ``--json`` document, the rich table
(numbers written by :mod:`rankcli.display.numbers`) and trec_eval's layout. Never prints; the CLI writes what these
return."""

from __future__ import annotations

import math
from collections.abc import Iterator

from rankcli.core.metrics.specs import trec_order
from rankcli.display.numbers import number
from rankcli.formats.trec import write as trec_write


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


def trec_eval_means(report) -> dict:
    """The summaries that ``eval --format trec_eval`` prints: the report's, except ``num_rel`` under ``-c``, which
    trec_eval prints as the qrels' positive labels whatever ``-l`` says (``report.qrels_positive``), not as the sum of
    its per-query lines; the table and ``--json`` keep the sum, which is what the per-query values add up to."""
    means = report.result.means
    if report.qrels_positive is None:
        return means
    num_rel = [str(s) for s in report.specs if s.name == "num_rel" and str(s) in means]
    return {**means, **{name: float(report.qrels_positive) for name in num_rel}}


def trec_eval_layout(report, *, queries: bool = False) -> Iterator[str]:
    """``rankcli eval --format trec_eval`` (``queries``: ``-q``), block by block, as
    :func:`rankcli.formats.trec.write.trec_eval_blocks` writes it, with :func:`trec_eval_means`' summaries."""
    return trec_write.trec_eval_blocks(trec_order(report.specs), report.result.per_query, trec_eval_means(report),
                                       report.qids, runid=report.runid, queries=queries)
