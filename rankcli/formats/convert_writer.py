"""The Parquet side of ``rankcli convert``: chunks of parsed rows streamed into query-aligned dataset files.

The parser hands over :class:`ParsedRows` (a query may continue in the next one). A :class:`ChunkWriter` buffers
them and writes row groups that end on query boundaries. The width (number of feature columns) and the optional
``docid``/``comment`` columns may grow while a file is read; each change starts a new part file with the wider
schema, and :meth:`ChunkWriter.join` streams the parts into one file padded to the final width (zeros, null strings).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from rankcli.formats.arrow import array_from_numpy, column_to_numpy
from rankcli.formats.feature_values import FEATURE_DTYPE_KEY, PRECISIONS
from rankcli.formats.parquet import (
    ROW_GROUP_ROWS,
    QueryAlignedWriter,
    dataset_schema,
    feature_columns,
    feature_names,
    features_matrix,
    iter_row_groups,
)


class ParsedRows(NamedTuple):
    """Parsed rows, in source order: ``features`` is ``(n, width)`` float32 (or float64) in Fortran order;
    ``docids`` and ``comments`` are Arrow string arrays or ``None`` (the source has none so far)."""

    labels: np.ndarray
    qids: np.ndarray
    features: np.ndarray
    docids: Any
    comments: Any

    @property
    def n_rows(self) -> int:
        """The number of rows."""
        return int(self.labels.shape[0])

    def slice(self, start: int, stop: int) -> ParsedRows:
        """Rows ``start:stop``."""
        return ParsedRows(self.labels[start:stop], self.qids[start:stop], self.features[start:stop],
                          None if self.docids is None else self.docids.slice(start, stop - start),
                          None if self.comments is None else self.comments.slice(start, stop - start))


@dataclass
class Part:
    """One part file of a :class:`ChunkWriter` and the schema it was written with."""

    path: Path
    width: int
    docid: bool
    comment: bool


def _strings(chunks: list[ParsedRows], field: str) -> pa.Array:
    """The ``docids`` or ``comments`` of ``chunks`` as one Arrow string array (nulls for a chunk without them)."""
    return pa.chunked_array([getattr(c, field) if getattr(c, field) is not None else pa.nulls(c.n_rows, pa.string())
                             for c in chunks], pa.string()).combine_chunks()


def _feature_column(chunks: list[ParsedRows], j: int) -> np.ndarray:
    """Feature column ``j`` over ``chunks`` (zeros for a chunk narrower than ``j + 1``), contiguous."""
    def one(m: np.ndarray) -> np.ndarray:
        return m[:, j] if m.shape[1] > j else np.zeros(m.shape[0], m.dtype)

    col = one(chunks[0].features) if len(chunks) == 1 else np.concatenate([one(c.features) for c in chunks])
    return np.ascontiguousarray(col)


class ChunkWriter:
    """Collects chunks of rows (a query may continue in the next chunk) and writes row groups of about
    ``ROW_GROUP_ROWS`` rows that end on query boundaries; ``on_rows(labels, offsets)`` sees each written group.

    Part files are ``<base>.part0``, ``<base>.part1``, ...: call :meth:`close`, then :meth:`join` to get the one
    output file, and :meth:`cleanup` in any case (it removes what is left of the parts).
    """

    def __init__(self, base: Path, keep_comments: bool, fixed_width: int | None, metadata: dict,
                 on_rows: Callable[[np.ndarray, np.ndarray], None] | None = None,
                 flush_rows: int = ROW_GROUP_ROWS // 2, dtype: np.dtype = PRECISIONS["float32"]):
        """``base``: the output path the parts are named after; ``keep_comments``: whether comments may come;
        ``fixed_width``: the number of feature columns when fixed (``--num-features``), else it grows with the data;
        ``metadata``: footer key-values; ``flush_rows``: rows buffered before row groups are written; ``dtype``: the
        features' storage (float32, or float64 for ``convert --float64``: the footer then says so)."""
        self.base = base
        self.dtype = np.dtype(dtype)
        self.arrow_type = pa.from_numpy_dtype(self.dtype)
        if self.dtype == np.float64:
            metadata = {**metadata, FEATURE_DTYPE_KEY: "float64"}
        self.keep_comments = keep_comments
        self.width = fixed_width or 0
        self.docid = False
        self.comment = False
        self.metadata = metadata
        self.on_rows = on_rows
        self.flush_rows = flush_rows
        self.parts: list[Part] = []
        self.rows = 0
        self._writer: QueryAlignedWriter | None = None
        self._buffer: list[ParsedRows] = []
        self._buffered = 0

    def add(self, chunk: ParsedRows) -> None:
        """Add rows; row groups are written once ``flush_rows`` rows are buffered."""
        if chunk.n_rows == 0:
            return
        self._buffer.append(chunk)
        self._buffered += chunk.n_rows
        if self._buffered >= self.flush_rows:
            self.flush(final=False)

    def _writer_for(self, chunks: list[ParsedRows]) -> None:
        """Start a new part when the chunks widen the schema (more features, a first docid or comment)."""
        width = max([self.width] + [c.features.shape[1] for c in chunks])
        docid = self.docid or any(c.docids is not None for c in chunks)
        comment = self.comment or any(c.comments is not None for c in chunks)
        if self._writer is not None and (width, docid, comment) != (self.width, self.docid, self.comment):
            self._writer.close()
            self._writer = None
        self.width, self.docid, self.comment = width, docid, comment
        if self._writer is None:
            path = self.base.with_name(f"{self.base.name}.part{len(self.parts)}")
            self.parts.append(Part(path, width, docid, comment))
            schema = dataset_schema(width, with_docid=docid, with_comment=comment, dtype=self.dtype)
            self._writer = QueryAlignedWriter(path, schema, {**self.metadata, "num_features": width},
                                              use_dictionary=["qid", "label"])

    def flush(self, final: bool = True) -> None:
        """Write the buffered rows; unless ``final``, the last query is kept back (it may continue)."""
        if not self._buffer:
            return
        chunks, n = self._buffer, self._buffered
        qids = np.concatenate([c.qids for c in chunks]) if len(chunks) > 1 else chunks[0].qids
        cut = n
        if not final:
            change = np.flatnonzero(qids[1:] != qids[:-1])
            if change.size == 0:
                return
            cut = int(change[-1]) + 1
        self._writer_for(chunks)
        labels = np.concatenate([c.labels for c in chunks]) if len(chunks) > 1 else chunks[0].labels
        columns = {"qid": array_from_numpy(qids[:cut], pa.int64()),
                   "label": array_from_numpy(labels[:cut], pa.float64())}
        strings = {}
        for key, field, on in (("docid", "docids", self.docid), ("comment", "comments", self.comment)):
            if on:
                strings[key] = _strings(chunks, field)
                columns[key] = strings[key].slice(0, cut)
        feature_cols = []
        for j, name in enumerate(feature_names(self.width)):
            col = _feature_column(chunks, j)
            feature_cols.append(col)
            columns[name] = pa.Array.from_buffers(self.arrow_type, cut, [None, pa.py_buffer(col)])
        offsets = np.concatenate(([0], np.flatnonzero(qids[1:cut] != qids[:cut - 1]) + 1, [cut])).astype(np.int64)
        self._writer.write(pa.table(columns), offsets)
        if self.on_rows is not None:
            self.on_rows(labels[:cut], offsets)
        self.rows += cut
        self._buffer, self._buffered = [], 0
        if cut < n:
            tail = np.empty((n - cut, self.width), dtype=self.dtype, order="F")
            for j, col in enumerate(feature_cols):
                tail[:, j] = col[cut:]
            self._buffer.append(ParsedRows(labels[cut:], qids[cut:], tail,
                                           strings["docid"].slice(cut) if self.docid else None,
                                           strings["comment"].slice(cut) if self.comment else None))
            self._buffered = n - cut

    def close(self) -> None:
        """Write everything buffered and close the current part."""
        self.flush(final=True)
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def cleanup(self) -> None:
        """Close the current part (after a failure) and remove the part files that remain."""
        if self._writer is not None:
            try:
                self._writer.close()
            except Exception:  # noqa: BLE001 - already failing; the part is removed next
                pass
            self._writer = None
        for part in self.parts:
            part.path.unlink(missing_ok=True)

    def join(self, target: Path, width: int, rewrite: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
             metadata: dict | None = None) -> None:
        """Move the single part to ``target``, or stream all parts into it padded to ``width`` feature columns.

        ``rewrite(features, offsets) -> features``, when given, replaces the feature matrix of each row group (whole
        queries; ``offsets`` delimit them), e.g. normalised; ``metadata``: footer keys added."""
        parts = self.parts
        if rewrite is None and not metadata and len(parts) == 1 and \
                (parts[0].width, parts[0].docid, parts[0].comment) == (width, self.docid, self.comment):
            os.replace(parts[0].path, target)
            return
        schema = dataset_schema(width, with_docid=self.docid, with_comment=self.comment, dtype=self.dtype)
        meta = {**self.metadata, "num_features": width, **(metadata or {})}
        # normalised features are real-valued: written plain, as the parts are (dictionary pages would overflow)
        dictionary = True if rewrite is None else ["qid", "label"]
        with QueryAlignedWriter(target, schema, meta, use_dictionary=dictionary) as writer:
            for part in parts:
                for table in iter_row_groups(part.path):
                    table = _pad(table, schema)
                    writer.write(table if rewrite is None else _rewritten(table, rewrite, self.arrow_type))
                part.path.unlink()

    def feature_batches(self, width: int) -> Iterator[np.ndarray]:
        """The feature matrix of every row group written, padded to ``width`` columns (zeros), in order: the
        statistics pass of a per-dataset normalisation (call after :meth:`close`)."""
        for part in self.parts:
            names = feature_names(part.width)
            for table in iter_row_groups(part.path, columns=names or ["qid"]):
                out = np.zeros((table.num_rows, width), dtype=self.dtype, order="F")
                out[:, :part.width] = features_matrix(table, names, part.path, dtype=self.dtype)
                yield out


