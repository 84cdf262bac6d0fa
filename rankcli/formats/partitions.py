"""Query-aligned partitions of a Parquet dataset, for reading it in parallel (``train --dask``).

A partition is a run of whole row groups, or a slice of one cut at a query boundary, so that every query sits inside
one partition. A file in which a query spans two row groups is refused (:func:`rankcli.formats.parquet.
check_query_aligned`); ``rankcli convert`` writes row groups that end on query boundaries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from rankcli.dataset import offsets_from_qids
from rankcli.errors import InputError, SchemaError
from rankcli.formats import parquet


@dataclass(frozen=True)
class Partition:
    """Rows ``start:stop`` of the concatenation of whole row groups ``row_groups`` of ``path``; whole queries only."""

    path: str
    row_groups: tuple[int, ...]
    start: int
    stop: int

    @property
    def n_rows(self) -> int:
        """The number of rows."""
        return self.stop - self.start


@dataclass
class PartitionPlan:
    """How a dataset is split for a cluster: the partitions, and each partition's query sizes (LightGBM's groups)."""

    path: Path
    feature_names: list[str]
    partitions: list[Partition]
    group_sizes: list[np.ndarray]
    n_rows: int
    n_queries: int
    metadata: dict[str, str] = field(default_factory=dict)

    def __len__(self) -> int:
        """The number of partitions."""
        return len(self.partitions)


def plan_partitions(path: Path | str, *, rows_per_partition: int | None = None,
                    min_partitions: int = 1) -> PartitionPlan:
    """Split a query-aligned Parquet dataset into partitions that never split a query.

    Whole row groups are joined until a partition has at least ``rows_per_partition`` rows (default: one row group per
    partition). When that gives fewer than ``min_partitions`` partitions (a small file of one row group on a cluster
    of several workers), the largest partitions are cut further, at query boundaries only, into near-equal row counts.
    Refuses (:class:`SchemaError`, exit 3) a file in which a query spans two row groups, or whose queries are not
    contiguous.
    """
    path = Path(path)
    names = parquet.column_names(path)
    parquet.require_columns(path, names, ["qid", "label"])
    parquet.check_query_aligned(path)
    rg_rows = parquet.row_group_rows(path)
    qids = parquet.read_table(path, ["qid"]).column("qid").to_numpy()
    if not np.issubdtype(qids.dtype, np.integer):
        raise SchemaError(f"{path}: column qid must be integer, got {qids.dtype}")
    try:
        offsets = offsets_from_qids(qids)
    except InputError as exc:  # a query that is not contiguous
        raise SchemaError(f"{path}: {exc}") from None
    n = int(qids.shape[0])
    if n == 0:
        raise SchemaError(f"{path}: the dataset has no rows")

    pieces = _cut_at_queries(_join_row_groups(rg_rows, rows_per_partition), offsets, min_partitions)
    partitions, group_sizes = [], []
    for piece in pieces:
        partitions.append(Partition(str(path), piece.row_groups, piece.start - piece.base, piece.stop - piece.base))
        q = offsets[(offsets >= piece.start) & (offsets <= piece.stop)]
        group_sizes.append(np.diff(q).astype(np.int64))
    return PartitionPlan(path=path, feature_names=parquet.feature_columns(names), partitions=partitions,
                         group_sizes=group_sizes, n_rows=n, n_queries=int(offsets.shape[0] - 1),
                         metadata=parquet.read_metadata(path))


class _Piece(NamedTuple):
    """Rows ``start:stop`` (of the file) within whole row groups ``row_groups``, whose first row is ``base``."""

    row_groups: tuple[int, ...]
    base: int
    start: int
    stop: int


def _join_row_groups(rg_rows: np.ndarray, rows_per_partition: int | None) -> list[_Piece]:
    """Runs of whole row groups of at least ``rows_per_partition`` rows (the last may be shorter); row groups with no
    rows are dropped."""
    rg_starts = np.concatenate(([0], np.cumsum(rg_rows))).astype(np.int64)
    target = max(1, int(rows_per_partition or 1))
    pieces: list[_Piece] = []
    current: list[int] = []
    for i, rows in enumerate(rg_rows):
        if rows == 0:
            continue
        current.append(i)
        if rg_starts[current[-1] + 1] - rg_starts[current[0]] >= target:
            lo, hi = int(rg_starts[current[0]]), int(rg_starts[current[-1] + 1])
            pieces.append(_Piece(tuple(current), lo, lo, hi))
            current = []
    if current:
        lo, hi = int(rg_starts[current[0]]), int(rg_starts[current[-1] + 1])
        pieces.append(_Piece(tuple(current), lo, lo, hi))
    return pieces


def _cut_at_queries(pieces: list[_Piece], offsets: np.ndarray, min_partitions: int) -> list[_Piece]:
    """Halve the largest piece of more than one query at the query boundary nearest its middle, until there are
    ``min_partitions`` pieces or every piece is a single query."""
    pieces = list(pieces)

    def boundaries(piece: _Piece) -> np.ndarray:  # query starts strictly inside the piece
        return offsets[(offsets > piece.start) & (offsets < piece.stop)]

    while len(pieces) < min_partitions:
        cuttable = [j for j, piece in enumerate(pieces) if boundaries(piece).size]
        if not cuttable:
            break
        k = max(cuttable, key=lambda j: pieces[j].stop - pieces[j].start)
        piece = pieces[k]
        inside = boundaries(piece)
        cut = int(inside[np.argmin(np.abs(inside - (piece.start + piece.stop) // 2))])
        pieces[k: k + 1] = [piece._replace(stop=cut), piece._replace(start=cut)]
    return pieces


def read_partition(part: Partition, feature_names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Read one partition (on a worker): the feature matrix (float32, or float64 as the file's footer says) and the
    float64 labels."""
    table = parquet.read_row_groups(part.path, part.row_groups, ["label", *feature_names])
    table = table.slice(part.start, part.n_rows)
    first_row = int(parquet.row_group_rows(part.path)[:part.row_groups[0]].sum()) + part.start if part.row_groups \
        else part.start  # the file's row of the partition's first, named when a value is refused
    features = parquet.features_matrix(table, feature_names, part.path, first_row)
    labels = table.column("label").to_numpy().astype(np.float64)
    return np.ascontiguousarray(features), labels
