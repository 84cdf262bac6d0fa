"""Parquet datasets and runs: the schema of the data model, query-aligned row groups, atomic writes.

Data model (DESIGN.md): ``qid`` int64, ``label`` float64, optional ``docid`` string, ``f1..fN`` float32, or float64
when the footer says so (``rankcli.feature_dtype``; the SVMlight feature index is the column's number). Footer
key-value metadata records the kind of file, its source, the feature count and the rankcli version. Row groups end on
query boundaries: a query never spans two row groups, so a reader can split work by row group.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rankcli import __version__
from rankcli.dataset import Dataset, offsets_from_qids
from rankcli.errors import InputError, SchemaError
from rankcli.formats.arrow import array_from_numpy, column_to_numpy
from rankcli.formats.atomic import atomic_path, kinds
from rankcli.formats.feature_values import (
    FEATURE_DTYPE_KEY,
    PRECISIONS,
    check_types,
    declared_dtype,
    feature_array,
    precision_name,
    table_dtype,
)
from rankcli.formats.inputs import unreadable_input
from rankcli.formats.svmlight_text import looks_like_svmlight, svmlight_hint

META_PREFIX = "rankcli."
FEATURE_COLUMN = re.compile(r"^f([1-9][0-9]*)$")
#: Target rows per row group; a query larger than this gets a row group of its own.
ROW_GROUP_ROWS = 131_072
#: How every Parquet file rankcli writes is encoded: zstd pages, each carrying its CRC-32 (Parquet's page checksum),
#: so that a reader tells a changed byte from data (every read verifies the checksums a file has: :func:`open_parquet`).
WRITE_OPTIONS = {"compression": "zstd", "write_page_checksum": True}
#: Whether reads verify the page checksums a file carries (a name, so that bench/checksums.py can measure the cost).
VERIFY_PAGE_CHECKSUMS = True


def feature_names(n_features: int) -> list[str]:
    """The data model's feature column names ``f1 .. f<n_features>``."""
    return [f"f{i}" for i in range(1, n_features + 1)]


def feature_columns(names: Iterable[str]) -> list[str]:
    """The feature columns among ``names``, ordered by their index."""
    found = [(int(m.group(1)), n) for n in names if (m := FEATURE_COLUMN.match(n))]
    return [n for _, n in sorted(found)]


def dataset_schema(n_features: int, with_docid: bool = False, with_comment: bool = False,
                   dtype: np.dtype = PRECISIONS["float32"]) -> pa.Schema:
    """The Arrow schema of a dataset file: ``qid`` int64, ``label`` float64, optional ``docid`` and ``comment``
    strings (``with_docid``, ``with_comment``), then ``n_features`` feature columns of ``dtype`` (float32, or float64);
    all but the strings non-nullable."""
    fields = [pa.field("qid", pa.int64(), nullable=False), pa.field("label", pa.float64(), nullable=False)]
    if with_docid:
        fields.append(pa.field("docid", pa.string()))
    if with_comment:
        fields.append(pa.field("comment", pa.string()))
    ftype = pa.from_numpy_dtype(np.dtype(dtype))
    fields += [pa.field(name, ftype, nullable=False) for name in feature_names(n_features)]
    return pa.schema(fields)


def encode_metadata(meta: dict[str, object]) -> dict[bytes, bytes]:
    """Parquet footer key-value metadata: each ``meta`` item as ``rankcli.<key>`` (a string as is, anything else as
    JSON), plus ``rankcli.version``."""
    out = {b"rankcli.version": __version__.encode()}
    for key, value in meta.items():
        text = value if isinstance(value, str) else json.dumps(value)
        out[(META_PREFIX + key).encode()] = text.encode()
    return out


def read_metadata(path: Path | str) -> dict[str, str]:
    """The ``rankcli.*`` footer keys of a Parquet file, without the prefix."""
    meta = open_parquet(path).schema_arrow.metadata or {}
    return {k.decode()[len(META_PREFIX):]: v.decode() for k, v in meta.items() if k.startswith(META_PREFIX.encode())}


def query_aligned_groups(offsets: np.ndarray, target_rows: int = ROW_GROUP_ROWS) -> np.ndarray:
    """Row boundaries (starting with 0, ending with n) of row groups of about ``target_rows`` rows, on query ends."""
    n = int(offsets[-1])
    if n == 0:
        return np.array([0, 0], dtype=np.int64)
    cuts = [0]
    # The first query boundary at or after each multiple of target_rows.
    wanted = np.arange(target_rows, n, target_rows)
    idx = np.searchsorted(offsets, wanted, side="left")
    for b in np.unique(offsets[idx]):
        if b > cuts[-1] and b < n:
            cuts.append(int(b))
    cuts.append(n)
    return np.array(cuts, dtype=np.int64)


