"""Randomised logging policies (rankcli.core.policies): RandTop-n and the swap intervention move documents as defined,
and uniformly (chi-square against the uniform placement)."""

from __future__ import annotations

import numpy as np

from rankcli.core import policies


def _position_counts(order, at_pos, impressions, top):
    """counts[d, r]: how often the ranker's document at rank d (< top) was displayed at position r (< top)."""
    G, n = at_pos.shape
    rank_of = np.argsort(at_pos, axis=1)  # rank_of[g, doc] = ranker's rank of doc
    ranks = np.take_along_axis(np.repeat(rank_of, impressions, axis=0), order, axis=1)  # rank shown at each position
    counts = np.zeros((top, top), np.int64)
    for r in range(top):
        counts[:, r] = np.bincount(ranks[:, r], minlength=n)[:top]
    return counts


def test_randtop_n_displays_each_top_document_uniformly_over_the_top_positions():
    from scipy.stats import chi2

    rng = np.random.default_rng(11)
    G, n, N, reps = 7, 12, 5, 3000
    at_pos = np.stack([rng.permutation(n) for _ in range(G)])
    order = policies.randomized_orders(at_pos, reps, ("top", N), n, np.random.default_rng(5))
    assert order.shape == (G * reps, n)
    # Every row is a permutation of its list; the documents below rank N keep the ranker's order.
    assert np.array_equal(np.sort(order, axis=1), np.tile(np.arange(n), (G * reps, 1)))
    assert np.array_equal(order[:, N:], np.repeat(at_pos[:, N:], reps, axis=0))
    counts = _position_counts(order, at_pos, reps, N)
    expected = G * reps / N
    stat = ((counts - expected) ** 2 / expected).sum(axis=1)  # per document: N - 1 degrees of freedom
    assert np.all(stat < chi2.ppf(0.999, N - 1)), stat
    assert np.all(counts.sum(axis=1) == G * reps)


def test_randtop_n_larger_than_the_list_shuffles_the_whole_list():
    at_pos = np.array([[2, 0, 1]])
    order = policies.randomized_orders(at_pos, 6000, ("top", 10), 3, np.random.default_rng(1))
    counts = _position_counts(order, at_pos, 6000, 3)
    assert np.all(np.abs(counts - 2000) < 4 * np.sqrt(2000 * (1 / 3) * (2 / 3) * 3)), counts


def test_swap_intervention_moves_only_position_k_and_one_uniform_position():
    from scipy.stats import chi2

    rng = np.random.default_rng(3)
    G, n, K, reps, shown = 4, 9, 3, 4000, 7
    at_pos = np.stack([rng.permutation(n) for _ in range(G)])
    order = policies.randomized_orders(at_pos, reps, ("swap", K), shown, np.random.default_rng(2))
    base = np.repeat(at_pos, reps, axis=0)
    differs = order != base
    # Either nothing moved (the random position was K itself) or exactly K and one other displayed position swapped.
    n_diff = differs.sum(axis=1)
    assert set(np.unique(n_diff)) <= {0, 2}
    moved = n_diff == 2
    assert np.all(differs[moved, K - 1]) and not differs[:, shown:].any()
    rows = np.flatnonzero(moved)
    j = np.argmax(differs[rows] & (np.arange(n) != K - 1), axis=1)
    assert np.array_equal(order[rows, j], base[rows, K - 1]) and np.array_equal(order[rows, K - 1], base[rows, j])
    # Where the ranker's K-th document went: uniform over the displayed positions 1..shown (K included).
    where = np.argmax(order == base[:, K - 1][:, None], axis=1)
    counts = np.bincount(where, minlength=shown)
    assert counts.shape == (shown,)
    expected = G * reps / shown
    assert ((counts - expected) ** 2 / expected).sum() < chi2.ppf(0.999, shown - 1), counts


def test_swap_beyond_the_displayed_list_changes_nothing():
    at_pos = np.array([[1, 0, 2]])
    order = policies.randomized_orders(at_pos, 50, ("swap", 3), 2, np.random.default_rng(0))
    assert np.array_equal(order, np.repeat(at_pos, 50, axis=0))
