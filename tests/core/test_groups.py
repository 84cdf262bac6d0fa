import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankcli.core import groups
from tests import reference
from tests.conftest import make_ranking


def random_batch(rng, n_queries=50, max_size=40, tie_levels=4):
    _, scores, offsets = make_ranking(rng, n_queries, max_size, tie_levels=tie_levels)
    return scores, offsets


def test_order_within_matches_stable_reference_on_ties():
    rng = np.random.default_rng(0)
    scores, offsets = random_batch(rng)
    np.testing.assert_array_equal(groups.order_within(scores, offsets), reference.order_within(scores, offsets))
    np.testing.assert_array_equal(groups.order_within(scores, offsets, descending=False),
                                  reference.order_within(scores, offsets, descending=False))


def test_rank_within():
    scores = np.array([0.1, 0.9, 0.9, 0.5, 2.0, 1.0])
    offsets = np.array([0, 4, 6])
    assert groups.rank_within(scores, offsets).tolist() == [4, 1, 2, 3, 1, 2]


def test_segment_softmax_matches_reference_and_is_shift_invariant():
    rng = np.random.default_rng(1)
    scores, offsets = random_batch(rng)
    scores = scores + rng.normal(size=scores.shape) * 50
    p = groups.segment_softmax(scores, offsets)
    np.testing.assert_allclose(p, reference.softmax(scores, offsets), rtol=1e-12)
    np.testing.assert_allclose(groups.segment_sum(p, offsets), 1.0)
    shift = groups.broadcast(rng.normal(size=len(offsets) - 1) * 1e3, offsets)
    np.testing.assert_allclose(groups.segment_softmax(scores + shift, offsets), p, atol=1e-12)


def test_segment_reductions():
    v = np.array([1.0, 5.0, 2.0, -1.0, 3.0])
    offsets = np.array([0, 3, 5])
    assert groups.segment_sum(v, offsets).tolist() == [8.0, 2.0]
    assert groups.segment_max(v, offsets).tolist() == [5.0, 3.0]
    assert groups.query_index(offsets).tolist() == [0, 0, 0, 1, 1]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=70), min_size=1, max_size=12))
def test_order_within_property(lists):
    scores = np.array([s for q in lists for s in q], dtype=np.float64)
    offsets = np.concatenate(([0], np.cumsum([len(q) for q in lists]))).astype(np.int64)
    perm = groups.order_within(scores, offsets)
    np.testing.assert_array_equal(perm, reference.order_within(scores, offsets))
    # Every query's rows stay within the query.
    qi = groups.query_index(offsets)
    np.testing.assert_array_equal(qi[perm], qi)


def test_label_grades_mapping():
    from rankcli.core.labels import NonIntegerLabelsError, is_integer_grades, require_integer_grades, to_grades

    grades, values = to_grades(np.array([0.14, 0.0, 0.5, 0.14]))
    assert grades.tolist() == [1, 0, 2, 1] and values.tolist() == [0.0, 0.14, 0.5]
    assert is_integer_grades(np.array([0.0, 3.0])) and not is_integer_grades(np.array([0.0, 0.5]))
    with pytest.raises(NonIntegerLabelsError, match="--label-grades"):
        require_integer_grades(np.array([0.0, 0.07]), "lambdamart")
