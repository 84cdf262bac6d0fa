"""rankcli.convert as a library: the checks before anything is read, inputs, output names, layouts, --sort-queries.

End-to-end behaviour (exit statuses, exact messages, stdin, interrupts) is tested in tests/cli/test_convert.py.
"""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from rankcli.convert import (
    ConvertOptions,
    check_options,
    convert,
    directory_inputs,
    expand_inputs,
    output_name,
    output_names,
)
from rankcli.errors import InputError, UsageError


def test_options_are_checked_before_any_input_is_read():
    with pytest.raises(UsageError, match="^no input given$"):
        check_options([], ConvertOptions())
    with pytest.raises(UsageError, match="^--num-features must be at least 1, got 0$"):
        check_options(["missing.txt"], ConvertOptions(num_features=0))
    with pytest.raises(UsageError, match=r"^--num-features 10000000000: at most \d+"):
        check_options(["missing.txt"], ConvertOptions(num_features=10**10))
    with pytest.raises(UsageError, match=r"^standard input \(-\) can be given only once$"):
        check_options(["-", "-"], ConvertOptions())
    check_options(["missing.txt", "-"], ConvertOptions(num_features=5))  # files are not looked at here


def test_output_names_drop_compression_and_text_suffixes():
    from pathlib import Path

    assert [output_name(Path(p)) for p in ("a/train.txt.gz", "vali.libsvm", "test", "x.csv", "Fold1.tar.xz")] == \
        ["train", "vali", "test", "x.csv", "Fold1.tar"]
    assert output_names(["a/train.txt", "-"]) == ["train", "stdin"]
    with pytest.raises(UsageError, match=r"^two inputs would both be written to train\.parquet"):
        output_names(["a/train.txt", "b/train.txt.bz2"])


def test_inputs_expand_directories_to_their_text_files(tmp_path):
    for name in ("b.txt", "a.svm.gz", "a.query", ".hidden.txt", "notes.md"):
        (tmp_path / name).write_text("")
    (tmp_path / "sub").mkdir()
    assert [p.name for p in directory_inputs(tmp_path)] == ["a.svm.gz", "b.txt"]
    expanded, any_dir = expand_inputs([str(tmp_path), "-"])
    assert expanded == [str(tmp_path / "a.svm.gz"), str(tmp_path / "b.txt"), "-"] and any_dir
    assert expand_inputs(["-"]) == (["-"], False)
    with pytest.raises(InputError, match="no such file"):
        expand_inputs([str(tmp_path / "nope.txt")])
    with pytest.raises(InputError, match="no SVMlight text files"):
        directory_inputs(tmp_path / "sub")


def test_several_files_into_one_parquet_or_a_directory(tmp_path):
    (tmp_path / "a.txt").write_text("1 qid:1 1:0.5\n0 qid:1 2:1\n")
    (tmp_path / "b.txt").write_text("2 qid:2 3:2 # docid = D\n")
    one = convert([str(tmp_path / "a.txt"), str(tmp_path / "b.txt")], tmp_path / "all.parquet")
    assert not one.directory and one.features == 3 and one.files[0].summary.rows == 3
    table = pq.read_table(tmp_path / "all.parquet")
    assert table.column("qid").to_pylist() == [1, 1, 2] and table.column("docid").to_pylist() == [None, None, "D"]
    many = convert([str(tmp_path / "a.txt"), str(tmp_path / "b.txt")], tmp_path / "out")
    assert many.directory and many.features == 3
    assert [f.output for f in many.files] == [str(tmp_path / "out" / "a.parquet"), str(tmp_path / "out" / "b.parquet")]
    # every file of a directory has the widest file's feature columns
    assert pq.read_schema(tmp_path / "out" / "a.parquet").names == ["qid", "label", "f1", "f2", "f3"]
    assert many.as_dict()["files"][1]["input"] == str(tmp_path / "b.txt")


def test_sort_queries_orders_by_qid_stably_across_blocks(tmp_path):
    rng = np.random.default_rng(7)
    qids = rng.permutation(np.repeat(np.arange(40), 3))
    lines = [f"{i % 3} qid:{q} {1 + i % 4}:{i} # docid = d{i}" for i, q in enumerate(qids)]
    (tmp_path / "a.txt").write_text("\n".join(lines) + "\n")
    convert([str(tmp_path / "a.txt")], tmp_path / "a.parquet", ConvertOptions(sort_queries=True, block_bytes=97))
    table = pq.read_table(tmp_path / "a.parquet")
    order = np.argsort(qids, kind="stable")
    assert table.column("qid").to_pylist() == qids[order].tolist()
    assert table.column("docid").to_pylist() == [f"d{i}" for i in order]
    assert table.column("f4").to_pylist() == [float(i) if i % 4 == 3 else 0.0 for i in order]
