"""The paper's data perturbations: random query-level splits, list augmentation with random negatives, label noise.

Pure numpy, no I/O. Every function takes a :class:`numpy.random.Generator` and works on all queries at once (no
per-query Python loop). Queries are addressed by position (``0 .. n_queries - 1``), rows by position, and a batch of
queries is ``(values, offsets)`` as everywhere in :mod:`rankcli.core`.

Protocol (Bruch, WWW 2021, section 5; ``shared/paper/xendcg.md``):

- splits: queries (never documents) are sampled into train / validation / test, e.g. 60% / 20% / 20%;
- list augmentation: each training query's list grows by a fraction of its length with documents drawn from *other*
  training queries, labelled 0 (they are, by construction, irrelevant to this query);
- label noise: a fraction of each training query's documents get a random grade drawn with
  p(0, 1, 2, 3, 4) = (.5, .2, .15, .1, .05) (the grade may happen to equal the old one).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rankcli.core.groups import broadcast, query_index, rank_within, sizes
from rankcli.errors import UsageError

#: The paper's distribution of a noisy grade: p(0..4).
NOISE_GRADE_PROBS: tuple[float, ...] = (0.5, 0.2, 0.15, 0.1, 0.05)
#: The largest list augmentation: each list grows by at most this many times its length (the paper sweeps 0 to 1),
#: so that the augmented training set is at most 11 times the input's rows, known before anything is allocated.
MAX_AUGMENT_FRACTION = 10.0


def check_augment_fraction(fraction: float) -> None:
    """Refuse (:class:`UsageError`) an augmentation level ``fraction`` that is negative, not finite, or above
    :data:`MAX_AUGMENT_FRACTION`."""
    if not np.isfinite(fraction) or fraction < 0:
        raise UsageError(f"--augment-negatives: a level must be >= 0, got {fraction:g}")
    if fraction > MAX_AUGMENT_FRACTION:
        raise UsageError(f"--augment-negatives: a level must be at most {MAX_AUGMENT_FRACTION:g} (each training list "
                         f"grows by that many times its length; the paper sweeps 0 to 1), got {fraction:g}")


def parse_split(text: str) -> tuple[float, float, float]:
    """Parse ``text`` like ``"0.6,0.2,0.2"`` (train, validation, test fractions summing to 1; validation may be 0)."""
    parts = [p.strip() for p in str(text).split(",")]
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise UsageError(f"--split: expected three fractions like 0.6,0.2,0.2, got {text!r}") from None
    if len(values) != 3:
        raise UsageError(f"--split: expected three fractions (train, validation, test), got {text!r}")
    if any(not np.isfinite(v) or v < 0 for v in values) or values[0] <= 0 or values[2] <= 0:
        raise UsageError(f"--split: train and test fractions must be > 0 and validation >= 0, got {text!r}")
    if abs(sum(values) - 1.0) > 1e-6:
        raise UsageError(f"--split: fractions must sum to 1, got {text!r} (sum {sum(values):g})")
    return values[0], values[1], values[2]


def split_sizes(n_queries: int, fractions: Sequence[float]) -> np.ndarray:
    """Number of queries per part: ``round(f * n_queries)`` for each of ``fractions`` but the last part, which takes
    the rest.

    Every part with a positive fraction gets at least one query when ``n_queries`` allows it.
    """
    fractions = np.asarray(fractions, dtype=np.float64)
    counts = np.floor(fractions * n_queries + 0.5).astype(np.int64)
    counts[-1] = 0
    counts[-1] = n_queries - int(counts.sum())
    while counts[-1] < 0:  # rounding up overshot: take the surplus back from the largest part
        counts[int(np.argmax(counts[:-1]))] -= 1
        counts[-1] += 1
    # A part with a positive fraction but no query borrows one from the largest part (a loop over parts, not queries).
    for i in np.flatnonzero((fractions > 0) & (counts == 0)):
        j = int(np.argmax(counts))
        if counts[j] > 1:
            counts[j] -= 1
            counts[i] += 1
    return counts


def split_queries(n_queries: int, fractions: Sequence[float], rng: np.random.Generator) -> list[np.ndarray]:
    """A random query-level split of ``n_queries`` queries into parts of ``fractions``: one sorted array of query
    numbers per part, disjoint and covering all queries.

    The parts' sizes come from :func:`split_sizes`; which query goes where is a uniform random permutation drawn from
    ``rng``, so the same generator state gives the same split.
    """
    if n_queries < len(fractions):
        raise UsageError(f"cannot split {n_queries} queries into {len(fractions)} parts")
    return partition_queries(n_queries, split_sizes(n_queries, fractions), rng)


def partition_queries(n_queries: int, counts: Sequence[int], rng: np.random.Generator) -> list[np.ndarray]:
    """A random partition of ``n_queries`` queries into parts of ``counts`` queries (summing to ``n_queries``): one
    sorted array of query numbers per part. The queries are permuted uniformly (``rng.permutation``) and the
    permutation is cut into the parts in order."""
    perm = rng.permutation(n_queries)
    cuts = np.cumsum(np.asarray(counts, dtype=np.int64))[:-1]
    return [np.sort(part).astype(np.int64) for part in np.split(perm, cuts)]


def augment_negatives(offsets: np.ndarray, fraction: float, rng: np.random.Generator
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Grow every query's list by ``fraction`` of its length with rows sampled from *other* queries.

    Query ``q`` of ``m`` rows (``offsets``: the query boundaries) gets ``floor(fraction * m + 0.5)`` extra rows, each
    drawn uniformly (with replacement, from ``rng``) among the rows of all other queries. Returns ``(source_rows,
    new_offsets, is_added)``: the new batch's row ``i`` is a copy of old row ``source_rows[i]``; each query keeps its
    original rows first, in order, then its added rows.
    Added rows must be labelled 0 by the caller (their label in the source query says nothing about this one).

    With a single query there is no other query to draw from: ``fraction > 0`` is refused; so is a ``fraction``
    above :data:`MAX_AUGMENT_FRACTION` (before anything is allocated).
    """
    check_augment_fraction(fraction)
    offsets = np.asarray(offsets, dtype=np.int64)
    sz = sizes(offsets)
    nq = sz.shape[0]
    n = int(offsets[-1])
    extra = np.floor(fraction * sz + 0.5).astype(np.int64)
    if extra.sum() > 0 and nq < 2:
        raise UsageError("--augment-negatives needs at least two training queries to draw negatives from")
    owner = np.repeat(np.arange(nq, dtype=np.int64), extra)
    # Uniform over the n - m_q rows outside query q: draw in [0, n - m_q) and skip over q's own block.
    u = np.floor(rng.random(owner.shape[0]) * (n - sz[owner])).astype(np.int64)
    u = np.minimum(u, n - sz[owner] - 1)
    drawn = np.where(u >= offsets[owner], u + sz[owner], u)
    new_sizes = sz + extra
    new_offsets = np.concatenate(([0], np.cumsum(new_sizes))).astype(np.int64)
    source = np.empty(int(new_offsets[-1]), dtype=np.int64)
    is_added = np.zeros(source.shape[0], dtype=bool)
    # Original rows of query q go to new_offsets[q] + (0 .. m_q - 1); added ones follow them.
    orig_dest = np.arange(n, dtype=np.int64) + broadcast(new_offsets[:-1] - offsets[:-1], offsets)
    source[orig_dest] = np.arange(n, dtype=np.int64)
    extra_offsets = np.concatenate(([0], np.cumsum(extra))).astype(np.int64)
    added_dest = (np.arange(owner.shape[0], dtype=np.int64) - extra_offsets[owner]) + new_offsets[owner] + sz[owner]
    source[added_dest] = drawn
    is_added[added_dest] = True
    return source, new_offsets, is_added


