"""Click logs: the Parquet file ``rankcli simulate-clicks`` writes and ``rankcli propensity`` reads.

Layout (a dataset in the data model, so that ``rankcli train`` trains on the clicks directly): one row per displayed
document of every kept impression, impressions in source-query order. Columns, in order: ``qid`` (int64, a new id per
impression: 1, 2, ...), ``label`` (float64, the click: 0.0 or 1.0), ``docid`` (string, when the source has one),
``source_qid``, ``position`` (int32, 1-based), ``relevance`` (the source label), ``source_row`` (int64, the 0-based
source row, when the source has no docid), ``ranker_rank`` (int32, with a randomised logging policy: the document's
1-based rank in the ranker's own order), the source's other extra columns, then the features ``f1 .. fN`` (float32, or
float64 from a float64 dataset, whose footer key the log keeps).
Every column but ``docid`` is declared non-nullable. Row groups end on impression boundaries. The footer records
``rankcli.kind = dataset``, ``num_features``, ``source``, ``seed`` and ``clicks`` (JSON: the model, ranker, seed,
logging policy and the simulation's parameters).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rankcli.dataset import Dataset, offsets_from_qids
from rankcli.errors import InputError, SchemaError
from rankcli.formats.arrow import array_from_numpy, column_to_numpy
from rankcli.formats.atomic import atomic_path, kinds
from rankcli.formats.feature_values import check_columns, declared_dtype
from rankcli.formats.parquet import (
    WRITE_OPTIONS,
    column_names,
    encode_metadata,
    feature_columns,
    open_parquet,
    qids_as_int64,
    read_table,
    reading,
    require_columns,
)
from rankcli.runtime.compat import arrow_call_function


def read_source_columns(path: Path | str, columns: list[str]) -> pa.Table:
    """The ``columns`` of the Parquet file at ``path`` as an Arrow table, read on one thread (it runs beside the
    simulation, which has the other core); an unreadable file is an :class:`InputError`."""
    pf = open_parquet(path)
    with reading(path):
        table = pf.read(columns=columns, use_threads=False)
    check_columns(table, feature_columns(columns), path)  # they are cast to the storage type when gathered
    return table


def _take(table: pa.Table, indices: pa.Array) -> pa.Table:
    """``table.take(indices)``: Arrow's multi-threaded C++ gather, without importing ``pyarrow.compute``."""
    return arrow_call_function("take", [table, indices])


def click_table(ds: Dataset, log, source: pa.Table | None = None) -> pa.Table:
    """The click log of ``log`` over ``ds`` as one Arrow table, features from ``source`` when given (see
    :func:`click_batches`)."""
    return next(click_batches(ds, log, source, [0, int(log.rows.shape[0])]))


def click_batches(ds: Dataset, log, source: pa.Table | None = None,
                  bounds: Sequence[int] | None = None) -> Iterator[pa.Table]:
    """The click log's rows (the module docstring's layout) as Arrow tables, one per slice of output rows.

    Equal to ``dataset_table(out, out.extra)`` of the dataset ``out`` that :func:`rankcli.simulate.simulate_clicks`
    returns (same columns, order, types and values) except that every column but ``docid`` is non-nullable.

    Parameters
    ----------
    ds : Dataset
        The source rows (qids, labels, docids, extra columns; its features when ``source`` is ``None``).
    log : rankcli.core.click_log.ClickLog
        The simulated impressions: ``rows``, ``offsets``, ``clicks``, ``positions``, ``ranker_rank``, ``n_kept``.
    source : pyarrow.Table, optional
        ``ds``'s feature columns (``ds.feature_names``) and its ``docid`` column when it has one, row for row: gathered
        with Arrow's ``take`` (no numpy feature matrix at all). Without it the features come from ``ds.features`` and
        the docids from ``ds.docids``.
    bounds : sequence of int, optional
        Ascending row boundaries from 0 to the number of output rows: one table per ``bounds[k]:bounds[k + 1]``, so
        that a writer can encode one while the next one's features are gathered. Default: one table.
    """
    rows = log.rows
    if bounds is None:
        bounds = [0, int(rows.shape[0])]
    qids = np.repeat(np.arange(1, log.n_kept + 1, dtype=np.int64), np.diff(log.offsets))
    has_docid = ds.docids is not None or (source is not None and "docid" in source.column_names)
    docid_source = source.select(["docid"]) if source is not None and "docid" in source.column_names else None
    names = list(ds.feature_names)
    features = source.select(names) if source is not None and names else None
    storage = pa.from_numpy_dtype(declared_dtype(ds.metadata))  # a float64 dataset's log keeps float64
    schema = None
    for start, stop in zip(bounds[:-1], bounds[1:]):
        start, stop = int(start), int(stop)
        r = rows[start:stop]
        indices = array_from_numpy(r, pa.int64()) if source is not None else None
        piece = {
            "qid": array_from_numpy(qids[start:stop], pa.int64()),
            "label": array_from_numpy(log.clicks[start:stop].astype(np.float64), pa.float64()),
        }
        if has_docid:
            if docid_source is not None:
                piece["docid"] = _take(docid_source, indices).column("docid").cast(pa.string())
            else:
                piece["docid"] = pa.array(ds.docids[r], pa.string())
        for name, values in _extra_columns(ds, log, r, start, stop, has_docid).items():
            piece[name] = array_from_numpy(values)
        if features is not None:
            piece.update(_taken_features(features, indices, names, storage))
        elif ds.features is not None:
            for j, name in enumerate(names):
                values = np.take(ds.features[:, j], r).astype(storage.to_pandas_dtype(), copy=False)
                piece[name] = array_from_numpy(values, storage)
        if schema is None:
            # The data model's schema (qid, label and features required); every column but docid is never null,
            # and a Parquet writer encodes required columns faster (no definition levels).
            schema = pa.schema([pa.field(name, col.type, nullable=name == "docid") for name, col in piece.items()])
        yield pa.Table.from_arrays(list(piece.values()), schema=schema)


