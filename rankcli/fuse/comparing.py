"""``rankcli fuse --compare``: the fused run tested against each of its inputs with ``rankcli compare``'s paired
tests (its t-test, Holm's correction over every (run, metric) test, alpha 0.01), on the queries they all hold.

The same report as ``rankcli compare RUN... FUSED --qrels QRELS --intersect`` with the pairs (run, fused): each
difference is ``fused - run``, and W/T/L counts the queries where the fusion is higher / equal / lower.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rankcli.compare import Report, compare_inputs, default_names
from rankcli.errors import UsageError
from rankcli.formats.run_rows import STDIN


def _names(inputs: Sequence[str], output: str) -> list[str]:
    """The inputs' names (their file names without the extension, made distinct) and the fused run's."""
    names: list[str] = []
    for n in default_names([Path(p) for p in [*inputs, output]]):
        base, k = n, 2
        while n in names:
            n, k = f"{base}-{k}", k + 1
        names.append(n)
    return names


def compare_fused(inputs: Sequence[str], output: str, *, qrels: str | None, metrics: Sequence[str],
                  convention=None, seed: int = 0) -> Report:
    """The comparison of the fused run at ``output`` with each run of ``inputs`` (TREC runs judged by ``qrels``;
    Parquet runs by their labels)."""
    if STDIN in inputs or output == STDIN:
        raise UsageError("--compare reads the runs again after the fusion: give files, not standard input or output")
    names = _names(inputs, output)
    fused = names[-1]
    return compare_inputs([*inputs, output], names=names, metrics=list(metrics), qrels=qrels, convention=convention,
                          seed=seed, intersect=True, pairs=[(n, fused) for n in names[:-1]])
