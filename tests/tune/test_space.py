"""What rankcli tune searches and how it draws: values no search can take refused (exit 2), the per-loss dimensions
as tune.md states them, options that only rescale the model left out (and the training that shows they only
rescale it), start-up points common to every loss, and Optuna's multivariate TPE."""

from __future__ import annotations

import json
import math
import re

import pytest

pytest.importorskip("optuna")
pytest.importorskip("sklearn")

from tests.conftest import REPO  # noqa: E402

FAST = ("--trees", "3", "--early-stopping", "0", "--threads", "1")


# ------------------------------------------------------------------------------------------- values refused
@pytest.mark.parametrize("name, text, message", [
    ("space.toml", "[learning_rate]\nlow = 0\nhigh = 0.1\n", "learning_rate: a log scale needs low > 0, got low=0"),
    ("space.toml", "[num_leaves]\nlow = -4\nhigh = 64\n", "num_leaves: a log scale needs low > 0, got low=-4"),
    ("space.toml", "[bagging_fraction]\nlow = 0\nhigh = 1\nlog = true\ndefault = 1\n", "a log scale needs low > 0"),
    ("space.toml", "[learning_rate]\nvalue = inf\n", "learning_rate: value must be a finite number, got inf"),
    ("space.toml", "[learning_rate]\nlow = 0.01\nhigh = inf\n", "learning_rate: high must be a finite number"),
    ("space.toml", "[feature_fraction]\nlow = nan\nhigh = 1.0\n", "feature_fraction: low must be a finite number"),
    ("space.toml", "[lambda_l2]\nchoices = [0.0, nan]\n", "lambda_l2: choices must be a finite number, got nan"),
    ("space.toml", "[bagging_fraction]\nlow = 0.5\nhigh = 1.0\ndefault = -inf\n", "default must be a finite number"),
    ("space.json", '{"learning_rate": {"value": Infinity}}', "learning_rate: value must be a finite number, got inf"),
    ("space.json", '{"xendcg": {"num_leaves": {"low": NaN, "high": 9}}}', "num_leaves: low must be a finite number"),
    ("space.toml", "[num_leaves]\nlow = 50\nhigh = 10\n", "num_leaves: low must be a number below high"),
    ("space.toml", "[num_leaves]\nlow = 2.5\nhigh = 10\nint = true\n", "an integer range needs whole bounds"),
])
def test_values_no_search_can_take_are_exit_2_naming_the_file(run, letor, tmp_path, name, text, message):
    space = tmp_path / name
    space.write_text(text)
    status, _, err = run("tune", letor["train"], "--valid", letor["vali"], "-o", tmp_path / "t", "--loss", "xendcg",
                         "--budget", "2", *FAST, "--space", space)
    assert status == 2 and f"Error: --space {space}: " in err and message in err, err
    assert not (tmp_path / "t").exists()


def test_a_malformed_space_file_stays_exit_3(run, letor, tmp_path):
    space = tmp_path / "space.toml"
    space.write_text('[num_leaves]\nlow = "a"\nhigh = 9\n')
    status, _, err = run("tune", letor["train"], "--valid", letor["vali"], "-o", tmp_path / "t", "--loss", "xendcg",
                         "--budget", "2", *FAST, "--space", space)
    assert status == 3 and "num_leaves: low and high must be numbers" in err, err


@pytest.mark.parametrize("command", ["train", "experiment"])
@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e309"])
def test_a_learning_rate_that_is_not_finite_is_exit_2(run, letor, tmp_path, command, value):
    status, _, err = run(command, letor["train"], "-o", tmp_path / "o", "--learning-rate", value, "--trees", "2")
    assert status == 2 and "--learning-rate must be" in err and not (tmp_path / "o").exists(), err


# ------------------------------------------------------------------------------------------- the dimensions
def _page_dimensions() -> dict[str, tuple[str, list[str]]]:
    page = (REPO / "docs" / "commands" / "tune.md").read_text()
    table = page[page.index("| loss | dimensions | its own |"):].split("\n\n")[0].splitlines()[2:]
    out = {}
    for row in table:
        loss, count, own = (c.strip() for c in row.strip("|").split("|"))
        out[loss.strip("`")] = (count, re.findall(r"`([a-z_0-9+-]+)`", own))
    return out


