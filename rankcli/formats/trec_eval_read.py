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
  bytes) are decompressed as they are read; ``-`` is standard input.

Ids are returned as numpy ``S`` arrays: with no NUL byte in them, numpy's order on them is ``strcmp``'s.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

import numpy as np

from rankcli.errors import InputError, InputFormatError
from rankcli.formats.inputs import unreadable_input

#: The longest line accepted (bytes): a guard against a file that is no text at all (``/dev/zero``, a gzip bomb).
MAX_LINE = 1 << 20
#: Blocks read (and decompressed) at a time.
BLOCK = 1 << 22
#: A gzipped input may expand at most this many times (real TREC files: under 20) before it is refused.
MAX_GZIP_RATIO = 200

#: trec_eval reads fields with C's isspace: space, tab, newline, vertical tab, form feed, carriage return.
_SPACE = np.zeros(256, dtype=bool)
_SPACE[[9, 10, 11, 12, 13, 32]] = True
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


@dataclass
class Qrels:
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


def _check_block(block: bytes, path: str, before: list[bytes], tail: int) -> int:
    """Refuse a NUL byte or an over-long line in ``block`` (``before``: the blocks read before it, counted for the
    line number only when refusing; ``tail``: bytes of the current line before it); returns the bytes of the last,
    unfinished line."""
    nul = block.find(b"\0")
    if nul >= 0:
        line = _lines_in(before) + block.count(b"\n", 0, nul) + 1
        raise InputFormatError("a NUL byte (not a text file; trec_eval refuses it too)", path, line)
    first, last = block.find(b"\n"), block.rfind(b"\n")
    longest = max(tail + (first if first >= 0 else len(block)), _longest_line(block))
    if longest > MAX_LINE:
        raise InputFormatError(f"a line longer than {MAX_LINE} bytes (not a TREC file)", path, _lines_in(before) + 1)
    return len(block) - last - 1 if last >= 0 else tail + len(block)


def _lines_in(blocks: list[bytes]) -> int:
    return sum(b.count(b"\n") for b in blocks)


def _longest_line(block: bytes) -> int:
    """The longest line of ``block`` when it may exceed :data:`MAX_LINE`, else 0: when every aligned half-window has
    a newline, no line spans a whole window (a few ``find`` calls per block, a full scan only otherwise)."""
    half = MAX_LINE // 2
    if len(block) <= MAX_LINE or all(block.find(b"\n", k, k + half) >= 0 for k in range(0, len(block) - half, half)):
        return 0
    ends = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10)
    bounds = np.concatenate(([-1], ends, [len(block)]))
    return int(np.diff(bounds).max()) - 1


def _first_long_line(data: bytes) -> int:
    """The offset of the first line of ``data`` longer than :data:`MAX_LINE` bytes, -1 when none: such a line holds a
    whole aligned half-window without a newline, so only the lines around those windows are measured."""
    half, k = MAX_LINE // 2, 0
    while k + half <= len(data):
        if data.find(b"\n", k, k + half) >= 0:
            k += half
            continue
        start = data.rfind(b"\n", 0, k) + 1
        end = data.find(b"\n", k)
        end = len(data) if end < 0 else end
        if end - start > MAX_LINE:
            return start
        k = end + 1
    return -1


def _open(path: str):
    if path == "-":
        return sys.stdin.buffer
    import os

    if not os.path.exists(path):
        raise unreadable_input(path)
    if os.path.isdir(path):
        raise InputError(f"{path}: is a directory, expected a file")
    try:
        return open(path, "rb")
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None


def check_first_block(path: str) -> None:
    """Refuse a file whose first block has a NUL byte or a line over :data:`MAX_LINE` bytes, before reading it whole."""
    with open(path, "rb") as f:
        _check_block(f.read(min(BLOCK, MAX_LINE + 1)), str(path), [], 0)


