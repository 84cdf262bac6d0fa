"""``rankcli fuse``: several runs combined into one (RRF, CombSUM, CombMNZ, weighted sums, Condorcet, ProbFuse,
...), with parameters given, learnt from judged training queries, or chosen by an exact grid search.

:func:`fuse_files` is what the command calls: it reads the runs (:mod:`~rankcli.fuse.reading`), aligns and
normalises them (:func:`rankcli.core.fusion.prepare`), trains (a trained method, on ``--train-qrels``) or searches
(``--optimize``, :mod:`~rankcli.fuse.optimize`), fuses, and writes the run (:mod:`~rankcli.fuse.writing`), returning
a :class:`FuseResult`; it never prints (:mod:`~rankcli.fuse.render` does). :func:`fuse_runs` does the same on runs
already in memory and returns the fused scores (``rankcli experiment --fuse`` uses it).

Queries whose judgments chose the fusion (the training queries of a trained method, the optimisation queries of
``--optimize``) are left out of the fused run, so that an evaluation of it is not an evaluation on the data it was
fitted to; ``allow_overlap`` keeps them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from rankcli.core.fusion import Evidence, Method, RunRows, canonical, combine, method, prepare, resolve_params
from rankcli.core.metrics import Convention, parse_metric
from rankcli.errors import UsageError
from rankcli.fuse.judgments import Judgments, read_judgments
from rankcli.fuse.optimize import Optimization, Trainer, optimize
from rankcli.fuse.scoring import Scorer
from rankcli.fuse.writing import write_fused


@dataclass
class FuseOptions:
    """What to fuse with: the method and its ``params`` (``weights``, ``k``, ``phi``, ...), the normalisation, each
    run's ``depth``, the training judgments (``train_qrels``) or the search (``optimize`` judgments, ``metric``,
    ``step``, ``folds``, ``seed``), the convention the search scores with, and ``allow_overlap``."""

    method: str = "rrf"
    normalization: str = "min-max"
    params: dict = field(default_factory=dict)
    depth: int | None = None
    train_qrels: str | None = None
    optimize: str | None = None
    metric: str = "ndcg@10"
    step: float = 0.1
    folds: int | None = None
    seed: int = 0
    convention: str = "trec"
    allow_overlap: bool = False


@dataclass
class Fused:
    """A fusion done in memory: the evidence, the runs as fused, the fused score of every candidate, the queries to
    write (``keep``), and how the parameters were obtained."""

    evidence: Evidence
    runs: list[RunRows]
    scores: np.ndarray
    keep: np.ndarray
    method: Method
    params: dict
    model: dict | None = None
    optimization: Optimization | None = None
    judged_queries: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass
class FuseResult:
    """What ``rankcli fuse`` reports: the output, the method, normalisation and parameters used, what was learnt,
    the search, and the queries written and left out."""

    output: str
    format: str
    runs: list[str]
    method: str
    normalization: str
    params: dict
    queries: int
    written: int
    left_out: int
    rows: int
    model: dict | None = None
    optimization: Optimization | None = None
    training: dict | None = None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        """The result as ``--json`` prints it."""
        return {"output": self.output, "format": self.format, "runs": self.runs, "method": self.method,
                "normalization": self.normalization, "params": {k: list(v) if isinstance(v, tuple) else v
                                                                for k, v in self.params.items()},
                "model": self.model, "training": self.training,
                "optimization": None if self.optimization is None else self.optimization.as_dict(),
                "queries": {"runs": self.queries, "written": self.written, "left_out": self.left_out},
                "rows": self.rows, "notes": list(self.notes)}


def _check_options(m: Method, opts: FuseOptions) -> None:
    if opts.optimize and opts.train_qrels:
        raise UsageError("--optimize QRELS both trains and tunes on QRELS; --train-qrels cannot be given with it")
    if m.trained and not (opts.train_qrels or opts.optimize):
        raise UsageError(f"{m.name} learns from judged queries: give --train-qrels QRELS (or --optimize QRELS)")
    if opts.train_qrels and not m.trained:
        raise UsageError(f"{m.name} learns nothing from judgments; --train-qrels is for the trained methods "
                         "(posfuse, probfuse, segfuse, slidefuse, mapfuse, bayesfuse); use --optimize to tune it")
    if opts.folds is not None and not opts.optimize:
        raise UsageError("--folds cross-validates --optimize: give --optimize QRELS too")
    if opts.depth is not None and opts.depth < 1:
        raise UsageError(f"--depth must be at least 1, got {opts.depth}")


def _model_summary(model: dict | None) -> dict | None:
    if model is None:
        return None
    return {k: [np.asarray(v).tolist() for v in vals] for k, vals in model.items()}


def _judged_queries(ev: Evidence, judg: Judgments | None) -> np.ndarray:
    if judg is None:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(judg.has & (np.diff(ev.aligned.offsets) > 0))


def _parameters(ev: Evidence, m: Method, opts: FuseOptions, judg: Judgments | None, conv: Convention
                ) -> tuple[dict, dict | None, Optimization | None]:
    """The parameters to fuse with (given, or searched), the trained model and the search."""
    trainer = Trainer(m, ev, judg, conv.relevance_threshold) if m.trained else None
    judged = _judged_queries(ev, judg)
    if m.trained and judged.shape[0] == 0:
        raise UsageError(f"{m.name}: the training judgments ({judg.path}) judge no query the runs list")
    resolve_params(m, opts.params, ev.n_runs, partial=True)  # the given ones are checked before any work
    if not opts.optimize:
        params = resolve_params(m, opts.params, ev.n_runs)
        return params, (trainer.model(params, judged) if m.trained else None), None
    scorer = Scorer.build(parse_metric(opts.metric), conv, ev.aligned, judg, judged)
    search = optimize(ev, m, scorer, trainer, step=opts.step, fixed=dict(opts.params), folds=opts.folds,
                      seed=opts.seed)
    params = resolve_params(m, search.params, ev.n_runs)
    return params, (trainer.model(params, scorer.queries) if m.trained else None), search


def fuse_runs(runs: Sequence[RunRows], query_names: np.ndarray, opts: FuseOptions) -> Fused:
    """Fuse runs already in memory (queries numbered by ``query_names``), as :func:`fuse_files` does (the judgments
    are read from ``opts``' qrels files)."""
    m = method(opts.method)
    _check_options(m, opts)
    opts = replace(opts, normalization=canonical(opts.normalization))
    conv = Convention.preset(opts.convention)
    ev, fused_runs = prepare(runs, int(query_names.shape[0]), opts.normalization, depth=opts.depth,
                             query_names=query_names, scores=m.reads != "ranks")
    path = opts.optimize or opts.train_qrels
    judg = read_judgments(path, ev.aligned, query_names) if path else None
    params, model, search = _parameters(ev, m, opts, judg, conv)
    scores = combine(ev, m, params, model)
    keep = np.diff(ev.aligned.offsets) > 0
    notes = []
    judged = _judged_queries(ev, judg)
    if judg is not None and not opts.allow_overlap:
        keep &= ~judg.has
        if not keep.any():
            raise UsageError(f"every query of the runs is judged in {path}, and judged queries are left out of the "
                             "fused run (they chose its parameters); give judgments of other queries, or "
                             "--allow-overlap to keep them")
    elif judg is not None:
        notes.append(f"{judged.shape[0]} queries judged in {path} chose the fusion and are kept (--allow-overlap): an "
                     "evaluation on them is not on held-out queries")
    return Fused(ev, fused_runs, scores, keep, m, params, model, search, int(judged.shape[0]), notes)


def default_format(paths: Sequence[str], output: Path | str | None = None) -> str:
    """``parquet`` when every run is a Parquet file and ``output`` is not standard output (``-``, a TREC run), else
    ``trec``."""
    from rankcli.formats.run_rows import is_parquet_file

    if str(output) == "-":
        return "trec"
    return "parquet" if all(is_parquet_file(str(p)) for p in paths) else "trec"


def fuse_files(paths: Sequence[str], output: Path | str, opts: FuseOptions, *, fmt: str | None = None,
               tag: str | None = None, overwrite: bool = False) -> FuseResult:
    """Read the runs at ``paths``, fuse them under ``opts`` and write the fused run to ``output`` (``fmt``: ``trec``
    or ``parquet``, default :func:`default_format`; ``tag``: a TREC run's tag, default the method's name)."""
    from rankcli.fuse.reading import read_runs

    fmt = fmt or default_format(paths, output)
    rs = read_runs([str(p) for p in paths])
    f = fuse_runs(rs.runs, rs.query_names, opts)
    meta = {"fused": f.method.name, "normalization": canonical(opts.normalization), "runs": rs.paths}
    rows = write_fused(output, fmt, f.evidence, f.runs, rs.query_names, f.scores, f.keep,
                       tag=tag or f.method.name, metadata=meta, overwrite=overwrite)
    n_queries = int((np.diff(f.evidence.aligned.offsets) > 0).sum())
    written = int(f.keep.sum())
    training = None
    if opts.train_qrels:
        training = {"qrels": str(opts.train_qrels), "queries": f.judged_queries}
    return FuseResult(str(output), fmt, rs.paths, f.method.name, canonical(opts.normalization), f.params,
                      n_queries, written, n_queries - written, rows, _model_summary(f.model), f.optimization,
                      training, f.notes)
