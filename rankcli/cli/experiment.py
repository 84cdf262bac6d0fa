"""Run the paper's protocol: repeated query-level splits or fixed folds, losses side by side, robustness sweeps, plots.

Two protocols:
  random splits (default)  DATA is one Parquet dataset, or a directory whose *.parquet files are pooled; every one of
                           --trials trials splits the queries at random (--split train,valid,test). Paired t-tests
                           run across trials (n = trials).
  --folds                  DATA holds Fold1/ .. FoldK/, each with train, vali and test Parquet files (MSLR-WEB and
                           LETOR 4.0 after `convert`), or is one such fold. Each fold is trained once per loss; the
                           test metrics of all folds are pooled per query and the paired t-tests run over those
                           queries (n = queries). --use-given-splits is the old spelling of --folds.

Every trial (fold) trains every loss on the same data; test metrics use the paper's convention (queries without a
relevant document are skipped) unless --convention says otherwise. A difference is labelled `b - a` and is
mean(b) - mean(a), as in `compare`.

Results go to EXP_DIR as each (setting, trial, loss) finishes: trials.parquet (trial, setting, loss, metric, value,
trees, seconds; trial is the fold number with --folds), curves/ (validation metric per tree), queries/ (--folds: test
metric per query), config.json. Rerunning the same command resumes an interrupted experiment (finished units are
skipped; a larger --trials extends a random-split one); a different configuration is refused unless --overwrite. At
the end: summary.md and summary.json (mean and standard error per loss, paired t-tests between every pair of losses,
corrected, each with its n), convergence.csv, sweep-<kind>.csv, and PNG plots when matplotlib is installed (the plot
extra: pip install "rankcli\\[plot]").

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

--jobs N trains in N processes; results are identical for any N (every random step is seeded from --seed, the trial
and the setting, and each model uses --threads threads, default 1).

Example:
  rankcli experiment data.parquet -o exp --trials 30 --losses lambdamart,xendcg,listnet --jobs 2
  rankcli experiment MSLR-WEB10K-parquet/ --folds -o exp-folds --jobs 2
  rankcli experiment data.parquet -o exp-bias --trials 30 --losses xendcg,listnet --position-bias 0,1,2
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

NAME = "experiment"
SHORT_HELP = "Run the paper's protocol: repeated splits, losses side by side, robustness sweeps."


def _parse_params(items: list[str]) -> dict:
    """``--param KEY=VALUE`` items, checked against LightGBM's parameter names as ``train`` checks them."""
    from rankcli.cli.train import parse_params

    return parse_params(items, {"objective": "--losses"})


