"""``rankcli trec_eval``: trec_eval's own test suite (its Makefile's quicktest, byte for byte), its command line as
getopt_long reads it, and its inputs (tests/data/trec_eval: NIST's files, see PROVENANCE.md there)."""

from __future__ import annotations

import gzip
import io
import re
import shlex
from pathlib import Path

import pytest

from rankcli.cli import main
from rankcli.errors import InputError, UsageError
from rankcli.trec_eval import getopt
from rankcli.trec_eval.pipeline import evaluate
from tests.conftest import REPO

DATA = REPO / "tests" / "data" / "trec_eval"


def quicktests() -> list[tuple[str, str]]:
    """(arguments, expected output file) of every comparison of trec_eval's ``make quicktest``."""
    text = (DATA / "Makefile").read_text()
    block = text.split("quicktest: trec_eval\n", 1)[1].split("\n\n", 1)[0]
    out = []
    for line in block.splitlines():
        m = re.match(r"\s*\./trec_eval (.*?) \| diff - (\S+)", line)
        if m:
            out.append((m.group(1), m.group(2)))
    return out


def run_te(args: list[str], cwd: Path | None = None) -> bytes:
    options = getopt.parse(args)
    return b"".join(evaluate(options))


def _local(args: str) -> list[str]:
    words = []
    for w in shlex.split(args):
        if w.startswith("test/"):
            path = DATA / w
            w = str(path if path.exists() else path.with_name(path.name + ".gz"))
        words.append(w)
    return words


QUICKTESTS = quicktests()


def test_the_makefile_lists_fifteen_comparisons():
    assert len(QUICKTESTS) == 15
    assert sum("-R prefs" in a or "-R qrels_prefs" in a for a, _ in QUICKTESTS) == 3


@pytest.mark.parametrize("args,expected", QUICKTESTS, ids=[a for a, _ in QUICKTESTS])
def test_quicktest_byte_for_byte(args, expected):
    assert run_te(_local(args)) == (DATA / expected).read_bytes()


def test_the_run_from_standard_input_and_gzipped(tmp_path, monkeypatch, capsysbinary):
    run = (DATA / "test" / "results.test").read_bytes()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(run)))
    assert main(["trec_eval", str(DATA / "test" / "qrels.test"), "-"]) == 0
    assert capsysbinary.readouterr().out == (DATA / "test" / "out.test").read_bytes()
    (tmp_path / "run.gz").write_bytes(gzip.compress(run))
    assert main(["trec-eval", str(DATA / "test" / "qrels.test"), str(tmp_path / "run.gz")]) == 0
    assert capsysbinary.readouterr().out == (DATA / "test" / "out.test").read_bytes()


@pytest.mark.parametrize("words", [
    ["-m", "all_trec", "-q", "-c", "Q", "R"],
    ["-qc", "-mall_trec", "Q", "R"],
    ["Q", "-q", "R", "-c", "--measure=all_trec"],
    ["--meas", "all_trec", "--query_eval_wanted", "--complete", "Q", "R"],
    ["-qcmall_trec", "Q", "R"],
    ["-o", "-qc", "-m", "all_trec", "--", "Q", "R"],
])
def test_getopt_forms(words):
    o = getopt.parse(words)
    assert (o.query, o.complete, o.measures, o.files) == (True, True, ["all_trec"], ["Q", "R"])


def test_getopt_acts_on_each_option_in_order_as_trec_eval():
    """trec_eval's main acts on each option getopt returns: -v prints the version and exits (nothing after it is read,
    -v -x is the version), a measure before it is marked first (-m bogus -v is an error); "--" ends the options."""
    assert getopt.parse(["-v", "-x"]).version and getopt.parse(["-vx", "--nonesuch"]).version
    assert getopt.parse(["-m", "P.5", "--version", "-Q"]).version
    with pytest.raises(UsageError, match="illegal measure 'bogus'"):
        getopt.parse(["-m", "bogus", "-v"])
    with pytest.raises(UsageError, match="invalid option -- 'x'"):
        getopt.parse(["-x", "-v"])
    assert getopt.parse(["-m", "map", "--", "-q", "run"]).files == ["-q", "run"]