class QueryAlignedWriter:
    """Streams tables into one Parquet file, each ``write`` call's queries whole, row groups ending on queries."""

    def __init__(self, path: Path, schema: pa.Schema, metadata: dict[str, object] | None = None,
                 target_rows: int = ROW_GROUP_ROWS, use_dictionary: bool | list[str] = True):
        # use_dictionary: as pyarrow's; ["qid", "label"] writes float feature columns plain, which is several times
        # faster and smaller for real-valued features (dictionary pages overflow and fall back anyway).
        self._schema = schema.with_metadata(encode_metadata(metadata or {}))
        self._writer = pq.ParquetWriter(str(path), self._schema, use_dictionary=use_dictionary, **WRITE_OPTIONS)
        self._target_rows = target_rows
        self.rows = 0

    def write(self, table: pa.Table, offsets: np.ndarray | None = None) -> None:
        """Write ``table`` whose rows are whole queries (``offsets`` computed from ``qid`` when not given)."""
        if table.num_rows == 0:
            return
        if offsets is None:
            offsets = offsets_from_qids(column_to_numpy(table.column("qid")))
        table = table.cast(self._schema.remove_metadata()) if table.schema != self._schema.remove_metadata() else table
        cuts = query_aligned_groups(offsets, self._target_rows)
        for start, stop in zip(cuts[:-1], cuts[1:]):
            chunk = table.slice(int(start), int(stop - start))
            self._writer.write_table(chunk, row_group_size=max(chunk.num_rows, 1))
        self.rows += table.num_rows

    def write_group(self, table: pa.Table) -> None:
        """Write ``table`` (whole queries) as one row group, as it is."""
        table = table.cast(self._schema.remove_metadata()) if table.schema != self._schema.remove_metadata() else table
        self._writer.write_table(table, row_group_size=max(table.num_rows, 1))
        self.rows += table.num_rows

    def close(self) -> None:
        self._writer.close()

    def __enter__(self) -> QueryAlignedWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def write_table(path: Path | str, table: pa.Table, *, metadata: dict[str, object] | None = None,
                overwrite: bool = False, query_aligned: bool = True, use_dictionary: bool | list[str] = True) -> None:
    """Write a whole table atomically. With ``query_aligned`` the table must have a contiguous ``qid`` column.
    ``use_dictionary`` as pyarrow's (``True``: every column). An existing file is replaced only when it is of the
    kind the footer's ``kind`` names (:func:`rankcli.formats.atomic.kinds.parquet_kind`)."""
    with atomic_path(path, overwrite, file_kind=kinds.parquet_kind(metadata or {})) as tmp:
        if query_aligned:
            with QueryAlignedWriter(tmp, table.schema, metadata, use_dictionary=use_dictionary) as writer:
                writer.write(table)
        else:
            schema = table.schema.with_metadata(encode_metadata(metadata or {}))
            pq.write_table(table.replace_schema_metadata(schema.metadata), str(tmp), use_dictionary=use_dictionary,
                           **WRITE_OPTIONS)


def dataset_table(ds: Dataset, extra_columns: dict[str, np.ndarray] | None = None) -> pa.Table:
    """The Arrow table of a :class:`Dataset` in the data model's column order."""
    columns: dict[str, pa.Array] = {
        "qid": array_from_numpy(ds.qids, pa.int64()),
        "label": array_from_numpy(ds.labels, pa.float64()),
    }
    if ds.docids is not None:
        columns["docid"] = pa.array(ds.docids, pa.string())
    for name, values in (extra_columns or {}).items():
        columns[name] = array_from_numpy(values)
    if ds.features is not None:
        ftype = pa.float64() if ds.features.dtype == np.float64 else pa.float32()  # float64 storage stays float64
        for j, name in enumerate(ds.feature_names):
            columns[name] = array_from_numpy(ds.features[:, j], ftype)
    return pa.table(columns)


