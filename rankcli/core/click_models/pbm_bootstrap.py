"""The position-based model's examination curve with bootstrap replicates, all fitted at once. Pure numpy and scipy.

PBM's E-step depends on a result only through its (item, rank, click): the log is reduced to the counts of each such
*key* per cluster of sessions (a query's sessions, which share documents and so are not independent). A bootstrap
replicate draws the clusters with replacement; its counts are the clusters' counts weighted by how often each was
drawn, and its EM (PyClick's, as :mod:`~rankcli.core.click_models.em` runs it) works on the keys' weighted counts. A
block of replicates is one ``(replicates, keys)`` array per step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rankcli.core.click_models.base import Prior, skip_posterior

#: Replicates fitted per block.
REPLICATE_BLOCK = 64


@dataclass
class KeyCounts:
    """A log reduced to keys: key ``k`` is (``item[k]``, ``rank[k]``, ``click[k]``); ``counts`` is
    ``(clusters, keys)`` sparse, the key's results in each cluster."""

    item: np.ndarray
    rank: np.ndarray
    click: np.ndarray
    counts: object  # scipy.sparse.csr_matrix
    n_items: int
    max_rank: int


def key_counts(item: np.ndarray, rank: np.ndarray, click: np.ndarray, cluster: np.ndarray, n_items: int,
               max_rank: int) -> KeyCounts:
    """Reduce results (their item, 0-based rank, click and cluster) to :class:`KeyCounts`."""
    from scipy.sparse import coo_matrix

    code = (np.asarray(item, np.int64) * max_rank + rank) * 2 + np.asarray(click, np.int64)
    keys, key_of = np.unique(code, return_inverse=True)
    clusters = int(cluster.max()) + 1 if cluster.size else 0
    counts = coo_matrix((np.ones(code.shape[0]), (cluster, key_of.reshape(-1))),
                        shape=(clusters, keys.shape[0])).tocsr()
    return KeyCounts(keys // 2 // max_rank, (keys // 2) % max_rank, (keys % 2).astype(bool), counts, n_items,
                     max_rank)


def fit_weighted(kc: KeyCounts, weights: np.ndarray, iterations: int, prior: Prior) -> tuple[np.ndarray, np.ndarray]:
    """``(attr, exam)``, ``(B, n_items)`` and ``(B, max_rank)``: PBM's EM for ``B`` weightings of the clusters
    (``weights`` ``(B, clusters)``)."""
    from scipy.sparse import coo_matrix

    n = np.asarray(kc.counts.T @ weights.T).T  # (B, keys) weighted counts
    K = kc.item.shape[0]
    by_item = coo_matrix((np.ones(K), (np.arange(K), kc.item)), shape=(K, kc.n_items)).tocsr()
    by_rank = coo_matrix((np.ones(K), (np.arange(K), kc.rank)), shape=(K, kc.max_rank)).tocsr()
    B = n.shape[0]
    attr = np.full((B, kc.n_items), prior.mean)
    exam = np.full((B, kc.max_rank), prior.mean)
    den_item = np.asarray(by_item.T @ n.T).T
    den_rank = np.asarray(by_rank.T @ n.T).T
    top = 1.0 - prior.cap
    for _ in range(iterations):
        a, g = attr[:, kc.item], exam[:, kc.rank]
        post_a = np.where(kc.click, 1.0, skip_posterior(a, g)) * n
        post_e = np.where(kc.click, 1.0, skip_posterior(g, a)) * n
        attr = np.minimum((prior.numerator + np.asarray(by_item.T @ post_a.T).T) / (prior.denominator + den_item),
                          top)
        exam = np.minimum((prior.numerator + np.asarray(by_rank.T @ post_e.T).T) / (prior.denominator + den_rank),
                          top)
    return attr, exam


def bootstrap_exam(kc: KeyCounts, replicates: int, iterations: int, prior: Prior,
                   rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(exam, replicate_exams)``: the examination curve fitted on the log, ``(max_rank,)``, and on ``replicates``
    bootstrap resamples of its clusters, ``(replicates, max_rank)``."""
    clusters = kc.counts.shape[0]
    _, exam = fit_weighted(kc, np.ones((1, clusters)), iterations, prior)
    out = np.empty((replicates, kc.max_rank))
    for a in range(0, replicates, REPLICATE_BLOCK):
        b = min(REPLICATE_BLOCK, replicates - a)
        drawn = rng.integers(0, clusters, size=(b, clusters)) + np.arange(b)[:, None] * clusters
        weights = np.bincount(drawn.ravel(), minlength=b * clusters).reshape(b, clusters).astype(np.float64)
        out[a:a + b] = fit_weighted(kc, weights, iterations, prior)[1]
    return exam[0], out
