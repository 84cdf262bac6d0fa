"""Simulate click logs with a cascade or position-based model."""

from __future__ import annotations

from rankcli.errors import UsageError

NAME = "simulate-clicks"
SHORT_HELP = "Simulate click logs with a cascade or position-based model."


def command() -> None:
    raise UsageError("rankcli simulate-clicks is not implemented yet")
