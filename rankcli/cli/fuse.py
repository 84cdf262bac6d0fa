"""Fuse runs: combine several rankings of the same queries into one (RRF, CombSUM, CombMNZ, weighted sums, Borda,
Condorcet, ProbFuse, ... : ranx's methods and normalisations).

Each RUN is a TREC run (qid Q0 docid rank score tag; .gz read as such; - for standard input, once) or a Parquet run
(qid, score, and docid or row: what rankcli predict writes), mixed freely. Queries are matched by id, documents by
name within a query (a Parquet run's as TREC files name them: its docid, else <qid>-<row>); runs without a docid
column only when they all score the same dataset. A query or document missing from a run is one the run did not
retrieve (each method's definition says what that gives; docs/commands/fuse.md). Each run is ranked by score,
descending (ascending under min-max-inverted), equal scores by docid descending, as trec_eval ranks it.

--method (default rrf): min max med sum anz mnz gmnz wsum wmnz mixed (scores), isr log_isr logn_isr rrf rbc
bordafuse w_bordafuse condorcet w_condorcet (ranks), posfuse probfuse segfuse slidefuse mapfuse bayesfuse (trained);
aliases combsum, combmnz, combmax, borda, ... . --normalize (default min-max, per query, as ranx): min-max
min-max-inverted max sum zmuv rank borda none (minmax, zscore accepted). Parameters: --weights w1,w2,... (one per
run; default equal), --k (RRF, default 60), --phi (RBC), --gamma (gmnz), --sigma (logn_isr, default 0.01),
--segments (probfuse), --window (slidefuse). --depth N uses each run's top N.

Trained methods learn from the runs on the queries of --train-qrels QRELS; those queries are left out of the fused
run (--allow-overlap keeps them). --optimize QRELS --metric ndcg@10 searches the method's parameters exactly (weights
on every point of the simplex of --step, enumerated with integers; k 10..100 by 10; phi, gamma, sigma 0.01..1 by
0.01; segments and window 1..100), scored with rankcli's metrics under --convention (default trec) on the judged
queries, which are then left out of the output; it prints the chosen parameters and the best candidates (--json: all).
--folds K (seeded by --seed) cross-validates the choice by query and reports the out-of-fold score.

Output: -o OUT, --format trec (default unless every run is Parquet and OUT a file) or parquet (qid, docid, label
when the runs carry labels, score), --tag for TREC. rankcli eval, compare and trec_eval read it. --compare tests the
fused run against each input (rankcli compare's paired t-test, Holm; TREC runs need --qrels QRELS).

Example: rankcli fuse bm25.txt dense.txt -o fused.txt --method rrf
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from rankcli.cli import options as opt
from rankcli.cli.options import Preset
from rankcli.errors import UsageError
from rankcli.formats.atomic import kinds

NAME = "fuse"
SHORT_HELP = "Fuse runs into one: RRF, CombSUM, CombMNZ, weighted sums, trained and tuned fusions."


class RunFormat(str, Enum):
    """``--format``: the fused run's format (:mod:`rankcli.formats.runs`)."""

    trec = "trec"
    parquet = "parquet"


def _weights(text: str | None) -> list[float] | None:
    if text is None:
        return None
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise UsageError(f"--weights takes numbers separated by commas (one per run), got {text!r}") from None


def _params(weights, k, phi, gamma, sigma, segments, window) -> dict:
    given = {"weights": _weights(weights), "k": k, "phi": phi, "gamma": gamma, "sigma": sigma,
             "segments": segments, "window": window}
    return {name: value for name, value in given.items() if value is not None}


#: The options' help texts (one place: the signature stays one line per option).
HELP = {
    "method": "Fusion method (or alias); see above.",
    "normalize": "Per-query score normalization: min-max, min-max-inverted, max, sum, zmuv, rank, borda, none.",
    "weights": "Weights of wsum, wmnz, mixed, w_bordafuse, w_condorcet: one per run, comma-separated (default: equal).",
    "k": "RRF's rank offset (default 60).",
    "phi": "RBC's persistence, in [0, 1].",
    "gamma": "gmnz's exponent of the number of runs holding a document.",
    "sigma": "logn_isr's sigma, in [0, 1] (default 0.01).",
    "segments": "probfuse's number of segments per list.",
    "window": "slidefuse's window: positions on each side.",
    "depth": "Use each run's top N documents per query.",
    "format": "trec or parquet (default: parquet when every run is Parquet and -o a file, else trec).",
    "tag": "Run tag of a TREC run (default: the method's name).",
    "train-qrels": "TREC qrels of the training queries of a trained method (left out of the output).",
    "allow-overlap": "Keep the training or optimisation queries in the fused run.",
    "optimize": "TREC qrels of the queries to choose the parameters on (left out of the output).",
    "step": "Step of the weights' simplex grid of --optimize.",
    "folds": "Cross-validate --optimize's choice over K folds of queries.",
    "compare": "Test the fused run against each input (paired t-test, Holm) and print the report.",
    "qrels": "TREC qrels judging TREC runs for --compare.",
}


def _opt(name: str, **kw):
    """The option ``--name`` with its help text, its default not shown unless ``show_default`` says so."""
    return typer.Option(f"--{name}", help=HELP[name], **{"show_default": False, **kw})


