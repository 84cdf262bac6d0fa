"""The Yandex Relevance Prediction Challenge click log, read as PyClick's ``YandexRelPredChallengeParser`` reads it.

Tab-separated records, one per line (``.gz`` and ``.bz2`` files are read as such):

- a query record ``SessionID TimePassed Q QueryID RegionID URL1 URL2 ...`` (at least 6 fields): a new result list,
  a session in rankcli's sense, of the query ``QueryID``, showing the URLs in rank order;
- a click record ``SessionID TimePassed C URLID`` (4 fields): a click on the URL in the last result list of its
  session.

A result counts as clicked if it was clicked at least once (the repeated clicks are counted in the log's notes).
Refused (exit 3, ``path:line``): a record of neither form, a non-integer TimePassed, a URL listed twice by one query
record, a click before its session's first query record, and a click on a URL the last result list did not show
(with ``unknown_clicks="ignore"`` such a click is skipped and counted instead, as PyClick skips it). Blank lines are
skipped. The file is read in blocks, each split by Arrow's C++ kernels; only the URLs are kept until the end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rankcli.errors import InputError, UsageError
from rankcli.formats.arrow import array_from_numpy, column_to_numpy, scalar, strings_array
from rankcli.formats.session_log import SessionLog, codes

#: Bytes of text split per block.
BLOCK_BYTES = 1 << 24


@dataclass
class _Parts:
    """What the blocks have yielded so far."""

    lines: int = 0  # lines read (rows of the blocks so far)
    serp_session: list = field(default_factory=list)  # session id of each query record
    serp_query: list = field(default_factory=list)
    serp_line: list = field(default_factory=list)
    serp_length: list = field(default_factory=list)
    urls: list = field(default_factory=list)
    click_url: list = field(default_factory=list)
    click_owner: list = field(default_factory=list)
    click_line: list = field(default_factory=list)
    serps: int = 0
    last_session: object = None  # the session id of the last query record, a Python string
    blank: int = 0


def _bool(a) -> np.ndarray:
    return column_to_numpy(a.cast(pa.int8()).fill_null(scalar(0, pa.int8()))).astype(bool)


def _open(path: Path):
    import pyarrow.csv as csv

    bad: list = []

    def invalid(row) -> str:
        bad.append(row)
        return "error"

    stream = pa.input_stream(str(path), compression="detect")
    reader = csv.open_csv(
        stream, read_options=csv.ReadOptions(column_names=["line"], use_threads=False, block_size=BLOCK_BYTES),
        parse_options=csv.ParseOptions(delimiter="\x1e", quote_char=False, escape_char=False, double_quote=False,
                                       ignore_empty_lines=False, newlines_in_values=False, invalid_row_handler=invalid),
        convert_options=csv.ConvertOptions(column_types={"line": pa.string()}, strings_can_be_null=False))
    return reader, bad


def _malformed(path: Path, line: int, text: str, why: str) -> InputError:
    return InputError(f"{path}:{line}: {why}, got {text[:80]!r}")


def _check_records(path: Path, lines: pa.Array, fields, n: np.ndarray, base: int):
    """``(is_query, is_click, blank)`` per line; the first malformed line is an error."""
    blank = _bool(pc.equal(pc.utf8_trim_whitespace(lines), scalar("")))
    padded = pc.list_slice(fields, 2, 3)  # the record type, or an empty list for a line of fewer fields
    typed = pc.list_flatten(padded)
    has3 = np.flatnonzero(n >= 3)
    is_q_type, is_c_type = np.zeros(n.shape[0], bool), np.zeros(n.shape[0], bool)
    is_q_type[has3] = _bool(pc.equal(typed, scalar("Q")))
    is_c_type[has3] = _bool(pc.equal(typed, scalar("C")))
    is_q = is_q_type & (n >= 6)
    is_c = is_c_type & (n == 4)
    ok = blank | is_q | is_c
    timed = np.flatnonzero(is_q | is_c)
    if timed.size:
        times = pc.list_element(fields.take(array_from_numpy(timed)), scalar(1, pa.int64()))
        ok[timed[~_bool(pc.utf8_is_digit(times))]] = False
    bad = np.flatnonzero(~ok)
    if bad.size:
        r = int(bad[0])
        if is_q_type[r] and n[r] < 6:
            why = "a query record has at least 6 tab-separated fields (SessionID TimePassed Q QueryID RegionID URL...)"
        elif is_c_type[r] and n[r] != 4:
            why = "a click record has 4 tab-separated fields (SessionID TimePassed C URLID)"
        elif is_q_type[r] or is_c_type[r]:
            why = "TimePassed must be a whole number"
        else:
            why = ("expected a query record (SessionID TimePassed Q QueryID RegionID URL...) or a click record "
                   "(SessionID TimePassed C URLID)")
        raise _malformed(path, base + r + 1, lines[r].as_py(), why)
    return is_q, is_c, blank


def _field(fields, rows: np.ndarray, i: int) -> pa.Array:
    return pc.list_element(fields.take(array_from_numpy(rows)), scalar(i, pa.int64()))


def _add_block(path: Path, lines: pa.Array, parts: _Parts) -> None:
    lines = pc.utf8_rtrim(lines, characters="\r")
    fields = pc.split_pattern(lines, "\t")
    n = column_to_numpy(pc.list_value_length(fields)).astype(np.int64)
    base = parts.lines
    is_q, is_c, blank = _check_records(path, lines, fields, n, base)
    parts.blank += int(blank.sum())
    q_rows, c_rows = np.flatnonzero(is_q), np.flatnonzero(is_c)
    q_session = _field(fields, q_rows, 0) if q_rows.size else None
    if q_rows.size:
        parts.serp_session.append(q_session)
        parts.serp_query.append(_field(fields, q_rows, 3))
        parts.serp_line.append(base + q_rows + 1)
        parts.serp_length.append(n[q_rows] - 5)
        parts.urls.append(pc.list_flatten(pc.list_slice(fields.take(array_from_numpy(q_rows)), 5)))
    if c_rows.size:
        serp_before = parts.serps + np.cumsum(is_q) - is_q  # query records before each line (all blocks)
        owner = serp_before[c_rows] + is_q[c_rows] - 1  # the last query record before the click
        _check_click_sessions(path, lines, parts, q_session, c_rows, owner, _field(fields, c_rows, 0), base)
        parts.click_url.append(_field(fields, c_rows, 3))
        parts.click_owner.append(owner)
        parts.click_line.append(base + c_rows + 1)
    if q_rows.size:
        parts.last_session = q_session.slice(len(q_session) - 1)
    parts.serps += int(q_rows.size)
    parts.lines += len(lines)


def _check_click_sessions(path, lines, parts, q_session, c_rows, owner, c_session, base) -> None:
    """A click belongs to its session's last query record: one exists, and is of the same session."""
    if (owner < 0).any():
        r = int(c_rows[np.flatnonzero(owner < 0)[0]])
        raise _malformed(path, base + r + 1, lines[r].as_py(), "a click before any query record")
    earlier = parts.last_session if parts.last_session is not None else strings_array([b""])
    candidates = pa.concat_arrays([earlier] + ([q_session] if q_session is not None else []))
    # index 0: the last query record of an earlier block
    expected = candidates.take(array_from_numpy(owner - parts.serps + 1))
    bad = np.flatnonzero(~_bool(pc.equal(expected, c_session)))
    if bad.size:
        r = int(c_rows[bad[0]])
        raise _malformed(path, base + r + 1, lines[r].as_py(),
                         f"a click of session {c_session[int(bad[0])].as_py()} before any query record of that "
                         f"session (the last query record is of session {expected[int(bad[0])].as_py()})")


