"""rankcli propensity end to end: recovery of 1/r on the bundled sample (as docs/clicks.md reports), the JSON file and
its keys, RandTop-n and swap logs, the logs that cannot identify propensities (exit 3 saying why), missing columns,
usage errors."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rankcli.cli import main
from rankcli.formats.parquet import write_dataset
from tests.letor_sample import load_letor

KEYS = {"method", "positions", "propensity", "ci_low", "ci_high", "impressions", "clicks"}
#: What propensity and train --propensity say about the logs propensities cannot debias.
CASCADE = ("made with the cascade click model, whose examination depends on the clicks above (the scan stops at the "
           "first click), which breaks the position-based assumption behind propensities; simulate with --model pbm")
DROPPED = ("impressions without a click were dropped (footer keep_no_click false), which inflates the click rate of "
           "every position unevenly; simulate again with --keep-no-click")


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """The sample's training split and click logs simulated from it by the CLI (module scope: made once)."""
    d = tmp_path_factory.mktemp("propensity")
    train = d / "train.parquet"
    write_dataset(train, load_letor("train", 46))
    made = {"dir": d, "train": train}
    specs = {
        # The log of docs/clicks.md's check: PBM eta = 1, fully random, 100 impressions a query, top 10, no-click kept.
        "random": ["--ranker", "random", "--max-rank", "10", "--keep-no-click", "--model", "pbm", "--impressions",
                   "100"],
        "top": ["--ranker", "label", "--randomize", "top:5", "--keep-no-click", "--model", "pbm", "--impressions",
                "100"],
        "swap": ["--ranker", "label", "--randomize", "swap:1", "--max-rank", "6", "--keep-no-click", "--model", "pbm",
                 "--impressions", "400"],
        "cascade": ["--ranker", "random", "--keep-no-click", "--max-rank", "10"],
        "dropped": ["--ranker", "random", "--model", "pbm", "--max-rank", "10"],
        "deterministic": ["--ranker", "label", "--model", "pbm", "--keep-no-click", "--max-rank", "10"],
        # Intervention harvesting: two deterministic rankers, PBM eta = 1, 100 impressions per query, top 10.
        "label": ["--ranker", "label", "--model", "pbm", "--keep-no-click", "--max-rank", "10", "--impressions",
                  "100"],
        # (its own seed, given after the common --seed 1: two rankers' users do not share their coin flips)
        "input": ["--ranker", "input", "--model", "pbm", "--keep-no-click", "--max-rank", "10", "--impressions",
                  "100", "--seed", "2"],
    }
    for name, args in specs.items():
        out = d / f"{name}.parquet"
        assert main(["simulate-clicks", str(train), "-o", str(out), "--seed", "1", *args]) == 0
        made[name] = out
    return made


def _within(d, truth):
    p, lo, hi = (np.array(d[k], dtype=float) for k in ("propensity", "ci_low", "ci_high"))
    return (np.abs(p / truth - 1) <= 0.2) | ((lo <= truth) & (truth <= hi))


def test_recovers_one_over_r_on_the_sample_done_when(run, logs, tmp_path):
    out = tmp_path / "propensity.json"
    status, stdout, err = run("propensity", logs["random"], "-o", out, "--seed", "1")
    assert status == 0, err
    assert "examination propensity per position" in stdout and "click-rate" in stdout
    d = json.loads(out.read_text())
    assert KEYS <= set(d)
    assert d["method"] == "click-rate" and d["policy"] == "random" and d["click_model"] == "pbm"
    assert d["positions"] == list(range(1, 11))
    truth = 1.0 / np.arange(1, 11)
    assert _within(d, truth).all(), (d["propensity"], d["ci_low"], d["ci_high"])
    assert d["propensity"][0] == d["ci_low"][0] == d["ci_high"][0] == 1.0
    assert d["impressions"] == 90 * 100
    assert d["clicks"] == int(pq.read_table(logs["random"], columns=["label"]).column("label").to_numpy().sum())
    assert min(d["clicks_by_position"]) >= 20 and d["stopped_at"] is None
    # --json prints the same object; the same seed gives the same bytes.
    status, stdout, err = run("propensity", logs["random"], "--json", "--seed", "1")
    assert status == 0, err
    assert json.loads(stdout) == d
    again = tmp_path / "again.json"
    assert run("propensity", logs["random"], "-o", again, "--seed", "1")[0] == 0
    assert again.read_bytes() == out.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again.json", "propensity.json"]  # no temporaries left


def test_randtop_n_estimates_the_top_n_only(run, logs):
    status, stdout, err = run("propensity", logs["top"], "--json", "--bootstrap", "200")
    assert status == 0, err
    d = json.loads(stdout)
    assert d["policy"] == "top:5" and d["max_position"] == 5 and d["positions"] == [1, 2, 3, 4, 5]
    assert _within(d, 1.0 / np.arange(1, 6)).all(), d


def test_swap_log_uses_the_ratio_estimator(run, logs):
    status, stdout, err = run("propensity", logs["swap"], "--json", "--bootstrap", "200")
    assert status == 0, err
    d = json.loads(stdout)
    assert d["method"] == "swap-ratio" and d["policy"] == "swap:1"
    assert d["positions"][0] == 1 and len(d["positions"]) >= 4
    assert _within(d, 1.0 / np.array(d["positions"])).all(), d


