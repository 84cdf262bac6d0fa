"""Run the paper's protocol: repeated query-level splits or fixed folds, losses side by side, robustness sweeps, plots.

Two protocols:
  random splits (default)  DATA is one Parquet dataset, or a directory whose *.parquet files are pooled; every one of
                           --trials trials splits the queries at random (--split train,valid,test). The paired tests
                           run across trials (n = trials).
  --folds                  DATA holds Fold1/ .. FoldK/, each with train, vali and test Parquet files (MSLR-WEB and
                           LETOR 4.0 after `convert`), or is one such fold. Each fold is trained once per loss; the
                           test metrics of all folds are pooled per query and the paired tests run over those
                           queries (n = queries). --use-given-splits is the old spelling of --folds.

Tests (--test). The trials of random splits are not independent: their test sets come from one pool and their
training sets overlap. Across trials the default is corrected-ttest, the corrected resampled t-test of Nadeau &
Bengio (2003): the paired t-test with the variance of the mean difference estimated as (1/J + n_test/n_train) s^2
over J trials, n_test the test queries and n_train the training + validation queries of a trial. ttest is the
paper's test (trials treated as independent), whose p-values are too small there. permutation, wilcoxon and
bootstrap treat the trials as independent too and are refused across trials (exit 2). With --folds the tests run
over the pooled test queries: ttest (default), permutation, wilcoxon or bootstrap (10,000 permutations or
resamples, seeded by --seed), as `compare` runs them; corrected-ttest is refused there. The test is not part of the
configuration: rerunning with another --test resumes and only summarises again.

Every trial (fold) trains every loss on the same data; test metrics use the paper's convention (queries without a
relevant document are skipped) unless --convention says otherwise. A loss's own parameters (--loss-option, --step)
are part of the configuration: an experiment directory resumes with the ones it started with. A difference is
labelled `b - a` and is mean(b) - mean(a), as in `compare`.

Results go to EXP_DIR as each (setting, trial, loss) finishes: trials.parquet (trial, setting, loss, metric, value,
trees, seconds; trial is the fold number with --folds), curves/ (validation metric per tree), queries/ (--folds: test
metric per query), config.json. Rerunning the same command resumes an interrupted experiment (finished units are
skipped; a larger --trials extends a random-split one); a different configuration is refused unless --overwrite. At
the end: summary.md and summary.json (mean and standard error per loss, paired tests between every pair of losses,
named, p-values corrected, each with its n), convergence.csv, sweep-<kind>.csv, and PNG plots when matplotlib is
installed (the plot extra: pip install "rankcli\\[plot]").

Sweeps (each level is a full set of trials or folds, training part perturbed, seeded; several combine):
  --augment-negatives 0,0.2,...  grow each training list by that fraction with documents of other training queries
                                 labelled 0;
  --label-noise 0,0.1,...        that fraction of each training query's documents get a random grade,
                                 p(0..4) = (.5, .2, .15, .1, .05);
  --click-noise 0.05,0.1,...     train and validate on cascade clicks (10 random rankings per query, click
                                 probabilities (level, .3, .5, .7, .95) for grades 0..4), test on graded labels;
  --position-bias 0,1,2          learning from biased clicks: a logging ranker trained on --logging-fraction of the
                                 training queries (default 0.01, at least 5) ranks the others and the validation
                                 queries; PBM clicks on its top 10 with examination (1/r)^level (10 impressions per
                                 query); every loss trained naive (pooled click-through rates) and, where it can,
                                 as <loss>+ips with propensities estimated from a RandTop-10 log of the same size;
                                 summary.md tests IPS against naive per loss (see docs/clicks.md).
  --click-model MODEL_DIR        one more setting: training and validation replaced by clicks simulated from a
                                 click model fitted per relevance grade (click-model fit --by relevance; 10 random
                                 rankings per query), test on graded labels.

--jobs N trains in N processes; results are identical for any N (every random step is seeded from --seed, the trial
and the setting, and each model uses --threads threads, default 1).

Example:
  rankcli experiment data.parquet -o exp --trials 30 --losses lambdamart,xendcg,listnet --jobs 2
  rankcli experiment MSLR-WEB10K-parquet/ --folds -o exp-folds --jobs 2
  rankcli experiment data.parquet -o exp-bias --trials 30 --losses xendcg,listnet --position-bias 0,1,2
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from rankcli.cli import options as opt
from rankcli.cli.options import TRAINING_CONVENTIONS
from rankcli.errors import UsageError

NAME = "experiment"
SHORT_HELP = "Run the paper's protocol: repeated splits, losses side by side, robustness sweeps."
_SWEEPS = ("augment_negatives", "label_noise", "click_noise", "position_bias")


def _parse_params(items: list[str]) -> dict:
    """``--param KEY=VALUE`` items, checked against LightGBM's parameter names as ``train`` checks them."""
    from rankcli.train import parse_params

    return parse_params(items, {"objective": "--losses"})


