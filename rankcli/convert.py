"""``rankcli convert``: SVMlight/LETOR text to Parquet datasets, streaming, with a summary of what was converted.

Flow: inputs are read in byte blocks (:func:`rankcli.formats.svmlight.parse_block` does the parsing); the trailing
query of each block is carried over to the next, so that every chunk handed to the writer holds whole queries and row
groups end on query boundaries. Memory is bounded by the block size plus one row group, not by the input.

Width (number of feature columns): ``--num-features N`` fixes it; otherwise it is the largest index seen. A file is
written as it is read, with the width known so far; if a later block has a larger index (or the first docid or comment
appears late), the file continues in a new part with the wider schema, and at the end the parts are streamed into one
file padded to the final width (zeros, null docids). With a directory of inputs every output is padded to the largest
width of all of them the same way. For dense data (WEB30K, Yahoo) the first block fixes the width: no rewrite happens.

This module reads, checks and orchestrates; the Parquet writing is :mod:`rankcli.formats.convert_writer`.
"""

from __future__ import annotations

import os
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from rankcli.dataset import feature_transform as normalization
from rankcli.errors import InputError, InputFormatError, RankcliError, UsageError
from rankcli.formats import svmlight, svmlight_text
from rankcli.formats.atomic import STDOUT, atomic_directory, atomic_path, check_not_input, check_target, kinds
from rankcli.formats.convert_writer import ChunkWriter, ParsedRows, sorted_by_qid
from rankcli.formats.inputs import unreadable_input
from rankcli.formats.parquet import ROW_GROUP_ROWS
from rankcli.info import DatasetSummary, SummaryBuilder
from rankcli.runtime.cpus import available_cpus

#: Rows buffered before a row group is written: half the usual target, so that writing overlaps parsing sooner
#: (a 100k-row file would otherwise be written in one piece after all of it was parsed).
FLUSH_ROWS = ROW_GROUP_ROWS // 2
#: Suffixes (after removing a compression suffix) of the text files a directory input converts.
TEXT_SUFFIXES = svmlight_text.TEXT_SUFFIXES


@dataclass
class ConvertOptions:
    """The options of ``rankcli convert``: ``zero_based`` feature indices (None: 1-based, read for a command that
    has no ``--zero-based``, whose error for a 0 index points to ``rankcli convert --zero-based``), a fixed
    ``num_features``, ``keep_comments`` in a comment column, ``sort_queries`` by qid (in memory) instead of
    requiring contiguous queries, a ``query_file`` of group sizes for one input without ``qid:``, the
    ``block_bytes`` read at a time, and the features' ``normalize`` method ``per`` query or dataset
    (:mod:`rankcli.core.normalize`; None: raw), and ``float64`` storage of the features (LightGBM's parsed
    values; the footer says so) instead of float32."""

    zero_based: bool | None = False
    num_features: int | None = None
    keep_comments: bool = False
    sort_queries: bool = False
    query_file: Path | None = None
    block_bytes: int = svmlight_text.BLOCK_BYTES
    normalize: str | None = None
    per: str = "query"
    float64: bool = False


@dataclass
class FileResult:
    """One output file: the inputs it holds (as named in messages), its path and the summary of its data."""

    inputs: list[str]
    output: str
    summary: DatasetSummary


@dataclass
class ConvertResult:
    """What a conversion wrote: one file, or a ``directory`` of them with the common number of ``features``."""

    output: str
    directory: bool
    files: list[FileResult]
    features: int
    seconds: float
    notes: list[str] = field(default_factory=list)  # for stderr: what was read but not used (an ignored sidecar)

    def as_dict(self) -> dict:
        """The ``--json`` summary: one file's keys, or ``output``, ``features``, ``seconds`` and ``files``."""
        def one(f: FileResult) -> dict:
            return {"input": f.inputs if len(f.inputs) != 1 else f.inputs[0], "output": f.output,
                    **f.summary.as_dict()}

        if not self.directory:
            out = one(self.files[0])
            out["seconds"] = round(self.seconds, 3)
            return out
        return {"output": self.output, "features": self.features, "seconds": round(self.seconds, 3),
                "files": [one(f) for f in self.files]}


# ----------------------------------------------------------------------------------------------------------------------
# Reading one output's inputs


@dataclass
class _FileState:
    """What the reader knows of the input being read: its qid mode (from the first data line) and rows so far."""

    name: str
    sidecar: Path | None
    mode: bool | None = None
    sizes: np.ndarray | None = None  # cumulative group sizes from the sidecar, for a file without qid:
    rows: int = 0


