"""Small result tables (one row per feature, per query, ...) written as Parquet or CSV, chosen by the file's extension.

Columns are given as lists or numpy arrays: strings, integers or floats; ``None`` and NaN become nulls (an empty CSV
field), so that a missing number is never written as a number. Written atomically (:mod:`rankcli.formats.atomic`);
``-`` writes CSV to standard output.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rankcli.errors import UsageError
from rankcli.formats.arrow import array_from_numpy, strings_array
from rankcli.formats.atomic import STDOUT, atomic_path
from rankcli.formats.parquet import WRITE_OPTIONS, encode_metadata

#: The extensions of the table formats.
EXTENSIONS = {".parquet": "parquet", ".csv": "csv"}


def table_format(path: Path | str, option: str = "-o") -> str:
    """``parquet`` or ``csv`` by ``path``'s extension (``-``: CSV on standard output); another one is a
    :class:`UsageError` naming ``option``."""
    if str(path) == STDOUT:
        return "csv"
    fmt = EXTENSIONS.get(Path(path).suffix.lower())
    if fmt is None:
        raise UsageError(f"{option} {path}: the format is chosen by the extension, .parquet or .csv")
    return fmt


def _column(values) -> pa.Array:
    items = list(values) if not isinstance(values, np.ndarray) else values
    if isinstance(items, np.ndarray) and items.dtype.kind in "iuf":
        arr = items
    elif all(v is None or isinstance(v, str) for v in items):
        return strings_array([None if v is None else v.encode("utf-8") for v in items])
    elif all(v is None or (isinstance(v, (int, np.integer)) and not isinstance(v, bool)) for v in items) \
            and any(v is not None for v in items):
        valid = np.array([v is not None for v in items])
        arr = np.array([0 if v is None else int(v) for v in items], dtype=np.int64)
        return _with_nulls(array_from_numpy(arr, pa.int64()), valid)
    else:
        arr = np.array([np.nan if v is None else float(v) for v in items], dtype=np.float64)
    if arr.dtype.kind == "f":
        valid = np.isfinite(arr)
        return _with_nulls(array_from_numpy(np.where(valid, arr, 0.0), pa.float64()), valid)
    return array_from_numpy(arr)


def _with_nulls(arr: pa.Array, valid: np.ndarray) -> pa.Array:
    if valid.all():
        return arr
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(arr.type, len(arr), [bitmap, arr.buffers()[1]])


def write_columns(path: Path | str, columns: dict, *, overwrite: bool = False, metadata: dict | None = None,
                  file_kind: str | None = None) -> None:
    """Write ``columns`` (name -> values, all of one length) to ``path``: Parquet or CSV by its extension
    (:func:`table_format`), atomically; ``metadata``: Parquet footer keys (``rankcli.*``); ``file_kind``: what the
    table is (:mod:`~rankcli.formats.atomic.kinds`): an existing file of another kind is refused."""
    import pyarrow.csv as pacsv

    fmt = table_format(path)
    table = pa.table({name: _column(values) for name, values in columns.items()})
    with atomic_path(path, overwrite, file_kind=file_kind) as tmp:
        if fmt == "parquet":
            table = table.replace_schema_metadata(encode_metadata(metadata or {}))
            pq.write_table(table, str(tmp), **WRITE_OPTIONS)
        else:
            pacsv.write_csv(table, str(tmp))
