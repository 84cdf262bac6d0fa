"""Explain a trained ranker: which features it uses, and what each is worth in ranking quality.

Without DATA: LightGBM's gain (total loss reduction of the splits on a feature) and split count per feature, raw and
as shares of the total, most important first.

With DATA (Parquet with labels; raw, or normalised as the model's training data): the ranking importance of each
feature, the drop in the metric -m (default ndcg@10, under the model's recorded convention) when the feature's values
are permuted within each query, averaged over --repeats seeded permutations, with its standard error over queries and
a paired test of the model against the permuted model per feature (--test, as in compare, wilcoxon with --repeats 1
only; n queries), the p-values adjusted over the features (--correction, Holm by default); and the mean absolute
TreeSHAP contribution of each feature, centred within each query (a constant shift within a query does not change its
ranking), on --contributions-queries queries drawn at random when DATA has more (200 by default; all: every query),
with its standard error as an estimate of the whole data's (--no-contributions skips it: it is the slow part). Each
permutation is scored by the trees that split on the feature only (the others' leaves do not move), which gives the
whole model's scores. DATA should be held out: when it is
the model's training or validation file (the SHA-256 its rankcli.json records), a warning says so on stderr and in
--json's "warnings", since on the data it was fitted to even noise features the model split on come out significant.

--group NAME=F1,F2,... (repeatable) or --groups FILE (one such line each) permutes features together, e.g. the BM25
variants of WEB30K; a group's gain, splits and contributions are its members' sums.

Output: a table of the --top features on stdout; --json prints {"metric", "features": [{"feature", "gain", "splits",
"drop", "drop_stderr", "p_value", "n", "mean_abs_contribution", ...}], "contributions": {the sample}} for every
feature (the drop, test and
contribution fields null without DATA); -o writes every feature as Parquet or CSV (by the extension); --per-query
writes each query's drop per feature; --plot draws the top features' drops with error bars beside their gain (needs
the plot extra).

Example: rankcli explain model test.parquet --repeats 5 --group bm25=f21,f22,f23 --json
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from rankcli.cli import options as opt
from rankcli.cli.options import Correction
from rankcli.errors import UsageError
from rankcli.formats.atomic import atomic_path, check_distinct, kinds, model_files

NAME = "explain"
SHORT_HELP = "Which features a model uses, and their worth in NDCG."
TESTS = ("ttest", "permutation", "wilcoxon", "bootstrap")


def command(
    model_dir: Annotated[Path, typer.Argument(help="Model directory written by `rankcli train`.", show_default=False)],
    data: Annotated[Path | None, typer.Argument(
        help="Labelled dataset (Parquet, or SVMlight text converted for the run) for the ranking importance and "
        "the contributions.", show_default=False)]
    = None,
    output: Annotated[str | None, opt.output("Write every feature's numbers to this file: .parquet or .csv (- for "
                                             "CSV on standard output).")] = None,
    json_out: Annotated[bool, opt.json_flag("every feature's numbers")] = False,
    metric: Annotated[str, opt.metric("The metric whose drop is measured")] = "ndcg@10",
    convention: Annotated[str | None, opt.convention(
        default="the model's recorded convention, else paper", presets=opt.TRAINING_CONVENTIONS)] = None,
    repeats: Annotated[int, typer.Option("--repeats", help="Seeded permutations per feature.")] = 2,
    seed: Annotated[int, opt.seed("the permutations and the random tests", result="numbers")] = 0,
    test: Annotated[str, typer.Option("--test", help="The paired test of each feature's drop (two-sided), as in "
                                      "compare; wilcoxon needs --repeats 1.", metavar=opt.choices(TESTS))] = "ttest",
    correction: Annotated[Correction | None, opt.correction(
        default="holm with more than one feature", scope="the features' tests")] = None,
    permutations: Annotated[int, typer.Option(
        "--permutations", help="Sign-flip permutations (--test permutation) or resamples (bootstrap) of the test; "
        "the features' permutations are --repeats.")] = 10000,
    group: Annotated[list[str] | None, typer.Option(
        "--group", help="Features permuted together: NAME=F1,F2,... (repeatable).", show_default=False,
        metavar="NAME=F1,F2")] = None,
    groups_file: Annotated[Path | None, typer.Option(
        "--groups", help="A file of groups, one NAME=F1,F2,... per line (# comments).", show_default=False)] = None,
    per_query: Annotated[str | None, typer.Option(
        "--per-query", help="Write each query's drop per feature (qid, the model's metric, one column per feature): "
        ".parquet or .csv.", show_default=False, metavar="PATH")] = None,
    plot: Annotated[str | None, typer.Option(
        "--plot", help="Write a PNG of the --top features' drops (± 1 stderr) beside their gain share (needs the "
        "plot extra).", show_default=False, metavar="PATH")] = None,
    top: Annotated[int, typer.Option("--top", help="Features in the table and the plot (0: all).")] = 20,
    no_contributions: Annotated[bool, typer.Option(
        "--no-contributions", help="Skip the TreeSHAP contributions (the slow part).")] = False,
    contributions_queries: Annotated[str, typer.Option(
        "--contributions-queries", help="Compute the contributions on this many queries drawn at random (--seed) "
        "when DATA has more; all: every query.", metavar="N|all")] = "200",
    overwrite: Annotated[bool, opt.overwrite(text="Replace existing output files (only explain's own earlier outputs "
                                                  "of those options).")] = False,
    batch_rows: Annotated[int, typer.Option("--batch-rows", hidden=True, help="Rows per contributions batch.")]
    = 4_096,
) -> None:
    _check(data, per_query, top, permutations, test, repeats)
    sample = _sample_size(contributions_queries)
    outputs = _outputs(model_dir, data, output, per_query, plot, json_out, overwrite)
    result = _explain(model_dir, data, dict(
        metric=metric, convention=convention, repeats=repeats, seed=seed, test=test,
        correction=correction.value if correction is not None else None, permutations=permutations,
        groups=group or [], group_files=[groups_file] if groups_file is not None else [],
        contributions=not no_contributions, contributions_queries=sample, batch_rows=batch_rows))
    _warn(result)
    _write(result, outputs, top, overwrite)
    _render(result, outputs, top, json_out)


def _check(data, per_query, top: int, permutations: int, test: str, repeats: int) -> None:
    """The options' own checks, before any output is prepared or any file read (exit 2)."""
    from rankcli.explain.ranking import check_test

    if data is None and (per_query is not None):
        raise UsageError("--per-query needs DATA: the drops are computed on labelled queries")
    if top < 0:
        raise UsageError(f"--top must be 0 (all) or more, got {top}")
    if permutations < 1:
        raise UsageError(f"--permutations must be at least 1, got {permutations}")
    check_test(test, repeats)


