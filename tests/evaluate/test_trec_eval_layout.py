"""``rankcli eval --format trec_eval`` tells the truth: trec_eval's conventions for any input (a Parquet run
included), no ``nan`` line, and num_q the number of queries the means are over."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rankcli.cli import main


def _files(tmp_path):
    rng = np.random.default_rng(1)
    q = np.repeat(np.arange(1, 31), 10)
    labels = rng.integers(0, 3, 300).astype(float)
    labels[q <= 3] = 0  # three queries without a relevant document
    scores = np.round(rng.random(300), 1)  # ties: trec_eval orders them by document id descending
    docs = np.array([f"d{i % 10}" for i in range(300)])
    pq.write_table(pa.table({"qid": q, "label": labels, "score": scores, "docid": docs}), tmp_path / "run.parquet")
    (tmp_path / "qrels").write_text("".join(f"{a} 0 {c} {int(b)}\n" for a, b, c in zip(q, labels, docs)))
    (tmp_path / "run").write_text("".join(f"{a} Q0 {c} 1 {s} r\n" for a, c, s in zip(q, docs, scores)))


def test_a_parquet_run_in_trec_eval_layout_equals_the_trec_path(tmp_path, capsys):
    _files(tmp_path)
    assert main(["eval", str(tmp_path / "run.parquet"), "--format", "trec_eval", "-q", "-m", "all_trec"]) == 0
    parquet = capsys.readouterr().out.splitlines()
    assert main(["eval", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"), "--format",
                 "trec_eval", "-q", "-m", "all_trec"]) == 0
    trec = capsys.readouterr().out.splitlines()
    differing = [(a, b) for a, b in zip(parquet, trec) if a != b]
    assert len(parquet) == len(trec) and [a.split()[0] for a, _ in differing] == ["runid"]
    assert not any(line.endswith("nan") for line in parquet)
    assert "num_q                 \tall\t30" in parquet


def test_another_convention_prints_no_nan_and_counts_the_queries_averaged(tmp_path, capsys):
    _files(tmp_path)
    assert main(["eval", str(tmp_path / "run.parquet"), "--format", "trec_eval", "-q", "--convention",
                 "paper"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert not any("nan" in line for line in lines)
    assert "num_q                 \tall\t27" in lines
