"""One loss's Optuna study in ``DIR/<loss>/``: a journal file that any number of processes share, the claims that keep
its budget exact, and what happens to a trial whose process died.

**Storage.** ``JournalStorage(JournalFileBackend(DIR/<loss>/study.journal))``: an append-only log that needs no
server; every process reads what the others appended. Appends are serialised by an ``flock`` (:class:`JournalLock`).

**An exact budget.** Optuna's ``MaxTrialsCallback`` counts trials after each one ends, so two workers that both see
``N - 1`` finished trials both start one and finish ``N + 1``. Here a worker takes a trial only inside an exclusive
``flock`` on ``DIR/<loss>/.claim.lock``: it counts the finished (COMPLETE) and running trials, and asks Optuna for a
new one only when their sum is below the budget. The budget is therefore never exceeded, whatever the number of
processes, and a failed trial does not use it up.

**A trial whose process died.** Each process holds an exclusive ``flock`` on ``DIR/.workers/<id>.lock`` while it
tunes and records its id on every trial it takes. The journal has no heartbeat, but the kernel drops a dead process's
lock: a RUNNING trial whose worker's lock can be taken was left by a killed process (SIGKILL, SIGINT, a lost node).
Under the claim lock it is marked FAIL and its parameters are enqueued again, so the next trial taken runs them: no
finished trial is lost and no slot of the budget is wasted.

**Reproducibility.** The sampler of the trial taken at slot ``k`` (``k`` trials finished or running) is a fresh
``TPESampler`` seeded from ``(seed, loss, k)``. TPE's suggestion depends only on that seed and the finished trials, so
an uninterrupted sequential run repeated gives the same trials, and so does a sequential run interrupted and resumed
(the interrupted trial's parameters run again at the same slot). What is not reproduced: the timings, and parallel
runs (``--jobs``, ``--dask``, two processes), whose trials see whichever others happened to have finished; an
extended study (``--budget`` raised) equals a fresh one with the larger budget only when both budgets give the same
number of random start-up trials (:func:`startup_trials`).
"""

from __future__ import annotations

import math
import uuid
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from rankcli.tune.space import Space

JOURNAL_FILE = "study.journal"
CLAIM_LOCK = ".claim.lock"
WORKERS_DIR = ".workers"


def startup_trials(budget: int) -> int:
    """TPE's random start-up trials for a budget of ``budget`` trials: a quarter of it, at least 2 and at most 10.

    Trial 0 (``train``'s defaults) is one of them. A budget of 10 thus samples 1 more point at random and lets TPE
    choose the other 8; a budget of 100 explores 10 points first (Optuna's own default) before TPE takes over.
    """
    return max(2, min(10, budget // 4))


def sampler_seed(seed: int, loss: str, slot: int) -> int:
    """The seed of the sampler that picks the trial at ``slot`` of ``loss``'s study under ``seed``."""
    ss = np.random.SeedSequence(seed, spawn_key=(4, zlib.crc32(loss.encode()), slot))
    return int(ss.generate_state(1, dtype=np.uint32)[0] % (2**31 - 1))


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


class JournalLock:
    """The journal's lock as an exclusive ``flock`` on ``<journal>.lock``: Optuna's default (a symbolic link, waited
    for with sleeps growing to a second, broken after 30 s of silence) made two workers wait on each other for most
    of their time, and a killed process left it behind; the kernel drops a dead holder's ``flock`` at once. Optuna's
    backend calls ``acquire`` and ``release`` around every append."""

    def __init__(self, journal: Path):
        from rankcli.formats.atomic import FileLock

        self._lock = FileLock(str(journal) + ".lock")

    def acquire(self) -> bool:
        """Wait for the lock."""
        return self._lock.acquire()

    def release(self) -> None:
        """Give the lock up."""
        self._lock.release()


def journal_storage(journal: Path):
    """Optuna's journal storage on the file ``journal``, locked by :class:`JournalLock`."""
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    return JournalStorage(JournalFileBackend(str(journal), lock_obj=JournalLock(journal)))


def quiet_optuna() -> None:
    """Optuna logs every trial at INFO level on stderr; rankcli says what it wants to say itself."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)


class LossStudy:
    """The study of one loss in ``loss_dir``, with the claims of :mod:`this module <rankcli.tune.study>`.

    Parameters
    ----------
    loss_dir : ``DIR/<loss>`` (holds the journal and the claim lock).
    space : the loss's search space.
    seed : the tune seed.
    budget : the most trials that finish (COMPLETE).
    worker : this process as a worker (:class:`Worker`).
    """

    def __init__(self, loss_dir: Path, space: Space, seed: int, budget: int, worker: Worker):
        import optuna

        quiet_optuna()
        self.dir, self.space, self.seed, self.budget, self.worker = loss_dir, space, seed, budget, worker
        storage = journal_storage(loss_dir / JOURNAL_FILE)
        with self.claim_lock():
            self.study = optuna.create_study(study_name=space.loss, storage=storage, direction="maximize",
                                             load_if_exists=True)
            if not self.study.get_trials(deepcopy=False):
                # trial 0: train's own parameters, once (skip_if_exists guards a second enqueue all the same)
                self.study.enqueue_trial(space.defaults(), user_attrs={"defaults": True}, skip_if_exists=True)

    @contextmanager
    def claim_lock(self) -> Iterator[None]:
        """Hold the study's claim lock: one process at a time takes a trial, or writes the loss's result files."""
        from rankcli.formats.atomic import FileLock

        with FileLock(self.dir / CLAIM_LOCK):
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
                attrs = {k: v for k, v in t.user_attrs.items() if k in ("defaults",)}
                self.study.enqueue_trial(dict(t.params), user_attrs={**attrs, "retry_of": t.number})

    def open_slots(self) -> int:
        """Trials still to take (the budget less the trials finished or running in a live process), without the lock:
        a hint only."""
        from optuna.trial import TrialState

        return self.budget - sum(t.state == TrialState.COMPLETE or (t.state == TrialState.RUNNING and
                                                                     self.worker.alive(t.user_attrs.get("worker")))
                                 for t in self.trials())

    def claim(self) -> Claimed | None:
        """Take the next trial, with its parameters; ``None`` once the budget is finished or running."""
        import optuna
        from optuna.trial import TrialState

        with self.claim_lock():
            trials = self.trials()
            self._recover(trials)
            trials = self.trials()
            taken = sum(t.state in (TrialState.COMPLETE, TrialState.RUNNING) for t in trials)
            if taken >= self.budget:
                return None
            self.study.sampler = optuna.samplers.TPESampler(seed=sampler_seed(self.seed, self.space.loss, taken),
                                                            n_startup_trials=startup_trials(self.budget))
            trial = self.study.ask()
            trial.set_user_attr("worker", self.worker.id)
            params = self.space.suggest(trial)
            return Claimed(trial, params, trial.user_attrs.get("retry_of"))

    def finish(self, claimed: Claimed, value: float, attrs: dict[str, Any]) -> None:
        """Record a trained trial: its validation ``value`` and ``attrs`` (trees, seconds, ...)."""
        from optuna.trial import TrialState

        claimed.trial.set_user_attr("outcome", attrs)  # one journal entry
        if value is None or not math.isfinite(value):
            self.study.tell(claimed.trial, state=TrialState.FAIL)
        else:
            self.study.tell(claimed.trial, float(value))

    def fail(self, claimed: Claimed, message: str) -> None:
        """Record a trial whose training raised an error (it is not run again)."""
        from optuna.trial import TrialState

        claimed.trial.set_user_attr("error", message[:500])
        self.study.tell(claimed.trial, state=TrialState.FAIL)

