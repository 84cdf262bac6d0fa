"""Click logs as the click models read them: rankcli's click logs, plain session tables, and the Yandex Relevance
Prediction Challenge format, into one :class:`SessionLog`.

Formats (``--format``; ``auto`` tells them apart by the file):

``rankcli``
    A click log of ``rankcli simulate-clicks`` (:mod:`rankcli.formats.clicks`): a session is an impression (``qid``),
    its query ``source_qid``, its results in ``position`` order (1, 2, ... with no gap), the document ``docid`` (or
    ``source_row``), the click ``label`` (0 or 1) and, when present, the grade ``relevance``.
``table``
    A Parquet or tab-separated file (a header line naming the columns) with ``session``, ``query``, ``rank``,
    ``document``, ``click`` and optionally ``relevance``: a session's rows contiguous, ranks 1, 2, ... in order,
    clicks 0 or 1. (rankcli's names: ``session`` is ``qid``, ``query`` is ``source_qid``, ``rank`` is ``position``,
    ``document`` is ``docid``, ``click`` is ``label``.)
``yandex``
    Tab-separated records as PyClick's parser reads them (:mod:`rankcli.formats.yandex_clicks`).

Every session has at least one result. Sessions, queries and documents are coded: ``query`` per session and
``document`` per row index the vocabularies ``queries`` and ``documents`` (Arrow string arrays). Bad input is an
:class:`~rankcli.errors.InputError` (exit 3) naming the file and the line (text) or row (Parquet).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rankcli.dataset import NonContiguousQueryError, offsets_from_qids
from rankcli.errors import InputError, SchemaError, UsageError
from rankcli.formats.arrow import column_to_numpy
from rankcli.formats.inputs import unreadable_input
from rankcli.formats.parquet import open_parquet
from rankcli.formats.session_log import SessionLog, codes, fingerprint

FORMATS = ("auto", "rankcli", "table", "yandex")
#: The table columns read as text whatever they look like ("007" and "7" are different documents).
_TSV_STRINGS = {"session": pa.string(), "query": pa.string(), "document": pa.string()}
TABLE_COLUMNS = ("session", "query", "rank", "document", "click")


def detect_format(path: Path | str) -> str:
    """``rankcli``, ``table`` or ``yandex``: a Parquet file with ``session`` is a table, another Parquet file a
    rankcli log; a text file whose first line names the table's columns is a table, any other a Yandex log."""
    with open(path, "rb") as fh:
        head = fh.read(1 << 12)
    if head[:4] == b"PAR1":
        return "table" if "session" in open_parquet(path).schema_arrow.names else "rankcli"
    first = head.split(b"\n", 1)[0].rstrip(b"\r").split(b"\t")
    return "table" if set(TABLE_COLUMNS) <= {f.decode("utf-8", "replace").strip() for f in first} else "yandex"


def read_session_log(path: Path | str, fmt: str = "auto", *, unknown_clicks: str = "error") -> SessionLog:
    """Read the click log at ``path`` in format ``fmt`` (:data:`FORMATS`). ``unknown_clicks`` (Yandex logs):
    ``error`` refuses a click on a document its query did not show, ``ignore`` skips it (as PyClick does)."""
    if fmt not in FORMATS:
        raise UsageError(f"--format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    p = Path(path)
    if not p.exists():
        raise unreadable_input(p)
    if p.is_dir():
        raise InputError(f"{p}: is a directory, expected a click log")
    kind = detect_format(p) if fmt == "auto" else fmt
    if kind == "yandex":
        from rankcli.formats.yandex_clicks import read_yandex

        log = read_yandex(p, unknown_clicks=unknown_clicks)
    elif kind == "rankcli":
        log = _read_rankcli(p)
    else:
        log = _read_table(p)
    log.fingerprint = fingerprint(p)
    return log


def _read_parquet_columns(path: Path, wanted: list[str]) -> dict[str, pa.ChunkedArray]:
    """The ``wanted`` columns, read row group by row group (a large log's other columns are never read)."""
    pf = open_parquet(path)
    parts: dict[str, list] = {c: [] for c in wanted}
    try:
        for g in range(pf.num_row_groups):
            table = pf.read_row_group(g, columns=wanted, use_threads=False)
            for c in wanted:
                parts[c].extend(table.column(c).chunks)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"{path}: cannot read ({exc})") from None
    schema = pf.schema_arrow
    return {c: pa.chunked_array(parts[c], type=schema.field(c).type) for c in wanted}


