"""rankcli.formats.runs: the Parquet run round-trips through its reader (docid or row names, labels optional), its
reader's refusals, and the TREC run's lines."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from rankcli.errors import InputError, SchemaError
from rankcli.formats.parquet import read_metadata, write_dataset, write_table
from rankcli.formats.runs import read_run_columns, write_run, write_trec_run


def test_parquet_run_round_trip_with_docids(tmp_path, rng):
    qids = np.repeat([7, 3, 9], [4, 2, 3]).astype(np.int64)
    scores = rng.normal(size=qids.shape[0])
    labels = rng.integers(0, 3, size=qids.shape[0]).astype(np.float64)
    docids = np.array([f"d{i}" for i in range(qids.shape[0])], dtype=object)
    path = tmp_path / "run.parquet"
    write_run(path, qids, scores, docids=docids, labels=labels, metadata={"model": "m"})
    cols = read_run_columns(path, docids=True)
    assert cols.qids.dtype == np.int64 and np.array_equal(cols.qids, qids)
    assert np.array_equal(cols.scores, scores) and np.array_equal(cols.labels, labels)
    assert cols.names().tolist() == docids.tolist()
    assert read_metadata(path)["kind"] == "run" and read_metadata(path)["model"] == "m"
    assert read_run_columns(path).names is None


def test_parquet_run_without_docids_names_rows_and_without_labels_has_no_label_column(tmp_path):
    qids = np.array([5, 5, 6], dtype=np.int64)
    path = tmp_path / "run.parquet"
    write_run(path, qids, np.array([0.5, 0.1, 0.3]), labels=np.full(3, 1.0))
    assert read_run_columns(path, docids=True).names().tolist() == ["5-0", "5-1", "6-2"]
    unlabelled = tmp_path / "unlabelled.parquet"
    write_run(unlabelled, qids, np.array([0.5, 0.1, 0.3]), labels=np.full(3, np.nan))
    with pytest.raises(SchemaError, match="missing column label"):
        read_run_columns(unlabelled)


def test_reader_refuses_a_dataset_and_an_empty_run(tmp_path):
    from rankcli.dataset import Dataset

    ds = Dataset(qids=np.array([1, 1]), labels=np.array([1.0, 0.0]), features=np.zeros((2, 2), np.float32),
                 feature_names=["f1", "f2"])
    write_dataset(tmp_path / "data.parquet", ds)
    with pytest.raises(SchemaError, match="looks like a dataset"):
        read_run_columns(tmp_path / "data.parquet")
    empty = pa.table({"qid": pa.array([], pa.int64()), "label": pa.array([], pa.float64()),
                      "score": pa.array([], pa.float64())})
    write_table(tmp_path / "empty.parquet", empty)
    with pytest.raises(InputError, match="the run has no rows"):
        read_run_columns(tmp_path / "empty.parquet")


def test_trec_run_lines_in_the_given_order(tmp_path):
    qids = np.array([2, 2, 2, 8], dtype=np.int64)
    scores = np.array([0.1, 0.9, 0.5, 1.0])
    order = np.array([1, 2, 0, 3])
    ranks = np.array([1, 2, 3, 1])
    path = tmp_path / "run.txt"
    write_trec_run(path, qids, scores, order, ranks, docids=np.array(["a", None, "c", "d"], dtype=object),
                   tag="my tag")
    assert path.read_text().splitlines() == ["2 Q0 2-1 1 0.9 mytag", "2 Q0 c 2 0.5 mytag", "2 Q0 a 3 0.1 mytag",
                                             "8 Q0 d 1 1.0 mytag"]


def test_trec_run_lines_are_the_f_string_lines(monkeypatch):
    """The lines built by Arrow are exactly ``f"{qid} Q0 {docid} {rank} {score!r} {tag}"``, block after block: any
    float (subnormal, huge, -0.0, integral), integer and text query ids, non-ASCII document ids."""
    from rankcli.formats import runs

    monkeypatch.setattr(runs, "LINES_AT_ONCE", 7)  # several blocks
    rng = np.random.default_rng(5)
    n = 40
    floats = np.concatenate([rng.normal(size=n - 8) * 10.0 ** rng.integers(-300, 300, n - 8),
                             [-0.0, 0.0, 5e-324, 1.0, -2.0, 1e16, 0.1 + 0.2, 1.7976931348623157e308]])
    for qids in (np.repeat(np.arange(-3, 7), 4), np.array([f"q{i // 4}é" for i in range(n)], dtype=object)):
        docids = np.array([f"d{i}ü" if i % 3 else None for i in range(n)], dtype=object)
        order = rng.permutation(n)
        ranks = rng.integers(1, 99, n)
        got = runs.trec_run_lines(qids, floats, order, ranks, docids=docids, tag="t ag")
        names = [d if d is not None else f"{q}-{i}" for i, (q, d) in enumerate(zip(qids.tolist(), docids.tolist()))]
        q, f = qids.tolist(), floats.tolist()
        want = "".join(f"{q[i]} Q0 {names[i]} {r} {f[i]!r} tag\n" for i, r in zip(order, ranks))
        assert got == want
