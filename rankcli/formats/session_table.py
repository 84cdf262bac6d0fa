"""A click log with one row per result, read piece by piece (Parquet row groups, text blocks) into a
:class:`~rankcli.formats.session_log.SessionLog`, so that a log much larger than its coded form fits in memory.

Each piece is checked as it arrives: a session is a run of equal session identifiers; its ranks are 1, 2, ... in
order; its query does not change; clicks are 0 or 1; grades are finite. Only what the coded log keeps survives a
piece: each run's start, session and query identifiers, every row's click, document and grade (a text document as
its code within the piece, when the piece's distinct values are fewer than its rows). At the end the runs' identifiers
are coded (a session that reappears after another is refused there, unless they increase) and the documents coded
once, into int32 codes with no other per-row copy (:func:`document_codes`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rankcli.errors import InputError, SchemaError
from rankcli.formats.arrow import array_from_numpy, column_to_numpy, scalar
from rankcli.formats.session_log import SessionLog, codes


def _bool(a) -> np.ndarray:
    return column_to_numpy(a.cast(pa.int8()).fill_null(scalar(0, pa.int8()))).astype(bool)


def _array(col) -> pa.Array:
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def _concatenate(pieces: list) -> np.ndarray:
    """The pieces as one array, each released as soon as it is copied (``np.concatenate`` would hold them all beside
    the result)."""
    out = np.empty(sum(p.shape[0] for p in pieces), pieces[0].dtype if pieces else np.float64)
    at = 0
    while pieces:
        p = pieces.pop(0)
        out[at:at + p.shape[0]] = p
        at += p.shape[0]
    return out


def _increasing(chunks: list[pa.Array]) -> bool:
    """Whether the values of ``chunks``, in order, increase strictly (text by its bytes)."""
    last = None
    for c in chunks:
        n = len(c)
        if n == 0:
            continue
        if n > 1 and not pc.all(pc.greater(c.slice(1), c.slice(0, n - 1))).as_py():
            return False
        if last is not None and not pc.greater(c[0], last).as_py():
            return False
        last = c[n - 1]
    return True


def _compact(col: pa.Array) -> tuple[np.ndarray | None, pa.Array]:
    """A piece's documents as kept until the log is complete, ``(codes, values)``: text as its codes within the piece
    and the piece's distinct values when that is smaller, as it is unless nearly every value is new; otherwise
    ``(None, column)``, and so integers (coding them would save at most half, for a hash pass over every row)."""
    if pa.types.is_string(col.type):
        encoded = pc.dictionary_encode(col)
        if encoded.indices.nbytes + encoded.dictionary.nbytes < col.nbytes:
            return column_to_numpy(encoded.indices), encoded.dictionary
    return None, col


def document_codes(pieces: list[tuple[np.ndarray | None, pa.Array]]) -> tuple[np.ndarray, pa.Array]:
    """``(codes, vocabulary)`` of the documents of every piece (from :func:`_compact`), as
    :func:`~rankcli.formats.session_log.codes` of the whole column gives them: int32 codes in first-seen order.

    A compact piece's distinct values, in first-seen order, meet every other value in the order its rows do, so one
    hash pass over the rows of the plain pieces and the values of the compact ones codes everything, and the codes
    are written piece by piece into one array (no per-row copy beyond them). ``pieces`` is emptied as it goes."""
    encoded = pc.dictionary_encode(pa.chunked_array([values for _, values in pieces]))  # one memo over every chunk
    vocabulary = encoded.chunk(encoded.num_chunks - 1).dictionary  # every chunk's codes index the last dictionary
    if not pa.types.is_string(vocabulary.type):  # integer identifiers: only the distinct ones become text
        vocabulary = vocabulary.cast(pa.string())
    indices = pa.chunked_array([c.indices for c in encoded.chunks], pa.int32())
    del encoded
    out = np.empty(sum(len(values) if local is None else local.shape[0] for local, values in pieces), np.int32)
    at = start = 0
    while pieces:
        local, values = pieces.pop(0)
        piece_codes = column_to_numpy(indices.slice(start, len(values)))
        start += len(values)
        rows = out[at:at + (len(values) if local is None else local.shape[0])]
        if local is None:
            rows[:] = piece_codes
        else:
            np.take(piece_codes, local, out=rows)
        at += rows.shape[0]
    return out, vocabulary


@dataclass
class Columns:
    """The column names of the log's five roles, and the grade's (None: no grades)."""

    session: str
    query: str
    rank: str
    document: str
    click: str
    relevance: str | None = None


@dataclass
class SessionStream:
    """Accumulates the pieces of a log (see the module docstring); ``where(row)`` places a 0-based row after the path
    (``":12"`` for a text line, ``": row 10"`` for Parquet)."""

    path: object
    fmt: str
    names: Columns
    where: object
    numbers: dict = field(default_factory=dict)  # text logs: convert these columns from text, checked
    rows: int = 0
    starts: list = field(default_factory=list)
    run_session: list = field(default_factory=list)
    run_query: list = field(default_factory=list)
    ranks_ok: int = 0
    clicks: list = field(default_factory=list)
    documents: list = field(default_factory=list)
    grades: list = field(default_factory=list)
    carry: tuple | None = None  # (session value, query value, start row) of the run the last piece ended in

    def fail(self, row: int, what: str) -> InputError:
        """The error for global ``row``."""
        return InputError(f"{self.path}{self.where(row)}: {what}")

    def _column(self, table, name: str, numeric: bool) -> pa.Array:
        col = _array(table.column(name))
        if col.null_count:
            raise self.fail(self.rows + int(np.argmax(_bool(col.is_null()))), f"column {name} has a missing value")
        if numeric and pa.types.is_string(col.type):
            ok = _bool(pc.utf8_is_numeric(pc.utf8_trim_whitespace(col))) if name != self.names.relevance else None
            if ok is not None and not ok.all():
                r = int(np.argmin(ok))
                raise self.fail(self.rows + r, f"column {name}: expected a number, got {col[r].as_py()!r}")
            try:
                col = col.cast(pa.float64())
            except pa.ArrowInvalid:
                raise self.fail(self.rows, f"column {name}: expected numbers") from None
        elif numeric and not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)
                              or pa.types.is_boolean(col.type)):
            raise SchemaError(f"{self.path}: column {name} must be numeric, got {col.type}")
        elif not numeric and not (pa.types.is_string(col.type) or pa.types.is_integer(col.type)):
            col = col.cast(pa.string())
        return col

    def add(self, table) -> None:
        """Check and keep one piece (a table or record batch with the named columns)."""
        n = table.num_rows
        if n == 0:
            return
        names = self.names
        session = self._column(table, names.session, False)
        query = self._column(table, names.query, False)
        new = np.ones(n, bool)
        if n > 1:
            new[1:] = _bool(pc.not_equal(session.slice(1), session.slice(0, n - 1)))
        if self.carry is not None:
            new[0] = session[0].as_py() != self.carry[0]
        local = np.flatnonzero(new)
        self.starts.append(self.rows + local)
        self.run_session.append(session.take(array_from_numpy(local)))
        self.run_query.append(query.take(array_from_numpy(local)))
        start = np.maximum.accumulate(np.where(new, np.arange(n), -1))
        self._check_queries(session, query, start)
        self._check_ranks(table, session, start)
        self._keep_rest(table)
        last = int(local[-1]) if local.size else None
        self.carry = (session[n - 1].as_py(), query[last].as_py() if last is not None else self.carry[1],
                      self.rows + last if last is not None else self.carry[2])
        self.rows += n

    def _check_queries(self, session: pa.Array, query: pa.Array, start: np.ndarray) -> None:
        inside = start >= 0
        if inside.any():
            idx = np.flatnonzero(inside)
            changed = _bool(pc.not_equal(query.take(array_from_numpy(idx)),
                                         query.take(array_from_numpy(start[idx]))))
            bad = idx[changed]
        else:
            bad = np.zeros(0, np.int64)
        if (~inside).any():  # rows continuing the run the previous piece ended in
            head = np.flatnonzero(~inside)
            other = head[np.array([v != self.carry[1] for v in query.take(array_from_numpy(head)).to_pylist()])]
            bad = np.concatenate((other, bad))
        if bad.size:
            r = int(bad.min())
            raise self.fail(self.rows + r, f"session {session[r].as_py()!r} changes {self.names.query} within the "
                            f"session, got {query[r].as_py()!r}")

    def _check_ranks(self, table, session: pa.Array, start: np.ndarray) -> None:
        names = self.names
        ranks = column_to_numpy(self._column(table, names.rank, True))
        first = np.where(start >= 0, self.rows + start, self.carry[2] if self.carry else 0)
        expected = self.rows + np.arange(ranks.shape[0]) - first + 1
        bad = np.flatnonzero(ranks != expected)
        if bad.size:
            r = int(bad[0])
            if expected[r] == 1:
                self._refuse_if_seen(session, r)
            raise self.fail(self.rows + r, f"session {session[r].as_py()!r}: rank gap, expected {names.rank} "
                            f"{int(expected[r])}, got {ranks[r]:g}")

    def _refuse_if_seen(self, session: pa.Array, r: int) -> None:
        """A session starting at row ``r`` of this piece with a rank other than 1: say so if it is one seen before
        (its earlier run's place named), the likelier cause."""
        value = session[r].as_py()
        starts = np.concatenate(self.starts)
        runs = pa.chunked_array(self.run_session).to_pylist()
        for start, v in zip(starts, runs):
            if v == value and start < self.rows + r:
                seen = f"{'line ' if self.where(0).startswith(':') else ''}{self.where(int(start)).lstrip(': ')}"
                raise self.fail(self.rows + r, f"session {value!r} reappears (first seen at {seen}); a session's "
                                "rows must be contiguous")

    def _keep_rest(self, table) -> None:
        names = self.names
        clicks = column_to_numpy(self._column(table, names.click, True))
        bad = np.flatnonzero((clicks != 0) & (clicks != 1))
        if bad.size:
            raise self.fail(self.rows + int(bad[0]), f"column {names.click}: expected a click (0 or 1), got "
                            f"{clicks[int(bad[0])]:g}")
        self.clicks.append(clicks.astype(bool))
        self.documents.append(_compact(self._column(table, names.document, False)))
        if names.relevance is not None:
            grades = column_to_numpy(self._column(table, names.relevance, True)).astype(np.float64)
            bad = np.flatnonzero(~np.isfinite(grades))
            if bad.size:
                raise self.fail(self.rows + int(bad[0]), f"column relevance: expected a finite grade, got "
                                f"{grades[int(bad[0])]:g}")
            self.grades.append(grades)

    def finish(self, footer: dict | None = None) -> SessionLog:
        """The coded log; a session that reappears after another is refused here."""
        if self.rows == 0:
            raise InputError(f"{self.path}: the click log holds no sessions")
        starts = np.concatenate(self.starts)
        offsets = np.append(starts, self.rows).astype(np.int64)
        if not _increasing(self.run_session):  # increasing identifiers cannot repeat: no hash table of them all
            run_codes, _ = codes(pa.chunked_array(self.run_session))
            self._check_reappearing(run_codes, offsets)
        q_codes, queries = codes(pa.chunked_array(self.run_query))
        self.run_session = self.run_query = []
        pieces, self.documents = self.documents, []
        doc_codes, documents = document_codes(pieces)
        clicks, self.clicks = self.clicks, []
        grades, self.grades = self.grades, []
        return SessionLog(str(self.path), self.fmt, offsets, q_codes, doc_codes, _concatenate(clicks), queries,
                          documents, _concatenate(grades) if self.names.relevance is not None else None, footer or {})

    def _check_reappearing(self, run_codes: np.ndarray, offsets: np.ndarray) -> None:
        order = np.argsort(run_codes, kind="stable")
        dup = np.flatnonzero(run_codes[order][1:] == run_codes[order][:-1])
        if not dup.size:
            return
        run = int(order[dup + 1].min())
        first = int(np.flatnonzero(run_codes == run_codes[run])[0])
        value = pa.chunked_array(self.run_session).take(array_from_numpy(np.array([run])))[0].as_py()
        seen = f"{'line ' if self.where(0).startswith(':') else ''}{self.where(int(offsets[first])).lstrip(': ')}"
        raise self.fail(int(offsets[run]), f"session {value!r} reappears (first seen at {seen}); a session's rows "
                        "must be contiguous")
