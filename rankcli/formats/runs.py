"""Run files: a model's scores for the rows of a dataset, as ``rankcli predict`` writes them and ``rankcli eval`` reads
them.

Parquet run: columns ``qid`` (int64), ``docid`` (string; or ``row``, int64, the 0-based row number in the dataset when
it has no docid), ``label`` (float64, when the dataset has labels) and ``score`` (float64), rows in the dataset's order
(a query's rows contiguous); the footer records ``rankcli.kind = run`` and where the run came from (``model``,
``loss``, ``data``). A reader needs ``qid``, ``label`` and ``score`` and ignores other columns.

TREC run: one line ``qid Q0 docid rank score tag`` per row, each query's rows best first; documents named by
:func:`rankcli.formats.trec.document_names` (the docid, else ``<qid>-<row>``, as ``export --format trec-qrels`` names
the same rows). The TREC run *reader* is :mod:`rankcli.formats.trec.write`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from rankcli.errors import InputError, SchemaError
from rankcli.formats import parquet
from rankcli.formats.arrow import array_from_numpy, scalar, strings_array, strings_from_bytes
from rankcli.formats.atomic import atomic_path, kinds
from rankcli.formats.trec.write import document_names, row_names

#: The columns a Parquet run must have.
RUN_COLUMNS = ("qid", "label", "score")


def write_run(path: Path | str, qids: np.ndarray, scores: np.ndarray, *, docids: np.ndarray | None = None,
              labels: np.ndarray | None = None, metadata: dict | None = None, overwrite: bool = False) -> None:
    """Write a Parquet run atomically (the module docstring's layout).

    Parameters
    ----------
    path : path
        The file to write (``-``: standard output).
    qids : (n,) int64
        The query id of every row, queries contiguous.
    scores : (n,) float
        The model's score of every row.
    docids : (n,) object array of str, optional
        Document ids; without them a ``row`` column numbers the rows ``0..n-1``.
    labels : (n,) float, optional
        The rows' labels; left out when ``None`` or, for one row or more, all NaN (a dataset without labels). An
        empty array (a labelled dataset of zero rows) keeps the column, as :func:`stream_run` does.
    metadata : dict, optional
        Footer keys besides ``kind = run``.
    overwrite : bool
        Replace an existing file that rankcli wrote.
    """
    columns = {"qid": pa.array(qids, pa.int64())}
    if docids is not None:
        columns["docid"] = pa.array(docids, pa.string())
    else:
        columns["row"] = pa.array(np.arange(np.shape(qids)[0], dtype=np.int64))
    if labels is not None and (np.shape(labels)[0] == 0 or not np.all(np.isnan(labels))):
        columns["label"] = pa.array(labels, pa.float64())
    columns["score"] = pa.array(np.asarray(scores, dtype=np.float64))
    parquet.write_table(path, pa.table(columns), metadata={"kind": "run", **(metadata or {})}, overwrite=overwrite)


def run_schema(docids: bool, labels: bool) -> pa.Schema:
    """The Arrow schema of a Parquet run: ``qid``, ``docid`` (or ``row``), ``label`` when ``labels``, ``score``."""
    fields = [pa.field("qid", pa.int64()), pa.field("docid", pa.string()) if docids else pa.field("row", pa.int64())]
    if labels:
        fields.append(pa.field("label", pa.float64()))
    return pa.schema(fields + [pa.field("score", pa.float64())])


class ParquetRunStream:
    """A Parquet run written batch by batch (:func:`stream_run`): :meth:`write` takes the scores of the next rows,
    and each row group is written once its rows are all there, cut where :func:`write_run` cuts the whole run (at
    the query boundaries of :func:`rankcli.formats.parquet.query_aligned_groups`), so that the file is the same,
    byte for byte."""

    def __init__(self, writer: parquet.QueryAlignedWriter, schema: pa.Schema, offsets: np.ndarray):
        self._writer, self._schema = writer, schema
        self._cuts = parquet.query_aligned_groups(np.asarray(offsets, dtype=np.int64))
        self._next = 1  # the next cut to reach
        self._pending: list[pa.Table] = []
        self.rows = 0

    def write(self, qids: np.ndarray, scores: np.ndarray, *, docids: np.ndarray | None = None,
              labels: np.ndarray | None = None) -> None:
        """The next rows' query ids, scores, and document ids or labels when the run has those columns."""
        start = self.rows
        columns = [pa.array(qids, pa.int64())]
        columns.append(pa.array(docids, pa.string()) if "docid" in self._schema.names
                       else pa.array(np.arange(start, start + len(qids), dtype=np.int64)))
        if "label" in self._schema.names:
            columns.append(pa.array(labels, pa.float64()))
        columns.append(pa.array(np.asarray(scores, dtype=np.float64)))
        self._pending.append(pa.Table.from_arrays(columns, schema=self._schema))
        self.rows += len(qids)
        while self._next < self._cuts.shape[0] and self.rows >= self._cuts[self._next]:
            self._flush(int(self._cuts[self._next - 1]), int(self._cuts[self._next]))
            self._next += 1

    def _flush(self, start: int, stop: int) -> None:
        table = pa.concat_tables(self._pending)
        first = self.rows - table.num_rows  # the row number of the table's first row
        if stop > start:
            self._writer.write_group(table.slice(start - first, stop - start).combine_chunks())
        rest = table.slice(stop - first)
        self._pending = [rest] if rest.num_rows else []


@contextmanager
def stream_run(path: Path | str, offsets: np.ndarray, *, docids: bool, labels: bool, metadata: dict | None = None,
               overwrite: bool = False) -> Iterator[ParquetRunStream]:
    """A Parquet run written atomically batch by batch (the layout of :func:`write_run`; the same bytes).

    Parameters
    ----------
    path : the file (``-``: standard output).
    offsets : the query boundaries of every row the run will hold.
    docids, labels : whether the rows have a ``docid`` (else a ``row`` column numbers them) and a ``label`` column.
    metadata, overwrite : as :func:`write_run`.
    """
    schema = run_schema(docids, labels)
    meta = {"kind": "run", **(metadata or {})}
    with atomic_path(path, overwrite, file_kind=kinds.parquet_kind(meta)) as tmp, \
            parquet.QueryAlignedWriter(tmp, schema, meta) as writer:
        stream = ParquetRunStream(writer, schema, offsets)
        yield stream
        if stream.rows != int(np.asarray(offsets)[-1]):
            raise ValueError(f"stream_run: {stream.rows} rows written of {int(np.asarray(offsets)[-1])}")


#: Lines built at a time by :func:`trec_run_lines` (Arrow's string arrays hold at most 2 GiB each).
LINES_AT_ONCE = 1 << 20


def _text_of(values: np.ndarray):
    """The Arrow string of each value as Python's ``str`` writes it (integers cast in C; numpy ``S`` bytes as the
    UTF-8 text they hold)."""
    if values.dtype.kind in "iu":
        return array_from_numpy(values.astype(np.int64, copy=False)).cast(pa.string())
    if values.dtype.kind == "S":
        return strings_from_bytes(values)
    return strings_array([str(v).encode("utf-8", "surrogateescape") for v in values.tolist()])


def trec_run_lines(qids: np.ndarray, scores: np.ndarray, order: np.ndarray, ranks: np.ndarray, *,
                   docids: np.ndarray | None = None, rows: np.ndarray | None = None, tag: str = "rankcli",
                   source: str = "") -> str:
    """The lines of a TREC run (see :func:`write_trec_run`) for rows whose queries are whole; ``rows``: their row
    numbers in the dataset (names ``<qid>-<row>``; default ``0..n-1``). Each line is ``f"{qid} Q0 {docid} {rank}
    {score!r} {tag}"`` (the score's shortest repr, exact), joined by Arrow a block of lines at a time."""
    import pyarrow.compute as pc

    docs = document_names(qids, docids, rows, source=source)
    tag = "".join(tag.split()) or "rankcli"
    order = np.asarray(order, dtype=np.int64)
    ranks = np.asarray(ranks, dtype=np.int64)
    qids = np.asarray(qids)
    scores = np.asarray(scores, dtype=np.float64)
    out = []
    for start in range(0, order.shape[0], LINES_AT_ONCE):
        sel = order[start:start + LINES_AT_ONCE]
        take = array_from_numpy(sel)
        score_text = strings_array([repr(x).encode() for x in scores[sel].tolist()])
        lines = pc.binary_join_element_wise(
            _text_of(qids[sel]), scalar("Q0"), pc.take(docs, take),
            array_from_numpy(ranks[start:start + LINES_AT_ONCE]).cast(pa.string()), score_text,
            scalar(tag + "\n"), scalar(" "))
        offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32, count=len(lines) + 1, offset=lines.offset * 4)
        out.append(lines.buffers()[2].to_pybytes()[offsets[0]:offsets[-1]].decode("utf-8", "surrogateescape"))
    return "".join(out)


