"""Score documents with a trained model."""

from __future__ import annotations

from rankcli.errors import UsageError

NAME = "predict"
SHORT_HELP = "Score documents with a trained model."


def command() -> None:
    raise UsageError("rankcli predict is not implemented yet")
