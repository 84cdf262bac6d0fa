"""The TREC round trip: convert -> train -> predict --format trec -> export --format trec-qrels -> eval gives the
numbers of the Parquet run evaluated under the same convention, with and without a docid column.

Every step must name documents alike: on data without docids, a predict naming documents by row number ("11") and an
export naming them "<qid>-<row>" ("1840-11") made eval report NDCG 0.0000 with exit 0 and compare "0 wins, not
significant".
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from rankcli.cli import main
from tests.conftest import SAMPLE

METRICS = "ndcg@1,3,5,10,ndcg,map,mrr,precision@5,recall@10"


def _call(*args):
    status = main([str(a) for a in args])
    assert status == 0, args


@pytest.fixture(scope="module", params=["without-docid", "with-docid"])
def trip(request, tmp_path_factory):
    """Two tiny models' runs on the sample test split, as Parquet and TREC files, and the qrels exported from it."""
    d = tmp_path_factory.mktemp(request.param)
    for split in ("train", "test"):
        text = (SAMPLE / "letor" / f"{split}.txt").read_text()
        if request.param == "without-docid":
            text = "".join(line.split("#")[0].rstrip() + "\n" for line in text.splitlines())
        (d / f"{split}.txt").write_text(text)
        _call("convert", d / f"{split}.txt", "-o", d / f"{split}.parquet")
    _call("export", d / "test.parquet", "--format", "trec-qrels", "-o", d / "test.qrels")
    for name, trees in (("a", 5), ("b", 2)):
        _call("train", d / "train.parquet", "-o", d / name, "--trees", trees, "--threads", "1")
        _call("predict", d / name, d / "test.parquet", "-o", d / f"{name}.parquet")
        _call("predict", d / name, d / "test.parquet", "--format", "trec", "-o", d / f"{name}.trec")
    return d


def _eval(capsys, *args):
    capsys.readouterr()
    status = main(["eval", *map(str, args), "-m", METRICS, "--json"])
    out, err = capsys.readouterr()
    assert status == 0, err
    return json.loads(out)


def test_trec_round_trip_equals_the_parquet_run(trip, capsys):
    import pyarrow.parquet as pq

    has_docid = "docid" in pq.read_schema(str(trip / "test.parquet")).names
    assert has_docid == (trip.name.startswith("with-docid"))
    trec = _eval(capsys, "--qrels", trip / "test.qrels", "--run", trip / "a.trec")
    assert trec["metrics"]["ndcg@10"] > 0.5  # the bug: 0.0000
    parquet = _eval(capsys, trip / "a.parquet", "--convention", "trec")
    assert trec["convention"] == parquet["convention"] and trec["convention"]["ties"] == "docid-desc"
    assert trec["queries"] == parquet["queries"] == 30 and trec["queries_without_judged"] == 0
    for name, value in parquet["metrics"].items():
        assert trec["metrics"][name] == pytest.approx(value, abs=1e-12), name
    # The paper convention, asked for explicitly, is honoured on the TREC run and agrees too.
    trec = _eval(capsys, "--qrels", trip / "test.qrels", "--run", trip / "a.trec", "--convention", "paper")
    parquet = _eval(capsys, trip / "a.parquet")
    assert trec["convention"] == parquet["convention"] and trec["convention"]["gain"] == "exponential"
    assert (trec["queries"], trec["skipped"]) == (parquet["queries"], parquet["skipped"])
    for name, value in parquet["metrics"].items():
        assert trec["metrics"][name] == pytest.approx(value, abs=1e-12), name


def test_trec_round_trip_equals_pytrec_eval(trip, capsys):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from rankcli.formats.trec.parse import read_qrels, read_trec_run

    run, qrels = read_trec_run(trip / "a.trec"), read_qrels(trip / "test.qrels")
    run_dict, qrels_dict = {}, {}
    for q, d, s in zip(run.qids, run.docids, run.scores):
        run_dict.setdefault(q, {})[d] = float(s)
    for q, d, y in zip(qrels.qids, qrels.docids, qrels.labels):
        qrels_dict.setdefault(q, {})[d] = int(y)
    theirs = pytrec_eval.RelevanceEvaluator(qrels_dict, {"ndcg_cut_10", "map", "recip_rank"}).evaluate(run_dict)
    ours = _eval(capsys, "--qrels", trip / "test.qrels", "--run", trip / "a.trec")["metrics"]
    for measure, name in (("ndcg_cut_10", "ndcg@10"), ("map", "map"), ("recip_rank", "mrr")):
        assert ours[name] == pytest.approx(np.mean([v[measure] for v in theirs.values()]), abs=1e-12), measure


def test_compare_trec_runs_round_trip(trip, capsys):
    capsys.readouterr()
    args = ["-m", "ndcg@5,ndcg@10", "--json"]
    qrels = str(trip / "test.qrels")
    assert main(["compare", "--qrels", qrels, str(trip / "a.trec"), str(trip / "b.trec"), *args]) == 0
    trec = json.loads(capsys.readouterr().out)
    assert main(["compare", "--convention", "trec", str(trip / "a.parquet"), str(trip / "b.parquet"), *args]) == 0
    parquet = json.loads(capsys.readouterr().out)
    assert trec["convention"] == parquet["convention"] == {"gain": "linear", "no_relevant": "zero",
                                                          "ties": "docid-desc", "relevance_threshold": 1.0,
                                                          "max_grade": 4.0}
    for t, p in zip(trec["comparisons"], parquet["comparisons"]):
        assert (t["wins"], t["ties"], t["losses"]) == (p["wins"], p["ties"], p["losses"])
        assert t["wins"] + t["losses"] > 0  # the bug: every query tied at 0
        assert t["difference"] == pytest.approx(p["difference"], abs=1e-12)
    for run in ("a", "b"):
        for m in ("ndcg@5", "ndcg@10"):
            assert trec["means"][run][m] == pytest.approx(parquet["means"][run][m], abs=1e-12)
