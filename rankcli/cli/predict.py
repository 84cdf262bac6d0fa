"""Score documents with a trained model.

Writes a run: a Parquet file with `qid`, `docid` (or `row`, the row number in DATA when it has no docid), `label`
(when DATA has labels) and `score`, rows in DATA's order; or with `--format trec` a TREC run file
(`qid Q0 docid rank score tag`, best first; ties in input order), each document named by its docid or, when DATA has
none, `<qid>-<row>` as `export --format trec-qrels` names it. The feature columns of DATA must be the model's
(exit 3 naming the difference).

Example: rankcli predict model test.parquet -o run.parquet
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from rankcli.cli import options as opt
from rankcli.formats.atomic import kinds, model_files

NAME = "predict"
SHORT_HELP = "Score documents with a trained model."


class RunFormat(str, Enum):
    """``--format``: the run file's format (:mod:`rankcli.formats.runs`)."""

    parquet = "parquet"
    trec = "trec"


def command(
    model_dir: Annotated[Path, typer.Argument(help="Model directory written by `rankcli train`.", show_default=False)],
    data: Annotated[Path, typer.Argument(help="Dataset to score (Parquet, or SVMlight text converted for the run).",
                                       show_default=False)],
    output: Annotated[str, opt.output("Run file to write; - for standard output (a TREC run, or Parquet into a pipe "
                                      "or file).")],
    fmt: Annotated[RunFormat, typer.Option("--format", help="parquet (qid, docid|row, label, score) or trec.")]
    = RunFormat.parquet,
    json_out: Annotated[bool, opt.json_flag("a summary")] = False,
    overwrite: Annotated[bool, opt.overwrite("run file")] = False,
    tag: Annotated[str | None, typer.Option(help="Run tag of a TREC run (default: the model directory's "
                                                    "name).", show_default=False)] = None,
) -> None:
    from rankcli.cli._common import log, parquet_inputs, prepare_output, print_json, stdout_taken

    trec = fmt.value == "trec"
    output = prepare_output(output, overwrite=overwrite, inputs=[data, *model_files(model_dir)], binary=not trec,
                            example="run.txt" if trec else "run.parquet",
                            file_kind=kinds.TREC_RUN if trec else kinds.RUN)
    stdout_taken(output, json_out)
    (data,) = parquet_inputs([data], model=model_dir)  # SVMlight text converted for this run, as the model's data
    from rankcli.runtime.startup import import_lightgbm_lean

    import_lightgbm_lean()  # without LightGBM's scikit-learn/pandas integrations (~1.5 s less)
    from rankcli.predict import predict_file

    summary = predict_file(model_dir, data, output, fmt=fmt.value, tag=tag, overwrite=overwrite)
    if json_out:
        print_json(summary)
    else:
        log(f"scored {summary['rows']} documents of {summary['queries']} queries -> {output}")
