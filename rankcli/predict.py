"""Scoring a dataset with a trained model and writing the run: what ``rankcli predict`` does. Library code: returns
what it did, never prints; the run file's layouts are :mod:`rankcli.formats.runs`'."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rankcli.dataset import Dataset


def predict_dataset(model_dir: Path | str, data: Path | str):
    """``(dataset, scores, model)``: the Parquet dataset at ``data`` (labels optional) scored by the model directory
    ``model_dir``; errors name the data file."""
    from rankcli.formats.parquet import read_dataset
    from rankcli.train import load_model

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
        from rankcli.core.groups import broadcast, order_within

        order = order_within(scores, ds.offsets)
        ranks = np.arange(order.shape[0], dtype=np.int64) - broadcast(ds.offsets[:-1], ds.offsets) + 1
        write_trec_run(path, ds.qids, scores, order, ranks, docids=ds.docids, tag=tag, source=source,
                       overwrite=overwrite)
        return
    write_parquet_run(path, ds.qids, scores, docids=ds.docids, labels=ds.labels, metadata=metadata,
                      overwrite=overwrite)


def predict_file(model_dir: Path | str, data: Path | str, output: Path | str, *, fmt: str = "parquet",
                 tag: str | None = None, overwrite: bool = False) -> dict:
    """Score the dataset at ``data`` with the model directory ``model_dir`` and write the run to ``output``.

    Parameters
    ----------
    model_dir, data : path
        As :func:`predict_dataset` takes them.
    output : path
        The run file, see :func:`write_run`.
    fmt : "parquet" or "trec"
        The run's format.
    tag : str, optional
        The TREC run tag (default: the model directory's name).
    overwrite : bool
        Replace an existing file that rankcli wrote.

    Returns
    -------
    dict
        The summary ``{"run", "format", "rows", "queries", "model"}`` that ``predict --json`` prints.
    """
    ds, scores, model = predict_dataset(model_dir, data)
    write_run(output, ds, scores, fmt=fmt, tag=tag or Path(model_dir).resolve().name, overwrite=overwrite,
              source=str(data),
              metadata={"model": str(model_dir), "loss": model.info.get("loss", {}).get("name"), "data": str(data)})
    return {"run": str(output), "format": fmt, "rows": ds.n_rows, "queries": ds.n_queries, "model": str(model_dir)}
