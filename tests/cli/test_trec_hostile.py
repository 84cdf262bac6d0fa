"""Hostile TREC inputs to ``rankcli eval`` and ``rankcli trec_eval``: each refused with exit 3 before it is read whole
(a device of zeros, a sparse file, a gzip bomb), the ``-q`` output written block by block, ids written as bytes
whatever the output encoding."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys

import pytest

from rankcli.cli import main
from rankcli.formats.trec import write as trec


@pytest.fixture
def qrels(tmp_path):
    (tmp_path / "qrels").write_text("1 0 a 1\n")
    return str(tmp_path / "qrels")


@pytest.mark.parametrize("command", ["eval", "trec_eval"])
def test_zeros_sparse_files_and_gzip_bombs_exit_3(tmp_path, qrels, capsys, command):
    sparse = tmp_path / "sparse"
    with open(sparse, "wb") as f:
        f.truncate(1 << 40)  # 1 TiB, no block on disk
    bomb = tmp_path / "bomb.gz"
    bomb.write_bytes(gzip.compress(b"1 Q0 a 1 1 r\n" + b" " * (64 << 20), 1))
    blank_bomb = tmp_path / "blank.gz"
    blank_bomb.write_bytes(gzip.compress(b"\n" * (64 << 20), 1))
    # trec_eval's C-string reading ends a file at a NUL that starts a line: zeros are an empty run to it
    zeros = "a NUL byte" if command == "eval" else "no run lines"
    for run, message in [("/dev/zero", zeros), (sparse, zeros), (bomb, "longer than"),
                         (blank_bomb, "decompresses to more than")]:
        args = ["eval", "--qrels", qrels, "--run", str(run)] if command == "eval" else ["trec_eval", qrels, str(run)]
        assert main(args) == 3
        assert message in capsys.readouterr().err


def test_per_query_lines_are_written_block_by_block(monkeypatch, tmp_path, qrels, capsysbinary):
    run = tmp_path / "run"
    run.write_text("".join(f"{q} Q0 a 1 1 r\n" for q in range(25)))
    (tmp_path / "qrels").write_text("".join(f"{q} 0 a {q % 2}\n" for q in range(25)))
    blocks = []
    original = trec.trec_eval_blocks

    def spy(*args, **kwargs):
        for block in original(*args, **kwargs):
            blocks.append(block)
            yield block

    monkeypatch.setattr(trec, "QUERY_BLOCK", 10)
    monkeypatch.setattr(trec, "trec_eval_blocks", spy)
    assert main(["eval", "--qrels", qrels, "--run", str(run), "--format", "trec_eval", "-q", "-m", "map"]) == 0
    assert len(blocks) == 4  # 10 + 10 + 5 queries, then the summary
    assert capsysbinary.readouterr().out.count(b"\n") == 26


@pytest.mark.parametrize("command", [["eval", "--format", "trec_eval", "-q", "-m", "map", "--qrels", "Q", "--run",
                                      "R"], ["trec_eval", "-q", "-m", "map", "Q", "R"]])
def test_a_non_ascii_query_id_under_an_ascii_output_encoding(tmp_path, command):
    (tmp_path / "Q").write_bytes("é1 0 a 1\n".encode())
    (tmp_path / "R").write_bytes("é1 Q0 a 1 1 r\n".encode())
    args = [str(tmp_path / a) if a in ("Q", "R") else a for a in command]
    done = subprocess.run([sys.executable, "-m", "rankcli", *args], capture_output=True,
                          env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert done.returncode == 0, done.stderr
    assert "map                   \té1\t1.0000\n".encode() in done.stdout


def test_document_hashes_are_seeded_per_process():
    """Ids crafted to share one hash under a known seed share none under this process's random one (the C path's
    tables draw their own seed when the module loads)."""
    code = "from rankcli.formats.trec.parse import HASH_SEED; print(HASH_SEED)"
    seeds = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout for _ in range(3)}
    assert len(seeds) == 3
    import numpy as np

    from rankcli.formats.trec.parse import doc_hash, words_of

    words = words_of(np.array([b"crafted-id-0001", b"crafted-id-0002"]))
    assert (doc_hash(words, 0) != doc_hash(words, 1)).all() and (doc_hash(words) == doc_hash(words)).all()
