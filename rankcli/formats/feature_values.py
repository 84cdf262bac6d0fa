"""Feature values as the data model holds them, checked where a feature column becomes a numpy array.

The data model's features are float32 (DESIGN.md), or float64 in a file whose footer says so (``rankcli.feature_dtype
= float64``, what ``convert --float64`` writes: LightGBM parses text into doubles, and a model trained on float32
values splits at other thresholds). :func:`declared_dtype` reads that key; every reader of feature columns (the
dataset reader, the row-group reader behind scoring and training, the Dask partitions, ``export``, ``split``, the
click logs) takes the precision from it and passes each column through :func:`feature_array`, the one check:

- the column's type: numbers (integer, floating point, boolean, decimal) or strings holding numbers; anything else (a
  list, a struct, binary, a date) is refused naming the file and the column (:func:`check_types`, which also wants a
  ``docid`` column of strings), and so is a string that is not a number, naming the row;
- in float32 storage, a finite value beyond float32's range would become an infinity in the cast: a score, a split or
  a training set built from a number the file does not hold. It is refused as ``convert`` refuses it in text, naming
  the file, the column and the row. In float64 storage there is no cast to overflow and no check.

A value that is already an infinity or NaN in the file is kept, as ``convert`` keeps the literals ``inf`` and ``nan``
(LightGBM reads NaN as a missing value and an infinity beyond every bin).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from rankcli.errors import InputError, SchemaError

#: The largest finite float32, as ``convert``'s message prints it.
FLOAT32_MAX_TEXT = "3.4028235e+38"
#: The footer key (without ``rankcli.``) that names the precision of a dataset's features; float32 when absent.
FEATURE_DTYPE_KEY = "feature_dtype"
#: The precisions a dataset's features may have, by the footer's name for them.
PRECISIONS = {"float32": np.dtype(np.float32), "float64": np.dtype(np.float64)}


def declared_dtype(metadata: dict, path: Path | str = "") -> np.dtype:
    """The features' dtype a file's ``rankcli.*`` footer keys (``metadata``, prefix removed; bytes or str) declare:
    float32 without :data:`FEATURE_DTYPE_KEY`; another value is a :class:`SchemaError` naming the file."""
    value = metadata.get(FEATURE_DTYPE_KEY, metadata.get(FEATURE_DTYPE_KEY.encode()))
    if value is None:
        return PRECISIONS["float32"]
    value = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    if value not in PRECISIONS:
        raise SchemaError(f"{path}: footer key rankcli.{FEATURE_DTYPE_KEY} must be float32 or float64, got "
                          f"{value[:40]!r}")
    return PRECISIONS[value]


def table_dtype(table) -> np.dtype:
    """The features' dtype an Arrow table read from a dataset file declares (its schema's footer metadata)."""
    meta = table.schema.metadata or {}
    return declared_dtype({k[len(b"rankcli."):]: v for k, v in meta.items() if k.startswith(b"rankcli.")})


def precision_name(dtype: np.dtype) -> str:
    """``float32`` or ``float64``: the name of a features' dtype, as the footer and ``rankcli.json`` write it."""
    return "float64" if np.dtype(dtype) == np.float64 else "float32"


def _label_problem(arrow_type) -> bool:
    """Whether a column of ``arrow_type`` cannot be the label column: numbers only (every reader of labels casts them
    to float64; a string, even of numbers, is refused rather than parsed by some readers and not others)."""
    import pyarrow as pa

    t = arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type
    return not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
                or pa.types.is_decimal(t) or pa.types.is_null(t))


def _type_problem(arrow_type, docid: bool) -> str | None:
    """Why a column of ``arrow_type`` cannot be a feature (``docid``: the docid column) column, or None."""
    import pyarrow as pa

    t = arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type
    if docid:
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t):
            return None
        return "the documents' names are strings: cast the column to string"
    if (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t) or pa.types.is_decimal(t)
            or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t)):
        return None
    listed = pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
    return ("a feature column holds one number per row (integer or floating point)"
            + ("; a list of numbers is one column per number (f1, f2, ...)" if listed else ""))