def test_too_few_clicks_are_said_and_power_fit(run, logs):
    status, stdout, err = run("propensity", logs["random"], "--min-clicks", "300", "--bootstrap", "100")
    assert status == 0, err
    assert "fewer than 300; the estimate stops there" in stdout
    status, stdout, err = run("propensity", logs["random"], "--min-clicks", "300", "--bootstrap", "100", "--fit",
                              "power", "--json")
    assert status == 0, err
    d = json.loads(stdout)
    assert d["positions"] == list(range(1, 11)) and any(d["fitted"]) and not d["fitted"][0]
    assert 0.7 < d["fit"]["eta"] < 1.3


@pytest.mark.parametrize("log,message", [
    ("cascade", CASCADE),
    ("dropped", DROPPED),
    ("deterministic", "logged in ranker 'label''s own order without randomisation, so position and relevance are "
                      "confounded; simulate with --randomize top:N or --randomize swap:K (or --ranker random), or "
                      "give the logs of several rankers (rankcli propensity A.parquet B.parquet ...: intervention "
                      "harvesting needs randomisation or several policies)"),
])
def test_logs_that_cannot_identify_propensities_exit_3(run, logs, tmp_path, log, message):
    out = tmp_path / "p.json"
    status, _, err = run("propensity", logs[log], "-o", out)
    assert status == 3
    assert err == f"Error: {logs[log]}: {message}\n"
    assert not out.exists()


def _rewrite(src, dst, drop=(), metadata=None, label=None, position=None):
    table = pq.read_table(src)
    table = table.drop_columns(list(drop))
    if label is not None:
        table = table.set_column(table.column_names.index("label"), "label", pa.array(label))
    if position is not None:
        table = table.set_column(table.column_names.index("position"), "position", pa.array(position))
    table = table.replace_schema_metadata(metadata if metadata is not None else table.schema.metadata)
    pq.write_table(table, dst)
    return dst


@pytest.mark.parametrize("column", ["position", "label", "source_qid"])
def test_missing_column_exit_3_names_it(run, logs, tmp_path, column):
    bad = _rewrite(logs["random"], tmp_path / "bad.parquet", drop=[column])
    status, _, err = run("propensity", bad)
    assert status == 3 and err.startswith(f"Error: {bad}: missing column {column} (found: ")


def test_swap_log_without_ranker_rank_and_graded_labels(run, logs, tmp_path):
    bad = _rewrite(logs["swap"], tmp_path / "bad.parquet", drop=["ranker_rank"])
    status, _, err = run("propensity", bad)
    assert status == 3 and err.startswith(f"Error: {bad}: missing column ranker_rank")
    n = pq.read_metadata(logs["random"]).num_rows
    graded = _rewrite(logs["random"], tmp_path / "graded.parquet", label=np.full(n, 2.0))
    status, _, err = run("propensity", graded)
    assert status == 3 and err == f"Error: {graded}: column label: expected clicks (0 or 1), got 2 at row 0\n"


def test_log_without_footer_needs_policy(run, logs, tmp_path):
    bare = _rewrite(logs["random"], tmp_path / "bare.parquet", metadata={})
    status, _, err = run("propensity", bare)
    assert status == 3 and "no rankcli.clicks footer" in err and "--policy random|top:N|swap:K" in err
    status, stdout, err = run("propensity", bare, "--policy", "random", "--json", "--bootstrap", "50")
    assert status == 0, err
    d = json.loads(stdout)
    assert d["policy"] == "random" and d["click_model"] is None and d["positions"] == list(range(1, 11))


@pytest.mark.parametrize("policy", [5, "sideways", None, ["random"]])
def test_a_footer_policy_no_rankcli_wrote_is_the_logs_fault(run, logs, tmp_path, policy):
    import pyarrow.parquet as pq

    meta = dict(pq.read_schema(logs["random"]).metadata)
    footer = json.loads(meta[b"rankcli.clicks"])
    footer["policy"] = policy
    meta[b"rankcli.clicks"] = json.dumps(footer).encode()
    odd = _rewrite(logs["random"], tmp_path / "odd.parquet", metadata=meta)
    status, out, err = run("propensity", odd)
    assert (status, out) == (3, "") and "--policy:" not in err
    assert err == (f"Error: {odd}: footer key rankcli.clicks records the logging policy {policy!r}, which is none of "
                   "random, top:N, swap:K; pass --policy to state how the log was randomised\n")


def test_a_bootstrap_whose_replicates_exceed_the_memory_cap_is_refused_before_allocating(run, logs, monkeypatch):
    import rankcli.core.propensity as core

    monkeypatch.setattr(core, "MAX_REPLICATE_BYTES", 8 * 10 * 99)  # room for 99 replicates of the log's 10 positions
    status, out, err = run("propensity", logs["random"], "--bootstrap", "100")
    assert status == 2 and err.startswith("Error: --bootstrap 100: the replicates of 10 positions would take ")
    assert err.endswith("ask for at most 99 replicates\n")
    assert run("propensity", logs["random"], "--bootstrap", "99")[0] == 0


