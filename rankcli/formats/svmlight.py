"""SVMlight / LETOR text: a streaming, block-vectorised reader and a vectorised writer.

Reading never loops over tokens in Python. The input is read in large byte blocks cut at a newline; each block is
tokenised with numpy on the whole block (separator positions, token boundaries from their gaps, colons per token),
the number substrings are compacted into one Arrow string buffer and parsed in C by ``pyarrow.compute.cast``, and the
features are scattered into a dense float32 block matrix. Only when a cast fails does a cheap fallback (a bisection
with the same cast) find the first offending token, for a ``path:line: what, got 'token'`` message.

Syntax accepted per line: ``<label> [qid:<int>] <index>:<value> ... [# comment]``, separated by spaces or tabs, LF
or CRLF line ends; blank lines and comment-only lines are skipped. Labels and values take any float syntax arrow
accepts (``1e-3``, ``.25``, ``+1.5``, ``-7``, ``nan``, ``inf``); indices and qids are plain integers.
"""

from __future__ import annotations

import bz2
import gzip
import itertools
import lzma
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rankcli.errors import InputError, InputFormatError
from rankcli.formats.inputs import unreadable_input

#: Bytes read per block (a block is cut at its last newline; a query that does not fit is carried over).
BLOCK_BYTES = 2 * 1024 * 1024
#: The 64-bit signed range of the data model's qid column.
INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1
#: A dense float32 column per feature: refuse absurd widths (a sparse text-classification file, a typo) early.
MAX_FEATURES = 20_000
#: The longest line read, in bytes, newline excluded. A LETOR line with MAX_FEATURES features of 25-byte values
#: takes 0.5 MB; a longer "line" is a file without line ends (binary data, /dev/zero): refused before it fills memory.
MAX_LINE_BYTES = 4 * 1024 * 1024
CR_ONLY_MESSAGE = ("CR-only line ends (classic Mac OS; a carriage return not followed by a newline): save the file "
                   "with LF or CRLF line ends, e.g. tr '\\r' '\\n' < in.txt > out.txt")
STDIN = "-"
#: Skipped at the start of a file (Windows editors save UTF-8 text with it).
UTF8_BOM = b"\xef\xbb\xbf"

_COMPRESSED = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}


# ----------------------------------------------------------------------------------------------------------------------
# Opening inputs


def long_line_message() -> str:
    return (f"line longer than {MAX_LINE_BYTES} bytes, the limit (no SVMlight line is this long: is this text with "
            "line ends?)")


def display_name(path: str | Path) -> str:
    return "<stdin>" if str(path) == STDIN else str(path)


def open_binary(path: str | Path) -> BinaryIO:
    """Open a text input as bytes: ``-`` is standard input, ``.gz``/``.bz2``/``.xz`` are decompressed by extension."""
    if str(path) == STDIN:
        return sys.stdin.buffer
    path = Path(path)
    if not path.exists():
        raise unreadable_input(path)
    if path.is_dir():
        raise InputError(f"{path}: is a directory")
    opener = _COMPRESSED.get(path.suffix.lower())
    try:
        return opener(path, "rb") if opener else open(path, "rb")
    except OSError as exc:
        raise InputError(f"{path}: cannot open ({exc.strerror or exc})") from None


def read_chunk(stream: BinaryIO, size: int, name: str) -> bytes:
    """``stream.read(size)``, turning a truncated or corrupt compressed stream into an :class:`InputError`."""
    try:
        return stream.read(size)
    except EOFError:
        raise InputError(f"{name}: truncated compressed file (it ends before the end-of-stream marker)") from None
    except (OSError, lzma.LZMAError, ValueError) as exc:
        raise InputError(f"{name}: corrupt compressed file ({exc})") from None


def strip_compression(name: str) -> str:
    for suffix in _COMPRESSED:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def sidecar_for(path: str | Path) -> Path | None:
    """The LightGBM-style ``<input>.query`` file next to ``path`` (also tried without a compression suffix)."""
    if str(path) == STDIN:
        return None
    path = Path(path)
    for candidate in (Path(f"{path}.query"), Path(f"{strip_compression(str(path))}.query")):
        if candidate.is_file():
            return candidate
    return None


def read_query_file(path: str | Path) -> np.ndarray:
    """Group sizes, one positive integer per line (LightGBM's ``.query`` layout); blank lines are skipped.

    Their sum is a number of rows, so it must fit int64; a line is at most :data:`MAX_LINE_BYTES` long."""
    path = Path(path)
    if not path.exists():
        raise unreadable_input(path)
    if not path.is_file():
        raise InputError(f"{path}: not a file")
    sizes = []
    total = 0
    with open(path, "rb") as fh:
        for number in itertools.count(1):
            raw = fh.readline(MAX_LINE_BYTES + 1)
            if not raw:
                break
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                raise InputFormatError(long_line_message(), str(path), number, raw[:24].decode("latin-1") + "...")
            text = raw.strip()
            if number == 1 and text.startswith(UTF8_BOM):
                text = text[len(UTF8_BOM):].strip()
            if not text:
                continue
            token = text.decode("utf-8", "replace")
            if not text.isdigit() and not (text[:1] in b"+-" and text[1:].isdigit()):
                raise InputFormatError("expected a group size (a positive integer)", str(path), number, token)
            digits = text.lstrip(b"+-").lstrip(b"0")
            value = int(digits or b"0") if len(digits) <= 19 else INT64_MAX + 1  # int() refuses 4301+ digits
            if text.startswith(b"-") or value == 0:
                raise InputFormatError("group sizes must be positive", str(path), number, token)
            total += value
            if total > INT64_MAX:
                raise InputFormatError(f"group sizes add up to more rows than a file can hold ({INT64_MAX})",
                                       str(path), number, token)
            sizes.append(value)
    return np.asarray(sizes, dtype=np.int64)


