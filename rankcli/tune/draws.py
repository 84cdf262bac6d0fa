"""How a tuning trial's parameters are drawn, and when a study gives up: one definition for ``rankcli tune`` and
``experiment --tune``.

**Draws.** Trials are numbered by draw: draw 0 is ``train``'s own parameters, and every later trial, finished or
failed, takes the next draw, so a trial without a finite validation value never makes the sampler propose the same
parameters again. A trial whose process died is not a draw of its own: its parameters run again in its place.

**Start-up draws** (while fewer than :func:`startup_trials` trials have finished) are rankcli's, not Optuna's
``RandomSampler``'s: each searched dimension's value comes from its own generator seeded by ``(seed, draw, the
dimension's name)``, uniform on the dimension's scale (a log scale uniform in the logarithm). The k-th start-up draw
of every loss therefore has the same value in every dimension the losses share (same name and range), whatever each
loss searches besides: equal budgets and seeds leave the loss, and its own parameters, as the difference. Optuna's
random sampler draws the parameters one after another from one stream, so a loss with one dimension more before
them would shift every later value.

**Modelled draws** come from Optuna's ``TPESampler`` with ``multivariate=True`` (one joint density over the
dimensions every trial draws, Optuna 5's default for one objective, set here explicitly), seeded from ``(seed,
draw)``: the seed does not name the loss either. A conditional dimension (LambdaLoss's ``mu``, drawn only with
``ndcg-loss2++``) is outside that joint space and TPE models it alone, over the trials that drew it (Optuna's
``group=True`` would model it jointly, but is experimental in Optuna 5).

**Failures.** A trial whose validation value is not finite (FAIL) does not count against the budget, which counts
finished trials; ``max_failures`` such trials in a row end the study (:func:`failure_streak`), so that a space whose
every point fails cannot train forever.
"""

from __future__ import annotations

import math
import zlib
from typing import Any, NamedTuple

import numpy as np

from rankcli.errors import InputError

#: What the identity of a study records of the sampler: a study drawn otherwise is not resumed by this one.
SAMPLER = "tpe-multivariate/startup-per-dimension/seed-per-draw"
#: Trials without a finite validation value in a row that end a loss's study (``--max-failures``).
DEFAULT_MAX_FAILURES = 10
_STARTUP_KEY = 6  # spawn keys: 4 was the sampler seed of a scheme that named the loss
_SAMPLER_KEY = 7


