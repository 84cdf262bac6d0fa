"""SVMlight / LETOR text before parsing: opening an input, the byte rules of a line, and the tokenizer of a block.

Opening: ``-`` is standard input; ``.gz``, ``.bz2`` and ``.xz`` are decompressed by extension; a LightGBM-style
``<input>.query`` file next to an input gives its group sizes. The rules of a line: printable ASCII, tab, CR and LF
outside comments (a comment holds UTF-8 text), LF or CRLF line ends, at most :data:`MAX_LINE_BYTES` bytes. The tokenizer
works on a whole block of lines at once with numpy (separator positions, token boundaries from their gaps); the field
parser (:mod:`rankcli.formats.svmlight`) turns the tokens into rows. Errors are collected per block and the one on the
earliest line is raised, so that messages follow file order.
"""

from __future__ import annotations

import bz2
import gzip
import itertools
import lzma
import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from rankcli.errors import InputError, InputFormatError
from rankcli.formats.inputs import unreadable_input

#: Bytes read per block (a block is cut at its last newline; a query that does not fit is carried over).
BLOCK_BYTES = 2 * 1024 * 1024
#: The 64-bit signed range of the data model's qid column.
INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1
#: The longest line read, in bytes, newline excluded. A LETOR line with 20,000 features of 25-byte values
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
    """What a line longer than :data:`MAX_LINE_BYTES` is told (read when raised, so that the limit can change)."""
    return (f"line longer than {MAX_LINE_BYTES} bytes, the limit (no SVMlight line is this long: is this text with "
            "line ends?)")


def display_name(path: str | Path) -> str:
    """The name of an input in messages: ``<stdin>`` for ``-``."""
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
    """``name`` without a compression suffix (``.gz``, ``.bz2``, ``.xz``)."""
    for suffix in _COMPRESSED:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


#: What a command that reads Parquet tells a user who gave it SVMlight text (:func:`svmlight_hint` adds the command).
SVMLIGHT_HINT = "looks like SVMlight text: run 'rankcli convert' first"
#: Suffixes (after removing a compression suffix) of the text files a directory input converts.
TEXT_SUFFIXES = {".txt", ".svm", ".svmlight", ".libsvm", ".letor", ".dat", ""}


def output_name(path: Path) -> str:
    """The name of ``path``'s output in a directory of outputs (``OUTPUT/<name>.parquet``): the file name without a
    compression suffix and without a text suffix (``train.txt.gz`` -> ``train``, ``rank.train`` -> ``rank.train``)."""
    name = strip_compression(path.name)
    stem, suffix = os.path.splitext(name)
    return stem if suffix.lower() in TEXT_SUFFIXES else name


def parquet_name(path: str | Path) -> str:
    """The Parquet file beside the text file ``path`` that ``rankcli convert`` is told to write for it."""
    path = Path(path)
    return str(path.with_name(f"{output_name(path)}.parquet"))


def svmlight_hint(path: str | Path) -> str:
    """What a command that reads Parquet (and not text) tells a user who gave it the SVMlight text ``path``: the
    ``convert`` command to run."""
    return (f"looks like SVMlight text: run 'rankcli convert {shlex.quote(str(path))} -o "
            f"{shlex.quote(parquet_name(path))}' first")
_SVMLIGHT_LINE = re.compile(rb"^[ \t]*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
                            rb"(?:[ \t]+qid:[-+]?\d+)?(?:[ \t]+\d+:[^ \t#]+)*[ \t]*(?:#.*)?$")


def looks_like_svmlight(path: str | Path, lines: int = 5) -> bool:
    """Whether the first ``lines`` data lines of ``path`` (decompressed by extension) are SVMlight lines, with at least
    one ``qid:`` or ``index:value``: for the hint that a command given text instead of Parquet prints. Never raises."""
    try:
        with open_binary(path) as fh:
            head = fh.read(1 << 16)
    except Exception:  # noqa: BLE001 - a hint only: whatever cannot be read is not said to be SVMlight
        return False
    return svmlight_head(head, lines)


def svmlight_head(head: bytes, lines: int = 5) -> bool:
    """Whether the first ``lines`` data lines of the bytes ``head`` (a file's beginning) are SVMlight lines, with at
    least one ``qid:`` or ``index:value``."""
    data = [line.rstrip(b"\r") for line in head.split(b"\n")[:-1]]
    data = [line for line in data if line.strip() and not line.lstrip().startswith(b"#")][:lines]
    return bool(data) and all(_SVMLIGHT_LINE.match(line) for line in data) and \
        any(b":" in line.split(b"#", 1)[0] for line in data)


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
# Checking and tokenizing a block


class Errors:
    """Collects candidate errors (each at a line) and raises the earliest one, so messages follow file order."""

    def __init__(self) -> None:
        self.line: int | None = None
        self.error: InputFormatError | None = None

    def add(self, line: int, error: InputFormatError) -> None:
        if self.line is None or line < self.line:
            self.line, self.error = line, error

    def raise_first(self) -> None:
        if self.error is not None:
            raise self.error


class Source:
    """The bytes of one block, where they sit in the input, and the errors found so far (for messages)."""

    def __init__(self, data: bytes, first_line: int, name: str) -> None:
        self.data = data
        self.first_line = first_line
        self.name = name
        self.errors = Errors()

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
class Tokens:
    """The tokens of a block: byte ``starts``/``ends``, 0-based ``line`` within the block, ``first`` (the token starts
    its line: a label), ``row`` (row number of each token), and per row its 0-based line and byte offset."""

    starts: np.ndarray
    ends: np.ndarray
    line: np.ndarray
    first: np.ndarray
    row: np.ndarray
    row_line: np.ndarray
    row_start: np.ndarray

    def error(self, src: Source, what: str, k: int) -> None:
        line = int(self.line[k]) + src.first_line
        src.add(what, line, src.text(self.starts[k], self.ends[k]))


def line_offset(data: bytes, k: int) -> int:
    """The byte offset of the start of the ``k``-th line (0-based) of ``data`` (``len(data)`` past the end)."""
    if k <= 0:
        return 0
    newlines = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    return int(newlines[k - 1]) + 1 if k <= newlines.shape[0] else len(data)


def check_line_ends(src: Source) -> None:
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


def blank_comments(src: Source, keep_comments: bool) -> tuple[np.ndarray, np.ndarray | None, list | None]:
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


def _check_utf8(src: Source, texts: list, comment_lines: np.ndarray) -> None:
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


def check_text_bytes(src: Source, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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


def tokenize(b: np.ndarray, sep_pos: np.ndarray, sep_bytes: np.ndarray) -> Tokens | None:
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
    return Tokens(starts, ends, tok_line, first, np.cumsum(first) - 1, row_line, row_start)


def check_colons(src: Source, b: np.ndarray, tok: Tokens) -> np.ndarray:
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