def _sample_size(text: str) -> int | None:
    """``--contributions-queries``: a count of at least 1, or ``all`` (None); anything else is exit 2."""
    if text.strip().lower() == "all":
        return None
    try:
        n = int(text)
    except ValueError:
        raise UsageError(f"--contributions-queries takes a number of queries or all, got {text!r}") from None
    if n < 1:
        raise UsageError(f"--contributions-queries must be at least 1 (or all), got {text!r}")
    return n


def _explain(model_dir, data, options: dict):
    """Load the model and DATA and explain it (:func:`rankcli.explain.explain` with ``options``), with a progress
    bar."""
    from rankcli.runtime.startup import import_lightgbm_lean

    import_lightgbm_lean()
    from rankcli.cli._common import parquet_inputs
    from rankcli.explain import explain
    from rankcli.formats.parquet import read_dataset
    from rankcli.train import load_model

    model = load_model(model_dir)
    name = str(data) if data is not None else None
    (data,) = parquet_inputs([data], model=model_dir)  # SVMlight text converted for this run, as the model's data
    ds = read_dataset(data) if data is not None else None
    with _progress(ds) as advance:
        return explain(model, ds, data_name=name, progress=advance, data_path=data, **options)


def _warn(result) -> None:
    from rankcli.cli._common import log

    for text in result.warnings:
        log(f"warning: {text}")