def _urls(parts: _Parts) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """Codes of the results' and the clicks' URLs under one vocabulary."""
    chunks = [c for a in parts.urls + parts.click_url for c in (a.chunks if isinstance(a, pa.ChunkedArray) else [a])]
    all_codes, vocab = codes(pa.chunked_array(chunks, type=pa.string()))
    n_results = sum(len(a) for a in parts.urls)
    return all_codes[:n_results], all_codes[n_results:], vocab


def read_yandex(path: Path | str, *, unknown_clicks: str = "error"):
    """The Yandex log at ``path`` as a :class:`~rankcli.formats.click_logs.SessionLog` (see the module docstring)."""
    if unknown_clicks not in ("error", "ignore"):
        raise UsageError(f"--unknown-clicks: expected error or ignore, got {unknown_clicks!r}")
    path = Path(path)
    parts = _Parts()
    bad: list = []
    try:  # opening reads the first block: an empty or binary file fails there
        reader, bad = _open(path)
        for batch in reader:
            _add_block(path, batch.column(0), parts)
    except pa.ArrowInvalid as exc:
        if bad:
            raise _malformed(path, bad[0].number, bad[0].text, "a record holds the byte 0x1e") from None
        if "Empty CSV file" in str(exc):
            raise InputError(f"{path}: the log is empty: no query record (SessionID TimePassed Q QueryID RegionID "
                             "URL...)") from None
        raise InputError(f"{path}: not a readable text log ({exc})") from None
    except OSError as exc:  # a broken compressed stream
        raise InputError(f"{path}: cannot read ({exc})") from None
    if not parts.serps:
        raise InputError(f"{path}: no query record (SessionID TimePassed Q QueryID RegionID URL...) in the log")
    lengths = np.concatenate(parts.serp_length)
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    result_codes, click_codes, vocab = _urls(parts)
    serp_of_cell = np.repeat(np.arange(lengths.shape[0], dtype=np.int64), lengths)
    width = np.int64(max(len(vocab), 1))
    keys = serp_of_cell * width + result_codes
    order = np.argsort(keys, kind="stable")
    twice = np.flatnonzero(keys[order][1:] == keys[order][:-1])
    if twice.size:
        serp = int(serp_of_cell[order[twice].min()])
        line = int(np.concatenate(parts.serp_line)[serp])
        raise InputError(f"{path}:{line}: a query record lists a URL twice, got "
                         f"{vocab[int(result_codes[order[twice.min()]])].as_py()!r}")
    click = np.zeros(keys.shape[0], bool)
    notes = {"blank_lines": parts.blank, "repeated_clicks": 0, "ignored_clicks": 0, "clicks_read": 0}
    if parts.click_owner:
        owner = np.concatenate(parts.click_owner)
        click_keys = owner * width + click_codes
        pos = np.searchsorted(keys[order], click_keys)
        found = (pos < keys.shape[0]) & (keys[order][np.minimum(pos, keys.shape[0] - 1)] == click_keys)
        if not found.all():
            k = int(np.flatnonzero(~found)[0])
            if unknown_clicks == "error":
                line = int(np.concatenate(parts.click_line)[k])
                raise InputError(f"{path}:{line}: a click on a URL its session's last query record did not show "
                                 f"(--unknown-clicks ignore skips such clicks, as PyClick does), got "
                                 f"{vocab[int(click_codes[k])].as_py()!r}")
        cells = order[pos[found]]
        notes.update(clicks_read=int(owner.shape[0]), ignored_clicks=int((~found).sum()),
                     repeated_clicks=int(cells.shape[0] - np.unique(cells).shape[0]))
        click[cells] = True
    q_codes, queries = codes(pa.chunked_array([c for a in parts.serp_query for c in
                                               (a.chunks if isinstance(a, pa.ChunkedArray) else [a])], pa.string()))
    return SessionLog(str(path), "yandex", offsets, q_codes, result_codes, click, queries, vocab, None, {}, notes)
