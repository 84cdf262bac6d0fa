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

NAME = "predict"
SHORT_HELP = "Score documents with a trained model."


class RunFormat(str, Enum):
    parquet = "parquet"
    trec = "trec"


def predict_dataset(model_dir: Path, data: Path):
    """(dataset, scores, model) for a model directory and a Parquet dataset; errors name the data file."""
    from rankcli.formats.parquet import read_dataset
    from rankcli.startup import import_lightgbm_lean
    from rankcli.train import load_model

    import_lightgbm_lean()
    model = load_model(model_dir)
    ds = read_dataset(data, label_required=False)
    scores = model.predict(ds, what=str(data))
    return ds, scores, model


def write_run(path: Path, ds, scores, *, fmt: str = "parquet", tag: str = "rankcli", overwrite: bool = False,
              metadata: dict | None = None, source: str = "") -> None:
    import numpy as np
    import pyarrow as pa

    from rankcli.formats.atomic import atomic_path
    from rankcli.formats.parquet import write_table

    if fmt == "trec":
        from rankcli.core.groups import broadcast, order_within

        perm = order_within(scores, ds.offsets)
        rank = np.arange(perm.shape[0], dtype=np.int64) - broadcast(ds.offsets[:-1], ds.offsets) + 1
        from rankcli.formats.trec import document_names

        # The docid, else <qid>-<row>: the names `export --format trec-qrels` gives the same rows.
        docs = np.array(document_names(ds.qids, ds.docids, source=source).to_pylist(), dtype=object)
        tag = "".join(tag.split()) or "rankcli"
        with atomic_path(path, overwrite) as tmp, open(tmp, "w") as fh:
            for q, d, r, s in zip(ds.qids[perm].tolist(), docs[perm].tolist(), rank.tolist(),
                                  np.asarray(scores, dtype=np.float64)[perm].tolist()):
                fh.write(f"{q} Q0 {d} {r} {s!r} {tag}\n")
        return
    columns = {"qid": pa.array(ds.qids, pa.int64())}
    if ds.docids is not None:
        columns["docid"] = pa.array(ds.docids, pa.string())
    else:
        columns["row"] = pa.array(np.arange(ds.n_rows, dtype=np.int64))
    if not np.all(np.isnan(ds.labels)):
        columns["label"] = pa.array(ds.labels, pa.float64())
    columns["score"] = pa.array(np.asarray(scores, dtype=np.float64))
    write_table(path, pa.table(columns), metadata={"kind": "run", **(metadata or {})}, overwrite=overwrite)


def command(
    model_dir: Annotated[Path, typer.Argument(help="Model directory written by `rankcli train`.", show_default=False)],
    data: Annotated[Path, typer.Argument(help="Dataset to score (Parquet).", show_default=False)],
    output: Annotated[str, typer.Option("--output", "-o", help="Run file to write; - for standard output (a TREC "
                                        "run, or Parquet into a pipe or file).", show_default=False,
                                        metavar="PATH")],
    fmt: Annotated[RunFormat, typer.Option("--format", help="parquet (qid, docid|row, label, score) or trec.")]
    = RunFormat.parquet,
    json_out: Annotated[bool, typer.Option("--json", help="Print a summary as JSON on stdout.")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing run file.")] = False,
    tag: Annotated[str | None, typer.Option(help="Run tag of a TREC run (default: the model directory's "
                                                    "name).", show_default=False)] = None,
) -> None:
    from rankcli.cli._common import log, prepare_output, print_json, stdout_taken
    from rankcli.formats.atomic import model_files

    output = prepare_output(output, overwrite=overwrite, inputs=[data, *model_files(model_dir)],
                            binary=fmt.value == "parquet", example="run.txt" if fmt.value == "trec" else "run.parquet")
    stdout_taken(output, json_out)
    ds, scores, model = predict_dataset(model_dir, data)
    write_run(output, ds, scores, fmt=fmt.value, tag=tag or Path(model_dir).resolve().name, overwrite=overwrite,
              source=str(data),
              metadata={"model": str(model_dir), "loss": model.info.get("loss", {}).get("name"), "data": str(data)})
    summary = {"run": str(output), "format": fmt.value, "rows": ds.n_rows, "queries": ds.n_queries,
               "model": str(model_dir)}
    if json_out:
        print_json(summary)
    else:
        log(f"scored {ds.n_rows} documents of {ds.n_queries} queries -> {output}")
