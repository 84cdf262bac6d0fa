"""Ranking importance: the drop in a ranking metric when a feature's values are permuted within each query.

For feature (or group) ``g``, repeat ``r`` and query ``q``: ``m_q`` is the metric of the model's ranking, ``m_q^{g,r}``
that of the ranking after permuting the values of ``g``'s columns among the documents of ``q`` (the rows of a group
move together), with the ``r``-th permutation. The drop of ``g`` on ``q`` is
``d_q^g = m_q - (1/R) sum_r m_q^{g,r}`` and its importance the mean over queries ``mean_q d_q^g``, with the standard
error ``sd(d^g) / sqrt(n)`` over the ``n`` queries that have a value (a query without a relevant document is skipped
under the ``paper`` convention). Permuting within a query keeps the query's distribution of the feature, so a
feature that only separates queries (which a ranking never compares) gets no credit.

The test of ``g`` is the paired test of ``m`` against the permuted mean ``(1/R) sum_r m^{g,r}`` over the queries
(:func:`rankcli.compare.compare_values`, the same tests and corrections as ``rankcli compare``): its null hypothesis
is that permuting ``g`` does not change the expected metric. The queries are the independent units; the repeats
only reduce the noise of each query's permuted value. The p-values of all groups form one family for the correction
(Holm by default).

Which tests hold, and why the signed-rank test needs ``R = 1`` (:func:`check_test`): when ``g`` is noise (independent
of the labels and of the other features, as on data the model was not fitted to), its values within a query are
exchangeable, so the model's metric and the ``R`` permuted metrics of a query are ``R + 1`` exchangeable values (given
the query and the multiset of ``g``'s values, independent draws of one distribution). Each drop ``d_q`` then has mean
0, which is all the t-test, the sign-flip permutation test of the mean and the studentized bootstrap need as the
queries grow. The signed-rank test needs more: ``d_q`` symmetric about 0. With ``R = 1``, ``d_q = m_q - m_q^{g,1}`` is
the difference of two exchangeable values, symmetric; with ``R > 1`` it is one value minus the mean of ``R`` others,
which is skewed when the metric's distribution is (a query whose metric rarely moves, and then far: most drops small
and of one sign, a few large of the other). The signed-rank test then detects the skew, not a drop, more surely the
more queries there are. No symmetric per-query statistic recovers the repeats: by exchangeability it must be
antisymmetric under swapping the model with one permuted value, and such a statistic compares the model with that one
value only (a query whose permuted values tie with each other would even have to count 0). So ``--test wilcoxon``
takes ``--repeats 1``. tests/explain/test_calibration.py shows each test within alpha under that null.

Speed: one model call per group and repeat, over the whole dataset (never per query); the columns of ``g`` are
permuted in place in the feature matrix and restored after the call. The ``r``-th permutation of every query is drawn
from ``numpy.random.default_rng([seed, r])`` and shared by all groups (common random numbers). A group whose features
the model never splits on cannot change a score: its drops are exactly 0 and its model calls are skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from rankcli.compare import Comparison, compare_values
from rankcli.core.groups import order_within
from rankcli.core.stats import TESTS
from rankcli.errors import UsageError
from rankcli.explain.contributions import query_batches
from rankcli.explain.grouping import FeatureGroup
from rankcli.explain.progress import timed

#: The labels of the model's own metric values among the compared "runs" (no group is named with a "#").
BASE = "#model"
#: Why ``--test wilcoxon`` takes ``--repeats 1`` only (the module docstring has the argument).
WILCOXON_REPEATS = ("the signed-rank test assumes each query's drop is symmetric about 0 when the feature is noise, "
                    "and with R > 1 permutations the drop (the model's metric minus the mean of R permuted ones) is "
                    "not: it is skewed, and the test rejects a noise feature too often, the more so the more queries. "
                    "Pass --repeats 1 with --test wilcoxon, "
                    "or keep the repeats with --test ttest, permutation or bootstrap, which test the mean drop and "
                    "hold with repeats")


def check_test(test: str, repeats: int) -> None:
    """Refuse (:class:`UsageError`, exit 2) an unknown ``test``, and ``wilcoxon`` with ``repeats > 1``
    (:data:`WILCOXON_REPEATS`), before any model call."""
    if test not in TESTS:
        raise UsageError(f"unknown test {test!r}; choose one of {', '.join(TESTS)}")
    if test == "wilcoxon" and repeats > 1:
        raise UsageError(f"--test wilcoxon with --repeats {repeats}: {WILCOXON_REPEATS}")


@dataclass
class RankingImportance:
    """The ranking importance of every group (in the groups' order), as :mod:`rankcli.explain.ranking` defines it."""

    metric: str
    convention: dict
    test: str
    correction: str
    repeats: int
    seed: int
    base: np.ndarray              # (n_queries,) the model's metric per query (NaN: skipped)
    permuted: np.ndarray          # (n_groups, n_queries) (1/R) sum_r m_q^{g,r} (NaN: skipped)
    comparisons: list[Comparison]  # per group: b = the model, a = permuted; difference = the mean drop

    @property
    def drops(self) -> np.ndarray:
        """``(n_groups, n_queries)``: each group's drop per query, ``d_q^g`` (NaN: skipped)."""
        return self.base[None, :] - self.permuted

    @property
    def mean(self) -> float:
        """The model's metric, averaged over the queries with a value."""
        values = self.base[~np.isnan(self.base)]
        return float(values.mean()) if values.shape[0] else float("nan")


def permutation(offsets: np.ndarray, seed: int, repeat: int) -> np.ndarray:
    """The ``repeat``-th within-query permutation of ``seed``: row indices ``perm`` such that ``x[perm]`` reorders
    each query's rows among themselves, uniformly at random (each query's rows sorted by independent uniform keys)."""
    n = int(offsets[-1])
    return order_within(np.random.default_rng([seed, repeat]).random(n), offsets)


def batch_permutation(offsets: np.ndarray, seed: int, repeat: int, first_row: int) -> np.ndarray:
    """:func:`permutation` restricted to a batch of whole queries that starts at row ``first_row`` of the data
    (``offsets``: the batch's, from 0): ``permutation(all, seed, repeat)[a:b] - a``, without drawing the keys of the
    other rows (PCG64 skips ``first_row`` draws; one draw per uniform key)."""
    rng = np.random.default_rng([seed, repeat])
    rng.bit_generator.advance(first_row)
    return order_within(rng.random(int(offsets[-1])), offsets)


def permuted_metrics(predict: Callable[[np.ndarray], np.ndarray], features: np.ndarray,
                      metric: Callable[[np.ndarray], np.ndarray], offsets: np.ndarray,
                      groups: Sequence[FeatureGroup], *, repeats: int, seed: int,
                      used: Sequence[bool] | None = None, on_step: Callable[[], None] | None = None,
                      base: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(base, permuted)``: the model's metric per query, and each group's metric per query averaged over the
    permutations, ``(1/R) sum_r m_q^{g,r}`` (module docstring); the drops are ``base - permuted``.

    Parameters
    ----------
    predict : scores of a feature matrix (one model call).
    features : (rows, n_features) the model's features; permuted in place column by column and restored (also when
        ``predict`` raises or the run is interrupted).
    metric : the metric per query of a score vector (NaN where a query is skipped).
    offsets : the queries.
    groups : the groups, each permuted as a whole.
    repeats, seed : the permutations, :func:`permutation` ``(offsets, seed, r)`` for ``r < repeats``.
    used : per group, whether the model splits on any of its features (False: no call, drops 0).
    on_step : called after each (group, repeat).
    base : the metric per query of the unpermuted features, when the caller has it (else one more model call).
    """
    if base is None:
        base = metric(predict(features))
    sums = np.zeros((len(groups), base.shape[0]))
    used = [True] * len(groups) if used is None else list(used)
    for r in range(repeats):
        perm = permutation(offsets, seed, r)
        for k, group in enumerate(groups):
            if used[k]:
                cols = list(group.columns)
                saved = [np.array(features[:, j]) for j in cols]
                try:
                    for j, col in zip(cols, saved):
                        features[:, j] = col[perm]
                    scores = predict(features)
                finally:
                    for j, col in zip(cols, saved):
                        features[:, j] = col
                sums[k] += metric(scores)
            else:
                sums[k] += base
            if on_step is not None:
                on_step()
    return base, sums / repeats


def drop_tests(base: np.ndarray, permuted: np.ndarray, metric: str, *, test: str, correction: str | None, seed: int,
               permutations: int, alpha: float = 0.01) -> tuple[list[Comparison], str]:
    """Each group's paired test of the model's metric ``base`` against its permuted mean (row ``g`` of
    ``permuted``), corrected over the groups: ``(comparisons in group order, the correction applied)``; a
    comparison's ``difference`` is the group's mean drop. ``test``, ``correction``, ``seed``, ``permutations`` and
    ``alpha`` as :func:`rankcli.compare.compare_values` takes them."""
    names = [f"#{k}" for k in range(permuted.shape[0])]
    values = {BASE: {metric: base}, **{n: {metric: row} for n, row in zip(names, permuted)}}
    result = compare_values(values, [metric], pairs=[(n, BASE) for n in names], test=test, alpha=alpha,
                            correction=correction, seed=seed, permutations=permutations)
    return result.comparisons, result.correction


def tree_permuted_metrics(scorer, booster, features: np.ndarray, metric: Callable[..., np.ndarray],
                          offsets: np.ndarray, groups: Sequence[FeatureGroup], *, repeats: int, seed: int,
                          used: Sequence[bool], base: np.ndarray, batch_rows: int, work=None) -> np.ndarray:
    """:func:`permuted_metrics`'s ``permuted`` (the same numbers: the same permutations, each query's metric summed
    over the repeats in the same order), with each group's permuted scores from the trees that read it only
    (:mod:`rankcli.explain.trees`), batch by batch of whole queries.

    ``scorer``: the model's :class:`~rankcli.explain.trees.TreeScorer`; ``booster`` the whole model (its leaf
    assignment); ``metric(scores, rows, offsets)``: the metric per query of ``scores`` for the data's rows ``rows``
    (a slice) whose queries are ``offsets``; ``work``: a :class:`~rankcli.explain.progress.Work` advanced by each
    model call's tree-rows. ``features`` is not changed (each batch is permuted in a copy)."""
    reading = [scorer.trees_reading(g.columns) if used[k] else None for k, g in enumerate(groups)]
    models = [None if r is None else scorer.submodel(r, whole=booster) for r in reading]
    sums = np.zeros((len(groups), base.shape[0]))
    q = 0
    for batch, boff in query_batches(features, offsets, batch_rows):
        a, nq = int(offsets[q]), boff.shape[0] - 1
        rows, queries = slice(a, a + batch.shape[0]), slice(q, q + nq)
        batch = np.array(batch, order="F")
        rest = _rests(scorer, booster, batch, reading, work)
        for r in range(repeats):
            perm = batch_permutation(boff, seed, r, a)
            for k, group in enumerate(groups):
                if models[k] is None:
                    sums[k, queries] += base[queries]
                    continue
                scores = _permuted_scores(models[k], batch, group.columns, perm, scorer.threads, rest[k], work,
                                          int(reading[k].sum()))
                sums[k, queries] += metric(scores, rows, boff)
        q += nq
    return sums / repeats


def _rests(scorer, booster, batch: np.ndarray, reading, work) -> list:
    """Per group, the sum of the leaf values of the trees that do not read it (None: every tree reads it, or the
    group is not used)."""
    if not any(r is not None and not r.all() for r in reading):
        return [None] * len(reading)
    with timed(work, "predict", batch.shape[0] * scorer.n_trees):
        values = scorer.leaf_matrix(booster, batch)
    return [None if r is None or r.all() else scorer.rest(values, r) for r in reading]


def _permuted_scores(model, batch: np.ndarray, columns, perm: np.ndarray, threads: int, rest, work, trees: int):
    """The scores of ``model`` on ``batch`` with ``columns`` permuted by ``perm`` (restored after), plus ``rest``."""
    saved = [np.array(batch[:, j]) for j in columns]
    try:
        for j, col in zip(columns, saved):
            batch[:, j] = col[perm]
        with timed(work, "predict", batch.shape[0] * trees):
            scores = model.predict(batch, raw_score=True, num_threads=threads)
    finally:
        for j, col in zip(columns, saved):
            batch[:, j] = col
    scores = np.asarray(scores, dtype=np.float64)
    return scores if rest is None else rest + scores
