"""Run the paper's protocol: repeated splits, losses side by side, robustness sweeps."""

from __future__ import annotations

from rankcli.errors import UsageError

NAME = "experiment"
SHORT_HELP = "Run the paper's protocol: repeated splits, losses side by side, robustness sweeps."


def command() -> None:
    raise UsageError("rankcli experiment is not implemented yet")
