"""Train a LightGBM ranker with a chosen loss.

Reads a Parquet dataset (see `rankcli convert`) and writes a model directory: LightGBM's text model `model.txt` and
`rankcli.json` (loss and options, every LightGBM parameter, seed, feature names, SHA-256 of the training and
validation files, best iteration, the validation curve, versions, seconds).

Losses: `lambdamart` (LightGBM lambdarank), `xendcg` (rankcli's XE-NDCG with the paper's Newton step; takes
real-valued labels), `xendcg-native` (LightGBM rank_xendcg), `listnet` (with the paper's step, or `--step diagonal`),
`ranknet` (all pairs with different labels), `listmle`, `listmle-pa` (Position-Aware ListMLE), `approxndcg`,
`lambdaloss` (NDCG-Loss2++), `pointwise` (regression). `lambdamart` and `xendcg-native` need integer grades: pass
`--label-grades` to map the distinct label values to 0..n-1 in order. A loss's own parameters (ApproxNDCG's
temperature, LambdaLoss's variant, mu and sigma) are set with `--loss-option NAME=VALUE`; the temperature and sigma
(and LambdaMART's `--param sigmoid`, with lambdarank_norm=false) only rescale the model under Newton boosting, unless
lambda_l2 or min_sum_hessian_in_leaf sets an absolute scale (docs/training.md).

With `--valid`, the metric `--select-by` (default ndcg@5, paper convention: queries without a relevant document are
skipped) is computed after every tree; training stops after `--early-stopping` trees without improvement (0: off)
and the model keeps the trees up to the best one. Without `--valid` all `--trees` trees are trained.

Example: rankcli train train.parquet --valid vali.parquet -o model --loss xendcg --trees 500
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rankcli.cli import options as opt
from rankcli.errors import UsageError
from rankcli.formats.atomic import atomic_path, kinds

NAME = "train"
SHORT_HELP = "Train a LightGBM ranker with a chosen loss."
# rankcli.train.LOSSES's names, in its order, written out so that --help need not import the library (a test keeps
# the two equal).
LOSS_NAMES = ("lambdamart", "xendcg", "xendcg-native", "listnet", "ranknet", "listmle", "listmle-pa", "approxndcg",
              "lambdaloss", "pointwise")

#: ``--threads``' default, as the help says it (rankcli.runtime.cpus.default_threads).
THREADS_DEFAULT = ("the CPUs this process may use (its CPU affinity, cgroup CPU quota and OMP_NUM_THREADS), at most "
                   "one per 20,000 training rows")

# The options that take more than a line to declare, named here so that the signature of `command` reads as the list
# of its options, in the order --help shows them.
_OUTPUT = opt.output("Model directory to write (new, empty, or a previous model with --overwrite).", metavar="DIR")
_LOSS = typer.Option(help="The loss LightGBM boosts (formulas, references: docs/commands/train.md).",
                     metavar=opt.choices(LOSS_NAMES))
_GAMMA = typer.Option(help="XE-NDCG gamma: uniform (redrawn per document and tree) | mean | fixed:<g> with g in [0, "
                      "1].", metavar="<uniform|mean|fixed:G>")
_SELECT_BY = typer.Option("--select-by", help="Validation metric for early stopping and model selection.")
_CONVENTION = opt.convention(applies_to="--select-by", presets=opt.TRAINING_CONVENTIONS)
_LEARNING_RATE = typer.Option("--learning-rate", help="Learning rate (default: 0.05, or the preset's).",
                              show_default=False)
_NUM_LEAVES = typer.Option("--num-leaves", help="Leaves per tree (default: 31, or the preset's).", show_default=False)
_MIN_DATA_IN_LEAF = typer.Option("--min-data-in-leaf", help="Minimum documents per leaf (default: 20, or the "
                                 "preset's).", show_default=False)
_PRESET = typer.Option(help="paper-web30k | paper-yahoo: the paper's LightGBM hyperparameters.", show_default=False,
                       metavar="<paper-web30k|paper-yahoo>")
_LABEL_GRADES = typer.Option("--label-grades", help="Map the distinct label values to grades 0..n-1 in increasing "
                             "order.")
_DASK = opt.dask("Train data-parallel on a Dask cluster",
                 "Native losses only (lambdamart, xendcg-native, pointwise); TRAIN must be readable by every worker.")
_PROPENSITY = typer.Option(
    help="IPS training on a click log: a propensity file from rankcli propensity, or pbm:ETA ((1/r)^ETA). The "
         "impressions of each source query are pooled into one list; a document's relevance is the mean of click / "
         "propensity(position) (xendcg, listnet, pointwise, ranknet, approxndcg, lambdaloss; see docs/clicks.md). Or "
         "learn: LightGBM's own position-bias model, jointly learned (--loss lambdamart, LightGBM >= 4.1; tune it "
         "with --param lambdarank_position_bias_regularization=...).",
    show_default=False)
_POOL_IMPRESSIONS = typer.Option("--pool-impressions", help="Pool a click log's impressions per source query on "
                                 "click-through rates, without propensities (the naive counterpart of --propensity).")
_PROPENSITY_CLIP = typer.Option("--propensity-clip", help="Floor of the propensities in IPS weights (a weight of at "
                                "most 1/clip).")
_ALLOW_GRADED = typer.Option("--allow-graded", help="With --propensity: weight graded labels as if they were clicks.")
_PLOT = typer.Option("--plot", help="Also draw the validation curve, the tree the model keeps marked, as a PNG (needs "
                     "--valid and matplotlib: the plot extra).", show_default=False, metavar="PNG")


def command(
    ctx: typer.Context,
    train: Annotated[Path, typer.Argument(help="Training data (Parquet, or SVMlight text).", show_default=False)],
    output: Annotated[str, _OUTPUT],
    loss: Annotated[str, _LOSS] = "xendcg",
    gamma: Annotated[str, _GAMMA] = "uniform",
    loss_option: Annotated[list[str] | None, opt.loss_option(scope="for the --loss trained")] = None,
    step: Annotated[str | None, opt.step()] = None,
    trees: Annotated[int | None, opt.trees(default="500")] = None,
    early_stopping: Annotated[int | None, opt.early_stopping(default="50 with --valid")] = None,
    select_by: Annotated[str, _SELECT_BY] = "ndcg@5",
    convention: Annotated[str, _CONVENTION] = "paper",
    valid: Annotated[Path | None, typer.Option(help="Validation data (Parquet or text).", show_default=False)] = None,
    learning_rate: Annotated[float | None, _LEARNING_RATE] = None,
    num_leaves: Annotated[int | None, _NUM_LEAVES] = None,
    min_data_in_leaf: Annotated[int | None, _MIN_DATA_IN_LEAF] = None,
    param: Annotated[list[str] | None, opt.param()] = None,
    params_file: Annotated[Path | None, opt.params_file()] = None,
    threads: Annotated[int | None, opt.threads(default=THREADS_DEFAULT)] = None,
    seed: Annotated[int, opt.seed("every random step", result="model bytes")] = 0,
    preset: Annotated[str | None, _PRESET] = None,
    label_grades: Annotated[bool, _LABEL_GRADES] = False,
    json_out: Annotated[bool, opt.json_flag("the model summary")] = False,
    overwrite: Annotated[bool, opt.overwrite("model directory")] = False,
    dask: Annotated[str | None, _DASK] = None,
    propensity: Annotated[str | None, _PROPENSITY] = None,
    pool_impressions: Annotated[bool, _POOL_IMPRESSIONS] = False,
    propensity_clip: Annotated[float, _PROPENSITY_CLIP] = 0.01,
    allow_graded: Annotated[bool, _ALLOW_GRADED] = False,
    plot: Annotated[str | None, _PLOT] = None,
) -> None:
    from rankcli.cli._common import prepare_output
    from rankcli.train import TrainConfig, ips_options

    config = TrainConfig.from_options(
        validating=valid is not None, trees=trees, early_stopping=early_stopping, param=param or [], loss=loss,
        gamma=gamma, loss_option=loss_option or [], step=step, select_by=select_by, convention=convention,
        learning_rate=learning_rate, num_leaves=num_leaves,
        min_data_in_leaf=min_data_in_leaf, threads=threads, seed=seed, label_grades=label_grades, preset=preset)
    config, extra, from_param = _with_params_file(ctx, config, params_file)
    ips = ips_options(propensity, pool_impressions, propensity_clip, allow_graded, loss=loss, dask=dask,
                      params=config.params)
    _check_effective(config, from_param, params_file, dask=dask, ips=ips)
    # Fail before a long training, not after: an output holding an input, a directory that is not a model.
    output = prepare_output(output, overwrite=overwrite, kind="model", inputs=[train, valid])
    plot = _plot_path(plot, overwrite, [train, valid], output)  # written last: its rename completes the command
    if dask is not None:  # data-parallel on a Dask cluster (rankcli.distributed); same model directory
        info = _train_dask(dask, train, valid, config, output, overwrite=overwrite, extra=extra)
    else:
        info = _train_here(train, valid, config, output, ips=ips, overwrite=overwrite, extra=extra)
    _plot(info, plot, overwrite, loss)
    _render(info, output, loss, validated=valid is not None, json_out=json_out)


def _plot_path(plot: str | None, overwrite: bool, inputs: list, output: str):
    """The checked --plot path (None without --plot): a validation set to draw, matplotlib, never an input, standard
    output or a file inside the model directory (which holds only what ``rankcli train`` writes there)."""
    if plot is None:
        return None
    from rankcli.cli._common import prepare_output
    from rankcli.display.plot import INSTALL_HINT, have_matplotlib

    if inputs[1] is None:
        raise UsageError("--plot draws the validation curve: give --valid VALID")
    if not have_matplotlib():
        raise UsageError(f"--plot needs matplotlib: {INSTALL_HINT}")
    if plot == "-":
        raise UsageError("--plot -: give the PNG a file name")
    target = Path(plot).resolve()
    if target == Path(output).resolve() or Path(output).resolve() in target.parents:
        raise UsageError(f"--plot {plot} is inside the model directory {output}; give it a path outside it")
    return prepare_output(plot, overwrite=overwrite, inputs=[p for p in inputs if p is not None], binary=True,
                          option="--plot", example="curve.png", file_kind=kinds.PLOT)


def _plot(info: dict, plot: Path | None, overwrite: bool, loss: str) -> None:
    """The validation curve of the trained model, written atomically as a PNG (nothing without --plot)."""
    if plot is None:
        return
    from rankcli.display.plot import plot_validation_curve

    with atomic_path(plot, overwrite, suffix=".png", file_kind=kinds.PLOT) as tmp:
        plot_validation_curve(info["curve"], info["best_iteration"], tmp, metric=info["select_by"], loss=loss)


def _train_dask(dask: str, train: Path, valid: Path | None, config, output: Path, *, overwrite: bool,
                extra: dict) -> dict:
    """Train data-parallel on a Dask cluster and write the model directory; returns its rankcli.json."""
    from rankcli.cli._common import log, parquet_inputs, progress_bar
    from rankcli.distributed import train_command

    train, valid = parquet_inputs([train, valid])  # SVMlight text converted for this run

    with progress_bar(config.trees, f"train {config.loss}", extra="{task.fields[metric]}") as bar:
        return train_command(dask, train, valid, config, output, overwrite=overwrite, log=log,
                             on_iteration=_progress(bar, config.select_by), extra=extra)


def _train_here(train: Path, valid: Path | None, config, output: Path, *, ips, overwrite: bool, extra: dict) -> dict:
    """Train on this machine and write the model directory; returns its rankcli.json."""
    from rankcli.cli._common import log, parquet_inputs, progress_bar
    from rankcli.runtime.startup import import_lightgbm_lean
    from rankcli.train import load_training_data, save_model, train_prepared

    train, valid = parquet_inputs([train, valid])  # SVMlight text converted for this run

    data = load_training_data(train, valid, config, ips=ips, log=log)
    import_lightgbm_lean()
    with progress_bar(config.trees, f"train {config.loss}", extra="{task.fields[metric]}") as bar:
        result = train_prepared(data.prepare(), config, on_iteration=_progress(bar, config.select_by),
                                objective=data.objective)
        bar.update(total=result.trees_trained, completed=result.trees_trained)  # early stopping: end the bar full
    return save_model(result, config, output, train_path=train, valid_path=valid,
                      feature_names=data.train.feature_names, overwrite=overwrite,
                      extra={**extra, **data.record(result)})


def _with_params_file(ctx: typer.Context, config, path: Path | None):
    """``config`` with the parameters of ``--params-file`` below the options given and ``--param``, what
    rankcli.json records of the file (``params_file``), and the LightGBM parameters ``--param`` gave (main names)."""
    from_param = set(config.params)
    if path is None:
        return config, {}, from_param
    from rankcli.train.params_file import apply_params, read_params_file

    pf = read_params_file(path)
    given = {name for name in ("learning_rate", "num_leaves", "min_data_in_leaf", "gamma")
             if ctx.get_parameter_source(name).name not in ("DEFAULT", "DEFAULT_MAP")}
    config = apply_params(config, pf.params_for(config.loss), explicit=given, where=f"--params-file {pf.path}")
    return config, {"params_file": pf.record(config.loss)}, from_param


def _check_effective(config, from_param: set[str], params_file: Path | None, *, dask: str | None, ips) -> None:
    """Exit 2 for a LightGBM parameter that this training would ignore (the loss does not read it, or it lacks the
    parameter it needs), named by where it came from (``from_param``: the main names ``--param`` gave)."""
    from rankcli.train import check_effective

    def where(key: str) -> str:
        return f"--param {key}" if key in from_param else f"--params-file {params_file}: {key}"

    check_effective(config.params, config.loss, distributed=dask is not None, positions=bool(ips and ips.learn),
                    where=where)


def _progress(bar, select_by: str):
    """The ``on_iteration`` callback that advances ``bar`` and shows the validation metric."""
    def on_iteration(iteration: int, value: float | None, best: float | None) -> None:
        text = "" if value is None else f"{select_by} {value:.4f}" + ("" if best is None else f" best {best:.4f}")
        bar.advance(1, metric=text)

    return on_iteration


def _render(info: dict, output: Path, loss: str, *, validated: bool, json_out: bool) -> None:
    """The model summary: ``rankcli.json`` with the model directory as JSON, or one line."""
    from rankcli.cli._common import print_json

    if json_out:
        print_json({"model_dir": str(output), **info})
        return
    line = f"{output}: {loss}, {info['best_iteration']} trees"
    if validated:
        best = info["best_valid_metric"]
        line += (f" (of {info['trees_trained']} trained), validation {info['select_by']} "
                 f"{'n/a' if best is None else f'{best:.4f}'}")
    line += f", {info.get('feature_dtype', 'float32')} features, {info['seconds']:.1f} s"
    threads = info.get("params", {}).get("num_threads")
    if threads is not None:  # models are byte-identical only for the same count: say which one this is
        line += f", {threads} thread{'s' if threads != 1 else ''}"
    typer.echo(line)