# The options that take more than a line to declare, named here so that the signature of `command` reads as the list
# of its options, in the order --help shows them.
_DATA = typer.Argument(help="A Parquet dataset or a directory of Parquet files (pooled); with --folds Fold1/ .. FoldK/ "
                       "(or one fold's train/vali/test); SVMlight text is converted for the run.", show_default=False,
                       metavar="DATA")
_LOSSES = typer.Option("--losses", help="Comma-separated losses, any `train` knows (or --loss a --loss b)")
_LOSS_OPTION = opt.loss_option(scope="without LOSS: for every loss of --losses that has the option")
_TRIALS = typer.Option("--trials", help="Random splits (trials) per setting (default 100; not with --folds).",
                       show_default=False)
_SPLIT = typer.Option("--split", help="Query fractions train,validation,test (default 0.6,0.2,0.2; not with --folds).",
                      show_default=False)
_FOLDS = typer.Option("--folds", help="Fixed splits: DATA holds Fold1/ .. FoldK/ (or one fold), each trained once per "
                      "loss; tests over the pooled test queries.")
_USE_GIVEN_SPLITS = typer.Option("--use-given-splits", help="The old spelling of --folds (DATA one fold's "
                                 "train/vali/test directory).")
_ALLOW_OVERLAP = typer.Option("--allow-overlap", help="With --folds: accept a test query (by qid) in two folds' test "
                              "sets or in its fold's train or validation file; the summary says so.")
_SELECT_BY = typer.Option("--select-by", help="Validation metric for early stopping and the convergence curves.")
_LEARNING_RATE = typer.Option("--learning-rate", help="LightGBM learning rate (default: train's).")
_MIN_DATA_IN_LEAF = typer.Option("--min-data-in-leaf", help="Minimum documents per leaf (default: train's).")
_TUNE = typer.Option("--tune", help="Tune each loss on each trial's own training and validation data with this budget "
                     "of trainings (as rankcli tune) before testing it; the summary lists the parameters chosen. Needs "
                     "pip install \"rankcli\\[tune]\".", show_default=False, metavar="N")
_FUSE = typer.Option("--fuse", help="Also fuse each trial's losses with this rankcli fuse method (its default "
                     "parameters, e.g. rrf) and report and test the fused run as one more loss, fused-METHOD.",
                     show_default=False, metavar="METHOD")
_PRESET = typer.Option("--preset", help="Hyperparameter preset of `train` (paper-web30k, paper-yahoo).",
                       metavar="<paper-web30k|paper-yahoo>")
_THREADS = opt.threads("LightGBM threads per model (part of the configuration: results may depend on it).")
_AUGMENT_NEGATIVES = typer.Option("--augment-negatives", help="Sweep levels: fractions of extra random negatives per "
                                  "training list.")
_LABEL_NOISE = typer.Option("--label-noise", help="Sweep levels: fraction of each training list with random grades.")
_CLICK_NOISE = typer.Option("--click-noise", help="Sweep levels: click probability of grade 0 (train on cascade "
                            "clicks).")
_POSITION_BIAS = typer.Option("--position-bias", help="Sweep levels: PBM exponent eta of clicks logged by a trained "
                              "ranker; each loss trained naive and with IPS (<loss>+ips).", show_default=False)
_CLICK_MODEL = typer.Option("--click-model", help="One more setting: train and validate on clicks simulated from this "
                            "click model (click-model fit --by relevance).", show_default=False, metavar="MODEL_DIR")
