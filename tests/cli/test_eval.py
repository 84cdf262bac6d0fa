import json
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rankcli.core import metrics as M


def write_run(path, qids, labels, scores):
    pq.write_table(pa.table({"qid": pa.array(qids, pa.int64()), "label": pa.array(labels, pa.float64()),
                             "score": pa.array(scores, pa.float64())}), str(path))
    return path


@pytest.fixture
def run_file(tmp_path):
    rng = np.random.default_rng(0)
    sizes = rng.integers(2, 15, 40)
    qids = np.repeat(np.arange(100, 140), sizes)
    labels = rng.integers(0, 5, qids.shape[0]).astype(float)
    labels[qids == 100] = 0  # one query without a relevant document
    scores = np.round(rng.normal(size=qids.shape[0]), 1)  # some ties
    return write_run(tmp_path / "run.parquet", qids, labels, scores), (qids, labels, scores)


def offsets_of(qids):
    return np.concatenate(([0], np.flatnonzero(np.diff(qids)) + 1, [len(qids)]))


def test_json_is_exactly_the_contract(cli, run_file):
    path, (qids, labels, scores) = run_file
    out = cli("eval", path, "--metric", "ndcg@1,3,5,10", "-m", "map,mrr@10", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert list(doc) == ["convention", "queries", "skipped", "queries_without_judged", "metrics"]
    assert doc["queries_without_judged"] == 0  # a Parquet run carries a label on every row
    assert doc["convention"] == {"gain": "exponential", "no_relevant": "skip", "ties": "input",
                                 "relevance_threshold": 1.0, "max_grade": 4.0}
    assert (doc["queries"], doc["skipped"]) == (39, 1)
    assert list(doc["metrics"]) == ["ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "map", "mrr@10"]
    want = M.evaluate(M.parse_metrics(["ndcg@1,3,5,10", "map,mrr@10"]), labels, scores, offsets_of(qids))
    for name, value in want.means.items():
        assert doc["metrics"][name] == pytest.approx(value, abs=1e-15)


def test_table_states_counts_and_convention(cli, run_file):
    path, _ = run_file
    out = cli("eval", path, "-m", "ndcg@5", "--convention", "lightgbm")
    assert out.returncode == 0, out.stderr
    text = out.stdout.decode()
    assert "ndcg@5" in text
    assert "queries: 40 evaluated, 0 skipped" in text
    assert "convention: gain=exponential no_relevant=one ties=input threshold=1 max_grade=4" in text


def test_sums_and_counts_are_not_titled_mean(capsys, run_file):
    """A sum under a column titled mean misleads (`eval -m official`: num_ret 578.0000). Sums and counts are
    integers, and each row says how its queries were summarised; a table of means alone keeps its title."""
    from tests.conftest import run_main

    path, (qids, labels, scores) = run_file
    status, out, err = run_main(capsys, "eval", path, "-m", "num_q,num_ret,num_rel,map,gm_map", "--no-relevant",
                                "zero")
    assert status == 0, err
    cells = [[c.strip() for c in re.split("[│┃]", line)[1:-1]] for line in out.splitlines() if line[:1] in "│┃"]
    rows = {c[0]: c[1:] for c in cells}
    assert rows["metric"] == ["value", "over queries"]
    assert rows["num_q"] == ["40", "count"] and rows["num_ret"] == [str(qids.shape[0]), "sum"]
    assert rows["num_rel"] == [str(int((labels >= 1).sum())), "sum"]
    assert rows["map"][1] == "mean" and rows["gm_map"][1] == "geometric mean"
    status, out, _ = run_main(capsys, "eval", path, "-m", "ndcg@5,map")
    assert "mean" in out.splitlines()[2] and "value" not in out and "over queries" not in out


def test_overrides_and_per_query_file(cli, run_file, tmp_path):
    path, (qids, labels, scores) = run_file
    target = tmp_path / "pq.parquet"
    out = cli("eval", path, "-m", "ndcg@3,recall@5", "--convention", "sklearn", "--ties", "input",
              "--threshold", "2", "--per-query", target, "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["convention"]["ties"] == "input" and doc["convention"]["gain"] == "linear"
    assert doc["convention"]["relevance_threshold"] == 2.0
    table = pq.read_table(target)
    assert table.column_names == ["qid", "ndcg@3", "recall@5"]
    assert table.column("qid").to_pylist() == list(range(100, 140))
    conv = M.Convention(gain="linear", no_relevant="zero", ties="input", relevance_threshold=2)
    want = M.per_query(M.parse_metrics(["ndcg@3", "recall@5"]), labels, scores, offsets_of(qids), conv)
    np.testing.assert_array_equal(table.column("ndcg@3").to_numpy(), want["ndcg@3"])
    meta = table.schema.metadata
    assert meta[b"rankcli.kind"] == b"per-query"
    assert json.loads(meta[b"rankcli.convention"]) == doc["convention"]
    again = cli("eval", path, "--per-query", target)
    assert again.returncode == 4
    assert again.stderr.decode() == f"Error: {target}: already exists; pass --overwrite to replace it\n"


def test_missing_column_exit_3(cli, tmp_path):
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"qid": [1, 1], "label": [1.0, 0.0]}), str(path))
    out = cli("eval", path)
    assert out.returncode == 3
    assert out.stderr.decode() == f"Error: {path}: missing column score (found: qid, label)\n"


