"""Feature values as the data model holds them: float32, checked where a feature column of another type becomes one.

The data model's features are float32 (DESIGN.md). A column of another type (float64, say, in a file rankcli did not
write) is cast on the way in, and a finite value beyond float32's range would become an infinity there: a score, a
split or a training set built from a number the file does not hold. Every reader of feature columns (the dataset
reader, the row-group reader behind scoring and training, the Dask partitions, ``export``, ``split``) passes them
through :func:`to_float32`, which refuses such a value as ``convert`` refuses it in text, naming the file, the column
and the row. A value that is already an infinity or NaN in the file is kept, as ``convert`` keeps the literals
``inf`` and ``nan`` (LightGBM reads NaN as a missing value and an infinity beyond every bin).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from rankcli.errors import InputError

#: The largest finite float32, as ``convert``'s message prints it.
FLOAT32_MAX_TEXT = "3.4028235e+38"


def float32_overflow(values: np.ndarray) -> int:
    """The index of the first finite value of ``values`` that float32 cannot hold (it would round to an infinity),
    or -1. Only floating types wider than float32 can hold one (an int64 is at most 9.3e18)."""
    if values.dtype.kind != "f" or values.dtype.itemsize <= 4 or not values.shape[0]:
        return -1
    with np.errstate(over="ignore", invalid="ignore"):
        big = np.abs(values) > np.finfo(np.float32).max  # a candidate: the cast itself decides
        if not big.any():
            return -1
        at = np.flatnonzero(big)
        lost = np.isinf(values[at].astype(np.float32)) & np.isfinite(values[at])
    return int(at[np.argmax(lost)]) if lost.any() else -1


def overflow_error(path: Path | str, column: str, row: int, value: float) -> InputError:
    """The error of a finite feature value beyond float32 (``row``: its row in the file, from 0)."""
    return InputError(f"{path}: column {column}: {value!r} at row {row} overflows float32 (largest finite "
                      f"{FLOAT32_MAX_TEXT}), the type of every feature; rescale the column (an infinity or NaN "
                      "stored as such is kept)")


def to_float32(values: np.ndarray, path: Path | str, column: str, row_of: Callable[[int], int] = int) -> np.ndarray:
    """``values`` (one feature column) as float32, or the :func:`overflow_error` of its first finite value beyond
    float32's range; ``row_of`` turns an index into ``values`` into the row of the file."""
    bad = float32_overflow(values)
    if bad >= 0:
        raise overflow_error(path, column, row_of(bad), float(values[bad]))
    if values.dtype == np.float32:
        return values
    with np.errstate(over="ignore", invalid="ignore"):
        return values.astype(np.float32)


def check_columns(table, names: list[str], path: Path | str, first_row: int = 0) -> None:
    """Refuse, as :func:`to_float32` does, a finite value beyond float32 in the feature columns ``names`` of the Arrow
    ``table`` (rows ``first_row`` on of ``path``): what a reader that keeps the columns as they are (``split``) or
    casts them in Arrow (``export``) checks first."""
    import pyarrow as pa

    from rankcli.formats.arrow import column_to_numpy

    for name in names:
        column = table.column(name)
        if pa.types.is_floating(column.type) and column.type.bit_width > 32:
            bad = float32_overflow(values := column_to_numpy(column))
            if bad >= 0:
                raise overflow_error(path, name, first_row + bad, float(values[bad]))
