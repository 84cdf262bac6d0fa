"""Summarise a converted dataset: rows, queries, features, documents per query (min/median/max), the label
histogram and the queries with no relevant document (no label above zero).

Reads only the qid and label columns, so it is quick on large files. --json prints the same summary as JSON:
{"path", "rows", "queries", "features", "docs_per_query": {"min", "median", "max", "mean"}, "label_histogram",
"queries_without_relevant", "integer_labels", "docid", "metadata"}.

Example: rankcli info out/sample/train.parquet --json
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

NAME = "info"
SHORT_HELP = "Summarise a converted dataset."


def summary_table(summaries: dict, title: str | None = None):
    """A rich table of one or more :class:`~rankcli.summary.DatasetSummary` objects, one column each."""
    from rich.table import Table

    table = Table(title=title, show_header=len(summaries) > 1, header_style="bold")
    table.add_column("", style="bold")
    for name in summaries:
        table.add_column(name, justify="right")
    items = list(summaries.values())

    def row(label: str, fn) -> None:
        table.add_row(label, *[fn(s) for s in items])

    row("rows", lambda s: f"{s.rows:,}")
    row("queries", lambda s: f"{s.queries:,}")
    row("features", lambda s: f"{s.features:,}")
    row("docs/query min/median/max",
        lambda s: f"{s.docs_per_query['min']} / {s.docs_per_query['median']:g} / {s.docs_per_query['max']}")
    row("queries w/o relevant doc", lambda s: f"{s.queries_without_relevant:,}")
    keys: list[str] = []
    for s in items:
        keys += [k for k in s.label_histogram if k not in keys]
    for k in keys:
        row(f"label {k}", lambda s, k=k: f"{s.label_histogram.get(k, 0):,}")
    row("docid column", lambda s: "yes" if s.has_docid else "no")
    if any(s.seconds is not None for s in items):
        row("seconds", lambda s: "" if s.seconds is None else f"{s.seconds:.2f}")
    return table


def command(
    data: Annotated[Path, typer.Argument(help="A Parquet dataset (from `rankcli convert`).", show_default=False)],
    json_output: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    from rankcli.cli._common import print_json, stdout_console
    from rankcli.formats.parquet import read_metadata
    from rankcli.summary import summarize_parquet

    summary = summarize_parquet(data)
    if json_output:
        print_json({"path": str(data), **summary.as_dict(), "metadata": read_metadata(data)})
        return
    stdout_console().print(summary_table({str(data): summary}, title=str(data)))
