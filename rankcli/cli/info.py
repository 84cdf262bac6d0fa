"""Summarise a converted dataset."""

from __future__ import annotations

from rankcli.errors import UsageError

NAME = "info"
SHORT_HELP = "Summarise a converted dataset."


def command() -> None:
    raise UsageError("rankcli info is not implemented yet")
