"""Export a dataset to SVMlight or TREC qrels."""

from __future__ import annotations

from rankcli.errors import UsageError

NAME = "export"
SHORT_HELP = "Export a dataset to SVMlight or TREC qrels."


def command() -> None:
    raise UsageError("rankcli export is not implemented yet")
