"""A Parquet dataset's feature matrix read by rows, a row group at a time, never whole: what LightGBM bins a training
set from (:mod:`rankcli.train.datasets`) and what ``predict`` and ``eval --model`` score batch by batch.

:class:`ParquetFeatureRows` answers ``rows[i]`` (one row), ``rows[a:b]`` (a range) and ``rows[[i, j, ...]]`` (rows by
number) from the row groups that hold them. It keeps the last row group it decoded, so reading the rows in order
decodes every row group once; a row group is decoded a few columns at a time, so that Arrow's copy of it is small next
to the float32 matrix kept. :func:`query_batches` cuts a file's rows into batches of whole queries that follow its row
groups, so that a file whose row groups end on query boundaries (what rankcli writes) is read one row group per batch,
and any other file still gives whole queries per batch.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from rankcli.formats.arrow import column_to_numpy
from rankcli.formats.parquet import check_dataset_types, feature_dtype, open_parquet, read_row_group_features, reading


class ParquetFeatureRows:
    """The feature columns ``names`` of the Parquet file ``path``, as a read-only matrix addressed by rows, of the
    file's precision (:attr:`dtype`: float32, or float64 when the footer says so).

    Parameters
    ----------
    path : a Parquet dataset.
    names : the feature columns, in the matrix's column order (``f1 .. fN``).

    Indexing: an integer gives one row (float64, a copy: what LightGBM's sampler takes), a slice a block of rows and a
    list or integer array rows by number (:attr:`dtype`, ``(rows, features)``). :attr:`decoded` counts row groups
    decoded (a test of the one-pass reading).
    """

    def __init__(self, path: Path | str, names: list[str]):
        self.path = Path(path)
        self.names = list(names)
        self._file = open_parquet(self.path)
        check_dataset_types(self.path, self._file)
        self.dtype = feature_dtype(self.path, self._file)
        self.columns = list(self._file.schema_arrow.names)  # every column of the file
        meta = self._file.metadata
        sizes = np.array([meta.row_group(i).num_rows for i in range(meta.num_row_groups)], dtype=np.int64)
        self.starts = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        self.decoded = 0
        self._group = -1
        self._matrix = np.zeros((0, len(self.names)), dtype=self.dtype)

    def __len__(self) -> int:
        return int(self.starts[-1])

    @property
    def shape(self) -> tuple[int, int]:
        return len(self), len(self.names)

    def row_group_ends(self) -> np.ndarray:
        """The row number after each row group (its last row + 1)."""
        return self.starts[1:].copy()

    def _load(self, group: int) -> np.ndarray:
        if group != self._group:
            self._matrix = np.zeros((0, 0), dtype=self.dtype)  # drop the last one before decoding the next
            n = int(self.starts[group + 1] - self.starts[group])
            out = np.empty((n, len(self.names)), dtype=self.dtype, order="F")  # column fills are contiguous
            read_row_group_features(self._file, group, self.names, out, self.path)
            self._group, self._matrix = group, out
            self.decoded += 1
        return self._matrix

    def labels_and_docids(self, start: int, stop: int, *, labels: bool, docids: bool):
        """``(labels, docids)`` of rows ``start:stop`` read from the file (float64, object array of str), each
        ``None`` when not asked for or when the file has no such column (labels: NaN then)."""
        wanted = [c for c, on in (("label", labels), ("docid", docids)) if on and c in self.columns]
        parts: dict[str, list] = {c: [] for c in wanted}
        first, last = self._group_of(start), self._group_of(max(start, stop - 1))
        for group in range(first, last + 1) if wanted and stop > start else ():
            with reading(self.path, f"row group {group}"):
                table = self._file.read_row_group(group, columns=wanted)
            lo, hi = max(start, int(self.starts[group])), min(stop, int(self.starts[group + 1]))
            table = table.slice(lo - int(self.starts[group]), hi - lo)
            for c in wanted:
                parts[c].append(column_to_numpy(table.column(c)).astype(np.float64) if c == "label"
                                else column_to_numpy(table.column(c)))
        out = {c: np.concatenate(v) if v else np.zeros(0, dtype=np.float64 if c == "label" else object)
               for c, v in parts.items()}
        label_values = out.get("label")
        if labels and label_values is None:
            label_values = np.full(stop - start, np.nan)
        return label_values, out.get("docid")

    def release(self) -> None:
        """Drop the decoded row group (the next read decodes again) and return Arrow's unused buffers to the
        operating system."""
        self._group, self._matrix = -1, np.zeros((0, len(self.names)), dtype=self.dtype)
        pa.default_memory_pool().release_unused()

    def _group_of(self, row: int) -> int:
        return int(np.searchsorted(self.starts, row, side="right") - 1)

    def block(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start:stop`` (:attr:`dtype`; a view of the decoded row group when they lie in one)."""
        start, stop = max(0, int(start)), min(len(self), int(stop))
        if stop <= start:
            return np.zeros((0, len(self.names)), dtype=self.dtype)
        first, last = self._group_of(start), self._group_of(stop - 1)
        if first == last:
            base = int(self.starts[first])
            return self._load(first)[start - base:stop - base]
        out = np.empty((stop - start, len(self.names)), dtype=self.dtype)
        for group in range(first, last + 1):
            lo, hi = max(start, int(self.starts[group])), min(stop, int(self.starts[group + 1]))
            out[lo - start:hi - start] = self._load(group)[lo - int(self.starts[group]):hi - int(self.starts[group])]
        return out

    def take(self, rows: np.ndarray) -> np.ndarray:
        """The rows numbered ``rows`` (:attr:`dtype`), read group by group in increasing order."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty((rows.shape[0], len(self.names)), dtype=self.dtype)
        if rows.shape[0] and (rows.min() < 0 or rows.max() >= len(self)):
            raise IndexError(f"row numbers must lie in 0..{len(self) - 1}")
        order = np.argsort(rows, kind="stable")
        groups = np.searchsorted(self.starts, rows[order], side="right") - 1
        cuts = np.flatnonzero(np.diff(groups)) + 1
        for part in np.split(np.arange(order.shape[0]), cuts):
            if part.shape[0]:
                group = int(groups[part[0]])
                out[order[part]] = self._load(group)[rows[order[part]] - self.starts[group]]
        return out

    def __getitem__(self, index):
        if isinstance(index, (int, np.integer)):
            row = int(index) + (len(self) if index < 0 else 0)
            if not 0 <= row < len(self):
                raise IndexError(f"row {index} out of range for {len(self)} rows")
            group = self._group_of(row)
            return self._load(group)[row - int(self.starts[group])].astype(np.float64)
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                return self.take(np.arange(start, stop, step))
            return self.block(start, stop)
        return self.take(np.asarray(index))


def query_batches(offsets: np.ndarray, row_group_ends: np.ndarray, max_rows: int) -> np.ndarray:
    """Batch boundaries (rows, starting with 0 and ending with the row count) of whole queries.

    Each batch ends at the last query boundary at or before the end of a row group (a query that crosses into the next
    row group goes to the next batch), and a batch longer than ``max_rows`` is cut at query boundaries into batches of
    at most ``max_rows`` rows (a query longer than that is a batch of its own).

    Parameters
    ----------
    offsets : (n_queries + 1,) query boundaries of the file's rows.
    row_group_ends : the row number after each row group (:meth:`ParquetFeatureRows.row_group_ends`).
    max_rows : the largest batch wanted, at least 1.
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    n = int(offsets[-1])
    if n == 0:
        return np.zeros(1, dtype=np.int64)
    ends = np.asarray(row_group_ends, dtype=np.int64)
    aligned = offsets[np.searchsorted(offsets, ends, side="right") - 1]
    cuts = [0]
    for stop in np.unique(np.concatenate((aligned, [n]))):
        stop = int(stop)
        while stop - cuts[-1] > max_rows:
            # the last query boundary within max_rows of the batch start; at least one whole query
            at = int(offsets[np.searchsorted(offsets, cuts[-1] + max_rows, side="right") - 1])
            if at <= cuts[-1]:
                at = int(offsets[np.searchsorted(offsets, cuts[-1], side="right")])
            cuts.append(at)
        if stop > cuts[-1]:
            cuts.append(stop)
    return np.array(cuts, dtype=np.int64)