def command(
    data: Annotated[Path, typer.Argument(help="A Parquet dataset or a directory of Parquet files (pooled); with "
                                              "--folds a directory of Fold1/ .. FoldK/ (or one fold's "
                                              "train/vali/test).",
                                         show_default=False)],
    output: Annotated[str, typer.Option("--output", "-o", help="The experiment directory (EXP_DIR).",
                                        show_default=False, metavar="EXP_DIR")],
    losses: Annotated[str, typer.Option("--losses", help="Comma-separated losses (any loss `train` knows).")]
    = "lambdamart,xendcg,listnet",
    trials: Annotated[int | None, typer.Option("--trials", help="Random splits (trials) per setting "
                                                                   "(default 100; not with --folds).",
                                                  show_default=False)] = None,
    split: Annotated[str | None, typer.Option("--split", help="Query fractions train,validation,test "
                                                                 "(default 0.6,0.2,0.2; not with --folds).",
                                                 show_default=False)] = None,
    folds: Annotated[bool, typer.Option("--folds", help="Fixed splits: DATA holds Fold1/ .. FoldK/ (or one fold), "
                                                        "each trained once per loss; tests over the pooled test "
                                                        "queries.")] = False,
    use_given_splits: Annotated[bool, typer.Option("--use-given-splits",
                                                   help="The old spelling of --folds (DATA one fold's train/vali/test "
                                                        "directory).")] = False,
    metric: Annotated[str, typer.Option("--metric", help="Test metrics, e.g. ndcg@5,ndcg@10.")] = "ndcg@5,ndcg@10",
    select_by: Annotated[str, typer.Option("--select-by", help="Validation metric for early stopping and the "
                                                               "convergence curves.")] = "ndcg@5",
    early_stopping: Annotated[int, typer.Option("--early-stopping", help="Stop after this many rounds without "
                                                                         "improvement (0: off).")] = 50,
    trees: Annotated[int, typer.Option("--trees", help="At most this many trees.")] = 500,
    learning_rate: Annotated[float | None, typer.Option("--learning-rate", help="LightGBM learning rate "
                                                                                   "(default: train's).")] = None,
    num_leaves: Annotated[int | None, typer.Option("--num-leaves", help="Leaves per tree (default: train's).")]
    = None,
    min_data_in_leaf: Annotated[int | None, typer.Option("--min-data-in-leaf",
                                                            help="Minimum documents per leaf (default: train's).")]
    = None,
    param: Annotated[list[str] | None, typer.Option("--param", help="Any other LightGBM parameter, KEY=VALUE "
                                                                       "(repeatable).")] = None,
    preset: Annotated[str | None, typer.Option("--preset", help="Hyperparameter preset of `train` "
                                                                   "(paper-web30k, paper-yahoo).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of every random step (splits, perturbations, LightGBM).")]
    = 0,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Worker processes (results do not depend on it).")] = 1,
    threads: Annotated[int, typer.Option("--threads", help="LightGBM threads per model (part of the "
                                                            "configuration: results may depend on it).")] = 1,
    augment_negatives: Annotated[str | None, typer.Option("--augment-negatives",
                                                             help="Sweep levels: fractions of extra random "
                                                                  "negatives per training list.")] = None,
    label_noise: Annotated[str | None, typer.Option("--label-noise", help="Sweep levels: fraction of each "
                                                                             "training list with random grades.")]
    = None,
    click_noise: Annotated[str | None, typer.Option("--click-noise", help="Sweep levels: click probability of "
                                                                             "grade 0 (train on cascade clicks).")]
    = None,
    position_bias: Annotated[str | None, typer.Option(
        "--position-bias", help="Sweep levels: PBM exponent eta of clicks logged by a trained ranker; each loss "
                                "trained naive and with IPS (<loss>+ips).", show_default=False)] = None,
    logging_fraction: Annotated[float | None, typer.Option(
        "--logging-fraction", help="With --position-bias: the fraction of the training queries the logging ranker "
                                   "is trained on (default 0.01; at least 5 queries).", show_default=False)] = None,
    convention: Annotated[str, typer.Option("--convention", help="Metric convention preset for validation and "
                                                                 "test: paper | lightgbm | sklearn.")] = "paper",
    correction: Annotated[str, typer.Option("--correction", help="Multiple-testing correction within a setting: "
                                                                 "holm | bonferroni | bh | none.")] = "holm",
    plots: Annotated[bool, typer.Option("--plots/--no-plots", help="Write PNG plots (needs matplotlib).")] = True,
    json_out: Annotated[bool, typer.Option("--json", help="Print the summary as JSON on stdout.")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an experiment with a different "
                                                                "configuration in EXP_DIR.")] = False,
    dask: Annotated[str | None, typer.Option(
        "--dask", help="Run the units as tasks on a Dask cluster instead of --jobs: local:N (N worker processes "
                       "here) or a scheduler address such as tcp://host:8786. Each trial trains single-machine; "
                       "results are identical to --jobs runs and resumable. Needs pip install \"rankcli\\[dask]\".",
        show_default=False)] = None,
) -> None:
    import time

    from rankcli.cli._common import log, prepare_output, print_json, progress_bar
    from rankcli.core.perturb import check_augment_fraction, parse_split
    from rankcli.errors import UsageError
    from rankcli.experiment import ExperimentConfig, iter_levels, json_shape, plan_settings, run_experiment

    # EXP_DIR is reopened by the experiment's own rules (resume, --overwrite of an experiment only); here: not an
    # input, not a special file. Not "final": a run interrupted while summarising is resumed, not redone.
    output = prepare_output(output, overwrite=overwrite, kind="experiment", inputs=[data], final=False)
    loss_list = [x.strip() for x in losses.split(",")]
    if any(not x for x in loss_list) and any(loss_list):   # as --metric: 'xendcg,,lambdamart' is a typo, not two
        raise UsageError(f"--losses: empty loss name in {losses!r}")
    loss_list = [x for x in loss_list if x]
    flag = "--folds" if folds or not use_given_splits else "--use-given-splits"
    folds = folds or use_given_splits
    if folds and trials is not None:
        raise UsageError(f"--trials does not combine with {flag}: each fold is trained once per loss (the folds are "
                         "the trials); drop --trials")
    if folds and split is not None:
        raise UsageError(f"--split does not combine with {flag}: the folds' own train/vali/test files are the split; "
                         "drop --split")
    if convention not in ("paper", "lightgbm", "sklearn"):
        raise UsageError(f"--convention: expected paper, lightgbm or sklearn, got {convention!r}")
    if correction not in ("holm", "bonferroni", "bh", "none"):
        raise UsageError(f"--correction: expected holm, bonferroni, bh or none, got {correction!r}")
    config = ExperimentConfig(
        losses=loss_list, trials=trials, split=parse_split(split or "0.6,0.2,0.2"), folds=folds,
        metrics=[metric], select_by=select_by, early_stopping=early_stopping, trees=trees,
        learning_rate=learning_rate, num_leaves=num_leaves, min_data_in_leaf=min_data_in_leaf,
        params=_parse_params(param or []), preset=preset, seed=seed, convention=convention,
        augment_negatives=iter_levels(augment_negatives, "--augment-negatives") if augment_negatives else [],
        label_noise=iter_levels(label_noise, "--label-noise") if label_noise else [],
        click_noise=iter_levels(click_noise, "--click-noise") if click_noise else [],
        position_bias=iter_levels(position_bias, "--position-bias") if position_bias else [],
        logging_fraction=0.01 if logging_fraction is None else logging_fraction, threads=threads,
        correction=correction,
    )
    if logging_fraction is not None and not position_bias:
        raise UsageError("--logging-fraction sets the logging ranker of the --position-bias sweep; give --position-bias "
                         "ETA[,ETA...] or drop it")
    _check_losses(loss_list)
    for level in config.augment_negatives:  # before any unit runs: a level of 1e9 ended in MemoryError
        check_augment_fraction(level)
    if dask is not None:
        from rankcli.distributed import parse_dask_target, require_dask

        parse_dask_target(dask)
        require_dask()
        if jobs != 1:
            raise UsageError("--jobs and --dask do not combine: with --dask the cluster's workers run the units")

    started = time.perf_counter()
    with progress_bar(None, "experiment") as bar:
        planned = {}

        def on_plan(total: int, done: int) -> None:
            planned["total"] = total
            bar.update(total=total, completed=done)
            n = config.trials  # the number of folds with --folds, known once DATA is read
            per = (f"{len(loss_list)} loss{'es' if len(loss_list) > 1 else ''} x {n} "
                   f"{'fold' if folds else 'trial'}{'s' if n != 1 else ''}")
            n_settings = len(plan_settings(config)[0])
            log(f"experiment: {total} units ({per} x {n_settings} settings"
                + (", naive and +ips variants in the position-bias settings" if config.position_bias else "") + ")"
                + (f", {done} already done (resuming)" if done else "")
                + (f", on the Dask cluster {dask}" if dask else f", {jobs} job{'s' if jobs > 1 else ''}"))

        result = run_experiment(data, output, config, jobs=jobs, overwrite=overwrite, on_plan=on_plan,
                                on_unit=lambda u: bar.advance(1), dask=dask)
    elapsed = time.perf_counter() - started

    plot_files, plot_note = _plots(result, plots)
    if json_out:
        print_json(json_shape(result.summary))
        _render_text(result, to_stderr=True)
    else:
        _render_text(result, to_stderr=False)
    others = planned.get("total", 0) - result.ran_units - result.resumed_units
    log(f"experiment: {result.ran_units} units trained, {result.resumed_units} resumed"
        + (f", {others} trained by a concurrent run on {output}" if others > 0 else "") + f", {elapsed:.1f} s; "
        f"results in {output}/ (trials.parquet, summary.md, convergence.csv"
        + "".join(f", {p.name}" for p in plot_files) + ")")
    if plot_note:
        log(plot_note)


