"""A TREC file's bytes, read as ``rankcli trec_eval`` reads them before parsing (:mod:`.trec_eval_parse` parses them;
``rankcli eval``'s read stage, :mod:`.text`, checks its blocks with the same rules): whole, gunzipped when gzipped (by
its magic bytes), ``-`` as standard input, and refused on a line over :data:`MAX_LINE` bytes where it is first met,
before the rest of the file is read.

A NUL byte: ``eval`` refuses it (``at_nul="refuse"``). trec_eval (``at_nul="stop"``) holds the file as one C string,
so that a NUL at the start of a line ends its reading: the text before it is the file. A NUL inside a line, or on
standard input (which trec_eval reads with ``fgets`` and ``strlen``, dropping the rest of the line and joining what
is left to the next one), is refused: trec_eval's line table is counted up to the NUL but filled past it, so that
its reading of the rest is undefined.

No numpy here: ``rankcli trec_eval`` reads its files on a thread while the process imports numpy.
"""

from __future__ import annotations

import os
import stat
import sys
import zlib

from rankcli.errors import InputError, InputFormatError
from rankcli.formats.inputs import unreadable_input
from rankcli.formats.trec.blank import LineMap, blank_heavy, compact_block, compact_buffer

#: The longest line accepted (bytes): a guard against a file that is no text at all (``/dev/zero``, a gzip bomb).
MAX_LINE = 1 << 20
#: Blocks read (and decompressed) at a time.
BLOCK = 1 << 22
#: A gzipped input may expand at most this many times (real TREC files: under 20) before it is refused.
MAX_GZIP_RATIO = 200


def _nul_cut(block: bytes, path: str, before: list[bytes], tail: int, at_nul: str) -> int | None:
    """Where reading ``block`` stops at a NUL byte (see the module docstring), None when it has none; a NUL that is
    refused raises, naming its line."""
    nul = block.find(b"\0")
    if nul < 0:
        return None
    starts_line = block[nul - 1:nul] == b"\n" if nul else tail == 0
    if at_nul == "stop" and path != "<stdin>" and starts_line:
        return nul
    line = _lines_in(before) + block.count(b"\n", 0, nul) + 1
    if at_nul != "stop":
        raise InputFormatError("a NUL byte (not a text file)", path, line)
    where = "on standard input (trec_eval drops the rest of its line and joins it to the next)" if path == "<stdin>" \
        else "inside a line (trec_eval stops counting lines at it but parses on past it: undefined)"
    raise InputFormatError(f"a NUL byte {where}; trec_eval's reading stops only at a NUL that starts a line of a "
                           "file", path, line)


def _check_block(block: bytes, path: str, before: list[bytes], tail: int, at_nul: str = "refuse") -> int:
    """Refuse an over-long line in ``block`` (``before``: the blocks read before it, counted for the line number only
    when refusing; ``tail``: bytes of the current line before it), and a NUL byte unless trec_eval stops there
    (:func:`_nul_cut`: the caller cuts the block at it first); returns the bytes of the last, unfinished line."""
    _nul_cut(block, path, before, tail, at_nul)
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
    return max(map(len, block.split(b"\n")))


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

    if not os.path.exists(path):
        raise unreadable_input(path)
    if os.path.isdir(path):
        raise InputError(f"{path}: is a directory, expected a file")
    try:
        return open(path, "rb")
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None


def check_first_block(path: str) -> bytes:
    """Refuse a file whose first block has a NUL byte or a line over :data:`MAX_LINE` bytes, before reading it whole;
    returns the block."""
    with open(path, "rb") as f:
        head = f.read(min(BLOCK, MAX_LINE + 1))
    _check_block(head, str(path), [], 0)
    return head


