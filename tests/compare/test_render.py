"""Tests of compare's render module: the report in Markdown, LaTeX and TSV."""

from __future__ import annotations

import numpy as np
import pytest

from rankcli.compare import render as compare_render


@pytest.fixture
def compare_report(tmp_path):
    """Two Parquet runs of 40 queries, one close to the labels and one noisy, named with characters that Markdown
    and LaTeX treat specially."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rankcli.compare import compare_inputs

    rng = np.random.default_rng(3)
    qid = np.repeat(np.arange(40), 10)
    label = rng.integers(0, 3, qid.shape[0]).astype(float)
    paths = []
    for i, noise in enumerate([0.3, 3.0]):
        paths.append(tmp_path / f"run{i}.parquet")
        score = label + rng.normal(0, noise, qid.shape[0])
        pq.write_table(pa.table({"qid": qid, "label": label, "score": score}), paths[-1])
    return compare_inputs(paths, names=["good|run", "bad_&%"], metrics=["ndcg@5", "map"])


def test_compare_markdown_escapes_names_bolds_the_best_and_marks_significance(compare_report):
    text = compare_render.compare_markdown(compare_report)
    rows = {line.split(" | ")[0]: line for line in text.splitlines() if line.startswith("| ")}
    assert r"| good\|run (baseline)" in rows  # a bare | would split the table cell
    good, bad = rows[r"| good\|run (baseline)"], rows["| bad_&%"]
    means = compare_report.means
    assert f"**{means['good|run']['ndcg@5']:.4f}**" in good and "**" not in bad
    assert bad.count("▼") == 2  # worse than the baseline on both metrics, at alpha 0.01
    assert r"| bad_&% - good\|run | ndcg@5 | -" in text  # the difference is b - a, negative here


def test_compare_latex_escapes_what_latex_would_interpret(compare_report):
    text = compare_render.compare_latex(compare_report)
    assert r"bad\_\&\% & " in text and "bad_&%" not in text
    assert text.count(r"$^{\downarrow}$") == 2
    assert text.rstrip().splitlines()[-1].startswith("% ")  # the legend is a comment, so the table compiles alone


def test_compare_tsv_has_one_parseable_row_per_comparison(compare_report):
    header, *rows = [line.split("\t") for line in compare_render.compare_tsv(compare_report).rstrip("\n").split("\n")]
    assert len(rows) == 2 and all(len(r) == len(header) for r in rows)
    record = [dict(zip(header, r)) for r in rows]
    assert [r["metric"] for r in record] == ["ndcg@5", "map"]
    for r, c in zip(record, compare_report.comparisons):
        assert float(r["difference"]) == pytest.approx(float(r["mean_b"]) - float(r["mean_a"]))
        assert float(r["p_value"]) == c.result.p_value and r["significant"] == "true"
