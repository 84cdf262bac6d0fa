"""rankcli.formats.partitions: query-aligned partitions of a Parquet dataset (what ``train --dask`` reads)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from rankcli.dataset import Dataset, offsets_from_qids
from rankcli.errors import SchemaError
from rankcli.formats import parquet, partitions
from tests.conftest import SAMPLE


@pytest.fixture(scope="module")
def train_file(tmp_path_factory) -> Path:
    """The LETOR sample's training file converted to Parquet: one row group (rankcli convert's layout)."""
    from rankcli.convert import convert

    out = tmp_path_factory.mktemp("sample") / "train.parquet"
    convert([str(SAMPLE / "letor" / "train.txt")], out)
    return out


def write_row_groups(ds: Dataset, path: Path, target_rows: int) -> Path:
    """A query-aligned file with small row groups (about ``target_rows`` rows each)."""
    table = parquet.dataset_table(ds)
    with parquet.QueryAlignedWriter(path, table.schema, {"kind": "dataset"}, target_rows=target_rows) as w:
        w.write(table)
    return path


def test_partitions_follow_row_groups_and_never_split_a_query(train_file, tmp_path):
    ds = parquet.read_dataset(train_file)
    path = write_row_groups(ds, tmp_path / "rg.parquet", 300)
    n_groups = pq.ParquetFile(path).num_row_groups
    assert n_groups > 3
    plan = partitions.plan_partitions(path)
    assert len(plan) == n_groups and [p.row_groups for p in plan.partitions] == [(i,) for i in range(n_groups)]
    joined = partitions.plan_partitions(path, rows_per_partition=1000)
    assert all(len(p.row_groups) >= 1 for p in joined.partitions) and len(joined) < n_groups
    for pl in (plan, joined, partitions.plan_partitions(train_file, min_partitions=5)):
        assert sum(p.n_rows for p in pl.partitions) == ds.n_rows == pl.n_rows
        rows = 0
        for part, sizes in zip(pl.partitions, pl.group_sizes):
            features, labels = partitions.read_partition(part, pl.feature_names)
            np.testing.assert_array_equal(labels, ds.labels[rows: rows + part.n_rows])
            np.testing.assert_array_equal(features, ds.features[rows: rows + part.n_rows])
            # the group sizes are exactly the queries of these rows
            np.testing.assert_array_equal(sizes, np.diff(offsets_from_qids(ds.qids[rows: rows + part.n_rows])))
            rows += part.n_rows


def test_one_row_group_is_cut_at_query_boundaries_for_more_workers(train_file):
    assert pq.ParquetFile(train_file).num_row_groups == 1
    plan = partitions.plan_partitions(train_file, min_partitions=2)
    assert len(plan) == 2
    assert abs(plan.partitions[0].n_rows - plan.partitions[1].n_rows) < 200  # near-equal halves


def test_cutting_stops_at_single_queries(tmp_path):
    """More partitions wanted than there are queries: one partition per query, none split."""
    ds = Dataset(qids=np.array([1, 1, 1, 2, 2, 3], dtype=np.int64), labels=np.array([1.0, 0, 0, 2, 0, 1]),
                 features=np.arange(6, dtype=np.float32).reshape(6, 1), feature_names=["f1"])
    path = tmp_path / "three.parquet"
    parquet.write_dataset(path, ds)
    plan = partitions.plan_partitions(path, min_partitions=10)
    assert [(p.start, p.stop) for p in plan.partitions] == [(0, 3), (3, 5), (5, 6)]
    assert [s.tolist() for s in plan.group_sizes] == [[3], [2], [1]]


def test_a_query_that_reappears_is_refused(tmp_path):
    import pyarrow as pa

    path = tmp_path / "split.parquet"
    pq.write_table(pa.table({"qid": [1, 2, 1], "label": [0.0, 1.0, 0.0], "f1": pa.array([0, 1, 2], pa.float32())}),
                   path)
    with pytest.raises(SchemaError, match=rf"^{path}: .*qid 1"):
        partitions.plan_partitions(path)
