"""Tests of rankcli.core.perturb: splits, list augmentation and label noise follow the paper's protocol."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankcli.core.perturb import (
    NOISE_GRADE_PROBS,
    augment_negatives,
    label_noise,
    parse_split,
    split_queries,
    split_sizes,
)
from rankcli.errors import UsageError


def _offsets(sizes):
    return np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)


# --- splits -----------------------------------------------------------------------------------------------------------

@given(n=st.integers(3, 400), seed=st.integers(0, 2**32 - 1),
       fr=st.sampled_from([(0.6, 0.2, 0.2), (0.8, 0.0, 0.2), (0.34, 0.33, 0.33), (0.1, 0.1, 0.8)]))
@settings(max_examples=60, deadline=None)
def test_split_is_disjoint_covering_and_sized(n, seed, fr):
    parts = split_queries(n, fr, np.random.default_rng(seed))
    allq = np.concatenate(parts)
    assert np.array_equal(np.sort(allq), np.arange(n))  # covering and disjoint
    assert [len(p) for p in parts] == split_sizes(n, fr).tolist()
    for p, f in zip(parts, fr):
        assert np.all(np.diff(p) > 0)
        if f > 0:
            assert len(p) >= 1
        assert abs(len(p) - f * n) <= 2


def test_split_reproducible_and_seed_dependent():
    a = split_queries(100, (0.6, 0.2, 0.2), np.random.default_rng(7))
    b = split_queries(100, (0.6, 0.2, 0.2), np.random.default_rng(7))
    c = split_queries(100, (0.6, 0.2, 0.2), np.random.default_rng(8))
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


def test_split_sizes_exact():
    assert split_sizes(150, (0.6, 0.2, 0.2)).tolist() == [90, 30, 30]
    assert split_sizes(10, (0.6, 0.2, 0.2)).tolist() == [6, 2, 2]
    assert split_sizes(3, (0.6, 0.2, 0.2)).tolist() == [1, 1, 1]


def test_split_is_uniform_over_queries():
    # Every query lands in the test part with probability ~0.2.
    rng = np.random.default_rng(1)
    counts = np.zeros(50)
    for _ in range(2000):
        counts[split_queries(50, (0.6, 0.2, 0.2), rng)[2]] += 1
    assert np.allclose(counts / 2000, 0.2, atol=0.04)


@pytest.mark.parametrize("text", ["0.6,0.2", "a,b,c", "0.6,0.3,0.2", "0,0.5,0.5", "0.5,-0.1,0.6"])
def test_parse_split_refuses(text):
    with pytest.raises(UsageError, match="--split"):
        parse_split(text)


def test_parse_split_ok():
    assert parse_split("0.6, 0.2, 0.2") == (0.6, 0.2, 0.2)


# --- augmentation -----------------------------------------------------------------------------------------------------

@given(sz=st.lists(st.integers(1, 30), min_size=2, max_size=40), frac=st.sampled_from([0.0, 0.2, 0.4, 0.5, 1.0]),
       seed=st.integers(0, 2**32 - 1))
@settings(max_examples=60, deadline=None)
def test_augment_structure(sz, frac, seed):
    offsets = _offsets(sz)
    source, new_offsets, added = augment_negatives(offsets, frac, np.random.default_rng(seed))
    sz = np.asarray(sz)
    extra = np.floor(frac * sz + 0.5).astype(int)
    assert np.array_equal(np.diff(new_offsets), sz + extra)
    owner_old = np.repeat(np.arange(len(sz)), sz)
    for q in range(len(sz)):  # obviously-correct per-query check
        block = source[new_offsets[q]:new_offsets[q + 1]]
        flags = added[new_offsets[q]:new_offsets[q + 1]]
        assert np.array_equal(block[: sz[q]], np.arange(offsets[q], offsets[q + 1]))  # originals first, in order
        assert not flags[: sz[q]].any() and flags[sz[q]:].all()
        assert np.all(owner_old[block[sz[q]:]] != q)  # negatives come from other queries only


def test_augment_draws_uniformly_from_other_queries():
    offsets = _offsets([4, 6, 10])
    counts = np.zeros(20)
    rng = np.random.default_rng(3)
    for _ in range(400):
        source, new_offsets, added = augment_negatives(offsets, 1.0, rng)
        # query 2 (rows 10..19) draws from rows 0..9 uniformly
        q2 = source[new_offsets[2]:new_offsets[3]][10:]
        counts += np.bincount(q2, minlength=20)
    assert counts[10:].sum() == 0
    freq = counts[:10] / counts[:10].sum()
    assert np.allclose(freq, 0.1, atol=0.015)


def test_augment_refuses_single_query_and_negative():
    with pytest.raises(UsageError):
        augment_negatives(_offsets([5]), 0.5, np.random.default_rng(0))
    with pytest.raises(UsageError):
        augment_negatives(_offsets([5, 3]), -0.1, np.random.default_rng(0))
    source, new_offsets, added = augment_negatives(_offsets([5]), 0.0, np.random.default_rng(0))
    assert source.tolist() == [0, 1, 2, 3, 4] and not added.any()


def test_augment_refuses_a_level_above_the_cap_before_allocating():
    """An unbounded level ends in MemoryError (--augment-negatives 1e9): the cap is checked before any array is
    made."""
    from rankcli.core.perturb import MAX_AUGMENT_FRACTION

    with pytest.raises(UsageError, match=r"--augment-negatives: a level must be at most 10 \(each training list grows "
                                         r"by that many times its length; the paper sweeps 0 to 1\), got 1e\+09"):
        augment_negatives(_offsets([5, 3]), 1e9, np.random.default_rng(0))
    source, new_offsets, added = augment_negatives(_offsets([5, 3]), MAX_AUGMENT_FRACTION, np.random.default_rng(0))
    assert new_offsets.tolist() == [0, 55, 88] and added.sum() == 80


# --- label noise ------------------------------------------------------------------------------------------------------

@given(sz=st.lists(st.integers(1, 25), min_size=1, max_size=30), frac=st.sampled_from([0.0, 0.1, 0.3, 0.5, 1.0]),
       seed=st.integers(0, 2**32 - 1))
@settings(max_examples=60, deadline=None)
def test_label_noise_touches_exact_count_per_query(sz, frac, seed):
    offsets = _offsets(sz)
    labels = np.full(offsets[-1], 7.0)  # a grade the noise never draws
    new, touched = label_noise(labels, offsets, frac, np.random.default_rng(seed))
    per_query = np.add.reduceat(touched.astype(int), offsets[:-1])
    assert np.array_equal(per_query, np.floor(frac * np.asarray(sz) + 0.5).astype(int))
    assert np.all(new[~touched] == 7.0)
    assert np.all(np.isin(new[touched], [0, 1, 2, 3, 4]))


def test_label_noise_grade_distribution():
    offsets = _offsets([100] * 200)
    labels = np.zeros(offsets[-1])
    new, touched = label_noise(labels, offsets, 0.5, np.random.default_rng(11))
    freq = np.bincount(new[touched].astype(int), minlength=5) / touched.sum()
    # 10,000 draws: standard error <= 0.005
    assert np.allclose(freq, NOISE_GRADE_PROBS, atol=0.02)


def test_label_noise_choice_is_uniform_within_query():
    offsets = _offsets([10])
    hits = np.zeros(10)
    rng = np.random.default_rng(5)
    for _ in range(2000):
        _, touched = label_noise(np.zeros(10), offsets, 0.3, rng)
        hits += touched
    assert np.allclose(hits / 2000, 0.3, atol=0.04)


def test_label_noise_reproducible_and_validates():
    offsets = _offsets([5, 7])
    a = label_noise(np.arange(12.0), offsets, 0.4, np.random.default_rng(2))
    b = label_noise(np.arange(12.0), offsets, 0.4, np.random.default_rng(2))
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    with pytest.raises(UsageError):
        label_noise(np.zeros(12), offsets, 1.5, np.random.default_rng(0))
