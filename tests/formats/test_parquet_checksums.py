"""Parquet page checksums: every Parquet file rankcli writes carries them (pyarrow's ``write_page_checksum``) and every
read verifies them where a file has them (``page_checksum_verification``): a byte flipped in a data page is exit 3
naming the file, where it used to be read as data (27 values of f1 changed, ndcg@10 0.8629 for 0.8665)."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rankcli.dataset import Dataset
from rankcli.errors import InputError
from rankcli.formats import parquet
from tests.conftest import SAMPLE
from tests.conftest import run_main as run

PACKAGE = Path(__file__).resolve().parents[2] / "rankcli"


def flip_in_page(path: Path, column: str, group: int = 0) -> Path:
    """``path`` with one bit changed in the last byte of ``column``'s chunk in row group ``group``: the payload of
    its last data page (its header comes first), so that only a checksum can tell."""
    md = pq.ParquetFile(path).metadata
    chunk = md.row_group(group).column(pq.ParquetFile(path).schema_arrow.names.index(column))
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    data = bytearray(path.read_bytes())
    data[start + chunk.total_compressed_size - 1] ^= 0x04
    out = path.with_name("flipped-" + path.name)
    out.write_bytes(bytes(data))
    return out


def small_dataset(n_queries: int = 20) -> Dataset:
    rng = np.random.default_rng(7)
    qids = np.repeat(np.arange(n_queries, dtype=np.int64), 10)
    return Dataset(qids=qids, labels=rng.integers(0, 3, qids.shape[0]).astype(np.float64),
                   features=rng.random((qids.shape[0], 3)).astype(np.float32), feature_names=["f1", "f2", "f3"],
                   offsets=np.arange(0, qids.shape[0] + 1, 10, dtype=np.int64))


def _writers(tmp: Path):
    """One file from each way rankcli writes Parquet, and a column of it."""
    from rankcli.formats.metric_file import write_metric_file
    from rankcli.formats.runs import write_run
    from rankcli.formats.tables import write_columns

    ds = small_dataset()
    parquet.write_dataset(tmp / "dataset.parquet", ds)  # QueryAlignedWriter
    yield tmp / "dataset.parquet", "f2"
    write_run(tmp / "run.parquet", ds.qids, ds.features[:, 0].astype(np.float64), labels=ds.labels)
    yield tmp / "run.parquet", "score"
    write_metric_file(tmp / "per_query.parquet", np.arange(20), {"ndcg@10": np.linspace(0, 1, 20)})
    yield tmp / "per_query.parquet", "ndcg@10"  # write_table(query_aligned=False)
    write_columns(tmp / "table.parquet", {"feature": np.arange(50) * 1.5})
    yield tmp / "table.parquet", "feature"


def test_every_writer_writes_page_checksums_and_every_read_checks_them(tmp_path):
    for path, column in _writers(tmp_path):
        parquet.read_table(path)
        bad = flip_in_page(path, column)
        assert pq.read_table(bad).num_rows == pq.read_table(path).num_rows  # unverified, it reads as data
        with pytest.raises(InputError, match=rf"^{bad}: damaged: a page of the file does not match its checksum"):
            parquet.read_table(bad)


def test_a_flipped_byte_is_exit_3_for_the_commands(tmp_path, capsys):
    """A dataset convert wrote, one bit changed in a page of f1: every command that reads the page says so."""
    assert run(capsys, "convert", SAMPLE / "letor" / "test.txt", "-o", tmp_path / "d.parquet")[0] == 0
    bad = flip_in_page(tmp_path / "d.parquet", "f1")
    for command in (["export", bad, "-o", tmp_path / "d.txt"], ["split", bad, "-o", tmp_path / "f", "--folds", "3"],
                    ["simulate-clicks", bad, "-o", tmp_path / "c.parquet"],
                    ["train", bad, "-o", tmp_path / "m", "--trees", "1", "--threads", "1"]):
        status, _, err = run(capsys, *command)
        assert status == 3 and f"Error: {bad}: damaged: a page of" in err, (command, err)
    # a Parquet run with a page changed in its score column: eval reads the page
    from rankcli.formats.runs import write_run

    ds = small_dataset()
    write_run(tmp_path / "run.parquet", ds.qids, ds.features[:, 0].astype(np.float64), labels=ds.labels)
    status, _, err = run(capsys, "eval", flip_in_page(tmp_path / "run.parquet", "score"))
    assert status == 3 and "damaged: a page of the file does not match its checksum" in err


def test_the_row_group_readers_check_too(tmp_path):
    from rankcli.formats.feature_rows import ParquetFeatureRows

    with parquet.QueryAlignedWriter(tmp_path / "d.parquet", parquet.dataset_table(small_dataset()).schema,
                                    target_rows=50) as writer:
        writer.write(parquet.dataset_table(small_dataset()))
    bad = flip_in_page(tmp_path / "d.parquet", "f3", group=2)
    rows = ParquetFeatureRows(bad, ["f1", "f2", "f3"])
    rows.block(0, 100)  # row groups 0 and 1 are sound
    with pytest.raises(InputError, match=r"damaged: a page of row group 2 does not match"):
        rows.block(100, 150)
    with pytest.raises(InputError, match=r"damaged: a page of row group 2"):
        list(parquet.iter_row_groups(bad))
    flipped_label = flip_in_page(tmp_path / "d.parquet", "label", group=0)
    with pytest.raises(InputError, match=r"damaged: a page of row group 0"):
        parquet.labels_all_missing(flipped_label)


def test_files_without_checksums_still_read(tmp_path):
    table = parquet.dataset_table(small_dataset())
    pq.write_table(table, tmp_path / "plain.parquet")  # another tool's file: no checksums
    ds = parquet.read_dataset(tmp_path / "plain.parquet")
    assert np.array_equal(ds.features, small_dataset().features)


def _pq_calls() -> dict[str, list[tuple[Path, ast.Call]]]:
    """Every call ``pq.<name>(...)`` in the package (modules that import pyarrow.parquet only), by name."""
    out: dict[str, list] = {}
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        if "pyarrow.parquet" not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    isinstance(node.func.value, ast.Name) and node.func.value.id == "pq":
                out.setdefault(node.func.attr, []).append((path, node))
    return out


def test_no_writer_or_reader_goes_around_the_options():
    """Every ``pq.write_table`` / ``pq.ParquetWriter`` passes ``**WRITE_OPTIONS``; pages are read only through
    ``open_parquet`` (the two other ``ParquetFile`` opens read a footer's metadata)."""
    calls = _pq_calls()
    writers = calls.get("write_table", []) + calls.get("ParquetWriter", [])
    assert len(writers) == 5
    for path, call in writers:
        assert any(k.arg is None and getattr(k.value, "id", "") == "WRITE_OPTIONS" for k in call.keywords), path
    opens = [p.relative_to(PACKAGE).as_posix() for name in ("ParquetFile", "read_table", "ParquetDataset")
             for p, _ in calls.get(name, [])]
    assert sorted(opens) == ["formats/atomic/kinds.py", "formats/atomic/targets.py", "formats/parquet.py"]
    assert pa.__version__  # pyarrow >= 14 has both options
