"""Export a Parquet dataset back to text: SVMlight/LETOR or TREC qrels.

  rankcli export data.parquet -o data.txt --format svmlight      `<label> qid:<q> <i>:<v> ... # docid = X`
  rankcli export data.parquet -o data.qrels --format trec-qrels  `qid 0 docid label`

SVMlight: zero features are omitted (the last feature is written once, on the first line, so that converting the file
back gives the same columns); values are written in the shortest form that reads back to the same float32, so
convert -> export -> convert reproduces the same Parquet content. A comment column is written after `#`, else a docid
column as `# docid = X`. TREC qrels: the docid column, or `<qid>-<row>` (row = the 0-based row number in the dataset)
when there is none, the names `predict --format trec` gives the same rows (a docid that a TREC line cannot hold, empty
or with whitespace, is exit 3). Written atomically, row group by row group; an existing target needs --overwrite.
`--json` prints {"input", "output", "format", "rows", "seconds"} to stdout.
"""

from __future__ import annotations

import time
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from rankcli.cli import options as opt
from rankcli.errors import UsageError
from rankcli.formats.atomic import kinds

NAME = "export"
SHORT_HELP = "Export a dataset to SVMlight or TREC qrels."


class Format(str, Enum):
    """``--format``: the text format written."""

    svmlight = "svmlight"
    trec_qrels = "trec-qrels"


def command(
    data: Annotated[Path, typer.Argument(help="A Parquet dataset (from `rankcli convert`).", show_default=False)],
    output: Annotated[str, opt.output("The text file to write (- for standard output).")],
    format: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.svmlight,
    overwrite: Annotated[bool, opt.overwrite()] = False,
    json_output: Annotated[bool, opt.json_flag("a summary")] = False,
) -> None:
    from rankcli.cli._common import log, prepare_output, print_json, stdout_taken

    if (data / "model.txt").is_file() and (data / "rankcli.json").is_file():
        raise UsageError(f"{data}: a model directory, not a dataset; export writes datasets back as text. To write a "
                         f"model for a search engine: rankcli export-model {data} --target TARGET -o OUT")

    svmlight = format == Format.svmlight
    output = prepare_output(output, overwrite=overwrite, inputs=[data], file_kind=kinds.SVMLIGHT if svmlight else
                            kinds.QRELS, example="data.txt" if svmlight else "data.qrels")
    stdout_taken(output, json_output)
    start = time.perf_counter()
    if format == Format.svmlight:
        from rankcli.formats.svmlight_writer import write_svmlight

        rows = write_svmlight(output, data, overwrite=overwrite)
    else:
        from rankcli.formats.trec.write import write_qrels

        rows = write_qrels(output, data, overwrite=overwrite)
    log(f"wrote {rows:,} rows to {'standard output' if output == '-' else output}")
    if json_output:
        print_json({"input": str(data), "output": str(output), "format": format.value, "rows": rows,
                    "seconds": round(time.perf_counter() - start, 3)})

