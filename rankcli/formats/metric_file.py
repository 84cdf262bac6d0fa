"""The per-query metric file: one row per query, ``qid`` and one float64 column per metric.

``rankcli eval --per-query`` writes it and ``rankcli compare`` reads it (the experiment's per-fold query files have
the same layout). Layout:

- ``qid``: int64, or string for TREC query ids that are not integers; one row per query (a repeated qid is an error);
- one float64 column per metric, named as rankcli names metrics (``ndcg@10``, ``map``); NaN marks a query without a
  value (skipped under ``no_relevant=skip``); an infinite value is refused when read;
- footer: ``rankcli.kind = per-query`` (:data:`KIND`), ``rankcli.convention`` (the metric convention as a JSON object,
  when known), ``rankcli.metrics`` (the metric columns, a JSON list) and whatever the writer adds (``source``, ...).

A Parquet file is also taken as a metric file when it has neither a ``label`` nor a ``score`` column (a file written
by another tool).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rankcli.errors import SchemaError

#: The footer ``rankcli.kind`` of a per-query metric file.
KIND = "per-query"


@dataclass
class MetricFile:
    """What :func:`read_metric_file` returns: the rows in file order."""

    qids: np.ndarray                 # (n_queries,) int64, or str for TREC query ids
    values: dict[str, np.ndarray]    # column -> (n_queries,) float64, NaN = no value
    metadata: dict[str, str]         # the footer's rankcli.* keys, without the prefix (convention as JSON text)


def is_metric_file(columns: Sequence[str], metadata: dict[str, str]) -> bool:
    """Whether a Parquet file with these columns and footer is a per-query metric file (rather than a run).

    Parameters
    ----------
    columns : the file's column names. metadata : its footer (:func:`rankcli.formats.parquet.read_metadata`).
    """
    return metadata.get("kind") == KIND or ("score" not in columns and "label" not in columns)


def write_metric_file(path: Path | str, qids, values: dict[str, np.ndarray], *, convention: dict | None = None,
                      extra: dict | None = None, overwrite: bool = False) -> None:
    """Write a per-query metric file atomically.

    Parameters
    ----------
    path : the file to write.
    qids : (n_queries,) query ids: integers are written as int64, anything else as strings.
    values : metric name -> (n_queries,) values (NaN where a query has none), written as float64 in this order.
    convention : the metric convention (``Convention.as_dict()``), recorded in the footer so that readers can check
        that the files they compare were evaluated alike; None when unknown.
    extra : more footer keys (``source``, ...), after ``kind``, ``convention`` and ``metrics``.
    overwrite : replace an existing file (one rankcli wrote).
    """
    import pyarrow as pa

    from rankcli.formats.parquet import write_table

    qids = np.asarray(qids)
    qcol = pa.array(qids, pa.int64()) if np.issubdtype(qids.dtype, np.integer) else pa.array(
        [str(q) for q in qids.tolist()], pa.string())
    columns = {"qid": qcol}
    for name, v in values.items():
        columns[name] = pa.array(v, pa.float64())
    meta: dict[str, object] = {"kind": KIND}
    if convention is not None:
        meta["convention"] = json.dumps(convention)
    meta["metrics"] = list(values)
    meta.update(extra or {})
    write_table(path, pa.table(columns), metadata=meta, overwrite=overwrite, query_aligned=False)


def read_metric_file(path: Path | str, columns: Sequence[str]) -> MetricFile:
    """Read ``qid`` and the metric ``columns`` of a per-query metric file (their presence is the caller's check).

    Parameters
    ----------
    path : the file. columns : the metric columns to read, as float64.

    Raises
    ------
    SchemaError : a qid that is neither integer nor string, a query on two rows, a non-numeric or infinite value.
    """
    import pyarrow as pa

    from rankcli.formats import parquet

    table = parquet.read_table(path, ["qid", *columns])
    qcol = table.column("qid")
    if pa.types.is_integer(qcol.type):
        qids = parquet.qids_as_int64(path, qcol)  # a uint64 id beyond int64 is refused, never wrapped
    elif pa.types.is_string(qcol.type) or pa.types.is_large_string(qcol.type):
        qids = np.asarray(qcol.to_pylist(), dtype=str)   # TREC query ids
    else:
        raise SchemaError(f"{path}: column qid must be integer or string, got {qcol.type}")
    uniq, counts = np.unique(qids, return_counts=True)
    if (counts > 1).any():
        raise SchemaError(f"{path}: query {uniq[np.argmax(counts > 1)]} appears in more than one row; a "
                          "per-query metric file has one row per query")
    values = {}
    for m in columns:
        col = table.column(m)
        try:
            values[m] = col.to_numpy(zero_copy_only=False).astype(np.float64)
        except (TypeError, ValueError):
            raise SchemaError(f"{path}: column {m} must be numeric, got {col.type}") from None
        infinite = np.isinf(values[m])
        if infinite.any():  # NaN marks a query without a value; an infinite metric is no value at all
            i = int(np.flatnonzero(infinite)[0])
            raise SchemaError(f"{path}: column {m} of query {qids[i]} is {values[m][i]}, not a metric value (NaN marks "
                              "a query without one)")
    return MetricFile(qids, values, parquet.read_metadata(path))