def startup_trials(budget: int) -> int:
    """Random start-up trials for a budget of ``budget`` trials: a quarter of it, at least 2 and at most 10.

    Trial 0 (``train``'s defaults) is one of them. A budget of 10 thus samples 1 more point at random and lets TPE
    choose the other 8; a budget of 100 explores 10 points first (Optuna's own default) before TPE takes over.
    """
    return max(2, min(10, budget // 4))


def sampler_seed(seed: int, draw: int) -> int:
    """The seed of the TPE sampler that makes draw ``draw`` under ``seed`` (the same for every loss)."""
    ss = np.random.SeedSequence(seed, spawn_key=(_SAMPLER_KEY, draw))
    return int(ss.generate_state(1, dtype=np.uint32)[0] % (2**31 - 1))


def uniform(seed: int, draw: int, name: str) -> float:
    """The uniform number in [0, 1) behind dimension ``name``'s value at start-up draw ``draw`` under ``seed``."""
    ss = np.random.SeedSequence(seed, spawn_key=(_STARTUP_KEY, draw, zlib.crc32(name.encode())))
    return float(np.random.Generator(np.random.PCG64(ss)).random())


def startup_value(dim: Any, u: float) -> Any:
    """The value of the searched dimension ``dim`` (a :class:`~rankcli.tune.space.Dimension`) at the uniform number
    ``u``: a choice with probability ``1/len(choices)`` each; a number uniform on its scale, an integer rounded from
    the range widened by half a unit at each end (as Optuna draws integers), clipped into the range."""
    if dim.choices is not None:
        return dim.choices[min(int(u * len(dim.choices)), len(dim.choices) - 1)]
    low, high = float(dim.low), float(dim.high)
    if dim.integer:
        low, high = low - 0.5, high + 0.5
    if dim.log:  # low > 0 (a log range starts above 0; an integer one at 1 or more, so low - 0.5 >= 0.5)
        x = math.exp(math.log(low) * (1 - u) + math.log(high) * u)
    else:
        x = low * (1 - u) + high * u
    if dim.integer:
        return int(min(max(round(x), int(dim.low)), int(dim.high)))
    return min(max(x, float(dim.low)), float(dim.high))


def startup_point(space: Any, seed: int, draw: int) -> dict[str, Any]:
    """The parameters of start-up draw ``draw`` in ``space`` (a :class:`~rankcli.tune.space.Space`): every searched
    dimension from its own stream, a conditional one only where its condition holds."""
    values: dict[str, Any] = {}
    for d in space.searched:
        if d.applies(values):
            values[d.name] = startup_value(d, uniform(seed, draw, d.name))
    return values


def tpe_sampler(seed: int, draw: int, budget: int):
    """Optuna's ``TPESampler`` for draw ``draw``: multivariate, seeded per draw."""
    import optuna

    return optuna.samplers.TPESampler(seed=sampler_seed(seed, draw), n_startup_trials=startup_trials(budget),
                                      multivariate=True)


def ask(study: Any, space: Any, seed: int, draw: int, budget: int, finished: int):
    """Optuna's next trial of ``study`` at draw ``draw`` (``finished`` trials have a value): a waiting trial first
    (``train``'s parameters, a dead process's trial run again), else a start-up draw while fewer than
    :func:`startup_trials` trials have finished, else TPE's."""
    from optuna.trial import TrialState

    waiting = study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
    if not waiting and finished < startup_trials(budget):
        study.enqueue_trial(startup_point(space, seed, draw), user_attrs={"startup": draw})
    study.sampler = tpe_sampler(seed, draw, budget)
    return study.ask()


def show_params(params: dict) -> str:
    """``name=value, ...`` for messages and logs."""
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())


def value_text(value: Any) -> str:
    """How messages and trials.csv show a validation value that is not finite: ``nan``, ``inf``, ``-inf``, or ``no
    value`` (no model to value)."""
    return "no value" if value is None else repr(float(value))


class Failure(NamedTuple):
    """A run of failed trials ending a study: how many in a row, and the last one's number, parameters and value."""

    count: int
    trial: int
    params: dict
    value: str


def failure_streak(records: list[dict]) -> Failure | None:
    """The failed trials that close ``records`` (trial records in number order: ``state``, ``trial``, ``params``,
    ``invalid``, the value text of a trial whose value was not finite), or ``None`` when the last trial with an
    outcome finished. A trial without an outcome (running, waiting, or left by a dead process) is passed over."""
    streak: Failure | None = None
    for r in records:
        if r["state"] == "COMPLETE":
            streak = None
        elif r["state"] == "FAIL" and r.get("invalid") is not None:
            streak = Failure((streak.count if streak else 0) + 1, r["trial"], r["params"], r["invalid"])
    return streak


def failures_error(loss: str, failure: Failure, select_by: str, max_failures: int, option: bool = True) -> InputError:
    """The error (exit 3) of a study ended by ``failure``: the loss, the count, the last parameters and value."""
    limit = f"--max-failures {max_failures}" if option else f"{max_failures}, rankcli tune's --max-failures default"
    return InputError(
        f"--loss {loss}: {failure.count} trials in a row had no finite validation {select_by} (the last, trial "
        f"{failure.trial}: {show_params(failure.params)}, gave {failure.value}), so its study ends there ({limit}); "
        "narrow the search space away from those parameters (--space) or check the data")
