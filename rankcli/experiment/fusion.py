"""``rankcli experiment --fuse METHOD``: each trial's losses fused into one more run, tested as one more loss.

When every loss of a (setting, trial) is finished, their test scores (stored per unit, ``scores/`` of EXP_DIR) are
fused with ``rankcli fuse``'s method (its default parameters, ``min-max`` normalisation: the fusion of
:func:`rankcli.core.fusion.prepare` and :func:`~rankcli.core.fusion.combine`) over the trial's test queries, every
loss ranking every test document; equal fused scores keep the test file's order, as the paper's convention orders
equal scores. The fused run is evaluated with the experiment's metrics and convention and stored as the unit
``(setting, trial, fused-METHOD)``, so that the summary reports it beside the losses and its paired tests compare it
with each of them. The position-bias sweep, whose variants learn from clicks, is not fused.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from rankcli.errors import InputError
from rankcli.experiment.config import ExperimentConfig
from rankcli.experiment.data import ExperimentData, trial_parts
from rankcli.experiment.settings import Setting, fused_name, trained_losses, trial_ids
from rankcli.experiment.unit import UnitResult
from rankcli.formats.experiment_store import read_scores, scores_path


def fuse_scores(offsets: np.ndarray, scores: dict[str, np.ndarray], method: str) -> np.ndarray:
    """The fused score of every row of a test set (queries ``offsets``), from each loss's scores of every row."""
    from rankcli.core.fusion import RunRows, combine, prepare, resolve_params
    from rankcli.core.fusion import method as lookup
    from rankcli.formats.trec.parse import doc_hash, words_of

    n_rows, n_queries = int(offsets[-1]), int(offsets.shape[0] - 1)
    names = np.arange(n_rows).astype("S24")  # a row's number names it: unique within its query
    keys = doc_hash(words_of(names))
    runs = [RunRows(np.arange(n_queries), offsets, keys, names, np.asarray(s, dtype=np.float64), loss)
            for loss, s in scores.items()]
    m = lookup(method)
    ev, _ = prepare(runs, n_queries, "min-max", scores=m.reads != "ranks")
    fused = combine(ev, m, resolve_params(m, {}, len(runs)))
    out = np.empty(n_rows)
    out[ev.aligned.names.astype(np.int64)] = fused
    return out


def _fused_unit(data: ExperimentData, config: ExperimentConfig, setting: Setting, trial: int,
                scores: dict[str, np.ndarray]) -> UnitResult:
    from rankcli.core.metrics import Convention, evaluate, parse_metrics

    start = time.perf_counter()
    test = trial_parts(data, config, trial).test
    for loss, s in scores.items():
        if s.shape[0] != test.n_rows:
            raise InputError(f"{setting.name}, trial {trial}, {loss}: {s.shape[0]} stored test scores for "
                             f"{test.n_rows} test rows; rerun with --overwrite")
    fused = fuse_scores(test.offsets, scores, config.fuse)
    specs = parse_metrics(config.metrics)
    ev = evaluate(specs, test.labels, fused, test.offsets, Convention.preset(config.train.convention))
    per_query = {str(s): np.asarray(ev.per_query[str(s)], dtype=np.float64) for s in specs} if config.folds else {}
    return UnitResult(setting.name, trial, fused_name(config), {str(s): float(ev.means[str(s)]) for s in specs}, 0,
                      time.perf_counter() - start, [], test.qids[test.offsets[:-1]].copy() if config.folds else None,
                      per_query)


def fuse_trials(exp_dir: Path, data: ExperimentData, config: ExperimentConfig, settings: list[Setting], store,
                done: set[tuple[str, int, str]]) -> int:
    """Fuse every (setting, trial) whose losses are all finished and whose fused run is not (``done``: the finished
    units), storing each fused run in ``store``; returns how many were fused."""
    name, count = fused_name(config), 0
    for trial in trial_ids(config):
        for setting in settings:
            losses = trained_losses(config, setting)
            if setting.kind == "position-bias" or (setting.name, trial, name) in done:
                continue
            if not all((setting.name, trial, loss) in done for loss in losses):
                continue
            paths = {loss: scores_path(exp_dir, setting.name, trial, loss) for loss in losses}
            missing = [str(p) for p in paths.values() if not p.is_file()]
            if missing:
                raise InputError(f"{missing[0]}: the test scores --fuse fuses are missing; rerun with --overwrite")
            store.add(_fused_unit(data, config, setting, trial, {k: read_scores(p) for k, p in paths.items()}))
            count += 1
    return count
