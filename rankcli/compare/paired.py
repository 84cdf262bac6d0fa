"""The paired tests of ``rankcli compare`` on per-query values that are already aligned: every pair of runs on every
metric, one family for the multiple-testing correction. ``rankcli experiment`` runs its tests through
:func:`compare_values` too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from rankcli.core import stats
from rankcli.errors import UsageError


@dataclass
class Comparison:
    """``b`` tested against ``a`` on one metric."""

    a: str
    b: str
    metric: str
    mean_a: float
    mean_b: float
    result: stats.PairedTestResult              # paired_test(b, a): mean_diff = mean(b) - mean(a)
    p_adjusted: float
    significant: bool
    wins: int
    ties: int
    losses: int
    #: the per-query differences ``b - a`` over the queries used (what ``compare --plot`` draws; not in the JSON)
    differences: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def difference(self) -> float:
        """``mean(b) - mean(a)`` over the queries used."""
        return self.result.mean_diff

    @property
    def decision(self) -> str:
        """``better`` / ``worse`` (``b`` against ``a``, significant), ``not significant`` or ``not testable``."""
        if not self.result.testable:
            return "not testable"
        if not self.significant:
            return "not significant"
        return "better" if self.difference > 0 else "worse"

    def as_dict(self) -> dict:
        """One entry of the report's ``comparisons`` (JSON)."""
        r = self.result
        return {
            "a": self.a, "b": self.b, "metric": self.metric, "n": r.n,
            "mean_a": self.mean_a, "mean_b": self.mean_b, "difference": r.mean_diff, "stderr": r.stderr,
            "ci_low": r.ci_low, "ci_high": r.ci_high, "test": r.test, "exact": r.exact, "statistic": r.statistic,
            "p_value": r.p_value, "p_adjusted": self.p_adjusted, "significant": self.significant,
            "decision": self.decision, "reason": r.reason, "wins": self.wins, "ties": self.ties,
            "losses": self.losses,
        }



class PairedComparisons(NamedTuple):
    """What :func:`compare_values` returns (a tuple, so ``means, used, comparisons, correction = ...`` works)."""

    means: dict[str, dict[str, float]]   # run -> metric -> mean over the queries used
    used: dict[str, int]                 # metric -> queries where every run has a value
    comparisons: list[Comparison]        # in order: pairs, then metrics
    correction: str                      # the correction applied


def pairs_for(names: Sequence[str], baseline: str | None) -> list[tuple[str, str]]:
    """The pairs ``(a, b)`` compare tests: every other run against ``baseline``, or without one every pair with ``a``
    given before ``b``.

    Parameters
    ----------
    names : the runs, in order. baseline : one of them, or None.
    """
    if baseline is not None:
        return [(baseline, n) for n in names if n != baseline]
    return [(names[i], names[j]) for i in range(len(names)) for j in range(i + 1, len(names))]


def _check_options(test: str, test_train_ratio: float | None, correction: str | None, alpha: float) -> None:
    if test not in stats.TESTS and test != stats.CORRECTED_TTEST:
        raise UsageError(f"unknown test {test!r}; choose one of {', '.join(stats.TESTS)}")
    if (test == stats.CORRECTED_TTEST) != (test_train_ratio is not None):
        raise UsageError(f"{stats.CORRECTED_TTEST} needs test_train_ratio (n_test/n_train of the trials), and only "
                         f"it takes one; got test {test!r} with test_train_ratio {test_train_ratio!r}")
    if correction is not None and correction not in stats.CORRECTIONS:
        raise UsageError(f"unknown correction {correction!r}; choose one of {', '.join(stats.CORRECTIONS)}")
    if not 0.0 < alpha < 1.0:
        raise UsageError(f"--alpha must be between 0 and 1, got {alpha}")


def compare_values(values: dict[str, dict[str, np.ndarray]], metrics: Sequence[str], *,
                   pairs: Sequence[tuple[str, str]] | None = None, baseline: str | None = None, test: str = "ttest",
                   alpha: float = 0.01, correction: str | None = None, seed: int = 0,
                   permutations: int = 10000, test_train_ratio: float | None = None) -> PairedComparisons:
    """Test aligned per-query values: ``values[run][metric]`` are vectors over the same queries (NaN = no value).

    For each metric only the queries where every run of ``values`` has a value are used, for the means and for every
    test. Each pair ``(a, b)`` is tested with ``stats.paired_test(b, a)`` (``difference = mean(b) - mean(a)``); the
    p-values of all (pair, metric) tests form one family for the correction, and a comparison is significant when
    its adjusted p-value is below ``alpha``.

    Parameters
    ----------
    values : run -> metric -> (n_queries,) float64, the same queries in the same order for every run.
    metrics : the metrics to test (keys of every ``values[run]``).
    pairs : the ``(a, b)`` pairs to test, in order; default :func:`pairs_for` ``(list(values), baseline)``.
    baseline : the run every other run is tested against when ``pairs`` is not given (None: every pair).
    test : one of :data:`rankcli.core.stats.TESTS`, or ``corrected-ttest`` (:func:`rankcli.core.stats.corrected_ttest`)
        for values that are trials of repeated random splits (``rankcli experiment``), with ``test_train_ratio``.
    alpha : the significance level of the adjusted p-values (and the level the bootstrap interval inverts).
    correction : one of :data:`rankcli.core.stats.CORRECTIONS`; None: holm for more than one testable test, else none.
    seed : the random tests draw from ``numpy.random.default_rng([seed, pair index, metric index])``.
    permutations : sign vectors (permutation test) or resamples (bootstrap).
    test_train_ratio : ``n_test / n_train`` of the trials, for ``corrected-ttest`` only.

    Returns
    -------
    :class:`PairedComparisons` ``(means, used, comparisons, correction)``.
    """
    _check_options(test, test_train_ratio, correction, alpha)
    names = list(values)
    masks = {}
    means: dict[str, dict[str, float]] = {n: {} for n in names}
    used = {}
    for m in metrics:
        mask = np.logical_and.reduce([~np.isnan(values[n][m]) for n in names])
        masks[m] = mask
        used[m] = int(mask.sum())
        for n in names:
            means[n][m] = float(values[n][m][mask].mean()) if used[m] else float("nan")
    comparisons = []
    for pi, (a, b) in enumerate(pairs_for(names, baseline) if pairs is None else pairs):
        for mi, m in enumerate(metrics):
            va, vb = values[a][m][masks[m]], values[b][m][masks[m]]
            rng = np.random.default_rng([seed, pi, mi])  # one per test: each result is reproducible on its own
            if test == stats.CORRECTED_TTEST:
                result = stats.corrected_ttest(vb, va, test_train_ratio, alpha=alpha)
            else:  # alpha: the bootstrap interval is then the one its p-value inverts (excludes 0 iff p < alpha)
                result = stats.paired_test(vb, va, test, rng=rng, permutations=permutations, alpha=alpha)
            w, t, lo = stats.win_tie_loss(vb, va)
            comparisons.append(Comparison(a, b, m, means[a][m], means[b][m], result, float("nan"), False, w, t, lo,
                                          differences=vb - va))
    testable = sum(1 for c in comparisons if c.result.testable)
    if correction is None:
        correction = "holm" if testable > 1 else "none"
    adjusted = stats.adjust_pvalues([c.result.p_value for c in comparisons], correction)
    for c, p in zip(comparisons, adjusted):
        c.p_adjusted = float(p)
        c.significant = bool(not math.isnan(p) and p < alpha)
    return PairedComparisons(means, used, comparisons, correction)