_LOGGING_FRACTION = typer.Option("--logging-fraction", help="With --position-bias: the fraction of the training "
                                 "queries the logging ranker is trained on (default 0.01; at least 5 queries).",
                                 show_default=False)
_CONVENTION = opt.convention(applies_to="validation and test", presets=TRAINING_CONVENTIONS)
_TEST = typer.Option("--test", help="The paired test between losses: across random-split trials corrected-ttest "
                     "(default: the corrected resampled t-test) or ttest (the paper's test, trials treated as "
                     "independent); with --folds over the pooled test queries ttest (default), permutation, wilcoxon "
                     "or bootstrap.", show_default=False,
                     metavar="<corrected-ttest|ttest|permutation|wilcoxon|bootstrap>")
_OVERWRITE = opt.overwrite(text="Replace an experiment with a different configuration in EXP_DIR.")
_DASK = opt.dask("Run the units as tasks on a Dask cluster instead of --jobs",
                 "Each trial trains single-machine; results are identical to --jobs runs and resumable.")


def command(
    data: Annotated[Path, _DATA],
    output: Annotated[str, opt.output("The experiment directory (EXP_DIR).", metavar="EXP_DIR")],
    losses: Annotated[str, _LOSSES] = "lambdamart,xendcg,listnet",
    loss_option: Annotated[list[str] | None, _LOSS_OPTION] = None,
    step: Annotated[str | None, opt.step()] = None,
    trials: Annotated[int | None, _TRIALS] = None,
    split: Annotated[str | None, _SPLIT] = None,
    folds: Annotated[bool, _FOLDS] = False,
    use_given_splits: Annotated[bool, _USE_GIVEN_SPLITS] = False,
    allow_overlap: Annotated[bool, _ALLOW_OVERLAP] = False,
    metric: Annotated[str, opt.metric("Test metrics, e.g. ndcg@5,ndcg@10.")] = "ndcg@5,ndcg@10",
    select_by: Annotated[str, _SELECT_BY] = "ndcg@5",
    early_stopping: Annotated[int, opt.early_stopping()] = 50,
    trees: Annotated[int, opt.trees()] = 500,
    learning_rate: Annotated[float | None, _LEARNING_RATE] = None,
    num_leaves: Annotated[int | None, typer.Option("--num-leaves", help="Leaves per tree (default: train's).")] = None,
    min_data_in_leaf: Annotated[int | None, _MIN_DATA_IN_LEAF] = None,
    param: Annotated[list[str] | None, opt.param(overrides="the preset")] = None,
    params_file: Annotated[Path | None, opt.params_file()] = None,
    tune: Annotated[int | None, _TUNE] = None,
    space: Annotated[Path | None, opt.space(lead="With --tune: a", after=" (as rankcli tune --space)")] = None,
    fuse: Annotated[str | None, _FUSE] = None,
    preset: Annotated[str | None, _PRESET] = None,
    seed: Annotated[int, opt.seed("every random step (splits, perturbations, LightGBM)", result="results")] = 0,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Worker processes (results do not depend on it).")] = 1,
    threads: Annotated[int, _THREADS] = 1,
    augment_negatives: Annotated[str | None, _AUGMENT_NEGATIVES] = None,
    label_noise: Annotated[str | None, _LABEL_NOISE] = None,
    click_noise: Annotated[str | None, _CLICK_NOISE] = None,
    position_bias: Annotated[str | None, _POSITION_BIAS] = None,
    click_model: Annotated[Path | None, _CLICK_MODEL] = None,
    logging_fraction: Annotated[float | None, _LOGGING_FRACTION] = None,
    convention: Annotated[str, _CONVENTION] = "paper",
    test: Annotated[str | None, _TEST] = None,
    correction: Annotated[str, opt.correction(scope="the tests of each setting")] = "holm",
    plots: Annotated[bool, typer.Option("--plots/--no-plots", help="Write PNG plots (needs matplotlib).")] = True,
    json_out: Annotated[bool, opt.json_flag("the summary")] = False,
    overwrite: Annotated[bool, _OVERWRITE] = False,
    dask: Annotated[str | None, _DASK] = None,
) -> None:
    options = dict(locals())  # every option by its parameter name (taken first: nothing else is local yet)
    from rankcli.cli._common import prepare_output

    # EXP_DIR is reopened by the experiment's own rules (resume, --overwrite of an experiment only); here: not an
    # input, not a special file. Not "final": a run interrupted while summarising is resumed, not redone.
    output = prepare_output(output, overwrite=overwrite, kind="experiment", inputs=[data, space, click_model],
                            final=False)
    config = _config(options)
    _check_dask(dask, jobs)
    result, seconds, total = _run(data, output, config, jobs=jobs, overwrite=overwrite, dask=dask)
    _report(result, output, plots=plots, json_out=json_out, seconds=seconds, total=total)


