"""Reading qrels and runs exactly as trec_eval 10.0 reads them (``get_qrels.c``, ``get_trec_results.c``), for
``rankcli trec_eval``; vectorised (no Python loop over lines on the common path).

- A run line is ``qid iter docno rank sim run_id [anything]``: fields are runs of bytes other than C whitespace
  (space, tab, newline, vertical tab, form feed, carriage return), any field after the sixth is ignored, ``sim`` is
  read as C's ``atof`` reads it (the longest number at the start of the field: ``1e``, ``0x1p3``, ``nan``, ``1_0``
  is 1), and the run id is the *last* line's. Blank lines and lines whose first field starts with ``#`` are skipped.
- A qrels line is exactly ``qid iter docno rel``, ``rel`` read as ``atol`` reads it (``1.5`` is 1, ``x`` is 0). A
  line starting with ``#`` in its first column is a comment, but (as in trec_eval) a line right after a comment is
  data whatever it starts with. Blank lines are skipped (trec_eval refuses them).
- A preference line (``-R prefs``, ``get_prefs.c``) is exactly ``qid jg jsg docno rel_level``; under ``-R qrels_prefs``
  (``get_qrels_prefs.c``) a qrels line ``qid jg docno rel_level`` is one, its sub-group ``0``. ``rel_level`` is read
  with ``atof``; comments and blank lines as in qrels.
- Any byte but NUL may be part of an id; a NUL byte is refused (trec_eval's rule) where it is first met, before the
  rest of the file is read, and so is a line of more than :data:`MAX_LINE` bytes. Gzipped files (by their magic
  bytes) are decompressed as they are read; ``-`` is standard input (:mod:`.file_bytes` reads the bytes).

Ids are returned as numpy ``S`` arrays: with no NUL byte in them, numpy's order on them is ``strcmp``'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from rankcli.errors import InputError, InputFormatError
from rankcli.formats.trec.file_bytes import MAX_LINE, check_first_block, read_input

__all__ = ["MAX_LINE", "QrelsLines", "Results", "atof", "atol", "check_first_block", "read_input", "get_qrels",
           "read_results", "read_zscores", "token_bounds"]

#: trec_eval reads fields with C's isspace: space, tab, newline, vertical tab, form feed, carriage return.
_SPACE = np.zeros(256, dtype=bool)
_SPACE[[9, 10, 11, 12, 13, 32]] = True
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


@dataclass
class QrelsLines:
    """The qrels lines in file order: query id, document id (numpy ``S``), label (int64, ``atol``'s), line number,
    and (``-R qrels_jg``) the second field, the judgment group."""

    qids: np.ndarray
    docnos: np.ndarray
    labels: np.ndarray
    lines: np.ndarray
    groups: np.ndarray | None = None


@dataclass
class Results:
    """The run lines in file order: query id, document id, similarity (``atof``'s), line number; ``run_id`` is the
    last line's sixth field (trec_eval's ``runid``)."""

    qids: np.ndarray
    docnos: np.ndarray
    sims: np.ndarray
    lines: np.ndarray
    run_id: bytes


# ---------------------------------------------------------------------------------------------------------------------
# Tokens


@dataclass
class _Tokens:
    arr: np.ndarray       # the bytes
    starts: np.ndarray    # every token's first byte
    ends: np.ndarray      # one past its last byte
    first: np.ndarray     # per line: index of its first token
    count: np.ndarray     # per line: tokens on it
    line_start: np.ndarray  # per line: offset of its first byte


def token_bounds(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (one past) of every run of non-whitespace bytes (C's isspace) of a non-empty uint8 array."""
    space = _SPACE[arr]
    edge = np.empty(arr.shape[0] + 1, dtype=bool)  # token boundaries: space -> non-space and non-space -> space
    edge[0], edge[-1] = ~space[0], ~space[-1]
    np.not_equal(space[1:], space[:-1], out=edge[1:-1])
    bounds = np.flatnonzero(edge)
    return bounds[0::2], bounds[1::2]


def _tokens(data: bytes) -> _Tokens:
    arr = np.frombuffer(data, dtype=np.uint8)
    if arr.shape[0] == 0:
        z = np.zeros(0, dtype=np.int64)
        return _Tokens(arr, z, z, z, z, z)
    starts, ends = token_bounds(arr)
    newlines = np.flatnonzero(arr == 10)
    line_start = np.concatenate(([0], newlines + 1))
    if line_start[-1] == arr.shape[0]:
        line_start = line_start[:-1]  # the file ends with a newline: no line after it
    first = np.searchsorted(starts, line_start)
    count = np.diff(np.append(first, starts.shape[0]))
    return _Tokens(arr, starts, ends, first, count, line_start)


def _gather(t: _Tokens, index: np.ndarray) -> np.ndarray:
    """Tokens ``index`` as a numpy ``S`` array."""
    starts, lengths = t.starts[index], t.ends[index] - t.starts[index]
    n = starts.shape[0]
    w = max(int(lengths.max()) if n else 1, 1)
    padded = np.concatenate([t.arr, np.zeros(w, dtype=np.uint8)])
    cells = padded[starts[:, None] + np.arange(w)[None, :]]
    cells[np.arange(w)[None, :] >= lengths[:, None]] = 0
    return cells.view(f"S{w}").ravel()


def _line_text(t: _Tokens, line: int) -> str:
    start = int(t.line_start[line])
    end = t.arr[start:start + MAX_LINE].tobytes().find(b"\n")
    text = t.arr[start:start + (end if end >= 0 else MAX_LINE)].tobytes()
    return text.decode("utf-8", "replace").rstrip("\r")


# ---------------------------------------------------------------------------------------------------------------------
# Numbers as the C library reads them

_ATOF = re.compile(rb"[+-]?(?:0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?"
                   rb"|(?:[iI][nN][fF](?:[iI][nN][iI][tT][yY])?)|[nN][aA][nN](?:\([0-9A-Za-z_]*\))?"
                   rb"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")
_ATOL = re.compile(rb"[+-]?[0-9]+")


def atof(token: bytes) -> float:
    """C's ``atof`` (``strtod``) of one field: the longest number at its start, 0.0 when there is none."""
    m = _ATOF.match(token)
    if not m:
        return 0.0
    text = m.group(0)
    body = text.lstrip(b"+-")
    if body[:2] in (b"0x", b"0X"):
        value = float.fromhex(body.decode())
        return -value if text.startswith(b"-") else value
    if body[:1] in (b"n", b"N"):
        return float("nan")
    return float(text)


def atol(token: bytes) -> int:
    """C's ``atol`` (``strtol``, base 10) of one field: the integer at its start (0 when none), saturated to long."""
    m = _ATOL.match(token)
    if not m:
        return 0
    return min(max(int(m.group(0)), _LONG_MIN), _LONG_MAX)


def _simple(tokens: np.ndarray, allowed: bytes) -> bool:
    """True when every token is made only of ``allowed`` bytes (a fast path's precondition)."""
    if tokens.shape[0] == 0:
        return True
    table = np.zeros(256, dtype=bool)
    table[list(allowed) + [0]] = True
    return bool(table[tokens.view(np.uint8)].all())


def atof_array(tokens: np.ndarray) -> np.ndarray:
    """:func:`atof` of every token (numpy ``S``)."""
    if _simple(tokens, b"0123456789.eE+-") and tokens.dtype.itemsize <= 300:
        try:  # decimal characters only: what numpy reads whole, strtod reads alike; a prefix case (1e, 1-2) raises
            return tokens.astype(np.float64)
        except ValueError:
            pass
    return np.fromiter((atof(t) for t in tokens.tolist()), dtype=np.float64, count=tokens.shape[0])


def atol_array(tokens: np.ndarray) -> np.ndarray:
    """:func:`atol` of every token (numpy ``S``)."""
    if _simple(tokens, b"0123456789") and tokens.dtype.itemsize <= 18:
        return tokens.astype(np.int64)
    return np.fromiter((atol(t) for t in tokens.tolist()), dtype=np.int64, count=tokens.shape[0])


# ---------------------------------------------------------------------------------------------------------------------
# The two files


def _malformed(t: _Tokens, line: int, path: str, what: str) -> InputFormatError:
    return InputFormatError(what, path, line + 1, _line_text(t, line))


def read_results(path: str, data: bytes | None = None) -> Results:
    """A run as ``get_trec_results.c`` reads it (see the module docstring); ``data``: its bytes, already read."""
    name = "<stdin>" if path == "-" else path
    t = _tokens(read_input(path) if data is None else data)
    data = np.flatnonzero(t.count > 0)
    data = data[t.arr[t.starts[t.first[data]]] != ord("#")]
    if data.shape[0] == 0:
        raise InputError(f"{name}: no run lines (expected 'qid iter docno rank sim run_id')")
    short = t.count[data] < 6
    if short.any():
        raise _malformed(t, int(data[int(np.argmax(short))]), name,
                         "expected at least 6 fields 'qid iter docno rank sim run_id'")
    head = t.first[data]
    last = head[-1] + 5
    run_id = t.arr[t.starts[last]:t.ends[last]].tobytes()
    sims = atof_array(_gather(t, head + 4))
    return Results(_gather(t, head), _gather(t, head + 2), sims, data + 1, run_id)


def _qrels_data_lines(t: _Tokens) -> np.ndarray:
    """The qrels lines that are data: not blank, and not a comment (``#`` in the first column, unless the line
    before was a comment: trec_eval skips one comment line at a time)."""
    n = t.line_start.shape[0]
    hash_first = t.arr[t.line_start] == ord("#") if n else np.zeros(0, dtype=bool)
    comment = hash_first.copy()
    if hash_first.any():
        # in a run of k '#' lines, lines 1, 3, 5, ... of the run are comments and 2, 4, ... data
        idx = np.arange(n)
        run_start = np.maximum.accumulate(np.where(hash_first & ~np.r_[False, hash_first[:-1]], idx, 0))
        comment = hash_first & ((idx - run_start) % 2 == 0)
    return np.flatnonzero((t.count > 0) & ~comment)


def get_qrels(path: str, groups: bool = False, data: bytes | None = None) -> QrelsLines:
    """Qrels as ``get_qrels.c`` reads them (see the module docstring); ``data``: their bytes, already read."""
    name = "<stdin>" if path == "-" else path
    t = _tokens(read_input(path) if data is None else data)
    data = _qrels_data_lines(t)
    if data.shape[0] == 0:
        raise InputError(f"{name}: no qrels lines (expected 'qid iter docno rel')")
    bad = t.count[data] != 4
    if bad.any():
        raise _malformed(t, int(data[int(np.argmax(bad))]), name, "expected 4 fields 'qid iter docno rel'")
    head = t.first[data]
    labels = atol_array(_gather(t, head + 3))
    group = _gather(t, head + 1) if groups else None
    return QrelsLines(_gather(t, head), _gather(t, head + 2), labels, data + 1, group)


@dataclass
class Prefs:
    """Preference lines in file order: query, judgment group, sub-group and document ids (numpy ``S``), the level
    (``atof``'s) and the line number."""

    qids: np.ndarray
    groups: np.ndarray
    subgroups: np.ndarray
    docnos: np.ndarray
    levels: np.ndarray
    lines: np.ndarray


def read_prefs(path: str, qrels_style: bool = False, data: bytes | None = None) -> Prefs:
    """``-R prefs`` (``get_prefs.c``: ``qid jg jsg docno rel_level``) or, ``qrels_style``, ``-R qrels_prefs``
    (``get_qrels_prefs.c``: ``qid jg docno rel_level``, every line in sub-group ``0``); ``data``: the bytes, already
    read. A NaN level is refused: trec_eval sorts it with a comparison that is not an order, so that its result is
    the C library's."""
    name = "<stdin>" if path == "-" else path
    t = _tokens(read_input(path) if data is None else data)
    data = _qrels_data_lines(t)
    fields = 4 if qrels_style else 5
    form = "'qid jg docno rel_level'" if qrels_style else "'qid jg jsg docno rel_level'"
    if data.shape[0] == 0:
        raise InputError(f"{name}: no preference lines (expected {form})")
    bad = t.count[data] != fields
    if bad.any():
        raise _malformed(t, int(data[int(np.argmax(bad))]), name, f"expected {fields} fields {form}")
    head = t.first[data]
    levels = atof_array(_gather(t, head + fields - 1))
    nan = np.isnan(levels)
    if nan.any():
        raise _malformed(t, int(data[int(np.argmax(nan))]), name, "a NaN preference level (trec_eval's order of it "
                         "is the C library's)")
    groups = _gather(t, head + 1)
    subgroups = np.full(head.shape[0], b"0") if qrels_style else _gather(t, head + 2)
    return Prefs(_gather(t, head), groups, subgroups, _gather(t, head + fields - 2), levels, data + 1)


def read_zscores(path: str) -> dict:
    """A ``-Z`` file as ``get_zscores.c`` reads it: lines ``qid measure mean stddev`` (``atof`` numbers); returns
    ``{(qid, measure): (mean, stddev)}`` (bytes keys).

    A pair given twice with other numbers is refused, naming the second line: trec_eval sorts the lines and takes
    whichever of them its binary search meets first (the middle one of three, the second of two), an order its C
    library's sort decides; a pair repeated with the same numbers means one thing and is read once."""
    name = "<stdin>" if path == "-" else path
    t = _tokens(read_input(path))
    data = np.flatnonzero(t.count > 0)
    if data.shape[0] == 0:
        raise InputError(f"{name}: no z-score lines (expected 'qid measure mean stddev')")
    bad = t.count[data] != 4
    if bad.any():
        raise _malformed(t, int(data[int(np.argmax(bad))]), name, "expected 4 fields 'qid measure mean stddev'")
    head = t.first[data]
    qids, measures = _gather(t, head).tolist(), _gather(t, head + 1).tolist()
    means, stddevs = atof_array(_gather(t, head + 2)), atof_array(_gather(t, head + 3))
    out: dict = {}
    first: dict = {}
    for i, key in enumerate(zip(qids, measures, means.tolist(), stddevs.tolist())):
        seen = out.setdefault(key[:2], key[2:])
        first.setdefault(key[:2], i)
        if seen != key[2:]:
            at = int(data[first[key[:2]]]) + 1
            raise _malformed(t, int(data[i]), name, f"a second z-score of query {key[0].decode(errors='replace')} "
                             f"measure {key[1].decode(errors='replace')} (the first at line {at}, other numbers): "
                             "trec_eval would take one of them by the path of its binary search; keep one")
    return out
