"""One loss's Optuna study in ``DIR/<loss>/``: a journal file that any number of processes share, the claims that keep
its budget exact, and what happens to a trial whose process died.

**Storage.** ``JournalStorage(JournalFileBackend(DIR/<loss>/study.journal))``: an append-only log that needs no
server; every process reads what the others appended. Appends are serialised by an ``flock``
(:class:`~rankcli.tune.journal.JournalLock`); :mod:`rankcli.tune.journal` refuses a damaged journal and records
the study's identity in it.

**An exact budget.** Optuna's ``MaxTrialsCallback`` counts trials after each one ends, so two workers that both see
``N - 1`` finished trials both start one and finish ``N + 1``. Here a worker takes a trial only inside an exclusive
``flock`` on ``DIR/<loss>/.claim.lock``: it counts the finished (COMPLETE) and running trials, and asks Optuna for a
new one only when their sum is below the budget. The budget is therefore never exceeded, whatever the number of
processes, and a failed trial (no finite validation value) does not use it up: it takes a draw, so the next trial
has other parameters (:mod:`rankcli.tune.draws`), and ``max_failures`` failed trials in a row end the study.

**A trial whose process died.** Each process holds an exclusive ``flock`` on ``DIR/.workers/<id>.lock`` while it
tunes and records its id on every trial it takes. The journal has no heartbeat, but the kernel drops a dead process's
lock: a RUNNING trial whose worker's lock can be taken was left by a killed process (SIGKILL, SIGINT, a lost node).
Under the claim lock it is marked FAIL and its parameters are enqueued again, so the next trial taken runs them in
its place (its draw): no finished trial is lost and no slot of the budget is wasted.

**Reproducibility.** The trial of draw ``k`` is drawn as :mod:`rankcli.tune.draws` says, from ``(seed, k)`` and the
finished trials only, so an uninterrupted sequential run repeated gives the same trials, and so does a sequential
run interrupted and resumed (the interrupted trial's parameters run again at its draw). What is not reproduced: the
timings, and parallel runs (``--jobs``, ``--dask``, two processes), whose trials see whichever others happened to
have finished; an extended study (``--budget`` raised) equals a fresh one with the larger budget only when both
budgets give the same number of random start-up trials (:func:`~rankcli.tune.draws.startup_trials`).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from rankcli.tune.draws import DEFAULT_MAX_FAILURES, Failure, ask, failure_streak, startup_point, value_text
from rankcli.tune.journal import JOURNAL_FILE, damage_named, journal_storage, quiet_optuna
from rankcli.tune.results import trial_record
from rankcli.tune.space import Space

CLAIM_LOCK = ".claim.lock"
WORKERS_DIR = ".workers"
__all__ = ["JOURNAL_FILE", "Claimed", "LossStudy", "Worker", "quiet_optuna"]


class Claimed(NamedTuple):
    """A trial this process took: Optuna's trial and every parameter it trains with."""

    trial: Any
    params: dict[str, Any]
    retry_of: int | None


class Worker:
    """This process as a worker of the studies in ``out_dir``: an id and the lock that says it is alive."""

    def __init__(self, out_dir: Path):
        from rankcli.formats.atomic import FileLock

        self.id = uuid.uuid4().hex
        self.dir = out_dir / WORKERS_DIR
        self.dir.mkdir(exist_ok=True)
        self._lock = FileLock(self.dir / f"{self.id}.lock")
        self._lock.acquire()

    def close(self) -> None:
        """Stop being a worker: release the lock and remove its file."""
        path = self.dir / f"{self.id}.lock"
        try:
            path.unlink()
        except OSError:
            pass
        self._lock.release()

    def alive(self, worker_id: Any) -> bool:
        """Whether the worker ``worker_id`` still holds its lock (is tuning)."""
        from rankcli.formats.atomic import FileLock

        if worker_id == self.id:
            return True
        if not isinstance(worker_id, str) or not worker_id.isalnum():
            return False
        path = self.dir / f"{worker_id}.lock"
        if not path.exists():
            return False
        lock = FileLock(path)
        if not lock.acquire(blocking=False):
            return True
        try:
            path.unlink()
        except OSError:
            pass
        lock.release()
        return False


