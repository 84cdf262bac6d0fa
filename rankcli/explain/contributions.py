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

import numpy as np

#: Rows per batch of the contributions pass (whole queries: a batch holds at least one query).
BATCH_ROWS = 65_536


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
    """``mean_i |c'_ig|`` per group (module docstring).

    Parameters
    ----------
    contributions : ``pred_contrib`` of a feature matrix: ``(rows, n_features + 1)``, the last column the constant.
    batches : ``(features, offsets)`` of whole queries.
    n_features : the model's feature count.
    membership : ``(n_features, n_groups)`` 0/1 matrix summing features into groups (:func:`rankcli.explain.groups.
        membership`); None: one group per feature.
    on_batch : called with each batch's rows.
    """
    total = None
    rows = 0
    for features, offsets in batches:
        c = np.asarray(contributions(features), dtype=np.float64)[:, :n_features]
        if membership is not None:
            c = c @ membership
        sizes = np.diff(offsets)
        mean = np.add.reduceat(c, offsets[:-1], axis=0) / sizes[:, None]
        part = np.abs(c - np.repeat(mean, sizes, axis=0)).sum(axis=0)
        total = part if total is None else total + part
        rows += features.shape[0]
        if on_batch is not None:
            on_batch(features.shape[0])
    width = n_features if membership is None else membership.shape[1]
    return np.full(width, np.nan) if total is None else total / rows
