"""rankcli.experiment.identity: the resume key of an experiment directory, one rule stated as data.

Every field of the configuration has an entry (a new field fails here until its neutral value is declared), and the
identity of a table of configurations is the one rankcli wrote at 270f3ad, byte for byte of its JSON
(tests/data/experiment-identities.json), so that existing experiment directories keep resuming."""

import dataclasses
import json

import pytest

from rankcli.experiment import ExperimentConfig
from rankcli.experiment.identity import IDENTITY, NEVER
from tests.conftest import REPO

PINNED = json.loads((REPO / "tests" / "data" / "experiment-identities.json").read_text())


def cases() -> dict:
    """The configurations whose identities PINNED records (as they were recorded: keep the two in step)."""
    params = {"lambdamart": {"path": "p.json", "sha256": "0" * 64, "params": {"num_leaves": 7}},
              "listnet": {"path": "p.json", "sha256": "0" * 64, "params": {"learning_rate": 0.1}}}
    space = {"path": "s.toml", "entries": {"num_leaves": {"low": 4, "high": 64}}}
    return {
        "default": ExperimentConfig(),
        "sweeps": ExperimentConfig(losses=["lambdamart", "xendcg"], label_noise=[0.0, 0.3], augment_negatives=[0.2],
                                   click_noise=[0.05], click_impressions=20, trials=5, seed=3),
        "folds": ExperimentConfig(folds=True, allow_overlap=True, test="ttest"),
        "params_file": ExperimentConfig(losses=["lambdamart", "listnet"], params_file=params, trees=7),
        "tune_space": ExperimentConfig(tune=4, tune_space=space, correction="bh"),
        "tune": ExperimentConfig(tune=2),
        "loss_option_before": ExperimentConfig(losses=["listnet"], loss_options={"listnet": {"step": "diagonal"}}),
        "loss_option_off_before": ExperimentConfig(losses=["listnet", "lambdaloss"],
                                                   loss_options={"listnet": {"step": "paper"}}),
        "position_bias": ExperimentConfig(position_bias=[0.0, 1.0], logging_fraction=0.05),
        "click_model": ExperimentConfig(click_model={"path": "cm", "fingerprint": "abc"}),
        "fuse": ExperimentConfig(fuse="rrf", metrics=["ndcg@10"], split=(0.5, 0.25, 0.25)),
        "hyperparameters": ExperimentConfig(trees=50, learning_rate=0.1, num_leaves=15, min_data_in_leaf=5,
                                            params={"lambda_l2": 1.0}, select_by="ndcg@10", early_stopping=5),
    }


def test_every_field_has_an_entry():
    names = {f.name for f in dataclasses.fields(ExperimentConfig)}
    assert names == set(IDENTITY), f"declare how these enter the identity: {sorted(names ^ set(IDENTITY))}"


@pytest.mark.parametrize("name", sorted(PINNED))
def test_the_identity_is_the_one_written_before(name):
    assert json.dumps(cases()[name].identity(), sort_keys=True) == json.dumps(PINNED[name], sort_keys=True)


def test_a_field_that_decides_no_result_is_never_in_it():
    never = {name for name, rule in IDENTITY.items() if rule is NEVER}
    assert never == {"trials", "correction", "test", "allow_overlap"}
    for case in PINNED.values():
        assert not never & set(case)
