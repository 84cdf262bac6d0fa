"""Evaluate a run: NDCG@k, DCG@k, ERR@k, MRR, MAP@k, precision@k, recall@k and trec_eval's measures, under an
explicit convention.

Inputs (one of):

  rankcli eval RUN.parquet                 a run with columns qid, label, score (rows of a query contiguous)
  rankcli eval --qrels QRELS --run RUN     a TREC run ("qid Q0 docid rank score tag") scored against TREC qrels
                                           ("qid iter docid rel"), as trec_eval does: documents missing from the
                                           qrels are not relevant at any threshold (-l 0 included; one below 0 is
                                           exit 2) and of gain 0, and relevant documents missing from the run still
                                           count in the ideal DCG and in R (recall, MAP); only queries both in the
                                           run and in the qrels are evaluated. A run that shares no document id with
                                           its qrels is exit 3.
  rankcli eval DATA.parquet --model DIR    score a dataset with a model from `rankcli train`, then evaluate

Metrics: --metric ndcg@5 --metric map; `--metric ndcg@1,3,5,10` is shorthand for four cutoffs; `k` omitted means the
whole list. Names: ndcg, dcg, err, mrr (rr), map (ap), precision (p), recall (r).

Convention (stated in every report): --convention paper (exponential gain 2^y-1, queries without a relevant document
skipped, ties in input order; the default for Parquet input), lightgbm (such queries score 1), sklearn (linear gain,
such queries score 0, ties averaged over their permutations), trec (trec_eval's: linear gain, such queries score 0,
equal scores ordered by docid descending in byte order; the default for a TREC run). --gain, --no-relevant, --ties,
--threshold and --max-grade override single parts. For ndcg/dcg/err a query has no relevant document when no label
is positive (ideal DCG 0); for mrr, map, precision and recall when no label reaches --threshold. Under the docid tie
rule the documents of a Parquet run are named as TREC files name them: its docid column, else <qid>-<row>.

trec_eval names and options are accepted as typed: -m P.5,10 -m ndcg_cut.10 -m official -m all_trec, P_5, map_cut_10,
recip_rank, bpref, Rprec, ...; -q -c -l -J -M as in trec_eval; --format trec_eval prints its exact layout
(docs/trec_eval.md). Sums (num_ret, num_rel, ...) and geometric means (gm_map) are summarised as trec_eval does.

Output: a table of means with the number of queries evaluated and skipped (sums and counts such as num_ret, and
geometric means, are labelled as such); --json (--format json) prints
{"convention": {...}, "queries": N, "skipped": K, "queries_without_judged": J, "metrics": {...}}, J counting the
evaluated queries of a TREC run none of whose ranked documents is in the qrels (noted under the table too);
--per-query OUT.parquet writes one row per query, a column per metric.

Example: rankcli eval run.parquet --metric ndcg@1,3,5,10 --metric map --json
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from rankcli.cli import options as opt
from rankcli.cli.options import Gain, NoRelevant, Preset, Ties
from rankcli.errors import UsageError
from rankcli.formats.atomic import kinds, model_files

NAME = "eval"
SHORT_HELP = "Evaluate a run: NDCG@k and other ranking metrics."
DEFAULT_METRICS = ["ndcg@1,3,5,10"]
#: Extra arguments reach the command, so that trec_eval's order (``eval QRELS RUN``) is told where to go.
CONTEXT_SETTINGS = {"allow_extra_args": True}


class Format(str, Enum):
    """``--format``: a rich table, JSON, or trec_eval's own text layout."""

    table = "table"
    json = "json"
    trec_eval = "trec_eval"


# The options that take more than a line to declare, named here so that the signature of `command` reads as the list
# of its options, in the order --help shows them.
_RUN = typer.Argument(help="Parquet run (qid, label, score); with --model, the dataset to score (Parquet or SVMlight "
                      "text); with --qrels, a TREC run.", show_default=False)
_METRIC = opt.metric("Metric to compute, repeatable; comma lists and cutoff lists like ndcg@1,3,5,10. rankcli's names "
                     "(ndcg@10, p@5, mrr, bpref, success@1) or trec_eval's as typed (P_5, ndcg_cut.10, P.5,10, "
                     "recip_rank, Rprec) and its sets official and all_trec",
                     default="ndcg@1,3,5,10; official with --format trec_eval")
_QRELS = typer.Option(help="TREC qrels (qid iter docid rel). Documents missing from it are not relevant (gain 0, at "
                      "any threshold >= 0); judged documents missing from the run still count in the ideal DCG and in "
                      "R, as in trec_eval.", show_default=False)
_TREC_RUN = typer.Option("--run", help="TREC run (qid Q0 docid rank score tag) to score against --qrels.",
                         show_default=False)
