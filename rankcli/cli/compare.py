"""Compare runs per query with significance tests."""

from __future__ import annotations

from rankcli.errors import UsageError

NAME = "compare"
SHORT_HELP = "Compare runs per query with significance tests."


def command() -> None:
    raise UsageError("rankcli compare is not implemented yet")
