"""``rankcli trec_eval`` and ``rankcli eval --format trec_eval`` on hostile inputs, line for line against trec_eval
10.0's output committed in tests/data/trec_eval/hostile (its ``commands`` file names the command that made each output,
as trec_eval's Makefile does for its quicktest; tests/trec_eval/test_differential.py reruns them with the binary):

- a qrels label of -9223372036854775808 (LONG_MIN, what ``atol`` saturates anything more negative to), with ``-J``,
  with ``-l`` at that value and with ``-R qrels_jg``: it used to hide the query's relevant documents (num_rel 0, map
  inf), because the labels were sorted descending by negating them and -LONG_MIN is LONG_MIN in int64;
- ``-l 0``: a document absent from the qrels is not relevant (``eval`` used to count it as a label 0);
- a ``-Z`` file giving one (query, measure) twice: refused (trec_eval takes whichever its binary search meets);
- a run tag and ids that are not UTF-8: printed as the file holds them (the C path decoded the tag, a traceback);
- a NUL byte starting a line of the qrels and of the run: trec_eval's reading ends there (rankcli refused the files).

Every case runs on the C path and on the numpy path (``RANKCLI_PURE_PYTHON=1``)."""

from __future__ import annotations

import re
import shlex

import numpy as np
import pytest

from rankcli.errors import InputFormatError, UsageError
from rankcli.trec_eval import getopt
from rankcli.trec_eval.pipeline import evaluate
from tests.conftest import REPO

HOSTILE = REPO / "tests" / "data" / "trec_eval" / "hostile"
REFUSED = {"out.zdup"}  # trec_eval's output, kept to show its choice; rankcli refuses the input


def hostile_commands() -> list[tuple[list[str], str]]:
    """(trec_eval's arguments, the output file) of every line of the ``commands`` file."""
    out = []
    for line in (HOSTILE / "commands").read_text().splitlines():
        m = re.match(r"\./trec_eval (.*?) \| diff - (\S+)$", line)
        if m:
            out.append((shlex.split(m.group(1)), m.group(2)))
    return out


COMMANDS = hostile_commands()


def trec_eval_lines(args: list[str]) -> bytes:
    return b"".join(evaluate(getopt.parse([str(HOSTILE / a) if (HOSTILE / a).is_file() else a for a in args])))


@pytest.fixture(params=["0", "1"], ids=["c-path", "numpy-path"])
def path_env(request, monkeypatch):
    monkeypatch.setenv("RANKCLI_PURE_PYTHON", request.param)
    return request.param


def test_the_commands_file_lists_every_case():
    assert len(COMMANDS) == 14 and sum("-9223372036854775808" in " ".join(a) for a, _ in COMMANDS) == 2
    assert {out for _, out in COMMANDS} == {p.name for p in HOSTILE.glob("out.*")}


@pytest.mark.parametrize("args,expected", [c for c in COMMANDS if c[1] not in REFUSED],
                         ids=[out for _, out in COMMANDS if out not in REFUSED])
def test_trec_eval_prints_what_trec_eval_prints(args, expected, path_env):
    assert trec_eval_lines(args) == (HOSTILE / expected).read_bytes()


def test_the_long_min_label_hides_no_relevant_document():
    # query 1: a (1) and c (2) relevant, b at LONG_MIN is pooled but unjudged: num_rel 2, not 0
    out = (HOSTILE / "out.longmin").read_bytes()
    assert b"num_rel               \t1\t2\n" in out and b"num_rel               \tall\t4\n" in out
    assert not [line for line in out.splitlines() if line.split(b"\t")[2].strip() in (b"inf", b"-nan", b"nan")]
    # -l at LONG_MIN: every retrieved document, in the pool or not, is "relevant" in the ranking measures while R
    # counts the labels >= 0: trec_eval's map of query 1 is 2.0, and rankcli trec_eval prints it
    assert b"map                   \t1\t2.0000\n" in (HOSTILE / "out.longmin.l").read_bytes()


def test_which_path_reads_the_extreme_labels(monkeypatch):
    """Labels beyond 2^53 in magnitude (LONG_MIN) are not exact as the C module's doubles: it leaves them to the
    numpy path; -(2^53 - 1) it reads itself (out.near: the C path's numbers)."""
    from rankcli.formats.trec import join_native as trec_fast
    from rankcli.trec_eval import native

    if not trec_fast.available():
        pytest.skip("the C module is not built")
    monkeypatch.setenv("RANKCLI_PURE_PYTHON", "0")
    qrels, run = (HOSTILE / "longmin.qrels").read_bytes(), (HOSTILE / "longmin.run").read_bytes()
    o = getopt.parse(["-m", "map", "q", "r"])
    assert native.prepare(o, qrels, run) is None
    near = native.prepare(o, (HOSTILE / "near.qrels").read_bytes(), run)
    assert near is not None and near[1].labels.min() == -9007199254740991