@pytest.mark.parametrize("args,message", [
    (["--policy", "top:0"],
     "Error: --policy: expected random, top:N or swap:K (N, K positive integers), got 'top:0'\n"),
    (["--fit", "spline"], "Error: --fit: expected one of none, power, got 'spline'\n"),
    (["--bootstrap", "0"], "Error: --bootstrap: must be at least 1, got 0\n"),
    (["--bootstrap", "100000000"], "Error: --bootstrap: at most 10,000,000 replicates (as rankcli compare), got "
                                   "100,000,000; an interval's percentiles do not sharpen past a few thousand\n"),
    (["--confidence", "1.5"], "Error: --confidence: must be within (0, 1), got 1.5\n"),
    (["--min-clicks", "0"], "Error: --min-clicks: must be at least 1, got 0\n"),
    (["-o", "-", "--json"], "Error: -o - and --json both write to standard output; give the output a file name\n"),
])
def test_usage_errors(run, logs, args, message):
    status, _, err = run("propensity", logs["random"], *args)
    assert status == 2 and err == message


def test_existing_output_and_missing_input(run, logs, tmp_path):
    out = tmp_path / "p.json"
    out.write_text("keep me")
    for flags in ([], ["--overwrite"]):  # not a propensity file: refused whatever the flags
        status, _, err = run("propensity", logs["random"], "-o", out, *flags)
        assert status == 4 and err == (f"Error: {out}: exists and is not a rankcli propensity file; rankcli replaces "
                                       "only an output of the same kind, whatever the flags: choose a new path or "
                                       "remove the file\n")
    assert out.read_text() == "keep me"
    out.unlink()
    assert run("propensity", logs["random"], "-o", out, "--bootstrap", "20")[0] == 0
    status, _, err = run("propensity", logs["random"], "-o", out)
    assert status == 4 and err == f"Error: {out}: already exists; pass --overwrite to replace it\n"
    status, _, err = run("propensity", logs["random"], "-o", out, "--overwrite", "--bootstrap", "20")
    assert status == 0, err and json.loads(out.read_text())["method"] == "click-rate"
    status, _, err = run("propensity", tmp_path / "nope.parquet")
    assert status == 3 and err == f"Error: {tmp_path / 'nope.parquet'}: no such file\n"


# ----------------------------------------------------------------------------------------------------------------------
# IPS training: train CLICKS --propensity FILE | pbm:ETA, --pool-impressions


TRAIN_ARGS = ["--trees", "3", "--threads", "1", "--num-leaves", "4", "--min-data-in-leaf", "2"]


def test_pbm_zero_is_byte_identical_to_pool_impressions_and_rankcli_json_records_it(run, logs, tmp_path):
    a, b = tmp_path / "naive", tmp_path / "pbm0"
    status, _, err = run("train", logs["random"], "-o", a, "--pool-impressions", *TRAIN_ARGS)
    assert status == 0, err
    status, _, err = run("train", logs["random"], "-o", b, "--propensity", "pbm:0", *TRAIN_ARGS)
    assert status == 0, err
    assert (a / "model.txt").read_bytes() == (b / "model.txt").read_bytes()
    naive = json.loads((a / "rankcli.json").read_text())["ips"]
    assert naive["mode"] == "pooled-click-through-rate" and naive["propensity"]["source"] is None
    assert naive["queries"] == 90 and naive["impressions"] == 9000 and naive["labels"] == "log2(1 + g)"
    pbm0 = json.loads((b / "rankcli.json").read_text())["ips"]
    assert pbm0["mode"] == "ips" and pbm0["propensity"]["source"] == "pbm:0"
    assert pbm0["propensity"]["values"] == [1.0] * 10 and pbm0["propensity"]["clip"] == 0.01


@pytest.mark.parametrize("loss", ["xendcg", "listnet", "pointwise", "ranknet"])
def test_train_with_an_estimated_propensity_file(run, logs, tmp_path, loss):
    prop = tmp_path / "p.json"
    assert run("propensity", logs["random"], "-o", prop, "--bootstrap", "20")[0] == 0
    model = tmp_path / "m"
    status, _, err = run("train", logs["random"], "-o", model, "--loss", loss, "--propensity", prop, *TRAIN_ARGS)
    assert status == 0, err
    info = json.loads((model / "rankcli.json").read_text())
    assert info["ips"]["propensity"]["source"] == str(prop)
    assert info["ips"]["propensity"]["values"] == json.loads(prop.read_text())["propensity"]
    assert info["loss"]["name"] == loss
    naive = tmp_path / "naive"
    assert run("train", logs["random"], "-o", naive, "--loss", loss, "--pool-impressions", *TRAIN_ARGS)[0] == 0
    assert (naive / "model.txt").read_bytes() != (model / "model.txt").read_bytes()