def _outputs(model_dir, data, output, per_query, plot, json_out: bool, overwrite: bool) -> dict:
    """The checked output paths, prepared in the order they are written (the last is the one that completes the
    command)."""
    from rankcli.cli._common import prepare_output, stdout_taken
    from rankcli.formats.tables import table_format

    inputs = [p for p in (data,) if p is not None] + model_files(model_dir)
    check_distinct({"--per-query": per_query, "--plot": plot, "-o": output})
    out = {}
    if per_query is not None:
        if per_query == "-":
            raise UsageError("--per-query -: standard output carries the table (or -o -, --json); give a file name")
        table_format(per_query, "--per-query")
        out["per_query"] = prepare_output(per_query, overwrite=overwrite, inputs=inputs, option="--per-query",
                                          example="per-query.parquet", file_kind=kinds.EXPLAIN_PER_QUERY)
    if plot is not None:
        from rankcli.display.plot import INSTALL_HINT, have_matplotlib

        if plot == "-":
            raise UsageError("--plot -: a PNG needs a file name")
        if not have_matplotlib():
            raise UsageError(f"--plot needs matplotlib: {INSTALL_HINT}")
        out["plot"] = prepare_output(plot, overwrite=overwrite, inputs=inputs, option="--plot", example="plot.png",
                                     file_kind=kinds.PLOT)
    if output is not None:
        table_format(output, "-o")
        out["output"] = prepare_output(output, overwrite=overwrite, inputs=inputs, example="importance.csv",
                                       file_kind=kinds.EXPLAIN)
        stdout_taken(out["output"], json_out)
    return out


def _progress(ds):
    """A progress bar in percent of the estimated work (:mod:`rankcli.explain.progress`: each model call counted by
    its measured cost, TreeSHAP's batches too), so that its time left holds throughout; it never moves back."""
    from rankcli.cli._common import progress_bar

    @contextmanager
    def bar():
        if ds is None:
            yield None
            return
        with progress_bar(100, "explain %") as b:
            shown = [0.0]

            def report(done: float, total: float) -> None:
                shown[0] = max(shown[0], min(100.0, 100.0 * done / total) if total > 0 else 0.0)
                b.update(completed=shown[0])

            yield report

    return bar()


def _write(result, outputs: dict, top: int, overwrite: bool) -> None:
    from rankcli.formats.tables import write_columns

    if "per_query" in outputs:
        r = result.ranking
        write_columns(outputs["per_query"], result.per_query(), overwrite=overwrite,
                      metadata={"kind": "explain-per-query", "metric": r.metric, "convention": r.convention,
                                "repeats": r.repeats, "seed": r.seed}, file_kind=kinds.EXPLAIN_PER_QUERY)
    if "plot" in outputs:
        from rankcli.explain.render import explain_plot

        with atomic_path(outputs["plot"], overwrite, suffix=".png", file_kind=kinds.PLOT) as tmp:
            explain_plot(result, tmp, top)
    if "output" in outputs:
        write_columns(outputs["output"], result.columns(), overwrite=overwrite, metadata={"kind": "explain"},
                      file_kind=kinds.EXPLAIN)


def _render(result, outputs: dict, top: int, json_out: bool) -> None:
    from rankcli.cli._common import log, print_json, stderr_console, stdout_console
    from rankcli.explain.render import explain_table

    if json_out:
        print_json(result.as_dict())
    else:
        console = stderr_console() if str(outputs.get("output")) == "-" else stdout_console()
        console.print(explain_table(result, top))
    for key in ("per_query", "plot", "output"):
        if key in outputs and str(outputs[key]) != "-":
            log(f"wrote {outputs[key]}")
