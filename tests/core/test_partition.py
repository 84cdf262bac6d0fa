"""rankcli.core.partition: balanced parts, MSLR's fold rotation, groups of queries kept together."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankcli.core.partition import assign_groups, balanced_sizes, fold_rotation, partition, query_groups
from rankcli.core.perturb import partition_queries, split_queries, split_sizes
from rankcli.errors import InputError


@pytest.mark.parametrize("n, k, expected", [(10, 5, [2] * 5), (13, 5, [3, 3, 3, 2, 2]), (3, 3, [1, 1, 1]),
                                            (2, 3, [1, 1, 0])])
def test_balanced_sizes(n, k, expected):
    assert balanced_sizes(n, k).tolist() == expected


def test_fold_rotation_is_mslr_s():
    """MSLR-WEB10K's folds: Fold1 S1,S2,S3 / S4 / S5; Fold2 S2,S3,S4 / S5 / S1; ...; Fold5 S5,S1,S2 / S3 / S4."""
    mslr = {1: ([1, 2, 3], 4, 5), 2: ([2, 3, 4], 5, 1), 3: ([3, 4, 5], 1, 2), 4: ([4, 5, 1], 2, 3),
            5: ([5, 1, 2], 3, 4)}
    got = {k + 1: ([p + 1 for p in r.train], r.valid + 1, r.test + 1) for k, r in enumerate(fold_rotation(5))}
    assert got == mslr


@pytest.mark.parametrize("k", [3, 4, 7])
def test_every_part_is_tested_once_and_a_fold_s_parts_are_disjoint(k):
    rot = fold_rotation(k)
    assert sorted(r.test for r in rot) == list(range(k)) and sorted(r.valid for r in rot) == list(range(k))
    for r in rot:
        assert sorted(r.train + [r.valid, r.test]) == list(range(k))


def test_split_queries_is_the_permutation_cut_it_always_was():
    """experiment's splits must not move: a permutation cut into split_sizes parts, each sorted."""
    for seed in range(5):
        perm = np.random.default_rng(seed).permutation(37)
        cuts = np.cumsum(split_sizes(37, (0.6, 0.2, 0.2)))[:-1]
        old = [np.sort(p) for p in np.split(perm, cuts)]
        new = split_queries(37, (0.6, 0.2, 0.2), np.random.default_rng(seed))
        assert all(np.array_equal(a, b) for a, b in zip(old, new))


def _components(offsets, values):
    """Reference: union-find over queries, joined whenever two rows share a value."""
    parent = list(range(len(offsets) - 1))

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    seen = {}
    for q in range(len(offsets) - 1):
        for r in range(offsets[q], offsets[q + 1]):
            v = values[r]
            if v in seen:
                parent[find(q)] = find(seen[v])
            else:
                seen[v] = q
    roots = [find(q) for q in range(len(offsets) - 1)]
    number = {}
    return [number.setdefault(r, len(number)) for r in roots]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=25), st.integers(1, 8), st.integers(0, 2**32 - 1))
def test_query_groups_are_the_connected_queries(sizes, n_values, seed):
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    values = np.random.default_rng(seed).integers(0, n_values, offsets[-1])
    assert query_groups(offsets, values).tolist() == _components(offsets.tolist(), values.tolist())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=3, max_size=40), st.integers(3, 6), st.integers(0, 2**32 - 1))
def test_grouped_parts_keep_groups_whole_and_stay_within_a_group_of_their_size(group_sizes, k, seed):
    group_sizes = np.array(group_sizes)
    n = int(group_sizes.sum())
    targets = balanced_sizes(n, k)
    part = assign_groups(group_sizes, targets, np.random.default_rng(seed))
    filled = np.bincount(part, weights=group_sizes, minlength=k)
    assert filled.sum() == n
    assert np.all(np.abs(filled - targets) <= group_sizes.max())


def test_groups_of_one_query_fill_parts_exactly_and_split_as_ungrouped():
    rng = np.random.default_rng(3)
    assert np.bincount(assign_groups(np.ones(23, int), [10, 0, 13], rng), minlength=3).tolist() == [10, 0, 13]
    # every query its own group: exactly the ungrouped partition (the experiment's splitter)
    a = partition(23, [14, 5, 4], np.random.default_rng(8), groups=np.arange(23))
    b = partition_queries(23, [14, 5, 4], np.random.default_rng(8))
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_grouped_partition_keeps_each_group_in_one_part_and_refuses_an_empty_part():
    groups = np.array([0, 0, 1, 2, 2, 2, 3, 4, 4, 5])
    parts = partition(10, balanced_sizes(10, 3), np.random.default_rng(1), groups)
    where = np.empty(10, int)
    for p, qs in enumerate(parts):
        where[qs] = p
    for g in range(6):
        assert len(set(where[groups == g])) == 1
    with pytest.raises(InputError, match="cannot fill 3 parts with 2 groups of queries \\(the largest holds 9 of 10"):
        partition(10, balanced_sizes(10, 3), np.random.default_rng(1), np.array([0] * 9 + [1]))