def _loss_list(losses: str) -> list[str]:
    loss_list = [x.strip() for x in losses.split(",")]
    if any(not x for x in loss_list) and any(loss_list):   # as --metric: 'xendcg,,lambdamart' is a typo, not two
        raise UsageError(f"--losses: empty loss name in {losses!r}")
    return [x for x in loss_list if x]


def _click_model(path: Path | None) -> dict | None:
    """``--click-model``: the directory and a fingerprint of its model (what decides the clicks); it must be fitted
    per relevance grade, so that any training query's labels find parameters."""
    if path is None:
        return None
    from rankcli.click_model import load_model
    from rankcli.formats.session_log import fingerprint

    loaded = load_model(path)
    if loaded.by != "relevance":
        raise UsageError(f"--click-model {path}: fitted per (query, document) pair; the experiment's queries need a "
                         "model fitted per relevance grade (click-model fit --by relevance)")
    return {"path": str(path), "fingerprint": fingerprint(loaded.stored.path / "model.json")}


def _config(o: dict):
    """The :class:`rankcli.experiment.ExperimentConfig` of the options, after the checks the library cannot make
    (option combinations, spellings); the library checks the values."""
    from rankcli.core.perturb import check_augment_fraction, parse_split
    from rankcli.experiment import ExperimentConfig, iter_levels
    from rankcli.train import TrainConfig, check_loss, options_by_loss

    loss_list = _loss_list(o["losses"])
    for loss in loss_list:
        check_loss(loss)
    loss_options = options_by_loss(o["loss_option"] or [], loss_list, o["step"], "--losses")
    flag = "--folds" if o["folds"] or not o["use_given_splits"] else "--use-given-splits"
    folds = o["folds"] or o["use_given_splits"]
    if folds and o["trials"] is not None:
        raise UsageError(f"--trials does not combine with {flag}: each fold is trained once per loss (the folds are "
                         "the trials); drop --trials")
    if o["allow_overlap"] and not folds:
        raise UsageError("--allow-overlap applies to --folds (the fold files' queries); random splits never overlap")
    if folds and o["split"] is not None:
        raise UsageError(f"--split does not combine with {flag}: the folds' own train/vali/test files are the split; "
                         "drop --split")
    if o["convention"] not in TRAINING_CONVENTIONS:
        raise UsageError(f"--convention: expected paper, lightgbm or sklearn, got {o['convention']!r}")
    if o["correction"] not in opt.CORRECTIONS:
        raise UsageError(f"--correction: expected holm, bonferroni, bh or none, got {o['correction']!r}")
    split = parse_split(o["split"] or "0.6,0.2,0.2")
    params = _parse_params(o["param"] or [])
    sweeps = {name: iter_levels(o[name], "--" + name.replace("_", "-")) if o[name] else [] for name in _SWEEPS}
    train = TrainConfig(select_by=o["select_by"], early_stopping=o["early_stopping"], trees=o["trees"],
                        learning_rate=o["learning_rate"], num_leaves=o["num_leaves"],
                        min_data_in_leaf=o["min_data_in_leaf"], params=params, preset=o["preset"],
                        convention=o["convention"], threads=o["threads"])
    config = ExperimentConfig(
        losses=loss_list, trials=o["trials"], split=split, folds=folds, metrics=[o["metric"]], train=train,
        seed=o["seed"], **sweeps, logging_fraction=0.01 if o["logging_fraction"] is None else o["logging_fraction"],
        correction=o["correction"], test=o["test"], allow_overlap=o["allow_overlap"],
        params_file=_params_file(o["params_file"], loss_list), tune=o["tune"], tune_space=_space_file(o["space"]),
        loss_options=loss_options, click_model=_click_model(o["click_model"]), fuse=o["fuse"])
    if o["logging_fraction"] is not None and not o["position_bias"]:
        raise UsageError("--logging-fraction sets the logging ranker of the --position-bias sweep; give "
                         "--position-bias ETA[,ETA...] or drop it")
    for level in config.augment_negatives:  # before any unit runs: a level of 1e9 ended in MemoryError
        check_augment_fraction(level)
    return config


