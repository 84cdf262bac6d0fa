"""Arrow <-> numpy without pandas: the conversions every format module uses.

pyarrow 26 imports pandas (about a second at process start) in ``pa.array``, ``pa.scalar``, ``Array.to_numpy`` and
whenever a Python literal is passed to a ``pyarrow.compute`` function. The fixed-width numeric arrays and the strings
of the data model need none of it: their Arrow buffers are numpy's memory, so these functions build one from the
other directly (zero-copy where the layout allows) and fall back to pyarrow's own conversion for anything else.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def _plain_numeric(arrow_type: pa.DataType) -> bool:
    """An integer or floating type whose values are one numpy scalar each (float16 has no exact numpy buffer view)."""
    return pa.types.is_integer(arrow_type) or (pa.types.is_floating(arrow_type)
                                               and not pa.types.is_float16(arrow_type))


def _text(arrow_type: pa.DataType) -> bool:
    return (pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type) or pa.types.is_binary(arrow_type)
            or pa.types.is_large_binary(arrow_type))


def array_from_numpy(values: np.ndarray, type: pa.DataType | None = None) -> pa.Array:
    """``pa.array(values, type)`` without importing pandas.

    Parameters
    ----------
    values : a 1-D numeric array (cast to ``type``'s numpy dtype when they differ; zero-copy when contiguous and of
        that dtype). Anything else (strings, objects, booleans, 2-D) goes through ``pa.array``.
    type : the Arrow type; default: the one of ``values``' dtype.
    """
    values = np.asarray(values)
    if values.ndim == 1 and values.dtype.kind in "iuf":
        arrow_type = type if type is not None else pa.from_numpy_dtype(values.dtype)
        if _plain_numeric(arrow_type):
            data = np.ascontiguousarray(values, dtype=np.dtype(arrow_type.to_pandas_dtype()))
            return pa.Array.from_buffers(arrow_type, data.shape[0], [None, pa.py_buffer(data)])
    return pa.array(values, type)


def column_to_numpy(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A column as numpy without importing pandas.

    For the fixed-width numeric chunks without nulls that the data model uses, the data buffer is viewed directly
    (exact, and copy-free for one chunk); strings and bytes become an object array of ``str``/``bytes`` (``None``
    for a null) by way of Python objects, as ``to_numpy`` would make them, which about matches its speed; other
    chunks (nulls in numbers, booleans) fall back to ``to_numpy``.
    """
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    parts = []
    for chunk in chunks:
        if chunk.null_count == 0 and _plain_numeric(chunk.type):
            dtype = np.dtype(chunk.type.to_pandas_dtype())
            buf = chunk.buffers()[1]
            parts.append(np.frombuffer(buf, dtype=dtype, count=chunk.offset + len(chunk))[chunk.offset:]
                         if buf is not None else np.zeros(0, dtype=dtype))
        elif _text(chunk.type):
            parts.append(np.array(chunk.to_pylist(), dtype=object))
        else:
            parts.append(chunk.to_numpy(zero_copy_only=False))
    if not parts:
        return np.zeros(0, dtype=np.dtype(column.type.to_pandas_dtype()))
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def strings_array(items: list) -> pa.Array:
    """An Arrow string array from a list of ``bytes`` (UTF-8) or ``None`` (a null); bytes that are not UTF-8 are
    decoded with replacement characters."""
    n = len(items)
    valid = np.fromiter((x is not None for x in items), dtype=bool, count=n)
    lengths = np.fromiter((len(x) if x is not None else 0 for x in items), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    data = b"".join(x for x in items if x is not None)
    bitmap = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    arr = pa.Array.from_buffers(pa.binary(), n, [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)])
    try:
        return arr.cast(pa.string())
    except pa.ArrowInvalid:
        fixed = [None if x is None else x.decode("utf-8", "replace").encode() for x in items]
        return strings_array(fixed)


def scalar(value: str | float | int | None, type: pa.DataType | None = None) -> pa.Scalar:
    """``pa.scalar(value, type)`` without importing pandas, for the arguments of ``pyarrow.compute`` functions.

    Parameters
    ----------
    value : a string (a string scalar), ``None`` (a null of ``type``, default string) or a number (a scalar of
        ``type``, default float64).
    type : the Arrow type.
    """
    if value is None:
        return pa.nulls(1, type if type is not None else pa.string())[0]
    if isinstance(value, str):
        return strings_array([value.encode()])[0]
    return array_from_numpy(np.array([value]), type if type is not None else pa.float64())[0]


def strings_from_bytes(values: np.ndarray) -> pa.Array:
    """An Arrow string array from a numpy ``S`` array (fixed-width, NUL-padded, no NUL inside a value), without a
    Python object per value; bytes that are not UTF-8 are an ``ArrowInvalid``."""
    values = np.ascontiguousarray(values)
    n, width = values.shape[0], values.dtype.itemsize
    lengths = np.char.str_len(values).astype(np.int64) if n else np.zeros(0, dtype=np.int64)
    grid = values.view(np.uint8).reshape(n, width)
    data = grid[np.arange(width)[None, :] < lengths[:, None]]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    large = offsets[-1] >= 2 ** 31
    arr = pa.Array.from_buffers(pa.large_binary() if large else pa.binary(), n,
                                [None, pa.py_buffer(offsets if large else offsets.astype(np.int32)),
                                 pa.py_buffer(data)])
    return arr.cast(pa.large_string() if large else pa.string())
