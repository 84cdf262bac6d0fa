"""Options users bring from LightGBM, XGBoost, Optuna and RankLib are answered with rankcli's, before the option
parser: the closest spelling (``--num-iterations`` -> ``--num-leaves``) misleads, and RankLib's single-dash words are
otherwise read as clusters of short options (``-metric2t`` as ``-m etric2t``)."""

from __future__ import annotations

import pytest

from rankcli.cli.habits import _LONG, _RANKLIB, RANKLIB_RANKERS
from rankcli.errors import ExitStatus
from tests.conftest import run_main as run

# (command line, what rankcli says the word is, and the option it names): LightGBM's, XGBoost's, Optuna's and
# RankLib's words, at least one case of each kind of answer rankcli.cli.habits gives.
CASES = [
    ("train d --num-iterations 5", "--num-iterations is LightGBM's option; rankcli train calls it --trees"),
    ("train d --num-boost-round 5", "--num-boost-round is LightGBM's option; rankcli train calls it --trees"),
    ("train d --n-estimators=5", "--n-estimators is LightGBM's scikit-learn option; rankcli train calls it --trees"),
    ("tune d --num-iterations 5", "--num-iterations is LightGBM's option; rankcli tune calls it --trees"),
    ("experiment d --n-estimators 5", "--n-estimators is LightGBM's scikit-learn option; rankcli experiment "
                                      "calls it --trees"),
    ("train d --objective lambdarank", "--objective is LightGBM's option; rankcli train calls it --loss lambdamart"),
    ("train d --objective=rank_xendcg", "--objective is LightGBM's option; rankcli train calls it --loss "
                                        "xendcg-native"),
    ("train d --metric ndcg", "--metric is LightGBM's option; rankcli train calls it --select-by (the validation "
                              "metric early stopping and model selection use)"),
    ("tune d --metric ndcg", "--metric is LightGBM's option; rankcli tune calls it --select-by (the validation "
                             "metric early stopping and model selection use)"),
    ("train d --eval-at 10", "--eval-at is LightGBM's option; rankcli train calls it --select-by ndcg@10 (one "
                             "metric, with its cutoff)"),
    ("experiment d --eval-at 5", "--eval-at is LightGBM's option; rankcli experiment calls it --select-by ndcg@5 "
                                 "(one metric, with its cutoff)"),
    ("train d --lr 0.1", "--lr is not an option; rankcli train calls it --learning-rate"),
    ("experiment d --lr 0.1", "--lr is not an option; rankcli experiment calls it --learning-rate"),
    ("tune d --n-trials 20", "--n-trials is Optuna's option; rankcli tune calls it --budget"),
    ("experiment d --n-trials 20", "--n-trials is Optuna's option; rankcli experiment calls it --tune (the number "
                                   "of trainings per loss)"),
    ("train d --early-stopping-rounds 10", "--early-stopping-rounds is LightGBM's option; rankcli train calls it "
                                           "--early-stopping"),
    ("tune d --early-stopping-rounds 10", "--early-stopping-rounds is LightGBM's option; rankcli tune calls it "
                                          "--early-stopping"),
    ("train d -ranker 6", "-ranker is RankLib's option; rankcli train calls it --loss lambdamart"),
    ("experiment d -ranker 6 -metric2t NDCG@10", "-ranker is RankLib's option; rankcli experiment calls it --losses "
                                                 "lambdamart"),
    ("train d -ranker 7", "-ranker is RankLib's option; rankcli train calls it --loss listnet"),
    ("train d -ranker 4", "-ranker is RankLib's option; rankcli train calls it --loss (RankLib's Coordinate Ascent: "
                          "rankcli has no such loss)"),
    ("experiment d -metric2t NDCG@10", "-metric2t is RankLib's option; rankcli experiment calls it --select-by "
                                       "ndcg@10 (the metric on validation data)"),
    ("experiment d -metric2T ERR@10", "-metric2T is RankLib's option; rankcli experiment calls it --metric err@10 "
                                      "(the test metric)"),
    ("train d -tree 500", "-tree is RankLib's option; rankcli train calls it --trees"),
    ("train d -leaf 10", "-leaf is RankLib's option; rankcli train calls it --num-leaves"),
    ("train d -shrinkage 0.1", "-shrinkage is RankLib's option; rankcli train calls it --learning-rate"),
    ("train -train d.txt", "-train is RankLib's option; rankcli train takes TRAIN as an argument"),
    ("experiment -train d.txt", "-train is RankLib's option; rankcli experiment takes DATA as an argument"),
    ("train d -validate v.txt", "-validate is RankLib's option; rankcli train calls it --valid"),
    ("tune d -validate v.txt", "-validate is RankLib's option; rankcli tune calls it --valid"),
    ("train d -save m", "-save is RankLib's option; rankcli train calls it --output"),
    ("convert d -norm linear", "-norm is RankLib's option; rankcli convert calls it --normalize minmax"),
    ("predict -load m d", "-load is RankLib's option; rankcli predict takes MODEL_DIR as an argument"),
]