@contextmanager
def stream_trec_run(path: Path | str, *, overwrite: bool = False) -> Iterator[Callable[[str], None]]:
    """A TREC run written atomically batch by batch: yields ``write(text)`` for the lines of
    :func:`trec_run_lines`."""
    with atomic_path(path, overwrite, file_kind=kinds.TREC_RUN) as tmp, open(tmp, "w") as fh:
        yield fh.write


def write_trec_run(path: Path | str, qids: np.ndarray, scores: np.ndarray, order: np.ndarray, ranks: np.ndarray, *,
                   docids: np.ndarray | None = None, tag: str = "rankcli", source: str = "",
                   overwrite: bool = False) -> None:
    """Write a TREC run atomically: ``qid Q0 docid rank score tag`` per row, in the order ``order``.

    Parameters
    ----------
    path : path
        The file to write (``-``: standard output).
    qids, scores : (n,) arrays
        Query id (integers, text, or numpy ``S`` UTF-8 bytes) and score of every row of the dataset.
    order : (n,) int
        The rows in the order to write (each query's rows best first).
    ranks : (n,) int
        The 1-based rank of the row written at each line.
    docids : (n,) object array of str (or an Arrow string array), optional
        Document ids; rows without one are named ``<qid>-<row>`` (:func:`rankcli.formats.trec.document_names`, which
        also refuses a name a TREC line cannot hold, or one named twice in a query: exit 3 naming ``source``).
    tag : str
        The run tag; whitespace is removed (an empty tag is ``rankcli``).
    source : str
        The dataset's file, named in errors.
    overwrite : bool
        Replace an existing file that rankcli wrote.
    """
    text = trec_run_lines(qids, scores, order, ranks, docids=docids, tag=tag, source=source)
    with atomic_path(path, overwrite, file_kind=kinds.TREC_RUN) as tmp, open(tmp, "w") as fh:
        fh.write(text)


