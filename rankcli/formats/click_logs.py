"""Click logs as the click models read them: rankcli's click logs, plain session tables, and the Yandex Relevance
Prediction Challenge format, into one :class:`SessionLog`.

Formats (``--format``; ``auto`` tells them apart by the file):

``rankcli``
    A click log of ``rankcli simulate-clicks`` (:mod:`rankcli.formats.clicks`): a session is an impression (``qid``),
    its query ``source_qid``, its results in ``position`` order (1, 2, ... with no gap), the document ``docid`` (or
    ``source_row``), the click ``label`` (0 or 1) and, when present, the grade ``relevance``.
``table``
    A Parquet or tab-separated file (a header line naming the columns; ``.gz`` and ``.bz2`` read as such) with
    ``session``, ``query``, ``rank``, ``document``, ``click`` and optionally ``relevance``: a session's rows
    contiguous, ranks 1, 2, ... in order, clicks 0 or 1. (rankcli's names: ``session`` is ``qid``, ``query`` is
    ``source_qid``, ``rank`` is ``position``, ``document`` is ``docid``, ``click`` is ``label``.)
``yandex``
    Tab-separated records as PyClick's parser reads them (:mod:`rankcli.formats.yandex_clicks`).

Every session has at least one result. Sessions, queries and documents are coded: ``query`` per session and
``document`` per row index the vocabularies ``queries`` and ``documents`` (Arrow string arrays). Bad input is an
:class:`~rankcli.errors.InputError` (exit 3) naming the file and the line (text) or row (Parquet).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from rankcli.errors import InputError, SchemaError, UsageError
from rankcli.formats.inputs import unreadable_input
from rankcli.formats.parquet import open_parquet, read_metadata
from rankcli.formats.session_log import SessionLog, fingerprint
from rankcli.formats.session_table import Columns, SessionStream
from rankcli.formats.yandex_clicks import read_yandex

FORMATS = ("auto", "rankcli", "table", "yandex")
TABLE_COLUMNS = ("session", "query", "rank", "document", "click")


def detect_format(path: Path | str) -> str:
    """``rankcli``, ``table`` or ``yandex``: a Parquet file with ``session`` is a table, another Parquet file a
    rankcli log; a text file whose first line names the table's columns is a table, any other a Yandex log."""
    with open(path, "rb") as fh:
        head = fh.read(1 << 12)
    if head[:4] == b"PAR1":
        return "table" if "session" in open_parquet(path).schema_arrow.names else "rankcli"
    first = _first_line(path).split(b"\t")
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
        log = read_yandex(p, unknown_clicks=unknown_clicks)
    elif kind == "rankcli":
        log = _read_rankcli(p)
    else:
        log = _read_table(p)
    log.fingerprint = fingerprint(p)
    pa.default_memory_pool().release_unused()  # what the pieces took, back to the system before the fit
    return log


#: Rows per piece of a Parquet log.
BATCH_ROWS = 1 << 20


def _stream_parquet(path: Path, stream: SessionStream, wanted: list[str]) -> None:
    """Feed the ``wanted`` columns of a Parquet log to ``stream`` in batches (its other columns are never read)."""
    pf = open_parquet(path)
    try:
        for batch in pf.iter_batches(batch_size=BATCH_ROWS, columns=wanted, use_threads=False):
            stream.add(batch)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"{path}: cannot read ({exc})") from None


def _read_rankcli(path: Path) -> SessionLog:
    names = open_parquet(path).schema_arrow.names
    doc = "docid" if "docid" in names else "source_row"
    wanted = ["qid", "position", "label", "source_qid", doc] + (["relevance"] if "relevance" in names else [])
    missing = [c for c in wanted if c not in names]
    if missing:
        raise SchemaError(f"{path}: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} (a rankcli "
                          "click log has qid, position, label, source_qid and docid or source_row; --format table "
                          "reads session, query, rank, document, click)")
    stream = SessionStream(path, "rankcli", Columns("qid", "source_qid", "position", doc, "label",
                                                    "relevance" if "relevance" in names else None), _row)
    _stream_parquet(path, stream, wanted)
    footer = {}
    meta = read_metadata(path)
    if "clicks" in meta:
        try:
            footer = json.loads(meta["clicks"])
        except ValueError:
            footer = {}
    return stream.finish(footer if isinstance(footer, dict) else {})


def _row(r: int) -> str:
    """Where row ``r`` of a Parquet file is, after its path."""
    return f": row {r}"


def _line(r: int) -> str:
    """Where data row ``r`` of a text table is, after its path: the header is line 1."""
    return f":{r + 2}"


def _read_table(path: Path) -> SessionLog:
    with open(path, "rb") as fh:
        parquet = fh.read(4) == b"PAR1"
    names = open_parquet(path).schema_arrow.names if parquet else _tsv_header(path)
    missing = [c for c in TABLE_COLUMNS if c not in names]
    if missing:
        where = f"{path}:1" if not parquet else str(path)
        raise SchemaError(f"{where}: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} (a table "
                          f"has {', '.join(TABLE_COLUMNS)}; found {', '.join(names[:12])})")
    relevance = "relevance" if "relevance" in names else None
    stream = SessionStream(path, "table", Columns(*TABLE_COLUMNS, relevance), _row if parquet else _line)
    wanted = list(TABLE_COLUMNS) + ([relevance] if relevance else [])
    if parquet:
        _stream_parquet(path, stream, wanted)
    else:
        _stream_tsv(path, stream, names)
    return stream.finish()


def _first_line(path: Path | str) -> bytes:
    """The first line of a text file (without its line end), decompressed as the readers decompress it: by the file
    name's extension (``.gz``, ``.bz2``); an unreadable compressed stream gives the empty line."""
    try:
        with pa.input_stream(str(path), compression="detect") as fh:
            head = fh.read(1 << 16)
    except (OSError, pa.ArrowInvalid):
        head = b""
    return head.split(b"\n", 1)[0].rstrip(b"\r")


def _tsv_header(path: Path) -> list[str]:
    return [f.strip() for f in _first_line(path).decode("utf-8", "replace").split("\t")]


def _stream_tsv(path: Path, stream: SessionStream, names: list[str]) -> None:
    """Feed a tab-separated table to ``stream`` block by block, every column read as text (checked as it is
    converted, so that a bad value is named by its line)."""
    import pyarrow.csv as csv

    bad: list = []

    def invalid(row) -> str:
        bad.append(row)
        return "error"

    try:
        reader = csv.open_csv(
            str(path), read_options=csv.ReadOptions(use_threads=False, block_size=1 << 24),
            parse_options=csv.ParseOptions(delimiter="\t", quote_char=False, escape_char=False, double_quote=False,
                                           ignore_empty_lines=False, invalid_row_handler=invalid),
            convert_options=csv.ConvertOptions(column_types=dict.fromkeys(names, pa.string()),
                                               strings_can_be_null=False, include_columns=[
                                                   c for c in names if c in TABLE_COLUMNS or c == "relevance"]))
        for batch in reader:
            stream.add(batch)
    except pa.ArrowInvalid as exc:
        if bad:
            row = bad[0]
            raise InputError(f"{path}:{row.number}: expected {row.expected_columns} tab-separated fields, got "
                             f"{row.actual_columns}, got {row.text[:80]!r}") from None
        raise InputError(f"{path}: not a tab-separated table ({exc})") from None