# ----------------------------------------------------------------------------------------------------------------------
# Parsing one block


@dataclass
class Block:
    """The rows parsed from one block of whole lines.

    ``features`` is a dense ``(n_rows, width)`` float32 matrix in Fortran order (each column contiguous), where
    ``width`` is the largest column seen in this block; ``lines`` are 1-based line numbers; ``starts`` the byte offset
    of each row's line in the block; ``comments`` the comment text after ``#`` (``None`` for rows without one).
    """

    labels: np.ndarray
    qids: np.ndarray | None
    features: np.ndarray
    lines: np.ndarray
    starts: np.ndarray
    comments: list | None
    has_qid: bool

    @property
    def n_rows(self) -> int:
        return int(self.labels.shape[0])

    @property
    def width(self) -> int:
        return int(self.features.shape[1])


def _cast(strings: pa.Array, to: pa.DataType) -> tuple[np.ndarray | None, int]:
    """Cast to ``to``; on failure return ``(None, index of the first string that does not parse)``."""
    try:
        return to_numpy(pc.cast(strings, to)), -1
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    lo, hi = 0, len(strings)  # invariant: strings[:lo] parse, strings[:hi] does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            pc.cast(strings.slice(lo, mid - lo), to)
            lo = mid
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            hi = mid
    return None, lo


def _parse_int(data: bytes, b: np.ndarray, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, int, int]:
    """Parse the integers ``b[s:e]`` (optional sign, then digits; leading zeros allowed) into int64.

    Returns ``(values, first_bad, first_out_of_range)`` (``-1`` when there is none): a bad token is not an integer,
    an out-of-range one is an integer beyond int64 (its value is then clipped to the int64 bound of its sign).
    Up to 19 digits are read digit by digit into uint64 (10**19 - 1 < 2**64, so no wrap); a longer token (leading
    zeros, or out of range) is rare and read in Python.
    """
    n = s.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64), -1, -1
    first = b[s]
    neg = first == 45
    s = s + (neg | (first == 43))
    length = e - s
    bad = length <= 0
    out = np.zeros(n, dtype=np.uint64)
    last = np.maximum(e - 1, 0)
    for j in range(min(int(length.max()), 19)):
        valid = length > j
        digit = b[np.minimum(s + j, last)] - np.uint8(48)  # uint8: a byte below '0' wraps above 9
        bad |= valid & (digit > 9)
        out = np.where(valid, out * np.uint64(10) + digit, out)
    big = np.uint64(INT64_MAX)
    over = np.where(neg, out > big + np.uint64(1), out > big)
    for i in np.flatnonzero((length > 19) & ~bad).tolist():
        digits = data[int(s[i]):int(e[i])]
        if not digits.isdigit():
            bad[i] = True
            continue
        digits = digits.lstrip(b"0")
        if len(digits) > 19:
            over[i] = True
        else:
            out[i] = int(digits or b"0")
            over[i] = out[i] > big + np.uint64(neg[i])
    first_bad = np.flatnonzero(bad)
    first_over = np.flatnonzero(over & ~bad)
    out = np.where(over, big + neg.astype(np.uint64), out)
    signed = out.view(np.int64)
    # -(2**63) is its own negation in int64: the wrap gives the right value there.
    values = np.where(neg, -signed, signed)
    return (values, int(first_bad[0]) if first_bad.size else -1, int(first_over[0]) if first_over.size else -1)


def _parse_index(b: np.ndarray, data: bytes, s: np.ndarray, e: np.ndarray, length: np.ndarray
                 ) -> tuple[np.ndarray, int]:
    """Feature indices ``b[s:e]`` (``length = e - s``); the common 1..4-digit case reads 4 bytes at once.

    Returns ``(indices, first_bad)``; an index beyond int64 comes back as int64's maximum (too large for any table).
    """
    n = s.shape[0]
    if n == 0 or int(length.max()) > 4 or int(e.min()) < 4:
        values, bad, _ = _parse_int(data, b, s, e)
        return values, bad
    # An unaligned uint32 view with a 1-byte stride: words[p] holds bytes p..p+3, so words[e - 4] ends at the colon.
    words = np.ndarray((b.shape[0] - 3,), dtype="<u4", buffer=b, offset=0, strides=(1,))
    w = words[e - 4]
    # SWAR on four bytes: clear the bytes before the index, fill them with '0', check every byte is a digit.
    shift = ((4 - length) * 8).astype(np.uint32)
    low = (np.uint32(1) << shift) - np.uint32(1)
    w = (w & ~low) | (np.uint32(0x30303030) & low)
    bad = ((w & np.uint32(0xF0F0F0F0)) != np.uint32(0x30303030)) | (
        ((w + np.uint32(0x06060606)) & np.uint32(0xF0F0F0F0)) != np.uint32(0x30303030))
    if bad.any():
        values, first_bad, _ = _parse_int(data, b, s, e)  # a sign, a letter: the general parser decides
        return values, first_bad
    d = w - np.uint32(0x30303030)
    value = ((d & np.uint32(0xFF)) * np.uint32(1000) + ((d >> np.uint32(8)) & np.uint32(0xFF)) * np.uint32(100)
             + ((d >> np.uint32(16)) & np.uint32(0xFF)) * np.uint32(10) + (d >> np.uint32(24)))
    return value.astype(np.int64), -1


