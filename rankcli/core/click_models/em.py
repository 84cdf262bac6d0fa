"""The estimation driver every click model shares: closed-form counts, or EM with PyClick's parameterisation.

Every parameter is ``(a + sum of numerator contributions) / (b + sum of denominator contributions)``, ``a / b`` the
prior (:class:`~rankcli.core.click_models.base.Prior`, 1/2 by default). A closed-form model's contributions are
counts, summed once. An EM model's are the E-step's expectations under the current values: each iteration sums them
afresh from the prior (PyClick's ``EMInference`` starts every iteration from a copy of the initial model) and the
M-step takes the ratio, capped at ``1 - cap``. The sums run block by block (:mod:`~.sessions`) and are additive
(:class:`Sums`), so that a cluster can compute them per partition of sessions and add them up
(:func:`e_step_sums`; :func:`fit` takes a ``runner`` that computes them elsewhere).

The log-likelihood is recorded per iteration: ``log_likelihood[k]`` is the log's (natural log, summed over
sessions) under the values after ``k`` iterations, ``k = 0 .. iterations``. With a ``tolerance``, the iterations stop
once the log-likelihood per session improves by less than it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from rankcli.core.click_models.base import (
    E_STEPS,
    ITEM,
    RANK,
    RANK_PREV,
    SINGLE,
    ClickModel,
    Prior,
    family_size,
)
from rankcli.core.click_models.sessions import Block, Sessions
from rankcli.errors import InputError, UsageError

#: Cells an item family's contributions are buffered for before they are summed per item (one ``bincount``).
ITEM_BUFFER = 1 << 22


@dataclass(frozen=True)
class Layout:
    """The sizes of a fit's parameter arrays."""

    n_items: int
    max_rank: int
    n_groups: int = 1

    def size(self, kind: str) -> int:
        """Parameters of a family of ``kind``."""
        return family_size(kind, self.n_items, self.max_rank, self.n_groups)


@dataclass
class Sums:
    """The contributions summed per parameter (an E-step's, or the counts), and the log-likelihood under the values
    they were computed with. Additive: the sums of two partitions of the sessions add up to the sums of both."""

    num: dict[str, np.ndarray]
    den: dict[str, np.ndarray]
    loglik: float = 0.0

    def __iadd__(self, other: Sums) -> Sums:
        for name, v in other.num.items():
            self.num[name] += v
        for name, v in other.den.items():
            self.den[name] += v
        self.loglik += other.loglik
        return self


@dataclass
class FitResult:
    """A fitted model's parameters and how they were reached."""

    values: dict[str, np.ndarray]
    denominators: dict[str, np.ndarray]  # the data behind each parameter (without the prior's pseudo-count)
    log_likelihood: list[float] = field(default_factory=list)
    iterations: int = 0
    converged: bool = False


def initial_values(model: ClickModel, layout: Layout, prior: Prior) -> dict[str, np.ndarray]:
    """Every parameter at the prior's mean."""
    return {f.name: np.full(layout.size(f.kind), prior.mean) for f in model.families}


def gather(model: ClickModel, values: dict[str, np.ndarray], b: Block, layout: Layout) -> dict[str, np.ndarray]:
    """Each family's values for the block's cells, broadcastable to ``(L, m)``."""
    out = {}
    for f in model.families:
        v = values[f.name]
        if f.kind == ITEM:
            out[f.name] = np.take(v, b.item)
        else:
            out[f.name] = v[_slots(f.kind, b, layout)]
        if f.kind == RANK_PREV:  # the whole grid too: UBM's full click probabilities sum over every previous click
            out[f"{f.name}:grid"] = v.reshape(-1, layout.max_rank, layout.max_rank)
    return out


def _slots(kind: str, b: Block, layout: Layout):
    """The parameter index of each cell for a family of ``kind`` other than per item (broadcastable to ``(L, m)``;
    a scalar for one global value)."""
    R = layout.max_rank
    if layout.n_groups == 1 or b.group is None:
        if kind == RANK:
            return b.rank
        return b.rank * R + b.previous_click if kind == RANK_PREV else 0
    g = b.group[None, :]
    if kind == RANK:
        return g * R + b.rank
    return g * R * R + b.rank * R + b.previous_click if kind == RANK_PREV else g


class _ItemSum:
    """Per-item sums of cell contributions, buffered so that one ``bincount`` covers many blocks."""

    def __init__(self, n_items: int, cells: int):
        self.n_items = n_items
        self.total = np.zeros(n_items)
        # never more than the blocks to sum hold: the same flushes (so the same sums), without a buffer larger than them
        self.capacity = min(max(ITEM_BUFFER, 2 * n_items), max(cells, 1))
        self.buffer: np.ndarray | None = None
        self.items: list[np.ndarray] = []
        self.fill = 0

    def add(self, items: np.ndarray, values: np.ndarray) -> None:
        n = items.size
        if 4 * self.n_items <= n or n > self.capacity:  # few items: summed at once
            self.total += np.bincount(items.ravel(), values.ravel(), minlength=self.n_items)
            return
        if self.fill + n > self.capacity:
            self.flush()
        if self.buffer is None:
            self.buffer = np.empty(self.capacity)
        self.buffer[self.fill:self.fill + n] = values.ravel()
        self.items.append(items.ravel())
        self.fill += n

    def flush(self) -> np.ndarray:
        if self.fill:
            self.total += np.bincount(np.concatenate(self.items), self.buffer[:self.fill], minlength=self.n_items)
        self.items, self.fill = [], 0
        return self.total


