"""The candidates ``--optimize`` tries: every weight vector of a simplex grid, and each method's parameter grid.

The simplex of step ``1 / m`` holds every vector of ``n`` weights ``i_r / m`` with non-negative integers ``i_r``
summing to ``m``: ``C(m + n - 1, n - 1)`` vectors (1,001 for 5 runs at step 0.1). They are enumerated as integers, so
none is lost; ranx builds them as floats and keeps those whose sum equals 1.0 exactly, which drops some (860 of the
1,001: ``0.1 + 0.2 + 0.7`` is not 1.0 in floating point). The order is ranx's, lexicographic in the weights.
"""

from __future__ import annotations

import math

import numpy as np

from rankcli.core.fusion.registry import Method
from rankcli.errors import UsageError

#: The most candidates one search may have.
MAX_CANDIDATES = 200_000


def divisions(step: float) -> int:
    """``m`` with ``step = 1 / m``; a step that does not divide 1 is a :class:`UsageError`."""
    if not (math.isfinite(step) and 0 < step <= 1):
        raise UsageError(f"--step must be in (0, 1], got {step}")
    m = round(1 / step)
    if abs(m * step - 1) > 1e-9:
        raise UsageError(f"--step must divide 1 into equal parts (0.1, 0.05, 0.2, 0.25, ...), got {step}")
    return m


def simplex_points(n: int, m: int) -> np.ndarray:
    """Every vector of ``n`` non-negative integers summing to ``m``, lexicographically ascending: ``(count, n)``."""
    if n < 1:
        return np.zeros((0, 0), dtype=np.int64)
    count = math.comb(m + n - 1, n - 1)
    if count > MAX_CANDIDATES:
        raise UsageError(f"the weight grid for {n} runs at step 1/{m} has {count:,} points, more than "
                         f"{MAX_CANDIDATES:,}; choose a larger --step")
    parts = np.zeros((1, 0), dtype=np.int64)
    left = np.array([m], dtype=np.int64)
    for _ in range(n - 1):
        reps = left + 1
        parent = np.repeat(np.arange(parts.shape[0]), reps)
        value = np.arange(parent.shape[0]) - np.repeat(np.cumsum(reps) - reps, reps)
        parts = np.column_stack([parts[parent], value])
        left = left[parent] - value
    return np.column_stack([parts, left])


def simplex(n: int, step: float) -> np.ndarray:
    """The weight vectors of the simplex of ``step`` for ``n`` runs: ``(count, n)`` float64, each row summing to 1."""
    m = divisions(step)
    return simplex_points(n, m) / m


def candidates(method: Method, n_runs: int, step: float, fixed: dict) -> list[dict]:
    """The parameter sets ``--optimize`` tries for ``method``: the product of its parameters' grids (the weights'
    simplex for ``weights``) except those fixed in ``fixed``, in ranx's order. A method without a free parameter is a
    :class:`UsageError`."""
    free = [p for p in method.params if p.name not in fixed]
    if not free:
        raise UsageError(f"{method.name} has no parameter to optimise" +
                         (f" (its {', '.join(fixed)} is given)" if fixed else ""))
    sets = [dict(fixed)]
    for p in free:
        values = [tuple(float(x) for x in w) for w in simplex(n_runs, step)] if p.name == "weights" else p.grid
        sets = [{**s, p.name: v} for s in sets for v in values]
    if len(sets) > MAX_CANDIDATES:
        raise UsageError(f"{len(sets):,} parameter sets to try, more than {MAX_CANDIDATES:,}; fix a parameter or "
                         "choose a larger --step")
    return sets