def _params_file(path: Path | None, losses: list[str]) -> dict | None:
    """Per loss, what ``--params-file`` gives it (path, SHA-256, parameters); ``None`` without the option."""
    if path is None:
        return None
    from rankcli.train.params_file import read_params_file

    pf = read_params_file(path)
    return {loss: pf.record(loss) for loss in losses}


def _space_file(path: Path | None) -> dict | None:
    """``--space``: the file's entries (checked against each loss's space when the configuration is validated)."""
    if path is None:
        return None
    from rankcli.tune.space import read_space_file

    return read_space_file(path)


def _check_dask(dask: str | None, jobs: int) -> None:
    if dask is None:
        return
    from rankcli.distributed import parse_dask_target, require_dask

    parse_dask_target(dask)
    require_dask()
    if jobs != 1:
        raise UsageError("--jobs and --dask do not combine: with --dask the cluster's workers run the units")


def _run(data: Path, output, config, *, jobs: int, overwrite: bool, dask: str | None):
    """Run the experiment under a progress bar; ``(result, seconds, units planned)``."""
    from rankcli.cli._common import log, parquet_data, progress_bar
    from rankcli.experiment import plan_settings, run_experiment
    from rankcli.runtime.startup import import_lightgbm_lean

    data = parquet_data(data)  # SVMlight text (a file, a directory, fold directories) converted for this run
    if dask is None:  # lightgbm.dask needs LightGBM's scikit-learn API; on one machine it is ~1.5-2 s of CPU unused
        import_lightgbm_lean()
    started = time.perf_counter()
    planned = {}
    with progress_bar(None, "experiment") as bar:

        def on_plan(total: int, done: int) -> None:
            planned["total"] = total
            bar.update(total=total, completed=done)
            n, losses = config.trials, config.losses  # with --folds: the number of folds, known once DATA is read
            per = (f"{len(losses)} loss{'es' if len(losses) > 1 else ''} x {n} "
                   f"{'fold' if config.folds else 'trial'}{'s' if n != 1 else ''}")
            settings, _ = plan_settings(config)
            n_settings = len(settings)
            log(f"experiment: {total} units ({per} x {n_settings} settings"
                + (", naive and +ips variants, and both +control on the randomised log, in the position-bias settings"
                   if config.position_bias else "") + ")"
                + (f", {done} already done (resuming)" if done else "")
                + (f", on the Dask cluster {dask}" if dask else f", {jobs} job{'s' if jobs > 1 else ''}"))

        result = run_experiment(data, output, config, jobs=jobs, overwrite=overwrite, on_plan=on_plan,
                                on_unit=lambda u: bar.advance(1), dask=dask)
    return result, time.perf_counter() - started, planned.get("total", 0)


def _report(result, output, *, plots: bool, json_out: bool, seconds: float, total: int) -> None:
    """The tables (stdout, or stderr under --json), the plots, and the closing log line."""
    from rankcli.cli._common import log, print_json, stderr_console, stdout_console
    from rankcli.experiment import json_shape, render

    plot_files, plot_note = render.plots(result, plots)
    if json_out:
        print_json(json_shape(result.summary))
    console = stderr_console() if json_out else stdout_console()
    for item in render.terminal_items(result, to_stderr=json_out):
        console.print(item, markup=False)
    log(f"experiment: {render.hyperparameter_note(result.summary['hyperparameters'])}")
    others = total - result.ran_units - result.resumed_units
    log(f"experiment: {result.ran_units} units trained, {result.resumed_units} resumed"
        + (f", {others} trained by a concurrent run on {output}" if others > 0 else "") + f", {seconds:.1f} s; "
        f"results in {output}/ (trials.parquet, summary.md, convergence.csv"
        + "".join(f", {p.name}" for p in plot_files) + ")")
    if plot_note:
        log(plot_note)