def _numeric(path: Path, name: str, col: pa.ChunkedArray, where) -> np.ndarray:
    if col.null_count:
        row = int(np.argmax(column_to_numpy(col.is_null().cast(pa.int8()))))
        raise InputError(f"{path}{where(row)}: column {name} has a missing value")
    if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type) or pa.types.is_boolean(col.type)):
        raise SchemaError(f"{path}: column {name} must be numeric, got {col.type}")
    return column_to_numpy(col.cast(pa.int8()) if pa.types.is_boolean(col.type) else col)


def _strings(path: Path, name: str, col: pa.ChunkedArray, where) -> pa.ChunkedArray:
    """An identifier column ready for :func:`codes`: strings as they are, integers too (coded as numbers, their
    vocabulary made text afterwards: no string per row), anything else as text."""
    if col.null_count:
        row = int(np.argmax(column_to_numpy(col.is_null().cast(pa.int8()))))
        raise InputError(f"{path}{where(row)}: column {name} has a missing value")
    return col if pa.types.is_string(col.type) or pa.types.is_integer(col.type) else col.cast(pa.string())


def _read_rankcli(path: Path) -> SessionLog:
    from rankcli.formats.parquet import read_metadata

    names = open_parquet(path).schema_arrow.names
    doc = "docid" if "docid" in names else "source_row"
    wanted = ["qid", "position", "label", "source_qid", doc] + (["relevance"] if "relevance" in names else [])
    missing = [c for c in wanted if c not in names]
    if missing:
        raise SchemaError(f"{path}: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} (a rankcli "
                          "click log has qid, position, label, source_qid and docid or source_row; --format table "
                          "reads session, query, rank, document, click)")
    cols = _read_parquet_columns(path, wanted)
    where = _row
    footer = {}
    meta = read_metadata(path)
    if "clicks" in meta:
        import json

        try:
            footer = json.loads(meta["clicks"])
        except ValueError:
            footer = {}
    return _assemble(path, "rankcli", where, cols["qid"], cols["source_qid"], cols["position"], cols[doc],
                     cols["label"], cols.get("relevance"), names=("qid", "source_qid", "position", doc, "label"),
                     footer=footer if isinstance(footer, dict) else {})


def _row(r: int) -> str:
    """Where row ``r`` of a Parquet file is, after its path."""
    return f": row {r}"


def _line(r: int) -> str:
    """Where data row ``r`` of a text table is, after its path: the header is line 1."""
    return f":{r + 2}"


def _read_table(path: Path) -> SessionLog:
    with open(path, "rb") as fh:
        parquet = fh.read(4) == b"PAR1"
    if parquet:
        names = open_parquet(path).schema_arrow.names
        wanted = list(TABLE_COLUMNS) + (["relevance"] if "relevance" in names else [])
        missing = [c for c in wanted if c not in names]
        if missing:
            raise SchemaError(f"{path}: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} (a "
                              f"table has {', '.join(TABLE_COLUMNS)}; found {', '.join(names[:12])})")
        cols, where = _read_parquet_columns(path, wanted), _row
    else:
        cols, where = _read_tsv_table(path), _line
    return _assemble(path, "table", where, cols["session"], cols["query"], cols["rank"], cols["document"],
                     cols["click"], cols.get("relevance"), names=TABLE_COLUMNS)


