"""The ``qid`` and ``label`` columns of a Parquet dataset, type-checked, without reading any feature."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from rankcli.errors import SchemaError
from rankcli.formats.arrow import column_to_numpy
from rankcli.formats.parquet import column_names, read_table, require_columns


class QueryLabels(NamedTuple):
    """A dataset's query ids (int64) and labels (float64) in file order, and the names of all its columns."""

    qids: np.ndarray
    labels: np.ndarray
    columns: list[str]


def read_query_labels(path: Path | str) -> QueryLabels:
    """Read ``qid`` and ``label`` of the dataset at ``path``: :class:`SchemaError` when one is missing, ``qid`` is
    not an integer column, ``label`` not a number column, or either has a missing value."""
    names = column_names(path)
    require_columns(path, names, ["qid", "label"])
    table = read_table(path, ["qid", "label"])
    qtype, ltype = table.schema.field("qid").type, table.schema.field("label").type
    if not pa.types.is_integer(qtype) or not (pa.types.is_integer(ltype) or pa.types.is_floating(ltype)):
        raise SchemaError(f"{path}: qid must be an integer column and label a number column, got {qtype} and {ltype}")
    if table.column("qid").null_count or table.column("label").null_count:
        raise SchemaError(f"{path}: qid and label must not have missing values")
    qids = column_to_numpy(table.column("qid")).astype(np.int64, copy=False)
    labels = column_to_numpy(table.column("label")).astype(np.float64, copy=False)
    return QueryLabels(qids, labels, names)