@pytest.mark.parametrize("args,message", [
    (["--loss", "lambdamart", "--propensity", "pbm:1"],
     "Error: --loss lambdamart: LightGBM's per-document weights scale a document's summed lambda, which is not "
     "pairwise IPS; use --loss ranknet (the pairwise IPS loss), or xendcg, listnet or pointwise, or --propensity learn "
     "(LightGBM's own position-bias model for lambdamart)\n"),
    (["--loss", "xendcg-native", "--pool-impressions"],
     "Error: --loss xendcg-native: LightGBM's rank_xendcg casts labels to integers, which would round the IPS "
     "relevance away; use --loss xendcg (the same loss, in rankcli)\n"),
    (["--propensity", "learn"],
     "Error: --propensity learn is LightGBM's position-bias model for --loss lambdamart (unbiased LambdaMART), not "
     "--loss xendcg; with xendcg, listnet, pointwise, ranknet, approxndcg, lambdaloss give a propensity file "
     "(rankcli propensity) or pbm:ETA\n"),
    (["--loss", "ranknet", "--propensity", "learn"],
     "Error: --propensity learn is LightGBM's position-bias model for --loss lambdamart (unbiased LambdaMART), not "
     "--loss ranknet; with xendcg, listnet, pointwise, ranknet, approxndcg, lambdaloss give a propensity file "
     "(rankcli propensity) or pbm:ETA\n"),
    (["--loss", "listmle", "--pool-impressions"],
     "Error: --loss listmle reads only the order of the labels, so no weighting of the clicks enters it, and the "
     "order of noisy IPS estimates does not converge where relevances tie: neither unbiased nor consistent; use "
     "xendcg, listnet, pointwise, ranknet, approxndcg, lambdaloss\n"),
    (["--loss", "lambdamart", "--pool-impressions"],
     "Error: --loss lambdamart: LightGBM's per-document weights scale a document's summed lambda, which is not "
     "pairwise IPS; use --loss ranknet (the pairwise IPS loss), or xendcg, listnet or pointwise, or --propensity learn "
     "(LightGBM's own position-bias model for lambdamart)\n"),
    (["--loss", "lambdamart", "--param", "lambdarank_position_bias_regularization=0.5"],
     "Error: --param lambdarank_position_bias_regularization: it regularises LightGBM's position-bias model, which "
     "only --loss lambdamart --propensity learn trains\n"),
    (["--propensity", "pbm:-1"], "Error: --propensity pbm:ETA: expected a non-negative number, got 'pbm:-1'\n"),
    (["--propensity", "pbm:1", "--pool-impressions"],
     "Error: --propensity and --pool-impressions: give one (--propensity pbm:0 is the pooled click-through rate "
     "too)\n"),
    (["--propensity", "pbm:1", "--propensity-clip", "0"], "Error: --propensity-clip: must be within (0, 1], got 0\n"),
])
def test_ips_usage_errors(run, logs, tmp_path, args, message):
    status, _, err = run("train", logs["random"], "-o", tmp_path / "m", *args, *TRAIN_ARGS)
    assert status == 2 and err == message
    assert not (tmp_path / "m").exists()


def _bias(model):
    return json.loads((model / "rankcli.json").read_text())["ips"]["propensity"]["position_bias"]


def test_lambdamart_learn_trains_lightgbms_position_bias_model(run, logs, tmp_path):
    """--propensity learn on a PBM (eta = 1) log of a deterministic ranker: LightGBM gets the positions (its
    unbiased LambdaMART), rankcli.json records the source and the learned biases, and the model differs from plain
    lambdamart on the same log."""
    learn, plain = tmp_path / "learn", tmp_path / "plain"
    status, _, err = run("train", logs["deterministic"], "-o", learn, "--loss", "lambdamart", "--propensity", "learn",
                         *TRAIN_ARGS)
    assert status == 0, err
    assert run("train", logs["deterministic"], "-o", plain, "--loss", "lambdamart", *TRAIN_ARGS)[0] == 0
    assert (learn / "model.txt").read_bytes() != (plain / "model.txt").read_bytes()
    info = json.loads((learn / "rankcli.json").read_text())
    ips = info["ips"]
    assert ips["mode"] == "learn" and ips["propensity"]["source"] == "learn"
    assert ips["impressions"] == len(pq.read_table(logs["deterministic"], columns=["qid"]).column("qid").unique())
    assert ips["positions"] == 10 and ips["propensity"]["regularization"] == 0
    bias = ips["propensity"]["position_bias"]
    assert bias["positions"] == list(range(1, 11)) and bias["after_tree"] == 3
    assert len(bias["bias_factor"]) == 10 and all(np.isfinite(bias["bias_factor"]))
    # clicks fall with the position (eta = 1): the learned bias of position 1 is the largest
    assert bias["bias_factor"][0] == max(bias["bias_factor"])
    assert info["loss"]["name"] == "lambdamart" and info["params"]["lambdarank_position_bias_regularization"] == 0
    # the model is LightGBM's own with Dataset(position=...): the library call gives the same trees
    from rankcli.formats.parquet import read_dataset
    from rankcli.train import TrainConfig, train_model

    ds = read_dataset(logs["deterministic"], extra_columns=("position",))
    config = TrainConfig(loss="lambdamart", trees=3, threads=1, num_leaves=4, min_data_in_leaf=2, early_stopping=0)
    result = train_model(ds, None, config, position=ds.extra["position"])
    assert result.booster.model_to_string(num_iteration=3) == (learn / "model.txt").read_text()
    assert result.position_bias == bias
    # the regularisation passes through --param and changes the biases (stronger: closer to 0)
    reg = tmp_path / "reg"
    status, _, err = run("train", logs["deterministic"], "-o", reg, "--loss", "lambdamart", "--propensity", "learn",
                         "--param", "lambdarank_position_bias_regularization=10", *TRAIN_ARGS)
    assert status == 0, err
    stronger = _bias(reg)["bias_factor"]
    assert json.loads((reg / "rankcli.json").read_text())["ips"]["propensity"]["regularization"] == 10
    assert np.abs(stronger).sum() < np.abs(bias["bias_factor"]).sum()