@pytest.mark.parametrize("line,said", CASES, ids=[c[0] for c in CASES])
def test_a_habit_is_answered_with_rankclis_option(capsys, line, said):
    args = line.split()
    status, out, err = run(capsys, *args)
    assert (status, out) == (ExitStatus.USAGE, "")
    assert err == f"Error: {said}. Try 'rankcli {args[0]} --help'.\n"


def test_every_habit_targets_an_option_that_some_command_has(capsys):
    # A habit whose option was renamed would never fire: its word would fall through to the parser's guess.
    import typer

    from rankcli.cli import COMMANDS, make_app
    from rankcli.cli.habits import _names

    names = set()
    for name in COMMANDS:
        names |= _names(typer.main.get_command(make_app(name)).commands[name])
    assert {h.target for h in (*_LONG, *_RANKLIB)} - names == set()


@pytest.mark.parametrize("line", [
    "experiment d -o e --metric ndcg@5",     # experiment's own --metric (its test metric) is not LightGBM's
    "train d -o m --select-by -tree",        # a value of one of the command's options, however it is spelt
    "train d -o m -- --num-iterations",      # after --, everything is an argument
])
def test_a_word_the_command_uses_itself_is_left_to_the_parser(capsys, line):
    status, out, err = run(capsys, *line.split())
    assert "is LightGBM's option" not in err and "is RankLib's option" not in err


def test_trec_eval_keeps_its_own_getopt(capsys):
    # rankcli trec_eval passes every option to trec_eval's getopt, which answers -test as trec_eval does.
    status, out, err = run(capsys, "trec_eval", "-test", "q", "r")
    assert status == ExitStatus.USAGE and "RankLib" not in err and "invalid option -- 't'" in err


def test_ranklib_rankers_name_rankcli_losses_that_exist():
    from rankcli.train.losses import LOSSES

    assert {loss for _, loss in RANKLIB_RANKERS.values() if loss} <= set(LOSSES)


@pytest.mark.parametrize("given,whose,ours", [
    ("rank_xendcg", "LightGBM's", "xendcg-native"), ("lambdarank", "LightGBM's", "lambdamart"),
    ("rank:pairwise", "XGBoost's", "ranknet"), ("regression", "LightGBM's", "pointwise"),
])
def test_another_tools_objective_name_names_rankclis_loss(capsys, given, whose, ours):
    status, out, err = run(capsys, "train", "d", "-o", "m", "--loss", given)
    assert status == ExitStatus.USAGE
    assert err.startswith(f"Error: unknown loss {given!r}: {whose} {given} objective is rankcli's {ours!r}")
    assert "did you mean" not in err


# -- a convention chosen by the layout or the input is said ----------------------------------------------------------

@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A Parquet run, the same run as a TREC file and the dataset's qrels (a one-tree model on the sample)."""
    from rankcli.cli import main
    from tests.conftest import SAMPLE

    d = tmp_path_factory.mktemp("convention")
    assert main(["convert", str(SAMPLE / "letor" / "test.txt"), "-o", str(d / "test.parquet")]) == 0
    assert main(["train", str(d / "test.parquet"), "-o", str(d / "m"), "--trees", "2", "--threads", "1"]) == 0
    assert main(["predict", str(d / "m"), str(d / "test.parquet"), "-o", str(d / "run.parquet")]) == 0
    assert main(["predict", str(d / "m"), str(d / "test.parquet"), "-o", str(d / "run.trec"), "--format", "trec"]) == 0
    assert main(["export", str(d / "test.parquet"), "-o", str(d / "qrels"), "--format", "trec-qrels"]) == 0
    return d