def _dense(rows: np.ndarray, cols: np.ndarray, values: np.ndarray, n_rows: int, width: int) -> np.ndarray:
    """The ``(n_rows, width)`` float32 matrix, Fortran order (contiguous columns), of the sparse triples
    (``values`` float32)."""
    if width == 0:
        return np.zeros((n_rows, 0), dtype=np.float32, order="F")
    if (values.shape[0] == n_rows * width and (np.bincount(rows, minlength=n_rows) == width).all()
            and (cols.reshape(n_rows, width) == np.arange(width)).all()):
        # Dense rows with every index in order (WEB30K, Yahoo): no scatter needed.
        dense = values.reshape(n_rows, width)
    else:
        dense = np.zeros((n_rows, width), dtype=np.float32)
        dense.reshape(-1)[rows * width + cols] = values
    return np.asfortranarray(dense)


# pyarrow imports pandas (about a second) on pa.array() and Array.to_numpy(); the reader avoids both.


def to_numpy(arr: pa.Array) -> np.ndarray:
    """A numpy view of a primitive Arrow array without nulls (no pandas import, unlike ``Array.to_numpy``)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    dtype = np.dtype(arr.type.to_pandas_dtype())
    return np.frombuffer(arr.buffers()[1], dtype=dtype)[arr.offset:arr.offset + len(arr)]


def from_numpy(values: np.ndarray, type: pa.DataType) -> pa.Array:
    """A primitive Arrow array over ``values`` (zero-copy when contiguous; no pandas import, unlike ``pa.array``)."""
    values = np.ascontiguousarray(values, dtype=type.to_pandas_dtype())
    return pa.Array.from_buffers(type, values.shape[0], [None, pa.py_buffer(values)])


def strings_array(items: list) -> pa.Array:
    """An Arrow string array from a list of ``bytes`` (UTF-8) or ``None``."""
    n = len(items)
    valid = np.fromiter((x is not None for x in items), dtype=bool, count=n)
    lengths = np.fromiter((len(x) if x is not None else 0 for x in items), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    data = b"".join(x for x in items if x is not None)
    bitmap = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    arr = pa.Array.from_buffers(pa.binary(), n, [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)])
    try:
        return arr.cast(pa.string())
    except pa.ArrowInvalid:
        fixed = [None if x is None else x.decode("utf-8", "replace").encode() for x in items]
        return strings_array(fixed)


class _Errors:
    """Collects candidate errors (each at a line) and raises the earliest one, so messages follow file order."""

    def __init__(self) -> None:
        self.best: tuple[int, InputFormatError] | None = None

    def add(self, line: int, error: InputFormatError) -> None:
        if self.best is None or line < self.best[0]:
            self.best = (line, error)

    def raise_first(self) -> None:
        if self.best is not None:
            raise self.best[1]


class _Source:
    """The bytes of one block, where they sit in the input, and the errors found so far (for messages)."""

    def __init__(self, data: bytes, first_line: int, name: str) -> None:
        self.data = data
        self.first_line = first_line
        self.name = name
        self.errors = _Errors()

    def line_at(self, pos: int) -> int:
        return self.first_line + self.data.count(b"\n", 0, pos)

    def text(self, s: int, e: int) -> str:
        return self.data[int(s):int(e)].decode("utf-8", "replace")

    def add(self, what: str, line: int, token: str | None) -> None:
        self.errors.add(line, InputFormatError(what, self.name, line, token))

    def fail(self, what: str, line: int, token: str | None) -> None:
        """An error after which the parse cannot go on (the caller then checks the lines before it)."""
        self.add(what, line, token)
        self.errors.raise_first()


@dataclass
class _Tokens:
    """The tokens of a block: byte ``starts``/``ends``, 0-based ``line`` within the block, ``first`` (the token starts
    its line: a label), ``row`` (row number of each token), and per row its 0-based line and byte offset."""

    starts: np.ndarray
    ends: np.ndarray
    line: np.ndarray
    first: np.ndarray
    row: np.ndarray
    row_line: np.ndarray
    row_start: np.ndarray

    def error(self, src: _Source, what: str, k: int) -> None:
        line = int(self.line[k]) + src.first_line
        src.add(what, line, src.text(self.starts[k], self.ends[k]))


def parse_block(data: bytes, first_line: int = 1, *, name: str = "<input>", zero_based: bool = False,
                num_features: int | None = None, keep_comments: bool = True) -> Block:
    """Parse ``data``, whole lines ending with a newline, whose first line is line ``first_line`` of ``name``.

    A UTF-8 byte-order mark at the very start of the input (``first_line == 1``; editors on Windows write one) is
    skipped. The error raised is the one on the earliest line (file order), whichever check finds it."""
    if first_line == 1 and data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM):]
    return _parse_earliest(data, first_line, name, (zero_based, num_features, keep_comments))


def _parse_earliest(data: bytes, first_line: int, name: str, options: tuple) -> Block:
    """:func:`_parse`, reporting an error only once the lines before it are known to be clean.

    Some checks stop the parse (the steps after them need what they check: one colon per pair, one qid mode, text
    bytes); an error of another kind may sit on an earlier line. The lines before the error are parsed again (on the
    error path only), which raises that earlier error if there is one. Each round stops at an earlier line, with
    one stopping check fewer, so there are a few rounds at most."""
    try:
        return _parse(_Source(data, first_line, name), *options)
    except InputFormatError as exc:
        if exc.path == name and exc.line is not None and exc.line > first_line:
            _parse_earliest(data[:line_offset(data, exc.line - first_line)], first_line, name, options)
        raise


def line_offset(data: bytes, k: int) -> int:
    """The byte offset of the start of the ``k``-th line (0-based) of ``data`` (``len(data)`` past the end)."""
    if k <= 0:
        return 0
    newlines = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    return int(newlines[k - 1]) + 1 if k <= newlines.shape[0] else len(data)


def _parse(src: _Source, zero_based: bool, num_features: int | None, keep_comments: bool) -> Block:
    _check_line_ends(src)
    b, comment_lines, comment_texts = _blank_comments(src, keep_comments)
    small, sep_pos, sep_bytes = _check_text_bytes(src, b)
    tok = _tokenize(b, sep_pos, sep_bytes)
    if tok is None:
        empty = np.zeros(0, dtype=np.int64)
        return Block(np.zeros(0), None, np.zeros((0, 0), np.float32, order="F"), empty, empty, None, False)
    del sep_pos, sep_bytes
    colon_pos = _check_colons(src, b, tok)
    qid_tok, has_qid = _find_qids(src, b, tok)
    pair = np.flatnonzero(~tok.first)
    if qid_tok.size:
        is_feat = ~tok.first
        is_feat[qid_tok] = False
        feat_tok = np.flatnonzero(is_feat)
        fcp = colon_pos[is_feat[pair]]
    else:
        feat_tok, fcp = pair, colon_pos
    del pair, colon_pos
    fs = tok.starts[feat_tok]
    flen = fcp - fs

    # Integers (indices, qids) are parsed in numpy: they are short, and a strict syntax is wanted.
    index, bad_i = _parse_index(b, src.data, fs, fcp, flen)
    if bad_i >= 0:
        k = int(feat_tok[bad_i])
        qid_late = src.data[int(tok.starts[k]):int(tok.starts[k]) + 4] == b"qid:"
        tok.error(src, "qid: must come right after the label" if qid_late else "non-integer feature index", k)
    qids = _qids(src, b, tok, qid_tok) if has_qid else None
    labels = _labels(src, b, tok)
    values = _feature_values(src, b, small, tok, qid_tok, feat_tok, fcp, flen)
    del small, fs
    src.errors.raise_first()  # the earliest of the index, qid, label, value (and comment) errors

    cols = index if zero_based else index - 1
    rows = tok.row[feat_tok]
    width = _check_columns(src, tok, feat_tok, rows, cols, zero_based, num_features)
    if num_features is not None:
        width = num_features
    n_rows = int(tok.row_line.shape[0])
    features = _dense(rows, cols, values, n_rows, width)
    del rows, cols, values, index
    comments = _row_comments(comment_lines, comment_texts, tok.row_line)
    return Block(labels, qids, features, tok.row_line + src.first_line, tok.row_start, comments, has_qid)


def _check_line_ends(src: _Source) -> None:
    """CR-only line ends (classic Mac OS) and lines longer than :data:`MAX_LINE_BYTES` are refused."""
    data = src.data
    if data.find(b"\r") >= 0:  # memchr: free for LF files; CRLF files pay one pass
        b = np.frombuffer(data, dtype=np.uint8)
        cr = np.flatnonzero(b[:-1] == 13)
        lone = cr[b[cr + 1] != 10]
        if lone.size:
            pos = int(lone[0])
            start = data.rfind(b"\n", 0, pos) + 1
            src.fail(CR_ONLY_MESSAGE, src.line_at(pos), data[start:min(pos + 1, start + 40)].decode("latin-1"))
    if len(data) > MAX_LINE_BYTES:
        newlines = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
        lengths = np.diff(newlines, prepend=-1)
        long = np.flatnonzero(lengths > MAX_LINE_BYTES + 1)  # the newline itself is not counted
        if long.size:
            i = int(long[0])
            start = int(newlines[i - 1]) + 1 if i else 0
            src.fail(long_line_message(), src.first_line + i, data[start:start + 24].decode("latin-1") + "...")


def _blank_comments(src: _Source, keep_comments: bool) -> tuple[np.ndarray, np.ndarray | None, list | None]:
    """The block's bytes with every comment (``#`` to the end of its line) blanked out with spaces, the 0-based line
    of each comment and (with ``keep_comments``) its text; a comment text must be UTF-8."""
    data = src.data
    b = np.frombuffer(data, dtype=np.uint8)
    if data.find(b"#") < 0:
        return b, None, None
    hashes = np.flatnonzero(b == 35)
    newlines = np.flatnonzero(b == 10)
    hash_line = np.searchsorted(newlines, hashes)
    first = np.ones(hashes.shape[0], dtype=bool)
    first[1:] = hash_line[1:] != hash_line[:-1]
    hs, comment_lines = hashes[first], hash_line[first]
    he = newlines[comment_lines]
    texts = None
    if keep_comments:
        texts = [data[s + 1:e].strip() for s, e in zip(hs.tolist(), he.tolist())]
        _check_utf8(src, texts, comment_lines)
    delta = np.zeros(b.shape[0] + 1, dtype=np.int8)
    delta[hs] = 1
    delta[he] = -1
    b = b.copy()
    b[np.cumsum(delta[:-1], dtype=np.int8).view(bool)] = 32
    return b, comment_lines, texts


def _check_utf8(src: _Source, texts: list, comment_lines: np.ndarray) -> None:
    """Comments are kept as text: bytes that are not UTF-8 (Latin-1, cp1252) are named, not replaced."""
    joined = b"\n".join(texts)  # an ASCII separator: no multi-byte sequence spans two comments
    if joined.isascii():
        return
    try:
        joined.decode("utf-8")
    except UnicodeDecodeError as exc:
        i = joined.count(b"\n", 0, exc.start)
        line = int(comment_lines[i]) + src.first_line
        src.add(f"comment is not UTF-8 text (byte 0x{joined[exc.start]:02x}; Latin-1 or another 8-bit encoding?): "
                "save the file as UTF-8", line, texts[i].decode("latin-1"))


def _check_text_bytes(src: _Source, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Anything outside printable ASCII, tab, CR and LF (comments excepted) is not SVMlight text.

    Returns the separator mask (bytes <= 32), the separators' positions and their bytes."""
    small = b <= 32
    sep_pos = np.flatnonzero(small)
    sep_bytes = b[sep_pos]
    control = (sep_bytes != 32) & (sep_bytes != 10) & (sep_bytes != 9) & (sep_bytes != 13)
    bad_pos = sep_pos[control][:1].tolist()
    if b.shape[0] and int(b.max()) >= 127:
        bad_pos.append(int(np.argmax(b >= 127)))
    if bad_pos:
        raise not_text_error(src.data, min(bad_pos), src.name, src.first_line)
    return small, sep_pos, sep_bytes


