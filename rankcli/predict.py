"""Scoring a dataset with a trained model and writing the run: what ``rankcli predict`` does. Library code: returns
what it did, never prints; the run file's layouts are :mod:`rankcli.formats.runs`'."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rankcli.core.groups import broadcast, order_within
from rankcli.dataset import Dataset
from rankcli.train import load_model
from rankcli.train.scoring import DEFAULT_BATCH_ROWS, open_scoring, score_batches


def predict_dataset(model_dir: Path | str, data: Path | str):
    """``(dataset, scores, model)``: the Parquet dataset at ``data`` (labels optional) scored by the model directory
    ``model_dir``; errors name the data file."""
    from rankcli.formats.parquet import read_dataset

    model = load_model(model_dir)
    ds = read_dataset(data, label_required=False)
    scores = model.predict(ds, what=str(data))
    return ds, scores, model


def write_run(path: Path | str, ds: Dataset, scores: np.ndarray, *, fmt: str = "parquet", tag: str = "rankcli",
              overwrite: bool = False, metadata: dict | None = None, source: str = "") -> None:
    """Write the run of ``scores`` over ``ds`` to ``path`` (:mod:`rankcli.formats.runs`).

    Parameters
    ----------
    path : path
        The run file (``-``: standard output).
    ds : Dataset
        The scored rows (qids, docids, labels).
    scores : (n_rows,) float
        The model's scores.
    fmt : "parquet" or "trec"
        Parquet (rows in ``ds``'s order) or a TREC run (each query best first, ties in input order).
    tag : str
        The TREC run tag.
    overwrite : bool
        Replace an existing file that rankcli wrote.
    metadata : dict, optional
        Parquet footer keys (where the run came from).
    source : str
        ``ds``'s file, named in errors about a docid a TREC line cannot hold.
    """
    from rankcli.formats.runs import write_run as write_parquet_run
    from rankcli.formats.runs import write_trec_run

    if fmt == "trec":
        order = order_within(scores, ds.offsets)
        ranks = np.arange(order.shape[0], dtype=np.int64) - broadcast(ds.offsets[:-1], ds.offsets) + 1
        write_trec_run(path, ds.qids, scores, order, ranks, docids=ds.docids, tag=tag, source=source,
                       overwrite=overwrite)
        return
    write_parquet_run(path, ds.qids, scores, docids=ds.docids, labels=ds.labels, metadata=metadata,
                      overwrite=overwrite)


def predict_file(model_dir: Path | str, data: Path | str, output: Path | str, *, fmt: str = "parquet",
                 tag: str | None = None, overwrite: bool = False, batch_rows: int = DEFAULT_BATCH_ROWS) -> dict:
    """Score the dataset at ``data`` with the model directory ``model_dir`` and write the run to ``output``, batch by
    batch (:func:`rankcli.train.scoring.score_batches`: the feature matrix is never whole in memory); the run is the one
    :func:`write_run` writes for the whole dataset, byte for byte.

    Parameters
    ----------
    model_dir, data : path
        As :func:`predict_dataset` takes them.
    output : path
        The run file, see :func:`write_run`; written atomically.
    fmt : "parquet" or "trec"
        The run's format.
    tag : str, optional
        The TREC run tag (default: the model directory's name).
    overwrite : bool
        Replace an existing file that rankcli wrote.
    batch_rows : int
        The largest batch of rows scored at once (whole queries; a longer query is scored alone).

    Returns
    -------
    dict
        The summary ``{"run", "format", "rows", "queries", "model"}`` that ``predict --json`` prints.
    """
    from rankcli.formats.parquet import labels_all_missing

    source = open_scoring(model_dir, data, by_batch=True)
    ds, model = source.index, source.model
    docids = "docid" in source.rows.columns
    if fmt == "trec":
        from rankcli.formats.runs import stream_trec_run, trec_run_lines

        with stream_trec_run(output, overwrite=overwrite) as write:
            for b in score_batches(source, batch_rows):
                order = order_within(b.scores, b.offsets)
                ranks = np.arange(order.shape[0], dtype=np.int64) - broadcast(b.offsets[:-1], b.offsets) + 1
                write(trec_run_lines(b.qids, b.scores, order, ranks, docids=b.docids,
                                     rows=np.arange(b.start, b.stop), tag=tag or Path(model_dir).resolve().name,
                                     source=str(data)))
    else:
        from rankcli.formats.runs import stream_run

        labels = not labels_all_missing(data)
        metadata = {"model": str(model_dir), "loss": model.info.get("loss", {}).get("name"), "data": str(data)}
        with stream_run(output, ds.offsets, docids=docids, labels=labels, metadata=metadata,
                        overwrite=overwrite) as run:
            for b in score_batches(source, batch_rows):
                run.write(b.qids, b.scores, docids=b.docids, labels=b.labels if labels else None)
    return {"run": str(output), "format": fmt, "rows": ds.n_rows, "queries": ds.n_queries, "model": str(model_dir)}
