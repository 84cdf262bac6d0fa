"""A run's rows as ``rankcli fuse`` reads them: query ids, document names and scores, from a TREC or a Parquet run.

- A TREC run (``qid Q0 docid rank score tag``) is read by :mod:`rankcli.formats.trec.parse`, as ``rankcli eval``
  reads it (gzip by its magic bytes, any whitespace, ``#`` comments, a (query, document) pair on two lines refused);
  ``-`` is standard input (:func:`rankcli.formats.trec.file_bytes.read_input`: gunzipped when gzipped, checked block
  by block), a leading UTF-8 byte-order mark dropped, UTF-8 required.
- A Parquet run (``qid``, ``score``, and ``docid`` or ``row``; ``label`` optional) is recognised by its magic bytes;
  its documents are named as TREC files name them (:func:`rankcli.formats.trec.document_names`: the docid, else
  ``<qid>-<row>``, else the row number in the file), so that a Parquet and a TREC run of one dataset match.

Document names come as numpy ``S`` strings whose width is a multiple of 8 bytes (NUL-padded: they view as 64-bit
words), with their 64-bit hashes (:func:`rankcli.formats.trec.parse.doc_hash`, this process's seed). A score that is
not a finite number is refused, naming its line or row: no fusion has a meaning for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from rankcli.errors import InputError, InputFormatError, SchemaError
from rankcli.formats import parquet
from rankcli.formats.trec.file_bytes import read_input
from rankcli.formats.trec.parse import doc_hash, read_run_columns, words_of
from rankcli.formats.trec.write import document_names

STDIN = "-"


@dataclass
class RunFile:
    """One run's rows in file order: ``qcodes`` index ``qnames`` (``S``, the distinct query ids in order of first
    appearance); per row the document ``names`` (``S``, width a multiple of 8), their ``keys`` (hashes), ``scores``
    and, for a Parquet run with a label column, ``labels``. ``kind`` is ``trec`` or ``parquet``; ``tag`` a TREC
    run's first tag; ``keyed_by`` how a Parquet run names its rows (``docid``, ``row`` or ``position``) and ``data``
    the dataset its footer records (``rankcli predict`` writes it)."""

    path: str
    kind: str
    qnames: np.ndarray
    qcodes: np.ndarray
    names: np.ndarray
    keys: np.ndarray
    scores: np.ndarray
    labels: np.ndarray | None = None
    tag: str = ""
    keyed_by: str = "docid"
    data: str | None = None

    @property
    def n_rows(self) -> int:
        """The number of rows."""
        return int(self.scores.shape[0])


def _stdin_text() -> bytes:
    data = read_input(STDIN)
    if data[:3] == b"\xef\xbb\xbf":
        data = data[3:]
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"<stdin>: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if data[:4] == b"PAR1":
        raise InputError("<stdin>: a Parquet run cannot be read from standard input; give its file name")
    return data


def _read_trec(path: str) -> RunFile:
    cols = read_run_columns("<stdin>" if path == STDIN else path, data=_stdin_text() if path == STDIN else None)
    bad = ~np.isfinite(cols.values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputFormatError("score is infinite (fusion needs finite scores)", "<stdin>" if path == STDIN else path,
                               int(cols.numbers[i]) if cols.numbers is not None else None, str(cols.values[i]))
    names = cols.docids
    return RunFile(path, "trec", cols.qnames, cols.qcodes, names, cols.hashes if cols.hashes is not None
                   else doc_hash(cols.words), cols.values, tag=cols.tag)


def _numeric(table, name: str, path: str) -> np.ndarray:
    col = table.column(name)
    if col.null_count:
        row = int(np.flatnonzero(np.asarray(col.is_null().to_numpy(zero_copy_only=False)))[0])
        raise InputError(f"{path}: column {name}: missing value at row {row}")
    values = parquet.column_to_numpy(col)
    if not (np.issubdtype(values.dtype, np.floating) or np.issubdtype(values.dtype, np.integer)):
        raise SchemaError(f"{path}: column {name} must be numeric, got {col.type}")
    return values.astype(np.float64)


def _names_as_bytes(names) -> np.ndarray:
    """An Arrow string array as numpy ``S`` strings, NUL-padded to a width that is a multiple of 8."""
    data = names.cast(pa.binary()).to_numpy(zero_copy_only=False)
    out = np.array(data.tolist() if data.dtype == object else data, dtype="S")
    width = max(out.dtype.itemsize, 1)
    return out.astype(f"S{-(-width // 8) * 8}")


def _read_parquet(path: str) -> RunFile:
    cols = parquet.column_names(path)
    parquet.require_columns(path, cols, ("qid", "score"))
    keyed_by = "docid" if "docid" in cols else "row" if "row" in cols else "position"
    wanted = ["qid", "score"] + [c for c in ("docid", "row", "label") if c in cols]
    table = parquet.read_table(path, wanted)
    if table.num_rows == 0:
        raise InputError(f"{path}: the run has no rows")
    qids = parquet.qids_as_int64(path, table.column("qid"))
    scores = _numeric(table, "score", path)
    bad = ~np.isfinite(scores)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{path}: column score: {scores[i]} at row {i} (fusion needs finite scores)")
    labels = _numeric(table, "label", path) if "label" in cols and not table.column("label").null_count else None
    rows = None
    if keyed_by == "row":
        rows = parquet.column_to_numpy(table.column("row")).astype(np.int64)
    names = _names_as_bytes(document_names(qids, table.column("docid") if keyed_by == "docid" else None, rows,
                                           check=False))
    qnames, qcodes = _query_codes(qids)
    meta = parquet.read_metadata(path)
    return RunFile(path, "parquet", qnames, qcodes, names, doc_hash(words_of(names)), scores, labels,
                   keyed_by=keyed_by, data=meta.get("data"))


def _query_codes(qids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct query ids (as ``S`` decimal text, in order of first appearance) and each row's code; only the
    first row of each block of equal ids is looked at (a run lists a query's rows together)."""
    heads = np.flatnonzero(np.r_[True, qids[1:] != qids[:-1]])
    uniq, first, inv = np.unique(qids[heads], return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(uniq.shape[0], dtype=np.int64)
    rank[order] = np.arange(uniq.shape[0])
    codes = np.repeat(rank[inv.ravel()], np.diff(np.r_[heads, qids.shape[0]]))
    return np.array([str(q).encode() for q in uniq[order].tolist()], dtype="S"), codes


def is_parquet_file(path: str) -> bool:
    """Whether ``path`` (not standard input) starts with Parquet's magic bytes."""
    if path == STDIN:
        return False
    p = Path(path)
    if not p.is_file():
        return False
    with open(p, "rb") as fh:
        return fh.read(4) == b"PAR1"


def read_run_file(path: str) -> RunFile:
    """One run, TREC or Parquet (by its magic bytes; ``-``: a TREC run on standard input); see the module
    docstring."""
    return _read_parquet(path) if is_parquet_file(path) else _read_trec(path)