def test_learn_with_validation_records_the_best_iterations_biases(run, logs, tmp_path):
    model = tmp_path / "m"
    status, out, err = run("train", logs["deterministic"], "-o", model, "--loss", "lambdamart", "--propensity", "learn",
                           "--valid", logs["train"], "--trees", "6", "--early-stopping", "2", "--threads", "1",
                           "--num-leaves", "4", "--min-data-in-leaf", "2", "--json")
    assert status == 0, err
    # LightGBM's debug log (verbosity 2, read for the biases) reaches neither stdout (only the JSON) nor stderr
    assert json.loads(out)["ips"]["propensity"]["source"] == "learn" and "LightGBM" not in err
    info = json.loads((model / "rankcli.json").read_text())
    assert _bias(model)["after_tree"] == info["best_iteration"]


def test_learn_needs_lightgbm_4_1(run, logs, tmp_path, monkeypatch):
    import lightgbm

    monkeypatch.setattr(lightgbm, "__version__", "4.0.0")
    status, _, err = run("train", logs["deterministic"], "-o", tmp_path / "m", "--loss", "lambdamart",
                         "--propensity", "learn", *TRAIN_ARGS)
    assert status == 2 and err.startswith("Error: --propensity learn needs LightGBM 4.1 or later (its position-bias "
                                          "model for lambdarank), this is LightGBM 4.0.0:")
    assert not (tmp_path / "m").exists()


def test_learn_input_errors(run, logs, tmp_path):
    common = ["--loss", "lambdamart", "--propensity", "learn", *TRAIN_ARGS]
    status, _, err = run("train", logs["train"], "-o", tmp_path / "m", *common)
    assert status == 3 and err == (f"Error: {logs['train']}: missing column position: --propensity learn needs the "
                                   "position each document was displayed at (a click log from rankcli "
                                   "simulate-clicks)\n")
    n = pq.read_metadata(logs["deterministic"]).num_rows
    none = _rewrite(logs["deterministic"], tmp_path / "none.parquet", label=np.zeros(n))
    status, _, err = run("train", none, "-o", tmp_path / "m", *common)
    assert status == 3 and "column label holds no click" in err
    graded = _rewrite(logs["deterministic"], tmp_path / "graded.parquet", label=np.full(n, 2.0))
    status, _, err = run("train", graded, "-o", tmp_path / "m", *common)
    assert status == 3 and "label of row 0 is 2, not a click (0 or 1)" in err
    zero = _rewrite(logs["deterministic"], tmp_path / "zero.parquet", position=np.zeros(n, dtype=np.int64))
    status, _, err = run("train", zero, "-o", tmp_path / "m", *common)
    assert status == 3 and err == (f"Error: {zero}: column position: positions are 1-based, got 0 at row 0, "
                                   "impression qid 1\n")
    assert not (tmp_path / "m").exists()


def test_ips_input_errors(run, logs, tmp_path):
    # A propensity file that stops before the log's last position: exit 3 naming it.
    short = tmp_path / "short.json"
    assert run("propensity", logs["top"], "-o", short, "--bootstrap", "20")[0] == 0
    status, _, err = run("train", logs["random"], "-o", tmp_path / "m", "--propensity", short, *TRAIN_ARGS)
    assert status == 3 and err.startswith(f"Error: {logs['random']}: the propensities cover positions 1..5, but the "
                                          "log shows position 10;") and f"(propensities from {short})" in err
    # A dataset that is not a click log.
    status, _, err = run("train", logs["train"], "-o", tmp_path / "m", "--propensity", "pbm:1", *TRAIN_ARGS)
    assert status == 3 and "missing column source_qid" in err
    # Graded labels: refused unless --allow-graded.
    n = pq.read_metadata(logs["random"]).num_rows
    graded = _rewrite(logs["random"], tmp_path / "graded.parquet", label=np.full(n, 2.0))
    status, _, err = run("train", graded, "-o", tmp_path / "m", "--propensity", "pbm:1", *TRAIN_ARGS)
    assert status == 3 and "label of row 0 is 2, not a click (0 or 1)" in err and "--allow-graded" in err
    status, _, err = run("train", graded, "-o", tmp_path / "m", "--propensity", "pbm:1", "--allow-graded",
                         *TRAIN_ARGS)
    assert status == 0, err
    # A propensity file with a value that is not a finite number above 0: exit 3 naming the position.
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"positions": [1, 2], "propensity": [1.0, -1.5]}))
    status, _, err = run("train", logs["random"], "-o", tmp_path / "m2", "--propensity", bad, *TRAIN_ARGS)
    assert status == 3 and err == f"Error: {bad}: propensity of position 2 must be a finite number above 0, got -1.5\n"


