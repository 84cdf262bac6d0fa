"""tune's and experiment's parameters, checked as train checks one training's: a --param or a search dimension that
LightGBM would ignore in every trial (a bagging_fraction without bagging_freq, a sigmoid none of the losses reads)
is a usage error, before any training; one that only some of the compared losses read is accepted."""

from __future__ import annotations

import pytest

from rankcli.errors import UsageError
from rankcli.train import TrainConfig
from rankcli.train.lightgbm_params import SEARCHED, check_effective_across, reads
from rankcli.tune.config import TuneConfig
from rankcli.tune.space import check_space_effective, train_space

NEEDS_FREQ = "LightGBM applies bagging_fraction only with bagging_freq > 0"


def test_a_key_only_some_losses_read_is_accepted_one_none_reads_is_not():
    check_effective_across({"sigmoid": 2.0}, ["lambdamart", "xendcg"])
    with pytest.raises(UsageError, match=r"--param sigmoid: only .* reads sigmoid, and none of the losses here "
                                         r"trains with it \(xendcg, listnet\)"):
        check_effective_across({"sigmoid": 2.0}, ["xendcg", "listnet"])
    assert reads("sigmoid", "lambdamart") and not reads("sigmoid", "xendcg") and reads("num_leaves", "xendcg")


def test_needs_are_checked_for_every_loss_and_a_searched_value_counts_as_set():
    with pytest.raises(UsageError, match=NEEDS_FREQ):
        check_effective_across({"bagging_fraction": 0.5}, ["xendcg", "lambdamart"])
    with pytest.raises(UsageError, match=NEEDS_FREQ):
        check_effective_across({"bagging_fraction": SEARCHED}, ["xendcg"])
    check_effective_across({"bagging_fraction": SEARCHED, "bagging_freq": 1}, ["xendcg"])
    check_effective_across({"bagging_fraction": 1.0}, ["xendcg"])  # LightGBM's default: nothing to apply


@pytest.mark.parametrize("spec,given,refused", [
    ({"bagging_fraction": {"low": 0.5, "high": 1.0, "default": 1.0}}, {}, "the search space's bagging_fraction"),
    ({"bagging_fraction": {"low": 0.5, "high": 1.0, "default": 1.0}}, {"bagging_freq": 1}, None),
    ({"bagging_fraction": {"low": 0.5, "high": 1.0, "default": 1.0}, "bagging_freq": {"value": 2}}, {}, None),
    ({"bagging_freq": {"value": 2}}, {}, "the search space's bagging_freq"),
    (None, {"bagging_fraction": 0.7}, "--param bagging_fraction"),
])
def test_a_space_dimension_lightgbm_would_ignore_is_refused(spec, given, refused):
    base = TrainConfig(loss="xendcg", params=dict(given))
    space = train_space(base, {"path": "space.toml", "entries": spec} if spec else None)
    if refused is None:
        check_space_effective(space, given, "xendcg")
    else:
        with pytest.raises(UsageError, match=rf"^{refused}: LightGBM applies"):
            check_space_effective(space, given, "xendcg")


def test_tune_refuses_before_any_trial():
    spec = {"path": "space.toml", "entries": {"bagging_fraction": {"low": 0.5, "high": 1.0, "default": 1.0}}}
    tune = TuneConfig(["xendcg", "lambdamart"], 3, TrainConfig(), spec)
    with pytest.raises(UsageError, match="the search space's bagging_fraction"):
        tune.validate()
    TuneConfig(["xendcg", "lambdamart"], 3, TrainConfig(params={"sigmoid": 2.0})).validate()
    with pytest.raises(UsageError, match="none of the losses here trains with it"):
        TuneConfig(["xendcg"], 3, TrainConfig(params={"sigmoid": 2.0})).validate()


def test_experiment_refuses_a_param_every_loss_would_ignore(run, tmp_path):
    from tests.conftest import SAMPLE

    status, out, err = run("experiment", SAMPLE / "letor" / "train.txt", "-o", tmp_path / "x", "--losses",
                           "xendcg,listnet", "--param", "bagging_fraction=0.5", "--trials", "1")
    assert status == 2 and NEEDS_FREQ in err and not (tmp_path / "x").exists()
