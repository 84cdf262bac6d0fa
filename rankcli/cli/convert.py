"""Convert SVMlight/LETOR text to Parquet."""

from __future__ import annotations

from rankcli.errors import UsageError

NAME = "convert"
SHORT_HELP = "Convert SVMlight/LETOR text to Parquet."


def command() -> None:
    raise UsageError("rankcli convert is not implemented yet")
