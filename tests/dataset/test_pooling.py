"""Tests of rankcli.dataset.pooling: several datasets' queries as one dataset."""

from __future__ import annotations

import numpy as np

from rankcli.dataset import Dataset
from rankcli.dataset.pooling import concat_datasets


def _ds(qids, n_features, docids=None):
    qids = np.asarray(qids, dtype=np.int64)
    features = np.arange(qids.shape[0] * n_features, dtype=np.float32).reshape(qids.shape[0], n_features)
    return Dataset(qids=qids, labels=np.arange(qids.shape[0], dtype=np.float64), features=features,
                   feature_names=[f"f{i}" for i in range(1, n_features + 1)], docids=docids)


def test_distinct_qids_are_kept_and_narrower_files_padded_with_zeros():
    a = _ds([1, 1, 2], 3, docids=np.array(["d1", "d2", "d3"]))
    b = _ds([5, 5], 2)
    pooled = concat_datasets([a, b])
    assert pooled.qids.tolist() == [1, 1, 2, 5, 5] and pooled.offsets.tolist() == [0, 2, 3, 5]
    assert pooled.feature_names == ["f1", "f2", "f3"]
    assert np.array_equal(pooled.features[3:], np.hstack([b.features, np.zeros((2, 1), np.float32)]))
    assert pooled.labels.tolist() == [0, 1, 2, 0, 1]
    assert pooled.docids is None  # b has none


def test_a_qid_in_two_files_is_renumbered_by_file():
    pooled = concat_datasets([_ds([1, 2], 1), _ds([2, 2, 9], 1)])
    # file i adds i * (largest qid + 1): the second file's queries become 12 and 19
    assert pooled.qids.tolist() == [1, 2, 12, 12, 19]
    assert np.unique(pooled.qids[pooled.offsets[:-1]]).shape[0] == pooled.n_queries == 4
