"""Evaluate a run: NDCG@k and other ranking metrics."""

from __future__ import annotations

from rankcli.errors import UsageError

NAME = "eval"
SHORT_HELP = "Evaluate a run: NDCG@k and other ranking metrics."


def command() -> None:
    raise UsageError("rankcli eval is not implemented yet")