def test_ranknet_ips_trains_with_the_pairwise_ips_objective(logs, tmp_path):
    """train_model gets rankcli.train.ips's objective for ranknet: the first tree's gradient is the IPS pairwise one,
    not the library RankNet's on the pooled labels (which pairs only y_d > y_e, unweighted)."""
    from rankcli.core import ips as core_ips
    from rankcli.formats.parquet import read_dataset
    from rankcli.train.ips import LOG_COLUMNS, RankNetIPSObjective, objective_for, pooled_training_set

    ds = read_dataset(logs["random"], extra_columns=LOG_COLUMNS)
    pooled, _ = pooled_training_set(ds, loss="ranknet", propensity=("pbm", 1.0))
    obj = objective_for("ranknet", pooled)
    assert isinstance(obj, RankNetIPSObjective)
    preds = np.random.default_rng(0).normal(size=pooled.n_rows)
    grad, hess = obj(preds)
    expected = core_ips.ranknet_ips_grad_hess(pooled.labels, preds, pooled.offsets)
    np.testing.assert_array_equal(grad, expected[0])
    assert objective_for("xendcg", pooled) is None


def test_cli_ranknet_ips_model_is_the_ips_objective_model(run, logs, tmp_path):
    from rankcli.formats.parquet import read_dataset
    from rankcli.train import TrainConfig, train_model
    from rankcli.train.ips import LOG_COLUMNS, objective_for, pooled_training_set

    model = tmp_path / "m"
    status, _, err = run("train", logs["random"], "-o", model, "--loss", "ranknet", "--propensity", "pbm:1",
                         *TRAIN_ARGS)
    assert status == 0, err
    pooled, _ = pooled_training_set(read_dataset(logs["random"], extra_columns=LOG_COLUMNS), loss="ranknet",
                                    propensity=("pbm", 1.0))
    config = TrainConfig(loss="ranknet", trees=3, threads=1, num_leaves=4, min_data_in_leaf=2, early_stopping=0)
    ips_model = train_model(pooled, None, config, objective=objective_for("ranknet", pooled)).booster
    plain = train_model(pooled, None, config).booster
    text = (model / "model.txt").read_text()
    assert text == ips_model.model_to_string(num_iteration=3)
    assert text != plain.model_to_string(num_iteration=3)


def test_plot_png(run, logs, tmp_path, monkeypatch):
    png, out = tmp_path / "p.png", tmp_path / "p.json"
    status, _, err = run("propensity", logs["random"], "-o", out, "--plot", png, "--bootstrap", "20", "--fit",
                         "power", "--min-clicks", "300")
    assert status == 0, err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.exists()
    status, _, err = run("propensity", logs["random"], "-o", out, "--plot", out, "--overwrite")
    assert status == 2 and err == "Error: --plot and --output name the same file\n"
    import rankcli.display.plot

    monkeypatch.setattr(rankcli.display.plot, "have_matplotlib", lambda: False)
    status, _, err = run("propensity", logs["random"], "--plot", tmp_path / "q.png")
    assert status == 2 and err == 'Error: --plot needs matplotlib: pip install "rankcli[plot]"\n'
    assert not (tmp_path / "q.png").exists()


@pytest.mark.parametrize("version,ok", [("4.7.0", True), ("4.1.0", True), ("4.10.0", True), ("5", True),
                                        ("4.0.0", False), ("4.0rc1", False), ("3.3.5", False)])
def test_position_bias_support_by_version(monkeypatch, version, ok):
    import lightgbm

    from rankcli.errors import UsageError
    from rankcli.train import check_position_bias_support

    monkeypatch.setattr(lightgbm, "__version__", version)
    if ok:
        check_position_bias_support()
    else:
        with pytest.raises(UsageError, match="needs LightGBM 4.1 or later"):
            check_position_bias_support()


def test_harvest_from_two_rankers_recovers_one_over_r(run, logs, tmp_path):
    """Intervention harvesting over the logs of --ranker label and --ranker input (PBM eta = 1, 100 impressions per
    query, top 10): 1/r lies inside the 95% bootstrap interval at every position where interventions exist (all ten
    here). The interval is the tolerance: each position's estimate rests on hundreds of clicks, so it is 10-40% wide
    and a biased estimator (e.g. naive click rates, which fall far faster than 1/r under the label ranker) misses
    it."""
    out = tmp_path / "harvest.json"
    status, stdout, err = run("propensity", logs["label"], logs["input"], "-o", out, "--seed", "1")
    assert status == 0, err
    assert "harvest estimator" in stdout and "policy label + input" in stdout
    d = json.loads(out.read_text())
    assert KEYS <= set(d)
    assert d["method"] == "harvest" and d["policy"] == "label + input" and d["click_model"] == "pbm"
    assert d["positions"] == list(range(1, 11)) and d["stopped_at"] is None
    truth = 1.0 / np.arange(1, 11)
    # docs/clicks.md's check: within 20% or inside the interval at every position; and the 95% intervals cover 1/r at
    # most positions (ten correlated intervals: two misses, both by under 10% of the truth, are allowed).
    assert _within(d, truth).all(), (d["propensity"], d["ci_low"], d["ci_high"])
    lo, hi = np.array(d["ci_low"]), np.array(d["ci_high"])
    assert ((lo <= truth) & (truth <= hi)).sum() >= 8, (d["propensity"], d["ci_low"], d["ci_high"])
    assert d["impressions"] == 2 * 90 * 100
    assert [f["ranker"] for f in d["log"]["logs"]] == ["label", "input"]
    # --method harvest on the same logs is the same estimate; the same seed the same bytes.
    status, stdout, err = run("propensity", logs["label"], logs["input"], "--method", "harvest", "--json", "--seed",
                              "1")
    assert status == 0, err
    assert json.loads(stdout) == d


