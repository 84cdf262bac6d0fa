"""Rank fusion: several runs' rankings of the same queries combined into one, vectorised over all queries.

The steps, each a module:

1. :mod:`~rankcli.core.fusion.align`: the runs (:class:`RunRows`, rows grouped by query) aligned on their documents
   per query: the *candidates* (the union over the runs) and, per run and candidate, its score and rank
   (:class:`Aligned`). Ranks: score descending (ascending under ``min-max-inverted``), equal scores by document id
   descending (:mod:`~rankcli.core.fusion.order`);
2. :mod:`~rankcli.core.fusion.normalize`: each run's scores normalised per query (:class:`Evidence`);
3. a method of :mod:`~rankcli.core.fusion.registry` (score-based in :mod:`~rankcli.core.fusion.combine`,
   rank-based in :mod:`~rankcli.core.fusion.ranked` and :mod:`~rankcli.core.fusion.condorcet`, trained in
   :mod:`~rankcli.core.fusion.trained`): the fused score of every candidate;
4. :func:`ranking`: the fused run's order, equal fused scores by document id descending.

:func:`prepare` does 1-2, :func:`combine` 3. ``--optimize``'s candidates are :mod:`~rankcli.core.fusion.grid`'s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from rankcli.core.fusion.align import Aligned, RunRows, align
from rankcli.core.fusion.normalize import NORMALIZATIONS, Evidence, canonical, normalize
from rankcli.core.fusion.order import order_within, ranks_of
from rankcli.core.fusion.registry import ALIASES, METHODS, Method, Param, method
from rankcli.errors import InputError, UsageError

__all__ = ["ALIASES", "Aligned", "Evidence", "METHODS", "Method", "NORMALIZATIONS", "Param", "RunRows", "align",
           "canonical", "combine", "method", "normalize", "prepare", "ranking", "resolve_params"]


def prepare(runs: Sequence[RunRows], n_queries: int, normalization: str = "min-max", *, depth: int | None = None,
            query_names=None, scores: bool = True) -> tuple[Evidence, list[RunRows]]:
    """The runs aligned and normalised: what every method reads.

    Parameters
    ----------
    runs : the runs, queries numbered ``0..n_queries-1`` in one numbering.
    normalization : one of :data:`NORMALIZATIONS` (or an alias). ``min-max-inverted`` also ranks each run with its
        lowest score first.
    depth : keep each run's ``depth`` best documents per query (None: all), before normalising.
    query_names : per query number, its name for error messages.
    scores : normalise the scores; without, the evidence has none (a method that ``reads`` only ``ranks`` needs
        none).

    Returns
    -------
    The evidence, and the runs as fused (cut to ``depth``), whose rows ``evidence.aligned.columns`` place.
    """
    normalization = canonical(normalization)
    ascending = normalization == "min-max-inverted"
    ranks = [run.ranks(ascending=ascending) for run in runs]
    if depth is not None:
        cut = [run.top(depth, rk) for run, rk in zip(runs, ranks)]
        runs, ranks = [c[0] for c in cut], [c[1] for c in cut]
    aligned = align(runs, n_queries, ranks, query_names=query_names)
    if not scores:
        return Evidence(aligned, np.zeros((0, 0)), np.zeros((0, 0), dtype=bool), normalization), list(runs)
    return normalize(aligned, runs, ranks, normalization), list(runs)


def _checked_value(m: Method, p: Param, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise UsageError(f"{m.name}: {p.name} must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise UsageError(f"{m.name}: {p.name} must be finite, got {value!r}")
    if p.integer and v != int(v):
        raise UsageError(f"{m.name}: {p.name} must be an integer, got {value!r}")
    if (p.low is not None and v < p.low) or (p.high is not None and v > p.high):
        bounds = f"at least {p.low:g}" if p.high is None else f"in [{p.low:g}, {p.high:g}]"
        raise UsageError(f"{m.name}: {p.name} must be {bounds}, got {value!r}")
    return int(v) if p.integer or (p.name == "k" and v == int(v)) else v


def resolve_params(m: Method, given: dict, n_runs: int, *, partial: bool = False) -> dict:
    """The parameters ``m`` runs with: those ``given`` (checked), else each one's default; equal weights by default.
    A parameter of another method, a missing required one (unless ``partial``: only the given ones are checked and
    returned) or a bad value is a :class:`UsageError`."""
    extra = sorted(set(given) - set(m.param_names))
    if extra:
        raise UsageError(f"{m.name} takes no {', '.join(extra)}" +
                         (f" (its parameters: {', '.join(m.param_names)})" if m.params else ""))
    out = {}
    for p in m.params:
        if partial and p.name not in given:
            continue
        value = given.get(p.name, p.default)
        if p.name == "weights":
            value = [1.0 / n_runs] * n_runs if value is None else list(value)
            if len(value) != n_runs:
                raise UsageError(f"{m.name}: {len(value)} weights for {n_runs} runs; give one per run, in order")
            out[p.name] = tuple(_checked_value(m, p, w) for w in value)
            continue
        if value is None:
            raise UsageError(f"{m.name} needs --{p.name} ({p.doc}), or --optimize to choose it")
        out[p.name] = _checked_value(m, p, value)
    return out


def combine(ev: Evidence, m: Method | str, params: dict, model: dict | None = None) -> np.ndarray:
    """The fused score of every candidate under method ``m`` with ``params`` (see :func:`resolve_params`) and, for a
    trained method, ``model`` (:func:`rankcli.core.fusion.trained.train`). A fused score that is not finite is an
    :class:`InputError`."""
    m = method(m) if isinstance(m, str) else m
    if m.trained and model is None:
        raise UsageError(f"{m.name} is trained: give it judged training queries (--train-qrels)")
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused below
        fused = m.fn(ev, params, model) if m.trained else m.fn(ev, params)
    fused = np.asarray(fused, dtype=np.float64)
    bad = ~np.isfinite(fused)
    if bad.any():
        c = int(np.flatnonzero(bad)[0])
        raise InputError(f"{m.name} gives document {ev.aligned.names[c].decode(errors='replace')!r} a non-finite fused "
                         f"score ({fused[c]}): the scores are too large to combine; rescale them or normalize")
    return fused


def ranking(ev: Evidence, fused: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The fused run's order (a permutation of the candidates, query by query, best first; equal fused scores by
    document id descending) and each candidate's 1-based rank."""
    perm = order_within(fused, ev.aligned.offsets, ev.aligned.names)
    return perm, ranks_of(perm, ev.aligned.offsets)
