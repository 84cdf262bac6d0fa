"""Parquet datasets with columns of the wrong type: an int64 or binary ``docid``, a list feature column, a string
feature holding a non-number. Every command that reads a dataset's rows refuses them with exit 3 naming the file and
the column (and the row of the non-number, counted from 0 in the file), never a traceback; a string feature column
that holds numbers is read as those numbers."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rankcli.cli import main
from rankcli.errors import ExitStatus
from tests.conftest import run_main as run

N = 40
F1 = np.linspace(0, 1, N).astype(np.float32)


def _write(path, row_group_size: int = N, **columns) -> None:
    base = {"qid": np.repeat(np.arange(1, 5), 10).astype(np.int64), "label": (np.arange(N) % 3).astype(np.float64)}
    pq.write_table(pa.table({**base, **columns}), path, row_group_size=row_group_size)


def _strings(bad_row: int | None) -> pa.Array:
    values = [repr(float(x)) for x in F1[::-1]]
    if bad_row is not None:
        values[bad_row] = "abc"
    return pa.array(values, pa.string())


CASES = {
    "docid int64": (dict(docid=np.arange(N, dtype=np.int64), f1=F1, f2=F1),
                    "column docid: int64 is not a docid type; the documents' names are strings: cast the column to "
                    "string"),
    "docid binary": (dict(docid=pa.array([b"d%d" % i for i in range(N)], pa.binary()), f1=F1, f2=F1),
                     "column docid: binary is not a docid type"),
    "list feature": (dict(f1=F1, f2=pa.array([[1.0, 2.0]] * N, pa.list_(pa.float64()))),
                     "column f2: list<element: double> is not a feature type; a feature column holds one number per "
                     "row (integer or floating point); a list of numbers is one column per number (f1, f2, ...)"),
    "list label": (dict(label=pa.array([[1.0]] * N, pa.list_(pa.float64())), f1=F1, f2=F1),  # was a traceback
                   "column label: list<element: double> is not a label type; a label column holds one number per "
                   "row (integer or floating point)"),
    "string label": (dict(label=pa.array(["1", "abc"] * (N // 2)), f1=F1, f2=F1),  # was a traceback
                     "column label: string is not a label type; a label column holds one number per row"),
    "string not a number": (dict(f1=F1, f2=_strings(27)),
                            "column f2: 'abc' at row 27 is not a number (a string feature column holds numbers)"),
}
COMMANDS = {
    "train": ["train", "{data}", "-o", "{tmp}/m", "--trees", "1", "--threads", "1"],
    "train --valid": ["train", "{ok}", "--valid", "{data}", "-o", "{tmp}/m", "--trees", "1", "--threads", "1"],
    "predict": ["predict", "{model}", "{data}", "-o", "{tmp}/r.parquet"],
    "eval --model": ["eval", "{data}", "--model", "{model}"],
    "explain": ["explain", "{model}", "{data}", "--repeats", "1"],
    "simulate-clicks": ["simulate-clicks", "{data}", "-o", "{tmp}/c.parquet"],
    "simulate-clicks --ranker": ["simulate-clicks", "{data}", "-o", "{tmp}/c.parquet", "--ranker", "{model}"],
}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Each bad file (row groups of 10 rows: the row named is the file's, not the group's), a good one, a model."""
    d = tmp_path_factory.mktemp("types")
    for name, (columns, _) in CASES.items():
        _write(d / f"{name.replace(' ', '-')}.parquet", row_group_size=10, **columns)
    _write(d / "ok.parquet", f1=F1, f2=F1[::-1].copy())
    assert main(["train", str(d / "ok.parquet"), "-o", str(d / "model"), "--trees", "2", "--threads", "1",
                 "--min-data-in-leaf", "2"]) == 0
    return d


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("case", list(CASES))
def test_wrong_column_types_are_exit_3_naming_file_and_column(capsys, tmp_path, files, case, command):
    data = files / f"{case.replace(' ', '-')}.parquet"
    args = [a.format(data=data, ok=files / "ok.parquet", model=files / "model", tmp=tmp_path)
            for a in COMMANDS[command]]
    status, out, err = run(capsys, *args)
    assert (status, out) == (ExitStatus.INVALID_INPUT, ""), err
    errors = [line for line in err.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and errors[0].startswith(f"Error: {data}: {CASES[case][1]}"), err
    assert err.endswith(errors[0] + "\n")  # (train says what it trains on first: the features are read by row)
    assert list(tmp_path.iterdir()) == [], "an output was left behind"


def test_a_string_feature_column_of_numbers_is_read_as_the_numbers(capsys, tmp_path, files):
    _write(tmp_path / "s.parquet", f1=F1, f2=_strings(None))
    status, out, err = run(capsys, "eval", tmp_path / "s.parquet", "--model", files / "model", "--json")
    assert status == 0, err
    status, expected, _ = run(capsys, "eval", files / "ok.parquet", "--model", files / "model", "--json")
    assert out == expected  # the same numbers: float32(repr(float(x))) == x for every float32 x
