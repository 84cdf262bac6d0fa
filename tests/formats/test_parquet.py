"""Parquet readers against hostile files: duplicate column names, uint64 query ids beyond int64, links that loop."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rankcli.errors import ExitStatus, SchemaError
from rankcli.formats.parquet import column_names, qids_as_int64, read_dataset, read_table
from tests.conftest import run_main as run

BIG = 2 ** 63  # the first uint64 value that int64 cannot hold


def write(path, columns: dict, names: list[str] | None = None):
    arrays = list(columns.values())
    pq.write_table(pa.Table.from_arrays(arrays, names=names or list(columns)), str(path))
    return path


def test_duplicate_column_is_a_schema_error_not_a_key_error(tmp_path, capsys):
    """A run with two `score` columns is a schema error (which one would be read?), not a KeyError traceback
    (exit 1)."""
    path = write(tmp_path / "run.parquet", {"qid": pa.array([1, 1]), "label": pa.array([1.0, 0.0]),
                                            "s1": pa.array([0.1, 0.2]), "s2": pa.array([0.3, 0.4])},
                 names=["qid", "label", "score", "score"])
    message = f"{path}: column score appears 2 times; column names must be unique (which one would be read?)"
    with pytest.raises(SchemaError) as info:
        column_names(path)
    assert str(info.value) == message
    with pytest.raises(SchemaError):
        read_table(path, ["qid"])
    for command in (["eval", path], ["compare", path, path, "--name", "a", "--name", "b"], ["info", path]):
        status, out, err = run(capsys, *command)
        assert (status, out, err) == (ExitStatus.INVALID_INPUT, "", f"Error: {message}\n"), command


def test_uint64_qids_are_exact_or_refused_never_wrapped(tmp_path, capsys):
    """qids of 2**63 and above are written exactly by `eval --per-query` or refused, never wrapped to negative
    int64."""
    fits = write(tmp_path / "fits.parquet", {"qid": pa.array([BIG - 1, BIG - 1, 5], pa.uint64()),
                                             "label": pa.array([1.0, 0.0, 1.0]), "score": pa.array([0.3, 0.2, 0.1])})
    status, _, err = run(capsys, "eval", fits, "--per-query", tmp_path / "pq.parquet")
    assert status == 0, err
    assert pq.read_table(tmp_path / "pq.parquet").column("qid").to_pylist() == [BIG - 1, 5]  # file order

    over = write(tmp_path / "over.parquet", {"qid": pa.array([5, BIG + 3], pa.uint64()),
                                             "label": pa.array([1.0, 0.0]), "score": pa.array([0.3, 0.2])})
    message = (f"{over}: column qid: {BIG + 3} at row 1 is beyond the int64 range of query ids "
               f"(at most {BIG - 1}); renumber the queries")
    status, out, err = run(capsys, "eval", over, "--per-query", tmp_path / "pq2.parquet")
    assert (status, err) == (ExitStatus.INVALID_INPUT, f"Error: {message}\n")
    assert not (tmp_path / "pq2.parquet").exists()

    per_query = write(tmp_path / "perq.parquet", {"qid": pa.array([BIG], pa.uint64()), "ndcg@10": pa.array([0.5])})
    status, _, err = run(capsys, "compare", per_query, per_query, "--name", "a", "--name", "b")
    assert status == ExitStatus.INVALID_INPUT and "beyond the int64 range of query ids" in err

    data = write(tmp_path / "data.parquet", {"qid": pa.array([BIG + 1], pa.uint64()), "label": pa.array([1.0]),
                                             "f1": pa.array([0.5], pa.float32())})
    with pytest.raises(SchemaError, match=r"column qid: 9223372036854775809 at row 0 is beyond the int64 range"):
        read_dataset(data)


def test_qids_as_int64_types():
    assert qids_as_int64("x", pa.array([1, 2], pa.int32())).dtype == np.int64
    assert qids_as_int64("x", pa.chunked_array([pa.array([BIG - 1], pa.uint64())])).tolist() == [BIG - 1]
    with pytest.raises(SchemaError, match="column qid must be integer, got double"):
        qids_as_int64("x", pa.array([1.0]))
    with pytest.raises(SchemaError, match="column qid: missing value at row 1"):
        qids_as_int64("x", pa.array([1, None]))


def test_trec_query_ids_beyond_int64_stay_exact_strings(tmp_path, capsys):
    """A TREC run's query id of 20 digits was an OverflowError traceback; it is kept as its text."""
    (tmp_path / "r.trec").write_text("99999999999999999999 Q0 d1 1 0.5 r\n99999999999999999999 Q0 d2 2 0.4 r\n")
    (tmp_path / "q.qrels").write_text("99999999999999999999 0 d1 1\n")
    status, _, err = run(capsys, "eval", tmp_path / "r.trec", "--qrels", tmp_path / "q.qrels", "--per-query",
                         tmp_path / "pq.parquet")
    assert status == 0, err
    assert pq.read_table(tmp_path / "pq.parquet").column("qid").to_pylist() == ["99999999999999999999"]


@pytest.mark.parametrize("command", ["info", "eval"])
def test_symlink_loop_is_not_no_such_file(tmp_path, capsys, command):
    (tmp_path / "loop.parquet").symlink_to(tmp_path / "loop.parquet")
    status, _, err = run(capsys, command, tmp_path / "loop.parquet")
    assert (status, err) == (ExitStatus.INVALID_INPUT, f"Error: {tmp_path}/loop.parquet: symbolic link loop "
                                                       "(too many levels of symbolic links)\n")