def check_types(schema, feature_names: list[str], path: Path | str) -> None:
    """Refuse (:class:`SchemaError`, exit 3, naming the file and the column) a ``docid`` column that is not strings
    (int64, binary), a ``label`` column that does not hold numbers, and a feature column among ``feature_names``
    that does not hold numbers (a list, a struct, binary, a date) in the Arrow ``schema`` of the dataset file
    ``path``."""
    wanted = set(feature_names)
    for field in schema:
        if field.name == "label" and _label_problem(field.type):
            raise SchemaError(f"{path}: column label: {field.type} is not a label type; a label column holds one "
                              "number per row (integer or floating point)")
        if field.name == "docid" or field.name in wanted:
            problem = _type_problem(field.type, field.name == "docid")
            if problem is not None:
                raise SchemaError(f"{path}: column {field.name}: {field.type} is not a "
                                  f"{'docid' if field.name == 'docid' else 'feature'} type; {problem}")


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
                      f"{FLOAT32_MAX_TEXT}), the type of every feature; rescale the column, or store the features as "
                      f"float64 (convert --float64, or the footer key rankcli.{FEATURE_DTYPE_KEY} = float64; an "
                      "infinity or NaN stored as such is kept)")


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


def to_features(values: np.ndarray, path: Path | str, column: str, row_of: Callable[[int], int] = int,
                dtype: np.dtype = PRECISIONS["float32"]) -> np.ndarray:
    """``values`` (one numeric feature column) in the storage precision ``dtype``: float64 as they are (no check: no
    cast can overflow), float32 through :func:`to_float32`'s check."""
    if np.dtype(dtype) == np.float64:
        return values.astype(np.float64, copy=False)
    return to_float32(values, path, column, row_of)


def _numbers(column, path: Path | str, name: str, row_of: Callable[[int], int]):
    """A string feature column parsed as float64 (Arrow's correctly rounded parser, ``convert``'s); the first string
    that is not a number is an :class:`InputError` naming its row."""
    import pyarrow as pa

    from rankcli.formats.svmlight import cast_strings

    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    values, bad = cast_strings(column, pa.float64())
    if values is None:
        raise InputError(f"{path}: column {name}: {column[bad].as_py()!r} at row {row_of(bad)} is not a number "
                         "(a string feature column holds numbers)")
    return values


def feature_array(column, path: Path | str, name: str, row_of: Callable[[int], int] = int,
                  dtype: np.dtype = PRECISIONS["float32"]) -> np.ndarray:
    """One feature column (an Arrow array or chunked array of a file whose types :func:`check_types` accepted) as a
    numpy array of ``dtype``: strings parsed as numbers (the first that is not one refused naming its row, from
    ``row_of``), then :func:`to_features`. A missing value (null) is NaN, LightGBM's missing value."""
    import pyarrow as pa

    from rankcli.formats.arrow import column_to_numpy

    t = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        values = _numbers(column, path, name, row_of)
    else:
        if pa.types.is_dictionary(column.type):
            column = column.cast(t)
        if pa.types.is_null(t) or pa.types.is_boolean(t) or pa.types.is_decimal(t) or column.null_count:
            column = column.cast(pa.float64())  # nulls become NaN below, booleans 0 and 1
        values = column_to_numpy(column)
    return to_features(values, path, name, row_of, dtype)


def check_columns(table, names: list[str], path: Path | str, first_row: int = 0) -> None:
    """Refuse, as :func:`feature_array` does, the feature columns ``names`` of the Arrow ``table`` (rows
    ``first_row`` on of ``path``) that are not numbers, hold a string that is not a number, or (float32 storage, the
    table's footer says which) a finite value beyond float32: what a reader that keeps the columns as they are
    (``split``) or casts them in Arrow (``export``, the click logs) checks first."""
    import pyarrow as pa

    check_types(table.schema, names, path)
    dtype = table_dtype(table)
    for name in names:
        column = table.column(name)
        numeric = pa.types.is_floating(column.type) and not pa.types.is_dictionary(column.type)
        if numeric and (column.type.bit_width <= 32 or dtype == np.float64):
            continue  # nothing to parse, nothing that can overflow
        if numeric or not pa.types.is_integer(column.type):
            feature_array(column, path, name, lambda i: first_row + i, dtype)