TREC_NOTE = ("note: scored under the trec convention (gain=linear no_relevant=zero ties=docid-desc threshold=1 "
             "max_grade=4)")


def test_format_trec_eval_on_a_parquet_run_says_it_changes_the_convention(capsys, runs):
    status, out, err = run(capsys, "eval", runs / "run.parquet", "-m", "ndcg@10", "--format", "trec_eval")
    assert status == 0 and out.startswith("ndcg_cut_10")
    assert err == (f"{TREC_NOTE} because --format trec_eval prints trec_eval's measures, under its conventions; the "
                   "table's default for this input is --convention paper\n")
    table = run(capsys, "eval", runs / "run.parquet", "-m", "ndcg@10", "--json")
    kept = run(capsys, "eval", runs / "run.parquet", "-m", "ndcg@10", "--format", "trec_eval", "--convention", "paper")
    assert table[2] == "" and kept[2] == ""  # no convention changed, nothing said
    import json

    assert f"{json.loads(table[1])['metrics']['ndcg@10']:.4f}" == kept[1].split()[-1] != out.split()[-1]


def test_a_trec_run_in_trec_eval_layout_changes_nothing_and_says_nothing(capsys, runs):
    status, out, err = run(capsys, "eval", "--qrels", runs / "qrels", "--run", runs / "run.trec", "--format",
                           "trec_eval", "-m", "ndcg_cut.10")
    assert status == 0 and "note: scored under" not in err


def test_compare_with_qrels_says_the_convention_unless_given(capsys, runs):
    args = ["compare", runs / "run.trec", runs / "run.trec", "--name", "a", "--name", "b", "--qrels", runs / "qrels"]
    status, out, err = run(capsys, *args)
    assert status == 0
    assert err.splitlines()[0] == (f"{TREC_NOTE} because --qrels makes these TREC runs, scored as trec_eval scores "
                                   "them; --convention paper gives the paper's (exponential gain, such queries "
                                   "skipped)")
    assert "note: scored under" not in run(capsys, *args, "--convention", "trec")[2]


# -- the losses in either command's spelling -------------------------------------------------------------------------

def _parsed(name: str, args: list[str]) -> dict:
    """The parameters ``rankcli <name>`` parses from ``args`` (the command itself is not run)."""
    import typer

    from rankcli.cli import make_app

    command = typer.main.get_command(make_app(name)).commands[name]
    ctx = command.make_context(name, list(args), resilient_parsing=False)
    return ctx.params


@pytest.mark.parametrize("args,losses", [
    (["d", "-o", "x", "--loss", "lambdamart", "--loss", "xendcg"], "lambdamart,xendcg"),
    (["d", "-o", "x", "--loss=listnet", "--loss-option", "xendcg:gamma=mean"], "listnet"),
    (["d", "-o", "x", "--losses", "lambdamart,xendcg", "--loss", "listnet"], "lambdamart,xendcg,listnet"),
    (["d", "-o", "x", "--losses", "xendcg"], "xendcg"),
    (["d", "-o", "x"], "lambdamart,xendcg,listnet"),
])
def test_experiment_takes_tunes_spelling_of_the_losses(args, losses):
    params = _parsed("experiment", args)
    assert params["losses"] == losses
    assert tuple(params["loss_option"] or ()) == (("xendcg:gamma=mean",) if "--loss-option" in args else ())


@pytest.mark.parametrize("args,losses", [
    (["d", "--valid", "v", "-o", "t", "--budget", "2", "--losses", "lambdamart,xendcg"], ["lambdamart", "xendcg"]),
    (["d", "--valid", "v", "-o", "t", "--budget", "2", "--losses=listnet", "--loss", "xendcg"], ["listnet", "xendcg"]),
    (["d", "--valid", "v", "-o", "t", "--budget", "2", "--loss", "xendcg"], ["xendcg"]),
])
def test_tune_takes_experiments_spelling_of_the_losses(args, losses):
    assert list(_parsed("tune", args)["loss"]) == losses
