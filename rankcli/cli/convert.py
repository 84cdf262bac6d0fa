"""Convert SVMlight/LETOR text to Parquet datasets (qid, label, optional docid, f1..fN float32, or float64 with
--float64).

Input lines: `<label> qid:<int> <index>:<value> ... # comment` (qid: and the comment optional), spaces or tabs, LF or
CRLF; blank and comment-only lines are skipped; absent features are 0.0. Labels may be real-valued (0.07). Files
without `qid:` take their queries from a LightGBM-style sidecar `<input>.query` (one group size per line, queries
numbered from 0) found next to the input, or named with --query-file. `# docid = X` comments fill a docid column;
--keep-comments also keeps the whole comment text in a comment column. `.gz`, `.bz2` and `.xz` inputs are
decompressed; `-` reads standard input.

Outputs:

  rankcli convert train.txt -o train.parquet             one file
  rankcli convert a.txt b.txt -o all.parquet             several files concatenated (OUTPUT ends in .parquet)
  rankcli convert Fold1/ -o fold1/                       a directory: fold1/train.parquet, vali.parquet, test.parquet
  rankcli convert train.txt vali.txt -o out/             several files, one OUTPUT/<name>.parquet each

All outputs of one run have the same feature columns: the largest index seen in any input, unless --num-features N.
Rows of a query must be contiguous: a qid that reappears after a different one is an error (--sort-queries sorts
by qid instead, stably, holding the whole input in memory). Parquet row groups end on query boundaries.

Feature logs: `--from ltr-log` reads the LTR plugins' logged feature values (the `_ltrlog` entries of search
responses), `--from solr-features` Solr's `[features]` output, each joined with the judgment list `--qrels` (TREC
qrels or RankLib's `grade qid:Q # docid`) into one Parquet dataset: `f1..fN` columns, the engine's feature names
in the footer (train records them, export-model writes them back). A feature the query did not match is NaN in an
LTR log (the plugins score it as missing).

  rankcli convert --from ltr-log log.jsonl --qrels judgments.txt -o train.parquet

Normalisation: `--normalize` per query (RankLib's default scope) cannot be exported to a search engine, which
scores one document at a time: convert with `--per dataset` for a model you will export (export-model folds it).

Streaming: memory does not grow with the input size. The output is written to a temporary file and renamed into
place; an existing target needs --overwrite. Bad input exits with status 3 and `Error: path:line: what, got 'token'`,
and leaves nothing behind. A summary is printed; --json prints it as JSON.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from rankcli.cli import options as opt
from rankcli.errors import UsageError
from rankcli.formats.atomic import STDOUT, check_stdout, expect_final_output, kinds, output_path

NAME = "convert"
SHORT_HELP = "Convert SVMlight/LETOR text to Parquet."


# The options that take more than a line to declare, named here so that the signature of `command` reads as the list
# of its options, in the order --help shows them.
_INPUTS = typer.Argument(help="SVMlight/LETOR text files (.gz/.bz2/.xz ok), - for standard input, or directories of "
                         "them.", show_default=False, metavar="INPUT...")
_OUTPUT = opt.output("Parquet file (- for standard output, not a terminal), or directory for several inputs (a "
                     "trailing / makes a directory of one input too).")
_QUERY_FILE = typer.Option("--query-file", help="Group sizes (one per line) for an input without qid: (default: "
                           "<input>.query).", show_default=False)
_ZERO_BASED = typer.Option("--zero-based", help="Feature indices start at 0 (index i becomes column f(i+1)).")
_NUM_FEATURES = typer.Option("--num-features", help="Number of feature columns (default: the largest index seen in "
                             "any input).", show_default=False)
_KEEP_COMMENTS = typer.Option("--keep-comments", help="Keep the text after # in a comment column.")
_SORT_QUERIES = typer.Option("--sort-queries", help="Sort rows by qid (stable) instead of requiring contiguous "
                             "queries; in memory.")
_NORMALIZE = typer.Option("--normalize", help="Normalise the features as RankLib's -norm does: zscore ((x - mean) / "
                          "sample std), minmax ((x - min) / (max - min); RankLib's linear) or sum (x / sum |x|); "
                          "recorded in the footer, and by train in the model, which then normalises raw data it "
                          "scores alike (formulas: docs/commands/convert.md).", show_default=False,
                          metavar="<zscore|minmax|sum>")
_PER = typer.Option("--per", help="--normalize within each query (RankLib's) or over the dataset (its statistics "
                    "recorded; a directory of outputs takes those of its train file). A model for a search engine "
                    "needs --per dataset: export-model refuses a per-query normalisation.",
                    metavar="<query|dataset>")
_FLOAT64 = typer.Option("--float64", help="Store the features as float64, the numbers LightGBM parses from the text "
                        "(a model trained on them is LightGBM's with precise_float_parser=true); the footer says so "
                        "and every command keeps them float64. Default float32: half the size; LightGBM's thresholds "
                        "then differ from its own in the digits beyond float32's 7.")
_BLOCK_BYTES = typer.Option("--block-bytes", hidden=True, help="Bytes read per block.")
_SOURCE = typer.Option("--from", help="The input's kind: svmlight (LETOR text), ltr-log (LTR plugin logs) or "
                       "solr-features (Solr's [features] output); the logs need --qrels.",
                       metavar="<svmlight|ltr-log|solr-features>")
_QRELS = typer.Option("--qrels", help="Judgments for --from ltr-log|solr-features: TREC qrels or RankLib's 'grade "
                      "qid:Q # docid'.", show_default=False)
_DASK = opt.dask("Convert the input files in parallel on a Dask cluster, one OUTPUT/<name>.parquet per input",
                 "Inputs and OUTPUT must be on a filesystem every worker sees.")


def command(
    inputs: Annotated[list[str], _INPUTS],
    output: Annotated[str, _OUTPUT],
    overwrite: Annotated[bool, opt.overwrite("output")] = False,
    query_file: Annotated[Path | None, _QUERY_FILE] = None,
    zero_based: Annotated[bool, _ZERO_BASED] = False,
    num_features: Annotated[int | None, _NUM_FEATURES] = None,
    keep_comments: Annotated[bool, _KEEP_COMMENTS] = False,
    sort_queries: Annotated[bool, _SORT_QUERIES] = False,
    normalize: Annotated[str | None, _NORMALIZE] = None,
    per: Annotated[str, _PER] = "query",
    float64: Annotated[bool, _FLOAT64] = False,
    json_output: Annotated[bool, opt.json_flag("the summary")] = False,
    block_bytes: Annotated[int, _BLOCK_BYTES] = 2 * 1024 * 1024,
    source: Annotated[str, _SOURCE] = "svmlight",
    qrels: Annotated[Path | None, _QRELS] = None,
    dask: Annotated[str | None, _DASK] = None,
) -> None:
    from rankcli.convert import ConvertOptions

    if block_bytes < 1:
        raise UsageError(f"--block-bytes must be positive, got {block_bytes}")
    if source != "svmlight" or qrels is not None:
        if float64:
            raise UsageError(f"--float64 is for SVMlight text; --from {source} stores its features as float32")
        return _convert_log(source, inputs, output, qrels, overwrite, json_output)
    from rankcli.cli._common import stdout_taken

    # The output's checks (an input, an existing target, --overwrite) are convert()'s, which knows the layout.
    as_directory = output.endswith("/")  # a trailing slash names a directory: OUTPUT/<name>.parquet
    if output == STDOUT:
        check_stdout(binary=True)
    target = STDOUT if output == STDOUT else output_path(output, directory=True)
    stdout_taken(target, json_output)
    if dask is not None and target == STDOUT:
        raise UsageError("--dask writes one output per input into a directory; -o - is not possible with it")
    expect_final_output(target)
    options = ConvertOptions(zero_based=zero_based, num_features=num_features, keep_comments=keep_comments,
                             sort_queries=sort_queries, query_file=query_file, block_bytes=block_bytes,
                             normalize=normalize, per=per, float64=float64)
    _render(_run(inputs, target, options, overwrite, dask, as_directory), target == STDOUT, json_output)


def _render(result, to_stdout: bool, json_output: bool) -> None:
    """The conversion's notes and summary (on stderr when the dataset went to standard output)."""
    from rankcli.cli._common import log, print_json, stderr_console, stdout_console, summary_table

    for note in result.notes:
        log(f"note: {note}")
    if json_output:
        print_json(result.as_dict())
        return
    summaries = {Path(f.output).name: f.summary for f in result.files}
    table = summary_table(summaries, title=f"{result.output} ({result.seconds:.2f} s)")
    (stderr_console() if to_stdout else stdout_console()).print(table)
    log(f"wrote {result.output}")


