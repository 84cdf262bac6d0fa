"""Train a LightGBM ranker with a chosen loss.

Reads a Parquet dataset (see `rankcli convert`) and writes a model directory: LightGBM's text model `model.txt` and
`rankcli.json` (loss and options, every LightGBM parameter, seed, feature names, SHA-256 of the training and
validation files, best iteration, the validation curve, versions, seconds).

Losses: `lambdamart` (LightGBM lambdarank), `xendcg` (rankcli's XE-NDCG with the paper's Newton step; takes
real-valued labels), `xendcg-native` (LightGBM rank_xendcg), `listnet`, `ranknet` (all pairs with different labels),
`pointwise` (regression). `lambdamart` and `xendcg-native` need integer grades: pass `--label-grades` to map the
distinct label values to 0..n-1 in order.

With `--valid`, the metric `--select-by` (default ndcg@5, paper convention: queries without a relevant document are
skipped) is computed after every tree; training stops after `--early-stopping` trees without improvement (0: off)
and the model keeps the trees up to the best one. Without `--valid` all `--trees` trees are trained.

Example: rankcli train train.parquet --valid vali.parquet -o model --loss xendcg --trees 500
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

NAME = "train"
SHORT_HELP = "Train a LightGBM ranker with a chosen loss."


def command(
    train: Annotated[Path, typer.Argument(help="Training data (Parquet).", show_default=False)],
    output: Annotated[str, typer.Option("--output", "-o", help="Model directory to write (new, empty, or a previous "
                                        "model with --overwrite).", show_default=False, metavar="DIR")],
    loss: Annotated[str, typer.Option(help="lambdamart | xendcg | xendcg-native | listnet | ranknet | pointwise.")]
    = "xendcg",
    gamma: Annotated[str, typer.Option(help="XE-NDCG gamma: uniform (redrawn per document and tree) | mean | "
                                            "fixed:<g> with g in [0, 1].")] = "uniform",
    trees: Annotated[int | None, typer.Option(help="Maximum number of trees (default 500).",
                                                 show_default=False)] = None,
    early_stopping: Annotated[int | None, typer.Option(
        "--early-stopping", help="Stop after this many trees without improvement on --valid (0: off; default 50 "
                                 "with --valid).", show_default=False)] = None,
    select_by: Annotated[str, typer.Option("--select-by", help="Validation metric for early stopping and model "
                                                                "selection.")] = "ndcg@5",
    convention: Annotated[str, typer.Option(help="Metric convention of --select-by: paper | lightgbm | sklearn.")]
    = "paper",
    valid: Annotated[Path | None, typer.Option(help="Validation data (Parquet).", show_default=False)] = None,
    learning_rate: Annotated[float | None, typer.Option("--learning-rate", help="Learning rate (default 0.05, or the preset's).",
                                                           show_default=False)] = None,
    num_leaves: Annotated[int | None, typer.Option("--num-leaves", help="Leaves per tree (default 31, or the preset's).",
                                                      show_default=False)] = None,
    min_data_in_leaf: Annotated[int | None, typer.Option("--min-data-in-leaf", help="Minimum documents per leaf (default 20, or "
                                                            "the preset's).", show_default=False)] = None,
    param: Annotated[list[str] | None, typer.Option("--param", help="Any other LightGBM parameter, key=value "
                                                       "(repeatable), checked against LightGBM's names and aliases; "
                                                       "overrides the preset. Not one that an option sets (objective, "
                                                       "metric, num_iterations, learning_rate, num_leaves, "
                                                       "min_data_in_leaf, early_stopping_round, num_threads, seeds).",
                                                       show_default=False)] = None,
    threads: Annotated[int | None, typer.Option(help="LightGBM threads (default: the CPUs this process may use: "
                                                        "its CPU affinity, cgroup CPU quota and OMP_NUM_THREADS).",
                                                   show_default=False)] = None,
    seed: Annotated[int, typer.Option(help="Seed of every random step (same seed, same model bytes).")] = 0,
    preset: Annotated[str | None, typer.Option(help="paper-web30k | paper-yahoo: the paper's LightGBM "
                                                       "hyperparameters.", show_default=False)] = None,
    label_grades: Annotated[bool, typer.Option("--label-grades", help="Map the distinct label values to grades "
                                                                      "0..n-1 in increasing order.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the model summary as JSON on stdout.")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing model directory.")] = False,
    dask: Annotated[str | None, typer.Option(
        "--dask", help="Train data-parallel on a Dask cluster: local:N (N worker processes here) or a scheduler "
                       "address such as tcp://host:8786. Native losses only (lambdamart, xendcg-native, pointwise); "
                       "TRAIN must be readable by every worker. Needs pip install \"rankcli\\[dask]\".",
        show_default=False)] = None,
    propensity: Annotated[str | None, typer.Option(
        help="IPS training on a click log: a propensity file from rankcli propensity, or pbm:ETA ((1/r)^ETA). The "
             "impressions of each source query are pooled into one list; a document's relevance is the mean of "
             "click / propensity(position) (xendcg, listnet, pointwise, ranknet; see docs/clicks.md). Or learn: "
             "LightGBM's own position-bias model, jointly learned (--loss lambdamart, LightGBM >= 4.1; tune it with "
             "--param lambdarank_position_bias_regularization=...).",
        show_default=False)] = None,
    pool_impressions: Annotated[bool, typer.Option(
        "--pool-impressions", help="Pool a click log's impressions per source query on click-through rates, without "
                                   "propensities (the naive counterpart of --propensity).")] = False,
    propensity_clip: Annotated[float, typer.Option(
        "--propensity-clip", help="Floor of the propensities in IPS weights (a weight of at most 1/clip).")] = 0.01,
    allow_graded: Annotated[bool, typer.Option(
        "--allow-graded", help="With --propensity: weight graded labels as if they were clicks.")] = False,
) -> None:
    from rankcli.cli._common import log, prepare_output, print_json, progress_bar
    from rankcli.errors import UsageError
    from rankcli.formats.parquet import read_dataset
    from rankcli.startup import import_lightgbm_lean
    from rankcli.train import TrainConfig, check_inputs, save_model, train_model

    config = TrainConfig.from_options(
        validating=valid is not None, trees=trees, early_stopping=early_stopping, param=param or [], loss=loss,
        gamma=gamma, select_by=select_by, convention=convention, learning_rate=learning_rate, num_leaves=num_leaves,
        min_data_in_leaf=min_data_in_leaf, threads=threads, seed=seed, label_grades=label_grades, preset=preset)
    params = config.params
    ips_spec = None
    if propensity is not None or pool_impressions:
        from rankcli.ips import check_ips_loss, parse_propensity

        if propensity is not None and pool_impressions:
            raise UsageError("--propensity and --pool-impressions: give one (--propensity pbm:0 is the pooled "
                             "click-through rate too)")
        ips_spec = parse_propensity(propensity) if propensity is not None else None
        check_ips_loss(loss, ips_spec[0] if ips_spec is not None else None)
        if dask is not None:
            raise UsageError("--propensity and --pool-impressions train on one machine; drop --dask")
        if not 0 < propensity_clip <= 1:
            raise UsageError(f"--propensity-clip: must be within (0, 1], got {propensity_clip:g}")
        if ips_spec is not None and ips_spec[0] == "learn":
            from rankcli.train import check_position_bias_support

            import_lightgbm_lean()
            check_position_bias_support()
    if "lambdarank_position_bias_regularization" in params and (ips_spec is None or ips_spec[0] != "learn"):
        raise UsageError("--param lambdarank_position_bias_regularization: it regularises LightGBM's position-bias "
                         "model, which only --loss lambdamart --propensity learn trains")
    # Fail before a long training, not after: an output holding an input, a directory that is not a model.
    output = prepare_output(output, overwrite=overwrite, kind="model", inputs=[train, valid])

    if dask is not None:  # data-parallel on a Dask cluster (rankcli.distributed); same model directory
        from rankcli.distributed import train_command

        with progress_bar(config.trees, f"train {loss}", extra="{task.fields[metric]}") as bar:
            def on_tree(iteration: int, value: float | None, best: float | None) -> None:
                text = "" if value is None else f"{select_by} {value:.4f}" + ("" if best is None else f" best {best:.4f}")
                bar.advance(1, metric=text)

            info = train_command(dask, train, valid, config, output, overwrite=overwrite, log=log, on_iteration=on_tree)
        valid_ds = valid
    else:
        ips_info = None
        positions = None
        if ips_spec is not None and ips_spec[0] == "learn":
            from rankcli.ips import position_training_set

            train_ds, positions, ips_info = position_training_set(read_dataset(train, extra_columns=("position",)),
                                                                  allow_graded=allow_graded, what=str(train))
        elif propensity is not None or pool_impressions:
            from rankcli.ips import LOG_COLUMNS, pooled_training_set

            train_ds, ips_info = pooled_training_set(read_dataset(train, extra_columns=LOG_COLUMNS), loss=loss,
                                                     propensity=ips_spec, clip=propensity_clip,
                                                     allow_graded=allow_graded, what=str(train))
        else:
            train_ds = read_dataset(train)
        valid_ds = read_dataset(valid) if valid is not None else None
        check_inputs(train_ds, valid_ds, config, names=(str(train), str(valid)))
        log(f"training {loss} on {train}: {train_ds.n_rows} rows, {train_ds.n_queries} queries, "
            f"{train_ds.n_features} features" + (f"; validating on {valid} ({valid_ds.n_queries} queries)"
                                                 if valid_ds is not None else ""))
        import_lightgbm_lean()
        with progress_bar(config.trees, f"train {loss}", extra="{task.fields[metric]}") as bar:
            def on_iteration(iteration: int, value: float | None, best: float | None) -> None:
                text = "" if value is None else f"{select_by} {value:.4f}" + ("" if best is None else f" best {best:.4f}")
                bar.advance(1, metric=text)

            objective = None
            if ips_info is not None and positions is None:
                from rankcli.ips import objective_for

                objective = objective_for(loss, train_ds)
            result = train_model(train_ds, valid_ds, config, on_iteration=on_iteration, objective=objective,
                                 position=positions)
            bar.update(total=result.trees_trained, completed=result.trees_trained)  # early stopping: end the bar full
        if ips_info is None:
            info = save_model(result, config, output, train_path=train, valid_path=valid,
                              feature_names=train_ds.feature_names, overwrite=overwrite)
        else:  # save_model's two steps, with the IPS record in rankcli.json
            from rankcli.train import model_info, write_model_dir

            info = model_info(result, config, train_path=train, valid_path=valid,
                              feature_names=train_ds.feature_names)
            if positions is not None:  # LightGBM's learned additive score bias per position (None: not shown)
                ips_info["propensity"]["position_bias"] = result.position_bias
                ips_info["propensity"]["regularization"] = result.params.get(
                    "lambdarank_position_bias_regularization",
                    info["params"].get("lambdarank_position_bias_regularization"))
            info["ips"] = ips_info
            info = write_model_dir(output, result.booster.model_to_string(num_iteration=result.best_iteration), info,
                                   overwrite=overwrite)
    if json_out:
        print_json({"model_dir": str(output), **info})
        return
    line = f"{output}: {loss}, {info['best_iteration']} trees"
    if valid_ds is not None:
        best = info["best_valid_metric"]
        line += (f" (of {info['trees_trained']} trained), validation {info['select_by']} "
                 f"{'n/a' if best is None else f'{best:.4f}'}")
    line += f", {info['seconds']:.1f} s"
    typer.echo(line)