def write_dataset(path: Path | str, ds: Dataset, *, metadata: dict[str, object] | None = None,
                  overwrite: bool = False, extra_columns: dict[str, np.ndarray] | None = None,
                  use_dictionary: bool | list[str] = True) -> None:
    """Write the dataset ``ds`` atomically to ``path`` (footer kind ``dataset`` and its feature count, plus
    ``metadata``, and ``feature_dtype`` when the features are float64); ``extra_columns`` are added after the docid;
    ``overwrite`` and ``use_dictionary`` as :func:`write_table`."""
    meta = {"kind": "dataset", "num_features": ds.n_features, **(metadata or {})}
    if ds.features is not None and ds.features.dtype == np.float64:
        meta[FEATURE_DTYPE_KEY] = precision_name(ds.features.dtype)
    write_table(path, dataset_table(ds, extra_columns), metadata=meta, overwrite=overwrite,
                use_dictionary=use_dictionary)


def read_error(path: Path | str, exc: Exception, what: str = "") -> InputError:
    """Arrow's error reading pages of ``path`` (``what``: which part, e.g. "row group 3") as the input error that names
    the file; a page whose checksum does not match is said to be damaged."""
    where = f" {what}" if what else ""
    if "checksum" in str(exc).lower() or "page integrity" in str(exc).lower():
        return InputError(f"{path}: damaged: a page of{where or ' the file'} does not match its checksum (a byte "
                          f"changed on disk or in transit); restore the file or write it again ({exc})")
    return InputError(f"{path}: cannot read{where} ({exc})")


@contextmanager
def reading(path: Path | str, what: str = "") -> Iterator[None]:
    """Reads of ``path``'s pages inside: Arrow's errors become :func:`read_error`'s (exit 3, naming the file)."""
    try:
        yield
    except (pa.ArrowInvalid, OSError) as exc:
        raise read_error(path, exc, what) from None


def open_parquet(path: Path | str) -> pq.ParquetFile:
    """Open a Parquet file for reading, or raise the input error that names why not (missing, a directory, not
    Parquet, a column name given twice). Every page read through it is checked against its checksum when the file
    has one (rankcli writes them: :data:`WRITE_OPTIONS`); a page that fails is :func:`read_error`'s "damaged"."""
    path = Path(path)
    if not path.exists():
        raise unreadable_input(path)
    if path.is_dir():
        raise InputError(f"{path}: is a directory, expected a Parquet file")
    try:
        pf = pq.ParquetFile(str(path), page_checksum_verification=VERIFY_PAGE_CHECKSUMS)
    except (pa.ArrowInvalid, OSError) as exc:
        if looks_like_svmlight(path):
            raise InputError(f"{path}: not Parquet; {svmlight_hint(path)}") from None
        raise InputError(f"{path}: not a readable Parquet file ({exc})") from None
    names = pf.schema_arrow.names
    if len(set(names)) != len(names):
        seen: set[str] = set()
        dup = next(n for n in names if n in seen or seen.add(n))
        raise SchemaError(f"{path}: column {dup} appears {names.count(dup)} times; column names must be unique "
                          "(which one would be read?)")
    return pf


def read_table(path: Path | str, columns: list[str] | None = None) -> pa.Table:
    """The ``columns`` (all when ``None``) of a Parquet file; an unreadable file is an :class:`InputError`."""
    pf = open_parquet(path)
    with reading(path):
        return pf.read(columns=columns)


def column_names(path: Path | str) -> list[str]:
    """The column names of a Parquet file, from its footer."""
    return list(open_parquet(path).schema_arrow.names)


#: The data model's qid is int64: a uint64 column is read exactly up to this, and refused beyond.
INT64_MAX = 2 ** 63 - 1


