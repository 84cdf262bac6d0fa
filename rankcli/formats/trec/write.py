"""TREC files that rankcli writes (``export --format trec-qrels``, ``predict --format trec``), and results printed in
trec_eval's layout (``eval --format trec_eval``).

- A run: one line per retrieved document, ``qid Q0 docid rank score tag``; qrels: ``qid iteration docid relevance``.
  Reading them (any run of C whitespace between fields, gzip, blank and ``#`` lines, errors naming the line) is
  :mod:`rankcli.formats.trec.parse`; a run joined with its qrels as trec_eval joins them goes through the stages of
  :func:`rankcli.evaluate.runs.load_trec`.
- Documents that rankcli writes (``export --format trec-qrels``, ``predict --format trec``) are named by
  :func:`document_names`: the docid, else ``<qid>-<row>``.
- :func:`trec_eval_text` prints results exactly as trec_eval prints them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from rankcli.errors import SchemaError
from rankcli.formats.atomic import atomic_path, kinds

#: What cannot be part of a document name in a TREC file: the empty name, whitespace (Python's ``str.split`` set, a
#: superset of the C whitespace the readers split on) and NUL (trec_eval's C strings end there). RE2 syntax, for
#: ``pyarrow.compute``.
_UNWRITABLE = (r"^$|[\x00\t\n\x0b\x0c\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}"
               r"\x{205f}\x{3000}]")


def _arrow_strings(values):
    """An Arrow string array from an Arrow array or a numpy/list of ``str`` (``None`` = null), without pandas."""
    import pyarrow as pa

    from rankcli.formats.arrow import array_from_numpy, strings_array

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        return values if pa.types.is_string(values.type) else values.cast(pa.string())
    values = np.asarray(values)
    if values.dtype.kind in "iuf":
        return array_from_numpy(values).cast(pa.string())
    return strings_array([None if v is None else v if isinstance(v, bytes) else str(v).encode()
                          for v in values.tolist()])


def unwritable(names) -> tuple[int, str] | None:
    """The first of ``names`` (an Arrow string array) that a TREC line cannot hold, and why; None when all can."""
    import pyarrow.compute as pc

    bad = pc.match_substring_regex(names, _UNWRITABLE)
    if not pc.any(bad).as_py():
        return None
    i = bad.to_pylist().index(True)
    name = names[i].as_py()
    return i, ("it is empty" if name == "" else "it contains a NUL byte, where trec_eval's strings end"
               if "\x00" in name else "it contains whitespace, which separates the fields of a TREC line")


def document_names(qids, docids=None, rows=None, *, source: str = "", check: bool = True):
    """The name of each document in every TREC file rankcli writes or reads against a dataset: an Arrow string array.

    A document is named by its ``docid`` when it has one; otherwise (no docid column, or a null in it) by
    ``<qid>-<row>``, with ``row`` its 0-based row number in the dataset (``rows``; default ``0..n-1``). ``export
    --format trec-qrels``, ``predict --format trec`` and the evaluation of a Parquet run under the ``trec`` tie rule
    all name documents with this function, so a run and the qrels exported from the same dataset always match.

    ``qids``, ``docids`` and ``rows`` may be numpy arrays, lists or Arrow arrays. With ``check``, a name that a TREC
    line cannot hold (empty, with whitespace or a NUL byte) is a :class:`SchemaError` naming the row (and ``source``).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from rankcli.formats.arrow import array_from_numpy, scalar

    qid_text = _arrow_strings(qids)
    n = len(qid_text)
    rows = np.arange(n, dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    if rows.shape[0] != n:
        raise ValueError(f"document_names: {rows.shape[0]} row numbers for {n} query ids")
    names = pc.binary_join_element_wise(qid_text, array_from_numpy(rows).cast(pa.string()), scalar("-"))
    if docids is not None:
        given = _arrow_strings(docids)
        if len(given) != n:
            raise ValueError(f"document_names: {len(given)} docids for {n} query ids")
        names = pc.coalesce(given, names)  # a row without a docid is named <qid>-<row>
    if check and n:
        bad = unwritable(names)
        if bad is not None:
            i, why = bad
            name = names[i].as_py()
            where = f"{source}: " if source else ""
            raise SchemaError(f"{where}row {int(rows[i])} (qid {qid_text[i].as_py()}): docid {name!r} cannot name a "
                              f"document in a TREC file: {why}")
        _refuse_repeated_names(qid_text, names, rows, source)
    return names


def row_names(qids, docid_column, row_column, path) -> np.ndarray:
    """Document names (object array of ``str``) of a Parquet run's or dataset's rows, as TREC files name them
    (:func:`document_names`): ``docid_column`` (Arrow) when given, else ``<qid>-<row>`` with ``row_column`` (Arrow
    integers: the row in the dataset, as ``rankcli predict`` writes it) or the row number. ``path`` names the file in
    errors."""
    import pyarrow as pa

    from rankcli.formats import parquet

    rows = None
    if row_column is not None:
        if row_column.null_count or not pa.types.is_integer(row_column.type):
            raise SchemaError(f"{path}: column row must be integer without missing values (the row number in the "
                              f"dataset), got {row_column.type}")
        rows = parquet.column_to_numpy(row_column)
    return np.array(document_names(qids, docid_column, rows, check=False).to_pylist(), dtype=object)


def _refuse_repeated_names(qid_text, names, rows, source: str) -> None:
    """A document named twice in one query would be written, and then refused by every TREC reader (rankcli's and
    trec_eval's): refuse it when writing, naming both rows."""
    import pyarrow.compute as pc

    from rankcli.formats.arrow import column_to_numpy  # to_numpy would import pandas

    q = column_to_numpy(pc.dictionary_encode(qid_text).indices).astype(np.int64)
    d = column_to_numpy(pc.dictionary_encode(names).indices).astype(np.int64)
    key = q * (int(d.max()) + 1) + d  # < n^2: exact in int64 for any dataset that fits in memory
    order = np.argsort(key, kind="stable")
    repeated = np.flatnonzero(key[order][1:] == key[order][:-1])
    if repeated.shape[0] == 0:
        return
    second = order[repeated + 1]  # stable sort: the later row of each equal pair
    k = int(np.argmin(second))  # the repeat that comes first in file order
    first, again = int(order[repeated[k]]), int(second[k])
    where = f"{source}: " if source else ""
    raise SchemaError(f"{where}rows {int(rows[first])} and {int(rows[again])} (qid {qid_text[first].as_py()}): docid "
                      f"{names[first].as_py()!r} names two documents of one query; a TREC file names each document of "
                      "a query once")


def qrels_lines(qids, docids, labels, rows=None, *, source: str = ""):
    """TREC qrels lines ``qid 0 docid label\\n`` as an Arrow string array, built in C.

    Documents are named by :func:`document_names` (the docid, or ``<qid>-<row>`` where there is none). Labels print
    as integers when they are (``2``), else as given (``0.07``).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from rankcli.formats.arrow import array_from_numpy, scalar

    # array_from_numpy / scalar: no pandas import (pa.array, pa.scalar and Python literals in pc calls import it)
    qid_text = _arrow_strings(qids)
    doc_text = document_names(qid_text, docids, rows, source=source)
    if isinstance(labels, (pa.Array, pa.ChunkedArray)):
        label_text = labels.cast(pa.float64()).cast(pa.string())
    else:
        label_text = array_from_numpy(np.asarray(labels, dtype=np.float64)).cast(pa.string())
    return pc.binary_join_element_wise(qid_text, scalar("0"), doc_text,
                                       pc.binary_join_element_wise(label_text, scalar("\n"), scalar("")), scalar(" "))


def write_qrels(path: Path | str, dataset_path: Path | str, *, overwrite: bool = False) -> int:
    """Export a Parquet dataset's judgments as TREC qrels (``qid 0 docid label``, :func:`qrels_lines`), atomically,
    streaming row group by row group; returns the number of lines.

    Parameters
    ----------
    path : path
        The qrels file to write (``-``: standard output).
    dataset_path : path
        A Parquet dataset with ``qid`` and ``label`` (and ``docid``: rows without one are named ``<qid>-<row>``, with
        ``row`` the 0-based row number in the dataset; a name a TREC line cannot hold is exit 3 naming the dataset).
    overwrite : bool
        Replace an existing file that rankcli wrote.
    """
    from rankcli.formats.parquet import column_names, iter_row_groups, require_columns
    from rankcli.formats.svmlight_writer import write_lines

    names = column_names(dataset_path)
    require_columns(dataset_path, names, ["qid", "label"])
    wanted = ["qid", "label"] + (["docid"] if "docid" in names else [])
    rows = 0
    with atomic_path(path, overwrite, file_kind=kinds.QRELS) as tmp, open(tmp, "wb") as out:
        for table in iter_row_groups(dataset_path, wanted):
            n = table.num_rows
            docids = table.column("docid").combine_chunks() if "docid" in names else None
            write_lines(out, qrels_lines(table.column("qid").combine_chunks(), docids,
                                         table.column("label").combine_chunks(),
                                         rows=np.arange(rows, rows + n), source=str(dataset_path)))
            rows += n
    return rows


def _qid_bytes(qids) -> np.ndarray:
    """The query ids as numpy ``S`` (UTF-8, a non-UTF-8 byte kept by ``surrogateescape``), sorted as trec_eval sorts
    them by byte order; no Python object per query."""
    ids = np.asarray(qids)
    if ids.dtype.kind in "iu":
        return ids.astype("S")
    if ids.dtype.kind == "S":
        return ids
    return np.char.encode(ids.astype("U"), "utf-8", "surrogateescape") if ids.shape[0] else ids.astype("S1")


def _queries_averaged(ordered, per_query: dict, count: float) -> float:
    """num_q as trec_eval means it: the queries the means are over (those with a value for some averaged measure;
    a convention that leaves queries without a relevant document out averages over fewer than the run has)."""
    columns = [np.asarray(per_query[str(s)], dtype=np.float64) for s in ordered
               if s.record.aggregate == "mean" and str(s) in per_query]
    if not columns:
        return count
    return float((~np.isnan(np.vstack(columns))).any(axis=0).sum())


def trec_eval_text(ordered, per_query: dict, means: dict, qids, *, runid: str | None = None,
                   queries: bool = False) -> str:
    """The whole of :func:`trec_eval_blocks` as one string."""
    return "".join(trec_eval_blocks(ordered, per_query, means, qids, runid=runid, queries=queries))


#: Queries formatted at a time by :func:`trec_eval_blocks` (the text of 2M queries at once took 22 GB).
QUERY_BLOCK = 10_000


def _texts(spec, values) -> list[str | None]:
    # a NaN value is a query the convention leaves out of this measure: no line (trec_eval prints no nan)
    if spec.record.integer:
        return [f"{int(v)}\n" if v == v else None for v in values]
    return [f"{v:6.4f}\n" if v == v else None for v in values]


def trec_eval_blocks(ordered, per_query: dict, means: dict, qids, *, runid: str | None = None,
                     queries: bool = False) -> Iterator[str]:
    """Results in trec_eval's layout, as blocks of lines: ``%-22s\t%s\t%6.4f`` lines (measure, query id or ``all``,
    value; counts as integers ``%ld``; ``runid`` with the run's tag), with ``queries`` (``-q``) each query's lines
    first, queries in byte order of their ids (trec_eval sorts its qrels), :data:`QUERY_BLOCK` queries a block, then
    the summary ``all`` lines. Measures that trec_eval does not print per query (num_q, gm_map, gm_bpref, runid)
    appear only in the summary, as in trec_eval.

    ``ordered``: the metric specs in trec_eval's order (:func:`rankcli.core.metrics.specs.trec_order`); each gives its
    printed name (``output_name()``) and its record (``integer``, ``per_query_line``, ``family``). ``per_query`` and
    ``means`` are keyed by ``str(spec)``; ``qids`` are the query ids (an array of integers or of text), aligned with
    the per-query values.
    """
    if queries:
        cols = [(f"{spec.output_name():<22}\t", spec, np.asarray(per_query[str(spec)])) for spec in ordered
                if spec.record.per_query_line and str(spec) in per_query]
        names = _qid_bytes(qids)
        order = np.argsort(names, kind="stable")
        for start in range(0, order.shape[0], QUERY_BLOCK):
            rows = order[start:start + QUERY_BLOCK]
            texts = [(p, _texts(spec, values[rows].tolist())) for p, spec, values in cols]
            out = []
            for j, name in enumerate(names[rows].tolist()):
                q = f"{name.decode('utf-8', 'surrogateescape')}\t"
                out.extend([p + q + t[j] for p, t in texts if t[j] is not None])
            yield "".join(out)
    out = []
    for spec in ordered:
        if spec.record.family == "info":
            out.append(f"{'runid':<22}\tall\t{runid if runid is not None else 'rankcli'}\n")
        elif spec.name == "num_q":
            out.append(_line(spec, "all", _queries_averaged(ordered, per_query, means[str(spec)])))
        elif str(spec) in means and means[str(spec)] == means[str(spec)]:
            out.append(_line(spec, "all", means[str(spec)]))
    yield "".join(out)


def _line(spec, where, value) -> str:
    return f"{spec.output_name():<22}\t{where}\t{_texts(spec, [value])[0]}"