def _run(inputs: list[str], target, options, overwrite: bool, dask: str | None, as_directory: bool):
    """The conversion, on a Dask cluster (one task per input file, :mod:`rankcli.distributed`) or here."""
    from rankcli.cli._common import progress_bar
    from rankcli.convert import convert

    if dask is not None:
        from rankcli.distributed import convert_on_cluster, parse_dask_target, require_dask

        parse_dask_target(dask)
        require_dask()
        with progress_bar(None, "converting") as bar:
            return convert_on_cluster(dask, list(inputs), target, options, overwrite=overwrite,
                                      on_file=lambda r: bar.advance(1))
    with progress_bar(_input_bytes(inputs) or None, "converting") as bar:
        return convert(list(inputs), target, options, overwrite=overwrite, progress=bar, directory=as_directory)


def _input_bytes(inputs: list[str]) -> int:
    """The bytes of the uncompressed input files (the progress bar's total; 0 when unknown)."""
    total = 0
    for item in inputs:
        p = Path(item)
        if item != "-" and p.is_file() and p.suffix.lower() not in (".gz", ".bz2", ".xz"):
            total += os.path.getsize(p)
    return total


def _convert_log(source: str, inputs: list[str], output: str, qrels: Path | None, overwrite: bool,
                 json_output: bool) -> None:
    """``--from ltr-log|solr-features``: one log and its judgments into one dataset."""
    from rankcli.cli._common import log, prepare_output, print_json, stdout_console, summary_table
    from rankcli.export_model.logs import LOG_KINDS, convert_log

    if source not in LOG_KINDS + ("svmlight",):
        raise UsageError(f"--from: choose one of svmlight, {', '.join(LOG_KINDS)}, got {source!r}")
    if source == "svmlight" or qrels is None or len(inputs) != 1:
        raise UsageError("--from ltr-log|solr-features takes one LOG and --qrels JUDGMENTS (and --qrels only goes "
                         "with them)")
    target = prepare_output(output, overwrite=overwrite, inputs=[inputs[0], qrels], binary=True,
                            example="train.parquet", file_kind=kinds.DATASET)
    result = convert_log(source, inputs[0], str(qrels), target, overwrite=overwrite)
    for note in result.notes:
        log(f"note: {note}")
    if json_output:
        print_json(result.as_dict())
        return
    stdout_console().print(summary_table({Path(target).name: result.files[0].summary}, title=str(target)))