def not_text_error(data: bytes, pos: int, name: str, first_line: int) -> InputFormatError:
    """The error for a byte at ``pos`` that SVMlight text does not have (UTF-16 text is named as such)."""
    if first_line == 1 and data[:2] in (b"\xff\xfe", b"\xfe\xff") and pos <= 1:
        return InputFormatError("not SVMlight text (UTF-16 text: save it as UTF-8 or ASCII)", name, 1,
                                data[:8].decode("latin-1"))
    return InputFormatError("not SVMlight text (binary data)", name, first_line + data.count(b"\n", 0, pos),
                            data[pos:pos + 8].decode("latin-1"))


def check_partial_line(data: bytes, name: str, line: int) -> None:
    """Checks on the start of line ``line`` whose newline has not been read yet, so that a reader holding it stays
    bounded: binary data and CR-only line ends are refused as soon as they are seen (the first block of
    ``/dev/zero``), and a line past :data:`MAX_LINE_BYTES` is refused before more of it is read."""
    if line == 1 and (data.startswith(UTF8_BOM) or UTF8_BOM.startswith(data)):  # the mark, or its start so far
        data = data[len(UTF8_BOM):]
    cut = data.find(b"#")
    b = np.frombuffer(data if cut < 0 else data[:cut], dtype=np.uint8)  # a comment may hold any UTF-8
    bad = np.flatnonzero(((b < 32) & (b != 9) & (b != 13)) | (b >= 127))
    if bad.size:
        raise not_text_error(data, int(bad[0]), name, line)
    cr = data.find(b"\r")
    if 0 <= cr < len(data) - 1:  # no newline in data: a carriage return before its end is a line end of its own
        raise InputFormatError(CR_ONLY_MESSAGE, name, line, data[:min(cr + 1, 40)].decode("latin-1"))
    if len(data) > MAX_LINE_BYTES:
        raise InputFormatError(long_line_message(), name, line, data[:24].decode("latin-1") + "...")