class LossStudy:
    """The study of one loss in ``loss_dir``, with the claims of :mod:`this module <rankcli.tune.study>`.

    Parameters
    ----------
    loss_dir : ``DIR/<loss>`` (holds the journal and the claim lock).
    space : the loss's search space.
    seed : the tune seed.
    budget : the most trials that finish (COMPLETE).
    worker : this process as a worker (:class:`Worker`).
    max_failures : failed trials in a row that end the study (:attr:`failure` then says which).
    """

    def __init__(self, loss_dir: Path, space: Space, seed: int, budget: int, worker: Worker,
                 max_failures: int = DEFAULT_MAX_FAILURES):
        import optuna

        quiet_optuna()
        self.dir, self.space, self.seed, self.budget, self.worker = loss_dir, space, seed, budget, worker
        self.max_failures = max_failures
        self.failure: Failure | None = None  # set when the failed trials in a row reach max_failures
        storage = journal_storage(loss_dir / JOURNAL_FILE)
        with self.claim_lock():
            self.study = optuna.create_study(study_name=space.loss, storage=storage, direction="maximize",
                                             load_if_exists=True)
            if not self.study.get_trials(deepcopy=False):
                # trial 0: train's own parameters, once (skip_if_exists guards a second enqueue all the same)
                self.study.enqueue_trial(space.defaults(), user_attrs={"defaults": True}, skip_if_exists=True)

    @contextmanager
    def claim_lock(self) -> Iterator[None]:
        """Hold the study's claim lock: one process at a time takes a trial, or writes the loss's result files. A
        journal damaged meanwhile is an :class:`~rankcli.errors.InputError` naming its line."""
        from rankcli.formats.atomic import FileLock

        with FileLock(self.dir / CLAIM_LOCK), damage_named(self.dir / JOURNAL_FILE):
            yield

    def trials(self) -> list:
        """Every trial of the study, as Optuna's frozen trials, in number order."""
        return list(self.study.get_trials(deepcopy=False))

    def _recover(self, trials: list) -> None:
        """Mark FAIL every RUNNING trial whose worker died and enqueue its parameters again (under the claim lock)."""
        from optuna.trial import TrialState

        for t in trials:
            if t.state == TrialState.RUNNING and not self.worker.alive(t.user_attrs.get("worker")):
                self.study.tell(t.number, state=TrialState.FAIL)
                attrs = {k: v for k, v in t.user_attrs.items() if k in ("defaults", "startup")}
                self.study.enqueue_trial(self._drawn(t), user_attrs={**attrs, "retry_of": t.number})

    def _drawn(self, t: Any) -> dict[str, Any]:
        """The parameters of trial ``t`` as drawn: those it suggested and, when its process died before it suggested
        them all, what trial 0 or its start-up draw gives (a TPE draw is made again: the same seed and finished
        trials give the same one)."""
        if t.user_attrs.get("defaults"):
            base = self.space.defaults()
        elif isinstance(t.user_attrs.get("startup"), int):
            base = startup_point(self.space, self.seed, t.user_attrs["startup"])
        else:
            base = {}
        return {**base, **dict(t.params)}

    def open_slots(self) -> int:
        """Trials still to take (the budget less the trials finished or running in a live process), without the lock:
        a hint only."""
        from optuna.trial import TrialState

        return self.budget - sum(t.state == TrialState.COMPLETE or (t.state == TrialState.RUNNING and
                                                                     self.worker.alive(t.user_attrs.get("worker")))
                                 for t in self.trials())

    def ended(self) -> Failure | None:
        """The failed trials in a row that end the study, once they number ``max_failures`` (else ``None``)."""
        streak = failure_streak([trial_record(t) for t in self.trials()])
        return streak if streak is not None and streak.count >= self.max_failures else None

    def claim(self) -> Claimed | None:
        """Take the next trial, with its parameters; ``None`` once the budget is finished or running, or the study
        ended on failures (:attr:`failure`)."""
        from optuna.trial import TrialState

        with self.claim_lock():
            self._recover(self.trials())
            trials = self.trials()
            self.failure = self.ended()
            finished = sum(t.state == TrialState.COMPLETE for t in trials)
            running = sum(t.state == TrialState.RUNNING for t in trials)
            if self.failure is not None or finished + running >= self.budget:
                return None
            trial = ask(self.study, self.space, self.seed, draws(trials), self.budget, finished)
            trial.set_user_attr("worker", self.worker.id)
            params = self.space.suggest(trial)
            return Claimed(trial, params, trial.user_attrs.get("retry_of"))

    def finish(self, claimed: Claimed, value: float, attrs: dict[str, Any]) -> None:
        """Record a trained trial: its validation ``value`` and ``attrs`` (trees, seconds, ...). A value that is not
        finite fails the trial (it takes a draw but not the budget) and is kept as ``invalid``."""
        from optuna.trial import TrialState

        good = value is not None and math.isfinite(value)
        with damage_named(self.dir / JOURNAL_FILE):
            claimed.trial.set_user_attr("outcome", attrs if good else {**attrs, "invalid": value_text(value)})
            if good:
                self.study.tell(claimed.trial, float(value))
            else:
                self.study.tell(claimed.trial, state=TrialState.FAIL)

    def fail(self, claimed: Claimed, message: str) -> None:
        """Record a trial whose training raised an error (it is not run again)."""
        from optuna.trial import TrialState

        claimed.trial.set_user_attr("error", message[:500])
        self.study.tell(claimed.trial, state=TrialState.FAIL)


def draws(trials: list) -> int:
    """The draws the study's trials have taken: every trial but a waiting one and one whose process died (its
    parameters run again in its place, as the trial naming it in ``retry_of``)."""
    from optuna.trial import TrialState

    retried = {t.user_attrs.get("retry_of") for t in trials}
    return sum(t.state != TrialState.WAITING and t.number not in retried for t in trials)
