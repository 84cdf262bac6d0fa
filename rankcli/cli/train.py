"""Train a LightGBM ranker with a chosen loss."""

from __future__ import annotations

from rankcli.errors import UsageError

NAME = "train"
SHORT_HELP = "Train a LightGBM ranker with a chosen loss."


def command() -> None:
    raise UsageError("rankcli train is not implemented yet")