def test_the_double_dash_reaches_trec_evals_getopt(tmp_path, monkeypatch, capsysbinary):
    """``rankcli trec_eval -m map -- -q run`` reads a qrels file named -q, as trec_eval does (typer dropped the "--",
    and -q was read as an option: exit 2); -v -x prints the version, exit 0; -m bogus -v is a usage error."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-q").write_bytes(b"1 0 a 1\n1 0 b 0\n")
    (tmp_path / "run").write_bytes(b"1 Q0 b 1 2.0 t\n1 Q0 a 2 1.0 t\n")
    assert main(["trec_eval", "-m", "map", "--", "-q", "run"]) == 0
    assert capsysbinary.readouterr().out == b"map                   \tall\t0.5000\n"
    assert main(["trec_eval", "-v", "-x"]) == 0
    assert capsysbinary.readouterr().err.startswith(b"trec_eval version 10.0-rc3")
    assert main(["trec_eval", "-m", "bogus", "-v"]) == 2
    assert b"illegal measure 'bogus'" in capsysbinary.readouterr().err


def test_getopt_values_as_atol():
    o = getopt.parse(["-l2", "-M", "1000", "-N12x", "-l", "1.5", "-D", "3.q7", "Q", "R"])
    assert (o.level, o.max_docs, o.num_docs, o.debug_level, o.debug_query) == (1, 1000, 12, 3, "q7")
    assert getopt.parse(["-Mx", "Q", "R"]).max_docs == 0


@pytest.mark.parametrize("words,message", [
    (["-x", "Q", "R"], "invalid option -- 'x'"),
    (["--Re", "qrels", "Q", "R"], "ambiguous"),
    (["--help=1"], "doesn't allow an argument"),
    (["Q", "R", "-m"], "requires an argument"),
    (["Q"], "expected 2 file arguments"),
])
def test_getopt_errors_are_usage_errors(words, message):
    with pytest.raises(UsageError, match=re.escape(message)):
        getopt.parse(words)


def test_exit_statuses_and_messages(tmp_path, capsys):
    q = DATA / "test" / "qrels.test"
    assert main(["trec_eval", "-m", "nonesuch", str(q), str(q)]) == 2
    assert "illegal measure 'nonesuch'" in capsys.readouterr().err
    bad = tmp_path / "run"
    bad.write_bytes(b"301 Q0 d1 1 2.0 tag\n301 Q0 d2 1\n")
    assert main(["trec_eval", str(q), str(bad)]) == 3
    assert f"{bad}:2: expected at least 6 fields" in capsys.readouterr().err


@pytest.mark.parametrize("flags", [[], ["-R", "qrels_jg", "-m", "map_avgjg"]], ids=["qrels", "qrels_jg"])
def test_swapped_files_are_named_as_swapped(tmp_path, capsys, flags):
    """The run given first and the qrels second (its first line has six fields, the other file's four): exit 3 on
    the first line as before, with the hint; a qrels file that is merely malformed gets no hint."""
    q, r = _pair(tmp_path, b"1 0 d 1\n1 0 e 0\n", b"# a run\n\n1 Q0 d 1 2.0 t\n1 Q0 e 2 1.0 t\n")
    assert main(["trec_eval", *flags, r, q]) == 3
    err = capsys.readouterr().err
    assert err.startswith(f"Error: {r}:3: expected 4 fields") and err.endswith(
        "; the files look swapped: trec_eval QRELS RUN\n"), err
    bad, _ = _pair(tmp_path, b"1 0 d 1 2 3\n", b"1 Q0 d 1 2.0 t\n")
    assert main(["trec_eval", *flags, bad, r]) == 3
    assert "look swapped" not in capsys.readouterr().err


def test_version_and_help(capsysbinary):
    assert main(["trec_eval", "-v"]) == 0
    assert capsysbinary.readouterr().err.startswith(b"trec_eval version 10.0-rc3 (rankcli ")
    assert main(["trec_eval", "-h", "-m", "P"]) == 0
    out = capsysbinary.readouterr().out
    assert out.startswith(b"trec_eval [-h] [-q] [-m measure[.params] [-c] [-n] [-l <num>]\n")
    assert out.endswith(b"Default param: -m P.5,10,15,20,30,100,200,500,1000\n")


# -- trec_eval's input rules ------------------------------------------------------------------------------------------


def _pair(tmp_path, qrels: bytes, run: bytes) -> tuple[str, str]:
    (tmp_path / "q").write_bytes(qrels)
    (tmp_path / "r").write_bytes(run)
    return str(tmp_path / "q"), str(tmp_path / "r")


def test_numbers_ids_and_runid_as_trec_eval_reads_them(tmp_path):
    q, r = _pair(tmp_path, b"# comment\n1 0 d\xff 2\n1 0 b 1.9\n",
                 b"1 Q0 d\xff 1 0x1p1 first extra\n1 Q0 b 2 1_5 last\n# x\n\n1 Q0 c 3 nan last\n")
    out = run_te(["-q", "-m", "num_rel", "-m", "relstring", "-m", "runid", q, r])
    # b scores 1 (atof reads "1_5" as 1), d\xff 2: d\xff first; nan sorts last; labels 2 and 1 ("1.9" is 1)
    assert b"relstring             \t1\t'21-'\n" in out
    assert out.endswith(b"runid                 \tall\tlast\nnum_rel               \tall\t2\n")


def test_a_nul_byte_and_a_huge_line_are_refused_on_the_first_block(tmp_path, monkeypatch):
    """A NUL inside a line (trec_eval counts its line table up to the NUL and fills it past it: undefined) and one on
    standard input (fgets and strlen drop the rest of the line) are refused; a NUL starting a line of a file ends
    the reading there, as trec_eval's (tests/data/trec_eval/hostile/out.nul, and /dev/zero: no line at all)."""
    q, r = _pair(tmp_path, b"1 0 d 1\n", b"1 Q0 d 1 1 t\n1 Q0 e\0 2 1 t\n")
    with pytest.raises(InputError, match=r"r:2: a NUL byte inside a line \(trec_eval stops counting lines at it"):
        run_te([q, r])
    (tmp_path / "r.gz").write_bytes(gzip.compress(b"1 Q0 d 1 1 t\n\0" + b"1 Q0 e 2 1 t\n" * 1000))
    assert run_te(["-m", "num_ret", q, str(tmp_path / "r.gz")]) == b"num_ret               \tall\t1\n"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"1 Q0 d 1 1 t\n\0x\n")))
    with pytest.raises(InputError, match=r"<stdin>:2: a NUL byte on standard input"):
        run_te([q, "-"])
    with pytest.raises(InputError, match="/dev/zero: no run lines"):
        run_te([q, "/dev/zero"])
    (tmp_path / "bomb.gz").write_bytes(gzip.compress(b"\n" * (30 << 20), 1))
    with pytest.raises(InputError, match="decompresses to more than"):
        run_te([q, str(tmp_path / "bomb.gz")])


