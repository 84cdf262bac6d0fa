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

from rankcli.cli import options as opt

NAME = "info"
SHORT_HELP = "Summarise a converted dataset."


def command(
    data: Annotated[Path, typer.Argument(help="A Parquet dataset (from `rankcli convert`), or SVMlight text "
                                                   "(converted for the run).",
                                       show_default=False)],
    json_output: Annotated[bool, opt.json_flag("the summary")] = False,
) -> None:
    from rankcli.cli._common import parquet_inputs, print_json, stdout_console, summary_table
    from rankcli.info import summarize_parquet

    summary = summarize_parquet(parquet_inputs([data])[0])  # SVMlight text converted for this run
    if json_output:
        print_json({"path": str(data), **summary.as_dict()})
        return
    stdout_console().print(summary_table({str(data): summary}, title=str(data)))
