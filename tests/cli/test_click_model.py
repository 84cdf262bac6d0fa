"""rankcli click-model fit | eval | compare end to end, and the commands that take a fitted click model:
simulate-clicks --model MODEL_DIR, propensity --from-click-model and --regression-em, train --propensity."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rankcli.cli import main
from rankcli.formats.parquet import write_dataset
from tests.letor_sample import load_letor


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """The sample's training split, PBM click logs simulated from it (random orders; a fixed ranker's), and models
    fitted on the random one (module scope: made once)."""
    d = tmp_path_factory.mktemp("click-model")
    train = d / "train.parquet"
    write_dataset(train, load_letor("train", 46))
    made = {"dir": d, "train": train}
    specs = {"clicks": ["--ranker", "random", "--impressions", "40", "--seed", "1"],
             "held": ["--ranker", "random", "--impressions", "15", "--seed", "2"],
             "fixed": ["--ranker", "label", "--impressions", "20", "--seed", "3"]}
    for name, args in specs.items():
        out = d / f"{name}.parquet"
        assert main(["simulate-clicks", str(train), "-o", str(out), "--model", "pbm", "--max-rank", "10",
                     "--keep-no-click", *args]) == 0
        made[name] = out
    for name, args in {"pbm": ["--model", "pbm"], "dbn": ["--model", "dbn", "--iterations", "20"],
                       "pbm-rel": ["--model", "pbm", "--by", "relevance"]}.items():
        out = d / name
        assert main(["click-model", "fit", str(made["clicks"]), "-o", str(out), *args]) == 0
        made[name] = out
    return made


def test_fit_writes_a_click_model_directory(data, run, tmp_path):
    out = tmp_path / "m"
    status, stdout, err = run("click-model", "fit", data["clicks"], "-o", out, "--model", "ubm", "--iterations", "5",
                              "--json")
    assert status == 0, err
    report = json.loads(stdout)
    assert {p.name for p in out.iterdir()} == {".rankcli-output.json", "model.json", "items.parquet",
                                                "rank_previous.parquet"}
    assert json.loads((out / ".rankcli-output.json").read_text())["kind"] == "click-model"
    info = json.loads((out / "model.json").read_text())
    assert info["format"] == "rankcli-click-model/1" and info["model"] == "ubm" and info["estimator"] == "em"
    assert info["options"] == {"iterations": 5, "tolerance": 0.0, "prior": [1.0, 2.0], "cap": 1e-6,
                               "e_step": "exact"}
    assert len(info["fit"]["log_likelihood"]) == 6 and info["log"]["format"] == "rankcli"
    assert len(info["log"]["fingerprint"]) == 32 and report["log"] == info["log"]
    assert info["log"]["sessions"] == 90 * 40
    # an existing output needs --overwrite, which replaces only a click-model directory
    status, _, err = run("click-model", "fit", data["clicks"], "-o", out, "--model", "pbm")
    assert status == 4 and "--overwrite" in err
    assert run("click-model", "fit", data["clicks"], "-o", out, "--model", "pbm", "--overwrite")[0] == 0
    assert json.loads((out / "model.json").read_text())["model"] == "pbm"
    other = tmp_path / "notes"
    other.mkdir()
    (other / "mine.txt").write_text("keep")
    status, _, err = run("click-model", "fit", data["clicks"], "-o", other, "--model", "pbm", "--overwrite")
    assert status == 4 and (other / "mine.txt").read_text() == "keep"


@pytest.mark.parametrize(("args", "message"), [
    (["--model", "bogus"], "unknown click model 'bogus'"),
    (["--model", "pbm", "--prior", "1:2"], "--prior: expected NUMERATOR/DENOMINATOR"),
    (["--model", "pbm", "--prior", "2/2"], "--prior: expected 0 < numerator < denominator"),
    (["--model", "pbm", "--cap", "0"], "cap: expected a probability margin in (0, 1)"),
    (["--model", "pbm", "--iterations", "0"], "--iterations: must be at least 1"),
])
def test_fit_usage_errors(data, run, tmp_path, args, message):
    status, _, err = run("click-model", "fit", data["clicks"], "-o", tmp_path / "m", *args)
    assert status == 2 and message in err, err
    assert not (tmp_path / "m").exists()


def test_eval_reports_every_score(data, run):
    status, stdout, err = run("click-model", "eval", data["dbn"], data["held"], "--per-rank", "--json")
    assert status == 0, err
    d = json.loads(stdout)
    assert d["sessions"] == 90 * 15 and d["model"]["model"] == "dbn"
    assert 1.0 < d["conditional_perplexity"] < 2.0 and 1.0 < d["perplexity"] < 2.0
    assert d["log_likelihood"] < 0 and d["log_likelihood_pyclick"] < 0
    assert [r["rank"] for r in d["per_rank"]] == list(range(1, 11))
    assert d["ctr_at_1"]["pairs"] > 0 and 0 < d["ctr_at_1"]["rmse"] < 1
    assert set(d["unseen"]) == {"items", "results"}
    status, stdout, _ = run("click-model", "eval", data["dbn"], data["held"], "--no-ctr", "--json")
    assert json.loads(stdout)["ctr_at_1"] is None and "per_rank" not in json.loads(stdout)


def test_compare_directories_and_split(data, run):
    status, stdout, err = run("click-model", "compare", "--log", data["held"], data["pbm"], data["dbn"], "--json")
    assert status == 0, err
    d = json.loads(stdout)
    assert d["baseline"] == "pbm" and d["best"] == "pbm" and d["unit"] == "session" and d["units"] == 1350
    assert [c["b"] for c in d["comparisons"]] == ["dbn"]
    status, _, err = run("click-model", "compare", "--log", data["held"], data["pbm"], data["dbn"],
                         "--fail-if-worse")
    assert status == 5 and "a requested gate failed: dbn" in err
    status, stdout, err = run("click-model", "compare", data["clicks"], "--models", "pbm,dbn,dctr", "--split",
                              "0.75", "--seed", "4", "--unit", "query", "--json", "--iterations", "10")
    assert status == 0, err
    d = json.loads(stdout)
    assert d["split"]["fit_sessions"] == 2700 and d["units"] == 90 and d["correction"] == "holm"
    status, _, err = run("click-model", "compare", "--log", data["held"], data["clicks"], "--models", "pbm,dbn")
    assert status == 2 and "either --log" in err


def test_yandex_log_errors_name_the_line(run, tmp_path):
    log = tmp_path / "yandex.txt"
    log.write_text("7\t0\tQ\t1\t2\tu1\tu2\n7\t1\tC\tu1\n7\t2\tC\n")
    status, _, err = run("click-model", "fit", log, "-o", tmp_path / "m", "--model", "dbn")
    assert status == 3 and err.startswith(f"Error: {log}:3: a click record has 4 tab-separated fields")
    assert not (tmp_path / "m").exists()


def test_simulate_from_a_fitted_model_round_trips_through_propensity_and_train(data, run, tmp_path):
    sim = tmp_path / "sim.parquet"
    status, _, err = run("simulate-clicks", data["train"], "-o", sim, "--model", data["pbm-rel"], "--ranker",
                         "random", "--keep-no-click", "--impressions", "60", "--seed", "5")
    assert status == 0, err
    prop = tmp_path / "prop.json"
    status, _, err = run("propensity", sim, "-o", prop, "--bootstrap", "200", "--seed", "1")
    assert status == 0, err
    estimated = np.array(json.loads(prop.read_text())["propensity"])
    from rankcli.click_model import load_model

    fitted = load_model(data["pbm-rel"]).values["exam"]
    assert np.allclose(estimated, fitted / fitted[0], atol=0.08), (estimated, fitted / fitted[0])
    status, _, err = run("train", sim, "-o", tmp_path / "ranker", "--propensity", prop, "--loss", "xendcg",
                         "--trees", "5")
    assert status == 0, err
    status, _, err = run("simulate-clicks", data["train"], "-o", tmp_path / "x.parquet", "--model", data["pbm-rel"],
                         "--click-probs", "0.1,0.5")
    assert status == 2 and "cannot be used together" in err


def test_propensity_from_a_fitted_pbm(data, run):
    status, stdout, err = run("propensity", "--from-click-model", data["pbm-rel"], "--bootstrap", "200", "--json")
    assert status == 0, err
    d = json.loads(stdout)
    truth = 1.0 / np.arange(1, 11)
    p, lo, hi = (np.array(d[k]) for k in ("propensity", "ci_low", "ci_high"))
    assert d["method"] == "pbm-em" and d["positions"] == list(range(1, 11)) and p[0] == 1.0
    assert np.all((np.abs(p / truth - 1) < 0.25) | ((lo <= truth) & (truth <= hi))), (p, lo, hi)
    assert np.all(lo <= p) and np.all(p <= hi)


def test_propensity_refuses_what_does_not_identify_position_bias(data, run, tmp_path):
    fixed = tmp_path / "fixed-pbm"
    assert run("click-model", "fit", data["fixed"], "-o", fixed, "--model", "pbm", "--iterations", "5")[0] == 0
    status, _, err = run("propensity", "--from-click-model", fixed)
    assert status == 3 and "shows each document at one position only" in err
    status, _, err = run("propensity", "--from-click-model", data["dbn"])
    assert status == 3 and "takes a position-based model" in err
    status, _, err = run("propensity", data["clicks"], "--from-click-model", data["pbm"])
    assert status == 2


def test_regression_em_recovers_position_bias(data, run):
    """On the randomised log (3,600 sessions): within 15% at every position after 6 iterations (measured: 7%). On a
    fixed ranker's log sorted by relevance the curve comes out too steep at this size (docs/clicks.md)."""
    status, stdout, err = run("propensity", data["clicks"], "--model", "pbm", "--regression-em", "--iterations", "6",
                              "--json")
    assert status == 0, err
    d = json.loads(stdout)
    p = np.array(d["propensity"])
    assert d["method"] == "regression-em" and d["ci_low"] == [None] * 10
    assert np.all(np.abs(p / (1.0 / np.arange(1, 11)) - 1) < 0.15), p
    status, _, err = run("propensity", data["clicks"], "--model", "ubm", "--regression-em")
    assert status == 2