def _tokenize(b: np.ndarray, sep_pos: np.ndarray, sep_bytes: np.ndarray) -> _Tokens | None:
    """Tokens are the runs between separators; a token's line is the number of newlines before it."""
    sp = np.empty(sep_pos.shape[0] + 1, dtype=np.int64)
    sp[0] = -1
    sp[1:] = sep_pos
    gaps = np.flatnonzero(np.diff(sp) > 1)
    if gaps.shape[0] == 0:
        return None
    starts = sp[gaps] + 1
    ends = sp[gaps + 1]
    is_nl = sep_bytes == 10
    cum_nl = np.empty(sp.shape[0], dtype=np.int64)
    cum_nl[0] = 0
    np.cumsum(is_nl, out=cum_nl[1:])
    tok_line = cum_nl[gaps]
    newline_pos = sep_pos[is_nl]
    del sp, cum_nl, gaps
    first = np.empty(starts.shape[0], dtype=bool)
    first[0] = True
    first[1:] = tok_line[1:] != tok_line[:-1]
    row_line = tok_line[first]
    row_start = np.zeros(row_line.shape[0], dtype=np.int64)
    nz = row_line > 0
    row_start[nz] = newline_pos[row_line[nz] - 1] + 1
    return _Tokens(starts, ends, tok_line, first, np.cumsum(first) - 1, row_line, row_start)


