"""How a number is written in a table: one rule for values that are missing or not finite, and one for p-values.

Render modules write their cells through these functions, so that two commands never spell the same kind of value
two ways (``n/a`` for a value that is absent or not finite; a p-value below the printable floor as ``<0.0001``, not
as a rounded 0.0000 that reads as certainty; ``not testable`` where a table has no other place to say that a test
could not run).
"""

from __future__ import annotations

import math

#: The smallest p-value written as a number at the default four decimals; anything below it is written ``<0.0001``.
P_VALUE_FLOOR = 1e-4
#: A p-value cell of a test that could not run, in a table with no decision column to say so.
NOT_TESTABLE = "not testable"


def _missing(x) -> bool:
    return x is None or not math.isfinite(x)


def number(x, digits: int = 4) -> str:
    """``x`` with ``digits`` decimals, or ``n/a`` when it is None or not finite."""
    return "n/a" if _missing(x) else f"{x:.{digits}f}"


def signed(x, digits: int = 4) -> str:
    """A difference with its sign (``+0.0100``), or ``n/a`` when it is None or not finite."""
    return "n/a" if _missing(x) else f"{x:+.{digits}f}"


def p_value(x, digits: int = 4) -> str:
    """A p-value with ``digits`` decimals, ``n/a`` when None or not finite.

    Below the smallest value the decimals show (:data:`P_VALUE_FLOOR` at four) it is written ``<0.0001`` (``<0.001``
    at three): a rounded 0.0000 would read as certainty.
    """
    if _missing(x):
        return "n/a"
    floor = max(P_VALUE_FLOOR, 10.0 ** -digits)
    return f"<{floor:g}" if x < floor else f"{x:.{digits}f}"


def p_value_or_reason(x, digits: int = 4, reason: str | None = None) -> str:
    """:func:`p_value`, but a test that could not run says so (and why, when ``reason`` is given): for a table whose
    p-value column is the only word on the test."""
    if _missing(x):
        return f"{NOT_TESTABLE}: {reason}" if reason else NOT_TESTABLE
    return p_value(x, digits)