def test_the_c_path_reads_a_tag_that_is_not_utf8(monkeypatch):
    """The C module takes a run whose tag (and a document id) is not UTF-8 and the pipeline prints the last line's
    tag's bytes as trec_eval does (out.badtag); it used to decode the tag and raise."""
    from rankcli.formats.trec import join_native as trec_fast
    from rankcli.trec_eval import native

    if not trec_fast.available():
        pytest.skip("the C module is not built")
    monkeypatch.setenv("RANKCLI_PURE_PYTHON", "0")
    qrels, run = (HOSTILE / "badtag.qrels").read_bytes(), (HOSTILE / "badtag.run").read_bytes()
    prepared = native.prepare(getopt.parse(["-m", "map", "q", "r"]), qrels, run)
    assert prepared is not None and prepared[2] == b"r\xc3("
    assert trec_fast.join_bytes(run, qrels).tag == b"run\xff\xfe"  # the first line's tag, as bytes
    assert b"runid                 \tall\tr\xc3(\n" in (HOSTILE / "out.badtag").read_bytes()


def test_labels_sort_descending_without_negation():
    """The cause of the LONG_MIN case: each query's labels were sorted descending as -sort(-labels); negating LONG_MIN
    overflows back to LONG_MIN, which then came first and made the query's relevant labels look absent."""
    from rankcli.core.trec_eval.join import ResRels
    from rankcli.trec_eval.pipeline import Prepared, _chunk

    labels = np.array([1, np.iinfo(np.int64).min, 2, 0], dtype=np.int64)
    joined = ResRels(np.array([0]), np.array([False]), np.array([1, -2], dtype=np.int64), np.array([0, 2]),
                    labels, np.array([0, 4]))
    ch = _chunk(Prepared(np.array([b"1"]), joined, b"t", 2), 0, 1, getopt.parse(["q", "r"]))
    assert ch.labels[0, :3].tolist() == [2, 1, 0] and ch.num_rel.tolist() == [2]


def test_z_score_duplicates_are_refused_naming_the_line(path_env):
    # trec_eval took the middle of query 1's three map lines and the second of query 2's two (out.zdup): an order of
    # its sort and binary search, not of the file; rankcli refuses the file
    assert b"Zmap                   \t1\t4.0000\n" in (HOSTILE / "out.zdup").read_bytes()  # mean 0.6, line 4
    args = next(a for a, out in COMMANDS if out == "out.zdup")
    with pytest.raises(InputFormatError, match=r"zdup.zscores:4: a second z-score of query 1 measure map \(the first "
                                               r"at line 1, other numbers\)"):
        trec_eval_lines(args)


# -- rankcli eval --format trec_eval ---------------------------------------------------------------------------------


def _eval(run, args: list[str]) -> tuple[int, str, str]:
    q, r = (str(HOSTILE / f"levelzero.{x}") for x in ("qrels", "run"))
    return run("eval", "--qrels", q, "--run", r, "--format", "trec_eval", *args)


@pytest.mark.parametrize("expected", ["out.levelzero", "out.levelzero.J"])
def test_eval_at_level_zero_counts_no_unjudged_document(run, path_env, expected):
    """Under -l 0 a judged label 0 is relevant and a document absent from the qrels is not (trec_eval's judgment -1):
    query 1 ranks x (absent), a (1), b (0), y (absent): num_rel 2, P_1 0."""
    args = next(a for a, out in COMMANDS if out == expected)[:-2]
    status, out, err = _eval(run, args)
    assert status == 0, err
    assert out.encode() == (HOSTILE / expected).read_bytes()
    if expected == "out.levelzero":
        assert "num_rel               \t1\t2\n" in out and "P_5                   \t1\t0.4000\n" in out


@pytest.mark.parametrize("level", ["-1", "-0.5", "-9223372036854775808"])
def test_eval_refuses_a_threshold_below_zero_with_qrels(run, level):
    """Below 0 trec_eval counts the documents absent from the qrels as relevant in its ranking measures but not in R
    (AP 2.0 above); eval does not give that reading (rankcli trec_eval does) and says so (exit 2)."""
    status, _, err = _eval(run, ["-l", level, "-m", "map"])
    assert status == 2 and "is below 0: with --qrels a document is relevant" in err and "rankcli trec_eval" in err


def test_measuring_a_trec_run_refuses_a_negative_threshold_too():
    from rankcli.core.metrics import Convention, parse_metrics
    from rankcli.evaluate import runs

    conv = Convention.preset("trec").with_(relevance_threshold=-1.0)
    with pytest.raises(UsageError, match="is below 0"):
        runs.load_trec(HOSTILE / "levelzero.run", HOSTILE / "levelzero.qrels", conv)
    run = runs.load_trec(HOSTILE / "levelzero.run", HOSTILE / "levelzero.qrels", Convention.preset("trec"))
    assert run.labels[~run.judged].tolist() == [0.0] * 4  # the run keeps its label 0; the measures see -1
    with pytest.raises(UsageError, match="is below 0"):
        runs.measure(run, parse_metrics(["map"]), conv)