def _accumulate(kind: str, acc, b: Block, v: np.ndarray, layout: Layout) -> None:
    v = b.weigh(np.broadcast_to(v, (b.L, b.m)))
    if kind == ITEM:
        acc.add(b.item, v)
    elif layout.n_groups == 1 and kind == RANK:
        acc[:b.L] += v.sum(axis=1)
    elif layout.n_groups == 1 and kind == SINGLE:
        acc += v.sum()
    else:
        slots = np.broadcast_to(_slots(kind, b, layout), (b.L, b.m))
        acc += np.bincount(slots.ravel(), v.ravel(), minlength=acc.shape[0])


def e_step_sums(model: ClickModel, blocks: list[Block], values: dict[str, np.ndarray] | None, layout: Layout,
                e_step: str = "exact", dens: bool = True) -> Sums:
    """The contributions of ``blocks`` summed per parameter: an EM model's expectations under ``values``, or a
    closed-form model's counts (``values`` None). ``dens=False`` skips the denominators of the families whose
    denominators are static (an EM driver has them from its first iteration)."""
    cells = sum(b.item.size for b in blocks)
    num = {f.name: (_ItemSum(layout.n_items, cells) if f.kind == ITEM else np.zeros(layout.size(f.kind)))
           for f in model.families}
    den = {f.name: (_ItemSum(layout.n_items, cells) if f.kind == ITEM else np.zeros(layout.size(f.kind)))
           for f in model.families if dens or not f.static_den}
    loglik = 0.0
    for b in blocks:
        if model.em:
            contrib, ll = model.expectations(b, gather(model, values, b, layout), e_step)
            loglik += float(b.weigh(ll).sum())
        else:
            contrib = model.counts(b)
        for f in model.families:
            n, d = contrib[f.name]
            _accumulate(f.kind, num[f.name], b, n, layout)
            if f.name in den:
                _accumulate(f.kind, den[f.name], b, d, layout)
    done = {k: (v.flush() if isinstance(v, _ItemSum) else v) for k, v in num.items()}
    return Sums(done, {k: (v.flush() if isinstance(v, _ItemSum) else v) for k, v in den.items()}, loglik)


def ratio(sums: Sums, den: dict[str, np.ndarray], prior: Prior, capped: bool) -> dict[str, np.ndarray]:
    """The M-step: each parameter's ``(a + numerator) / (b + denominator)``, capped at ``1 - cap`` for EM."""
    out = {}
    for name, n in sums.num.items():
        v = (prior.numerator + n) / (prior.denominator + den[name])
        out[name] = np.minimum(v, 1.0 - prior.cap) if capped else v
    return out


def log_likelihood(model: ClickModel, blocks: list[Block], values: dict[str, np.ndarray], layout: Layout) -> float:
    """The log's log-likelihood (natural log, summed over sessions) under ``values``."""
    total = 0.0
    for b in blocks:
        cond, _ = model.probabilities(b, gather(model, values, b, layout))
        total += float(b.weigh(np.log(cond)).sum())
    return total


#: Blocks per partition of a :class:`LocalRunner`: partitions are summed apart (on threads) and then added in order,
#: so that the sums do not depend on the number of threads.
PARTITION_BLOCKS = 8


class LocalRunner:
    """Computes a fit's sums and log-likelihoods here, partition by partition of blocks, on ``threads`` threads
    (numpy's array operations release the GIL); a cluster's runner has the same methods."""

    def __init__(self, model: ClickModel, sessions: Sessions, layout: Layout, e_step: str = "exact",
                 threads: int = 1):
        self.model, self.layout, self.e_step = model, layout, e_step
        blocks = sessions.blocks()
        self.partitions = [blocks[i:i + PARTITION_BLOCKS] for i in range(0, len(blocks), PARTITION_BLOCKS)]
        self.n_sessions = sessions.n_sessions
        self.threads = max(1, min(int(threads), len(self.partitions)))

    def _reduce(self, fn, add):
        """``fn`` of every partition, folded with ``add`` in partition order; at most ``threads`` results wait at
        once (a partition's per-item sums are as large as the item vocabulary: all of them kept would multiply it
        by the number of partitions)."""
        if self.threads == 1:
            total = None
            for part in self.partitions:
                total = fn(part) if total is None else add(total, fn(part))
            return total

        total, pending = None, deque()
        with ThreadPoolExecutor(self.threads) as pool:
            for part in self.partitions:
                pending.append(pool.submit(fn, part))
                if len(pending) >= self.threads:
                    result = pending.popleft().result()
                    total = result if total is None else add(total, result)
            while pending:
                result = pending.popleft().result()
                total = result if total is None else add(total, result)
        return total

    def sums(self, values: dict[str, np.ndarray] | None, dens: bool) -> Sums:
        """:func:`e_step_sums` over every session."""
        def add(total: Sums, part: Sums) -> Sums:
            total += part
            return total

        return self._reduce(lambda blocks: e_step_sums(self.model, blocks, values, self.layout, self.e_step, dens),
                            add)

    def loglik(self, values: dict[str, np.ndarray]) -> float:
        """:func:`log_likelihood` over every session."""
        return float(self._reduce(lambda blocks: log_likelihood(self.model, blocks, values, self.layout),
                                  lambda a, b: a + b))