def _rewritten(table: pa.Table, rewrite: Callable[[np.ndarray, np.ndarray], np.ndarray],
               arrow_type: pa.DataType) -> pa.Table:
    """``table`` (whole queries) with its feature columns replaced by ``rewrite(features, offsets)`` (stored as
    ``arrow_type``)."""
    names = feature_columns(table.column_names)
    qids = column_to_numpy(table.column("qid"))
    offsets = np.concatenate(([0], np.flatnonzero(qids[1:] != qids[:-1]) + 1, [qids.shape[0]])).astype(np.int64)
    features = rewrite(features_matrix(table, names, dtype=arrow_type.to_pandas_dtype()), offsets)
    for j, name in enumerate(names):
        i = table.column_names.index(name)
        table = table.set_column(i, table.schema.field(i), array_from_numpy(features[:, j], arrow_type))
    return table


def _pad(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with the columns of ``schema`` it lacks: zero features, null strings."""
    n = table.num_rows
    columns = []
    for f in schema:
        if f.name in table.column_names:
            columns.append(table.column(f.name))
        elif pa.types.is_floating(f.type):
            columns.append(array_from_numpy(np.zeros(n, f.type.to_pandas_dtype()), f.type))
        else:
            columns.append(pa.nulls(n, f.type))
    return pa.table(columns, schema=schema)


def sorted_by_qid(chunks: list[ParsedRows], step: int) -> Iterator[ParsedRows]:
    """All rows of ``chunks`` sorted by qid (stable), in chunks of ``step`` rows (``--sort-queries``).

    Empties the list ``chunks`` once the sorted copy is made, so that the input's memory can go before writing."""
    qids = np.concatenate([c.qids for c in chunks])
    order = np.argsort(qids, kind="stable")
    width = max(c.features.shape[1] for c in chunks)
    features = np.zeros((qids.shape[0], width), dtype=chunks[0].features.dtype, order="F")
    at = 0
    for c in chunks:
        features[at:at + c.n_rows, :c.features.shape[1]] = c.features
        at += c.n_rows
    take = array_from_numpy(order, pa.int64())
    docids, comments = (_strings(chunks, field).take(take) if any(getattr(c, field) is not None for c in chunks)
                        else None for field in ("docids", "comments"))
    whole = ParsedRows(np.concatenate([c.labels for c in chunks])[order], qids[order],
                       np.asfortranarray(features[order]), docids, comments)
    chunks.clear()
    for a in range(0, whole.n_rows, step):
        yield whole.slice(a, min(a + step, whole.n_rows))
