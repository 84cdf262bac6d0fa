"""Feature logs in: the LTR plugins' ``_ltrlog`` entries and Solr's ``[features]`` output, in the documented response
formats, joined with judgments, convert and train; and the loop closes: the trained model exports with the
engine's feature names and passes --check on the converted data."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rankcli.formats.feature_logs import read_judgments, read_ltr_log, read_solr_features
from rankcli.formats.parquet import read_dataset, read_metadata

NAMES = ["title_bm25", "body_bm25", "popularity", "recency", "clicks"]


def _sample(models, n_queries=40):
    ds = read_dataset(models["data"] / "train.parquet")
    end = int(ds.offsets[n_queries])
    return ds, end


def _ltr_log(ds, end, path):
    """One search response per query, each hit logging five features; an unmatched feature (a 0 here) has no
    value, as the plugin logs it."""
    lines = []
    for q in range(int(np.searchsorted(ds.offsets, end))):
        a, b = ds.offsets[q], ds.offsets[q + 1]
        hits = []
        for r in range(a, b):
            entry = [{"name": n} if ds.features[r, j] == 0 else {"name": n, "value": float(ds.features[r, j])}
                     for j, n in enumerate(NAMES)]
            hits.append({"_index": "docs", "_id": f"d{r}", "_score": 1.0,
                         "fields": {"_ltrlog": [{"log_entry1": entry}]}, "matched_queries": ["logged_featureset"]})
        lines.append(json.dumps({"qid": int(ds.qids[a]), "response": {"hits": {"hits": hits}}}))
    path.write_text("\n".join(lines) + "\n")


def _solr_log(ds, end, path):
    docs = {}
    for q in range(int(np.searchsorted(ds.offsets, end))):
        a, b = ds.offsets[q], ds.offsets[q + 1]
        docs[str(ds.qids[a])] = {"responseHeader": {"status": 0}, "response": {"numFound": int(b - a), "docs": [
            {"id": f"d{r}", "score": 1.0, "[features]": ",".join(f"{n}={float(ds.features[r, j])!r}"
                                                                 for j, n in enumerate(NAMES))}
            for r in range(a, b)]}}
    path.write_text(json.dumps(docs))


def _qrels(ds, end, path, ranklib: bool):
    rows = [f"{int(ds.labels[r])} qid:{ds.qids[r]} # d{r} some title" if ranklib else
            f"{ds.qids[r]} 0 d{r} {int(ds.labels[r])}" for r in range(end)]
    path.write_text("# judgments\n" + "\n".join(rows) + "\n")


@pytest.mark.parametrize("kind", ["ltr-log", "solr-features"])
def test_logs_convert_train_and_export_back(models, tmp_path, run, kind):
    ds, end = _sample(models)
    log = tmp_path / ("log.jsonl" if kind == "ltr-log" else "solr.json")
    (_ltr_log if kind == "ltr-log" else _solr_log)(ds, end, log)
    _qrels(ds, end, tmp_path / "judgments.txt", ranklib=kind == "solr-features")
    status, _, _ = run("convert", "--from", kind, log, "--qrels", tmp_path / "judgments.txt", "-o",
                       tmp_path / "train.parquet")
    assert status == 0
    got = read_dataset(tmp_path / "train.parquet")
    assert json.loads(read_metadata(tmp_path / "train.parquet")["feature_names"]) == NAMES
    assert got.n_rows == end and np.array_equal(got.labels, ds.labels[:end])
    expected = ds.features[:end, :5]
    if kind == "ltr-log":  # an unmatched feature is missing, NaN
        expected = np.where(expected == 0, np.nan, expected)
    assert np.array_equal(got.features, expected, equal_nan=True)
    assert run("train", tmp_path / "train.parquet", "-o", tmp_path / "m", "--trees", "5", "--threads", "1")[0] == 0
    info = json.loads((tmp_path / "m" / "rankcli.json").read_text())
    assert info["engine_features"] == NAMES
    target = "elasticsearch-ltr" if kind == "ltr-log" else "solr"
    status, out, _ = run("export-model", tmp_path / "m", "-t", target, "-o", tmp_path / "out", "--json", "--check",
                         tmp_path / "train.parquet")
    summary = json.loads(out)
    assert status == 0 and summary["check"]["passed"]
    assert {f["name"] for f in summary["features"]} <= set(NAMES)
    if kind == "ltr-log":
        names = [f["name"] for f in json.loads((tmp_path / "out" / "featureset.json").read_text())["featureset"][
            "features"]]
        assert set(names) <= set(NAMES)


def test_log_readers_refuse_what_they_cannot_read(tmp_path):
    from rankcli.errors import InputError

    (tmp_path / "a.jsonl").write_text('{"qid": 1, "response": {"hits": {"hits": [{"_id": "x"}]}}}\n')
    with pytest.raises(InputError, match="a.jsonl: item 1: hit 'x' has no fields._ltrlog"):
        read_ltr_log(tmp_path / "a.jsonl")
    (tmp_path / "b.json").write_text('{"7": {"response": {"docs": [{"id": "x", "[features]": "a=1,b"}]}}}')
    with pytest.raises(InputError, match="not name=value"):
        read_solr_features(tmp_path / "b.json")
    (tmp_path / "q.txt").write_text("1 0 d1 2\nbroken line\n")
    with pytest.raises(InputError, match="q.txt:2"):
        read_judgments(tmp_path / "q.txt")
