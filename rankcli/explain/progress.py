"""Explain's progress in estimated seconds, so that a bar's time left is honest across stages of unequal cost.

The work is counted in *tree-rows* (one tree evaluated on one row) per stage: ``predict`` (the permuted scorings and
the leaf pass, LightGBM's ordinary prediction) and ``shap`` (TreeSHAP, ``pred_contrib``, hundreds of times dearer per
tree-row). Each stage's cost per tree-row is measured as it runs (the base scoring times ``predict`` before any
planned work; the first contributions batch, kept small, times ``shap``; each cost is the running mean of its
stage's timings, so it follows the machine's load), and progress is reported as ``(seconds done, seconds in all)`` by
those costs: a stage that costs 75% of the time is 75% of the bar.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext

#: TreeSHAP's cost per tree-row relative to a prediction's until it is measured (measured: 300-600 with 31 leaves).
SHAP_GUESS = 400.0


class Work:
    """Planned and done tree-rows per stage and each stage's measured seconds per tree-row; ``report(done, total)``
    (estimated seconds) after every change. ``report`` None: counts only."""

    def __init__(self, report: Callable[[float, float], None] | None = None):
        self.report = report
        self.planned: dict[str, float] = {"predict": 0.0, "shap": 0.0}
        self.done: dict[str, float] = {"predict": 0.0, "shap": 0.0}
        self._timings: dict[str, list[float]] = {"predict": [0.0, 0.0], "shap": [0.0, 0.0]}  # seconds, tree-rows

    def plan(self, stage: str, tree_rows: float) -> None:
        self.planned[stage] += tree_rows
        self._report()

    def measure(self, stage: str, seconds: float, tree_rows: float) -> None:
        """Add a timing of ``tree_rows`` of ``stage`` to its cost."""
        if tree_rows > 0:
            self._timings[stage][0] += max(seconds, 0.0)
            self._timings[stage][1] += tree_rows

    def cost(self, stage: str) -> float | None:
        """Measured seconds per tree-row of ``stage`` (None before its first timing)."""
        seconds, rows = self._timings[stage]
        return max(seconds, 1e-12) / rows if rows > 0 else None

    def advance(self, stage: str, tree_rows: float) -> None:
        self.done[stage] += tree_rows
        self._report()

    def timed(self, stage: str, tree_rows: float):
        """A context manager that times ``tree_rows`` of ``stage`` (:meth:`measure`), then advances it by them."""
        return _Timed(self, stage, tree_rows)

    def _costs(self) -> dict[str, float]:
        predict = self.cost("predict") or 1e-8
        shap = self.cost("shap") or predict * SHAP_GUESS
        return {"predict": predict, "shap": shap}

    def seconds(self) -> tuple[float, float]:
        """(estimated seconds of the work done, of all the planned work)."""
        costs = self._costs()
        done = sum(min(self.done[s], self.planned[s]) * costs[s] for s in costs)
        return done, sum(self.planned[s] * costs[s] for s in costs)

    def _report(self) -> None:
        if self.report is not None:
            self.report(*self.seconds())


def timed(work: Work | None, stage: str, tree_rows: float):
    """``work.timed(stage, tree_rows)``, or a context that does nothing when ``work`` is None."""
    return nullcontext() if work is None else work.timed(stage, tree_rows)


class _Timed:
    def __init__(self, work: Work, stage: str, tree_rows: float):
        self.work, self.stage, self.tree_rows = work, stage, tree_rows

    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, kind, *_):
        if kind is None:
            self.work.measure(self.stage, time.perf_counter() - self.start, self.tree_rows)
            self.work.advance(self.stage, self.tree_rows)
        return False
