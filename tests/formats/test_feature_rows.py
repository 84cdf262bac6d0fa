"""rankcli.formats.feature_rows: a Parquet file's features read by row (one row, a range, rows by number) are the
matrix's, read in one pass over the row groups; query batches keep queries whole, follow the row groups and respect
the batch budget."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from rankcli.formats.feature_rows import ParquetFeatureRows, query_batches
from rankcli.formats.parquet import dataset_table, read_dataset, read_features


@pytest.fixture(scope="module")
def matrix_file(tmp_path_factory):
    """A dataset file in row groups of 37 rows that cut queries anywhere (not query-aligned)."""
    from rankcli.dataset import Dataset

    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 30, 40)
    qids = np.repeat(np.arange(40, dtype=np.int64), sizes)
    x = rng.normal(size=(qids.shape[0], 5)).astype(np.float32)
    ds = Dataset(qids=qids, labels=rng.integers(0, 3, qids.shape[0]).astype(float), features=x,
                 feature_names=[f"f{i}" for i in range(1, 6)])
    path = tmp_path_factory.mktemp("rows") / "d.parquet"
    pq.write_table(dataset_table(ds), path, row_group_size=37)
    return path, x


def test_rows_by_index_slice_and_list_are_the_matrix(matrix_file):
    path, x = matrix_file
    rows = ParquetFeatureRows(path, [f"f{i}" for i in range(1, 6)])
    assert len(rows) == x.shape[0] and rows.shape == x.shape
    assert rows[5].dtype == np.float64 and np.array_equal(rows[5], x[5].astype(np.float64))
    assert np.array_equal(rows[-1], x[-1])
    for a, b in [(0, 10), (30, 80), (0, len(rows)), (36, 38), (100, 100)]:
        assert np.array_equal(rows[a:b], x[a:b])
    picks = [3, 200, 40, 41, 0, x.shape[0] - 1]
    assert np.array_equal(rows[picks], x[picks]) and np.array_equal(rows[np.array(picks)], x[picks])
    assert np.array_equal(rows[0:50:3], x[0:50:3])
    with pytest.raises(IndexError):
        rows[x.shape[0]]
    assert np.array_equal(read_features(path, rows.names), x)


def test_reading_in_order_decodes_each_row_group_once(matrix_file):
    path, x = matrix_file
    rows = ParquetFeatureRows(path, [f"f{i}" for i in range(1, 6)])
    for i in range(0, len(rows), 13):
        rows[i:i + 13]
    for i in range(len(rows)):
        rows[i]
    groups = rows.row_group_ends().shape[0]
    assert rows.decoded == 2 * groups
    rows.release()
    assert np.array_equal(rows[[len(rows) - 1, 0]], x[[len(rows) - 1, 0]])


def test_query_batches_keep_queries_whole_and_follow_row_groups():
    offsets = np.array([0, 3, 10, 12, 20, 21, 30], dtype=np.int64)
    # row groups end on query boundaries: one batch per row group
    assert query_batches(offsets, np.array([10, 20, 30]), 100).tolist() == [0, 10, 20, 30]
    # a query crossing a row group's end goes to the next batch
    assert query_batches(offsets, np.array([11, 25, 30]), 100).tolist() == [0, 10, 21, 30]
    # the budget cuts at query boundaries; a query longer than it is a batch alone
    assert query_batches(offsets, np.array([30]), 4).tolist() == [0, 3, 10, 12, 20, 21, 30]
    assert query_batches(offsets, np.array([30]), 12).tolist() == [0, 12, 21, 30]
    assert query_batches(np.zeros(1, dtype=np.int64), np.array([], dtype=np.int64), 5).tolist() == [0]


def test_batches_of_a_real_file_cover_it(matrix_file):
    path, x = matrix_file
    ds = read_dataset(path, features=False)
    rows = ParquetFeatureRows(path, ds.feature_names)
    for budget in (1, 7, 37, 10_000):
        cuts = query_batches(ds.offsets, rows.row_group_ends(), budget)
        assert cuts[0] == 0 and cuts[-1] == x.shape[0] and np.all(np.diff(cuts) > 0)
        assert np.isin(cuts, ds.offsets).all()  # whole queries
        sizes = np.diff(cuts)
        alone = np.isin(cuts[:-1], ds.offsets) & (sizes > budget)
        assert np.all((sizes <= budget) | (alone & np.isin(cuts[1:], ds.offsets)))
        assert np.array_equal(np.concatenate([rows[a:b] for a, b in zip(cuts[:-1], cuts[1:])]), x)
