"""SVMlight / LETOR text from a Parquet dataset: the lines built in C column by column, streamed by row group."""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rankcli.errors import InputError
from rankcli.formats.arrow import scalar, strings_array
from rankcli.formats.atomic import atomic_path, kinds
from rankcli.formats.feature_values import check_columns, table_dtype


def _feature_tokens(column: pa.Array, number: int, storage: pa.DataType) -> pa.Array:
    """``"<number>:<value>"`` where the value is non-zero, null where it is zero (SVMlight omits zeros); the value as
    the shortest text that reads back as the same number of the ``storage`` type (float32, or float64)."""
    values = column.cast(storage) if column.type != storage else column
    text = pc.binary_join_element_wise(scalar(f"{number}:"), values.cast(pa.string()), scalar(""))
    return pc.if_else(pc.not_equal(values, scalar(0, storage)), text, scalar(None))


def svmlight_lines(table: pa.Table, feature_cols: list[str], *, width: int | None = None,
                   force_width: bool = False) -> pa.Array:
    """The SVMlight lines (with a trailing newline each) of a dataset table, built in C column by column.

    Zero features are omitted. With ``force_width`` the last feature is written on the first line even when it is zero,
    so that reading the file back gives the same number of columns.
    """
    from rankcli.formats.parquet import FEATURE_COLUMN

    storage = pa.from_numpy_dtype(table_dtype(table))  # float64 storage is written with all its digits
    n = table.num_rows
    parts = [table.column("label").combine_chunks().cast(pa.float64()).cast(pa.string())]
    if "qid" in table.column_names:
        parts.append(pc.binary_join_element_wise(scalar("qid:"), table.column("qid").combine_chunks().cast(pa.string()),
                                                  scalar("")))
    numbers = [int(FEATURE_COLUMN.match(c).group(1)) for c in feature_cols]
    for name, number in zip(feature_cols, numbers):
        parts.append(_feature_tokens(table.column(name).combine_chunks(), number, storage))
    if force_width and n and numbers:
        last = numbers[-1]
        forced = strings_array([f"{last}:0".encode()] + [None] * (n - 1))
        parts[-1] = pc.coalesce(parts[-1], forced)
    if "comment" in table.column_names:
        comment = table.column("comment").combine_chunks()
        parts.append(pc.binary_join_element_wise(scalar("# "), comment, scalar("")))
    elif "docid" in table.column_names:
        parts.append(pc.binary_join_element_wise(scalar("# docid = "), table.column("docid").combine_chunks(),
                                                  scalar("")))
    joined = pc.binary_join_element_wise(*parts, scalar(" "), null_handling="skip")
    return pc.binary_join_element_wise(joined, scalar("\n"), scalar(""))


def write_lines(stream: BinaryIO, lines: pa.Array) -> None:
    """Write a string array's characters as they are (each element already ends with a newline)."""
    lines = lines.combine_chunks() if isinstance(lines, pa.ChunkedArray) else lines
    if len(lines) == 0:
        return
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32)[lines.offset:lines.offset + len(lines) + 1]
    data = lines.buffers()[2]
    stream.write(memoryview(data)[int(offsets[0]):int(offsets[-1])])


def write_svmlight(path: str | Path, dataset_path: str | Path, *, overwrite: bool = False) -> int:
    """Export a Parquet dataset (data model) to SVMlight text, streaming row group by row group; returns the rows.

    ``qid:`` is written when the dataset has a qid column, ``# <comment>`` (or ``# docid = X``) when it has one.
    """
    from rankcli.formats.parquet import column_names, feature_columns, iter_row_groups, require_columns

    names = column_names(dataset_path)
    require_columns(dataset_path, names, ["label"])
    fcols = feature_columns(names)
    rows = 0
    with atomic_path(path, overwrite, file_kind=kinds.SVMLIGHT) as tmp, open(tmp, "wb") as out:
        for table in iter_row_groups(dataset_path):
            check_comment_text(table, dataset_path, rows)
            check_columns(table, fcols, dataset_path, rows)  # the float32 cast below would make 1e300 inf
            write_lines(out, svmlight_lines(table, fcols, force_width=rows == 0))
            rows += table.num_rows
    return rows


#: What a docid written as ``# docid = X`` cannot hold: the reader takes the docid up to the first blank (RE2's
#: ``\S+``, ASCII whitespace), so it would come back cut or empty.
_DOCID_UNWRITABLE = r"^$|[\t\n\x0b\x0c\r ]"


def check_comment_text(table: pa.Table, source: str | Path, first_row: int = 0) -> None:
    """Refuse (exit 3, naming the row) the text an SVMlight line cannot carry back: a comment with a line break (it
    would end the line), or, when the docid is written, a docid that is empty or has whitespace (it would not read
    back the same)."""
    if "comment" in table.column_names:
        column, pattern, why = table.column("comment"), r"[\n\r]", "a line break, which would end the SVMlight line"
        what = "comment"
    elif "docid" in table.column_names:
        column, pattern, what = table.column("docid"), _DOCID_UNWRITABLE, "docid"
        why = "whitespace (or nothing), and `# docid = X` reads X up to the first blank: it would not read back"
    else:
        return
    bad = pc.match_substring_regex(column, pattern)  # null for a null docid: skipped by any()
    if not pc.any(bad).as_py():
        return
    i = int(pc.index(bad.fill_null(False), True).as_py())  # the error path: a Python literal may import pandas
    qid = f" (qid {table.column('qid')[i].as_py()})" if "qid" in table.column_names else ""
    raise InputError(f"{source}: row {first_row + i}{qid}: {what} {column[i].as_py()!r} cannot be written to "
                     f"SVMlight text: it contains {why}")
