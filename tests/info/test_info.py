"""rankcli.info: what a dataset looks like, streamed chunk by chunk or read from a Parquet file."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rankcli.errors import SchemaError
from rankcli.info import SummaryBuilder, format_label, summarize_dataset, summarize_parquet


def test_summary_of_graded_queries():
    labels = np.array([2, 0, 0, 0, 1, 0, np.nan])
    offsets = np.array([0, 2, 4, 7])
    s = summarize_dataset(labels, offsets, 5, has_docid=True)
    assert (s.rows, s.queries, s.features) == (7, 3, 5)
    assert s.docs_per_query == {"min": 2, "median": 2.0, "max": 3, "mean": 2.333}
    assert s.label_histogram == {"0": 4, "1": 1, "2": 1, "nan": 1}
    assert s.queries_without_relevant == 1 and not s.integer_labels  # a NaN label is not an integer grade
    assert s.as_dict()["docid"] is True and "seconds" not in s.as_dict()


def test_chunks_give_the_summary_of_the_whole():
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 9, size=50)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    labels = rng.integers(0, 5, size=offsets[-1]).astype(np.float64)
    builder = SummaryBuilder()
    for a, b in ((0, 20), (20, 21), (21, 50)):
        builder.add(labels[offsets[a]:offsets[b]], offsets[a:b + 1] - offsets[a])
    assert builder.build(3).as_dict() == summarize_dataset(labels, offsets, 3).as_dict()


def test_many_label_values_are_binned():
    labels = np.linspace(0, 1, 101)
    s = summarize_dataset(labels, np.array([0, 101]), 1)
    assert len(s.label_histogram) == 10 and sum(s.label_histogram.values()) == 101
    assert list(s.label_histogram)[0] == "[0, 0.1)" and list(s.label_histogram)[-1] == "[0.9, 1]"
    assert format_label(0.07) == "0.07" and format_label(3.0) == "3" and format_label(float("nan")) == "nan"


def test_parquet_summary_reads_qid_and_label(tmp_path):
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"qid": [1, 1, 2], "label": [1.0, 0.0, 0.0], "f1": [0.0, 1.0, 2.0],
                             "docid": ["a", "b", "c"]}), path)
    s = summarize_parquet(path)
    assert (s.rows, s.queries, s.features, s.has_docid, s.queries_without_relevant) == (3, 2, 1, True, 1)
    assert list(s.as_dict())[-1] == "metadata" and s.as_dict()["metadata"] == {}  # no rankcli.* footer keys


@pytest.mark.parametrize("table, message", [
    (pa.table({"qid": ["a"], "label": [1.0]}), "qid must be an integer column and label a number column"),
    (pa.table({"qid": [1, None], "label": [1.0, 0.0]}), "qid and label must not have missing values"),
    (pa.table({"qid": [1, 2, 1], "label": [1.0, 0.0, 0.0]}), "qid 1"),
    (pa.table({"qid": [1]}), "missing column label"),
])
def test_parquet_summary_refuses_what_is_not_a_dataset(tmp_path, table, message):
    path = tmp_path / "bad.parquet"
    pq.write_table(table, path)
    with pytest.raises(SchemaError, match=message):
        summarize_parquet(path)
