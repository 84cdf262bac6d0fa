"""rankcli.formats.metric_file: the per-query metric file's one writer and one reader."""

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rankcli.errors import SchemaError
from rankcli.formats.metric_file import KIND, is_metric_file, read_metric_file, write_metric_file
from rankcli.formats.parquet import column_names, read_metadata


@pytest.mark.parametrize("qids", [np.array([3, 1, 2], dtype=np.int64), np.array(["q3", "q1", "401"])])
def test_round_trip_keeps_ids_values_nan_and_footer(tmp_path, qids):
    path = tmp_path / "pq.parquet"
    values = {"ndcg@10": np.array([0.5, np.nan, 1.0]), "map": np.array([0.25, 0.0, 1.0])}
    convention = {"gain": "linear", "no_relevant": "zero"}
    write_metric_file(path, qids, values, convention=convention, extra={"source": "run.parquet"})
    assert column_names(path) == ["qid", "ndcg@10", "map"]
    meta = read_metadata(path)
    assert meta["kind"] == KIND == "per-query"
    assert json.loads(meta["convention"]) == convention
    assert json.loads(meta["metrics"]) == ["ndcg@10", "map"] and meta["source"] == "run.parquet"
    assert list(meta) == ["version", "kind", "convention", "metrics", "source"]
    got = read_metric_file(path, ["map", "ndcg@10"])
    assert got.qids.tolist() == qids.tolist()
    assert got.qids.dtype.kind == ("i" if qids.dtype.kind == "i" else "U")
    np.testing.assert_array_equal(got.values["ndcg@10"], values["ndcg@10"])   # NaN where the query has no value
    np.testing.assert_array_equal(got.values["map"], values["map"])
    assert got.metadata == meta


def test_one_kind_marks_a_metric_file():
    """Only the spelling the writer writes marks a metric file; a file without label and score is one whatever its
    footer says (a file from another tool), one with them is a run unless its kind is per-query."""
    assert is_metric_file(["qid", "label", "score"], {"kind": "per-query"})
    for other in ("per_query", "eval-per-query", "metrics-per-query", "run", ""):
        assert not is_metric_file(["qid", "label", "score"], {"kind": other})
    assert not is_metric_file(["qid", "label", "score"], {})
    assert is_metric_file(["qid", "ndcg@10"], {})
    assert is_metric_file(["qid", "ndcg@10"], {"kind": "run"})


def _write(path, **columns):
    pq.write_table(pa.table(columns), str(path))


@pytest.mark.parametrize("columns, message", [
    ({"qid": pa.array([1, 1]), "map": pa.array([0.1, 0.2])}, "query 1 appears in more than one row"),
    ({"qid": pa.array([1.0, 2.0]), "map": pa.array([0.1, 0.2])}, "column qid must be integer or string, got double"),
    ({"qid": pa.array([1, 2]), "map": pa.array(["a", "b"])}, "column map must be numeric, got string"),
    ({"qid": pa.array([1, 2]), "map": pa.array([0.1, np.inf])}, "column map of query 2 is inf, not a metric value"),
])
def test_reader_refuses_what_is_no_metric_file(tmp_path, columns, message):
    path = tmp_path / "bad.parquet"
    _write(path, **columns)
    with pytest.raises(SchemaError, match=message):
        read_metric_file(path, ["map"])
