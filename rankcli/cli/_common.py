"""Helpers the subcommands share: stderr logging, JSON on stdout, progress bars only on a terminal."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def log(message: str) -> None:
    """A line of progress or information for humans: always stderr, never mixed into results."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


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
    import re

    return {name: "" for name in re.findall(r"task\.fields\[['\"]?(\w+)['\"]?\]", extra)}


def prepare_output(text: str, *, overwrite: bool, kind: str = "file", inputs=(),
                   binary: bool = False, option: str = "--output", final: bool = True, example: str = "output"):
    """Check a command's output option before any work; returns the :class:`~pathlib.Path` to write, or ``"-"``.

    ``kind``: ``"file"`` (one file; ``-`` is standard output, a trailing slash is a usage error saying which file
    name to give) or a directory kind (``model``, ``converted``, ``experiment``). ``inputs``: the command's input
    paths (an output that is or holds one is exit 2; a model directory as :func:`rankcli.formats.atomic.model_files`).
    ``binary``: Parquet, refused on a terminal. ``final``: this output's rename
    completes the command (an interrupt after it is a success). ``example``: a file name the trailing-slash error
    suggests."""
    from rankcli.formats.atomic import (
        STDOUT,
        check_not_input,
        check_stdout,
        check_target,
        expect_final_output,
        output_path,
        resolve_target,
    )

    path = output_path(text, directory=kind != "file", option=option, example=example)
    if path == STDOUT:
        check_stdout(binary)
    else:
        check_not_input(path, inputs)
        if kind == "experiment":  # an experiment directory is reopened (resumed) by its own rules
            resolve_target(path)
        else:
            check_target(path, overwrite, kind=kind)
    if final:
        expect_final_output(path)
    return path


def stdout_taken(output, json_output: bool, what: str = "--json") -> None:
    """``-o -`` and another result on standard output (``--json``) cannot both have it: exit 2."""
    from rankcli.errors import UsageError

    if str(output) == "-" and json_output:
        raise UsageError(f"-o - and {what} both write to standard output; give the output a file name")


def summary_table(summaries: dict, title: str | None = None):
    """A rich table of one or more :class:`~rankcli.summary.DatasetSummary` objects, one column each."""
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
