"""Helpers the subcommands share: standard output that fails cleanly, stderr logging, JSON on stdout, progress bars
only on a terminal."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rankcli.errors import PipeClosed, StdoutError, UsageError
from rankcli.formats.atomic import (
    STDOUT,
    check_not_input,
    check_stdout,
    check_target,
    expect_final_output,
    output_path,
    resolve_target,
)


class _Closed:
    """A standard stream the process started without (``rankcli ... >&-``): writing fails as on a closed
    descriptor, and nothing is pending to flush."""

    encoding = "utf-8"
    errors = "strict"

    def write(self, data) -> int:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    @property
    def buffer(self) -> _Closed:
        return self


class GuardedStream:
    """``sys.stdout`` or ``sys.stderr`` for the length of a command (:func:`guarded_streams` installs them): every
    write and flush, through the text stream or its binary ``buffer``, by rankcli, typer's help or rich, turns an
    ``OSError`` into :class:`~rankcli.errors.PipeClosed` when the reader went away (exit 141, quietly; typer would
    exit 1, rich too) and, on standard output, into :class:`~rankcli.errors.StdoutError` for any other reason
    (``/dev/full``, ``ulimit -f``: exit 4, where Python shows a traceback). On stderr (``log``) any other failure loses
    the line and the command goes on: progress and logs are not its results."""

    def __init__(self, stream, *, log: bool = False, failed: list | None = None):
        self._stream = _Closed() if stream is None else stream
        self._log = log
        self._failed = [] if failed is None else failed  # shared with the buffer's guard: the failures met

    def _guard(self, method, data=None):
        try:
            return method() if data is None else method(data)
        except OSError as exc:
            self._failed.append(exc)
            if exc.errno == errno.EPIPE:
                raise PipeClosed() from None
            if self._log:
                return None  # a log line lost
            raise StdoutError(exc.strerror or str(exc)) from None

    def write(self, data):
        written = self._guard(self._stream.write, data)
        if isinstance(data, str) or not isinstance(written, int):
            return len(data) if written is None else written
        # A binary write cut short (the reader left mid-write: CPython's BufferedWriter then returns the count
        # instead of raising) is continued, so that the failure is raised, not the rest of the output lost.
        view = memoryview(data).cast("B")
        while 0 <= written < len(view):
            more = self._guard(self._stream.write, view[written:])
            if more is None and self._log:
                break
            if not more:  # a non-blocking descriptor that takes nothing more
                self._failed.append(OSError(errno.EAGAIN, os.strerror(errno.EAGAIN)))
                raise StdoutError(os.strerror(errno.EAGAIN))
            written += more
        return len(view)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._guard(self._stream.flush)

    @property
    def buffer(self) -> GuardedStream:
        # AttributeError (a text-only stream) is passed on
        return GuardedStream(self._stream.buffer, log=self._log, failed=self._failed)

    @property
    def failed(self) -> bool:
        return bool(self._failed)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


@contextmanager
def guarded_streams() -> Iterator[GuardedStream]:
    """``sys.stdout`` and ``sys.stderr`` as :class:`GuardedStream` inside the block (yields standard output's); both
    are flushed at its end, so that output still buffered fails inside the block, not in the interpreter's exit. After
    a failure what is still buffered is dropped: the descriptor is pointed at ``/dev/null``, as Python's documentation
    advises for SIGPIPE, so that the interpreter's own flush at exit neither fails again nor prints "Exception
    ignored"."""
    originals = sys.stdout, sys.stderr
    out, err = GuardedStream(originals[0]), GuardedStream(originals[1], log=True)
    sys.stdout, sys.stderr = out, err
    try:
        yield out
        err.flush()
        out.flush()
    except BaseException:
        for guard in (err, out):
            if not guard.failed:  # the command failed: its partial output still goes out if the reader is there
                try:
                    guard.flush()
                except (PipeClosed, StdoutError):
                    pass
        raise
    finally:
        sys.stdout, sys.stderr = originals
        for guard, stream in zip((out, err), originals):
            if guard.failed:
                _drop_pending(stream)


def _drop_pending(stream) -> None:
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # no descriptor (a test's capture): nothing reaches a real file
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
        stream.flush()
    except (OSError, ValueError):
        pass


def log(message: str) -> None:
    """A line of progress or information for humans: always stderr, never mixed into results."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def log_implied_convention(convention: Any, because: str, instead: str) -> None:
    """Say on stderr that the input or the layout chose the convention, not the user: the same run prints other
    numbers under another convention, and a layout such as trec_eval's has no room to state it.

    ``convention`` is the trec preset with the user's single overrides (None: the preset as it is); ``because``
    completes "because ..."; ``instead`` is the option that would keep the other convention."""
    if convention is None:
        from rankcli.core.metrics import Convention

        convention = Convention.preset("trec")
    log(f"note: scored under the trec convention ({convention.describe()}) because {because}; {instead}")


def print_json(obj: Any) -> None:
    """``obj`` as indented JSON on stdout; NaN and infinities become null, numpy scalars numbers."""
    from rankcli.formats.jsonable import jsonable

    sys.stdout.write(json.dumps(jsonable(obj), indent=2) + "\n")
    sys.stdout.flush()


def stdout_console():
    """A rich console on stdout (results), without syntax highlighting."""
    from rich.console import Console

    return Console(file=sys.stdout, highlight=False, soft_wrap=True)


def stderr_console():
    """A rich console on stderr (progress)."""
    from rich.console import Console

    return Console(file=sys.stderr, highlight=False)


class _NullProgress:
    def advance(self, n: int = 1, **fields: Any) -> None:
        pass

    def update(self, **fields: Any) -> None:
        pass


class _RichProgress:
    def __init__(self, progress, task):
        self._progress = progress
        self._task = task

    def advance(self, n: int = 1, **fields: Any) -> None:
        self._progress.update(self._task, advance=n, **fields)

    def update(self, **fields: Any) -> None:
        self._progress.update(self._task, **fields)


@contextmanager
def progress_bar(total: float | None, description: str, *, extra: str = "") -> Iterator[_NullProgress | _RichProgress]:
    """A rich progress bar on stderr when stderr is a terminal; otherwise nothing at all (batch jobs, pipes).

    ``extra`` is a rich format string over task fields (e.g. ``"{task.fields[metric]}"``) shown after the bar.
    """
    if not sys.stderr.isatty():
        yield _NullProgress()
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TimeRemainingColumn()]
    if extra:
        columns.append(TextColumn(extra))
    with Progress(*columns, console=stderr_console(), transient=False) as progress:
        task = progress.add_task(description, total=total, **_field_defaults(extra))
        yield _RichProgress(progress, task)


def _field_defaults(extra: str) -> dict[str, str]:
    return {name: "" for name in re.findall(r"task\.fields\[['\"]?(\w+)['\"]?\]", extra)}


def prepare_output(text: str, *, overwrite: bool, kind: str = "file", inputs=(), binary: bool = False,
                   option: str = "--output", final: bool = True, example: str = "output", file_kind: str | None = None):
    """Check a command's output option before any work; returns the :class:`~pathlib.Path` to write, or ``"-"``.

    ``kind``: ``"file"`` (one file; ``-`` is standard output, a trailing slash is a usage error saying which file
    name to give) or a directory kind (``model``, ``converted``, ``experiment``). ``inputs``: the command's input
    paths (an output that is or holds one is exit 2; a model directory as :func:`rankcli.formats.atomic.model_files`).
    ``binary``: Parquet, refused on a terminal. ``final``: this output's rename
    completes the command (an interrupt after it is a success). ``example``: a file name the trailing-slash error
    suggests. ``file_kind``: what a one-file output is (:mod:`rankcli.formats.atomic.kinds`); an existing file of
    another kind is refused (exit 4), whatever ``overwrite`` says. Every one-file output names its kind: without one
    ``--overwrite`` would replace any file, so a command that forgets it fails here (a bug, exit 1), before any work
    and in every test of the command."""
    if kind == "file" and file_kind is None:
        raise TypeError(f"{option}: a one-file output must say what it is (file_kind), or --overwrite would replace "
                        "any file")

    path = output_path(text, directory=kind != "file", option=option, example=example)
    if path == STDOUT:
        check_stdout(binary)
    else:
        check_not_input(path, inputs)
        if kind in ("experiment", "tune"):  # reopened (resumed) by their own rules
            resolve_target(path)
        else:
            check_target(path, overwrite, kind=kind, file_kind=file_kind)
    if final:
        expect_final_output(path)
    return path


def stdout_taken(output, json_output: bool, what: str = "--json") -> None:
    """``-o -`` and another result on standard output (``--json``) cannot both have it: exit 2."""
    if str(output) == "-" and json_output:
        raise UsageError(f"-o - and {what} both write to standard output; give the output a file name")


def summary_table(summaries: dict, title: str | None = None):
    """A rich table of one or more :class:`~rankcli.info.DatasetSummary` objects, one column each."""
    from rich.table import Table

    table = Table(title=title, show_header=len(summaries) > 1, header_style="bold")
    table.add_column("", style="bold")
    for name in summaries:
        table.add_column(name, justify="right")
    items = list(summaries.values())

    def row(label: str, fn) -> None:
        table.add_row(label, *[fn(s) for s in items])

    row("rows", lambda s: f"{s.rows:,}")
    row("queries", lambda s: f"{s.queries:,}")
    row("features", lambda s: f"{s.features:,}")
    row("docs/query min/median/max",
        lambda s: f"{s.docs_per_query['min']} / {s.docs_per_query['median']:g} / {s.docs_per_query['max']}")
    row("queries w/o relevant doc", lambda s: f"{s.queries_without_relevant:,}")
    keys: list[str] = []
    for s in items:
        keys += [k for k in s.label_histogram if k not in keys]
    for k in keys:
        row(f"label {k}", lambda s, k=k: f"{s.label_histogram.get(k, 0):,}")
    row("docid column", lambda s: "yes" if s.has_docid else "no")
    if any(s.seconds is not None for s in items):
        row("seconds", lambda s: "" if s.seconds is None else f"{s.seconds:.2f}")
    return table


# ----------------------------------------------------------------------------------- SVMlight text where data is read
#: Temporary directories of the SVMlight inputs this command converted (:func:`parquet_inputs`), removed when the
#: command ends (:func:`remove_converted_inputs`, called by the CLI's one boundary, whatever the ending).
_CONVERTED: list[str] = []


def _is_text(path: Any) -> bool:
    """Whether ``path`` is an SVMlight/LETOR text file (not Parquet: its first bytes are not ``PAR1``)."""
    from rankcli.formats.svmlight_text import looks_like_svmlight

    p = Path(path)
    if not p.is_file():
        return False
    try:
        with open(p, "rb") as fh:
            if fh.read(4) == b"PAR1":
                return False
    except OSError:
        return False
    return looks_like_svmlight(p)


def _permanent_name(path: Any) -> str:
    """The Parquet file ``rankcli convert`` would be told to write for the text file ``path``."""
    from rankcli.formats.svmlight_text import parquet_name

    return parquet_name(path)


def parquet_inputs(paths: list[Any], *, model: Any = None, float64: bool = False) -> list[Any]:
    """``paths`` (data files; ``None`` kept) with every SVMlight/LETOR text file among them converted to a temporary
    Parquet file, as ``rankcli convert`` would (a LightGBM ``.query`` sidecar beside it read too): the commands that
    read data take the files users of LightGBM and RankLib already have. The text files are converted in one run, so
    they get the same feature columns; with ``model`` (a model directory) they get its features ``f1..fN`` and the
    precision it was trained on. One line on stderr says so and gives the ``convert`` command that makes it
    permanent. The temporaries are removed when the command ends."""
    texts = list(dict.fromkeys(str(p) for p in paths if p is not None and _is_text(p)))
    if not texts:
        return list(paths)

    from rankcli.convert import ConvertOptions, convert  # only for text input: the converter costs ~0.1 s to load

    num_features, float64 = _model_features(model, float64)
    options = ConvertOptions(zero_based=None, num_features=num_features, float64=float64)
    tmp = tempfile.mkdtemp(prefix="rankcli-text-")
    _CONVERTED.append(tmp)
    result = convert(texts, Path(tmp) / ("converted" if len(texts) > 1 else "data.parquet"), options,
                     directory=len(texts) > 1)
    outputs = dict(zip(texts, (f.output for f in result.files)))
    if len(texts) > 1:
        target = str(Path(_permanent_name(texts[0])).with_name("parquet")) + "/"
    else:
        target = _permanent_name(texts[0])
    flags = (f" --num-features {num_features}" if num_features else "") + (" --float64" if float64 else "")
    log(f"note: {', '.join(texts)}: SVMlight text, converted to a temporary Parquet file for this run; to convert "
        f"once: rankcli convert {' '.join(map(shlex_quote, texts))} -o {shlex_quote(target)}{flags}")
    return [Path(outputs[str(p)]) if p is not None and str(p) in outputs else p for p in paths]


def _model_features(model: Any, float64: bool) -> tuple[int | None, bool]:
    """The feature count (``f1..fN``) and the precision of the model directory ``model``'s training data, so that
    text converted for it has its columns; ``(None, float64)`` without a model (or one whose features are named
    otherwise)."""
    if model is None:
        return None, float64

    try:
        info = json.loads((Path(model) / "rankcli.json").read_text(encoding="utf-8"))
        names = [str(n) for n in info["features"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None, float64  # the command names what is wrong with the model when it loads it
    standard = names == [f"f{i}" for i in range(1, len(names) + 1)]
    return (len(names) if standard and names else None), float64 or info.get("feature_dtype") == "float64"


def parquet_data(path: Any) -> Any:
    """``DATA`` of ``experiment`` with SVMlight text converted for this run: a text file (as :func:`parquet_inputs`),
    a directory of text files and no Parquet file (RankLib's ``train.txt``, ``vali.txt``, ``test.txt``; LightGBM's
    ``rank.train``, ``rank.test`` and their ``.query`` files), or fold directories ``Fold1/ .. FoldK/`` of them; each
    converted as ``rankcli convert DIR -o OUT/`` would, with one feature count for every file (one stderr line)."""
    from rankcli.convert import ConvertOptions, convert, directory_inputs

    path = Path(path)
    if not path.is_dir():
        return parquet_inputs([path])[0]

    def text_dir(d: Path) -> bool:
        try:
            return not any(d.glob("*.parquet")) and all(_is_text(p) for p in directory_inputs(d))
        except Exception:  # noqa: BLE001 - not a directory of text files: the command names what it lacks
            return False

    folds = sorted((p for p in path.iterdir() if re.match(r"^fold\d+$", p.name, re.IGNORECASE) and p.is_dir()),
                   key=lambda p: int(p.name[4:]))
    dirs = folds if folds and not any(path.glob("*.parquet")) else [path]
    if not all(text_dir(d) for d in dirs):
        return path
    tmp = Path(tempfile.mkdtemp(prefix="rankcli-text-"))
    _CONVERTED.append(str(tmp))
    out = tmp / path.name
    if folds:
        out.mkdir()
    width = None
    for _attempt in range(2):  # again with the largest feature count when the folds' counts differ
        counts = [convert([str(d)], out / d.name if folds else out, ConvertOptions(zero_based=None, num_features=width),
                          directory=True, overwrite=True).features for d in dirs]
        if len(set(counts)) == 1:
            break
        width = max(counts)
    flags = f" --num-features {width}" if width else ""
    target = shlex_quote(f"{path}-parquet")
    if folds:
        names = " ".join(d.name for d in dirs)
        command = (f"for f in {names}; do rankcli convert {shlex_quote(str(path))}/$f -o {target}/$f/{flags}; "
                   "done")
    else:
        command = f"rankcli convert {shlex_quote(str(path))} -o {target}/{flags}"
    log(f"note: {path}: SVMlight text, converted to temporary Parquet files for this run; to convert once: "
        f"{command}")
    return out


def shlex_quote(text: str) -> str:
    """``text`` quoted for a shell command line (as is when it needs no quotes)."""
    import shlex

    return shlex.quote(text)


def remove_converted_inputs() -> None:
    """Remove the temporary Parquet files :func:`parquet_inputs` wrote for this command."""
    while _CONVERTED:
        shutil.rmtree(_CONVERTED.pop(), ignore_errors=True)
