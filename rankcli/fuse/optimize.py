"""``rankcli fuse --optimize``: an exact grid search of a method's parameters on judged queries, and ``--folds``
cross-validation of that choice by query.

Every parameter set of :func:`rankcli.core.fusion.grid.candidates` is fused and scored on every optimisation query
(:class:`rankcli.fuse.scoring.Scorer`); the chosen set has the best mean, equal means going to the later set (ranx's
rule, ``>=``). With ``folds``, the queries are dealt into folds by a seeded permutation; for each fold the set with
the best mean on the other folds is chosen (a trained method trained on the other folds only) and scored on the
fold: the out-of-fold score, the mean over every query of its held-out value, is the one that was not tuned on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rankcli.core.fusion import Evidence, Method, combine
from rankcli.core.fusion.grid import candidates
from rankcli.core.fusion.trained import hit_lists, train
from rankcli.errors import InputError, UsageError
from rankcli.fuse.judgments import Judgments
from rankcli.fuse.scoring import Scorer


@dataclass
class Trainer:
    """A trained method's training: the hit lists of ``ev``'s runs on judged queries, then what the method learns."""

    method: Method
    ev: Evidence
    judg: Judgments
    threshold: float

    def model(self, params: dict, queries: np.ndarray) -> dict:
        """What the method learns with ``params`` from the queries ``queries`` (numbers)."""
        relevant = self.judg.judged & (self.judg.labels >= self.threshold)
        n_rel = self.judg.n_relevant(self.ev.aligned.offsets, self.threshold)[queries]
        return train(self.method.name, hit_lists(self.ev, relevant, np.asarray(queries), n_rel), params)


@dataclass
class Optimization:
    """The search: every parameter set tried and its mean on the optimisation queries, the chosen one (``best``),
    and with folds each fold's choice and held-out score and the out-of-fold score."""

    metric: str
    convention: dict
    sets: list[dict]
    means: np.ndarray
    best: int
    queries: int
    folds: list[dict] = field(default_factory=list)
    out_of_fold: float | None = None
    seed: int | None = None

    @property
    def params(self) -> dict:
        """The chosen parameter set."""
        return self.sets[self.best]

    def as_dict(self) -> dict:
        """The search as ``--json`` prints it."""
        return {"metric": self.metric, "convention": self.convention, "queries": self.queries,
                "chosen": _jsonable(self.params), "score": float(self.means[self.best]),
                "candidates": [{"params": _jsonable(s), "score": _num(m)} for s, m in zip(self.sets, self.means)],
                "folds": self.folds, "out_of_fold": self.out_of_fold, "seed": self.seed}


def _num(x) -> float | None:
    return None if x is None or np.isnan(x) else float(x)


def _jsonable(params: dict) -> dict:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in params.items()}


def grid_values(ev: Evidence, method: Method, sets: list[dict], scorer: Scorer, trainer: Trainer | None,
                train_queries: np.ndarray) -> np.ndarray:
    """``(sets, queries)``: each parameter set's value on each of ``scorer``'s queries (a trained method trained on
    ``train_queries``)."""
    out = np.empty((len(sets), scorer.n_queries))
    for i, params in enumerate(sets):
        model = trainer.model(params, train_queries) if method.trained else None
        out[i] = scorer.per_query(combine(ev, method, params, model))
    return out


def best_of(values: np.ndarray, positions: np.ndarray) -> tuple[int, np.ndarray]:
    """The set with the best mean over the queries at ``positions`` (NaN values skipped; equal means: the later
    set), and every set's mean."""
    sub = values[:, positions]
    counted = (~np.isnan(sub)).sum(axis=1)
    if not counted.any():
        raise InputError("no optimisation query has a value for the metric (each has no relevant document, and the "
                         "convention skips such queries); choose another --convention or more queries")
    with np.errstate(invalid="ignore"):
        means = np.where(counted > 0, np.nansum(sub, axis=1) / np.maximum(counted, 1), np.nan)
    top = np.nanmax(means)
    return int(np.flatnonzero(means == top)[-1]), means


def _deal(n: int, folds: int, seed: int) -> np.ndarray:
    if not 2 <= folds <= n:
        raise UsageError(f"--folds must be between 2 and the number of optimisation queries ({n}), got {folds}")
    fold = np.empty(n, dtype=np.int64)
    fold[np.random.default_rng(seed).permutation(n)] = np.arange(n) % folds
    return fold


def optimize(ev: Evidence, method: Method, scorer: Scorer, trainer: Trainer | None, *, step: float,
             fixed: dict, folds: int | None = None, seed: int = 0) -> Optimization:
    """The grid search of ``method``'s free parameters (those not in ``fixed``) on ``scorer``'s queries; see the
    module docstring."""
    sets = candidates(method, ev.n_runs, step, fixed)
    everything = np.arange(scorer.n_queries)
    values = grid_values(ev, method, sets, scorer, trainer, scorer.queries)
    best, means = best_of(values, everything)
    result = Optimization(str(scorer.spec), scorer.convention.as_dict(), sets, means, best, scorer.n_queries,
                          seed=seed if folds is not None else None)
    if folds is not None:
        fold_of = _deal(scorer.n_queries, folds, seed)
        held = np.full(scorer.n_queries, np.nan)
        for k in range(folds):
            inside, out = np.flatnonzero(fold_of != k), np.flatnonzero(fold_of == k)
            vals = values
            if method.trained:  # trained on the other folds only
                vals = grid_values(ev, method, sets, scorer, trainer, scorer.queries[inside])
            chosen, _ = best_of(vals, inside)
            held[out] = vals[chosen, out]
            result.folds.append({"fold": k + 1, "queries": int(out.shape[0]), "params": _jsonable(sets[chosen]),
                                 "score": _num(np.nanmean(held[out]) if (~np.isnan(held[out])).any() else None)})
        result.out_of_fold = _num(np.nanmean(held) if (~np.isnan(held)).any() else None)
    return result
