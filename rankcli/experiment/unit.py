"""One unit of an experiment, ``(setting, trial, loss)``: train one loss on one trial of one setting and test it; and
the worker processes of ``--jobs N`` that run units."""

from __future__ import annotations

import json
import multiprocessing
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from rankcli.core.seeds import model_seed, perturbation_rng
from rankcli.errors import InputError
from rankcli.experiment.config import ExperimentConfig, train_config
from rankcli.experiment.data import ExperimentData, load_data, part_rows, trial_parts, with_features
from rankcli.experiment.settings import Setting, parse_variant, trained_losses, trial_ids
from rankcli.experiment.sweeps import perturb, position_bias_logs, variant_data
from rankcli.train import predict_rows
from rankcli.tune.inline import tune_in_memory


class Unit(NamedTuple):
    """What one unit trains: ``loss`` (or a variant, ``loss+ips``) on trial ``trial`` of ``setting``."""

    setting: Setting
    trial: int
    loss: str

    @property
    def key(self) -> tuple[str, int, str]:
        """How the store names the unit: ``(setting name, trial, loss)``."""
        return (self.setting.name, self.trial, self.loss)


@dataclass
class UnitResult:
    """One trained and evaluated unit (setting, trial, loss): its test metrics and its validation curve."""

    setting: str
    trial: int
    loss: str
    values: dict[str, float]     # test metric -> mean over test queries
    trees: int
    seconds: float
    curve: list[float]           # validation select_by per tree
    qids: np.ndarray | None = None                          # the test queries, in test-file order
    per_query: dict[str, np.ndarray] = field(default_factory=dict)  # test metric -> value per test query (NaN: skipped)
    params: dict | None = None   # with --tune: the parameters tuning chose (and what it saw), else None
    scores: np.ndarray | None = None  # with --fuse: the test scores, per test row (the trial's fused run uses them)


def plan_units(config: ExperimentConfig, settings: list[Setting]) -> list[Unit]:
    """All units of ``config`` over ``settings``, trial-major (so that whole trials, or folds, finish early), then
    setting, then loss."""
    return [Unit(s, t, loss) for t in trial_ids(config) for s in settings for loss in trained_losses(config, s)]


#: One process's latest (data, setting, trial) prepared for training: the units of a (setting, trial) run one after
#: another (trial-major plan), and every loss of it trains on the same perturbed data, so its LightGBM Datasets are
#: built once (rankcli.train.prepare) and reused by every loss.
_PREPARED: dict = {}


def _prepared(data: ExperimentData, config: ExperimentConfig, setting: Setting, trial: int):
    """``(prepared training split, test part, test features by row)`` of ``(setting, trial)``, the latest one kept."""
    from rankcli.train import prepare

    key = (id(data), data.fingerprint(), json.dumps(config.identity(), sort_keys=True), setting.name, trial)
    if key not in _PREPARED:
        _PREPARED.clear()  # the previous trial's Datasets are freed before this one's are built
        parts = trial_parts(data, config, trial)
        if setting.kind in ("click-noise", "click-model", "position-bias"):  # clicks simulated on in-memory data
            train, valid = with_features(parts, "train"), with_features(parts, "valid")
            if setting.kind in ("click-noise", "click-model"):
                rng = perturbation_rng(config.seed, trial, setting.name)
                train, valid = perturb(setting, train, valid, config, rng)
            prepared = prepare(train, valid)
        else:
            train, valid = perturb(setting, parts.train, parts.valid, config,
                                   perturbation_rng(config.seed, trial, setting.name))
            prepared = prepare(train, valid, train_rows=part_rows(parts, "train", train),
                               valid_rows=part_rows(parts, "valid", valid) if valid is not None else None)
        _PREPARED[key] = (prepared, parts.test, part_rows(parts, "test"))
    return _PREPARED[key]


def _train(data: ExperimentData, config: ExperimentConfig, setting: Setting, trial: int, loss: str):
    """The trained model of one unit, what tuning chose (``None`` without ``--tune``), its test part and the test
    features by row."""
    from rankcli.train import prepare, train_prepared

    prepared, test, test_rows = _prepared(data, config, setting, trial)
    objective = None
    base_loss = parse_variant(loss).loss if setting.kind == "position-bias" else loss
    try:
        if setting.kind == "position-bias":
            logs = position_bias_logs(prepared.train, prepared.valid, config, setting, trial,
                                      key=(id(data), data.fingerprint(), json.dumps(config.identity(), sort_keys=True)))
            train, valid, objective = variant_data(logs, loss, config)
            prepared = prepare(train, valid)  # each variant trains on its own pooled click data
        unit_config = train_config(config, base_loss, model_seed(config.seed, trial, setting.name))
        if config.tune:  # tuned on this unit's training and validation data only: the test part is not passed on
            return _tuned(prepared, unit_config, objective, config) + (test, test_rows)
        result = train_prepared(prepared, unit_config, objective=objective)
    except InputError as exc:  # say which unit: a random split can leave, e.g., a validation part without relevance
        raise InputError(f"{setting.name}, {'fold' if config.folds else 'trial'} {trial}, {loss}: {exc}") from None
    return result, None, test, test_rows