def _check_losses(losses: list[str]) -> None:
    from rankcli.train import check_loss

    for loss in losses:
        check_loss(loss)


def _plots(result, wanted: bool):
    from rankcli.experiment import primary_metric, setting_pairs, sweep_rows
    from rankcli.plot import INSTALL_HINT, have_matplotlib, plot_convergence, plot_sweep

    if not wanted:
        return [], ""
    if not have_matplotlib():
        return [], (f"experiment: no plots (matplotlib is not installed); the data are in convergence.csv and "
                    f"sweep-*.csv. For PNG plots: {INSTALL_HINT}, then rerun the same command (it resumes and only "
                    "redraws).")
    files = []
    cfg = result.config
    base = result.convergence.get("baseline", {})
    if any(c["mean"] for c in base.values()):
        files.append(plot_convergence(base, result.exp_dir / "convergence.png", cfg.select_by,
                                      f"convergence (baseline, {cfg.trials} {'folds' if cfg.folds else 'trials'})"))
    for kind, rows in sweep_rows(result.summary, cfg, result.sweeps).items():
        if kind == "position-bias":  # one plot per loss: naive and IPS, and their difference
            for a, b in setting_pairs(cfg, result.sweeps[kind][0][1]):
                files.append(plot_sweep(rows, [a, b], result.exp_dir / f"sweep-{kind}-{a}.png", kind,
                                        primary_metric(cfg)))
            continue
        files.append(plot_sweep(rows, cfg.losses, result.exp_dir / f"sweep-{kind}.png", kind, primary_metric(cfg)))
    return files, ""