def test_a_judged_query_missing_from_the_run_is_left_out_as_trec_eval_9_did(tmp_path):
    q, r = _pair(tmp_path, b"1 0 a 1\n2 0 b 1\n", b"1 Q0 a 1 1 t\n")
    out = run_te(["-m", "num_q", "-m", "map", q, r])
    assert out == b"num_q                 \tall\t1\nmap                   \tall\t1.0000\n"
    out = run_te(["-c", "-m", "num_q", "-m", "map", q, r])
    assert out == b"num_q                 \tall\t2\nmap                   \tall\t0.5000\n"


def test_a_query_whose_judgments_are_all_negative_is_evaluated(tmp_path):
    q, r = _pair(tmp_path, b"1 0 a -1\n2 0 b 1\n", b"1 Q0 a 1 1 t\n2 Q0 b 1 1 t\n")
    out = run_te(["-q", "-m", "num_rel", "-m", "map", "-m", "ndcg", "-m", "bpref", q, r])
    assert b"num_rel               \t1\t0\nmap                   \t1\t0.0000\n" in out
    assert out.endswith(b"num_rel               \tall\t1\nmap                   \tall\t0.5000\n"
                        b"bpref                 \tall\t0.5000\nndcg                  \tall\t0.5000\n")


def test_iprec_of_an_empty_ranking_is_minus_nan_as_on_x86(tmp_path):
    q, r = _pair(tmp_path, b"1 0 a 1\n", b"1 Q0 b 1 1 t\n")
    out = run_te(["-q", "-J", "-m", "iprec_at_recall.0,1", "-m", "11pt_avg", q, r])
    assert out.splitlines()[0] == b"iprec_at_recall_0.00  \t1\t  -nan"
    assert out.splitlines()[-1] == b"11pt_avg              \tall\t  -nan"


@pytest.mark.parametrize("args,expected", [
    # trec_eval 10.0's output (built from tests/data/trec_eval/src): -c averages over every query of the relevance
    # file, and num_q counts them, whichever query -D keeps
    ("-c -D 0.301 -m map -m num_q test/qrels.test test/results.test",
     b"num_q                 \tall\t3\nmap                   \tall\t0.0108\n"),
    ("-c -D 0.11.PA=1 -m prefs_simp -m num_q -m prefs_num_prefs_poss -R prefs test/prefs.test "
     "test/prefs.results.test",
     b"num_q                 \tall\t24\nprefs_num_prefs_poss  \tall\t1\nprefs_simp            \tall\t0.0417\n"),
    ("-q -c -D 0.301 -R qrels_jg -m map_avgjg -m num_q test/qrels.123 test/results.test",
     b"map_avgjg             \t301\t0.0266\nnum_q                 \tall\t3\nmap_avgjg             \tall\t0.0089\n"),
    ("-D 0.11.PA=1 -m prefs_simp -m num_q -R prefs test/prefs.test test/prefs.results.test",
     b"num_q                 \tall\t1\nprefs_simp            \tall\t1.0000\n"),
])
def test_complete_averages_over_the_relevance_files_queries(args, expected):
    assert run_te(_local(args)) == expected


def test_preference_blocks_of_any_size_give_the_same_lines(monkeypatch):
    from rankcli.trec_eval import prefs

    args = _local("-m all_prefs -q -R qrels_prefs test/qrels.test test/results.test")
    whole = run_te(args)
    monkeypatch.setattr(prefs, "BLOCK_PAIRS", 1)  # one query a block
    assert run_te(args) == whole == (DATA / "test" / "out.test.qrels_prefs").read_bytes()
