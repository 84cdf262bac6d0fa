"""The TREC path is one pipeline: each stage (read, join, rank, measure, write) is called once per evaluation, in that
order, whichever variant of a stage does the work, in ``rankcli eval --qrels/--run``, ``rankcli compare --qrels``
and ``rankcli trec_eval`` (where join and rank are one stage, ``prepare``). Each stage function is wrapped to record
its calls."""

from __future__ import annotations

import pytest

from rankcli.cli import main
from rankcli.evaluate import runs
from rankcli.formats.trec import join as trec_join
from rankcli.formats.trec import join_native as trec_fast
from rankcli.formats.trec import rank as trec_rank
from rankcli.formats.trec import text as trec_text
from rankcli.formats.trec import write as trec
from rankcli.trec_eval import native, pipeline, reading

RUN = "".join(f"{q} Q0 d{d} {d} {(d * 7) % 5} tag\n" for q in range(1, 40) for d in range(12))
QRELS = "".join(f"{q} 0 d{d} {(q + d) % 3}\n" for q in range(1, 42) for d in range(0, 12, 2))


@pytest.fixture
def files(tmp_path):
    (tmp_path / "run").write_text(RUN)
    (tmp_path / "run2").write_text(RUN.replace(" tag\n", " other\n").replace("d3 3 3", "d3 3 4"))
    (tmp_path / "qrels").write_text(QRELS)
    return tmp_path


def _record(monkeypatch, calls: list, functions: dict) -> None:
    """Wrap each ``(module, attribute)`` of ``functions`` so that a call appends its name to ``calls``."""
    for name, (module, attribute) in functions.items():
        original = getattr(module, attribute)

        def wrapper(*args, _original=original, _name=name, **kwargs):
            calls.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(module, attribute, wrapper)


EVAL_STAGES = {"read": (trec_text, "read"), "join": (trec_join, "join"), "rank": (trec_rank, "rank"),
               "measure": (runs, "measure"), "write": (trec, "trec_eval_blocks")}
#: the variants inside the stages: the files read one by one, the C join, the numpy parser
EVAL_VARIANTS = {"read file": (trec_text, "read_text_array"), "read file ": (trec_text, "read_text_bytes"),
                 "C join": (trec_fast, "join_bytes"), "parse run": (trec_join, "read_run_columns"),
                 "parse qrels": (trec_join, "read_qrels_columns")}


@pytest.mark.parametrize("path", ["C", "numpy", "numpy, ties in input order"])
def test_eval_calls_each_stage_once_in_order(files, monkeypatch, capsys, path):
    if path == "C" and not trec_fast.available():
        pytest.skip("the C path is not built")
    monkeypatch.setenv("RANKCLI_PURE_PYTHON", "1" if path == "numpy" else "0")
    stages, variants = [], []
    _record(monkeypatch, stages, EVAL_STAGES)
    _record(monkeypatch, variants, EVAL_VARIANTS)
    extra = ["--ties", "input"] if "input" in path else []
    for options in (["-m", "official"], ["-M", "5", "-J", "-c", "-m", "map", "-m", "ndcg_cut.5"]):
        stages.clear()
        variants.clear()
        assert main(["eval", "--qrels", str(files / "qrels"), "--run", str(files / "run"), "--format", "trec_eval",
                     "-q", *options, *extra]) == 0
        assert stages == ["read", "join", "rank", "measure", "write"]
        read_files = [v.strip() for v in variants if v.startswith("read")]
        joins = [v for v in variants if not v.startswith("read")]
        assert read_files == ["read file", "read file"]  # the run and the qrels, once each
        assert sorted(joins) == (["C join"] if path == "C" else ["parse qrels", "parse run"])  # on two threads
    assert capsys.readouterr().out.count("\tall\t") > 0


def test_the_c_join_leaving_an_input_to_numpy_still_joins_once(files, monkeypatch, capsys):
    """An input the C join leaves (an infinite relevance, named by the numpy parser): the join stage tries C and then
    numpy inside its one call; the files are not read again."""
    if not trec_fast.available():
        pytest.skip("the C path is not built")
    (files / "qrels").write_text(QRELS + "1 0 d1 1e999\n")
    stages, variants = [], []
    _record(monkeypatch, stages, EVAL_STAGES)
    _record(monkeypatch, variants, EVAL_VARIANTS)
    assert main(["eval", "--qrels", str(files / "qrels"), "--run", str(files / "run")]) == 3
    assert stages == ["read", "join"]
    assert [v.strip() for v in variants[:3]] == ["read file", "read file", "C join"]
    assert sorted(variants[3:]) == ["parse qrels", "parse run"]
    assert "relevance is infinite" in capsys.readouterr().err


def test_compare_calls_each_stage_once_per_run(files, monkeypatch, capsys):
    stages = []
    _record(monkeypatch, stages, {k: v for k, v in EVAL_STAGES.items() if k != "write"})
    assert main(["compare", "--qrels", str(files / "qrels"), str(files / "run"), str(files / "run2"), "--metric",
                 "map", "--metric", "P@5"]) == 0
    assert stages == ["read", "join", "rank", "measure"] * 2
    capsys.readouterr()


@pytest.mark.parametrize("path", ["C", "numpy"])
def test_trec_eval_calls_each_stage_once_in_order(files, monkeypatch, capsysbinary, path):
    if path == "C" and not trec_fast.available():
        pytest.skip("the C path is not built")
    monkeypatch.setenv("RANKCLI_PURE_PYTHON", "1" if path == "numpy" else "0")
    monkeypatch.setattr(pipeline, "BLOCK_QUERIES", 8)  # several blocks: measured and written as they come
    stages, variants = [], []
    _record(monkeypatch, stages, {"read": (reading, "read_files"), "join and rank": (pipeline, "prepare"),
                                  "measure": (pipeline, "measure"), "write": (pipeline, "write")})
    _record(monkeypatch, variants, {"C": (native, "prepare"), "numpy": (pipeline, "form_res_rels")})
    assert main(["trec_eval", "-q", "-c", str(files / "qrels"), str(files / "run")]) == 0
    assert stages == ["read", "join and rank", "measure", "write"]
    assert variants == (["C"] if path == "C" else ["C", "numpy"])  # C declines under RANKCLI_PURE_PYTHON
    out = capsysbinary.readouterr().out
    assert out.count(b"map                   \t") == 42  # 41 queries (-c) and the summary
