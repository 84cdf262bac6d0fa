"""rankcli train / rankcli predict end to end: model directory, run files, error messages and exit statuses."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from rankcli.formats.parquet import write_dataset
from tests.letor_sample import load_letor, write_letor

FAST = ["--trees", "6", "--threads", "1", "--num-leaves", "7", "--min-data-in-leaf", "5"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("letor")
    paths = write_letor(d, n_features=46)
    real = load_letor("train", 46)
    real.labels = real.labels * 0.07
    write_dataset(d / "real.parquet", real)
    narrow = load_letor("vali", 45)
    write_dataset(d / "narrow.parquet", narrow)
    nodoc = load_letor("test", 46)
    nodoc.docids = None
    write_dataset(d / "nodoc.parquet", nodoc)
    return {**paths, "real": d / "real.parquet", "narrow": d / "narrow.parquet", "nodoc": d / "nodoc.parquet",
            "dir": d}


def test_train_then_predict(cli, data, tmp_path):
    model = tmp_path / "model"
    r = cli("train", data["train"], "--valid", data["vali"], "-o", model, "--loss", "xendcg", "--gamma", "fixed:0.5",
            "--early-stopping", "2", "--seed", "5", *FAST, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    info = json.loads((model / "rankcli.json").read_text())
    assert out["model_dir"] == str(model) and out["best_iteration"] == info["best_iteration"]
    assert info["loss"] == {"name": "xendcg", "label_grades": False, "gamma": "fixed:0.5"}
    assert info["seed"] == 5 and info["features"] == [f"f{i}" for i in range(1, 47)]
    assert len(info["data_sha256"]["train"]) == 64 and len(info["data_sha256"]["valid"]) == 64
    assert len(info["curve"]) == info["trees_trained"] and info["select_by"] == "ndcg@5"
    assert set(info["versions"]) >= {"rankcli", "lightgbm"} and info["seconds"] >= 0
    assert (model / "model.txt").read_text().startswith("tree")

    run = tmp_path / "run.parquet"
    r = cli("predict", model, data["test"], "-o", run)
    assert r.returncode == 0, r.stderr
    table = pq.read_table(run)
    assert table.column_names == ["qid", "docid", "label", "score"]
    test = load_letor("test", 46)
    np.testing.assert_array_equal(table.column("qid").to_numpy(), test.qids)
    assert table.column("docid").to_pylist() == list(test.docids)

    trec = tmp_path / "run.trec"
    r = cli("predict", model, data["nodoc"], "-o", trec, "--format", "trec", "--tag", "my run")
    assert r.returncode == 0, r.stderr
    lines = [line.split() for line in trec.read_text().splitlines()]
    assert len(lines) == test.n_rows and lines[0][1] == "Q0" and lines[0][3] == "1" and lines[0][5] == "myrun"
    first = [float(x[4]) for x in lines if x[0] == lines[0][0]]
    assert first == sorted(first, reverse=True)

    r = cli("predict", model, data["nodoc"], "-o", tmp_path / "nodoc.parquet")
    assert pq.read_table(tmp_path / "nodoc.parquet").column_names == ["qid", "row", "label", "score"]
    np.testing.assert_allclose(pq.read_table(tmp_path / "nodoc.parquet").column("score").to_numpy(),
                               table.column("score").to_numpy())


def test_label_grades(cli, data, tmp_path):
    r = cli("train", data["real"], "-o", tmp_path / "m", "--loss", "lambdamart", *FAST)
    assert r.returncode == 3
    assert r.stderr.decode().startswith("Error: --loss lambdamart (LightGBM lambdarank) needs non-negative integer "
                                        "labels, got 0.07; pass --label-grades")
    assert "--loss xendcg or --loss listnet" in r.stderr.decode()
    r = cli("train", data["real"], "-o", tmp_path / "m", "--loss", "lambdamart", "--label-grades", *FAST)
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "m" / "rankcli.json").read_text())["loss"]["label_values"][1] == pytest.approx(0.07)


def test_without_valid_every_tree_is_trained_and_recorded_so(cli, data, tmp_path):
    """No --valid: no early stopping, and rankcli.json says so (early_stopping 0, an empty curve)."""
    r = cli("train", data["train"], "-o", tmp_path / "m", *FAST, "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads((tmp_path / "m" / "rankcli.json").read_text())
    assert info["early_stopping"] == 0 and info["curve"] == [] and info["best_iteration"] == info["trees_trained"] == 6
    assert json.loads(r.stdout)["early_stopping"] == 0


def test_too_little_data_says_why(cli, tmp_path):
    """No tree can split a tiny dataset (exit 3): the message says why and what to change."""
    (tmp_path / "t.txt").write_text("1 qid:1 1:1\n0 qid:1 1:2\n")
    assert cli("convert", tmp_path / "t.txt", "-o", tmp_path / "t.parquet").returncode == 0
    r = cli("train", tmp_path / "t.parquet", "-o", tmp_path / "m", "--trees", "2")
    assert r.returncode == 3
    last = r.stderr.decode().splitlines()[-1]
    assert last == ("Error: 2 training rows: no tree can split them into two leaves of at least min_data_in_leaf=20 "
                    "rows, so every tree would be a constant; train on more data, or lower --min-data-in-leaf")
    assert not (tmp_path / "m").exists()
    r = cli("train", tmp_path / "t.parquet", "-o", tmp_path / "m", "--trees", "2", "--min-data-in-leaf", "1",
            "--param", "min_data_in_bin=1")
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("args, status, message", [
    (["--loss", "xendgc"], 2, "Error: unknown loss 'xendgc'; did you mean 'xendcg'? (choose from lambdamart, "
                               "xendcg, xendcg-native, listnet, ranknet, listmle, listmle-pa, approxndcg, "
                               "lambdaloss, pointwise)"),
    (["--early-stopping", "5"], 2, "Error: --early-stopping 5 needs a validation set: pass --valid VALID.parquet "
                                   "(or --early-stopping 0)"),
    (["--gamma", "fixed:2"], 2, "Error: --gamma fixed:<g> needs a number g in [0, 1], got 'fixed:2'"),
    (["--param", "nokey"], 2, "Error: --param expects key=value, got 'nokey'"),
    (["--preset", "paper-web"], 2, "Error: unknown preset 'paper-web'; did you mean 'paper-web30k'?"),
    (["--learning-rate", "-1"], 2, "Error: --learning-rate must be positive, got -1\n"),
    (["--num-leaves", "1"], 2, "Error: --num-leaves must be at least 2, got 1\n"),
    # was exit 3, "LightGBM refused the training data or parameters: Check failed: (num_leaves) <= (131072)"
    (["--num-leaves", "131073"], 2, "Error: --num-leaves must be at most 131072 (LightGBM's limit), got 131073\n"),
    (["--min-data-in-leaf", "-3"], 2, "Error: --min-data-in-leaf must be 0 or more, got -3\n"),
    (["--valid", "NARROW"], 3, "Error: validation feature columns differ from the training data's: missing f46 "
                               "(expected 46 features, got 45)"),
    (["--step", "diagonal"], 2, "Error: --step is ListNet's boosting step (listnet), not --loss xendcg's\n"),
    (["--loss", "listnet", "--step", "newton"], 2,
     "Error: --loss-option listnet:step (--step): expected paper | diagonal, got 'newton'\n"),
    (["--loss", "approxndcg", "--loss-option", "temperature=-1"], 2,
     "Error: --loss-option approxndcg:temperature: expected >= 0.0001, <= 10000, got '-1'\n"),
    (["--loss", "approxndcg", "--loss-option", "temperature=nan"], 2,
     "Error: --loss-option approxndcg:temperature: expected >= 0.0001, <= 10000, got 'nan'\n"),
    (["--loss", "approxndcg", "--loss-option", "temp=1"], 2,
     "Error: --loss-option temp: --loss approxndcg has no option 'temp'; did you mean 'temperature'? (its options: "
     "temperature)\n"),
    (["--loss", "xendcg", "--loss-option", "mu=1"], 2, "Error: --loss-option mu: --loss xendcg has no options\n"),
    (["--loss-option", "nokey"], 2, "Error: --loss-option: expected [LOSS:]NAME=VALUE (e.g. "
                                    "approxndcg:temperature=0.5), got 'nokey'\n"),
    (["--loss", "lambdaloss", "--loss-option", "listnet:step=paper"], 2,
     "Error: --loss-option listnet:step=paper: listnet is not trained here (--loss lambdaloss)\n"),
    (["--loss", "lambdaloss", "--loss-option", "variant=ndcg-loss2", "--loss-option", "mu=1"], 2,
     "Error: --loss-option lambdaloss:mu applies only with variant=ndcg-loss2++, got variant=ndcg-loss2\n"),
    (["--loss", "lambdaloss", "--loss-option", "mu=1", "--loss-option", "lambdaloss:mu=2"], 2,
     "Error: --loss-option lambdaloss:mu=2: lambdaloss's mu is given twice, as '1' and '2'\n"),
])
def test_train_errors(cli, data, tmp_path, args, status, message):
    args = [str(data["narrow"]) if a == "NARROW" else a for a in args]
    r = cli("train", data["train"], "-o", tmp_path / "m", *FAST, *args)
    assert r.returncode == status, r.stderr
    assert r.stderr.decode().startswith(message), r.stderr
    assert not (tmp_path / "m").exists()


def test_existing_output_and_predict_errors(cli, data, tmp_path):
    model = tmp_path / "m"
    assert cli("train", data["train"], "-o", model, "--loss", "pointwise", *FAST).returncode == 0
    r = cli("train", data["train"], "-o", model, *FAST)
    assert r.returncode == 4
    assert r.stderr.decode() == f"Error: {model}: already exists; pass --overwrite to replace it\n"
    r = cli("predict", model, data["narrow"], "-o", tmp_path / "run.parquet")
    assert r.returncode == 3
    assert r.stderr.decode() == (f"Error: {data['narrow']}: feature columns do not match the model's: missing f46 "
                                 "(expected 46 features, got 45)\n")
    assert not (tmp_path / "run.parquet").exists()
    r = cli("predict", tmp_path, data["test"], "-o", tmp_path / "run.parquet")
    assert r.returncode == 3 and r.stderr.decode().startswith(f"Error: {tmp_path}: not a model directory")


# ------------------------------------------------------- --param and typos: refused up front, never ignored
@pytest.mark.parametrize("command", ["train", "experiment", "train-dask"])
@pytest.mark.parametrize("param, message", [
    ("num_leafs=3", "Error: --param num_leafs: LightGBM has no parameter 'num_leafs'; did you mean 'num_leaves'? "
                    "(rankcli sets it: use --num-leaves)"),
    ("objective=regression", "Error: --param objective: objective cannot be set with --param, it is set by --loss"),
    ("max_leaves=3", "Error: --param max_leaves: max_leaves (LightGBM's alias of num_leaves) cannot be set with "
                     "--param, it is set by --num-leaves; use --num-leaves\n"),
    ("bagging_seed=3", "Error: --param bagging_seed: bagging_seed cannot be set with --param, rankcli derives every "
                       "LightGBM seed from --seed; use --seed\n"),
])
def test_param_is_checked_in_train_experiment_and_dask_train(cli, data, tmp_path, command, param, message):
    """`--param num_leafs=3` trained with 31 leaves and `--param objective=regression` was ignored, silently."""
    if command == "experiment":
        args = ["experiment", data["train"], "-o", tmp_path / "m", "--trials", "1", "--trees", "2"]
        message = message.replace("--loss\n", "--losses\n").replace("set by --loss", "set by --losses")
    else:
        args = ["train", data["train"], "-o", tmp_path / "m", *FAST]
        if command == "train-dask":
            args += ["--dask", "local:1", "--loss", "lambdamart"]  # refused before a cluster starts
    r = cli(*args, "--param", param)
    assert r.returncode == 2, r.stderr
    assert r.stderr.decode().startswith(message), r.stderr
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("command", ["train", "experiment"])
@pytest.mark.parametrize("param, message", [
    ("num_class=3", "Error: --param num_class: num_class cannot be set with --param"),        # was a traceback
    ("verbosity=1", "Error: --param verbosity: verbosity cannot be set with --param"),        # broke --json
    ("data=foo", "Error: --param data: data cannot be set with --param"),                     # a UserWarning leaked
    ("max_bin=63 num_leaves=3", "Error: --param max_bin: LightGBM cannot take the value"),    # half ignored
    ("max_bin=", "Error: --param max_bin: LightGBM cannot take the value ''"),
    ("boosting=dart", "Error: --param boosting=dart does not combine with early stopping"),   # a false best score
])
def test_param_that_lightgbm_would_ignore_or_misread_is_a_usage_error(cli, data, tmp_path, command, param, message):
    if command == "experiment":
        args = ["experiment", data["train"], "-o", tmp_path / "m", "--trials", "1", "--trees", "2", "--json"]
    else:
        args = ["train", data["train"], "--valid", data["vali"], "-o", tmp_path / "m", *FAST, "--json"]
    r = cli(*args, "--param", param)
    assert r.returncode == 2, r.stderr
    assert r.stderr.decode().startswith(message) and b"Traceback" not in r.stderr and b"Warning" not in r.stderr
    assert r.stdout == b"" and not (tmp_path / "m").exists()


def test_other_lightgbm_params_pass_through_under_their_main_name(cli, data, tmp_path):
    r = cli("train", data["train"], "-o", tmp_path / "m", *FAST, "--param", "min_sum_hessian=0.5",
            "--param", "lambda_l2=2", "--param", "max_bin=63")
    assert r.returncode == 0, r.stderr
    info = json.loads((tmp_path / "m" / "rankcli.json").read_text())
    assert info["params"]["min_sum_hessian_in_leaf"] == 0.5 and "min_sum_hessian" not in info["params"]
    assert info["params"]["lambda_l2"] == 2 and info["params"]["max_bin"] == 63
    text = (tmp_path / "m" / "model.txt").read_text()
    assert "[min_sum_hessian_in_leaf: 0.5]" in text and "[lambda_l2: 2]" in text and "[max_bin: 63]" in text


@pytest.mark.parametrize("command", ["train", "experiment"])
@pytest.mark.parametrize("args, message", [
    (["LOSS", "xendgc"], "Error: unknown loss 'xendgc'; did you mean 'xendcg'?"),
    (["--select-by", "ndgc@5"], "Error: unknown metric 'ndgc'; did you mean 'ndcg'?"),
])
def test_loss_and_metric_typos_are_both_usage_errors(cli, data, tmp_path, command, args, message):
    """A typo in a loss name and in a metric name: the same status (2), the closest name suggested."""
    args = [("--losses" if command == "experiment" else "--loss") if a == "LOSS" else a for a in args]
    extra = ["--trials", "1", "--trees", "2"] if command == "experiment" else FAST
    r = cli(command, data["train"], "-o", tmp_path / "m", *extra, *args)
    assert r.returncode == 2, r.stderr
    assert r.stderr.decode().startswith(message)
    if command == "experiment":
        r = cli(command, data["train"], "-o", tmp_path / "m", *extra, "--metric", "ndcg@5,mrrr")
        assert r.returncode == 2 and r.stderr.decode().startswith("Error: unknown metric 'mrrr'; did you mean 'mrr'?")


@pytest.mark.parametrize("command", ["train", "experiment", "tune"])
@pytest.mark.parametrize("metric, why", [
    ("num_q", "num_q is a count of queries or documents, which does not change with the model"),
    ("num_ret", "num_ret is a count of queries or documents, which does not change with the model"),
    ("num_rel", "num_rel is a count of queries or documents, which does not change with the model"),
    ("num_rel_ret", "num_rel_ret is a count of queries or documents, which does not change with the model"),
    ("num_nonrel_judged_ret", "num_nonrel_judged_ret is a count of queries or documents, which does not change with "
                              "the model"),
    ("runid", "runid is not a metric"),
])
def test_select_by_a_count_is_a_usage_error(cli, data, tmp_path, command, metric, why):
    """Every tree scores the same count, so the first would be kept: refused before anything is written."""
    extra = {"train": [*FAST, "--valid", data["train"]], "experiment": ["--trials", "1", "--trees", "2"],
             "tune": ["--valid", data["train"], "--budget", "1", "--loss", "xendcg", "--trees", "2"]}[command]
    r = cli(command, data["train"], "-o", tmp_path / "m", *extra, "--select-by", metric)
    assert r.returncode == 2, r.stderr
    assert r.stderr.decode() == f"Error: --select-by {metric}: {why}; it cannot select a model\n"
    assert r.stdout == b"" and not (tmp_path / "m").exists()


@pytest.mark.parametrize("command", ["train", "experiment", "convert"])
def test_dask_help_shows_the_extra(cli, command):
    """rich markup ate `[dask]` in `pip install "rankcli[dask]"`."""
    r = cli(command, "--help", env={"COLUMNS": "400", "TERM": "dumb"})
    assert r.returncode == 0
    assert 'Needs pip install "rankcli[dask]".' in r.stdout.decode()


# ---------------------------------------------------------------- corrupt model directories: exit 3 naming the file
@pytest.fixture(scope="module")
def model_dir(data, tmp_path_factory):
    from tests.conftest import run_cli

    model = tmp_path_factory.mktemp("model") / "m"
    r = run_cli("train", data["train"], "-o", model, "--loss", "pointwise", *FAST)
    assert r.returncode == 0, r.stderr
    return model


def _corrupt_copy(model_dir, tmp_path, case):
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(model_dir, bad)
    info = json.loads((bad / "rankcli.json").read_text())
    text = (bad / "model.txt").read_bytes()
    if case in ("legacy", "legacy-truncated"):
        del info["model_sha256"]  # a model written before rankcli recorded the checksum
    if case in ("truncated", "legacy-truncated"):
        (bad / "model.txt").write_bytes(text[:len(text) * 2 // 5])
    if case == "legacy-params-cut":  # LightGBM segfaults on a file cut inside its parameters section
        del info["model_sha256"]
        (bad / "model.txt").write_bytes(text[:text.index(b"end of parameters") - 30])
    if case == "byte-changed":
        (bad / "model.txt").write_bytes(text.replace(b"Tree=1", b"Tree=9", 1))
    if case == "loss-string":
        info["loss"] = "pointwise"
    if case == "features-number":
        info["features"] = 5
    if case == "format-2":
        info["format"] = "rankcli-model/2"
    if case == "sha-number":
        info["model_sha256"] = 12
    if case == "no-format":
        del info["format"]
    (bad / "rankcli.json").write_text(json.dumps([1, 2] if case == "list" else info))
    return bad


CORRUPT = {
    "truncated": "{m}/model.txt: the file was changed or truncated after training (its SHA-256 is ",
    "byte-changed": "{m}/model.txt: the file was changed or truncated after training",
    "legacy-truncated": "{m}/model.txt: not a whole LightGBM model (the 6 trees its header announces are not all "
                        "there (truncated?)); restore it or retrain\n",
    "legacy-params-cut": "{m}/model.txt: not a whole LightGBM model (it ends before its last section (truncated?))",
    "loss-string": "{m}/rankcli.json: key 'loss' must be an object, got a string ('pointwise')\n",
    "features-number": "{m}/rankcli.json: key 'features' must be a list of feature names (strings), got a number (5)\n",
    "list": "{m}/rankcli.json: not a rankcli model description, expected a JSON object, got a list\n",
    "format-2": "{m}/rankcli.json: unknown model format 'rankcli-model/2' (this rankcli ",
    "sha-number": "{m}/rankcli.json: key 'model_sha256' must be 64 lowercase hexadecimal digits, got a number (12)\n",
    "no-format": "{m}/rankcli.json: not a rankcli model description, key 'format' is missing\n",
}


def _model_commands(model, data, tmp_path):
    return {"predict": ["predict", model, data["test"], "-o", tmp_path / "run.parquet"],
            "eval": ["eval", data["test"], "--model", model],
            "simulate-clicks": ["simulate-clicks", data["test"], "--ranker", model, "-o", tmp_path / "c.parquet"]}


@pytest.mark.parametrize("case", list(CORRUPT))
def test_corrupt_model_directory_is_exit_3_naming_the_file(cli, data, model_dir, tmp_path, case):
    """A truncated model.txt killed predict with SIGSEGV/SIGABRT; a malformed rankcli.json was a traceback."""
    bad = _corrupt_copy(model_dir, tmp_path, case)
    commands = _model_commands(bad, data, tmp_path)
    for name in (commands if case in ("truncated", "legacy-params-cut", "loss-string") else ["predict"]):
        r = cli(*commands[name])
        err = r.stderr.decode()
        assert r.returncode == 3, (name, err)
        assert err.startswith("Error: " + CORRUPT[case].format(m=bad)), (name, err)
        assert "Traceback" not in err and "[LightGBM]" not in err and err.count("\n") == 1
    assert not (tmp_path / "run.parquet").exists() and not (tmp_path / "c.parquet").exists()


def test_model_without_checksum_still_loads_and_predicts_alike(cli, data, model_dir, tmp_path):
    bad = _corrupt_copy(model_dir, tmp_path, "legacy")
    for m, out in ((model_dir, "a.parquet"), (bad, "b.parquet")):
        r = cli("predict", m, data["test"], "-o", tmp_path / out)
        assert r.returncode == 0, r.stderr
    scores = [pq.read_table(tmp_path / name).column("score") for name in ("a.parquet", "b.parquet")]
    assert scores[0] == scores[1]
    info = json.loads((model_dir / "rankcli.json").read_text())
    import hashlib
    assert info["model_sha256"] == hashlib.sha256((model_dir / "model.txt").read_bytes()).hexdigest()


# --------------------------------------------------------- hostile inputs: clean exits, messages naming what was wrong
@pytest.fixture(scope="module")
def hostile(data, tmp_path_factory):
    import pyarrow as pa

    d = tmp_path_factory.mktemp("hostile")
    table = pq.read_table(data["train"])
    big = table.set_column(table.schema.get_field_index("label"), "label",
                           pa.array(table.column("label").to_numpy() * 250_000.0))
    pq.write_table(big.replace_schema_metadata(table.schema.metadata), d / "big.parquet")
    vali = pq.read_table(data["vali"])
    pq.write_table(vali.set_column(vali.schema.get_field_index("label"), "label",
                                   pa.array(vali.column("label").to_numpy() * 250_000.0)), d / "bigv.parquet")
    pq.write_table(table.select(["qid", "label"]).replace_schema_metadata(table.schema.metadata), d / "nofeat.parquet")
    pq.write_table(pq.read_table(data["vali"]).slice(0, 0), d / "empty.parquet")
    labels = table.column("label").to_numpy().copy()
    labels[3] = np.nan
    nan_label = table.set_column(table.schema.get_field_index("label"), "label", pa.array(labels))
    pq.write_table(nan_label.replace_schema_metadata(table.schema.metadata), d / "nanlabel.parquet")
    return d


@pytest.mark.parametrize("args, status, message", [
    (["train", "TRAIN", "--seed", "-1"], 2, "Error: --seed must be >= 0, got -1\n"),
    (["train", "TRAIN", "--seed", "2147483648"], 2, "Error: --seed must be at most 2147483647 (LightGBM's seed is a "
                                                    "32-bit integer), got 2147483648\n"),
    (["simulate-clicks", "TRAIN", "--seed", "-1"], 2, "Error: --seed must be >= 0, got -1\n"),
    (["compare", "TRAIN", "VALID", "--seed", "-1"], 2, "Error: --seed must be >= 0, got -1\n"),
    (["train", "H/big.parquet", "--loss", "lambdamart"], 3,
     "Error: --loss lambdamart takes grades up to 1000 (its gains 2^grade - 1 overflow the DCG sums beyond that), got "
     "a label of 1e+06; pass --label-grades to map the distinct label values to grades 0..n-1, or use --loss xendcg, "
     "which takes any label >= 0\n"),
    (["train", "H/big.parquet", "--loss", "xendcg-native"], 3, "Error: --loss xendcg-native takes grades up to 30"),
    (["train", "H/big.parquet", "--valid", "H/bigv.parquet"], 3,  # was 'validation ndcg@5 0.0000' with exit 0
     "Error: H/bigv.parquet: a label of 1e+06: --select-by ndcg@5 under the paper convention uses the gain "
     "2^label - 1, which overflows beyond label 1000; select by --convention sklearn (linear gain), or validate on "
     "graded labels\n"),
    (["train", "H/nofeat.parquet"], 3, "Error: H/nofeat.parquet: no feature columns (f1, f2, ...): a ranker needs at "
                                       "least one feature\n"),
    (["train", "TRAIN", "--valid", "H/empty.parquet"], 3, "Error: H/empty.parquet: no rows to validate on; give a "
                                                          "validation file with queries, or leave out --valid"),
    (["train", "TRAIN", "--valid", "H/empty.parquet", "--loss", "lambdamart", "--dask", "local:1"], 3,
     "Error: H/empty.parquet: no rows to validate on"),  # refused before a cluster starts
    # these named "training data" and "validation data", not the file
    (["train", "H/nanlabel.parquet"], 3, "Error: H/nanlabel.parquet: label of row 3 is not a finite number, got nan\n"),
    (["train", "TRAIN", "--valid", "H/nanlabel.parquet"], 3,
     "Error: H/nanlabel.parquet: label of row 3 is not a finite number, got nan\n"),
])
def test_hostile_inputs_exit_cleanly(cli, data, hostile, tmp_path, args, status, message):
    """Each was a traceback (exit 1) or LightGBM's own words ('Forced splits file includes feature index 0',
    'Check failed: (num_data) > (0)')."""
    sub = {"TRAIN": str(data["train"]), "VALID": str(data["vali"])}
    args = [sub.get(a, a.replace("H/", f"{hostile}/")) for a in args]
    if args[0] in ("train", "simulate-clicks"):
        args += ["-o", str(tmp_path / "out")] + (FAST if args[0] == "train" else [])
    r = cli(*args)
    err = r.stderr.decode()
    assert r.returncode == status, err
    assert err.startswith(message.replace("H/", f"{hostile}/")) and "Traceback" not in err and "[LightGBM]" not in err
    assert not (tmp_path / "out").exists()


def test_default_threads_recorded_from_omp_num_threads(cli, data, tmp_path):
    """The default follows OMP_NUM_THREADS, affinity and cgroup quota (rankcli.json said 0: every core)."""
    r = cli("train", data["train"], "-o", tmp_path / "m", "--trees", "2", env={"OMP_NUM_THREADS": "1"})
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "m" / "rankcli.json").read_text())["params"]["num_threads"] == 1
    r = cli("train", "--help", env={"COLUMNS": "400", "TERM": "dumb"})
    assert "default: the CPUs this process may use (its CPU affinity, cgroup CPU quota and OMP_NUM_THREADS), at most " \
        "one per 20,000 training rows" in r.stdout.decode()


def test_loss_option_shows_every_loss_of_the_registry_in_its_order():
    """--loss shows its choices as every other word-valued option does (it showed <str>); the names are written out
    in the CLI module for start-up's sake, so they must equal the registry's."""
    import typer

    from rankcli.cli import app
    from rankcli.cli import train as train_cli
    from rankcli.train import LOSSES

    assert train_cli.LOSS_NAMES == tuple(LOSSES)
    loss = next(p for p in typer.main.get_command(app).commands["train"].params if p.name == "loss")
    assert loss.metavar == "<" + "|".join(LOSSES) + ">"


@pytest.mark.parametrize("loss, args, options", [
    ("listnet", [], {"step": "paper"}),
    ("listnet", ["--step", "diagonal"], {"step": "diagonal"}),
    ("listmle", [], None),
    ("listmle-pa", [], None),
    ("approxndcg", ["--loss-option", "temperature=0.5"], {"temperature": 0.5}),
    ("lambdaloss", ["--loss-option", "variant=ndcg-loss2", "--loss-option", "lambdaloss:sigma=2"],
     {"variant": "ndcg-loss2", "mu": 10.0, "sigma": 2.0}),
])
def test_every_new_loss_trains_and_its_options_are_recorded(cli, data, tmp_path, loss, args, options):
    r = cli("train", data["train"], "-o", tmp_path / "m", *FAST, "--loss", loss, *args, "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads((tmp_path / "m" / "rankcli.json").read_text())
    assert info["loss"]["name"] == loss and info["loss"].get("options") == options
    assert info["params"]["objective"] == f"rankcli:{loss}"
    r = cli("predict", tmp_path / "m", data["train"], "-o", tmp_path / "run.parquet")
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("loss", ["xendcg", "lambdamart", "listnet"])
def test_a_learning_rate_that_overflows_the_scores_is_refused_not_written(cli, data, tmp_path, loss):
    """--learning-rate 1e308 made leaves of inf: train said exit 0 and wrote a model that predict then called
    damaged ("the model file holds a value that is not a number")."""
    out = tmp_path / "m"
    r = cli("train", data["train"], "-o", out, "--loss", loss, "--learning-rate", "1e308", *FAST)
    err = r.stderr.decode()
    assert r.returncode == 3, err
    assert "Error: training diverged: a leaf of tree " in err and "--learning-rate" in err, err
    assert "Traceback" not in err and not out.exists()
