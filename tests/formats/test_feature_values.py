"""Feature columns that are not float32 (a float64 column of a file rankcli did not write): a finite value beyond
float32 is refused by every reader of features (exit 3 naming the file, the column and the row), as convert refuses
it in text, where it used to become an infinity silently (predict scored a row with 1e300 as with inf, exit 0); an
infinity or NaN stored as such is kept, as convert keeps the literals."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rankcli.errors import InputError
from rankcli.formats.feature_values import check_columns, float32_overflow, to_float32
from rankcli.formats.parquet import QueryAlignedWriter, row_group_rows
from tests.conftest import SAMPLE
from tests.conftest import run_main as run

MESSAGE = "column f3: 1e+300 at row 5 overflows float32 (largest finite 3.4028235e+38)"


def test_only_finite_values_beyond_float32_are_refused():
    f32max = float(np.finfo(np.float32).max)
    halfway = 2.0 ** 128 - 2.0 ** 103  # the first double that rounds to float32's infinity (ties to even)
    ok = np.array([0.0, -0.0, 1e-300, -f32max, f32max, np.nextafter(halfway, 0), np.inf, -np.inf, np.nan])
    assert float32_overflow(ok) == -1
    assert np.array_equal(to_float32(ok, "p", "f1"), ok.astype(np.float32), equal_nan=True)
    for bad in (halfway, -halfway, 1e300, -1e300, 1.7976931348623157e308):
        values = np.array([1.0, np.inf, np.nan, bad, 2e300])
        assert float32_overflow(values) == 3
        with pytest.raises(InputError, match=r"^p: column f2: .* at row 13 overflows float32"):
            to_float32(values, "p", "f2", lambda i: 10 + i)
    assert float32_overflow(np.array([2 ** 62, -2 ** 63], dtype=np.int64)) == -1  # integers always fit
    same = np.ones(3, dtype=np.float32)
    assert to_float32(same, "p", "f1") is same  # float32 columns: no copy, no check


def test_check_columns_names_the_row_of_the_file():
    table = pa.table({"f1": pa.array([1.0, 2.0], pa.float64()), "f2": pa.array([1.0, -1e39], pa.float64()),
                      "f3": pa.array([1, 2], pa.float32())})
    check_columns(table, ["f1", "f3"], "d.parquet")
    with pytest.raises(InputError, match=r"d.parquet: column f2: -1e\+39 at row 101 overflows"):
        check_columns(table, ["f1", "f2"], "d.parquet", first_row=100)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A model, and the sample's test set with f3 as float64 holding 1e300 at row 5 (split in row groups of 100 rows,
    so that row 5 of the file is also checked through a row group that does not start the file: row 105 variant)."""
    from rankcli.cli import main

    d = tmp_path_factory.mktemp("features")
    assert main(["convert", str(SAMPLE / "letor" / "test.txt"), "-o", str(d / "test.parquet")]) == 0
    assert main(["train", str(d / "test.parquet"), "-o", str(d / "m"), "--trees", "2", "--threads", "1"]) == 0
    table = pq.read_table(d / "test.parquet")
    values = table.column("f3").to_numpy().astype(np.float64)
    values[5] = 1e300
    i = table.column_names.index("f3")
    table = table.set_column(i, pa.field("f3", pa.float64(), nullable=False), pa.array(values))
    pq.write_table(table, d / "big.parquet", row_group_size=100)
    return d


COMMANDS = [
    ["predict", "{d}/m", "{d}/big.parquet", "-o", "{out}/run.parquet"],
    ["predict", "{d}/m", "{d}/big.parquet", "-o", "{out}/run.txt", "--format", "trec"],
    ["eval", "{d}/big.parquet", "--model", "{d}/m"],
    ["explain", "{d}/m", "{d}/big.parquet"],
    ["train", "{d}/big.parquet", "-o", "{out}/m2", "--trees", "1", "--threads", "1"],
    ["simulate-clicks", "{d}/big.parquet", "-o", "{out}/clicks.parquet"],
    ["simulate-clicks", "{d}/big.parquet", "-o", "{out}/clicks.parquet", "--ranker", "{d}/m"],
    ["export", "{d}/big.parquet", "-o", "{out}/big.txt"],
    ["split", "{d}/big.parquet", "-o", "{out}/folds", "--folds", "3"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=[" ".join(c[:1] + c[5:]) for c in COMMANDS])
def test_every_reader_of_features_refuses_the_value(files, tmp_path, capsys, command):
    status, out, err = run(capsys, *(a.format(d=files, out=tmp_path) for a in command))
    assert status == 3 and f"{files}/big.parquet: {MESSAGE}" in err, err
    assert not any(p.name.startswith(("run", "clicks", "big", "m2", "folds")) for p in tmp_path.iterdir())


def test_the_dask_partition_reader_refuses_it_naming_the_file_row(files):
    from rankcli.formats.partitions import plan_partitions, read_partition

    plan = plan_partitions(files / "test.parquet")
    read_partition(plan.partitions[0], plan.feature_names)  # float32 columns: read as they are
    table = pq.read_table(files / "big.parquet")
    values = table.column("f3").to_numpy().copy()
    values[5], values[205] = 1.0, -1e300  # in the third row group of 100 rows
    table = table.set_column(table.column_names.index("f3"), "f3", pa.array(values))
    with QueryAlignedWriter(files / "big2.parquet", table.schema, target_rows=100) as writer:
        writer.write(table)  # row groups of about 100 rows, ending on queries
    plan = plan_partitions(files / "big2.parquet", rows_per_partition=1)
    group = int(np.searchsorted(np.cumsum(row_group_rows(files / "big2.parquet")), 205, side="right"))
    part = next(p for p in plan.partitions if p.row_groups == (group,))
    assert group > 0 and part.start == 0  # the row is named from the file's start, not the partition's
    read_partition(plan.partitions[0], plan.feature_names)
    with pytest.raises(InputError, match=r"big2.parquet: column f3: -1e\+300 at row 205 overflows float32"):
        read_partition(part, plan.feature_names)


def test_infinities_and_nan_stored_as_such_are_kept(files, tmp_path, capsys):
    table = pq.read_table(files / "test.parquet")
    values = table.column("f3").to_numpy().astype(np.float64)
    values[[1, 2, 3]] = [np.inf, -np.inf, np.nan]
    table = table.set_column(table.column_names.index("f3"), "f3", pa.array(values))
    pq.write_table(table, tmp_path / "odd.parquet")
    status, _, err = run(capsys, "predict", files / "m", tmp_path / "odd.parquet", "-o", tmp_path / "run.parquet")
    assert status == 0, err
