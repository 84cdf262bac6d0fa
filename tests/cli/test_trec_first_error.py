"""One error rule in ``rankcli eval --qrels --run``: for a pair of bad files the C path and the numpy path (forced by
``RANKCLI_PURE_PYTHON=1``, or by ``--ties input``, whose rows the C path cannot give) report the same first error:
the earliest line at fault (the run's before the qrels'), ``path:line`` 1-based in the file that has it, and the
token as written; exit 3. A number is what Arrow reads as one (the C path reads a subset of it)."""

from __future__ import annotations

import pytest

from rankcli.cli import main

GOOD_RUN = "1 Q0 a 1 2 t\n1 Q0 b 2 1 t\n"
GOOD_QRELS = "1 0 a 1\n1 0 b 0\n"
LONG_RUN = "".join(f"{q} Q0 d{d} {d} {d / 7:.3f} t\n" for q in range(50) for d in range(100))

#: name -> (run, qrels, the expected message after "Error: <dir>/")
CASES = {
    "infinite label": (GOOD_RUN, "1 0 a 1\n1 0 b inf\n", "q.txt:2: relevance is infinite, got 'inf'"),
    "label overflowing to inf": (GOOD_RUN, "1 0 a 1\n1 0 b 1e999\n", "q.txt:2: relevance is infinite, got '1e999'"),
    "negative infinite label": (GOOD_RUN, "1 0 a -inf\n", "q.txt:1: relevance is infinite, got '-inf'"),
    "infinite label of a later query": ("1 Q0 a 1 2 t\n2 Q0 b 2 1 t\n", "2 0 b 3\n1 0 a 1\n1 0 c inf\n",
                                        "q.txt:3: relevance is infinite, got 'inf'"),
    "NaN label": (GOOD_RUN, "1 0 a nan\n", "q.txt:1: relevance is NaN, got 'nan'"),
    "digit separator": (GOOD_RUN + "1 Q0 c 3 1_0 t\n", GOOD_QRELS, "r.txt:3: score must be a number, got '1_0'"),
    "Arabic-Indic digit": (GOOD_RUN + "1 Q0 c 3 \u0663 t\n", GOOD_QRELS,
                           "r.txt:3: score must be a number, got '\u0663'"),
    "hexadecimal score": (GOOD_RUN + "1 Q0 c 3 0x10 t\n", GOOD_QRELS, "r.txt:3: score must be a number, got '0x10'"),
    "a bad number deep in a long run": (LONG_RUN.replace(" 3.000 t\n", " 3.0.0 t\n", 1), "0 0 d1 1\n",
                                        "r.txt:22: score must be a number, got '3.0.0'"),
    "bad number before a short line": (GOOD_RUN + "1 Q0 c 3 x t\n1 Q0 d 4\n", GOOD_QRELS,
                                       "r.txt:3: score must be a number, got 'x'"),
    "short line before a bad number": (GOOD_RUN + "1 Q0 d 4\n1 Q0 c 3 x t\n", GOOD_QRELS,
                                       "r.txt:3: expected 6 fields \"qid Q0 docid rank score tag\", got '1 Q0 d 4'"),
    "repeated pair before a bad number": ("1 Q0 a 1 2 t\n1 Q0 a 2 1 t\n1 Q0 c 3 x t\n", GOOD_QRELS,
                                          "r.txt:2: document a appears twice for query 1 (first at line 1), got "
                                          "'1 Q0 a 2 1 t'"),
    "bad number before a repeated pair": ("1 Q0 a 1 y t\n1 Q0 a 2 1 t\n", GOOD_QRELS,
                                          "r.txt:1: score must be a number, got 'y'"),
    "tabs, then a bad number": ("1\tQ0 a 1 2 t\n1 Q0 b 2 z t\n", GOOD_QRELS,
                                "r.txt:2: score must be a number, got 'z'"),
    "the run's error before the qrels'": (GOOD_RUN + "1 Q0 c 3 x t\n", "1 0 a y\n",
                                          "r.txt:3: score must be a number, got 'x'"),
    "qrels line short": (GOOD_RUN, "1 0 a 1\n1 0 b\n",
                         "q.txt:2: expected 4 fields \"qid iteration docid relevance\", got '1 0 b'"),
    "qrels pair judged twice, then a bad label": (GOOD_RUN, "1 0 a 1\n1 0 a 2\n1 0 b x\n",
                                                 "q.txt:2: document a is judged twice for query 1 (first at line 1), "
                                                 "got '1 0 a 2'"),
}


def _message(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    return err[-1] if err else ""


@pytest.mark.parametrize("name", list(CASES))
def test_both_paths_report_the_first_error_alike(tmp_path, monkeypatch, capsys, name):
    run, qrels, expected = CASES[name]
    (tmp_path / "r.txt").write_text(run)
    (tmp_path / "q.txt").write_text(qrels)
    args = ["eval", "--qrels", str(tmp_path / "q.txt"), "--run", str(tmp_path / "r.txt")]
    got = {}
    for path, env, extra in [("C", "0", []), ("numpy", "1", []), ("numpy, ties in input order", "0",
                                                                   ["--ties", "input"])]:
        monkeypatch.setenv("RANKCLI_PURE_PYTHON", env)
        status = main(args + extra)
        got[path] = (status, _message(capsys))
    assert set(got.values()) == {(3, f"Error: {tmp_path}/{expected}")}, got


def test_the_c_path_reads_the_good_pairs(tmp_path, monkeypatch):
    """The table above tests both paths: the C path takes these files when they are good (it is not a numpy path
    twice over)."""
    from rankcli.formats.trec import join_native as trec_fast

    if not trec_fast.available():
        pytest.skip("the C path is not built")
    monkeypatch.setenv("RANKCLI_PURE_PYTHON", "0")
    assert trec_fast.join_bytes(GOOD_RUN.encode(), GOOD_QRELS.encode()) is not None
    assert trec_fast.join_bytes(GOOD_RUN.encode(), b"1 0 a 1\n1 0 b 1e999\n") is None  # the numpy path names the line