def test_experiment_with_a_click_model_setting(data, run, tmp_path):
    exp = tmp_path / "exp"
    status, _, err = run("experiment", data["train"], "-o", exp, "--losses", "xendcg", "--trials", "1", "--trees", "3",
                         "--click-model", data["pbm-rel"], "--no-plots", "--json")
    assert status == 0, err
    summary = json.loads((exp / "summary.json").read_text())
    assert [s["setting"] for s in summary["settings"]] == ["baseline", "click-model"]
    status, _, err = run("experiment", data["train"], "-o", tmp_path / "exp2", "--click-model", data["pbm"])
    assert status == 2 and "fitted per (query, document) pair" in err


def _table_log(path, sessions: int) -> None:
    """A Parquet session table of ``sessions`` sessions of 10 results (sessions / 100 queries of 20 documents)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    s = np.repeat(np.arange(sessions), 10)
    rank = np.tile(np.arange(10), sessions)
    q = s % (sessions // 100)
    clicks = (np.random.default_rng(3).random(s.shape[0]) < 0.2).astype(np.int8)
    pq.write_table(pa.table({"session": s, "query": q, "rank": rank + 1, "document": q * 20 + (rank * 7 + s) % 20,
                             "click": clicks}), path, row_group_size=1 << 20, compression="none")


def test_fit_memory_grows_by_a_few_bytes_a_result(tmp_path):
    import subprocess

    from tests.peak_memory import peak_mib, popen_rankcli

    peaks = {}
    for sessions in (200_000, 1_000_000):
        log, report = tmp_path / f"{sessions}.parquet", tmp_path / f"{sessions}.peak"
        _table_log(log, sessions)
        proc = popen_rankcli(["click-model", "fit", log, "-o", tmp_path / f"{sessions}", "--model", "dbn",
                              "--iterations", "1"], report, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        err = proc.communicate()[1]
        assert proc.returncode == 0, err.decode()
        peaks[sessions] = peak_mib(report)
        log.unlink()
    per_result = (peaks[1_000_000] - peaks[200_000]) * 2 ** 20 / (800_000 * 10)
    # reading, coding and fitting each keep a few bytes a result (about 25 at the peak; 43 when the read held int64
    # copies of the codes and the fit float64 clicks): a fit of 10M sessions within 4 GB needs well under 40
    assert per_result <= 32, (peaks, per_result)


@pytest.mark.parametrize("model", ["gctr", "rctr"])
def test_models_without_per_item_parameters_are_scored_and_simulated(data, run, tmp_path, model):
    """gctr and rctr have no per-document parameters (no items.parquet): eval, compare --log and simulate-clicks read
    them without looking documents up, and no result counts as unseen."""
    out = tmp_path / model
    assert run("click-model", "fit", data["clicks"], "-o", out, "--model", model)[0] == 0
    assert not (out / "items.parquet").exists()
    status, stdout, err = run("click-model", "eval", out, data["held"], "--json", "--no-ctr")
    assert status == 0, err
    d = json.loads(stdout)
    assert d["unseen"] == {"items": 0, "results": 0} and d["log_likelihood"] < 0
    from rankcli.click_model import load_model

    clicks = load_model(out).values["ctr"]
    if model == "gctr":  # the log-likelihood of one click rate is its binomial one
        from rankcli.formats.click_logs import read_session_log

        log = read_session_log(data["held"])
        c, n = int(log.click.sum()), int(log.click.shape[0])
        assert abs(d["log_likelihood"] - (c * np.log(clicks[0]) + (n - c) * np.log(1 - clicks[0]))) < 1e-6
    status, stdout, err = run("click-model", "compare", "--log", data["held"], data["pbm"], out, "--json")
    assert status == 0, err
    by_grade = tmp_path / f"{model}-rel"  # per grade too, on a log without grades: nothing is looked up
    assert run("click-model", "fit", data["clicks"], "-o", by_grade, "--model", model, "--by", "relevance")[0] == 0
    no_grades = tmp_path / "log.tsv"
    no_grades.write_text("session\tquery\trank\tdocument\tclick\ns\tq\t1\td\t1\ns\tq\t2\te\t0\n")
    status, stdout, err = run("click-model", "eval", by_grade, no_grades, "--json", "--no-ctr")
    assert status == 0 and json.loads(stdout)["unseen"] == {"items": 0, "results": 0}, err
    sim = tmp_path / "sim.parquet"
    status, _, err = run("simulate-clicks", data["train"], "-o", sim, "--model", out, "--keep-no-click", "--seed", "2")
    assert status == 0, err


def test_a_model_directory_naming_an_unknown_model_is_invalid_input(data, run, tmp_path):
    """model.json is input: a model name this rankcli does not know (a damaged or newer directory) is exit 3 naming
    the file, not a usage error about an option the user never gave."""
    import shutil

    out = tmp_path / "m"
    shutil.copytree(data["pbm"], out)
    info = json.loads((out / "model.json").read_text())
    info["model"] = "nope"
    (out / "model.json").write_text(json.dumps(info))
    status, _, err = run("click-model", "eval", out, data["held"], "--no-ctr")
    assert status == 3 and err.startswith(f"Error: {out}/model.json: unknown click model 'nope'"), err
