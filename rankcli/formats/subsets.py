"""A dataset file read whole and written back as subsets of its queries (``rankcli split``): every column and footer
key kept, rows in the order asked for, row groups on query boundaries."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rankcli.dataset import offsets_from_qids
from rankcli.errors import InputError, SchemaError
from rankcli.formats.arrow import array_from_numpy, column_to_numpy
from rankcli.formats.feature_values import check_columns
from rankcli.formats.parquet import (
    column_names,
    feature_columns,
    qids_as_int64,
    read_metadata,
    read_table,
    require_columns,
    write_table,
)


@dataclass
class Source:
    """A dataset file in memory: its ``table`` (every column), its query ``offsets``, its ``rankcli.*`` footer keys
    (``metadata``), the columns worth Parquet dictionary encoding (``dictionary``) and, when grouped, one integer code
    per row of the grouping column (``group_codes``)."""

    path: Path
    table: pa.Table
    offsets: np.ndarray
    metadata: dict[str, str]
    dictionary: list[str]
    group_codes: np.ndarray | None = None

    @property
    def n_queries(self) -> int:
        """The number of queries."""
        return int(self.offsets.shape[0] - 1)

    @property
    def qids(self) -> np.ndarray:
        """The qid of every query, in file order."""
        return column_to_numpy(self.table.column("qid"))[self.offsets[:-1]]


def _group_codes(path: Path, table: pa.Table, column: str) -> np.ndarray:
    """One integer code per row of ``column`` (equal values, equal codes, numbered by first appearance); a missing
    value is an :class:`InputError` naming its row. Floating-point values group as numbers compare: -0.0 and 0.0
    are one value (Arrow's encoding, which compares bits, would make them two groups), and NaN, equal to nothing and
    how a missing float is often written, is refused as a missing value is."""
    names = table.column_names
    if column not in names:
        raise InputError(f"{path}: no column {column!r} to group by (columns: {', '.join(names[:12])}"
                         f"{', ...' if len(names) > 12 else ''})")
    col = table.column(column)
    if pa.types.is_nested(col.type) or pa.types.is_null(col.type):
        raise SchemaError(f"{path}: column {column} holds {col.type} values, which do not group: --group-by takes a "
                          "column of single values (integers, strings, numbers, booleans)")
    if col.null_count:
        row = int(np.argmax(column_to_numpy(col.is_null().cast(pa.int8()))))
        raise InputError(f"{path}: column {column}: missing value at row {row}; every row needs a value to group by")
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_floating(col.type):
        values = column_to_numpy(col).astype(np.float64)
        nan = np.isnan(values)
        if nan.any():
            raise InputError(f"{path}: column {column}: NaN at row {int(np.argmax(nan))}; every row needs a value to "
                             "group by (NaN equals no value, not even itself)")
        col = array_from_numpy(values + 0.0)  # -0.0 + 0.0 is 0.0: one key for the two zeros
    encoded = pc.dictionary_encode(col)
    return column_to_numpy(encoded.indices).astype(np.int64)


def _dictionary_columns(table: pa.Table, sample_rows: int = 20_000) -> list[str]:
    """The columns worth dictionary encoding: every column but floating-point ones, and those (labels, LETOR's
    three-decimal features) with few distinct values in the first rows. Full-precision features are nearly all
    distinct: a dictionary only costs time there (several times) and space."""
    n = min(table.num_rows, sample_rows)
    out = []
    for name, column in zip(table.column_names, table.columns):
        if not pa.types.is_floating(column.type):
            out.append(name)
        elif n and np.unique(column_to_numpy(column.slice(0, n))).shape[0] * 8 <= n:
            out.append(name)
    return out


def read_source(path: Path | str, group_by: str | None = None) -> Source:
    """Read the dataset ``path`` whole (``qid`` and ``label`` required, queries contiguous, at least one row), with the
    codes of the ``group_by`` column when given."""
    path = Path(path)
    require_columns(path, column_names(path), ["qid", "label"])
    table = read_table(path)
    if table.num_rows == 0:
        raise InputError(f"{path}: no rows; there are no queries to split")
    qids = qids_as_int64(path, table.column("qid"))
    try:
        offsets = offsets_from_qids(qids)
    except InputError as exc:
        raise SchemaError(f"{path}: {exc}") from None
    if not pa.types.is_int64(table.schema.field("qid").type):  # an int32 or uint64 qid column, read exactly
        table = table.set_column(table.schema.get_field_index("qid"), "qid", pa.array(qids, pa.int64()))
    check_columns(table, feature_columns(table.column_names), path)  # as every reader of features does
    codes = _group_codes(path, table, group_by) if group_by is not None else None
    meta = {k: v for k, v in read_metadata(path).items() if k != "version"}
    return Source(path, table, offsets, meta, _dictionary_columns(table), codes)


def query_rows(offsets: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """The row numbers of ``queries`` (query numbers, in the order given), each query's rows in order."""
    offsets = np.asarray(offsets, dtype=np.int64)
    queries = np.asarray(queries, dtype=np.int64)
    sizes = np.diff(offsets)[queries]
    starts = offsets[queries]
    ends = np.cumsum(sizes)
    return np.repeat(starts - (ends - sizes), sizes) + np.arange(int(ends[-1]) if ends.shape[0] else 0)


def write_queries(source: Source, queries: np.ndarray, path: Path | str, metadata: dict[str, object]) -> int:
    """Write the ``queries`` of ``source`` (query numbers, in that order) to ``path`` atomically: every column, the
    source's footer keys and ``metadata``. Returns the number of rows written."""
    rows = query_rows(source.offsets, queries)
    table = source.table.take(pa.array(rows, pa.int64()))
    write_table(path, table, metadata={**source.metadata, **metadata}, use_dictionary=source.dictionary)
    return int(table.num_rows)


def file_digest(path: Path | str) -> str:
    """The BLAKE2b-256 digest of the bytes of ``path``, in hex: which file a split was made from."""
    h = hashlib.blake2b(digest_size=32)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