_MODEL = typer.Option(help="Model directory from `rankcli train`: score the dataset RUN with it, then evaluate.",
                      show_default=False)
_FORMAT = typer.Option("--format", help="table (default), json (as --json) or trec_eval (trec_eval's exact layout; "
                       "default metrics then its 'official' set).", show_default=False)
_BY_QUERY = typer.Option("--by-query", "-q", help="--format trec_eval: print each query's values before the summary "
                         "(trec_eval's -q).")
_COMPLETE = typer.Option("--complete", "-c", help="TREC runs: also score the judged queries absent from the run (0; "
                         "num_rel counts their relevant documents), averaging over every qrels query (trec_eval's "
                         "-c).")
_JUDGED_ONLY = typer.Option("--judged-only", "-J", help="TREC runs: drop retrieved documents that are not judged in "
                            "the qrels before ranking (trec_eval's -J).")
_MAX_DOCS = typer.Option("--max-docs", "-M", min=1, help="TREC runs: keep only the first N documents of each query, in "
                         "trec_eval's order (trec_eval's -M).", show_default=False)
_PER_QUERY = typer.Option("--per-query", help="Write one row per query (qid and a column per metric) to this Parquet "
                          "file.", show_default=False, metavar="PATH")


def command(
    ctx: typer.Context,
    run: Annotated[Path | None, _RUN] = None,
    metric: Annotated[list[str] | None, _METRIC] = None,
    qrels: Annotated[Path | None, _QRELS] = None,
    trec_run: Annotated[Path | None, _TREC_RUN] = None,
    model: Annotated[Path | None, _MODEL] = None,
    convention: Annotated[Preset | None, opt.convention(default="trec for a TREC run, paper otherwise")] = None,
    gain: Annotated[Gain | None, opt.gain()] = None,
    no_relevant: Annotated[NoRelevant | None, opt.no_relevant()] = None,
    ties: Annotated[Ties | None, opt.ties()] = None,
    threshold: Annotated[float | None, opt.threshold(trec_eval_short=True)] = None,
    max_grade: Annotated[float | None, opt.max_grade()] = None,
    json_out: Annotated[bool, opt.json_flag("the result", note=" (--format json)")] = False,
    output_format: Annotated[Format | None, _FORMAT] = None,
    by_query: Annotated[bool, _BY_QUERY] = False,
    complete: Annotated[bool, _COMPLETE] = False,
    judged_only: Annotated[bool, _JUDGED_ONLY] = False,
    max_docs: Annotated[int | None, _MAX_DOCS] = None,
    per_query: Annotated[str | None, _PER_QUERY] = None,
    overwrite: Annotated[bool, opt.overwrite("--per-query file")] = False,
) -> None:
    _no_extra_arguments(run, ctx.args)
    run, trec_run = _inputs(run, trec_run, qrels, model, complete=complete, judged_only=judged_only,
                            max_docs=max_docs)
    fmt = _format(json_out, output_format, by_query)
    from rankcli.runtime.startup import import_numpy_single_threaded_blas

    import_numpy_single_threaded_blas()  # no linear algebra here: OpenBLAS's idle threads would spin on a core
    from rankcli import evaluate
    from rankcli.core.metrics import parse_metrics

    specs = parse_metrics(metric or (["official"] if fmt == Format.trec_eval else DEFAULT_METRICS))
    if run is not None and model is None and not evaluate.is_parquet(run):
        raise evaluate.not_parquet_error(run, f": rankcli eval --qrels QRELS --run {run}")
    # trec_eval's layout means trec_eval's conventions, whatever the input (a Parquet run too)
    conv = _convention(trec_run is not None or fmt == Format.trec_eval, convention, gain, no_relevant, ties,
                       threshold, max_grade)
    if per_query is not None:
        per_query = _per_query_path(per_query, overwrite, [run, qrels, trec_run], model)
    if model is not None:
        from rankcli.runtime.startup import import_lightgbm_lean

        import_lightgbm_lean()  # as predict: without LightGBM's scikit-learn/pandas integrations (~1.5 s less)
    report = evaluate.evaluate_input(trec_run or _model_data(run, model), specs, conv, qrels=qrels, model=model,
                                     max_docs=max_docs, judged_only=judged_only, complete=complete)
    if per_query is not None:
        evaluate.write_per_query(per_query, report, overwrite=overwrite)
    if fmt == Format.trec_eval and trec_run is None and convention is None:
        from rankcli.cli._common import log_implied_convention

        log_implied_convention(conv, "--format trec_eval prints trec_eval's measures, under its conventions",
                               "the table's default for this input is --convention paper")
    _render(report, fmt, by_query)