def test_dataset_without_scores_points_to_model(cli, tmp_path):
    path = tmp_path / "ds.parquet"
    pq.write_table(pa.table({"qid": [1, 1], "label": [1.0, 0.0], "f1": pa.array([0.1, 0.2], pa.float32())}),
                   str(path))
    out = cli("eval", path)
    assert out.returncode == 3
    assert out.stderr.decode() == (f"Error: {path}: missing column score: this looks like a dataset (it has feature "
                                   "columns); score it with a model: rankcli eval DATA --model MODEL_DIR\n")


def test_nan_score_names_row_exit_3(cli, tmp_path):
    path = write_run(tmp_path / "nan.parquet", [1, 1, 2], [1.0, 0.0, 1.0], [0.5, np.nan, 1.0])
    out = cli("eval", path)
    assert out.returncode == 3
    assert out.stderr.decode() == (f"Error: {path}: column score: NaN at row 1 (qid 1); every document needs a "
                                   "score\n")


def test_non_contiguous_qid_exit_3(cli, tmp_path):
    path = write_run(tmp_path / "nc.parquet", [1, 2, 1], [1.0, 0.0, 1.0], [0.5, 0.1, 1.0])
    out = cli("eval", path)
    assert out.returncode == 3
    assert out.stderr.decode().startswith(f"Error: {path}: column qid: qid 1 reappears at row 2")


def test_unknown_metric_is_a_usage_error_exit_2(cli, run_file):
    """A misspelt metric is a usage error (2), as a misspelt loss is: the command line is wrong, not the data."""
    path, _ = run_file
    out = cli("eval", path, "--metric", "ndgc@5")
    assert out.returncode == 2
    assert out.stderr.decode() == ("Error: unknown metric 'ndgc'; did you mean 'ndcg'? (known: ndcg, dcg, err, mrr, "
                                   "map, precision, recall, each optionally @k; bpref, rprec, success@k and the other "
                                   "trec_eval measures, by rankcli's or trec_eval's name (P_5, ndcg_cut.10); sets "
                                   "official, all_trec)\n")


def test_usage_errors_exit_2(cli, tmp_path):
    out = cli("eval")
    assert out.returncode == 2
    assert out.stderr.decode().startswith("Error: nothing to evaluate")
    out = cli("eval", "--run", tmp_path / "x.txt")
    assert out.returncode == 2
    assert out.stderr.decode().startswith("Error: --run is a TREC run and needs --qrels QRELS")