def _fmt(x, digits: int = 4) -> str:
    import math

    return "n/a" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def _signed(x, digits: int = 4) -> str:
    import math

    return "n/a" if x is None or not math.isfinite(x) else f"{x:+.{digits}f}"


def _render_text(result, to_stderr: bool) -> None:
    """The summary tables (stdout, unless --json) and a sparkline of every curve."""
    from rich.table import Table
    from rich.text import Text

    from rankcli.cli._common import stderr_console, stdout_console
    from rankcli.experiment import (
        difference_label,
        format_level,
        naive_only_note,
        p_cell,
        primary_metric,
        sweep_columns,
        sweep_note,
        sweep_rows,
    )
    from rankcli.plot import CONVERGENCE_NOTE, sparkline

    console = stderr_console() if to_stderr else stdout_console()
    cfg = result.config
    unit = "queries" if cfg.folds else "trials"
    if not to_stderr:
        # Table 1 for the baseline; sweep settings get their sweep table (every setting's full table: summary.md).
        for s in result.summary["settings"][:1]:
            ns = sorted({v["n"] for ms in s["losses"].values() for v in ms.values()})
            over = (f"{'/'.join(map(str, ns))} pooled test queries of {cfg.trials} fold{'s' if cfg.trials != 1 else ''}"
                    if cfg.folds else f"{cfg.trials} trials")
            t = Table(title=f"{s['setting']}: test metrics, mean ± stderr over {over} ({cfg.convention} convention)",
                      title_justify="left")
            t.add_column("loss")
            for m in cfg.metrics:
                t.add_column(m, justify="right")
            for loss in cfg.losses:
                t.add_row(Text(loss), *[f"{_fmt(v['mean'])} ± {_fmt(v['stderr'])}"
                                        for v in (s["losses"][loss][m] for m in cfg.metrics)])
            console.print(t)
            if s["tests"]:
                over = "the pooled test queries" if cfg.folds else "trials"
                tt = Table(title=f"paired t-tests over {over} (n = {unit}; p adjusted: {cfg.correction}); "
                                 "b - a = mean(b) - mean(a)", title_justify="left")
                for col in ("difference", "metric", "mean", "stderr", "n", "p", "p adjusted"):
                    tt.add_column(col, justify="left" if col in ("difference", "metric") else "right",
                                  no_wrap=col == "difference")
                for x in s["tests"]:
                    tt.add_row(Text(difference_label(x["a"], x["b"])), x["metric"], _signed(x["difference"]),
                               _fmt(x["stderr"]), str(x["n"]), p_cell(x["p_value"], reason=x["reason"]),
                               p_cell(x["p_adjusted"]))
                console.print(tt)
    # Convergence: one sparkline per loss on a common scale.
    base = result.convergence.get("baseline", {})
    curves = {loss: c["mean"] for loss, c in base.items() if c["mean"]}
    if curves:
        vals = [v for c in curves.values() for v in c if v == v]
        lo, hi = (min(vals), max(vals)) if vals else (0.0, 1.0)
        console.print(f"convergence (baseline): mean validation {cfg.select_by} per tree over all "
                      f"{cfg.trials} {'folds' if cfg.folds else 'trials'}, scale {_fmt(lo)}..{_fmt(hi)}", markup=False)
        width = max(len(x) for x in curves)
        for loss, c in curves.items():
            peak = max((v for v in c if v == v), default=float("nan"))
            console.print(f"  {loss:<{width}} {sparkline(c, lo, hi)}  {len(c)} trees, last {_fmt(c[-1])}, "
                          f"peak {_fmt(peak)}", markup=False)
        console.print(f"  {CONVERGENCE_NOTE}", markup=False)
    metric = primary_metric(cfg)
    for kind, rows in sweep_rows(result.summary, cfg, result.sweeps).items():
        names, diffs = sweep_columns(cfg, kind)
        if not to_stderr:
            caption = sweep_note(cfg, kind) + (f" {naive_only_note(cfg)}" if kind == "position-bias" and
                                               naive_only_note(cfg) else "")
            t = Table(title=f"{kind} sweep: mean test {metric}", title_justify="left", caption=caption,
                      caption_justify="left")
            t.add_column("level", justify="right")
            for loss in names:
                t.add_column(Text(loss), justify="right")
            for d in diffs:
                t.add_column(Text(d), justify="right")
            for d in diffs:
                t.add_column(Text(f"p adj. ({d})"), justify="right")
            for r in rows:
                t.add_row(format_level(r["level"]), *[_fmt(r[x]) for x in names],
                          *[_signed(r[d]) for d in diffs], *[p_cell(r[f"{d} p_adjusted"]) for d in diffs])
            console.print(t)
        vals = [r[x] for r in rows for x in names if r[x] is not None and r[x] == r[x]]
        lo, hi = (min(vals), max(vals)) if vals else (0.0, 1.0)
        console.print(f"{kind}: test {metric} per level ({', '.join(format_level(r['level']) for r in rows)}), "
                      f"scale {_fmt(lo)}..{_fmt(hi)}", markup=False)
        width = max(len(x) for x in names)
        for loss in names:
            series = [r[loss] for r in rows]
            console.print(f"  {loss:<{width}} {sparkline(series, lo, hi)}  {' '.join(_fmt(v) for v in series)}",
                          markup=False)
