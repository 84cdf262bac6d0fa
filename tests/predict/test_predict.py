"""rankcli.predict: the run of a model over a dataset, in both formats, holds the model's scores for every row (Parquet
in the dataset's order; TREC best first per query, ranks 1, 2, ...), and the summary counts what was scored."""

from __future__ import annotations

import numpy as np
import pytest

from rankcli.cli import main
from rankcli.formats.parquet import read_dataset, read_metadata
from rankcli.formats.runs import read_run_columns
from rankcli.predict import predict_dataset, predict_file
from tests.conftest import SAMPLE


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    d = tmp_path_factory.mktemp("predict")
    assert main(["convert", str(SAMPLE / "letor" / "test.txt"), "-o", str(d / "test.parquet")]) == 0
    assert main(["train", str(d / "test.parquet"), "-o", str(d / "m"), "--trees", "2", "--threads", "1"]) == 0
    return d / "m", d / "test.parquet"


def test_parquet_run_holds_the_model_scores_in_the_dataset_order(trained, tmp_path):
    model, data = trained
    summary = predict_file(model, data, tmp_path / "run.parquet")
    ds, scores, _ = predict_dataset(model, data)
    assert summary == {"run": str(tmp_path / "run.parquet"), "format": "parquet", "rows": ds.n_rows,
                       "queries": ds.n_queries, "model": str(model)}
    cols = read_run_columns(tmp_path / "run.parquet")
    assert np.array_equal(cols.qids, ds.qids) and np.array_equal(cols.scores, scores)
    assert np.array_equal(cols.labels, ds.labels)
    assert read_metadata(tmp_path / "run.parquet")["data"] == str(data)


def test_trec_run_is_best_first_per_query(trained, tmp_path):
    model, data = trained
    predict_file(model, data, tmp_path / "run.txt", fmt="trec", tag="t")
    ds = read_dataset(data, features=False)
    lines = [line.split() for line in (tmp_path / "run.txt").read_text().splitlines()]
    assert len(lines) == ds.n_rows and all(line[1] == "Q0" and line[5] == "t" for line in lines)
    for q in np.unique(ds.qids):
        mine = [line for line in lines if line[0] == str(q)]
        scores = [float(line[4]) for line in mine]
        assert scores == sorted(scores, reverse=True)
        assert [int(line[3]) for line in mine] == list(range(1, len(mine) + 1))


def test_run_of_a_labelled_dataset_of_zero_rows_keeps_the_label_column(trained, tmp_path, capsys):
    import pyarrow.parquet as pq

    from rankcli.formats.runs import write_run
    from rankcli.predict import write_run as write_whole_run

    model, data = trained
    empty = tmp_path / "empty.parquet"
    pq.write_table(pq.read_table(data).slice(0, 0), empty)
    streamed, whole = tmp_path / "streamed.parquet", tmp_path / "whole.parquet"
    predict_file(model, empty, streamed)
    ds, scores, _ = predict_dataset(model, empty)
    write_whole_run(whole, ds, scores, metadata=read_metadata(streamed))
    schema = pq.read_schema(streamed)
    assert schema.names == ["qid", "docid", "label", "score"] and str(schema.field("label").type) == "double"
    assert pq.read_schema(whole) == schema
    write_run(tmp_path / "direct.parquet", np.zeros(0, np.int64), np.zeros(0), labels=np.zeros(0))
    assert pq.read_schema(tmp_path / "direct.parquet").names == ["qid", "row", "label", "score"]
    capsys.readouterr()
    assert main(["eval", str(streamed)]) == 3  # a run of no queries, not a run without labels
    assert capsys.readouterr().err == f"Error: {streamed}: the run has no rows\n"