def _check_colons(src: _Source, b: np.ndarray, tok: _Tokens) -> np.ndarray:
    """The colon of each non-first token; stops unless every such token has exactly one, inside it, and labels none.

    Fast check: the i-th colon lies strictly inside the i-th non-first token, and there are as many colons as such
    tokens."""
    colon_pos = np.flatnonzero(b == 58)
    pair = np.flatnonzero(~tok.first)
    ok = colon_pos.shape[0] == pair.shape[0]
    if ok and pair.size:
        ok = bool(((colon_pos > tok.starts[pair]) & (colon_pos < tok.ends[pair] - 1)).all())
    if ok:
        return colon_pos
    starts, ends = tok.starts, tok.ends
    tok_of_colon = np.searchsorted(starts, colon_pos, side="right") - 1
    n_colons = np.bincount(tok_of_colon, minlength=starts.shape[0])
    bad = np.flatnonzero(tok.first & (n_colons != 0))
    if bad.size:
        tok.error(src, "expected a label at the start of the line", int(bad[0]))
    bad = np.flatnonzero(~tok.first & (n_colons != 1))
    if bad.size:
        tok.error(src, "expected <index>:<value>", int(bad[0]))
    edge = np.flatnonzero((colon_pos == starts[tok_of_colon]) | (colon_pos == ends[tok_of_colon] - 1))
    if edge.size:
        tok.error(src, "expected <index>:<value>", int(tok_of_colon[edge[0]]))
    src.errors.raise_first()
    raise InputFormatError("malformed line", src.name, src.first_line)  # not reached: one of the checks above fired


def _find_qids(src: _Source, b: np.ndarray, tok: _Tokens) -> tuple[np.ndarray, bool]:
    """The ``qid:`` tokens (the second token of a line, named ``qid``) and whether the block's lines have them;
    stops at the first line whose mode differs from the block's first line."""
    label_tok = np.flatnonzero(tok.first)
    second = label_tok + 1
    second = second[second < tok.first.shape[0]]
    second = second[~tok.first[second]]
    cand = second[(tok.ends[second] - tok.starts[second] > 4)]
    s = tok.starts[cand]
    qid_tok = cand[(b[s] == 113) & (b[s + 1] == 105) & (b[s + 2] == 100) & (b[s + 3] == 58)]
    row_has_qid = np.zeros(tok.row_line.shape[0], dtype=bool)
    row_has_qid[tok.row[qid_tok]] = True
    has_qid = bool(row_has_qid[0])
    mixed = np.flatnonzero(row_has_qid != has_qid)
    if mixed.size:
        r = int(mixed[0])
        what = "line has qid: but earlier lines do not" if not has_qid else "line has no qid: but earlier lines do"
        start = int(tok.row_start[r])
        src.fail(what, int(tok.row_line[r]) + src.first_line, src.text(start, src.data.find(b"\n", start)).strip())
    return qid_tok, has_qid


def _qids(src: _Source, b: np.ndarray, tok: _Tokens, qid_tok: np.ndarray) -> np.ndarray:
    """The integer after ``qid:`` of every row; any 64-bit signed integer (leading zeros allowed)."""
    qids, bad, over = _parse_int(src.data, b, tok.starts[qid_tok] + 4, tok.ends[qid_tok])
    if bad >= 0:
        tok.error(src, "non-integer qid", int(qid_tok[bad]))
    if over >= 0:
        tok.error(src, f"qid out of range (a 64-bit integer, {INT64_MIN} to {INT64_MAX})", int(qid_tok[over]))
    return qids


def _labels(src: _Source, b: np.ndarray, tok: _Tokens) -> np.ndarray:
    """The first token of every row as float64; a finite number too large for float64 (``1e400``) is an error, a
    literal ``inf`` is not."""
    label_tok = np.flatnonzero(tok.first)
    ls, le = tok.starts[label_tok], tok.ends[label_tok]
    llen = le - ls
    loff = np.zeros(llen.shape[0] + 1, dtype=np.int32)
    np.cumsum(llen, out=loff[1:])
    label_bytes = b[np.repeat(ls - loff[:-1], llen) + np.arange(int(loff[-1]))]  # ASCII: checked above
    label_strings = pa.Array.from_buffers(pa.string(), llen.shape[0], [None, pa.py_buffer(loff),
                                                                       pa.py_buffer(label_bytes)])
    labels, bad = _cast(label_strings, pa.float64())
    if labels is None:
        tok.error(src, "non-numeric label", int(label_tok[bad]))
        return np.zeros(label_tok.shape[0])
    for i in np.flatnonzero(np.isinf(labels)).tolist():
        if not _is_inf_literal(src.data[int(ls[i]):int(le[i])]):
            tok.error(src, "label overflows float64 (largest finite 1.7976931348623157e+308)", int(label_tok[i]))
            break
    return labels


def _is_inf_literal(token: bytes) -> bool:
    return token.lstrip(b"+-").lower() in (b"inf", b"infinity")