def _no_extra_arguments(run, extra: list[str]) -> None:
    """One run only; two arguments are trec_eval's order (QRELS RUN), which has its own command."""
    if len(extra) == 1:
        raise UsageError(f"unexpected extra argument ({extra[0]}): rankcli eval takes one run. For trec_eval's order "
                         f"QRELS RUN use rankcli trec_eval {run} {extra[0]} (or rankcli eval --qrels {run} --run "
                         f"{extra[0]})")
    if extra:
        raise UsageError(f"unexpected extra arguments ({' '.join(extra)}): rankcli eval takes one run")


def _inputs(run, trec_run, qrels, model, *, complete: bool, judged_only: bool, max_docs) -> tuple:
    """``(parquet_run, trec_run)`` from the command line (a TREC run may be given as RUN with --qrels); a combination
    that names no input, or two, or trec_eval's options without a TREC run is a usage error."""
    if trec_run is not None and run is not None and qrels is not None:
        raise UsageError("give the TREC run either as RUN or as --run, not both")
    if qrels is not None and trec_run is None:
        trec_run, run = run, None
        if trec_run is None:
            raise UsageError("--qrels needs a TREC run: rankcli eval --qrels QRELS --run RUN")
    if trec_run is not None and qrels is None:
        raise UsageError("--run is a TREC run and needs --qrels QRELS; a Parquet run is given as RUN")
    if run is None and trec_run is None:
        raise UsageError("nothing to evaluate: give a Parquet run (rankcli eval RUN.parquet), a TREC run with "
                         "--qrels QRELS --run RUN, or a dataset with --model MODEL_DIR")
    if model is not None and trec_run is not None:
        raise UsageError("--model scores a Parquet dataset; it cannot be combined with --qrels/--run")
    if trec_run is None:
        for flag, given in (("-c (--complete)", complete), ("-J (--judged-only)", judged_only),
                            ("-M (--max-docs)", max_docs is not None)):
            if given:
                raise UsageError(f"{flag} applies to a TREC run scored against qrels: --qrels QRELS --run RUN")
    return run, trec_run


def _model_data(run, model):
    """RUN, or with ``--model`` the dataset it scores: SVMlight text is converted for this run, as the model's
    data (:func:`rankcli.cli._common.parquet_inputs`)."""
    if model is None:
        return run
    from rankcli.cli._common import parquet_inputs

    return parquet_inputs([run], model=model)[0]


def _format(json_out: bool, output_format: Format | None, by_query: bool) -> Format:
    if json_out and output_format is not None and output_format != Format.json:
        raise UsageError(f"--json and --format {output_format.value} cannot be used together")
    fmt = Format.json if json_out else (output_format or Format.table)
    if by_query and fmt != Format.trec_eval:
        raise UsageError("-q (--by-query) prints per-query lines in trec_eval's layout: add --format trec_eval; "
                         "for a file of per-query values use --per-query FILE")
    return fmt


def _convention(trec_input: bool, preset, gain, no_relevant, ties, threshold, max_grade):
    """The preset asked for (default: trec for a TREC run, else paper) with the single overrides applied."""
    from rankcli.core.metrics import Convention
    from rankcli.evaluate import default_convention

    name = preset.value if preset is not None else default_convention(trec_input)
    return Convention.preset(name).with_(
        gain=gain.value if gain else None, no_relevant=no_relevant.value if no_relevant else None,
        ties=ties.value if ties else None, relevance_threshold=threshold, max_grade=max_grade)


def _per_query_path(per_query: str, overwrite: bool, inputs: list, model) -> str:
    """The checked --per-query output path (never standard output, never an input)."""
    from rankcli.cli._common import prepare_output

    if per_query == "-":
        raise UsageError("--per-query -: standard output carries the table (or --json); give a file name")
    return prepare_output(per_query, overwrite=overwrite, inputs=[*inputs, *model_files(model)],
                          option="--per-query", example="per-query.parquet", file_kind=kinds.PER_QUERY)


def _render(report, fmt: Format, by_query: bool) -> None:
    """The report on standard output (notes on standard error): trec_eval's layout, JSON or a table."""
    from rankcli.cli._common import log, print_json, stdout_console
    from rankcli.evaluate import render

    if fmt != Format.table:
        for note in report.notes:
            log(f"note: {note}")
    if fmt == Format.trec_eval:
        out = sys.stdout.buffer  # bytes: an id is written as read, whatever PYTHONIOENCODING says
        for block in render.trec_eval_layout(report, queries=by_query):
            out.write(block.encode("utf-8", "surrogateescape"))
        out.flush()
    elif fmt == Format.json:
        print_json(render.eval_dict(report))
    else:
        stdout_console().print(render.eval_table(report))