def test_the_per_loss_dimensions_are_the_ones_tune_md_states():
    from rankcli.train import LOSSES
    from rankcli.tune.space import GENERAL, loss_space

    page = _page_dimensions()
    assert set(page) == set(LOSSES)
    for loss in LOSSES:
        space = loss_space(loss, {})
        own = [d.name for d in space.dimensions if d.name not in GENERAL]
        conditional = [d.name for d in space.dimensions if d.only_with is not None]
        count = str(len(space.dimensions)) if not conditional else \
            f"{len(space.dimensions) - len(conditional)} or {len(space.dimensions)}"
        documented = [n for n in page[loss][1] if n not in ("ndcg-loss2++",)]
        assert (page[loss][0], documented) == (count, own), loss
        assert [d.name for d in space.dimensions][:5] == list(GENERAL)  # the shared ones first, in one order


def test_options_that_only_rescale_are_left_out_unless_a_space_names_them(tmp_path):
    from rankcli.tune.space import loss_space

    names = {loss: [d.name for d in loss_space(loss, {}).dimensions] for loss in ("approxndcg", "lambdaloss",
                                                                                     "lambdamart")}
    assert "temperature" not in names["approxndcg"] and "sigma" not in names["lambdaloss"]
    assert "sigmoid" in names["lambdamart"]  # lambdarank_norm reweighs the queries: sigmoid changes the model
    assert "sigmoid" not in [d.name for d in loss_space("lambdamart", {"lambdarank_norm": False}).dimensions]
    spec = {"path": "s.toml", "entries": {"approxndcg": {"temperature": {"low": 0.05, "high": 0.5}},
                                          "sigma": {"low": 0.5, "high": 2.0}}}
    t = next(d for d in loss_space("approxndcg", {"temperature": 0.1}, spec).dimensions if d.name == "temperature")
    assert (t.low, t.high, t.log, t.default) == (0.05, 0.5, True, 0.1)  # the declared scale, train's default
    s = next(d for d in loss_space("lambdaloss", {"sigma": 1.0}, spec).dimensions if d.name == "sigma")
    assert (s.low, s.high, s.log) == (0.5, 2.0, True)


def test_mu_is_drawn_only_with_the_variant_it_weighs():
    from rankcli.tune.space import loss_space

    space = loss_space("lambdaloss", {})
    mu = next(d for d in space.dimensions if d.name == "mu")
    assert mu.only_with == ("variant", "ndcg-loss2++")

    class Trial:  # Optuna's suggestions, fixed
        def __init__(self, variant):
            self.variant = variant

        def suggest_categorical(self, name, choices):
            return self.variant if name == "variant" else choices[0]

        def suggest_float(self, name, low, high, log=False):
            return low

        def suggest_int(self, name, low, high, log=False):
            return low

    assert "mu" in space.suggest(Trial("ndcg-loss2++")) and "mu" not in space.suggest(Trial("ndcg-loss2"))
    assert space.defaults()["mu"] == 10.0


def _curve(letor, tmp_path, loss, *args) -> list[float]:
    from rankcli.cli import main

    out = tmp_path / f"m{len(list(tmp_path.iterdir()))}"
    assert main(["train", str(letor["train"]), "--valid", str(letor["vali"]), "-o", str(out), "--loss", loss,
                 "--trees", "8", "--early-stopping", "0", "--threads", "1", "--json", *args]) == 0
    return json.loads((out / "rankcli.json").read_text())["curve"]


def test_temperature_and_sigma_only_rescale_and_lambda_l2_makes_them_matter(letor, tmp_path, capsys):
    """What leaving them out rests on: the validation curves are equal at any temperature (sigma) with lambda_l2 = 0
    and differ with lambda_l2 > 0; LambdaMART's sigmoid differs under lambdarank_norm and not without it."""
    def curve(loss, *args):
        c = _curve(letor, tmp_path, loss, *args)
        capsys.readouterr()
        return c

    assert curve("approxndcg", "--loss-option", "temperature=0.02") == curve("approxndcg", "--loss-option",
                                                                              "temperature=0.8")
    assert curve("approxndcg", "--loss-option", "temperature=0.02", "--param", "lambda_l2=1") != \
        curve("approxndcg", "--loss-option", "temperature=0.8", "--param", "lambda_l2=1")
    assert curve("lambdaloss", "--loss-option", "sigma=0.3") == curve("lambdaloss", "--loss-option", "sigma=3")
    assert curve("lambdamart", "--param", "sigmoid=0.5", "--param", "lambdarank_norm=false") == \
        curve("lambdamart", "--param", "sigmoid=2", "--param", "lambdarank_norm=false")
    assert curve("lambdamart", "--param", "sigmoid=0.5") != curve("lambdamart", "--param", "sigmoid=2")