def _feature_values(src: _Source, b: np.ndarray, small: np.ndarray, tok: _Tokens, qid_tok: np.ndarray,
                    feat_tok: np.ndarray, fcp: np.ndarray, flen: np.ndarray) -> np.ndarray:
    """The value after the colon of every feature token, as float32; a finite number beyond float32's range
    (``1e39``) is an error, a literal ``inf`` is not.

    The value substrings are compacted into one buffer (separators, labels, qid tokens, indices and colons removed),
    so that value i is ``compact[off[i]:off[i+1]]``, and arrow parses them all in one cast."""
    n = b.shape[0]
    keep = np.logical_not(small, out=small)  # reuse the buffer
    keep[fcp] = False
    for j in range(1, int(flen.max()) + 1 if flen.size else 1):
        keep[(fcp if j == 1 else fcp[flen >= j]) - j] = False
    for which in (np.flatnonzero(tok.first), qid_tok):  # labels, then qid tokens
        if which.size:
            s = tok.starts[which]
            length = tok.ends[which] - s
            for j in range(int(length.max())):
                keep[(s if j == 0 else s[length > j]) + j] = False
    # Arrow's filter compacts faster than numpy's boolean indexing.
    mask = pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(np.packbits(keep, bitorder="little"))])
    del keep
    compact = pc.filter(pa.Array.from_buffers(pa.uint8(), n, [None, pa.py_buffer(b)]), mask).buffers()[1]
    del mask
    fe = tok.ends[feat_tok]
    offsets = np.zeros(feat_tok.shape[0] + 1, dtype=np.int32)
    np.cumsum(fe - fcp - 1, out=offsets[1:])
    values, bad = _cast(pa.StringArray.from_buffers(feat_tok.shape[0], pa.py_buffer(offsets), compact), pa.float64())
    if values is None:
        tok.error(src, "non-numeric feature value", int(feat_tok[bad]))
        return np.zeros(feat_tok.shape[0], dtype=np.float32)
    with np.errstate(over="ignore"):  # an overflow is found below and reported as the input's error
        values32 = values.astype(np.float32)
    inf32 = np.isinf(values32)
    if inf32.any():
        inf64 = np.isinf(values)
        over = np.flatnonzero(inf32 & ~inf64)  # finite in the text, beyond float32
        first = int(over[0]) if over.size else len(values)
        for i in np.flatnonzero(inf64[:first]).tolist():  # 1e400 parses as inf: only a literal inf is one
            if not _is_inf_literal(src.data[int(fcp[i]) + 1:int(fe[i])]):
                first = i
                break
        if first < len(values):
            tok.error(src, "feature value overflows float32 (largest finite 3.4028235e+38)", int(feat_tok[first]))
    return values32


def _check_columns(src: _Source, tok: _Tokens, feat_tok: np.ndarray, rows: np.ndarray, cols: np.ndarray,
                   zero_based: bool, num_features: int | None) -> int:
    """Column numbers in range and not repeated on a line; returns the block's width (largest column + 1)."""
    if not cols.size:
        return 0
    low = np.flatnonzero(cols < 0)
    if low.size:
        tok.error(src, "feature index must be >= 0" if zero_based else
                  "feature index must be >= 1 (pass --zero-based for 0-based files)", int(feat_tok[low[0]]))
    limit = num_features if num_features is not None else MAX_FEATURES
    high = np.flatnonzero(cols >= limit)
    if high.size:
        what = (f"feature index beyond --num-features {num_features}" if num_features is not None else
                f"feature index too large for a dense table (at most {MAX_FEATURES} features)")
        tok.error(src, what, int(feat_tok[high[0]]))
    # Duplicate index on one line: indices almost always increase along a line; check exactly only if not.
    increasing = bool(((rows[1:] != rows[:-1]) | (cols[1:] > cols[:-1])).all())
    if not increasing:
        order = np.lexsort((cols, rows))
        dup = np.flatnonzero((rows[order][1:] == rows[order][:-1]) & (cols[order][1:] == cols[order][:-1]))
        if dup.size:
            tok.error(src, "duplicate feature index on one line", int(feat_tok[order[dup + 1].min()]))
    src.errors.raise_first()
    return int(cols.max()) + 1


def _row_comments(comment_lines: np.ndarray | None, comment_texts: list | None, row_line: np.ndarray) -> list | None:
    """Each row's comment text (``None`` for a row without one); comment-only lines have no row and are dropped."""
    if comment_texts is None:
        return None
    where = np.searchsorted(comment_lines, row_line)
    where_c = np.minimum(where, comment_lines.shape[0] - 1)
    hit = comment_lines[where_c] == row_line
    if not hit.any():
        return None
    return [comment_texts[w] if h else None for w, h in zip(where_c.tolist(), hit.tolist())]


def comment_columns(comments: list, docid: bool, keep: bool) -> tuple[pa.Array | None, pa.Array | None]:
    """Arrow ``docid`` (from ``docid = X``) and ``comment`` columns from per-row comment bytes (or ``None``)."""
    text = strings_array(comments)
    docids = None
    if docid:
        docids = pc.struct_field(pc.extract_regex(text, r"docid\s*=\s*(?P<d>\S+)"), [0])
    return docids, (text if keep else None)


# ----------------------------------------------------------------------------------------------------------------------
# Writing


def scalar(value: str | float | int | None, type: pa.DataType | None = None) -> pa.Scalar:
    """``pa.scalar(value, type)`` without importing pandas (``pa.scalar``, and so a Python literal passed to a
    ``pyarrow.compute`` function, imports it: about a second). Strings give a string scalar; ``None`` a null of
    ``type`` (default string); numbers a scalar of ``type`` (default float64)."""
    if value is None:
        return pa.nulls(1, type if type is not None else pa.string())[0]
    if isinstance(value, str):
        return strings_array([value.encode()])[0]
    type = type if type is not None else pa.float64()
    return from_numpy(np.array([value]), type)[0]


