"""rankcli.core.ranking: padded matrices ranked by score, descending, equal scores in input order."""

from __future__ import annotations

import numpy as np
import pytest

from rankcli.core.groups import size_buckets
from rankcli.core.ranking import padded_ranking


def _reference(scores, offsets, qs):
    """Each query's rows by score descending, ties in input order (a stable sort per query)."""
    return [offsets[q] + np.argsort(-scores[offsets[q]:offsets[q + 1]], kind="stable") for q in qs.tolist()]


@pytest.mark.parametrize("presorted", [False, True])
def test_padded_ranking_ranks_each_query_stably(rng, presorted):
    sizes = rng.integers(1, 40, 50)
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    scores = rng.choice([-np.inf, -1.0, -0.0, 0.0, 0.5, 2.0], size=int(offsets[-1]))  # ties, -0.0 = 0.0, -inf
    if presorted:  # rows already in rank order, as the C path gives TREC runs: no sort at all
        scores = np.concatenate([np.sort(scores[a:b])[::-1] for a, b in zip(offsets[:-1], offsets[1:])])
    for qs, width in size_buckets(offsets):
        ranking = padded_ranking(scores, offsets, qs, width)
        ranked = ranking.ranked(ranking.rows)
        valid = ranking.ranked(ranking.valid)
        got = [row[v] for row, v in zip(ranked, valid)]
        for mine, ref in zip(got, _reference(scores, offsets, qs)):
            np.testing.assert_array_equal(mine, ref)
        if presorted:
            assert ranking.order is None


def test_an_unsorted_bucket_is_sorted():
    offsets = np.array([0, 3], dtype=np.int64)
    ranking = padded_ranking(np.array([1.0, 3.0, 2.0]), offsets, np.array([0]), 3)
    assert ranking.order is not None and ranking.ranked(ranking.rows).tolist() == [[1, 2, 0]]
