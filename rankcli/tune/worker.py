"""The work of one tuning process: take trials of each loss in turn and train them, until every loss's budget is
finished or running. Any number of processes run it at once on one output directory (:mod:`rankcli.tune.study`
keeps the budget exact)."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rankcli.errors import InputError, UsageError
from rankcli.train import load_training_data
from rankcli.tune import trial
from rankcli.tune.draws import show_params, value_text
from rankcli.tune.results import LossResult, trial_record, write_loss_files
from rankcli.tune.study import Claimed, LossStudy, Worker

__all__ = ["OnTrial", "show_params", "tune_losses"]

#: ``on_trial(loss, record, best)`` after each trial this process finished.
OnTrial = Callable[[str, dict, "float | None"], None]


def _train_one(study: LossStudy, claimed: Claimed, base: Any, data: Any, prepared: Any) -> dict:
    """Train one claimed trial and record it; returns its record."""
    try:
        config = trial.trial_config(base, claimed.params, where=f"trial {claimed.trial.number} of {base.loss}")
        outcome = trial.train_trial(prepared, config, objective=data.objective)  # looked up here: tests replace it
    except (InputError, UsageError) as exc:
        study.fail(claimed, str(exc))
        raise type(exc)(f"--loss {base.loss}, trial {claimed.trial.number} ({show_params(claimed.params)}): {exc}") \
            from None
    attrs = {"trees": outcome.trees, "trees_trained": outcome.trees_trained, "seconds": round(outcome.seconds, 3),
             "fixed": study.space.fixed}
    study.finish(claimed, outcome.value, attrs)
    good = outcome.value is not None and math.isfinite(outcome.value)
    return {"trial": claimed.trial.number, "state": "COMPLETE" if good else "FAIL",
            "value": outcome.value if good else None, "invalid": None if good else value_text(outcome.value),
            **attrs, "retry_of": claimed.retry_of, "params": claimed.params}


def _write_loss_files(out: Path, study: LossStudy, config: Any) -> None:
    """The loss's trials.csv and best.json as the journal stands after a trial, so that a killed run leaves them
    readable. Under the claim lock: each process reads the journal and writes in turn, the last write the newest."""
    with study.claim_lock():
        trials = [trial_record(t) for t in study.trials()]
        write_loss_files(out, LossResult(study.space.loss, trials, study.space), config)


def tune_losses(train_path: str, valid_path: str, out_dir: str, config: Any,
                on_trial: OnTrial | None = None) -> dict[str, int]:
    """The work of one process: take and train trials of every loss in turn until each loss's budget is finished or
    running, or it ended on failed trials (:meth:`LossStudy.ended`; :func:`run_tune` reports it). Any number of
    processes may run it at once on one ``out_dir`` (prepared by :func:`run_tune`). Returns the trials this process
    trained, per loss."""
    from rankcli.runtime.startup import import_lightgbm_lean

    import_lightgbm_lean()
    out = Path(out_dir)
    worker = Worker(out)
    ran: dict[str, int] = {}
    try:
        for loss in config.losses:
            base = config.loss_config(loss)
            study = LossStudy(out / loss, config.space_of(loss), base.seed, config.budget, worker,
                              config.max_failures)
            ran[loss] = 0
            if study.open_slots() <= 0 or study.ended() is not None:  # nothing to take: the data need not be read
                continue
            # train's own loading (and its checks), once per loss and process, before any trial is taken
            data = load_training_data(Path(train_path), Path(valid_path), base)
            prepared = data.prepare()  # binned at the first trial, reused by the others with the same binning
            while (claimed := study.claim()) is not None:
                record = _train_one(study, claimed, base, data, prepared)
                ran[loss] += 1
                _write_loss_files(out, study, config)
                if on_trial is not None:
                    best = max((t.value for t in study.trials() if t.value is not None), default=None)
                    on_trial(loss, record, best)
            del data, prepared
    finally:
        worker.close()
    return ran