def _tuned(prepared, config, objective, experiment: ExperimentConfig) -> tuple:
    """The best model of ``experiment.tune`` tuning trials (in ``experiment.tune_space``) of the unit's training
    configuration ``config`` on ``prepared`` (the unit's training and validation data), and what the summary reports
    of it."""
    if prepared.valid is None:
        raise InputError("--tune scores every tuning trial on the validation set, and this unit has none (give each "
                         "fold a vali.parquet)")
    tuned = tune_in_memory(prepared, config, experiment.tune, experiment.tune_space, objective=objective)
    return tuned.best.result, {"params": tuned.params, "validation": tuned.best.value,
                               "default_validation": tuned.default_value, "trials": tuned.trials}


def run_unit(data: ExperimentData, config: ExperimentConfig, setting: Setting, trial: int, loss: str) -> UnitResult:
    """Train ``loss`` on trial ``trial`` of ``setting`` (the experiment ``config`` on ``data``) and test it on the
    trial's untouched test queries. Deterministic in its arguments."""
    from rankcli.core.metrics import Convention, evaluate, parse_metrics

    start = time.perf_counter()
    result, params, test, test_rows = _train(data, config, setting, trial, loss)
    booster = result.booster
    trees = int(result.best_iteration) if result.best_iteration and result.best_iteration > 0 \
        else int(booster.current_iteration())
    scores = predict_rows(booster, test_rows, num_iteration=trees)
    specs = parse_metrics(config.metrics)
    ev = evaluate(specs, test.labels, scores, test.offsets, Convention.preset(config.train.convention))
    values = {str(s): float(ev.means[str(s)]) for s in specs}
    per_query = {str(s): np.asarray(ev.per_query[str(s)], dtype=np.float64) for s in specs} if config.folds else {}
    return UnitResult(setting.name, trial, loss, values, trees, time.perf_counter() - start,
                      [float(v) for v in result.curve], test.qids[test.offsets[:-1]].copy() if config.folds else None,
                      per_query, params, np.asarray(scores, dtype=np.float64) if config.fuse else None)


# Worker processes load the data once (initializer) and then run units by key.
_WORKER: dict = {}


def init_worker(data_path: str, config: ExperimentConfig) -> None:
    """A ``--jobs`` worker process's initializer: ignore Ctrl-C (the parent stops the pool), keep ``config`` and read
    the data at ``data_path``."""
    from rankcli.runtime.startup import import_lightgbm_lean

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops the pool
    import_lightgbm_lean()  # a worker of ours never uses LightGBM's scikit-learn API: ~1.5-2 s of CPU less each
    _WORKER["config"] = config
    _WORKER["data"] = load_data(data_path, config.folds)


def worker_unit(setting: Setting, trial: int, loss: str) -> UnitResult:
    """Run the unit ``(setting, trial, loss)`` in a worker process on the data :func:`init_worker` read."""
    return run_unit(_WORKER["data"], _WORKER["config"], setting, trial, loss)


def run_pool(data_path: str, config: ExperimentConfig, claims, jobs: int,
             finished: Callable[[UnitResult], None]) -> None:
    """Run the units ``claims`` (:class:`rankcli.experiment.UnitClaims`) hands out in ``jobs`` worker processes that
    read ``data_path`` and run ``config``; ``finished`` (here) as each completes."""
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    ctx = multiprocessing.get_context("spawn")  # no fork after pyarrow/OpenMP threads have started
    pool = ProcessPoolExecutor(max_workers=min(jobs, claims.remaining), mp_context=ctx, initializer=init_worker,
                               initargs=(data_path, config))
    try:
        # Keep a bounded number of units in flight so that results come back roughly in plan order. A unit is
        # claimed when submitted and released once stored; units another run holds are waited for only when
        # nothing of ours is running.
        running = set()
        while True:
            while len(running) < 2 * jobs and (unit := claims.next(wait=not running)) is not None:
                running.add(pool.submit(worker_unit, *unit))
            if not running:
                break
            done, running = wait(running, return_when=FIRST_COMPLETED)
            for fut in done:  # the store sorts rows, so completion order does not matter
                finished(fut.result())
    except BaseException:
        # Ctrl-C or a failed unit: stop the workers now (finished units are already saved), then re-raise.
        workers = list((getattr(pool, "_processes", None) or {}).values())
        for proc in workers:
            proc.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
