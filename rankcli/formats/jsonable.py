"""JSON values from results: the one conversion every JSON rankcli writes goes through (stdout and files alike)."""

from __future__ import annotations

import math
from typing import Any


def jsonable(value: Any) -> Any:
    """``value`` with NaN and infinity as ``None`` (JSON has neither; null is what a reader can act on), numpy
    scalars as Python numbers, tuples as lists and dictionary keys as strings. Imports nothing heavy: the CLI's
    JSON output uses it."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and not isinstance(value, (str, bytes)):  # numpy scalars
        return jsonable(value.item())
    return value
