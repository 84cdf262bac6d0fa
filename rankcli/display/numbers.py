"""How a number is written in a table: one rule for values that are missing or not finite, and one for p-values.

Render modules write their cells through these functions, so that two commands never spell the same kind of value
two ways (``n/a`` for a value that is absent or not finite; a p-value below the printable floor as ``<0.0001``, not
as a rounded 0.0000 that reads as certainty).
"""

from __future__ import annotations

import math

#: The smallest p-value written as a number; anything below it is written ``<0.0001``.
P_VALUE_FLOOR = 1e-4


def number(x, digits: int = 4) -> str:
    """``x`` with ``digits`` decimals, or ``n/a`` when it is None or not finite."""
    return "n/a" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.{digits}f}"


def p_value(x) -> str:
    """A p-value with four decimals, ``<0.0001`` below :data:`P_VALUE_FLOOR`, ``n/a`` when None or not finite."""
    if x is None or not math.isfinite(x):
        return "n/a"
    return "<0.0001" if x < P_VALUE_FLOOR else f"{x:.4f}"