class RunColumns(NamedTuple):
    """A Parquet run's columns, checked."""

    qids: np.ndarray  # int64 per row
    labels: np.ndarray  # numeric per row
    scores: np.ndarray  # numeric per row
    #: With ``docids``: computes the rows' document names (object array of str) as TREC files name them.
    names: Callable[[], np.ndarray] | None


def read_run_columns(path: Path | str, *, docids: bool = False) -> RunColumns:
    """Read a Parquet run's ``qid``, ``label`` and ``score`` columns (other columns are ignored), checked: present
    (a dataset given as a run is told to use ``--model``), without missing values, ``qid`` integer within int64, the
    others numeric, at least one row.

    Parameters
    ----------
    path : path
        The run file.
    docids : bool
        Also name the rows (``RunColumns.names``), as TREC files name them: the ``docid`` column, else
        ``<qid>-<row>`` with the ``row`` column that ``rankcli predict`` writes, else the row number in the file.
    """
    names = parquet.column_names(path)
    if "score" not in names and "qid" in names and "label" in names and parquet.feature_columns(names):
        raise SchemaError(f"{path}: missing column score: this looks like a dataset (it has feature columns); "
                          "score it with a model: rankcli eval DATA --model MODEL_DIR")
    parquet.require_columns(path, names, RUN_COLUMNS)
    name_column = ("docid" if "docid" in names else "row" if "row" in names else None) if docids else None
    table = parquet.read_table(path, list(RUN_COLUMNS) + ([name_column] if name_column else []))
    arrays = {}
    for name in RUN_COLUMNS:
        col = table.column(name)
        if col.null_count:
            row = int(np.flatnonzero(np.asarray(col.is_null().to_numpy(zero_copy_only=False)))[0])
            raise InputError(f"{path}: column {name}: missing value at row {row}")
        values = parquet.column_to_numpy(col)  # not col.to_numpy(): that imports pandas (~1 s at start-up)
        if name == "qid" and not np.issubdtype(values.dtype, np.integer):
            raise SchemaError(f"{path}: column qid must be integer, got {col.type}")
        if name != "qid" and not (np.issubdtype(values.dtype, np.floating) or np.issubdtype(values.dtype, np.integer)):
            raise SchemaError(f"{path}: column {name} must be numeric, got {col.type}")
        arrays[name] = values
    if arrays["qid"].shape[0] == 0:
        raise InputError(f"{path}: the run has no rows")
    qids = parquet.qids_as_int64(path, table.column("qid"))  # a uint64 id beyond int64 is refused, never wrapped

    def row_names_of_run() -> np.ndarray:
        return row_names(arrays["qid"], table.column("docid") if name_column == "docid" else None,
                         table.column("row") if name_column == "row" else None, path)

    return RunColumns(qids, arrays["label"], arrays["score"], row_names_of_run if docids else None)