def qids_as_int64(path: Path | str, column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """An integer ``qid`` column as int64, exactly: a uint64 value beyond int64 is refused, never wrapped to a
    negative id. Another type is a :class:`SchemaError`."""
    if not pa.types.is_integer(column.type):
        raise SchemaError(f"{path}: column qid must be integer, got {column.type}")
    if column.null_count:
        raise SchemaError(f"{path}: column qid: missing value at row "
                          f"{int(np.argmax(column_to_numpy(column.is_null().cast(pa.int8()))))}")
    values = column_to_numpy(column)
    if values.dtype == np.uint64 and values.size:
        over = np.flatnonzero(values > np.uint64(INT64_MAX))
        if over.size:
            row = int(over[0])
            raise SchemaError(f"{path}: column qid: {int(values[row])} at row {row} is beyond the int64 range of "
                              f"query ids (at most {INT64_MAX}); renumber the queries")
    return values.astype(np.int64, copy=False)


def require_columns(path: Path | str, names: list[str], required: Iterable[str]) -> None:
    """A :class:`SchemaError` naming the ``required`` columns missing from ``names`` (the columns of ``path``)."""
    missing = [c for c in required if c not in names]
    if missing:
        raise SchemaError(f"{path}: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                          f"(found: {', '.join(names[:12])}{', ...' if len(names) > 12 else ''})")


def features_matrix(table: pa.Table, names: list[str], path: Path | str = "", first_row: int = 0,
                    dtype: np.dtype | None = None) -> np.ndarray:
    """Stack feature columns into a Fortran-ordered matrix (column fills are contiguous; LightGBM takes it) of
    ``dtype`` (default: the precision the table's footer declares, float32 without one); each column passes the one
    check of feature values (:func:`rankcli.formats.feature_values.feature_array`), its rows named as row
    ``first_row + i`` of ``path``."""
    check_types(table.schema, names, path)
    dtype = table_dtype(table) if dtype is None else np.dtype(dtype)
    out = np.empty((table.num_rows, len(names)), dtype=dtype, order="F")
    for j, name in enumerate(names):
        at = 0
        for chunk in table.column(name).chunks:  # chunk by chunk: no concatenated temporary per column
            n = len(chunk)
            out[at:at + n, j] = feature_array(chunk, path, name, lambda i, a=at: first_row + a + i, dtype)
            at += n
    return out


#: Feature columns decoded at once when a file's features are read row group by row group: Arrow's copy of them is
#: the only transient next to the float32 matrix.
COLUMNS_AT_ONCE = 16


def read_row_group_features(pf: pq.ParquetFile, group: int, names: list[str], out: np.ndarray,
                            path: Path | str) -> None:
    """Decode the feature columns ``names`` of row group ``group`` of ``pf`` into ``out`` (``(rows of the group,
    len(names))`` of the file's precision, :func:`feature_dtype`; Fortran order is fastest), :data:`COLUMNS_AT_ONCE`
    columns at a time, each through the one check of feature values."""
    for at in range(0, len(names), COLUMNS_AT_ONCE):
        chunk_names = names[at:at + COLUMNS_AT_ONCE]
        with reading(path, f"row group {group}"):
            table = pf.read_row_group(group, columns=chunk_names)
        for j, name in enumerate(chunk_names):
            out[:, at + j] = feature_array(table.column(name), path, name, lambda i: _group_start(pf, group) + i,
                                           out.dtype)
        del table


def _group_start(pf: pq.ParquetFile, group: int) -> int:
    """The file's row number of the first row of row group ``group``."""
    return sum(pf.metadata.row_group(i).num_rows for i in range(group))


def feature_dtype(path: Path | str, pf: pq.ParquetFile | None = None) -> np.dtype:
    """The precision of the features of the dataset file ``path`` (``pf``: it, already open): float64 when its footer
    says so (``convert --float64``), else float32 (:func:`rankcli.formats.feature_values.declared_dtype`)."""
    meta = (pf if pf is not None else open_parquet(path)).schema_arrow.metadata or {}
    return declared_dtype({k[len(META_PREFIX):]: v for k, v in meta.items() if k.startswith(META_PREFIX.encode())},
                          path)


def check_dataset_types(path: Path | str, pf: pq.ParquetFile | None = None) -> list[str]:
    """The feature columns of the dataset file ``path`` (``pf``: it, already open) once their types, the docid's and
    the footer's precision are checked (:func:`rankcli.formats.feature_values.check_types`): what every reader of a
    dataset checks before it reads a row."""
    pf = pf if pf is not None else open_parquet(path)
    names = feature_columns(pf.schema_arrow.names)
    check_types(pf.schema_arrow, names, path)
    feature_dtype(path, pf)
    return names


def read_features(path: Path | str, names: list[str]) -> np.ndarray:
    """The feature columns ``names`` of a Parquet file as a Fortran-ordered matrix of the file's precision
    (:func:`feature_dtype`), read row group by row group (no Arrow copy of the whole matrix)."""
    pf = open_parquet(path)
    meta = pf.metadata
    out = np.empty((meta.num_rows, len(names)), dtype=feature_dtype(path, pf), order="F")
    at = 0
    for group in range(meta.num_row_groups):
        n = meta.row_group(group).num_rows
        read_row_group_features(pf, group, names, out[at:at + n], path)
        at += n
    return out


def read_dataset(path: Path | str, *, features: bool = True, label_required: bool = True,
                 extra_columns: Iterable[str] = (), docids: bool = True) -> Dataset:
    """Read a dataset file into the data model.

    Parameters
    ----------
    path : a Parquet dataset (``qid``, ``label``, optional ``docid``, ``f1 .. fN``), queries contiguous.
    features : read the feature matrix; ``False`` skips it (metrics need none).
    label_required : refuse a file without ``label`` (else the labels are NaN).
    extra_columns : other columns to read into :attr:`Dataset.extra` when the file has them.
    docids : read the ``docid`` column when there is one (training needs none).
    """
    names = column_names(path)
    require_columns(path, names, ["qid", "label"] if label_required else ["qid"])
    fnames = check_dataset_types(path)
    with_docids = docids and "docid" in names
    wanted = ["qid"] + (["label"] if "label" in names else []) + (["docid"] if with_docids else [])
    wanted += [c for c in extra_columns if c in names and c not in wanted]
    table = read_table(path, wanted)
    qids = np.array(qids_as_int64(path, table.column("qid")))  # a writable copy, as to_numpy gave
    labels = (column_to_numpy(table.column("label")).astype(np.float64) if "label" in names
              else np.full(qids.shape[0], np.nan))
    docid_values = column_to_numpy(table.column("docid")) if with_docids else None
    try:
        offsets = offsets_from_qids(qids)
    except InputError as exc:
        raise SchemaError(f"{path}: {exc}") from None
    return Dataset(
        qids=qids.astype(np.int64, copy=False),
        labels=labels,
        features=read_features(path, fnames) if features else None,
        feature_names=fnames,
        docids=docid_values,
        offsets=offsets,
        metadata=read_metadata(path),
        extra={c: column_to_numpy(table.column(c)) for c in extra_columns if c in names},
    )


def read_query_index(path: Path | str) -> tuple[np.ndarray, np.ndarray, list[str], bool]:
    """``(qids, offsets, feature names, has labels)`` of a dataset file, its ``qid`` column checked as
    :func:`read_dataset` checks it (the same errors); nothing else is read: what a reader that streams the rest
    needs."""
    names = column_names(path)
    require_columns(path, names, ["qid"])
    fnames = check_dataset_types(path)
    qids = np.array(qids_as_int64(path, read_table(path, ["qid"]).column("qid")))
    try:
        offsets = offsets_from_qids(qids)
    except InputError as exc:
        raise SchemaError(f"{path}: {exc}") from None
    return qids, offsets, fnames, "label" in names


def labels_all_missing(path: Path | str) -> bool:
    """Whether a dataset file has no ``label`` column, or has rows and only NaN labels (read a row group at a time).

    A file of zero rows with a ``label`` column has its labels (none of them missing): its run keeps the column."""
    pf = open_parquet(path)
    if "label" not in pf.schema_arrow.names:
        return True
    for group in range(pf.num_row_groups):
        with reading(path, f"row group {group}"):
            table = pf.read_row_group(group, columns=["label"])
        values = column_to_numpy(table.column("label")).astype(np.float64)
        if not np.all(np.isnan(values)):
            return False
    return pf.metadata.num_rows > 0


def check_query_aligned(path: Path | str) -> None:
    """Refuse a file in which some query spans two row groups (a distributed reader could split it)."""
    pf = open_parquet(path)
    last_qid = None
    for i in range(pf.num_row_groups):
        with reading(path, f"row group {i}"):
            table = pf.read_row_group(i, columns=["qid"])
        qids = column_to_numpy(table.column("qid"))
        if qids.shape[0] == 0:
            continue
        if last_qid is not None and qids[0] == last_qid:
            raise SchemaError(f"{path}: qid {int(last_qid)} spans row groups {i - 1} and {i}; "
                              "rewrite the file with `rankcli convert` or a query-aligned writer")
        last_qid = qids[-1]


def row_group_rows(path: Path | str) -> np.ndarray:
    """The number of rows in each row group of a Parquet file (from the footer; no data is read)."""
    meta = open_parquet(path).metadata
    return np.array([meta.row_group(i).num_rows for i in range(meta.num_row_groups)], dtype=np.int64)


def iter_row_groups(path: Path | str, columns: list[str] | None = None) -> Iterator[pa.Table]:
    """The row groups of a Parquet file one table at a time (``columns``: all when ``None``): a streaming reader."""
    pf = open_parquet(path)
    for i in range(pf.num_row_groups):
        with reading(path, f"row group {i}"):
            table = pf.read_row_group(i, columns=columns)
        yield table


def read_row_groups(path: Path | str, row_groups: Iterable[int], columns: list[str] | None = None) -> pa.Table:
    """Read only the given row groups (in order) of a Parquet file: a distributed reader's unit of work."""
    pf = open_parquet(path)
    with reading(path, "row groups"):
        return pf.read_row_groups(list(row_groups), columns=columns)