def _finite_loglik(loglik: float, prior: Prior) -> float:
    """``loglik``, finite: -inf means a click's probability underflowed to 0, which only a start near 0 does (EM's
    values stay at least ``numerator / (denominator + n)``)."""
    if not np.isfinite(loglik):
        raise UsageError(f"prior: the log-likelihood under the starting value {prior.mean:g} is {loglik}: the "
                         "probability of a click is below 1e-308 in floating point; start nearer 1/2")
    return loglik


def _check_finite(model: ClickModel, values: dict[str, np.ndarray], sessions: Sessions | None, prior: Prior) -> None:
    """EM's new values are all finite, or the log is refused: a chain model's posteriors are 0/0 where the
    probability of a session's clicks below a rank underflows (hundreds of clicks in one session, or a prior near 0)."""
    bad = [f.name for f in model.families if not np.isfinite(values[f.name]).all()]
    if bad:
        longest = f"sessions of up to {sessions.max_rank:,} results" if sessions is not None else "long sessions"
        raise InputError(f"{model.name}: the E-step's probabilities underflow floating point, and {', '.join(bad)} "
                         "cannot be estimated: the probability of a session's clicks below some rank is below 1e-308 "
                         f"({longest}, prior {prior.mean:g}); cut the sessions to fewer results, start nearer 1/2, "
                         "or fit pbm")


def fit(model: ClickModel, sessions: Sessions | None, *, iterations: int = 50, tolerance: float = 0.0,
        prior: Prior | None = None, e_step: str = "exact", layout: Layout | None = None,
        progress: Callable[[int, int, float], None] | None = None, runner=None, threads: int = 1) -> FitResult:
    """Estimate ``model``'s parameters from ``sessions``.

    Parameters
    ----------
    model : ClickModel
    sessions : Sessions
        The log (None when ``runner`` holds it).
    iterations : int
        EM iterations (PyClick's 50 by default); ignored by closed-form models.
    tolerance : float
        Stop once an iteration improves the log-likelihood per session by less than this (0: run every iteration).
    prior : Prior
        Starting values, pseudo-counts and the EM cap (PyClick's by default).
    e_step : "exact" or "pyclick"
        The E-step's posteriors (:data:`~rankcli.core.click_models.base.E_STEPS`).
    layout : Layout, optional
        Parameter array sizes (default: from ``sessions``).
    progress : callable, optional
        Called after each EM iteration with ``(iteration, iterations, log-likelihood before it)``.
    runner : optional
        What computes the sums and log-likelihoods over every session (a cluster's: ``sums(values, dens)``,
        ``loglik(values)``, ``n_sessions``); default :class:`LocalRunner` over ``sessions``.
    threads : int
        Threads of the default runner (the result does not depend on them).
    """
    prior = prior or Prior()
    if iterations < 1:
        raise UsageError(f"iterations: must be at least 1, got {iterations}")
    if tolerance < 0 or not np.isfinite(tolerance):
        raise UsageError(f"tolerance: must be a finite number >= 0, got {tolerance:g}")
    if e_step not in E_STEPS:
        raise UsageError(f"e_step: expected one of {', '.join(E_STEPS)}, got {e_step!r}")
    layout = layout or Layout(sessions.n_items, sessions.max_rank, sessions.n_groups)
    runner = runner or LocalRunner(model, sessions, layout, e_step, threads)
    if not model.em:
        sums = runner.sums(None, True)
        values = ratio(sums, sums.den, prior, capped=False)
        return FitResult(values, sums.den, [runner.loglik(values)], 0, True)
    values = initial_values(model, layout, prior)
    static: dict[str, np.ndarray] = {}
    history: list[float] = []
    converged, done = False, iterations
    for it in range(iterations):
        sums = runner.sums(values, not static)
        history.append(_finite_loglik(sums.loglik, prior))
        if tolerance > 0 and it > 0 and history[-1] - history[-2] < tolerance * max(runner.n_sessions, 1):
            converged, done = True, it
            break
        if not static:
            static = {f.name: sums.den[f.name] for f in model.families if f.static_den}
        values = ratio(sums, {**static, **sums.den}, prior, capped=True)
        _check_finite(model, values, sessions, prior)
        if progress is not None:
            progress(it + 1, iterations, history[-1])
    if not converged:
        history.append(runner.loglik(values))
    return FitResult(values, {**static, **sums.den}, history, done, converged)
