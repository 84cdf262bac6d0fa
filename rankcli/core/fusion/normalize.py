"""The score normalisations applied to each run, query by query, before a score-based fusion (ranx's set).

Each is computed over the documents the run lists for the query (``n`` of them; ``N`` is the query's number of
candidates, the union over the runs), as ranx computes it, its quirks included:

- ``min-max``: ``(s - min) / max(max - min, 1e-9)``; the denominator is floored at 1e-9 as ranx floors it, so a
  query whose documents all have one score gets 0 for all of them.
- ``min-max-inverted``: ``(max - s) / max(max - min, 1e-9)``, for runs whose lower scores are better (distances); the
  run's ranking then reads lower scores first.
- ``max``: ``s / max(max, 1e-9)``.
- ``sum``: ``(s - min) / max(sum(s) - n * min, 1e-9)``.
- ``zmuv`` (alias ``zscore``): ``(s - mean) / max(std, 1e-9)``, the population standard deviation.
- ``rank``: ``1 - (rank - 1) / n``.
- ``borda``: ``1 - (rank - 1) / N`` for a listed document; every candidate the run does not list gets
  ``0.5 - (n - 1) / (2 N)`` (Borda's share of the points left), so the run then holds every candidate: CombMNZ and
  the other counts see ``N`` documents in every run, as in ranx. (Rank-based methods read the run's own list.)
- ``none``: the scores as they are.

A run that does not list a query at all lists none of its candidates (``n = 0``). Each run is normalised on its own
rows (queries contiguous), then its scores are placed in the ``(runs, candidates)`` matrix the methods read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rankcli.core.fusion.align import Aligned, RunRows
from rankcli.errors import InputError, UsageError

#: ranx's floor of every denominator.
FLOOR = 1e-9

NORMALIZATIONS = ("min-max", "min-max-inverted", "max", "sum", "zmuv", "rank", "borda", "none")
#: Other spellings accepted: ranx's underscores and ``rankcli convert``'s names.
ALIASES = {"minmax": "min-max", "min_max": "min-max", "min_max_inverted": "min-max-inverted",
           "minmax-inverted": "min-max-inverted", "zscore": "zmuv", "z-score": "zmuv"}


def canonical(name: str) -> str:
    """The normalisation a name or alias means; an unknown one is a :class:`UsageError` listing the choices."""
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in NORMALIZATIONS:
        raise UsageError(f"unknown normalization {name!r}; choose one of {', '.join(NORMALIZATIONS)} (aliases: "
                         f"{', '.join(sorted(ALIASES))})")
    return key


@dataclass
class Evidence:
    """What a fusion method sees: the aligned runs and their normalised scores.

    ``scores`` (``(runs, candidates)``): each run's normalised score of each candidate, 0 where the run does not hold
    it; ``present``: whether it holds it (the run's list, or every candidate after ``borda``). Rank-based methods
    read ``aligned.ranks``, ``aligned.listed`` and ``aligned.lengths`` (the runs' own lists).
    """

    aligned: Aligned
    scores: np.ndarray
    present: np.ndarray
    normalization: str

    @property
    def n_runs(self) -> int:
        """The number of runs."""
        return self.aligned.n_runs


def _segment(ufunc, values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``ufunc`` reduced over each (non-empty) query of one run's rows, repeated onto the rows."""
    sizes = np.diff(offsets)
    return np.repeat(ufunc.reduceat(values, offsets[:-1]), sizes) if values.shape[0] else values.copy()


def normalize_rows(run: RunRows, ranks: np.ndarray, how: str, candidates: np.ndarray | None = None) -> np.ndarray:
    """One run's normalised scores, per row (the module docstring). ``ranks``: the rows' ranks; ``candidates``: the
    number of candidates of each row's query (``borda``)."""
    s, off = run.scores, run.offsets
    n = np.repeat(np.diff(off), np.diff(off)).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        if how == "none":
            return s.copy()
        if how == "rank":
            return 1.0 - (ranks - 1) / n
        if how == "borda":
            return 1.0 - (ranks - 1) / candidates
        if how in ("min-max", "min-max-inverted", "sum"):
            mn = _segment(np.minimum, s, off)
            if how == "sum":
                return (s - mn) / np.maximum(_segment(np.add, s, off) - mn * n, FLOOR)
            mx = _segment(np.maximum, s, off)
            top = s - mn if how == "min-max" else mx - s
            return top / np.maximum(mx - mn, FLOOR)
        if how == "max":
            return s / np.maximum(_segment(np.maximum, s, off), FLOOR)
        mean = _segment(np.add, s, off) / n  # zmuv
        std = np.sqrt(_segment(np.add, (s - mean) ** 2, off) / n)
        return (s - mean) / np.maximum(std, FLOOR)


def normalize(al: Aligned, runs: Sequence[RunRows], ranks: Sequence[np.ndarray], how: str) -> Evidence:
    """The :class:`Evidence` of the aligned ``runs`` (their rows' ``ranks``) under normalisation ``how``; a normalised
    score that is not finite (scores so far apart that their difference overflows) is an :class:`InputError`."""
    how = canonical(how)
    scores = np.zeros(al.listed.shape)
    big_n = np.diff(al.offsets)
    query_of = np.repeat(np.arange(big_n.shape[0]), big_n)
    for r, (run, col) in enumerate(zip(runs, al.columns)):
        cands = big_n[query_of[col]].astype(np.float64) if how == "borda" else None
        values = normalize_rows(run, ranks[r], how, cands)
        bad = ~np.isfinite(values)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"{run.label or f'run {r + 1}'}: {how} normalization gives document "
                             f"{run.names[i].decode(errors='replace')!r} a non-finite score: its scores are too far "
                             "apart for floating point; rescale them or choose another --normalize")
        scores[r, col] = values
    present = al.listed
    if how == "borda":
        fill = 0.5 - (al.per_candidate(al.lengths).astype(np.float64) - 1) / (2 * al.per_candidate(big_n))
        scores = np.where(al.listed, scores, fill)
        present = np.ones_like(al.listed)
    return Evidence(al, scores, present, how)
