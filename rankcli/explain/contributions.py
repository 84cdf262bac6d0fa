"""Per-document contributions (LightGBM's ``pred_contrib``, TreeSHAP: Lundberg et al., Nature Machine Intelligence
2020), summarised per feature for ranking.

A document's score is the sum of its features' contributions plus a constant. Within a query only the differences
between documents change the ranking: adding the same amount to every document of a query changes nothing. So each
feature's contributions are first centred within each query, ``c'_ig = c_ig - mean_{j in q(i)} c_jg`` (a group's
contribution is the sum of its members', which TreeSHAP's additivity allows), and the summary is
``mean_i |c'_ig|`` over all documents: the average amount by which ``g`` moves a document against its query's other
documents, in score units. A single-document query contributes zeros.

Memory stays bounded: the contributions, ``(rows, features + 1)`` float64 (twice the float32 features' size and more),
are computed batch by batch of whole queries (:func:`query_batches`), and only the running sums are kept. The batches
may come from memory or from a streaming reader of a file: :func:`mean_abs_contributions` takes any iterable of
``(features, offsets)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np

#: Rows per batch of the contributions pass (whole queries: a batch holds at least one query). TreeSHAP costs hundreds
#: of predictions per row, so a batch is small enough for the progress to move every few seconds.
BATCH_ROWS = 4_096
#: Contributions are computed on this many queries, drawn at random, when the data has more (``all``: every one).
SAMPLE_QUERIES = 200
#: The second word of the sample's seed (``default_rng([seed, SAMPLE_STREAM])``): apart from the permutations'.
SAMPLE_STREAM = 0x5A3


def query_batches(features: np.ndarray, offsets: np.ndarray, max_rows: int = BATCH_ROWS
                  ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(features, offsets)`` of consecutive batches of whole queries, each of at most ``max_rows`` rows unless one
    query is longer (then it is a batch alone); views, not copies."""
    sizes = np.diff(offsets)
    q, n_queries = 0, sizes.shape[0]
    while q < n_queries:
        # the last query that still fits (at least one query per batch)
        end = int(np.searchsorted(offsets, offsets[q] + max_rows, side="right")) - 1
        end = max(end, q + 1)
        a, b = int(offsets[q]), int(offsets[end])
        yield features[a:b], offsets[q:end + 1] - a
        q = end


def mean_abs_contributions(contributions: Callable[[np.ndarray], np.ndarray],
                           batches: Iterable[tuple[np.ndarray, np.ndarray]], n_features: int,
                           membership: np.ndarray | None = None,
                           on_batch: Callable[[int], None] | None = None) -> np.ndarray:
    """``mean_i |c'_ig|`` per group over every document of ``batches`` (module docstring); the arguments as
    :func:`query_sums` takes them."""
    sums, sizes = query_sums(contributions, batches, n_features, membership, on_batch)
    return sums.sum(axis=0) / sizes.sum() if sizes.shape[0] else np.full(sums.shape[1], np.nan)


def query_sums(contributions: Callable[[np.ndarray], np.ndarray], batches: Iterable[tuple[np.ndarray, np.ndarray]],
               n_features: int, membership: np.ndarray | None = None,
               on_batch: Callable[[int], None] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(sums, sizes)``: per query of ``batches`` (in order), ``sum_{i in q} |c'_ig|`` per group ``(n_queries,
    n_groups)``, and its documents ``(n_queries,)``.

    Parameters
    ----------
    contributions : ``pred_contrib`` of a feature matrix: ``(rows, n_features + 1)``, the last column the constant.
    batches : ``(features, offsets)`` of whole queries.
    n_features : the model's feature count.
    membership : ``(n_features, n_groups)`` 0/1 matrix summing features into groups (:func:`rankcli.explain.grouping.
        membership`); None: one group per feature.
    on_batch : called with each batch's rows.
    """
    width = n_features if membership is None else membership.shape[1]
    parts, counts = [np.zeros((0, width))], [np.zeros(0, dtype=np.int64)]
    for features, offsets in batches:
        c = np.asarray(contributions(features), dtype=np.float64)[:, :n_features]
        if membership is not None:
            c = c @ membership
        sizes = np.diff(offsets)
        mean = np.add.reduceat(c, offsets[:-1], axis=0) / sizes[:, None]
        parts.append(np.add.reduceat(np.abs(c - np.repeat(mean, sizes, axis=0)), offsets[:-1], axis=0))
        counts.append(sizes)
        if on_batch is not None:
            on_batch(features.shape[0])
    return np.concatenate(parts), np.concatenate(counts)


@dataclass
class ContributionSample:
    """The queries whose documents the contributions are computed on: ``queries`` (indices of the data's queries, in
    data order) of the data's ``of``; ``seed`` None when every query is used."""

    queries: np.ndarray
    of: int
    seed: int | None

    @property
    def complete(self) -> bool:
        return self.queries.shape[0] == self.of

    def rows(self, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, offsets)``: the data's row numbers of the sampled queries, in order, and their query offsets."""
        sizes = np.diff(offsets)[self.queries]
        starts = offsets[self.queries]
        sub = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        rows = np.arange(int(sub[-1]), dtype=np.int64) + np.repeat(starts - sub[:-1], sizes)
        return rows, sub


def sample_queries(n_queries: int, limit: int | None, seed: int) -> ContributionSample:
    """Every query when ``limit`` is None or at least ``n_queries``; else ``limit`` queries drawn uniformly without
    replacement with ``numpy.random.default_rng([seed, SAMPLE_STREAM])`` (``choice(n_queries, limit,
    replace=False)``, sorted into data order): a stream of its own, apart from the permutations'."""
    if limit is None or limit >= n_queries:
        return ContributionSample(np.arange(n_queries, dtype=np.int64), n_queries, None)
    drawn = np.random.default_rng([seed, SAMPLE_STREAM]).choice(n_queries, limit, replace=False)
    return ContributionSample(np.sort(drawn).astype(np.int64), n_queries, seed)


def estimate(sums: np.ndarray, sizes: np.ndarray, population: int) -> tuple[np.ndarray, np.ndarray]:
    """``(mean, stderr)`` per group: the mean absolute centred contribution per document over the sampled queries
    (a ratio of totals, ``sum_q y_q / sum_q n_q``), and its standard error as an estimate of the whole data's (the
    ratio estimator's, queries drawn without replacement: ``sqrt((1 - m/N) / (m (m - 1))) * sqrt(sum_q (y_q - R
    n_q)^2) / mean(n_q)``); 0 when the sample is every query (nothing is estimated), NaN from one query of many."""
    m = sizes.shape[0]
    if m == 0:
        return np.full(sums.shape[1], np.nan), np.full(sums.shape[1], np.nan)
    ratio = sums.sum(axis=0) / sizes.sum()
    if m == population:
        return ratio, np.zeros_like(ratio)
    if m < 2:
        return ratio, np.full_like(ratio, np.nan)
    resid = sums - sizes[:, None] * ratio[None, :]
    var = (1.0 - m / population) * (resid ** 2).sum(axis=0) / (m * (m - 1)) / sizes.mean() ** 2
    return ratio, np.sqrt(var)