def label_noise(labels: np.ndarray, offsets: np.ndarray, fraction: float, rng: np.random.Generator,
                probs: Sequence[float] = NOISE_GRADE_PROBS) -> tuple[np.ndarray, np.ndarray]:
    """Give ``floor(fraction * m + 0.5)`` random documents of every query (of ``m``; ``offsets``: the query
    boundaries of ``labels``) a random grade.

    The documents are chosen uniformly without replacement within the query (randomness from ``rng``); the new grade
    is drawn from ``probs`` (grades ``0 .. len(probs) - 1``; the paper's (.5, .2, .15, .1, .05) by default)
    independently of the old label.
    Returns ``(new_labels, touched)`` where ``touched`` marks the rows that were re-drawn.
    """
    if not np.isfinite(fraction) or not 0 <= fraction <= 1:
        raise UsageError(f"--label-noise: a level must be in [0, 1], got {fraction:g}")
    probs = np.asarray(probs, dtype=np.float64)
    if probs.ndim != 1 or np.any(probs < 0) or abs(probs.sum() - 1) > 1e-9:
        raise UsageError(f"label noise probabilities must be non-negative and sum to 1, got {probs.tolist()}")
    labels = np.asarray(labels, dtype=np.float64)
    offsets = np.asarray(offsets, dtype=np.int64)
    k = np.floor(fraction * sizes(offsets) + 0.5).astype(np.int64)
    # A uniformly random order within each query; its first k rows are a uniform k-subset.
    order_keys = rng.random(labels.shape[0])
    ranks = rank_within(order_keys, offsets, descending=False)
    touched = ranks <= k[query_index(offsets)]
    grades = rng.choice(probs.shape[0], size=int(touched.sum()), p=probs).astype(np.float64)
    out = labels.copy()
    out[touched] = grades
    return out, touched