def read_input(path: str) -> bytes:
    """The bytes of ``path`` (``-``: standard input), gunzipped when gzipped, each block checked as it is read (see the
    module docstring); a leading UTF-8 byte-order mark is kept, as trec_eval keeps it."""
    name = "<stdin>" if path == "-" else path
    f = _open(path)
    try:
        whole = _read_plain_file(f, name) if f is not sys.stdin.buffer else None
        return whole if whole is not None else _read_blocks(f, name)
    except OSError as exc:
        raise InputError(f"{name}: cannot read ({exc.strerror or exc})") from None
    finally:
        if f is not sys.stdin.buffer:
            f.close()


def _read_plain_file(f, name: str) -> bytes | None:
    """A regular file that is not gzipped, read in one buffer of its size (no copy of blocks into a whole): its first
    block is checked before the rest is read, the rest after. None for any other file (read by blocks)."""
    import os
    import stat

    if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
        return None
    head = f.read(min(BLOCK, MAX_LINE + 1))
    if head[:2] == b"\x1f\x8b":
        f.seek(0)
        return None
    _check_block(head, name, [], 0)
    if len(head) < min(BLOCK, MAX_LINE + 1):
        return head
    f.seek(0)
    data = f.read()
    nul = data.find(b"\0")
    if nul >= 0:
        raise InputFormatError("a NUL byte (not a text file; trec_eval refuses it too)", name,
                               data.count(b"\n", 0, nul) + 1)
    long = _first_long_line(data)
    if long >= 0:
        raise InputFormatError(f"a line longer than {MAX_LINE} bytes (not a TREC file)", name,
                               data.count(b"\n", 0, long) + 1)
    return data


def _read_blocks(f, name: str) -> bytes:
    """Standard input, a pipe or a gzipped file, block by block, each checked as it arrives."""
    parts: list[bytes] = []
    tail = raw = size = 0
    inflate = None
    while True:
        block = f.read(BLOCK)
        if not block:
            break
        raw += len(block)
        if not parts and inflate is None and block[:2] == b"\x1f\x8b":
            inflate = _Gunzip(name)
        pieces = [block]
        if inflate is not None:  # 64 KiB of input at a time: at most ~64 MiB out, however it was packed
            pieces = (inflate(block[i:i + (1 << 16)]) for i in range(0, len(block), 1 << 16))
        for piece in pieces:
            if inflate is not None and size + len(piece) > MAX_GZIP_RATIO * max(raw, 1 << 16):
                raise InputError(f"{name}: decompresses to more than {MAX_GZIP_RATIO} times its size "
                                 "(not a TREC file)")
            tail = _check_block(piece, name, parts, tail)
            size += len(piece)
            parts.append(piece)
    if inflate is not None and not inflate.inflate.eof:
        raise InputError(f"{name}: not a readable gzip file (the compressed stream ends early)")
    return parts[0] if len(parts) == 1 else b"".join(parts)


class _Gunzip:
    """Streaming gunzip of every member of a (possibly multi-member) gzip file, as ``gzip -d`` reads it."""

    def __init__(self, name: str):
        import zlib

        self.name, self.zlib, self.inflate = name, zlib, zlib.decompressobj(wbits=47)

    def __call__(self, block: bytes) -> bytes:
        try:
            out = self.inflate.decompress(block)
            while self.inflate.eof and self.inflate.unused_data:
                rest = self.inflate.unused_data
                self.inflate = self.zlib.decompressobj(wbits=47)
                out += self.inflate.decompress(rest)
            return out
        except self.zlib.error as exc:
            raise InputError(f"{self.name}: not a readable gzip file ({exc})") from None


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


def read_qrels(path: str, groups: bool = False, data: bytes | None = None) -> Qrels:
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
    return Qrels(_gather(t, head), _gather(t, head + 2), labels, data + 1, _gather(t, head + 1) if groups else None)


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
    ``{(qid, measure): (mean, stddev)}`` (bytes keys; of a pair given twice, the first)."""
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
    for key in zip(qids, measures, means.tolist(), stddevs.tolist()):
        out.setdefault(key[:2], key[2:])
    return out