# ------------------------------------------------------------------------------------------- the draws
def _claimed(tmp_path, loss: str, budget: int, n: int, seed: int = 0) -> list[dict]:
    """The parameters of the first ``n`` trials of ``loss``'s study, each finished with a made-up value."""
    from rankcli.train import TrainConfig
    from rankcli.tune.config import TuneConfig
    from rankcli.tune.journal import check_identity
    from rankcli.tune.study import LossStudy, Worker

    config = TuneConfig([loss], budget, TrainConfig(seed=seed))
    (tmp_path / loss).mkdir(exist_ok=True)
    check_identity(tmp_path / loss, loss, config.identity(loss, {}))
    worker = Worker(tmp_path)
    study = LossStudy(tmp_path / loss, config.space_of(loss), seed, budget, worker)
    out = []
    for i in range(n):
        claimed = study.claim()
        study.finish(claimed, math.sin(i + len(loss)), {})
        out.append(claimed.params)
    worker.close()
    return out


def test_the_start_up_points_are_common_to_every_loss(tmp_path):
    """Budget 40: 10 start-up trials (trial 0 among them). Every loss's k-th has the same general dimensions,
    whatever the loss searches besides (xendcg 1 more, lambdamart 2, lambdaloss 2 with a conditional one); TPE's
    trials after them differ."""
    from rankcli.tune.space import GENERAL

    drawn = {loss: _claimed(tmp_path, loss, 40, 12) for loss in ("xendcg", "lambdamart", "lambdaloss", "ranknet")}
    general = {loss: [{k: p[k] for k in GENERAL} for p in ps] for loss, ps in drawn.items()}
    first = general["xendcg"]
    for loss, g in general.items():
        assert g[:10] == first[:10], loss
    assert len({json.dumps(p, sort_keys=True) for p in first[:10]}) == 10
    assert general["xendcg"][10:] != general["lambdamart"][10:]  # modelled on each loss's own results
    (tmp_path / "seed1").mkdir()
    other = _claimed(tmp_path / "seed1", "xendcg", 40, 3, seed=1)
    assert other[0] == drawn["xendcg"][0] and other[1] != drawn["xendcg"][1]  # trial 0 is train's; the seed draws


def test_experiment_tune_draws_what_tune_draws(letor, tmp_path):
    from rankcli.train import TrainConfig, load_training_data
    from rankcli.tune import inline
    from rankcli.tune.config import TuneConfig
    from rankcli.tune.runner import run_tune

    base = TrainConfig(loss="xendcg", trees=3, early_stopping=0, threads=1)
    tuned = run_tune(letor["train"], letor["vali"], tmp_path / "t", TuneConfig(["xendcg"], 5, base))
    seen = []
    real = inline.train_trial
    inline.train_trial = lambda prepared, config, objective=None: seen.append(config) or real(prepared, config,
                                                                                             objective)
    try:
        prepared = load_training_data(letor["train"], letor["vali"], base).prepare()
        inline.tune_in_memory(prepared, base, 5)
    finally:
        inline.train_trial = real
    assert [c.learning_rate for c in seen] == [t["params"]["learning_rate"] for t in tuned.losses["xendcg"].trials]


def test_the_sampler_is_optunas_multivariate_tpe(tmp_path, monkeypatch):
    import optuna

    made = []
    real = optuna.samplers.TPESampler

    def recording(**kwargs):
        made.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(optuna.samplers, "TPESampler", recording)
    _claimed(tmp_path, "xendcg", 8, 4)
    made = [k for k in made if k]  # optuna.create_study's own default sampler aside (never asked for a trial here)
    assert len(made) == 4 and all(k["multivariate"] is True for k in made)
    assert {k["n_startup_trials"] for k in made} == {2}
    pyproject = (REPO / "pyproject.toml").read_text()
    assert re.search(r'tune = \["optuna>=5"', pyproject) and '"optuna>=5",' in pyproject
    assert int(optuna.__version__.split(".")[0]) >= 5
