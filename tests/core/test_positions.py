"""rankcli.core.positions: a click log's display positions are whole numbers from 1 to the documented limit, none
twice within an impression, and a value beyond int64 is reported as written."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankcli.core.positions import MAX_POSITION, checked_positions, leading_positions
from rankcli.errors import InputError


def test_a_rankcli_log_passes_unchanged():
    offsets = np.array([0, 3, 5, 9])
    positions = np.array([1, 2, 3, 1, 2, 1, 2, 3, 4], dtype=np.int32)
    out = checked_positions(offsets, positions)
    assert out.dtype == np.int64 and list(out) == list(positions)
    # any order within an impression, gaps included, is a log (only a repeat is not)
    assert list(checked_positions(offsets, np.array([3, 1, 2, 2, 1, 9, 1, 4, 2]))) == [3, 1, 2, 2, 1, 9, 1, 4, 2]


def test_a_position_twice_within_an_impression_names_the_impression():
    offsets = np.array([0, 3, 6])
    with pytest.raises(InputError, match=r"^impression qid 8 shows position 2 twice \(rows 4 and 5\); each displayed "
                                         "position holds one document"):
        checked_positions(offsets, np.array([1, 2, 3, 1, 2, 2]), np.array([7, 8]))
    # every row at position 1 (what a log that lost its positions looks like)
    with pytest.raises(InputError, match=r"^impression 0 shows position 1 twice \(rows 0 and 1\)"):
        checked_positions(offsets, np.ones(6, dtype=np.int64))
    # but one document per impression at position 1 is a log of one-document lists
    assert list(checked_positions(np.arange(4), np.ones(3, dtype=np.int64))) == [1, 1, 1]


@pytest.mark.parametrize("value", [2 ** 40, 2 ** 31 - 1, MAX_POSITION + 1, 2 ** 63 - 1])
def test_positions_beyond_the_limit_are_refused_before_any_allocation(value):
    offsets = np.array([0, 2])
    with pytest.raises(InputError, match=rf"^column position: {value} at row 1, impression qid 5 is beyond the largest "
                                         r"position rankcli reads \(100,000; docs/input-limits.md\)$"):
        checked_positions(offsets, np.array([1, value], dtype=np.int64), np.array([5]))
    assert list(checked_positions(offsets, np.array([1, MAX_POSITION]))) == [1, MAX_POSITION]


def test_a_uint64_beyond_int64_is_reported_as_written():
    big = np.array([1, 2 ** 64 - 1], dtype=np.uint64)
    with pytest.raises(InputError, match=r"column position: 18446744073709551615 at row 1, impression 0 is beyond"):
        checked_positions(np.array([0, 2]), big)


@pytest.mark.parametrize("positions,message", [
    (np.array([1, 0]), r"positions are 1-based, got 0 at row 1, impression 0"),
    (np.array([1, -3]), r"positions are 1-based, got -3 at row 1"),
    (np.array([1.0, 2.5]), r"2\.5 at row 1, impression 0 is not a whole number"),
    (np.array([1.0, np.nan]), r"column position: a missing value at row 1, impression 0; positions are 1, 2"),
    (np.array([1.0, np.inf]), r"inf at row 1, impression 0 is not a whole number"),
    (np.array(["1", "2"]), r"expected whole numbers 1, 2, \.\.\., got <U1 values"),
])
def test_what_is_not_a_position(positions, message):
    with pytest.raises(InputError, match=message):
        checked_positions(np.array([0, 2]), positions)
    assert list(checked_positions(np.array([0, 2]), np.array([1.0, 2.0]))) == [1, 2]  # whole floats are positions


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(1, 6), min_size=1, max_size=6), min_size=1, max_size=6))
def test_repeats_are_found_exactly_when_there_are_some(impressions):
    offsets = np.concatenate(([0], np.cumsum([len(i) for i in impressions])))
    positions = np.concatenate([np.array(i) for i in impressions])
    repeated = any(len(set(i)) < len(i) for i in impressions)
    if repeated:
        first = next(k for k, i in enumerate(impressions) if len(set(i)) < len(i))
        with pytest.raises(InputError, match=rf"^impression {first} shows position"):
            checked_positions(offsets, positions)
    else:
        assert list(checked_positions(offsets, positions)) == list(positions)


def test_leading_positions():
    assert leading_positions(np.array([1, 2, 3, 1, 2])) == 3
    assert leading_positions(np.array([1, 2, 4, 100_000])) == 2  # the work stops at the first position not shown
    assert leading_positions(np.array([2, 3])) == 0
    assert leading_positions(np.zeros(0, np.int64)) == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=8), st.integers(0, 3))
def test_the_display_order_shortcut_agrees_with_the_sort(sizes, shift):
    """Impressions shown 1..n in row order pass without a sort; any other order is checked by the sort, and both
    answer alike (empty impressions included)."""
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    positions = np.concatenate([np.arange(1, s + 1) for s in sizes]).astype(np.int64)
    assert list(checked_positions(offsets, positions)) == list(positions)
    if positions.shape[0] > 1:
        rolled = np.roll(positions, shift)
        repeated = any(len(set(rolled[a:b])) < b - a for a, b in zip(offsets[:-1], offsets[1:]))
        if repeated:
            with pytest.raises(InputError, match="twice"):
                checked_positions(offsets, rolled)
        else:
            assert list(checked_positions(offsets, rolled)) == list(rolled)