class _Converter:
    """Converts one or more inputs into one output sink, checking query contiguity across all of them.

    Blocks are cut at newlines by the reader and parsed by a small thread pool (numpy and arrow release the GIL), at
    most four blocks ahead; results are consumed in order, so checks and qids from a sidecar stay sequential.
    """

    def __init__(self, sink: ChunkWriter, options: ConvertOptions, threads: int | None = None):
        self.sink = sink
        self.options = options
        self.seen: dict[int, tuple[str, int]] = {}
        self.summary = SummaryBuilder()
        sink.on_rows = self.summary.add
        self.next_group = 0
        self.last_qid: int | None = None
        self.threads = threads if threads is not None else min(2, available_cpus())  # the CPUs we may use
        self._held: list[ParsedRows] = []  # --sort-queries keeps everything
        self._file: _FileState | None = None
        self.notes: list[str] = []  # said on stderr by the CLI (a sidecar ignored)

    def convert(self, source: str, sidecar: Path | None, progress=None) -> int:
        """Read ``source`` (a path or ``-``) into the writer; ``sidecar``: its group sizes when the lines have no
        ``qid:``; ``progress.advance(bytes)`` as blocks are read. Returns the number of rows."""
        name = svmlight_text.display_name(source)
        stream = svmlight_text.open_binary(source)
        self.last_qid = None  # a query does not continue from one file into the next
        # The sidecar is read once the first line says the file has no qid: (a file with qid: ignores it).
        self._file = _FileState(name, sidecar)
        try:
            for block, failure in self._parsed(stream, name, progress):
                if failure is not None:
                    self._fail(*failure)
                self._take(block)
        finally:
            if source != svmlight_text.STDIN:
                stream.close()
        state, self._file = self._file, None
        rows, sizes = state.rows, state.sizes
        if rows == 0:
            raise InputError(f"{name}: no data rows (empty input)")
        if sizes is not None and rows != int(sizes[-1] if sizes.size else 0):
            raise InputError(f"{sidecar}: group sizes add up to {int(sizes[-1]) if sizes.size else 0} rows but "
                             f"{name} has {rows}; the sidecar does not belong to this file")
        if sizes is not None:
            self.next_group += int(sizes.shape[0])
        return rows

    def _blocks(self, stream, name: str, progress):
        """Whole-line blocks of the stream with the number of their first line.

        A line whose end has not been read yet is checked as it grows (binary data, CR-only line ends, longer than
        ``svmlight_text.MAX_LINE_BYTES``), so memory stays bounded for input without newlines."""
        block_bytes = self.options.block_bytes
        pending = b""
        line_no = 1
        while True:
            chunk = svmlight_text.read_chunk(stream, block_bytes, name)
            if progress is not None:
                progress.advance(len(chunk))
            if not chunk:
                if pending:
                    yield (pending if pending.endswith(b"\n") else pending + b"\n"), line_no
                return
            buf = pending + chunk if pending else chunk
            cut = buf.rfind(b"\n") + 1
            if cut == 0:
                svmlight_text.check_partial_line(buf, name, line_no)
                pending = buf
                continue
            data, pending = (buf, b"") if cut == len(buf) else (buf[:cut], buf[cut:])
            yield data, line_no
            line_no += data.count(b"\n")

    def _parsed(self, stream, name: str, progress):
        """``(block, None)`` per block in order, or ``(None, (error, data, first_line))`` for a block that does not
        parse (its lines before the error still go through the checks across blocks, see :meth:`_fail`)."""
        opts = self.options

        def parse(item):
            data, line_no = item
            try:
                return svmlight.parse_block(data, line_no, name=name, zero_based=opts.zero_based,
                                            num_features=opts.num_features, keep_comments=True,
                                            float64=opts.float64), None
            except InputFormatError as exc:
                return None, (exc, data, line_no)

        blocks = self._blocks(stream, name, progress)
        if self.threads <= 1:
            yield from map(parse, blocks)
            return

        pool = ThreadPoolExecutor(self.threads, thread_name_prefix="rankcli-parse")
        inflight: deque = deque()
        try:
            try:
                for item in blocks:
                    inflight.append(pool.submit(parse, item))
                    if len(inflight) >= self.threads + 2:  # keep the workers busy while a row group is written
                        yield inflight.popleft().result()
            except RankcliError:
                # The reader stopped (a line too long, a truncated file): the blocks before come first.
                while inflight:
                    yield inflight.popleft().result()
                raise
            while inflight:
                yield inflight.popleft().result()
        finally:
            for f in inflight:
                f.cancel()
            pool.shutdown(wait=True, cancel_futures=True)

    def _fail(self, error: InputFormatError, data: bytes, first_line: int) -> None:
        """Raise ``error`` of a block, unless its lines before the error fail a check across blocks (qid mode, the
        sidecar's row count, a reappearing qid) first: errors are reported in file order."""
        if error.line is not None and error.line > first_line:
            opts = self.options
            prefix = data[:svmlight_text.line_offset(data, error.line - first_line)]
            self._take(svmlight.parse_block(prefix, first_line, name=self._file.name, zero_based=opts.zero_based,
                                            num_features=opts.num_features, keep_comments=True,
                                            float64=opts.float64))
        raise error

    def _take(self, block: svmlight.Block) -> None:
        """Check one parsed block against the file so far (qid mode, sidecar) and hand its rows on."""
        state = self._file
        name, n = state.name, block.n_rows
        if n == 0:
            return
        if state.mode is None:
            state.mode = block.has_qid
            self._start_mode(state, block)
        elif block.has_qid != state.mode:
            what = "line has qid: but earlier lines do not" if block.has_qid else \
                "line has no qid: but earlier lines do"
            raise InputFormatError(what, name, int(block.lines[0]))
        if state.mode:
            qids = block.qids
        else:
            sizes = state.sizes
            total = int(sizes[-1]) if sizes.size else 0
            global_rows = np.arange(state.rows, state.rows + n, dtype=np.int64)
            over = np.flatnonzero(global_rows >= total)
            if over.size:
                raise InputFormatError(f"more rows than the group sizes in {state.sidecar} add up to ({total})",
                                       name, int(block.lines[over[0]]))
            qids = np.searchsorted(sizes, global_rows, side="right") + self.next_group
        self._emit(block, qids, name)
        state.rows += n

    def _start_mode(self, state: _FileState, block: svmlight.Block) -> None:
        """The first data line decides: qid: on the lines, or queries from the sidecar (read now)."""
        name, sidecar = state.name, state.sidecar
        if not state.mode:
            if sidecar is None:
                raise InputFormatError(
                    f"no qid: on the lines and no {name}.query sidecar; add qid:<id> after each label, put "
                    "the group sizes in a .query file next to the input, or pass --query-file", name,
                    int(block.lines[0]))
            state.sizes = np.cumsum(svmlight_text.read_query_file(sidecar))
        elif sidecar is not None:
            if self.options.query_file is not None:
                raise UsageError(f"{name} has qid: on its lines; --query-file applies only to files without")
            self.notes.append(f"{sidecar} ignored: {name} has qid: on its lines, which give the queries")

    def _emit(self, block: svmlight.Block, qids: np.ndarray, name: str) -> None:
        docids = comments = None
        if block.comments is not None:
            docids, comments = svmlight.comment_columns(block.comments, True, self.options.keep_comments)
            if docids is not None and docids.null_count == len(docids):
                docids = None
        chunk = ParsedRows(block.labels, qids, block.features, docids, comments)
        if self.options.sort_queries:
            self._held.append(chunk)
            return
        self._check_contiguous(qids, block.lines, name)
        self.sink.add(chunk)

    def _check_contiguous(self, qids: np.ndarray, lines: np.ndarray, name: str) -> None:
        starts = np.concatenate(([0], np.flatnonzero(qids[1:] != qids[:-1]) + 1))
        run_qids, run_lines = qids[starts].tolist(), lines[starts].tolist()
        if run_qids and run_qids[0] == self.last_qid:
            run_qids, run_lines = run_qids[1:], run_lines[1:]  # the previous block's last query continues
        seen = self.seen
        for q, line in zip(run_qids, run_lines):
            if q in seen:
                where, first = seen[q]
                at = f"line {first}" if where == name else f"{where}:{first}"
                raise InputFormatError(f"qid {q} reappears (first seen at {at})", name, line)
            seen[q] = (name, line)
        self.last_qid = int(qids[-1])

    def finish(self) -> None:
        """Hand on the rows held back by ``--sort-queries``, sorted by qid."""
        if not self.options.sort_queries or not self._held:
            return
        held, self._held = self._held, []
        for chunk in sorted_by_qid(held, ROW_GROUP_ROWS // 2):
            self.sink.add(chunk)


# ----------------------------------------------------------------------------------------------------------------------
# Inputs and the public entry point


def output_name(path: Path) -> str:
    """The name of ``path``'s output in a directory of outputs (:func:`rankcli.formats.svmlight_text.output_name`)."""
    return svmlight_text.output_name(path)


def output_names(sources: list[str]) -> list[str]:
    """The output name of each source (``stdin`` for ``-``); :class:`UsageError` when two would be the same."""
    names = [(output_name(Path(src)) if src != svmlight_text.STDIN else "stdin") for src in sources]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise UsageError(f"two inputs would both be written to {sorted(dup)[0]}.parquet; convert them separately")
    return names


def directory_inputs(directory: Path) -> list[Path]:
    """The SVMlight text files of a directory: those with a text suffix (``train.txt``, ``vali.txt.gz``, ...) and,
    whatever their name, those with a ``.query`` sidecar (LightGBM's ``rank.train``); sidecars and others skipped."""
    found = []
    for p in sorted(directory.iterdir()):
        if not p.is_file() or p.name.startswith(".") or p.name.endswith(".query"):
            continue
        name = svmlight_text.strip_compression(p.name)
        if os.path.splitext(name)[1].lower() in TEXT_SUFFIXES or svmlight_text.sidecar_for(p) is not None:
            found.append(p)
    if not found:
        raise InputError(f"{directory}: no SVMlight text files (.txt, .svm, .libsvm, .letor, ... optionally "
                         ".gz/.bz2/.xz, or any file with a .query sidecar)")
    return found


def check_options(inputs: list[str], options: ConvertOptions) -> None:
    """The checks of ``inputs`` and ``options`` that need no file: :class:`UsageError` for no input, standard input
    given twice, or a ``--num-features`` out of range."""
    if not inputs:
        raise UsageError("no input given")
    if options.num_features is not None and options.num_features < 1:
        raise UsageError(f"--num-features must be at least 1, got {options.num_features}")
    if options.num_features is not None and options.num_features > svmlight.MAX_FEATURES:
        raise UsageError(f"--num-features {options.num_features}: at most {svmlight.MAX_FEATURES} (each feature is a "
                         "dense float32 column; a sparse file with more features does not fit this data model)")
    if inputs.count(svmlight_text.STDIN) > 1:
        raise UsageError("standard input (-) can be given only once")
    normalization.check_options(options.normalize, options.per)


def expand_inputs(inputs: list[str]) -> tuple[list[str], bool]:
    """The input files (a directory gives its SVMlight files, :func:`directory_inputs`), and whether any input was a
    directory. A path that does not lead to a file is an :class:`InputError` naming why."""
    expanded: list[str] = []
    any_dir = False
    for item in inputs:
        if item != svmlight_text.STDIN and Path(item).is_dir():
            any_dir = True
            expanded.extend(str(p) for p in directory_inputs(Path(item)))
        else:
            if item != svmlight_text.STDIN and not Path(item).exists():
                raise unreadable_input(item)
            expanded.append(item)
    return expanded, any_dir


def _sidecar(source: str, options: ConvertOptions) -> Path | None:
    if options.query_file is not None:
        return Path(options.query_file)
    return svmlight_text.sidecar_for(source)


def _writer(path: Path, options: ConvertOptions, metadata: dict) -> ChunkWriter:
    return ChunkWriter(path, options.keep_comments, options.num_features, metadata, flush_rows=FLUSH_ROWS,
                       dtype=np.float64 if options.float64 else np.float32)


def _read_into(writer: ChunkWriter, sources: list[str], options: ConvertOptions, progress) -> _Converter:
    """Convert ``sources`` into ``writer`` (closed afterwards); the converter holds the summary and the notes."""
    conv = _Converter(writer, options)
    for src in sources:
        conv.convert(src, _sidecar(src, options), progress)
    conv.finish()
    writer.close()
    return conv


def _metadata(options: ConvertOptions, source: str) -> dict:
    return {"kind": "dataset", "zero_based": bool(options.zero_based), "converted_by": "rankcli convert",
            "source": source}


def convert(inputs: list[str], output: Path | str, options: ConvertOptions | None = None, *,
            overwrite: bool = False, progress=None, directory: bool = False) -> ConvertResult:
    """Convert ``inputs`` (files, ``-`` for stdin, directories) to Parquet at ``output``.

    One input file (or several, with an ``output`` ending in ``.parquet``): one Parquet file, the inputs concatenated.
    A directory input, or several files with another ``output``: ``output`` is a directory with one
    ``<name>.parquet`` per input file, all with the same feature columns; ``directory=True`` (an OUTPUT given with a
    trailing slash) asks for that layout for a single input too. ``output`` ``-`` is standard output (one file).
    An output that is or holds an input is refused (exit 2) before anything is read. ``overwrite`` replaces an
    output rankcli wrote; ``progress`` (with ``advance(bytes)``) sees the bytes read.
    """
    options = options or ConvertOptions()
    start = time.perf_counter()
    output = Path(output)
    check_options(inputs, options)
    expanded, any_dir = expand_inputs(inputs)
    to_stdout = str(output) == STDOUT
    directory = directory or any_dir or (len(expanded) > 1 and output.suffix.lower() != ".parquet" and not to_stdout)
    if options.query_file is not None and len(expanded) != 1:
        raise UsageError("--query-file needs exactly one input file; for several, put <input>.query sidecars "
                         "next to them")
    if to_stdout and directory:
        raise UsageError("-o -: standard output takes one Parquet file, but these inputs make a directory of "
                         "them; give a directory as --output")
    if not to_stdout:
        check_not_input(output, list(inputs) + expanded + [options.query_file]
                        + [svmlight_text.sidecar_for(s) for s in expanded])
        check_target(output, overwrite, kind="converted" if directory else "file", file_kind=kinds.DATASET)
    if directory:
        return _convert_to_directory(expanded, output, options, overwrite, progress, start)
    with atomic_path(output, overwrite, file_kind=kinds.DATASET) as tmp:
        writer = _writer(tmp, options, _metadata(options, ",".join(map(svmlight_text.display_name, expanded))))
        try:
            conv = _read_into(writer, expanded, options, progress)
            transform = normalization.fitted(options.normalize, options.per, writer.feature_batches(writer.width),
                                             writer.width)
            writer.join(tmp, writer.width, **normalization.join_arguments(transform))
        finally:
            writer.cleanup()
        summary = conv.summary.build(writer.width, has_docid=writer.docid)
    seconds = time.perf_counter() - start
    summary.seconds = seconds
    return ConvertResult(str(output), False, [FileResult([svmlight_text.display_name(s) for s in expanded],
                                                         str(output), summary)], writer.width, seconds, conv.notes)


class _Converted(NamedTuple):
    """One input of a directory conversion, converted into its part files (joined once the width is known)."""

    source: str
    name: str
    writer: ChunkWriter
    converter: _Converter
    seconds: float


def _convert_to_directory(expanded: list[str], output: Path, options: ConvertOptions, overwrite: bool, progress,
                          start: float) -> ConvertResult:
    """One ``output/<name>.parquet`` per input, all padded to the widest input's feature columns; normalised per
    dataset, all with the statistics of the input named ``train`` (the training data a model will record)."""
    names = output_names(expanded)
    per_dataset = options.normalize is not None and options.per == "dataset"
    if per_dataset and len(names) > 1 and "train" not in names:
        raise UsageError("--per dataset over several outputs normalises every file with the statistics of the "
                         "training file (an input named train, e.g. train.txt), and these inputs have none; convert "
                         "the training file alone, and the others without --normalize (rankcli applies the model's "
                         "transform to raw data)")
    done: list[_Converted] = []
    with atomic_directory(output, overwrite, kind="converted") as tmpdir:
        writers = []
        try:
            for src, name in zip(expanded, names):
                writer = _writer(tmpdir / f".{name}.parquet", options,
                                 _metadata(options, svmlight_text.display_name(src)))
                writers.append(writer)
                file_start = time.perf_counter()
                conv = _read_into(writer, [src], options, progress)
                done.append(_Converted(src, name, writer, conv, time.perf_counter() - file_start))
            width = max(w.width for w in writers)
            fit_on = next((item for item in done if item.name == "train"), done[0]).writer
            transform = normalization.fitted(options.normalize, options.per, fit_on.feature_batches(width), width)
            files = []
            for item in done:
                item.writer.join(tmpdir / f"{item.name}.parquet", width, **normalization.join_arguments(transform))
                summary = item.converter.summary.build(width, has_docid=item.writer.docid, seconds=item.seconds)
                files.append(FileResult([svmlight_text.display_name(item.source)], str(output / f"{item.name}.parquet"),
                                        summary))
        finally:
            for writer in writers:
                writer.cleanup()
    return ConvertResult(str(output), True, files, width, time.perf_counter() - start,
                         [note for item in done for note in item.converter.notes])