def _extra_columns(ds: Dataset, log, r: np.ndarray, start: int, stop: int, has_docid: bool) -> dict[str, np.ndarray]:
    extra = {"source_qid": ds.qids[r], "position": log.positions[start:stop].astype(np.int32),
             "relevance": ds.labels[r]}
    if not has_docid:
        extra["source_row"] = r
    if log.ranker_rank is not None:
        extra["ranker_rank"] = log.ranker_rank[start:stop]
    extra.update({k: v[r] for k, v in ds.extra.items() if k not in extra})
    return extra


def _taken_features(features: pa.Table, indices: pa.Array, names: list[str],
                    storage: pa.DataType) -> dict[str, pa.ChunkedArray]:
    """The feature columns ``names`` of the rows ``indices``, as ``storage`` (float32, or float64 for a float64
    dataset) with NaN for a null."""
    taken = _take(features, indices)
    out = {}
    for name in names:
        col = taken.column(name)
        if col.null_count:  # as the numpy path reads them: NaN
            col = col.fill_null(float("nan"))
        if col.type != storage:
            col = col.cast(storage, safe=False)
        out[name] = col
    return out


def write_click_log(output: Path | str, pieces: Iterator[pa.Table], metadata: dict, feature_names: list[str], *,
                    overwrite: bool = False) -> None:
    """Write a click log atomically, one row group per piece, as ``write_dataset`` would (zstd; dictionary encoding
    where it pays). A thread encodes each row group while the next one's features are gathered; the file is the same
    as writing the whole table at once.

    Parameters
    ----------
    output : path
        The file to write (``-``: standard output, see :func:`rankcli.formats.atomic.atomic_path`).
    pieces : generator of pyarrow.Table
        Query-aligned pieces from :func:`click_batches` (at least one); closed once consumed, so that its
        references to the input are dropped while the last row group is still being encoded.
    metadata : dict
        The footer's ``rankcli.*`` keys (see the module docstring).
    feature_names : list of str
        The feature columns (those with few distinct values are dictionary-encoded).
    overwrite : bool
        Replace an existing file that rankcli wrote.
    """
    with atomic_path(output, overwrite, file_kind=kinds.CLICK_LOG) as tmp:
        first = next(pieces)
        schema = first.schema.with_metadata(encode_metadata(metadata))
        # Impression ids and source rows ascend: delta encoding writes them 2-3x faster than plain and smaller.
        delta = {c: "DELTA_BINARY_PACKED" for c in ("qid", "source_row") if c in first.column_names}
        writer = pq.ParquetWriter(str(tmp), schema, column_encoding=delta or None,
                                  use_dictionary=_dictionary_columns(first, feature_names), **WRITE_OPTIONS)
        todo: queue.Queue = queue.Queue(maxsize=2)
        failed: list = []

        def encode() -> None:
            while (piece := todo.get()) is not None:
                if not failed and piece.num_rows:
                    try:
                        writer.write_table(piece, row_group_size=piece.num_rows)
                    except BaseException as exc:  # re-raised in the main thread
                        failed.append(exc)

        thread = threading.Thread(target=encode, daemon=True)
        thread.start()
        try:
            todo.put(first)
            del first
            piece = None
            for piece in pieces:
                if failed:
                    break
                todo.put(piece)
            del piece
            pieces.close()  # the generator's references to the input go now
        finally:
            todo.put(None)
            thread.join()
            writer.close()
        if failed:
            raise failed[0]