def test_trec_run_and_qrels(cli, tmp_path):
    run = tmp_path / "run.txt"
    run.write_text("1 Q0 a 1 3.0 t\n1 Q0 b 2 2.0 t\n1 Q0 c 3 1.0 t\n2 Q0 x 1 1 t\n9 Q0 x 1 1 t\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 b 2\n1 0 z 1\n2 0 y 1\n3 0 q 1\n")
    # An explicit --convention on a TREC run is honoured (the default there is trec, with linear gain).
    out = cli("eval", "--qrels", qrels, "--run", run, "-m", "ndcg,recall,map,p@2", "--convention", "paper",
              "--no-relevant", "zero", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["convention"]["gain"] == "exponential" and doc["convention"]["ties"] == "input"
    # Query 1: b (gain 3) at rank 2; z (gain 1) judged but not retrieved still counts in the ideal DCG and in R.
    ndcg1 = (3 / np.log2(3)) / (3 + 1 / np.log2(3))
    assert doc["metrics"]["ndcg"] == pytest.approx(ndcg1 / 2)  # query 2: its only relevant document is unretrieved
    assert doc["metrics"]["recall"] == pytest.approx(0.25)
    assert doc["metrics"]["map"] == pytest.approx((0.5 / 2) / 2)
    assert doc["metrics"]["precision@2"] == pytest.approx(0.25)
    assert doc["queries"] == 2
    err = out.stderr.decode()
    assert "note: 1 query of the run has no judgments" in err and "1 judged query is absent from the run" in err


def test_trec_run_defaults_to_the_trec_convention(cli, tmp_path):
    # Two documents tie at the top: trec_eval ranks "d9" before "d10" (docid descending in byte order), whatever the
    # file order; gains are linear; query 2 has no relevant document and scores 0 (not skipped).
    run = tmp_path / "run.txt"
    run.write_text("1 Q0 d10 1 5 t\n1 Q0 d9 2 5 t\n1 Q0 d8 3 1 t\n2 Q0 x 1 1 t\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 d10 2\n1 0 d9 0\n1 0 d8 1\n2 0 x 0\n")
    out = cli("eval", "--qrels", qrels, "--run", run, "-m", "ndcg@1,ndcg,mrr", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["convention"] == {"gain": "linear", "no_relevant": "zero", "ties": "docid-desc",
                                 "relevance_threshold": 1.0, "max_grade": 4.0}
    assert (doc["queries"], doc["skipped"], doc["queries_without_judged"]) == (2, 0, 0)
    ideal = 2 + 1 / np.log2(3)
    assert doc["metrics"]["ndcg@1"] == 0.0
    assert doc["metrics"]["ndcg"] == pytest.approx((2 / np.log2(3) + 1 / np.log2(4)) / ideal / 2, abs=1e-15)
    assert doc["metrics"]["mrr"] == pytest.approx(0.5 / 2)
    table = cli("eval", "--qrels", qrels, "--run", run, "-m", "ndcg@1").stdout.decode()
    assert "convention: gain=linear no_relevant=zero ties=docid-desc threshold=1 max_grade=4" in table
    # --ties input overrides one part of the preset: file order puts d10 (label 2) first.
    out = cli("eval", "--qrels", qrels, "--run", run, "-m", "ndcg@1", "--ties", "input", "--json")
    assert json.loads(out.stdout)["metrics"]["ndcg@1"] == pytest.approx(0.5)


def test_trec_run_sharing_no_document_with_its_qrels_is_exit_3(cli, tmp_path):
    run = tmp_path / "run.txt"
    run.write_text("1 Q0 11 1 3.0 t\n1 Q0 12 2 2.0 t\n2 Q0 13 1 1.0 t\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 1-11 1\n1 0 1-12 0\n2 0 2-13 1\n")
    out = cli("eval", "--qrels", qrels, "--run", run)
    assert out.returncode == 3 and out.stdout == b""
    assert out.stderr.decode() == (
        f"Error: {run} and {qrels} share no document id: none of the 3 documents the run ranks for its 2 judged "
        "queries is in the qrels (query 1: the run has '11', the qrels '1-11'); were they written from the same "
        "data?\n")


def test_queries_without_a_judged_document_are_counted(cli, tmp_path):
    # Query 2's documents are all missing from the qrels (query 1 matches): it scores 0, and the summary says so.
    run = tmp_path / "run.txt"
    run.write_text("1 Q0 a 1 3.0 t\n1 Q0 b 2 2.0 t\n2 Q0 c 1 1.0 t\n2 Q0 d 2 0.5 t\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 a 1\n2 0 e 1\n")
    out = cli("eval", "--qrels", qrels, "--run", run, "-m", "ndcg", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["queries_without_judged"] == 1 and doc["metrics"]["ndcg"] == pytest.approx(0.5)
    note = (f"note: 1 of the 2 evaluated queries has no judged document among those the run ranks (every one counts "
            f"as not relevant; do the run and {qrels} name documents alike?)")
    assert note in out.stderr.decode()
    table = cli("eval", "--qrels", qrels, "--run", run, "-m", "ndcg")
    assert table.returncode == 0 and note in " ".join(table.stdout.decode().split())


def test_trec_run_without_qrels_is_a_usage_error(cli, tmp_path):
    """`eval run.trec` says a TREC run needs --qrels (exit 2), as compare does, instead of a Parquet error."""
    run = tmp_path / "run.trec"
    run.write_text("1 Q0 a 1 3.0 t\n")
    out = cli("eval", run)
    assert out.returncode == 2
    assert out.stderr.decode() == (f"Error: {run}: not a Parquet file; a TREC run needs --qrels QRELS: rankcli eval "
                                   f"--qrels QRELS --run {run}\n")
    missing = cli("eval", tmp_path / "nope.parquet")
    assert missing.returncode == 3 and missing.stderr.decode() == f"Error: {tmp_path / 'nope.parquet'}: no such file\n"


def test_parquet_run_under_the_trec_convention_names_rows_as_trec_files(cli, tmp_path):
    # A run without docid: tied rows are ordered by "<qid>-<row>" descending in byte order ("5-10" < "5-9").
    labels = np.zeros(11)
    labels[10] = 1.0
    path = write_run(tmp_path / "run.parquet", np.full(11, 5), labels, np.ones(11))
    out = cli("eval", path, "-m", "mrr", "--convention", "trec", "--json")
    assert out.returncode == 0, out.stderr
    # Descending: 5-9, 5-8, ..., 5-2, 5-10, 5-1, 5-0: row 10 ranks 9th.
    assert json.loads(out.stdout)["metrics"]["mrr"] == pytest.approx(1 / 9)
    assert json.loads(cli("eval", path, "-m", "mrr", "--json").stdout)["metrics"]["mrr"] == pytest.approx(1 / 11)


def test_trec_malformed_line_names_it(cli, tmp_path):
    run = tmp_path / "run.txt"
    run.write_text("1 Q0 a 1 3.0 t\n1 Q0 b 2\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 a 1\n")
    out = cli("eval", "--qrels", qrels, "--run", run)
    assert out.returncode == 3
    assert out.stderr.decode() == (f'Error: {run}:2: expected 6 fields "qid Q0 docid rank score tag", '
                                   "got '1 Q0 b 2'\n")


@pytest.mark.parametrize("gzipped", [False, True], ids=["plain", "gzipped"])
def test_qrels_that_are_not_utf8_name_the_line(run, tmp_path, gzipped):
    """Bytes that are not UTF-8 (a Latin-1 document id) are named by line, byte and the line itself, as every bad
    line is; the message used to give a byte offset into the file only."""
    import gzip

    content = b"1 0 a 1\n1 0 b 0\n2 0 caf\xe9 1\n"
    qrels = tmp_path / "qrels.txt"
    qrels.write_bytes(gzip.compress(content) if gzipped else content)
    runf = tmp_path / "run.txt"
    runf.write_text("1 Q0 a 1 3.0 t\n2 Q0 b 1 2.0 t\n")
    status, _, err = run("eval", "--qrels", qrels, "--run", runf)
    assert status == 3
    assert err == (f"Error: {qrels}:3: not UTF-8 text (byte 0xe9 at byte 8 of the line; Latin-1 or another 8-bit "
                   "encoding?): save the file as UTF-8, got '2 0 caf\u00e9 1'\n")


def test_model_scores_a_dataset(cli, tmp_path, sample_dir):
    pytest.importorskip("lightgbm")
    from sklearn.datasets import load_svmlight_file

    from rankcli import train
    from rankcli.dataset import Dataset
    from rankcli.formats.parquet import feature_names, write_dataset

    d = sample_dir / "lightgbm"

    def dataset(name):
        x, y = load_svmlight_file(str(d / f"{name}.txt"), n_features=50)
        groups = np.loadtxt(d / f"{name}.txt.query", dtype=np.int64)
        return Dataset(qids=np.repeat(np.arange(groups.shape[0]), groups), labels=y.astype(np.float64),
                       features=np.asarray(x.todense(), dtype=np.float32), feature_names=feature_names(50))

    tr, va = dataset("train"), dataset("vali")
    config = train.TrainConfig(loss="lambdamart", trees=5, early_stopping=0, threads=1)
    result = train.train_model(tr, None, config)
    model_dir = tmp_path / "model"
    train.save_model(result, config, model_dir, feature_names=tr.feature_names)
    data = tmp_path / "vali.parquet"
    write_dataset(data, va)
    out = cli("eval", data, "--model", model_dir, "-m", "ndcg@5", "--json")
    assert out.returncode == 0, out.stderr
    scores = train.load_model(model_dir).predict(va)
    want = M.evaluate(["ndcg@5"], va.labels, scores, va.offsets).means["ndcg@5"]
    assert json.loads(out.stdout)["metrics"]["ndcg@5"] == pytest.approx(want, abs=1e-12)


def test_eval_with_model_skips_lightgbm_sklearn_import(cli, tmp_path):
    """eval DATA --model imports LightGBM as predict does, without its scikit-learn integration (~1.5 s).

    (pandas may still come in through pyarrow's docid to_numpy in read_dataset, as for predict.)"""
    import subprocess
    import sys

    from tests.conftest import REPO, SAMPLE

    data = tmp_path / "test.parquet"
    assert cli("convert", SAMPLE / "letor" / "test.txt", "-o", data).returncode == 0
    r = cli("train", data, "-o", tmp_path / "m", "--trees", "3", "--threads", "1")
    assert r.returncode == 0, r.stderr
    code = ("import json, sys\nfrom rankcli.cli import main\n"
            f"status = main(['eval', {str(data)!r}, '--model', {str(tmp_path / 'm')!r}, '--json'])\n"
            "print(json.dumps([status, 'sklearn' in sys.modules]))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.returncode == 0, r.stderr
    *report, flags = r.stdout.strip().splitlines()
    assert json.loads(flags) == [0, False]
    assert set(json.loads("\n".join(report))) == {"convention", "queries", "skipped", "queries_without_judged",
                                                   "metrics"}


def test_train_refuses_the_trec_convention_before_training(cli, tmp_path):
    """The trec preset breaks ties by document id; train's --select-by works on datasets, so it is refused up front."""
    from tests.conftest import SAMPLE

    data = tmp_path / "vali.parquet"
    assert cli("convert", SAMPLE / "letor" / "vali.txt", "-o", data).returncode == 0
    out = cli("train", data, "--valid", data, "--trees", "2", "--convention", "trec", "-o", tmp_path / "m")
    assert out.returncode == 2
    assert out.stderr.decode().endswith("Error: --convention trec is for evaluating TREC runs (it breaks ties by "
                                        "document id); select a model by paper, lightgbm or sklearn\n")
    assert not (tmp_path / "m").exists()


class _Out:
    """What an in-process run of the CLI printed (the subprocess fixture's fields), for the fast trec_eval tests."""

    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout.encode(), stderr.encode()


@pytest.fixture
def cli_fast(capsys):
    from rankcli.cli import main

    def run(*args):
        status = main([str(a) for a in args])
        out = capsys.readouterr()
        return _Out(status, out.out, out.err)

    return run


def _trec_files(tmp_path, gz=False):
    run = tmp_path / "run.txt"
    run.write_text("1\tQ0  a 1 3.0 t\n1 Q0 b 2 2.0 t\n1 Q0 c 3 1.0 t\n2 Q0 x 1 1 t\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 b 2\n1 0 z 1\n2 0 y 1\n3 0 q 1\n")
    if gz:
        import gzip

        for p in (run, qrels):
            p.with_name(p.name + ".gz").write_bytes(gzip.compress(p.read_bytes()))
        return run.with_name("run.txt.gz"), qrels.with_name("qrels.txt.gz")
    return run, qrels


def test_format_trec_eval_is_trec_evals_layout(cli_fast, tmp_path):
    """trec_eval's %-22s\\t%s\\t%6.4f lines (counts %ld), its measure order, -q per-query lines first, runid."""
    run, qrels = _trec_files(tmp_path)
    out = cli_fast("eval", "--qrels", qrels, "--run", run, "-m", "P.5", "-m", "map,num_ret,num_q,runid", "-q",
              "--format", "trec_eval")
    assert out.returncode == 0, out.stderr
    # query 1: b (relevant) at rank 2 of a, b, c, R = 2 (z unretrieved): AP 1/2 / 2; query 2: nothing relevant found
    assert out.stdout.decode() == (
        "num_ret               \t1\t3\n"
        "map                   \t1\t0.2500\n"
        "P_5                   \t1\t0.2000\n"
        "num_ret               \t2\t1\n"
        "map                   \t2\t0.0000\n"
        "P_5                   \t2\t0.0000\n"
        "runid                 \tall\tt\n"
        "num_q                 \tall\t2\n"
        "num_ret               \tall\t4\n"
        "map                   \tall\t0.1250\n"
        "P_5                   \tall\t0.1000\n")
    # without -m, trec_eval's default set 'official'
    out = cli_fast("eval", "--qrels", qrels, "--run", run, "--format", "trec_eval")
    names = [line.split("\t")[0].strip() for line in out.stdout.decode().splitlines()]
    assert names[:10] == ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                          "recip_rank"] and names[-1] == "P_1000" and len(names) == 30


@pytest.mark.parametrize("flags, num_q, num_ret, map_", [
    ([], 2, 4, 0.125),
    (["-c"], 3, 4, 0.25 / 3),            # query 3 (judged, absent from the run) scores 0
    (["-J"], 2, 1, 0.25),                # a, c, x unjudged: query 1 ranks b alone (AP 1/2), query 2 is left empty
    (["-M", "1"], 2, 2, 0.0),            # only the top document of each query: a, x
    (["-J", "-c", "-M", "2"], 3, 1, 0.5 / 3),
])
def test_trec_eval_options_c_J_M(cli_fast, tmp_path, flags, num_q, num_ret, map_):
    run, qrels = _trec_files(tmp_path)
    out = cli_fast("eval", "--qrels", qrels, "--run", run, "-m", "num_q,num_ret,map", "--json", *flags)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)["metrics"]
    assert (got["num_q"], got["num_ret"]) == (num_q, num_ret)
    assert got["map"] == pytest.approx(map_)


def test_gzipped_run_and_qrels(cli_fast, tmp_path):
    run, qrels = _trec_files(tmp_path)
    plain = cli_fast("eval", "--qrels", qrels, "--run", run, "--format", "trec_eval", "-m", "all_trec")
    run_gz, qrels_gz = _trec_files(tmp_path, gz=True)
    gz = cli_fast("eval", "--qrels", qrels_gz, "--run", run_gz, "--format", "trec_eval", "-m", "all_trec")
    assert gz.returncode == 0, gz.stderr
    assert gz.stdout == plain.stdout and len(plain.stdout.splitlines()) > 70


def test_format_json_is_json_and_flag_clashes_are_usage_errors(cli_fast, tmp_path):
    run, qrels = _trec_files(tmp_path)
    a = cli_fast("eval", "--qrels", qrels, "--run", run, "-m", "map", "--format", "json")
    b = cli_fast("eval", "--qrels", qrels, "--run", run, "-m", "map", "--json")
    assert a.returncode == 0 and a.stdout == b.stdout
    for args, fragment in ((["--json", "--format", "trec_eval"], "--json and --format trec_eval"),
                           (["-q"], "add --format trec_eval")):
        out = cli_fast("eval", "--qrels", qrels, "--run", run, *args)
        assert out.returncode == 2 and fragment in out.stderr.decode()
    out = cli_fast("eval", tmp_path / "x.parquet", "-c")
    assert out.returncode == 2 and "-c (--complete) applies to a TREC run" in out.stderr.decode()


def test_duplicate_pair_and_corrupt_gzip_are_exit_3_naming_them(cli_fast, tmp_path):
    run, qrels = _trec_files(tmp_path)
    run.write_text("1 Q0 a 1 3 t\n1 Q0 b 2 2 t\n1 Q0 a 3 1 t\n")
    out = cli_fast("eval", "--qrels", qrels, "--run", run)
    assert out.returncode == 3
    assert out.stderr.decode() == (f"Error: {run}:3: document a appears twice for query 1 (first at line 1), "
                                   "got '1 Q0 a 3 1 t'\n")
    bad = tmp_path / "run.txt.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00garbage")
    out = cli_fast("eval", "--qrels", qrels, "--run", bad)
    assert out.returncode == 3 and out.stderr.decode().startswith(f"Error: {bad}: not a readable gzip file")


def test_labels_beyond_the_exponential_gain_are_exit_3_without_a_warning(cli, tmp_path):
    # 2^label overflowed from 1024 on: NDCG came out NaN (the query reported as 'skipped') with a RuntimeWarning.
    path = write_run(tmp_path / "big.parquet", [1, 1, 2, 2], [0.0, 1500.0, 2.0, 0.0], [0.1, 0.2, 0.3, 0.4])
    out = cli("eval", path, "--metric", "ndcg@5", env={"PYTHONWARNINGS": "default"})
    assert out.returncode == 3
    assert b"label 1500 at row 1: the exponential gain 2^label - 1 overflows" in out.stderr
    assert b"Warning" not in out.stderr and b"Traceback" not in out.stderr
    linear = cli("eval", path, "--metric", "ndcg@5", "--gain", "linear", "--json")
    assert linear.returncode == 0, linear.stderr
    assert json.loads(linear.stdout)["skipped"] == 0