def _feature_tokens(column: pa.Array, number: int) -> pa.Array:
    """``"<number>:<value>"`` where the value is non-zero, null where it is zero (SVMlight omits zeros)."""
    values = column.cast(pa.float32()) if column.type != pa.float32() else column
    text = pc.binary_join_element_wise(scalar(f"{number}:"), values.cast(pa.string()), scalar(""))
    return pc.if_else(pc.not_equal(values, scalar(0, pa.float32())), text, scalar(None))


def svmlight_lines(table: pa.Table, feature_cols: list[str], *, width: int | None = None,
                   force_width: bool = False) -> pa.Array:
    """The SVMlight lines (with a trailing newline each) of a dataset table, built in C column by column.

    Zero features are omitted. With ``force_width`` the last feature is written on the first line even when it is zero,
    so that reading the file back gives the same number of columns.
    """
    from rankcli.formats.parquet import FEATURE_COLUMN

    n = table.num_rows
    parts = [table.column("label").combine_chunks().cast(pa.float64()).cast(pa.string())]
    if "qid" in table.column_names:
        parts.append(pc.binary_join_element_wise(scalar("qid:"), table.column("qid").combine_chunks().cast(pa.string()),
                                                  scalar("")))
    numbers = [int(FEATURE_COLUMN.match(c).group(1)) for c in feature_cols]
    for name, number in zip(feature_cols, numbers):
        parts.append(_feature_tokens(table.column(name).combine_chunks(), number))
    if force_width and n and numbers:
        last = numbers[-1]
        forced = strings_array([f"{last}:0".encode()] + [None] * (n - 1))
        parts[-1] = pc.coalesce(parts[-1], forced)
    if "comment" in table.column_names:
        comment = table.column("comment").combine_chunks()
        parts.append(pc.binary_join_element_wise(scalar("# "), comment, scalar("")))
    elif "docid" in table.column_names:
        parts.append(pc.binary_join_element_wise(scalar("# docid = "), table.column("docid").combine_chunks(),
                                                  scalar("")))
    joined = pc.binary_join_element_wise(*parts, scalar(" "), null_handling="skip")
    return pc.binary_join_element_wise(joined, scalar("\n"), scalar(""))


def write_lines(stream: BinaryIO, lines: pa.Array) -> None:
    """Write a string array's characters as they are (each element already ends with a newline)."""
    lines = lines.combine_chunks() if isinstance(lines, pa.ChunkedArray) else lines
    if len(lines) == 0:
        return
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32)[lines.offset:lines.offset + len(lines) + 1]
    data = lines.buffers()[2]
    stream.write(memoryview(data)[int(offsets[0]):int(offsets[-1])])


def iter_row_groups(path: str | Path, columns: list[str] | None = None) -> Iterator[pa.Table]:
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(str(path))
    for i in range(pf.num_row_groups):
        yield pf.read_row_group(i, columns=columns)


def write_svmlight(path: str | Path, dataset_path: str | Path, *, overwrite: bool = False) -> int:
    """Export a Parquet dataset (data model) to SVMlight text, streaming row group by row group; returns the rows.

    ``qid:`` is written when the dataset has a qid column, ``# <comment>`` (or ``# docid = X``) when it has one.
    """
    from rankcli.formats.atomic import atomic_path
    from rankcli.formats.parquet import column_names, feature_columns, require_columns

    names = column_names(dataset_path)
    require_columns(dataset_path, names, ["label"])
    fcols = feature_columns(names)
    rows = 0
    with atomic_path(path, overwrite) as tmp, open(tmp, "wb") as out:
        for table in iter_row_groups(dataset_path):
            check_comment_text(table, dataset_path, rows)
            write_lines(out, svmlight_lines(table, fcols, force_width=rows == 0))
            rows += table.num_rows
    return rows


#: What a docid written as ``# docid = X`` cannot hold: the reader takes the docid up to the first blank (RE2's
#: ``\S+``, ASCII whitespace), so it would come back cut or empty.
_DOCID_UNWRITABLE = r"^$|[\t\n\x0b\x0c\r ]"


def check_comment_text(table: pa.Table, source: str | Path, first_row: int = 0) -> None:
    """Refuse (exit 3, naming the row) the text an SVMlight line cannot carry back: a comment with a line break (it
    would end the line), or, when the docid is written, a docid that is empty or has whitespace (it would not read
    back the same)."""
    if "comment" in table.column_names:
        column, pattern, why = table.column("comment"), r"[\n\r]", "a line break, which would end the SVMlight line"
        what = "comment"
    elif "docid" in table.column_names:
        column, pattern, what = table.column("docid"), _DOCID_UNWRITABLE, "docid"
        why = "whitespace (or nothing), and `# docid = X` reads X up to the first blank: it would not read back"
    else:
        return
    bad = pc.match_substring_regex(column, pattern)  # null for a null docid: skipped by any()
    if not pc.any(bad).as_py():
        return
    i = int(pc.index(bad.fill_null(False), True).as_py())  # the error path: a Python literal may import pandas
    qid = f" (qid {table.column('qid')[i].as_py()})" if "qid" in table.column_names else ""
    raise InputError(f"{source}: row {first_row + i}{qid}: {what} {column[i].as_py()!r} cannot be written to "
                     f"SVMlight text: it contains {why}")
