"""Split a dataset into query-level folds (MSLR's layout) or one train/validation/test split, seeded.

  rankcli split data.parquet -o folds --folds 5          folds/Fold1 .. Fold5/{train,vali,test}.parquet
  rankcli split data.parquet -o split --split 0.6,0.2,0.2   split/{train,vali,test}.parquet
  rankcli split data.parquet -o folds --folds 5 --group-by topic   rows sharing a topic stay in one part

--folds K deals the queries into parts S1..SK that differ by at most one query in size (the first n mod K parts hold
one more) and writes fold k in MSLR-WEB's rotation: it trains on the K-2 parts from S<k> on, validates on the next and
tests on the one after (Fold1 of 5 is S1,S2,S3 / S4 / S5), so every query is tested in exactly one fold.
--split draws one split of the query fractions train,validation,test, exactly as `experiment --split` draws trial 0
with the same --seed (no vali.parquet for a validation fraction of 0). `rankcli experiment OUTPUT --folds` reads
either output as it is.

--group-by COLUMN keeps the rows that share a value of COLUMN in one part, and with them their queries (queries
linked through shared values form one group); groups are dealt largest first, each to the part furthest below its
size, ties in a seeded random order. Every file keeps every column of DATA and records in its Parquet footer the
source (path and BLAKE2b digest), the seed, the method and its parts. The directory is written atomically; an existing
one is replaced only with --overwrite and only when it holds a previous split. `--json` prints a summary.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rankcli.cli import options as opt

NAME = "split"
SHORT_HELP = "Split a dataset by query into folds (MSLR layout) or one split."


def command(
    data: Annotated[Path, typer.Argument(help="A Parquet dataset (from `rankcli convert`).", show_default=False,
                                         metavar="DATA")],
    output: Annotated[str, opt.output("The directory to write.", metavar="DIR")],
    folds: Annotated[int | None, typer.Option("--folds", help="K folds in MSLR's rotation over K parts "
                                              "(K >= 3).", show_default=False, metavar="K")] = None,
    split: Annotated[str | None, typer.Option("--split", help="One split: query fractions train,validation,test, "
                                              "e.g. 0.6,0.2,0.2 (as experiment --split).", show_default=False)] = None,
    group_by: Annotated[str | None, typer.Option("--group-by", help="Keep rows sharing a value of this column "
                                                 "(e.g. a topic) in one part.", show_default=False,
                                                 metavar="COLUMN")] = None,
    seed: Annotated[int, opt.seed("the draw", result="files")] = 0,
    overwrite: Annotated[bool, opt.overwrite(text="Replace a previous split in DIR.")] = False,
    json_output: Annotated[bool, opt.json_flag("a summary")] = False,
) -> None:
    from rankcli.cli._common import log, prepare_output, print_json, stdout_console
    from rankcli.core.perturb import parse_split
    from rankcli.split import check_method, split_dataset

    fractions = parse_split(split) if split is not None else None
    check_method(folds, fractions)
    output = prepare_output(output, overwrite=overwrite, kind="split", inputs=[data])
    result = split_dataset(data, output, folds=folds, fractions=fractions, group_by=group_by, seed=seed,
                           overwrite=overwrite)
    names = [f"S{i + 1}" for i in range(len(result.part_queries))] if result.folds else ["train", "vali", "test"]
    sizes = ", ".join(f"{n} {q}" for n, q in zip(names, result.part_queries) if q or result.folds)
    grouped = f" in {result.groups} groups of {result.group_by}" if result.group_by else ""
    log(f"split: {result.queries} queries{grouped} of {data} into {sizes} (seed {seed}), {result.seconds:.2f} s; "
        f"wrote {output}/")
    if json_output:
        print_json(result.as_dict())
        return
    _print_files(result, stdout_console())


def _print_files(result, console) -> None:
    from rich.table import Table

    table = Table(title=f"{result.output}", title_justify="left")
    for col in ("file", "parts", "queries", "rows"):
        table.add_column(col, justify="left" if col in ("file", "parts") else "right")
    for f in result.files:
        parts = ",".join(f"S{p}" for p in f.parts) if result.folds else ""
        table.add_row(f.path, parts, f"{f.queries:,}", f"{f.rows:,}")
    console.print(table)
