"""The runs of ``rankcli fuse`` read and put in one query numbering (:class:`RunSet`), ready for
:func:`rankcli.core.fusion.prepare`.

Queries are matched by their ids as text (a Parquet run's integer qid as its decimal digits) and numbered in
ascending order: numerically when every id is an integer, else by bytes. Documents are matched by name within a query
(:mod:`rankcli.formats.run_rows`: a Parquet run's rows as TREC files name them). A run's rows are grouped by query
here when its file does not list each query's lines together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rankcli.core.fusion import RunRows
from rankcli.errors import InputError, UsageError
from rankcli.formats.run_rows import STDIN, RunFile, read_run_file


@dataclass
class RunSet:
    """The runs to fuse: their files, their rows grouped by query in one numbering (``runs``; a Parquet run's labels,
    when it has them, in ``RunRows.labels``) and each query's id (``query_names``, ``str``)."""

    files: list[RunFile]
    runs: list[RunRows]
    query_names: np.ndarray

    @property
    def n_queries(self) -> int:
        """The number of queries, all runs together."""
        return int(self.query_names.shape[0])

    @property
    def paths(self) -> list[str]:
        """The runs' paths, in order."""
        return [f.path for f in self.files]


def _query_numbering(files: Sequence[RunFile]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Every query id of the runs in ascending order (numeric when all are integers), and per run the number of each
    of its ``qnames``."""
    names = sorted({q.decode("utf-8", "surrogateescape") for f in files for q in f.qnames.tolist()})
    if all(n.isascii() and n.lstrip("-").isdigit() and len(n.lstrip("-")) < 19 for n in names):
        names.sort(key=int)
    number = {n: i for i, n in enumerate(names)}
    maps = [np.array([number[q.decode("utf-8", "surrogateescape")] for q in f.qnames.tolist()], dtype=np.int64)
            for f in files]
    return np.array(names, dtype=object), maps


def _grouped(f: RunFile, qmap: np.ndarray, label: str) -> RunRows:
    """One run's rows grouped by query (file order kept within a query)."""
    codes = f.qcodes
    heads = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]]) if codes.shape[0] else np.zeros(0, np.int64)
    order = None
    if heads.shape[0] != f.qnames.shape[0]:  # a query's lines in more than one place
        order = np.argsort(codes, kind="stable")
        codes = codes[order]
        heads = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])

    def take(a):
        return a if order is None or a is None else a[order]
    offsets = np.append(heads, codes.shape[0]).astype(np.int64)
    return RunRows(qmap[codes[heads]], offsets, take(f.keys), take(f.names), take(f.scores), label, take(f.labels))


def _check_row_keys(files: Sequence[RunFile]) -> None:
    """Runs that name their documents by row number (Parquet without a docid column) name the same document alike
    only when they score the same dataset: every run must then be such a run of one dataset (its footer says)."""
    by_row = [f for f in files if f.kind == "parquet" and f.keyed_by != "docid"]
    if not by_row:
        return
    others = [f for f in files if f not in by_row]
    if others:
        raise InputError(f"{by_row[0].path}: has no docid column, so its documents are named by row number, which "
                         f"names the same document in {others[0].path} only by chance; fuse runs with a docid "
                         "column, or runs that all score the same dataset")
    datasets = {f.data for f in by_row}
    if None in datasets or len(datasets) > 1 or len({f.keyed_by for f in by_row}) > 1:
        seen = ", ".join(f"{f.path} scores {f.data or 'an unrecorded dataset'}" for f in by_row)
        raise InputError(f"runs without a docid column name documents by row number, which match only between runs "
                         f"of the same dataset: {seen}")


def read_runs(paths: Sequence[str], names: Sequence[str] | None = None) -> RunSet:
    """Read the runs at ``paths`` (TREC or Parquet, ``-`` once for standard input) into a :class:`RunSet`;
    ``names`` label them in errors (default: their paths)."""
    if len(paths) < 2:
        raise UsageError(f"fuse needs at least two runs, got {len(paths)}")
    if sum(1 for p in paths if p == STDIN) > 1:
        raise UsageError("standard input (-) can be only one of the runs")
    files = [read_run_file(str(p)) for p in paths]
    _check_row_keys(files)
    query_names, maps = _query_numbering(files)
    labels = names or [("<stdin>" if f.path == STDIN else f.path) for f in files]
    return RunSet(files, [_grouped(f, m, lab) for f, m, lab in zip(files, maps, labels)], query_names)
