"""Running ``rankcli tune``: check the options, prepare the output directory, run the trials of every loss (here, in
``--jobs`` processes or as Dask tasks, all sharing each loss's study) and collect the results.

Tuning reads the training and validation files only, through ``rankcli train``'s own loading
(:func:`rankcli.train.load_training_data`): no test data is ever opened, and a trial with ``train``'s parameters
trains ``train``'s model.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from rankcli.errors import InputError, UsageError
from rankcli.formats.tune_store import directory_lock, prepare_directory
from rankcli.train import file_sha256
from rankcli.tune.config import TuneConfig
from rankcli.tune.draws import failure_streak, failures_error, show_params, startup_trials
from rankcli.tune.journal import JOURNAL_FILE, check_identity, load_study
from rankcli.tune.parallel import run_in_processes, run_on_dask
from rankcli.tune.results import LossResult, TuneResult, trial_record, write_results
from rankcli.tune.study import quiet_optuna
from rankcli.tune.worker import OnTrial, tune_losses


def _data_identity(train_path: Path, valid_path: Path) -> dict:
    return {"train_sha256": file_sha256(train_path), "valid_sha256": file_sha256(valid_path)}


def collect(out_dir: Path, config: TuneConfig) -> dict[str, LossResult]:
    """Every loss's trials as the journals hold them now."""
    quiet_optuna()
    return {loss: LossResult(loss, collect_one(out_dir, loss), config.space_of(loss)) for loss in config.losses}


def check_inputs(train_path: Path, valid_path: Path | None, config: TuneConfig) -> None:
    """:class:`UsageError` without a validation set (every trial is scored on it)."""
    if valid_path is None:
        raise UsageError("tune needs --valid VALID.parquet: every trial is scored on the validation set")
    for p in (train_path, valid_path):
        if not Path(p).is_file():
            raise InputError(f"{p}: no such file")


def run_tune(train_path: Path | str, valid_path: Path | str, out_dir: Path | str, config: TuneConfig, *,
             overwrite: bool = False, jobs: int = 1, dask: str | None = None,
             on_trial: OnTrial | None = None, log: Callable[[str], None] | None = None) -> TuneResult:
    """Tune every loss of ``config`` on the same budget (or resume, or extend, a tune in ``out_dir``).

    Parameters
    ----------
    train_path, valid_path : the training and validation data (Parquet); nothing else is read.
    out_dir : the output directory (new, empty, or an earlier tune of the same data, options and space).
    config : the losses, the budget, the shared training options and the space.
    overwrite : start the studies of ``config.losses`` over.
    jobs : processes on this machine sharing the studies (results of a parallel run are not reproducible).
    dask : run the processes' work as tasks on a Dask cluster (``local:N`` or a scheduler address).
    on_trial : called in this process after each trial it trained.
    log : receives a line per loss before it starts.
    """
    started = time.perf_counter()
    config.validate()
    if jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {jobs}")
    check_inputs(Path(train_path), Path(valid_path), config)
    out = Path(out_dir)
    data = _data_identity(Path(train_path), Path(valid_path))
    spaces = {loss: config.space_of(loss) for loss in config.losses}  # a bad space fails before any directory
    with directory_lock(out):  # processes starting at once prepare the directory one at a time
        prepare_directory(out, config.losses, overwrite)
        for loss in config.losses:
            resumed = check_identity(out / loss, loss, config.identity(loss, data))
            _check_budget(out, loss, config.budget, resumed)
            if log is not None:
                log(_plan_line(loss, spaces[loss], config.budget, resumed))
    try:
        ran = _run_workers(str(train_path), str(valid_path), str(out), config, jobs, dask, on_trial)
    except BaseException:  # Ctrl-C, SIGTERM, a failed trial: every file as the journals stand, then the error
        _write_interrupted(out, config)
        raise
    results = collect(out, config)
    for loss, n in ran.items():
        results[loss].ran = n
    result = TuneResult(out, config, results)
    result.files = write_results(result)
    result.seconds = time.perf_counter() - started
    _check_failures(result)
    return result


def _check_failures(result: TuneResult) -> None:
    """:class:`InputError` (exit 3, after every file is written) naming each loss whose study ended on
    ``max_failures`` failed trials in a row: its last parameters and value."""
    config = result.config
    errors = []
    for loss, r in result.losses.items():
        streak = failure_streak(r.trials)
        if streak is not None and streak.count >= config.max_failures:
            errors.append(str(failures_error(loss, streak, config.train.select_by, config.max_failures)))
    if errors:
        raise InputError("; ".join(errors))


def _write_interrupted(out: Path, config: TuneConfig) -> None:
    """Every result file (the plot included) after an interrupted run, as far as it can be written: the error that
    stopped the run is the one reported, and each loss's trials.csv and best.json were written after its last
    finished trial already."""
    try:
        write_results(TuneResult(out, config, collect(out, config)))
    except Exception:  # a full disk, say: the run's own error is the one to report
        pass


def _plan_line(loss: str, s, budget: int, resumed: bool) -> str:
    return (f"tune {loss}: budget {budget} trials ({startup_trials(budget)} random start-up, trial 0 train's "
            f"parameters{'' if not s.clipped else ' clipped into the space: ' + ', '.join(s.clipped)}), searching "
            f"{', '.join(d.name for d in s.searched) or 'nothing'}" + (f"; fixed {show_params(s.fixed)}" if s.fixed
                                                                      else "") + ("; resuming" if resumed else ""))


def _check_budget(out: Path, loss: str, budget: int, resumed: bool) -> None:
    if not resumed:
        return
    done = sum(t["state"] == "COMPLETE" for t in collect_one(out, loss))
    if done > budget:
        raise UsageError(f"{out / loss}: the study already has {done} finished trials, more than --budget {budget}; "
                         f"give --budget {done} or more to extend it (or --overwrite to start over)")


def collect_one(out: Path, loss: str) -> list[dict]:
    """The trials of ``loss``'s study in ``out`` (none when it has no journal, or no study in it, yet); a damaged
    journal is an :class:`InputError` naming it."""
    study = load_study(Path(out) / loss / JOURNAL_FILE, loss)
    return [] if study is None else [trial_record(t) for t in study.get_trials(deepcopy=False)]


def _run_workers(train_path: str, valid_path: str, out: str, config: TuneConfig, jobs: int, dask: str | None,
                 on_trial: OnTrial | None) -> dict[str, int]:
    """This process's trials (and, with ``jobs``, those of ``jobs - 1`` helper processes, or Dask tasks)."""
    if dask is not None:
        return run_on_dask(dask, train_path, valid_path, out, config, jobs)
    if jobs == 1:
        return tune_losses(train_path, valid_path, out, config, on_trial)

    return run_in_processes(train_path, valid_path, out, config, jobs, on_trial)