def _read_tsv_table(path: Path) -> dict[str, pa.ChunkedArray]:
    import pyarrow.csv as csv

    bad: list = []

    def invalid(row) -> str:
        bad.append(row)
        return "error"

    try:
        table = csv.read_csv(str(path), read_options=csv.ReadOptions(use_threads=False),
                             parse_options=csv.ParseOptions(delimiter="\t", quote_char=False, escape_char=False,
                                                            double_quote=False, invalid_row_handler=invalid),
                             convert_options=csv.ConvertOptions(column_types=_TSV_STRINGS, strings_can_be_null=False,
                                                                auto_dict_encode=False))
    except pa.ArrowInvalid as exc:
        if bad:
            row = bad[0]
            raise InputError(f"{path}:{row.number}: expected {row.expected_columns} tab-separated fields, got "
                             f"{row.actual_columns}, got {row.text[:80]!r}") from None
        raise InputError(f"{path}: not a tab-separated table ({exc})") from None
    names = table.column_names
    missing = [c for c in TABLE_COLUMNS if c not in names]
    if missing:
        header = "\t".join(names)[:80]
        raise SchemaError(f"{path}:1: header lacks {', '.join(missing)} (a table's header names "
                          f"{', '.join(TABLE_COLUMNS)}), got {header!r}")
    out = {c: table.column(c) for c in list(TABLE_COLUMNS) + (["relevance"] if "relevance" in names else [])}
    for c in ("rank", "click", "relevance"):
        if c in out and not (pa.types.is_integer(out[c].type) or pa.types.is_floating(out[c].type)):
            col = out[c].cast(pa.string())
            ok = column_to_numpy(pc.utf8_is_numeric(col).fill_null(False).cast(pa.int8())) if c != "relevance" \
                else np.zeros(len(col), np.int8)
            r = int(np.argmin(ok))
            raise InputError(f"{path}{_line(r)}: column {c}: expected a number, got {col[r].as_py()!r}")
    return out


def _assemble(path: Path, fmt: str, where, session: pa.ChunkedArray, query: pa.ChunkedArray,
              rank: pa.ChunkedArray, document: pa.ChunkedArray, click: pa.ChunkedArray,
              relevance: pa.ChunkedArray | None, *, names, footer: dict | None = None) -> SessionLog:
    """Check and code the columns of a log with one row per result."""
    s_name, q_name, r_name, d_name, c_name = names
    n = len(rank)
    if n == 0:
        raise InputError(f"{path}: the click log holds no sessions")
    session_codes, _ = codes(_strings(path, s_name, session, where))
    try:
        offsets = offsets_from_qids(session_codes)
    except NonContiguousQueryError as exc:
        first = f"{'line ' if where is _line else ''}{where(exc.first_row).lstrip(': ')}"
        raise InputError(f"{path}{where(exc.row)}: session {session[exc.row].as_py()!r} reappears (first seen at "
                         f"{first}); a session's rows must be contiguous") from None
    ranks = _numeric(path, r_name, rank, where)
    lengths = np.diff(offsets)
    expected = np.arange(n) - np.repeat(offsets[:-1], lengths) + 1
    bad = np.flatnonzero(ranks != expected)
    if bad.size:
        r = int(bad[0])
        raise InputError(f"{path}{where(r)}: session {session[r].as_py()!r}: rank gap, expected {r_name} "
                         f"{int(expected[r])}, got {ranks[r]:g}")
    clicks = _numeric(path, c_name, click, where)
    bad = np.flatnonzero((clicks != 0) & (clicks != 1))
    if bad.size:
        raise InputError(f"{path}{where(int(bad[0]))}: column {c_name}: expected a click (0 or 1), got "
                         f"{clicks[int(bad[0])]:g}")
    q_codes, queries = codes(_strings(path, q_name, query, where))
    first = offsets[:-1]
    changed = np.flatnonzero(q_codes != np.repeat(q_codes[first], lengths))
    if changed.size:
        r = int(changed[0])
        raise InputError(f"{path}{where(r)}: session {session[r].as_py()!r} changes {q_name} within the session, "
                         f"got {query[r].as_py()!r}")
    doc_codes, documents = codes(_strings(path, d_name, document, where))
    rel = None
    if relevance is not None:
        rel = _numeric(path, "relevance", relevance, where).astype(np.float64)
        bad = np.flatnonzero(~np.isfinite(rel))
        if bad.size:
            raise InputError(f"{path}{where(int(bad[0]))}: column relevance: expected a finite grade, got "
                             f"{rel[int(bad[0])]:g}")
    return SessionLog(str(path), fmt, offsets, q_codes[first], doc_codes, clicks.astype(bool), queries, documents,
                      rel, footer or {})
