"""``rankcli trec_eval -R prefs`` and ``-R qrels_prefs``: the preference measures against a plain-loop reading of
trec_eval's C code (tests/reference_prefs.py) on random preference files, against the examples of ``get_prefs.c``'s
own documentation, the records of the registry, and hostile preference files. The quicktest comparisons are in
tests/trec_eval/test_command.py, the comparison with a trec_eval binary in tests/trec_eval/test_differential.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rankcli.cli import main
from rankcli.core.trec_eval import prefs_measures
from rankcli.core.trec_eval.registry import BY_NAME, MEASURES, SETS
from rankcli.errors import InputFormatError
from rankcli.trec_eval import getopt, prefs
from rankcli.trec_eval.pipeline import STAND_IN, evaluate
from tests import reference_prefs as ref
from tests.conftest import REPO
from tests.trec_eval_random import prefs_case

SRC = REPO / "tests" / "data" / "trec_eval" / "src"
PREFS_MEASURES = [m for m in MEASURES if m.needs == "prefs"]


def _number(text: bytes) -> float:
    try:
        return float(text)
    except ValueError:
        return float.fromhex(text.decode())


def _reference(prefs_text: bytes, run_text: bytes, rel_format: str, complete: bool, max_docs: int) -> dict:
    """{qid: {measure: value}} of every evaluated query, from tests/reference_prefs.py."""
    lines, results = {}, {}
    for line in prefs_text.splitlines():
        f = line.split()
        if f and not line.startswith(b"#"):
            qid, jg, jsg, doc, level = (f[0], f[1], b"0", f[2], f[3]) if rel_format == "qrels_prefs" else f
            lines.setdefault(qid, []).append((jg, jsg, _number(level), doc))
    for line in run_text.splitlines():
        f = line.split()
        results.setdefault(f[0], []).append((f[2], float(f[4])))
    out = {}
    for qid in sorted(lines):
        if qid in results or complete:
            out[qid] = ref.measures(lines[qid], results.get(qid, [(STAND_IN, 1.0)]), max_docs)
    return out


def _rankcli(path_p: Path, path_r: Path, flags: list[str]) -> dict:
    """{qid: {measure: value}} from the measure kernels themselves (the doubles, before printing)."""
    o = getopt.parse([*flags, str(path_p), str(path_r)])
    p = prefs.prepare(o, STAND_IN, True)
    out = {}
    for start, stop, block in prefs.blocks(p, str(path_p)):
        for m in PREFS_MEASURES:
            for qid, v in zip(p.qids[start:stop].tolist(), m.kernel(block, ()).tolist()):
                out.setdefault(qid, {})[m.name] = v
    return out


@pytest.mark.parametrize("seed", range(60))
def test_every_measure_equals_the_reading_of_the_c_code(tmp_path, seed):
    rng = np.random.default_rng(seed)
    prefs_text, run_text, complete, rel_format = prefs_case(rng)
    (tmp_path / "p").write_bytes(prefs_text)
    (tmp_path / "r").write_bytes(run_text)
    max_docs = int(rng.choice([1000, 3, 0]))
    flags = ["-R", rel_format, "-M", str(max_docs), *([] if complete else ["-c"])]
    try:
        expected = _reference(prefs_text, run_text, rel_format, not complete, max_docs)
    except ref.Refused:
        with pytest.raises(InputFormatError):
            _rankcli(tmp_path / "p", tmp_path / "r", flags)
        return
    assert _rankcli(tmp_path / "p", tmp_path / "r", flags) == expected


def _values(tmp_path: Path, text: str, run: str, rel_format: str = "prefs") -> dict:
    (tmp_path / "p").write_text(text)
    (tmp_path / "r").write_text(run)
    out = b"".join(evaluate(getopt.parse(["-q", "-m", "all_prefs", "-R", rel_format, str(tmp_path / "p"),
                                          str(tmp_path / "r")])))
    return {tuple(line.split(b"\t")[:2]): line.split(b"\t")[2] for line in out.splitlines()}


RUN = "".join(f"q1 Q0 docno{d} {d} {10 - d} r\n" for d in range(1, 7))


@pytest.mark.parametrize("text,count", [
    # get_prefs.c's examples: the number of preferences each expresses
    ("q1 u1 s1 docno1 3.0\nq1 u1 s1 docno2 2.0\nq1 u1 s1 docno3 0.0\nq1 u1 s1 docno4 6.0\nq1 u1 s1 docno5 0.0\n"
     "q1 u1 s1 docno6 2.0\n", 13),
    # (the text says 5: 1>2, 1>3, 2>3, 4>1, 4>2; the transitive closure adds 4>3, and trec_eval counts 6)
    ("q1 u1 s1 docno1 3.0\nq1 u1 s1 docno2 2.0\nq1 u1 s1 docno3 1.0\nq1 u1 s2 docno1 2.0\nq1 u1 s2 docno2 1.0\n"
     "q1 u1 s2 docno4 3.0\n", 6),
    ("q1 u1 s1 docno1 3.0\nq1 u1 s1 docno2 2.0\nq1 u2 s1 docno1 0.0\nq1 u2 s1 docno3 6.0\nq1 u2 s1 docno4 2.0\n"
     "q1 u2 s2 docno1 0.0\nq1 u2 s2 docno2 8.0\n", 5),
    ("q1 u1 s1 docno1 3.0\nq1 u1 s1 docno2 2.0\nq1 u1 s1 docno3 1.0\nq1 u1 s2 docno2 5.0\nq1 u1 s2 docno4 4.0\n", 5),
])
def test_the_examples_of_get_prefs_c(tmp_path, text, count):
    assert _values(tmp_path, text, RUN)[(b"prefs_num_prefs_poss  ", b"q1")] == str(count).encode()


def test_a_ranking_that_reverses_the_preferences_fulfils_none(tmp_path):
    text = "q1 u1 s1 docno1 1\nq1 u1 s1 docno2 2\nq1 u1 s1 docno3 3\n"
    v = _values(tmp_path, text, RUN)
    assert v[(b"prefs_num_prefs_poss  ", b"q1")] == b"3"
    assert v[(b"prefs_num_prefs_ful   ", b"q1")] == b"0"
    assert v[(b"prefs_simp            ", b"q1")] == b"0.0000"
    # a tie in score is broken by document id ascending here (trec_eval's qrels measures break it descending)
    tied = "".join(f"q1 Q0 docno{d} {d} 1.0 r\n" for d in (3, 1, 2))
    assert _values(tmp_path, "q1 u1 s1 docno1 2\nq1 u1 s1 docno2 1\n", tied)[(b"prefs_simp            ", b"q1")] \
        == b"1.0000"


def test_every_prefs_measure_is_a_record_with_its_kernel_and_c_file():
    assert [m.name for m in PREFS_MEASURES] == list(SETS["all_prefs"][2:])
    assert set(SETS["prefs"]) <= set(SETS["all_prefs"])
    for m in PREFS_MEASURES:
        assert m.kernel is not None and m.kernel.__module__ == prefs_measures.__name__
        assert (SRC / m.source).is_file() and m.source in m.kernel.__doc__
        assert (m.kind, m.summary) == (("long", "sum") if "num_prefs" in m.name else ("double", "mean"))
    assert BY_NAME["num_q"].needs == "any"


@pytest.mark.parametrize("content,rel_format,message", [
    (b"q1 u1 s1 d1 1\nq1 u1 s1 d2\n", "prefs",
     "p:2: expected 5 fields 'qid jg jsg docno rel_level', got 'q1 u1 s1 d2'"),
    (b"q1 u1 s1 d1 1 x\n", "prefs", "p:1: expected 5 fields"),
    (b"q1 0 d1 1\nq1 0 0 d2 1\n", "qrels_prefs", "p:2: expected 4 fields 'qid jg docno rel_level', got"),
    (b"q1 u1 s1 d1 1\nq1 u1 s1 d\x002 1\n", "prefs", "p:2: a NUL byte"),
    (b"", "prefs", "p: no preference lines"),
    (b"# only a comment\n", "prefs", "p: no preference lines"),
    (b"q1 u1 s1 d1 nan\n", "prefs", "p:1: a NaN preference level"),
    (b"q1 u1 s1 d1 2\nq1 u1 s1 d2 1\nq1 u1 s1 d1 1\n", "prefs", "p:3: a document at two levels in one judgment"),
    (b"q1 u1 s1 d1 2\nq1 u1 s2 d1 0\n", "prefs", "p:2: a document at level 0 and above 0"),
    (b"q1 u1 s1 d1 2\nq1 u1 s1 d2 1\nq1 u1 s2 d2 2\nq1 u1 s2 d1 1\n", "prefs", "p:1: preferences in a cycle"),
])
def test_hostile_preference_files_exit_3_with_the_line(tmp_path, capsys, content, rel_format, message):
    (tmp_path / "p").write_bytes(content)
    (tmp_path / "r").write_bytes(b"q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\n")
    status = main(["trec_eval", "-m", "all_prefs", "-R", rel_format, str(tmp_path / "p"), str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert status == 3
    assert message in err.replace(str(tmp_path) + "/", "")
    assert "Traceback" not in err


def test_a_document_ranked_twice_is_refused_only_when_a_preference_measure_is_asked(tmp_path, capsys):
    (tmp_path / "p").write_bytes(b"q1 u1 s1 d1 1\n")
    (tmp_path / "r").write_bytes(b"q1 Q0 d1 1 2.0 r\nq1 Q0 d1 2 1.0 r\n")
    files = [str(tmp_path / "p"), str(tmp_path / "r")]
    assert main(["trec_eval", "-m", "prefs_simp", "-R", "prefs", *files]) == 3
    assert "r:2: a document ranked twice for one query" in capsys.readouterr().err
    assert main(["trec_eval", "-m", "num_q", "-R", "prefs", *files]) == 0
    assert capsys.readouterr().out == "num_q                 \tall\t1\n"


def test_blank_lines_are_skipped_and_measures_need_their_format(tmp_path, capsys):
    (tmp_path / "p").write_bytes(b"q1 u1 s1 d1 1\n\n  \nq1 u1 s1 d2 0\n")
    (tmp_path / "r").write_bytes(b"q1 Q0 d1 1 2.0 r\n")
    files = [str(tmp_path / "p"), str(tmp_path / "r")]
    assert main(["trec_eval", "-m", "prefs_num_prefs_ful_ret", "-R", "prefs", *files]) == 0
    assert capsys.readouterr().out == "prefs_num_prefs_ful_ret\tall\t0\n"
    assert main(["trec_eval", "-m", "map", "-R", "prefs", *files]) == 2
    assert "measure map needs -R qrels" in capsys.readouterr().err
    assert main(["trec_eval", "-m", "prefs", *files]) == 2
    assert "needs -R prefs or qrels_prefs" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["prefs_pair", "prefs_simp"])
def test_rankcli_eval_points_to_rankcli_trec_eval(name):
    from rankcli.core.metrics import specs as measures

    with pytest.raises(measures.UnknownMetricError, match="rankcli trec_eval does"):
        measures.parse_metrics([name])
