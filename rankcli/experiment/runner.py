"""Running an experiment: plan its units, skip the finished ones (resume), share the rest with concurrent runs,
train them (here, in ``--jobs`` processes or on a Dask cluster) and write the summary files."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from rankcli.core.metrics import Convention, parse_metrics
from rankcli.distributed import run_units
from rankcli.errors import UsageError
from rankcli.experiment.config import DEFAULT_TRIALS, ExperimentConfig
from rankcli.experiment.convergence import convergence
from rankcli.experiment.data import ExperimentData, check_data, load_data
from rankcli.experiment.fusion import fuse_trials
from rankcli.experiment.render import experiment_markdown
from rankcli.experiment.settings import Setting, SweepLevel, all_loss_names, plan_settings
from rankcli.experiment.summary import hyperparameters, pooled_queries, summarize_experiment, sweep_rows
from rankcli.experiment.unit import UnitResult, plan_units, run_pool, run_unit
from rankcli.formats.atomic import FileLock
from rankcli.formats.experiment_store import (
    ResultStore,
    load_curves,
    load_tuned,
    lock_path,
    prepare_directory,
    queries_path,
    remove_locks,
    stored_config,
    write_convergence,
    write_json,
    write_sweep,
    write_text,
)


@dataclass
class ExperimentResult:
    """What :func:`run_experiment` returns: the plan, the summary (Table 1 and the paired tests) and the curves."""

    exp_dir: Path
    config: ExperimentConfig
    settings: list[Setting]
    sweeps: dict[str, list[SweepLevel]]
    summary: dict               # see summarize_experiment()
    convergence: dict           # setting -> loss -> {"mean", "stderr", "trials", "running"} (see convergence())
    resumed_units: int
    ran_units: int
    seconds: float
    files: list[Path]


class UnitClaims:
    """Which pending units this run trains, when several runs share one EXP_DIR (array jobs, two terminals).

    A unit is claimed with an exclusive ``flock`` on ``EXP_DIR/.locks/<setting>__<trial>__<loss>.lock``, held from
    before training until its rows are stored; the kernel drops it if the run dies, so a killed run never leaves a
    unit stuck. A claimed unit that the store already lists as done (another run finished it) is skipped. Units held
    by another run are put off; once nothing else is left, :meth:`next` with ``wait`` blocks on them one by one and
    trains only those whose holder died without finishing them.
    """

    def __init__(self, exp_dir: Path, pending: list, store: ResultStore,
                 done_units: Callable[[], set[tuple[str, int, str]]]):
        self.exp_dir = exp_dir
        self._todo = list(pending)
        self._deferred: list = []
        self._store = store
        self._done_units = done_units
        self._held: dict[tuple[str, int, str], object] = {}
        self._ran: set[tuple[str, int, str]] = set()

    @staticmethod
    def key(unit) -> tuple[str, int, str]:
        """``(setting name, trial, loss)`` of a unit ``(setting, trial, loss)``."""
        setting, trial, loss = unit
        return (setting.name, trial, loss)

    @property
    def remaining(self) -> int:
        """Units not yet handed out (pending or put off)."""
        return len(self._todo) + len(self._deferred)

    def ran(self, unit) -> bool:
        """Whether this run claimed (and so trained) ``unit``."""
        return self.key(unit) in self._ran

    def next(self, wait: bool = True):
        """The next unit to train, claimed; ``None`` when none is left (or, without ``wait``, when only units
        another run holds are left)."""
        while self._todo or (wait and self._deferred):
            blocking = not self._todo
            unit = self._todo.pop(0) if self._todo else self._deferred.pop(0)
            key = self.key(unit)
            lock = FileLock(lock_path(self.exp_dir, *key), make_parent=True)  # .locks/ goes when a run finishes
            if not lock.acquire(blocking=blocking):
                self._deferred.append(unit)
                continue
            self._store.refresh()
            if key in self._done_units():  # finished by another run meanwhile
                lock.release()
                continue
            self._held[key] = lock
            self._ran.add(key)
            return unit
        return None

    def release(self, key: tuple[str, int, str]) -> None:
        """Give up the claim on the unit ``key`` (once its rows are stored)."""
        lock = self._held.pop(key, None)
        if lock is not None:
            lock.release()

    def release_all(self) -> None:
        """Give up every claim still held (the run stops)."""
        for key in list(self._held):
            self.release(key)


def _check_options(config: ExperimentConfig, jobs: int) -> None:
    """Every option checked before EXP_DIR is touched (a bad --select-by or --preset, too: the training
    configuration checks them); ``config.metrics`` become canonical names."""
    config.validate()
    if jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {jobs}")
    config.metrics = [str(s) for s in parse_metrics(config.metrics)]


def _load(data_path: Path | str, config: ExperimentConfig) -> ExperimentData:
    """Read DATA and fix ``config.trials``: the number of folds (another number given is refused), or the default."""
    data = load_data(data_path, config.folds)
    if config.folds:
        if config.trials is not None and config.trials != len(data.folds):
            raise UsageError(f"trials do not combine with folds: each of the {len(data.folds)} folds of {data_path} "
                             f"is trained once per loss, got trials={config.trials}")
        config.trials = len(data.folds)
    elif config.trials is None:
        config.trials = DEFAULT_TRIALS
    check_data(data, config)
    return data


def _beside_identity(config: ExperimentConfig) -> dict:
    """What config.json records beside the identity: the trials, the summary's correction and test, and where the
    parameters and the search space came from (the identity holds the parameters and entries themselves)."""
    extra = {"trials": config.trials, "correction": config.correction, "test": config.test_name}
    if config.params_file:
        extra["params_file"] = config.params_file
    if config.tune_space:
        extra["tune_space"] = config.tune_space
    return extra


def run_experiment(data_path: Path | str, exp_dir: Path | str, config: ExperimentConfig, *, jobs: int = 1,
                   overwrite: bool = False, on_plan: Callable[[int, int], None] | None = None,
                   on_unit: Callable[[UnitResult], None] | None = None, dask=None) -> ExperimentResult:
    """Run (or resume) an experiment and summarise it.

    Parameters
    ----------
    data_path : DATA: a Parquet dataset or a directory of them (pooled), or with ``config.folds`` the folds.
    exp_dir : EXP_DIR, created or reopened (an earlier run of the same configuration is resumed).
    config : the experiment. Under the folds protocol ``config.trials`` is set to the number of folds (another number
        given is refused); under random splits ``None`` becomes :data:`DEFAULT_TRIALS`.
    jobs : worker processes (``jobs > 1``); results do not depend on it.
    overwrite : replace an experiment with another configuration in ``exp_dir``.
    on_plan : ``on_plan(total_units, already_done)``, called once before training starts.
    on_unit : called after every finished unit (in this process).
    dask : run the units on a Dask cluster (a ``local:N`` / scheduler address, or a ``distributed.Client``).
    """
    _check_options(config, jobs)
    exp_dir = Path(exp_dir)
    if not overwrite:  # the losses' options not given resume as the directory records them
        config.adopt_loss_options(stored_config(exp_dir))
    started = time.perf_counter()
    data = _load(data_path, config)
    resumed, settings, sweeps, store = _open(exp_dir, config, data, overwrite)

    def done_units() -> set[tuple[str, int, str]]:
        # Under folds a unit is finished only with its per-query values (the pooled tests need them), else run again.
        done = store.done(config.metrics)
        return {u for u in done if queries_path(exp_dir, *u).is_file()} if config.folds else done

    done = done_units() if resumed else set()
    units = plan_units(config, settings)
    pending = [u for u in units if u.key not in done]
    if on_plan is not None:
        on_plan(len(units), len(units) - len(pending))
    claims = UnitClaims(exp_dir, pending, store, done_units)

    def finished(u: UnitResult) -> None:
        store.add(u)
        claims.release((u.setting, u.trial, u.loss))
        if on_unit is not None:
            on_unit(u)

    _run_units(data_path, data, config, pending, claims, jobs, finished, dask)
    if dask is None:
        store.refresh()  # units a concurrent run trained belong in the summary too
    if config.fuse:  # each trial's fused run, once its losses are all done
        fuse_trials(exp_dir, data, config, settings, store, done_units())
    result = finalize(exp_dir, config, settings, sweeps, store, data.notes, split_query_counts(data, config))
    remove_locks(exp_dir)
    result.resumed_units = len(units) - len(pending)  # the rest: ran here, or by a concurrent run
    result.ran_units = len(pending) if dask is not None else sum(1 for u in pending if claims.ran(u))
    result.seconds = time.perf_counter() - started
    return result


def _open(exp_dir: Path, config: ExperimentConfig, data: ExperimentData, overwrite: bool
          ) -> tuple[bool, list[Setting], dict[str, list[SweepLevel]], ResultStore]:
    """``(resumed, settings, sweeps, store)``: EXP_DIR created, or reopened for the same configuration and data
    (``resumed``), the settings and sweeps planned, and the result store over them."""
    identity = {"config": config.identity(), "data_fingerprint": data.fingerprint()}
    resumed = prepare_directory(exp_dir, identity, _beside_identity(config), overwrite)
    settings, sweeps = plan_settings(config)
    store = ResultStore(exp_dir, [s.name for s in settings], all_loss_names(config), config.metrics,
                        Convention.preset(config.train.convention).as_dict())
    return resumed, settings, sweeps, store


def _run_units(data_path, data: ExperimentData, config: ExperimentConfig, pending: list, claims: UnitClaims,
               jobs: int, finished: Callable[[UnitResult], None], dask) -> None:
    """Train the pending units: on a Dask cluster, in ``jobs`` processes, or here."""
    if dask is not None:
        run_units(dask, str(data_path), pending, finished, load=partial(load_data, folds=config.folds), run=run_unit,
                  args=(config,), data=data)
        return
    try:
        if jobs == 1 or len(pending) <= 1:
            while (unit := claims.next(wait=True)) is not None:
                finished(run_unit(data, config, *unit))
        else:
            run_pool(str(data_path), config, claims, jobs, finished)
    finally:
        claims.release_all()


def split_query_counts(data: ExperimentData, config: ExperimentConfig):
    """Random splits: the (train, validation, test) query counts every trial's split has (the corrected t-test's
    ``n_train`` and ``n_test``); None under the folds protocol."""
    from rankcli.core.perturb import split_sizes

    if config.folds or data.pooled is None:
        return None
    return tuple(int(x) for x in split_sizes(data.pooled.n_queries, config.split))


def finalize(exp_dir: Path, config: ExperimentConfig, settings: list[Setting], sweeps: dict[str, list[SweepLevel]],
             store: ResultStore, notes: list[str] | None = None, sizes=None) -> ExperimentResult:
    """Summarise what ``store`` holds for the experiment ``config`` (its ``settings`` and ``sweeps``) and write
    summary.json, summary.md, convergence.csv and the sweep CSVs into ``exp_dir``. ``notes``: what the summary must
    say about the data (overlapping folds allowed), as ``summary["overlap"]``; ``sizes``: random splits, the
    trials' (train, validation, test) query counts (:func:`split_query_counts`)."""
    pooled = pooled_queries(exp_dir, config, settings) if config.folds else None
    summary = summarize_experiment(store.rows, config, settings, pooled, sizes)
    if notes:
        summary["overlap"] = list(notes)
    summary["hyperparameters"] = hyperparameters(config, load_tuned(exp_dir) if config.tune else {})
    conv = convergence(load_curves(exp_dir), config, settings, store.kept_trees())
    result = ExperimentResult(exp_dir, config, settings, sweeps, summary, conv, 0, 0, 0.0, [])
    tables = sweep_rows(summary, config, sweeps)
    head = {"protocol": "folds" if config.folds else "random-splits", "unit": "query" if config.folds else "trial",
            "difference": "mean(b) - mean(a)", "loss_options": config.resolved_loss_options()}
    result.files.append(write_json(exp_dir, "summary.json", {
        **head, **summary, "convention": config.train.convention, "correction": config.correction,
        "trials": config.trials, "sweeps": tables}))
    result.files.append(write_text(exp_dir, "summary.md", experiment_markdown(result, tables) + "\n"))
    result.files.append(write_convergence(exp_dir, conv))
    result.files += [write_sweep(exp_dir, kind, rows) for kind, rows in tables.items()]
    return result