def command(
    runs: Annotated[list[str], typer.Argument(help="Two or more runs: TREC (- for standard input) or Parquet.",
                                              show_default=False, metavar="RUN...")],
    output: Annotated[str, opt.output("The fused run to write; - for standard output (a TREC run).")],
    method: Annotated[str, _opt("method", show_default=True)] = "rrf",
    normalize: Annotated[str, _opt("normalize", show_default=True)] = "min-max",
    weights: Annotated[str | None, _opt("weights", metavar="W1,W2,...")] = None,
    k: Annotated[float | None, _opt("k")] = None,
    phi: Annotated[float | None, _opt("phi")] = None,
    gamma: Annotated[float | None, _opt("gamma")] = None,
    sigma: Annotated[float | None, _opt("sigma")] = None,
    segments: Annotated[int | None, _opt("segments")] = None,
    window: Annotated[int | None, _opt("window")] = None,
    depth: Annotated[int | None, _opt("depth", metavar="N")] = None,
    fmt: Annotated[RunFormat | None, _opt("format")] = None,
    tag: Annotated[str | None, _opt("tag")] = None,
    train_qrels: Annotated[Path | None, _opt("train-qrels", metavar="QRELS")] = None,
    allow_overlap: Annotated[bool, _opt("allow-overlap")] = False,
    optimize: Annotated[Path | None, _opt("optimize", metavar="QRELS")] = None,
    metric: Annotated[list[str] | None, opt.metric("Metric of --optimize (one) and --compare (repeatable)",
                                                   default="ndcg@10")] = None,
    step: Annotated[float, _opt("step", show_default=True)] = 0.1,
    folds: Annotated[int | None, _opt("folds", metavar="K")] = None,
    seed: Annotated[int, opt.seed("--folds' split of the queries and --compare's tests", result="output")] = 0,
    convention: Annotated[Preset, opt.convention(applies_to="--optimize and --compare")] = Preset.trec,
    compare: Annotated[bool, _opt("compare")] = False,
    qrels: Annotated[Path | None, _opt("qrels", metavar="QRELS")] = None,
    json_out: Annotated[bool, opt.json_flag("the result (and the search and comparison)")] = False,
    overwrite: Annotated[bool, opt.overwrite("fused run")] = False,
) -> None:
    _start(dict(locals()))


def _start(o: dict) -> None:
    """The command's work, from its options by name."""
    from rankcli.cli._common import prepare_output, stdout_taken
    from rankcli.fuse import FuseOptions, default_format

    fmt_name = o["fmt"].value if o["fmt"] is not None else default_format(o["runs"], o["output"])
    inputs = [Path(r) for r in o["runs"] if r != "-"] + [
        p for p in (o["train_qrels"], o["optimize"], o["qrels"]) if p is not None]
    trec = fmt_name == "trec"
    output = prepare_output(o["output"], overwrite=o["overwrite"], inputs=inputs, binary=not trec,
                            example="fused.txt" if trec else "fused.parquet",
                            file_kind=kinds.TREC_RUN if trec else kinds.RUN)
    stdout_taken(output, o["json_out"])
    metrics = _metrics(o["metric"], o["optimize"] is not None)
    params = _params(*(o[k] for k in ("weights", "k", "phi", "gamma", "sigma", "segments", "window")))
    options = FuseOptions(method=o["method"], normalization=o["normalize"], params=params, depth=o["depth"],
                          train_qrels=None if o["train_qrels"] is None else str(o["train_qrels"]),
                          optimize=None if o["optimize"] is None else str(o["optimize"]), metric=metrics[0],
                          step=o["step"], folds=o["folds"], seed=o["seed"], convention=Preset(o["convention"]).value,
                          allow_overlap=o["allow_overlap"])
    _run(o["runs"], output, options, fmt_name, o["tag"], o["overwrite"], o["compare"], o["qrels"], metrics,
         o["json_out"])


def _metrics(metric: list[str] | None, optimizing: bool) -> list[str]:
    from rankcli.core.metrics import parse_metrics

    specs = [str(s) for s in parse_metrics(metric or ["ndcg@10"])]
    if optimizing and len(specs) != 1:
        raise UsageError(f"--optimize chooses by one metric, got {len(specs)} ({', '.join(specs)})")
    return specs


def _run(runs, output, options, fmt_name, tag, overwrite, compare, qrels, metrics, json_out) -> None:
    from rankcli.cli._common import log, print_json, stdout_console
    from rankcli.fuse import fuse_files, render

    if compare and str(output) == "-":
        raise UsageError("--compare reads the fused run after writing it: give -o a file name")
    if qrels is not None and not compare:
        raise UsageError("--qrels judges the runs for --compare; add --compare (training judgments: --train-qrels, "
                         "the search's: --optimize)")
    result = fuse_files(runs, output, options, fmt=fmt_name, tag=tag, overwrite=overwrite)
    for note in result.notes:
        log(f"note: {note}")
    report = None
    if compare:
        from rankcli.core.metrics import Convention
        from rankcli.fuse.comparing import compare_fused

        report = compare_fused(runs, str(output), qrels=None if qrels is None else str(qrels), metrics=metrics,
                               convention=Convention.preset(options.convention), seed=options.seed)
        for note in report.notes:
            log(note)
    if json_out:
        print_json(render.result_dict(result, report))
        return
    log(render.summary(result))
    console = stdout_console()
    if result.optimization is not None:
        console.print(f"chosen: {render.format_params(result.params)} "
                      f"({result.optimization.metric} {result.optimization.means[result.optimization.best]:.4f})")
        console.print(render.search_table(result.optimization))
        if result.optimization.folds:
            console.print(render.folds_table(result.optimization))
    if report is not None:
        from rankcli.compare import render as compare_render

        console.width = 1000
        console.print(compare_render.compare_table(report))