def test_harvest_errors(run, logs, tmp_path):
    # One log in one ranker's order: no document is an intervention.
    status, _, err = run("propensity", logs["label"], "--method", "harvest")
    assert status == 3
    assert "no document is an intervention; intervention harvesting needs randomisation or several policies" in err
    # A cascade log among them.
    status, _, err = run("propensity", logs["label"], logs["cascade"])
    assert status == 3 and err.startswith(f"Error: {logs['cascade']}: made with the cascade click model")
    # Usage.
    status, _, err = run("propensity", logs["label"], logs["label"])
    assert status == 2 and err == "Error: the same click log is given twice\n"
    status, _, err = run("propensity", logs["label"], logs["input"], "--policy", "random")
    assert status == 2 and "--policy states one randomised log's policy" in err
    status, _, err = run("propensity", logs["label"], "--method", "em")
    assert status == 2 and err == "Error: --method: expected auto or harvest, got 'em'\n"
    # A log without docid or source_row.
    bare = tmp_path / "bare.parquet"
    pq.write_table(pq.read_table(logs["input"]).drop(["docid"]), bare)
    status, _, err = run("propensity", logs["label"], bare)
    assert status == 3 and "missing column docid (or source_row)" in err


# ----------------------------------------------------------------------------------------------------------------------
# What the propensity file may hold and which logs IPS training takes: the same checks as rankcli propensity


def test_a_propensity_above_one_is_taken_by_ips_training(run, logs, tmp_path):
    """Relative to position 1, an estimate exceeds 1 by chance (eta 0: every ratio scatters around 1). The file names
    its reference position and train --propensity takes the values as they are (it refused them: 'got 1.023')."""
    flat = tmp_path / "flat.parquet"
    assert run("simulate-clicks", logs["train"], "-o", flat, "--model", "pbm", "--eta", "0", "--ranker", "random",
               "--max-rank", "10", "--keep-no-click", "--impressions", "20", "--seed", "2")[0] == 0
    prop = tmp_path / "p.json"
    assert run("propensity", flat, "-o", prop, "--bootstrap", "50")[0] == 0
    d = json.loads(prop.read_text())
    assert d["reference_position"] == 1 and d["propensity"][0] == 1.0 and max(d["propensity"]) > 1
    status, _, err = run("train", flat, "-o", tmp_path / "m", "--propensity", prop, *TRAIN_ARGS)
    assert status == 0, err
    assert json.loads((tmp_path / "m" / "rankcli.json").read_text())["ips"]["propensity"]["values"] == \
        d["propensity"]


@pytest.mark.parametrize("log,message", [
    ("cascade", CASCADE),
    ("dropped", DROPPED),
])
def test_ips_training_refuses_the_logs_propensity_refuses(run, logs, tmp_path, log, message):
    """train --propensity makes propensity's checks, with its messages: dropping the no-click impressions inflated
    each query's IPS targets by 1/P(at least one click) (median 1.21, up to 20), and a cascade log's examination is
    not a propensity."""
    prop = tmp_path / "p.json"
    assert run("propensity", logs["random"], "-o", prop, "--bootstrap", "20")[0] == 0
    for spec in ("pbm:1", str(prop)):
        status, _, err = run("train", logs[log], "-o", tmp_path / "m", "--propensity", spec, *TRAIN_ARGS)
        assert (status, err) == (3, f"Error: {logs[log]}: {message}\n")
        assert run("propensity", logs[log])[2] == err  # the same check, the same words
    assert not (tmp_path / "m").exists()
    # the naive pooling weights nothing by a propensity: it takes the log as it is
    assert run("train", logs[log], "-o", tmp_path / "naive", "--pool-impressions", *TRAIN_ARGS)[0] == 0


def _positions(path):
    return pq.read_table(path, columns=["position"]).column("position").to_numpy().astype(np.int64)


def _every_reader(bad, tmp_path):
    """The commands that read a click log's positions, as argument lists."""
    return [("propensity", bad),
            ("train", bad, "-o", tmp_path / "m", "--propensity", "pbm:1", *TRAIN_ARGS),
            ("train", bad, "-o", tmp_path / "m", "--pool-impressions", *TRAIN_ARGS),
            ("train", bad, "-o", tmp_path / "m", "--loss", "lambdamart", "--propensity", "learn", *TRAIN_ARGS)]


