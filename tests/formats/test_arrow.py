"""rankcli.formats.arrow: exact Arrow <-> numpy conversions that never import pandas."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from rankcli.formats.arrow import array_from_numpy, column_to_numpy, scalar, strings_array


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64, np.uint64, np.float32, np.float64])
def test_numeric_round_trip_matches_pyarrow(dtype):
    values = np.random.default_rng(1).integers(0, 100, size=37).astype(dtype)
    arr = array_from_numpy(values)
    assert arr.equals(pa.array(values))
    np.testing.assert_array_equal(column_to_numpy(arr), values)
    assert column_to_numpy(arr).dtype == values.dtype


def test_cast_to_the_requested_type_and_strided_input():
    values = np.arange(20, dtype=np.float64)[::3]  # not contiguous
    assert array_from_numpy(values, pa.float32()).equals(pa.array(values, pa.float32()))
    assert array_from_numpy(values.astype(np.int64), pa.float64()).to_pylist() == values.tolist()


def test_non_numeric_values_go_through_pyarrow():
    assert array_from_numpy(np.array(["a", None], dtype=object), pa.string()).to_pylist() == ["a", None]
    assert array_from_numpy(np.array([True, False])).to_pylist() == [True, False]


def test_slices_chunks_nulls_and_empty_columns():
    arr = pa.array(np.arange(10, dtype=np.int64))
    np.testing.assert_array_equal(column_to_numpy(arr.slice(3, 4)), [3, 4, 5, 6])
    chunked = pa.chunked_array([arr.slice(0, 2), arr.slice(7, 3)])
    np.testing.assert_array_equal(column_to_numpy(chunked), [0, 1, 7, 8, 9])
    with_null = column_to_numpy(pa.array([1.5, None]))
    assert with_null[0] == 1.5 and np.isnan(with_null[1])
    empty = column_to_numpy(pa.chunked_array([], pa.float32()))
    assert empty.shape == (0,) and empty.dtype == np.float32


def test_strings_array_nulls_and_invalid_utf8():
    assert strings_array([b"a", None, "\u00e9".encode()]).to_pylist() == ["a", None, "\u00e9"]
    assert strings_array([b"\xff"]).to_pylist() == ["\ufffd"]


def test_scalars():
    assert scalar("x").as_py() == "x" and scalar("x").type == pa.string()
    assert scalar(None).is_valid is False and scalar(None, pa.int64()).type == pa.int64()
    assert scalar(2).type == pa.float64() and scalar(2, pa.float32()).as_py() == 2.0


def test_no_pandas_import():
    code = ("import sys, numpy as np, pyarrow as pa; from rankcli.formats.arrow import *; "
            "a = array_from_numpy(np.arange(5)); column_to_numpy(a); scalar(1.0); scalar('s'); "
            "strings_array([b'x', None]); print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
