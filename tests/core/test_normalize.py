"""rankcli.core.normalize: RankLib's normalisers per query against a loop written as RankLib writes them, the
per-dataset statistics gathered batch by batch, and the batch invariance the streaming readers rely on."""

from __future__ import annotations

import numpy as np
import pytest

from rankcli.core.normalize import METHODS, DatasetStats, Normalization, normalize
from rankcli.errors import InputError, UsageError
from tests.reference import ranklib_normalize


def _data(rng, n_queries=40):
    sizes = rng.integers(1, 12, n_queries)           # single-document queries included
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    n = int(offsets[-1])
    x = rng.normal(3, 2, (n, 6)).astype(np.float32)
    x[:, 1] = rng.integers(0, 3, n)                  # ties, and queries where the feature is constant
    x[:, 2] = 5.0                                    # constant everywhere: RankLib's zero-variance rules
    x[:, 3] = -rng.random(n) - 1                      # all negative (RankLib's Float.MIN_VALUE maximum)
    x[rng.random(n) < 0.05, 4] = np.nan              # missing values stay missing
    x[0, 5] = np.inf
    return np.asfortranarray(x), offsets


@pytest.mark.parametrize("method", METHODS)
def test_per_query_matches_ranklib(rng, method):
    x, offsets = _data(rng)
    got = normalize(x, offsets, Normalization(method, "query"))
    want = ranklib_normalize(x, offsets, method)
    assert got.dtype == np.float32 and got.shape == x.shape
    np.testing.assert_allclose(got, want, rtol=2e-7, atol=1e-7, equal_nan=True)
    assert np.isnan(got[np.isnan(x)]).all() and got[0, 5] == np.inf


def test_zero_variance_and_single_documents_follow_ranklib():
    x = np.array([[2.0, 1.0], [2.0, 3.0], [7.0, 4.0]], np.float32)
    offsets = np.array([0, 2, 3])
    z = normalize(x, offsets, Normalization("zscore", "query"))
    assert z[:2, 0].tolist() == [2.0, 2.0]           # std 0: unchanged
    assert z[2].tolist() == [7.0, 4.0]               # one document: unchanged
    m = normalize(x, offsets, Normalization("minmax", "query"))
    assert m[:2, 0].tolist() == [0.0, 0.0] and m[2].tolist() == [0.0, 0.0]   # range 0: 0
    s = normalize(np.zeros((2, 1), np.float32), np.array([0, 2]), Normalization("sum", "query"))
    assert s.tolist() == [[0.0], [0.0]]


@pytest.mark.parametrize("method", METHODS)
def test_batches_of_whole_queries_give_the_whole(rng, method):
    x, offsets = _data(rng)
    whole = normalize(x, offsets, Normalization(method, "query"))
    cut = int(offsets[17])
    first = normalize(x[:cut], offsets[:18], Normalization(method, "query"))
    second = normalize(x[cut:], offsets[17:] - cut, Normalization(method, "query"))
    np.testing.assert_array_equal(np.vstack([first, second]), whole)


@pytest.mark.parametrize("method", METHODS)
def test_dataset_statistics_by_batches(rng, method):
    x, _ = _data(rng)
    acc = DatasetStats(method, x.shape[1])
    for a in range(0, x.shape[0], 37):
        acc.add(x[a:a + 37])
    t = acc.result()
    assert t.per == "dataset" and t.n_features == x.shape[1]
    whole = normalize(x, np.array([0, x.shape[0]]), Normalization(method, "query"))    # one group: the dataset
    got = normalize(x, np.array([0]), t)
    np.testing.assert_allclose(got, whole, rtol=1e-6, atol=1e-6, equal_nan=True)
    again = Normalization.from_dict(t.as_dict(), "here")
    assert again == t


def test_per_dataset_statistics_apply_to_other_rows_and_refuse_overflow():
    t = Normalization("minmax", "dataset", {"min": (0.0,), "max": (1e-30,)})
    assert normalize(np.array([[5e-31]], np.float32), np.array([0, 1]), t)[0, 0] == pytest.approx(0.5)
    with pytest.raises(InputError, match="f1 row 0.*beyond the float32 range"):
        normalize(np.array([[3e38]], np.float32), np.array([0, 1]), t)
    with pytest.raises(InputError, match="cover 1 features, the data has 2"):
        normalize(np.zeros((1, 2), np.float32), np.array([0, 1]), t)


def test_records_are_checked():
    with pytest.raises(UsageError):
        Normalization("linear", "query")
    with pytest.raises(InputError, match="not a feature normalisation"):
        Normalization.from_dict({"method": "zscore"}, "x")
    with pytest.raises(InputError, match="one finite number per feature"):
        Normalization.from_dict({"method": "zscore", "per": "dataset", "stats": {"mean": [1.0], "std": []}}, "x")
    with pytest.raises(InputError, match="records no statistics"):
        Normalization.from_dict({"method": "sum", "per": "query", "stats": {}}, "x")


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(1, 9), min_size=1, max_size=12), seed=st.integers(0, 2**32 - 1),
       scale=st.floats(0.1, 100.0), shift=st.floats(-10.0, 10.0))
def test_per_query_results_ignore_a_positive_affine_change_of_a_query(sizes, seed, scale, shift):
    """zscore and minmax per query depend only on the order and spacing within the query: a*x + b (a > 0) gives the
    same result (to float32 rounding); minmax lands in [0, 1]; zscore has mean 0 and sample std 1 where std > 0."""
    rng = np.random.default_rng(seed)
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    x = rng.normal(size=(int(offsets[-1]), 2)).astype(np.float32)
    x[:, 1] = np.round(x[:, 1])                       # ties and constant queries
    moved = (x.astype(np.float64) * scale + shift).astype(np.float32)
    for method in ("zscore", "minmax"):
        a = normalize(x, offsets, Normalization(method, "query"))
        b = normalize(moved, offsets, Normalization(method, "query"))
        varies = np.zeros_like(a, dtype=bool)
        for lo, hi in zip(offsets[:-1], offsets[1:]):
            varies[lo:hi] = (x[lo:hi].max(axis=0) > x[lo:hi].min(axis=0))[None, :] & (hi - lo > 1)
        np.testing.assert_allclose(a[varies], b[varies], atol=2e-3)
        if method == "minmax":
            assert a.min() >= 0.0 and a.max() <= 1.0
        else:
            for lo, hi in zip(offsets[:-1], offsets[1:]):
                for j in range(2):
                    if varies[lo, j]:
                        assert abs(a[lo:hi, j].mean()) < 1e-5
                        assert a[lo:hi, j].astype(np.float64).std(ddof=1) == pytest.approx(1.0, abs=1e-5)