def test_a_position_repeated_within_an_impression_is_refused_naming_it(run, logs, tmp_path):
    """A repeated position gave a propensity of 0.885 where the truth was 0.44, exit 0, and train took the log."""
    positions = _positions(logs["random"])
    positions[12] = 1  # impression 2 (qid 2) starts at row 10: it now shows position 1 at rows 10 and 12
    bad = _rewrite(logs["random"], tmp_path / "bad.parquet", position=positions)
    for args in _every_reader(bad, tmp_path):
        status, out, err = run(*args)
        assert (status, err) == (3, f"Error: {bad}: impression qid 2 shows position 1 twice (rows 10 and 12); each "
                                    "displayed position holds one document, so a log must not repeat one within "
                                    "an impression\n"), args
    ones = _rewrite(logs["random"], tmp_path / "ones.parquet", position=np.ones_like(positions))  # every row at 1
    for args in _every_reader(ones, tmp_path):
        status, _, err = run(*args)
        assert status == 3 and "impression qid 1 shows position 1 twice (rows 0 and 1)" in err, args
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("value", [2 ** 40, 2 ** 31 - 1, 100_001])
def test_a_position_beyond_the_limit_is_refused_as_written(run, logs, tmp_path, value):
    """A position of 2^40 allocated 8 TiB (a traceback), 2^31 - 1 too; the limit is documented
    (docs/input-limits.md)."""
    positions = _positions(logs["random"])
    positions[-1] = value
    bad = _rewrite(logs["random"], tmp_path / "bad.parquet", position=positions)
    row, last = positions.shape[0] - 1, pq.read_table(bad, columns=["qid"]).column("qid")[-1].as_py()
    for args in _every_reader(bad, tmp_path):
        status, _, err = run(*args)
        assert (status, err) == (3, f"Error: {bad}: column position: {value} at row {row}, impression qid {last} is "
                                    "beyond the largest position rankcli reads (100,000; docs/input-limits.md)\n"), args


def test_a_uint64_position_beyond_int64_is_reported_as_written(run, logs, tmp_path):
    positions = _positions(logs["random"]).astype(np.uint64)
    positions[-1] = 2 ** 64 - 1  # read as int64 it was -1
    bad = _rewrite(logs["random"], tmp_path / "bad.parquet", position=positions)
    assert pq.read_schema(bad).field("position").type == pa.uint64()
    for args in _every_reader(bad, tmp_path):
        status, _, err = run(*args)
        assert status == 3 and "column position: 18446744073709551615 at row" in err, args


def test_a_position_at_the_limit_costs_what_the_positions_present_cost(run, logs, tmp_path):
    """One row at position 100,000 took 1.2 GB and 61 s; the work is bounded by the positions present (1..10) and
    the fitted tail is computed in closed form."""
    import time

    positions = _positions(logs["random"])
    positions[-1] = 100_000
    far = _rewrite(logs["random"], tmp_path / "far.parquet", position=positions)
    prop = tmp_path / "p.json"
    start = time.perf_counter()
    status, stdout, err = run("propensity", far, "-o", prop, "--fit", "power")
    assert status == 0, err
    assert time.perf_counter() - start < 30
    # the table: positions 1..30, a mark, the last (the file has every one)
    rows = [line.split("│")[1].strip() for line in stdout.splitlines() if line.startswith("│")]
    assert rows == [str(r) for r in range(1, 31)] + ["...", "100000"]
    assert "positions 31 to 99999 left out (-o FILE or --json: every position)" in stdout
    d = json.loads(prop.read_text())
    assert d["positions"][-1] == 100_000 and d["fitted"][-1] and not d["fitted"][8]
    status, _, err = run("train", far, "-o", tmp_path / "m", "--propensity", prop, *TRAIN_ARGS)
    assert status == 0, err


def test_positions_near_the_min_clicks_threshold_are_marked(run, logs):
    """An estimate reported because its clicks reached --min-clicks is biased upward when they are near it: the
    positions below min_clicks + 4 sqrt(min_clicks) clicks are marked in the JSON and the table, and said."""
    status, stdout, err = run("propensity", logs["random"], "--min-clicks", "140", "--bootstrap", "50", "--json")
    assert status == 0, err
    d = json.loads(stdout)
    edge = 140 + 4 * 140 ** 0.5
    assert d["near_threshold_clicks"] == pytest.approx(edge)
    clicks = np.minimum(d["clicks_by_position"], d["reference_clicks"])
    assert d["near_threshold"] == [bool(i > 0 and c < edge) for i, c in enumerate(clicks)]
    assert d["near_threshold"][-2:] == [True, True] and not any(d["near_threshold"][:8])
    status, stdout, _ = run("propensity", logs["random"], "--min-clicks", "140", "--bootstrap", "50")
    assert stdout.count("(near threshold)") == 2
    assert "near the threshold: position(s) 9 (" in stdout and "biases them upward" in stdout
    # harvesting marks by the intervention pairs a position rests on
    status, stdout, err = run("propensity", logs["label"], logs["input"], "--bootstrap", "20", "--json")
    assert status == 0, err
    d = json.loads(stdout)
    assert len(d["near_threshold"]) == len(d["positions"]) and not d["near_threshold"][0]