def read_input(path: str, at_nul: str = "refuse", lines: LineMap | None = None) -> bytes:
    """The bytes of ``path`` (``-``: standard input), gunzipped when gzipped, each block checked as it is read (see the
    module docstring; ``at_nul``: ``"refuse"`` or trec_eval's ``"stop"``); a leading UTF-8 byte-order mark is kept,
    as trec_eval keeps it. With ``lines``, runs of whitespace-only lines are dropped as the blocks arrive
    (:mod:`.blank`: memory bounded by the other lines) and ``lines`` maps the kept lines to the file's; an error
    of the reading names the file's line."""
    name = "<stdin>" if path == "-" else path
    f = _open(path)
    try:
        whole = _read_plain_file(f, name, at_nul, lines) if f is not sys.stdin.buffer else None
        return whole if whole is not None else _read_blocks(f, name, at_nul, lines)
    except OSError as exc:
        raise InputError(f"{name}: cannot read ({exc.strerror or exc})") from None
    finally:
        if f is not sys.stdin.buffer:
            f.close()


def _read_plain_file(f, name: str, at_nul: str, lines: LineMap | None) -> bytes | None:
    """A regular file that is not gzipped, read in one buffer of its size (no copy of blocks into a whole): its first
    block is checked before the rest is read, the rest after. None for any other file (read by blocks), and, when
    ``lines`` asks for blank lines to be dropped, for a file whose first block has them or too large for one buffer
    (``ulimit -v``)."""
    if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
        return None
    head = f.read(min(BLOCK, MAX_LINE + 1))
    if head[:2] == b"\x1f\x8b":
        f.seek(0)
        return None
    cut = _nul_cut(head, name, [], 0, at_nul)
    head = head if cut is None else head[:cut]
    _check_block(head, name, [], 0)
    if cut is not None or len(head) < min(BLOCK, MAX_LINE + 1):
        return head if lines is None else compact_buffer(head, lines, BLOCK, MAX_LINE)
    f.seek(0)
    if lines is not None and blank_heavy(head, 0, head.rfind(b"\n") + 1):
        return None
    try:
        data = f.read()
    except MemoryError:
        if lines is None:
            raise
        f.seek(0)
        return None
    data = _checked_whole(data, name, at_nul)
    return data if lines is None else compact_buffer(data, lines, BLOCK, MAX_LINE)


def _checked_whole(data: bytes, name: str, at_nul: str) -> bytes:
    """A whole file's bytes up to a NUL where trec_eval's reading stops (one that is refused raises), with no line
    over :data:`MAX_LINE` bytes."""
    cut = _nul_cut(data, name, [], 0, at_nul)
    data = data if cut is None else data[:cut]
    long = _first_long_line(data)
    if long >= 0:
        raise InputFormatError(f"a line longer than {MAX_LINE} bytes (not a TREC file)", name,
                               data.count(b"\n", 0, long) + 1)
    return data


def _read_blocks(f, name: str, at_nul: str, lines: LineMap | None) -> bytes:
    """Standard input, a pipe or a gzipped file, block by block, each checked as it arrives (up to a NUL where
    trec_eval's reading stops) and, with ``lines``, compacted (:func:`.blank.compact_block`)."""
    try:
        data = _blocks(f, name, at_nul, lines)
    except InputFormatError as exc:
        if lines is not None and exc.line is not None:  # every dropped line is before the block being read
            exc.line += lines.total
            exc.args = (exc._format(),)
        raise
    if lines is not None:
        lines.resolve(data)
    return data


def _blocks(f, name: str, at_nul: str, lines: LineMap | None) -> bytes:
    parts: list[bytes] = []
    tail = raw = size = kept = 0
    inflate = None
    cut = None
    while cut is None:
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
            cut = _nul_cut(piece, name, parts, tail, at_nul)
            piece = piece if cut is None else piece[:cut]
            at_line_start = tail == 0
            tail = _check_block(piece, name, parts, tail)
            size += len(piece)
            if lines is not None:
                piece = compact_block(piece, at_line_start, kept, lines)
                kept += len(piece)
            parts.append(piece)
            if cut is not None:
                break  # trec_eval reads nothing after it
    if cut is None and inflate is not None and not inflate.inflate.eof:
        raise InputError(f"{name}: not a readable gzip file (the compressed stream ends early)")
    return parts[0] if len(parts) == 1 else b"".join(parts)


class _Gunzip:
    """Streaming gunzip of every member of a (possibly multi-member) gzip file, as ``gzip -d`` reads it."""

    def __init__(self, name: str):
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
