"""Split one dataset into query-level folds or one train/validation/test split (``rankcli split``), seeded.

- ``folds=K``: the queries are dealt into parts S1..SK balanced in queries (sizes differ by at most one query; the
  first ``n mod K`` parts hold one more), and fold ``k`` is written as ``Fold<k>/{train,vali,test}.parquet`` in
  MSLR-WEB's rotation (:func:`rankcli.core.partition.fold_rotation`): it trains on the K-2 parts from S<k> on,
  validates on the next and tests on the one after, so that Fold1 is S1-S3 / S4 / S5 for K = 5 and every query is a
  test query of exactly one fold.
- ``fractions=(train, valid, test)``: one split, ``{train,vali,test}.parquet`` (no ``vali.parquet`` for a validation
  fraction of 0), drawn exactly as ``rankcli experiment --split`` draws trial 0 under the same seed
  (:func:`rankcli.core.perturb.split_queries` with :func:`rankcli.core.seeds.trial_rng`).

``group_by`` keeps the rows that share a value of that column in one part (and so the queries holding them:
connected queries form a group); groups are dealt largest first to the part furthest below its size
(:func:`rankcli.core.partition.assign_groups`). Every file keeps every column of the source, its queries in source
order part after part, and records in its footer the source (path and BLAKE2b digest), the seed, the method and the
parts it holds. The output directory is written atomically and marked as a rankcli ``split`` output.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rankcli.core.partition import fold_rotation
from rankcli.core.seeds import trial_rng
from rankcli.errors import InputError, UsageError
from rankcli.formats.atomic import atomic_directory, check_not_input

#: The smallest number of folds: each fold trains on K-2 parts, validates on one and tests on one.
MIN_FOLDS = 3


@dataclass
class SplitFile:
    """One file written: its path inside the output, fold (None for a split), part, source parts and sizes."""

    path: str
    fold: int | None
    part: str
    parts: list[int]
    queries: int
    rows: int


@dataclass
class SplitResult:
    """What :func:`split_dataset` wrote."""

    input: str
    output: str
    method: str                       # "folds" | "split"
    folds: int | None
    fractions: list[float] | None
    seed: int
    group_by: str | None
    queries: int
    groups: int
    part_queries: list[int]           # queries per part (S1..SK, or train, vali, test)
    files: list[SplitFile] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict:
        """The ``--json`` document."""
        return {"input": self.input, "output": self.output, "method": self.method, "folds": self.folds,
                "fractions": self.fractions, "seed": self.seed, "group_by": self.group_by, "queries": self.queries,
                "groups": self.groups, "part_queries": self.part_queries,
                "files": [vars(f) for f in self.files], "seconds": self.seconds}


def check_method(folds: int | None, fractions) -> None:
    """:class:`UsageError` unless exactly one of ``folds`` (at least :data:`MIN_FOLDS`) and ``fractions`` is given."""
    if (folds is None) == (fractions is None):
        raise UsageError("give --folds K (K folds in MSLR's rotation) or --split TRAIN,VALID,TEST (one split), "
                         + ("not both" if folds is not None else "got neither"))
    if folds is not None and folds < MIN_FOLDS:
        raise UsageError(f"--folds must be >= {MIN_FOLDS} (each fold trains on K-2 parts, validates on one and tests "
                         f"on one), got {folds}")


def _layout(folds: int | None, fractions) -> list[tuple[int | None, str, list[int]]]:
    """``(fold, part name, source parts)`` of every file, parts 0-based."""
    if folds is None:
        return [(None, name, [p]) for p, name in enumerate(("train", "vali", "test")) if fractions[p] > 0]
    return [(k + 1, name, parts) for k, r in enumerate(fold_rotation(folds))
            for name, parts in (("train", r.train), ("vali", [r.valid]), ("test", [r.test]))]


def _draw(source, folds: int | None, fractions, seed: int) -> tuple[list[np.ndarray], int]:
    """The parts (sorted query numbers each) and the number of groups."""
    from rankcli.core.partition import balanced_sizes, partition, query_groups
    from rankcli.core.perturb import split_sizes

    n = source.n_queries
    groups = query_groups(source.offsets, source.group_codes) if source.group_codes is not None else None
    n_groups = int(groups.max()) + 1 if groups is not None else n
    wanted = folds if folds is not None else sum(1 for f in fractions if f > 0)
    if n_groups < wanted:
        unit = "groups of queries" if groups is not None else "queries"
        raise InputError(f"{source.path}: {n_groups} {unit}, too few for {wanted} parts"
                         + (f" ({folds} folds)" if folds is not None else ""))
    targets = balanced_sizes(n, folds) if folds is not None else split_sizes(n, fractions)
    # The generator of the experiment's trial 0: --split draws what `experiment --split --seed S` draws first.
    return partition(n, targets, trial_rng(seed, 0), groups), n_groups


def split_dataset(data: Path | str, output: Path | str, *, folds: int | None = None,
                  fractions: tuple[float, float, float] | None = None, group_by: str | None = None, seed: int = 0,
                  overwrite: bool = False, on_file=None) -> SplitResult:
    """Split the dataset file ``data`` into ``output`` (a directory): ``folds`` folds or one split of ``fractions``.

    Parameters
    ----------
    data : a Parquet dataset (``qid``, ``label``, queries contiguous); every column is kept.
    output : the directory to write (atomically; an existing one only with ``overwrite`` and only when it holds a
        previous ``rankcli split`` output).
    folds : K >= 3: ``Fold1 .. FoldK`` in MSLR's rotation over parts S1..SK.
    fractions : (train, validation, test) query fractions (:func:`rankcli.core.perturb.parse_split`'s rules).
    group_by : a column whose equal values keep their rows (and queries) in one part.
    seed : the seed of the draw.
    overwrite : replace a previous split output.
    on_file : called with each :class:`SplitFile` once written.
    """
    from rankcli.formats.subsets import file_digest, read_source, write_queries

    started = time.perf_counter()
    check_method(folds, fractions)
    if seed < 0:
        raise UsageError(f"--seed must be >= 0, got {seed}")
    check_not_input(output, [data])
    source = read_source(data, group_by)
    parts, n_groups = _draw(source, folds, fractions, seed)
    method = "folds" if folds is not None else "split"
    common = {"split_source": str(data), "split_source_blake2b": file_digest(data), "split_seed": seed,
              "split_method": f"folds={folds}" if folds is not None else ",".join(f"{f:g}" for f in fractions)}
    if group_by is not None:
        common["split_group_by"] = group_by
    result = SplitResult(str(data), str(output), method, folds, list(fractions) if fractions else None, seed,
                         group_by, source.n_queries, n_groups, [int(p.shape[0]) for p in parts])
    with atomic_directory(output, overwrite=overwrite, kind="split") as tmp:
        for fold, name, held in _layout(folds, fractions):
            rel = f"Fold{fold}/{name}.parquet" if fold is not None else f"{name}.parquet"
            (tmp / rel).parent.mkdir(exist_ok=True)
            queries = np.concatenate([parts[p] for p in held])
            meta = {**common, "split_part": name}
            if fold is not None:
                meta.update(split_fold=fold, split_parts=",".join(f"S{p + 1}" for p in held))
            rows = write_queries(source, queries, tmp / rel, meta)
            written = SplitFile(rel, fold, name, [p + 1 for p in held], int(queries.shape[0]), rows)
            result.files.append(written)
            if on_file is not None:
                on_file(written)
    result.seconds = time.perf_counter() - started
    return result
