"""Tune each loss's hyperparameters on the same budget: a search per loss with Optuna's TPE sampler (seeded).

Every loss gets its own study and the same budget of N trainings, each scored by --select-by on the validation set
(early stopping as in `train`); a training without a finite value is not counted and the next draws other
parameters, and --max-failures such trainings in a row end that loss's study (exit 3). Trial 0 of every loss is
`rankcli train`'s own parameters under the same --preset, --param and --threads, so its value is what `train` reports
and the gain of tuning is measured from it. max(2, min(10, N // 4)) random start-up trials (trial 0 among them), the
same for every loss in the dimensions they share, come before TPE models what it has seen. Only DATA and VALID are
read: tuning never sees test data.

The search space (learning rate, leaves, minimum documents per leaf, L2, feature fraction, and each loss's own
parameters, such as XE-NDCG's gamma and LambdaMART's truncation level and sigmoid) is declared once, with ranges from
published LightGBM ranking practice; --space FILE (TOML or JSON) narrows, widens, fixes or adds dimensions, and --param
fixes a parameter for every trial.

DIR holds, per loss: study.journal (Optuna's journal), trials.csv (every trial: parameters, validation value, trees,
seconds) and best.json, which `train --params-file` and `experiment --params-file` read; and best.json (every loss),
best-so-far.csv and best-so-far.png (the best validation value against the trials, per loss; the plot extra).
Rerunning continues an interrupted tune, a larger --budget extends it, and another space, data or options are refused
unless --overwrite. Several processes (--jobs, --dask, or two commands) share the studies and each loss still
finishes exactly N trials. Needs Optuna: pip install "rankcli\\[tune]".

Example: rankcli tune train.parquet --valid vali.parquet -o tuned --loss lambdamart --loss xendcg --budget 20
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rankcli.cli import options as opt

NAME = "tune"
SHORT_HELP = "Tune each loss's hyperparameters on the same budget (Optuna TPE)."
MAX_FAILURES = typer.Option("--max-failures", help="Trials in a row without a finite validation value (not counted "
                                                   "in the budget) that end a loss's study, exit 3.")


# The options that take more than a line to declare, named here so that the signature of `command` reads as the list
# of its options, in the order --help shows them.
_TRAIN = typer.Argument(help="Training data (Parquet, or SVMlight text converted for the run).", show_default=False,
                        metavar="DATA")
_VALID = typer.Option(help="Validation data (Parquet, or SVMlight text): every trial is scored on it.",
                      show_default=False)
_OUTPUT = opt.output("Output directory (new, empty, or an earlier tune to resume or extend).", metavar="DIR")
_LOSS = typer.Option("--loss", help="A loss to tune (repeatable; any loss `train` knows; experiment's --losses a,b "
                     "works too).", show_default=False)
_BUDGET = typer.Option("--budget", help="Trainings per loss (finished trials, trial 0 included); a larger value "
                       "extends an earlier tune.", show_default=False)
_SELECT_BY = typer.Option("--select-by", help="Validation metric to maximise (also early stopping's).")
_CONVENTION = opt.convention(applies_to="--select-by", presets=opt.TRAINING_CONVENTIONS)
_PRESET = typer.Option(help="paper-web30k | paper-yahoo: the paper's LightGBM hyperparameters as trial 0's.",
                       show_default=False, metavar="<paper-web30k|paper-yahoo>")
_LABEL_GRADES = typer.Option("--label-grades", help="Map the distinct label values to grades 0..n-1 in increasing "
                             "order.")
_THREADS = opt.threads(default="as train: the CPUs this process may use, at most one per 20,000 training rows")
_JOBS = typer.Option("--jobs", "-j", help="Processes sharing the studies (parallel trials are not reproducible).")
_DASK = opt.dask("Run the trials on a Dask cluster, one task per worker thread",
                 "DATA, VALID and DIR must be on a filesystem every worker sees.")
_OVERWRITE = opt.overwrite(text="Start the named losses' studies over (another space, data or options).")


def command(
    train: Annotated[Path, _TRAIN],
    valid: Annotated[Path, _VALID],
    output: Annotated[str, _OUTPUT],
    loss: Annotated[list[str], _LOSS],
    budget: Annotated[int, _BUDGET],
    max_failures: Annotated[int, MAX_FAILURES] = 10,
    select_by: Annotated[str, _SELECT_BY] = "ndcg@5",
    convention: Annotated[str, _CONVENTION] = "paper",
    space: Annotated[Path | None, opt.space()] = None,
    trees: Annotated[int, opt.trees()] = 500,
    early_stopping: Annotated[int, opt.early_stopping()] = 50,
    param: Annotated[list[str] | None, opt.param(overrides="the preset; fixed for every trial")] = None,
    preset: Annotated[str | None, _PRESET] = None,
    label_grades: Annotated[bool, _LABEL_GRADES] = False,
    threads: Annotated[int | None, _THREADS] = None,
    seed: Annotated[int, opt.seed("the sampler and LightGBM", result="trials (sequential runs)")] = 0,
    jobs: Annotated[int, _JOBS] = 1,
    dask: Annotated[str | None, _DASK] = None,
    json_out: Annotated[bool, opt.json_flag("the summary")] = False,
    overwrite: Annotated[bool, _OVERWRITE] = False,
) -> None:
    from rankcli.cli._common import log, parquet_inputs, prepare_output
    from rankcli.train import TrainConfig
    from rankcli.tune import require_optuna

    require_optuna()
    from rankcli.tune.config import TuneConfig
    from rankcli.tune.space import read_space_file

    config = TrainConfig.from_options(validating=True, trees=trees, early_stopping=early_stopping, param=param or [],
                                      select_by=select_by, convention=convention, threads=threads, seed=seed,
                                      label_grades=label_grades, preset=preset)
    tune = TuneConfig(list(loss), budget, config, read_space_file(space) if space is not None else None,
                      max_failures=max_failures)
    tune.validate()
    if dask is not None:
        from rankcli.distributed import parse_dask_target, require_dask

        parse_dask_target(dask)
        require_dask()
    output = prepare_output(output, overwrite=overwrite, kind="tune", inputs=[train, valid, space], final=False)
    train, valid = parquet_inputs([train, valid])  # SVMlight text converted for this run
    from rankcli.tune.runner import run_tune

    result = run_tune(train, valid, output, tune, overwrite=overwrite, jobs=jobs, dask=dask,
                      on_trial=_on_trial(select_by), log=log)
    _report(result, json_out)


def _on_trial(select_by: str):
    from rankcli.cli._common import log

    def on_trial(loss: str, record: dict, best: float | None) -> None:
        value = record["value"]
        log(f"tune {loss}: trial {record['trial']}"
            + (f" (rerun of {record['retry_of']})" if record.get("retry_of") is not None else "")
            + (f" {select_by} {record['invalid']}: failed, not counted" if record.get("invalid") is not None else
               f" {select_by} {'n/a' if value is None else f'{value:.4f}'}")
            + ("" if best is None else f" (best {best:.4f})") + f", {record['trees']} trees, {record['seconds']:.1f} s")

    return on_trial


def _report(result, json_out: bool) -> None:
    from rankcli.cli._common import log, print_json, stdout_console
    from rankcli.tune.render import tune_table
    from rankcli.tune.results import json_shape

    shape = json_shape(result)
    if json_out:
        print_json(shape)
    else:
        console = stdout_console()
        for item in tune_table(result, shape):
            console.print(item, markup=False)
    ran = sum(r.ran for r in result.losses.values())
    log(f"tune: {ran} trials trained here, {result.seconds:.1f} s; results in {result.out_dir}/ (best.json, "
        "<loss>/trials.csv, <loss>/best.json, best-so-far.csv"
        + (", best-so-far.png" if any(p.name == "best-so-far.png" for p in result.files) else
           "; no plot: matplotlib is not installed, pip install \"rankcli[plot]\"") + ")")