def _dictionary_columns(table: pa.Table, feature_names: list[str]) -> list[str]:
    """Columns worth Parquet dictionary encoding: the clicks, grades and positions, and feature columns with few
    distinct values (LETOR's three-decimal features: 3x smaller files). Impression ids and source rows are nearly
    all distinct, and so are full-precision features: dictionary encoding only costs time there (up to 6x)."""
    names = ["label", "relevance", "position"]
    n = min(table.num_rows, 20_000)
    if n:
        for name in feature_names:
            if np.unique(column_to_numpy(table.column(name).slice(0, n))).shape[0] * 8 <= n:
                names.append(name)
    return names


def read_click_columns(path: Path | str, swap: bool) -> dict[str, np.ndarray]:
    """The columns propensity estimation needs, as numpy.

    Parameters
    ----------
    path : path
        A click log (any Parquet file with the columns below).
    swap : bool
        Also read ``ranker_rank`` (a swap-intervention log).

    Returns
    -------
    dict
        ``offsets`` (impression boundaries, from ``qid``), ``impression_qid`` (the ``qid`` of each impression, to name
        it in messages), ``label`` (the clicks, 0/1), ``position`` (as stored: a uint64 column stays uint64, so that
        a value beyond int64 is reported as written), ``source_qid`` (the bootstrap's unit) and, with ``swap``,
        ``ranker_rank``. A missing or mistyped column is a
        :class:`SchemaError` naming it; a label other than 0 or 1 an :class:`InputError`.
    """
    names = column_names(path)
    wanted = ["qid", "label", "position", "source_qid"] + (["ranker_rank"] if swap else [])
    require_columns(path, names, wanted)
    table = read_table(path, wanted)
    qids = qids_as_int64(path, table.column("qid"))
    out = {}
    for name in wanted[1:]:
        col = table.column(name)
        kind_ok = pa.types.is_integer(col.type) or (name == "label" and pa.types.is_floating(col.type))
        if not kind_ok:
            raise SchemaError(f"{path}: column {name} must be {'numeric' if name == 'label' else 'integer'}, got "
                              f"{col.type}")
        if col.null_count:
            raise SchemaError(f"{path}: column {name} has {col.null_count} missing value(s)")
        out[name] = column_to_numpy(col)
    label = out["label"]
    bad = np.flatnonzero((label != 0) & (label != 1))
    if bad.shape[0]:
        raise InputError(f"{path}: column label: expected clicks (0 or 1), got {label[bad[0]]:g} at row {int(bad[0])}")
    starts = np.flatnonzero(qids[1:] != qids[:-1]) + 1
    offsets = np.concatenate(([0], starts, [qids.shape[0]] if qids.shape[0] else [])).astype(np.int64)
    if not np.all(np.diff(qids[offsets[:-1]]) > 0):  # rankcli's impression ids ascend; otherwise check contiguity
        try:
            offsets = offsets_from_qids(qids)
        except InputError as exc:
            raise SchemaError(f"{path}: {exc}") from None
    out["offsets"] = offsets
    out["impression_qid"] = qids[offsets[:-1]]
    return out


def read_document_column(path: Path | str) -> pa.ChunkedArray:
    """Which document every row of the click log at ``path`` shows: its ``docid`` column, else ``source_row`` (as
    strings). Neither column, or a missing value, is a :class:`SchemaError`."""
    names = column_names(path)
    doc_name = "docid" if "docid" in names else "source_row" if "source_row" in names else None
    if doc_name is None:
        raise SchemaError(f"{path}: missing column docid (or source_row): intervention harvesting needs to know "
                          "which document every row shows")
    col = read_table(path, [doc_name]).column(doc_name)
    if col.null_count:
        raise SchemaError(f"{path}: column {doc_name} has {col.null_count} missing value(s)")
    return col.cast(pa.string()) if not pa.types.is_string(col.type) else col


def document_codes(columns: Sequence[pa.ChunkedArray]) -> np.ndarray:
    """One int64 code per distinct document name over the concatenation of ``columns`` (from
    :func:`read_document_column`), row for row: equal names, equal codes."""
    import pyarrow.compute as pc

    docs = pa.chunked_array([chunk for c in columns for chunk in c.chunks], type=pa.string())
    return np.asarray(pc.dictionary_encode(docs).combine_chunks().indices, dtype=np.int64)
