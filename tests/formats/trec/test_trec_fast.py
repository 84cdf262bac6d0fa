"""The C path of reading a TREC run with its qrels (rankcli.formats.trec_native, through trec_fast) against the numpy
path, which is the reference: the same Run on every input it takes, None (and the numpy path's own error) on every
input it leaves, no crash on any bytes. The measures themselves are checked against pytrec_eval in
tests/evaluate/test_trec_eval_parity.py, which goes through the C path too."""

from __future__ import annotations

import os
import shutil
import sysconfig

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankcli import evaluate as E
from rankcli.core import metrics as M
from rankcli.dataset import Run
from rankcli.errors import InputError
from rankcli.evaluate import runs
from rankcli.formats.trec import join_native as trec_fast
from tests.trec_loading import load_trec_run

native = pytest.mark.skipif(trec_fast.trec_native is None, reason="the C path is not built (no C compiler)")

#: Every measure rankcli computes on a TREC run (its all_trec set), compared value by value.
ALL = ["all_trec"]


def test_the_c_path_is_built_where_a_compiler_is():
    """An install on a machine with a C compiler (CI's) must have built the C path: without this test a failed build
    would only make rankcli slower, silently."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler}): the numpy path serves alone")
    assert trec_fast.trec_native is not None, "setup.py did not build rankcli.formats.trec_native"


def _numpy_path(monkeypatch):
    monkeypatch.setenv("RANKCLI_PURE_PYTHON", "1")


def _evaluate(run_path, qrels_path, **options):
    run = load_trec_run(run_path, qrels_path, ranked=True, threads=options.pop("threads", 1), **options)
    report = E.evaluate_run(run, ALL, M.Convention.preset("trec"))
    return run, report


def _same_reports(a, b):
    assert a.qids.tolist() == b.qids.tolist()
    assert a.notes == b.notes and a.queries_without_judged == b.queries_without_judged and a.runid == b.runid
    assert a.result.per_query.keys() == b.result.per_query.keys()
    for name, values in a.result.per_query.items():
        np.testing.assert_array_equal(values, b.result.per_query[name], err_msg=name)  # exact, not close
    assert a.result.means.keys() == b.result.means.keys()
    for name, value in a.result.means.items():
        other = b.result.means[name]
        assert value == other or (value != value and other != other), name


def _both_paths(monkeypatch, run_path, qrels_path, **options):
    fast_run, fast = _evaluate(run_path, qrels_path, **options)
    with monkeypatch.context() as m:
        _numpy_path(m)
        slow_run, slow = _evaluate(run_path, qrels_path, **options)
    assert slow_run.ranked and slow_run.docids is None  # the numpy join's rows, ranked by the rank stage
    return fast_run, fast, slow


def _random_files(tmp_path, seed: int, *, n_queries: int = 40, messy: bool = False):
    """A tie-heavy run and its qrels: documents missing from the qrels, judged documents missing from the run, run
    queries without judgments, qrels queries absent from the run, negative (pooled, unjudged) labels, ids that are
    prefixes of one another, non-ASCII ids, a query's lines split in two blocks, numbers in every notation."""
    rng = np.random.default_rng(seed)
    run_lines, qrels_lines = [], []
    notations = ["{:.1f}", "{:.4f}", "{:.3e}", "{:+.2f}", "{:.20f}", "{:.17g}", "{}"]
    for q in range(n_queries):
        qid = f"{q}" if q % 3 else f"q-{q}é"
        docs = [f"d{int(i)}" for i in rng.choice(80, size=int(rng.integers(1, 60)), replace=False)]
        docs += ["dé", "d"] if q % 5 == 0 else []
        values = rng.choice(np.array([0.0, -0.0, 0.5, 1.0, 1.5, 2.0, -3.0, 1e-300, 123456.789]), size=len(docs))
        for i, (d, s) in enumerate(zip(docs, values)):
            text = notations[int(rng.integers(len(notations)))].format(float(s))
            sep = ("\t", " ", "  ", " \x0b", "\x0c ")[int(rng.integers(5))] if messy else " "
            run_lines.append((q, f"{qid}{sep}Q0 {d} {i + 1}{sep}{text} tag{seed}"))
        if rng.random() < 0.85:
            judged = [d for d in docs if rng.random() < 0.5] + [f"u{int(i)}" for i in range(int(rng.integers(0, 4)))]
            for d in judged:
                qrels_lines.append(f"{qid} 0 {d} {int(rng.choice([-1, 0, 0, 1, 2, 3, 4]))}")
    for q in range(3):
        qrels_lines += [f"absent{q} 0 d1 2", f"absent{q} 0 d2 0"]
    order = np.argsort([q for q, _ in run_lines], kind="stable")
    lines = [run_lines[i][1] for i in order]
    lines = lines[len(lines) // 2:] + lines[: len(lines) // 2] if seed % 2 else lines  # one query in two blocks
    rng.shuffle(qrels_lines)
    if messy:
        lines = ["# a comment with 1 2 3 4 5 6 fields", ""] + [line + ("\r" if i % 7 == 0 else "") for i, line in
                                                             enumerate(lines)] + ["   "]
    run_path, qrels_path = tmp_path / f"run{seed}.txt", tmp_path / f"qrels{seed}.txt"
    run_path.write_text("\n".join(lines) + ("" if seed % 3 == 0 else "\n"), encoding="utf-8")
    qrels_path.write_text("\n".join(qrels_lines) + "\n", encoding="utf-8")
    return run_path, qrels_path


@native
@pytest.mark.parametrize("seed", range(6))
def test_the_c_path_gives_the_numpy_paths_measures(tmp_path, monkeypatch, seed):
    run_path, qrels_path = _random_files(tmp_path, seed, messy=seed >= 3)
    fast_run, fast, slow = _both_paths(monkeypatch, run_path, qrels_path, threads=1 + seed % 3)
    assert fast_run.ranked and fast_run.docids is None  # it was the C path
    _same_reports(fast, slow)


@native
@pytest.mark.parametrize("options", [{"max_docs": 3}, {"judged_only": True}, {"complete": True},
                                     {"max_docs": 5, "judged_only": True, "complete": True}])
def test_the_c_path_applies_trec_evals_options_alike(tmp_path, monkeypatch, options):
    run_path, qrels_path = _random_files(tmp_path, 11)
    fast_run, fast, slow = _both_paths(monkeypatch, run_path, qrels_path, **options)
    assert fast_run.ranked
    _same_reports(fast, slow)


@native
@pytest.mark.parametrize("threads", [1, 2, 3, 8, 64, 1000])
def test_any_number_of_threads_gives_one_result(tmp_path, threads):
    """Slices of a few lines, or none at all: more threads than lines."""
    run_path, qrels_path = _random_files(tmp_path, 21, n_queries=3)
    reference = trec_fast.join_bytes(run_path.read_bytes(), qrels_path.read_bytes(), 1)
    got = trec_fast.join_bytes(run_path.read_bytes(), qrels_path.read_bytes(), threads)
    for name in ("run_qnames", "run_first", "scores", "match"):
        np.testing.assert_array_equal(getattr(got, name), getattr(reference, name), err_msg=name)
    np.testing.assert_array_equal(got.qrels.qcodes, reference.qrels.qcodes)
    assert got.tag == reference.tag == b"tag21"  # the bytes: eval decodes checked text, trec_eval prints them


@native
def test_ranked_rows_follow_trec_evals_order(tmp_path):
    """Score descending, equal scores by docid descending in byte order (strcmp: a prefix first... of the two, the
    shorter id is the smaller), -0.0 tied with 0.0, huge tie groups sorted in n log n."""
    docs = ["b", "a", "ab", "é", "a\x7f", "B", "ba"]
    lines = [f"1 Q0 {d} 1 {s} t" for d, s in zip(docs, ["0", "-0", "0.0", "1", "0", "0e5", "-0.0"])]
    lines += [f"2 Q0 x{i:05d} 1 7 t" for i in range(3000)]  # one tie group of 3000
    (tmp_path / "r.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "q.txt").write_text("1 0 a 1\n2 0 x00000 1\n")
    got = trec_fast.join_bytes((tmp_path / "r.txt").read_bytes(), (tmp_path / "q.txt").read_bytes(), 2)
    assert got.run_first.tolist() == [0, 7, 3007]
    expected = sorted(zip([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0], [d.encode() for d in docs]),
                      key=lambda t: (-t[0], [-b for b in t[1]] + [1]))  # descending bytes, a prefix after
    assert [s for s, _ in expected] == got.scores[:7].tolist()
    assert got.match[:7].tolist() == [-1 if d != b"a" else 0 for _, d in expected]
    assert got.match[7:].tolist() == [-1] * 2999 + [1]  # x00000 ranks last: the smallest id


@native
@pytest.mark.parametrize("run, qrels", [
    ("1 Q0 a 1 2 t\n1 Q0 b 1 2\n", "1 0 a 1\n"),             # a line with five fields
    ("1 Q0 a 1 2 t x\n", "1 0 a 1\n"),                       # seven
    ("1 Q0 a 1 x2 t\n", "1 0 a 1\n"),                        # not a number
    ("1 Q0 a 1 nan t\n", "1 0 a 1\n"),                       # NaN (refused by the numpy path)
    ("1 Q0 a 1 inf t\n", "1 0 a 1\n"),                       # inf: left to the numpy path
    ("1 Q0 a 1 0x1p3 t\n", "1 0 a 1\n"),                     # hex
    ("1 Q0 a 1 1e t\n", "1 0 a 1\n"),
    ("1 Q0 a 1 . t\n", "1 0 a 1\n"),
    ("1 Q0 a 1 2 t\n1 Q0 a 2 1 t\n", "1 0 a 1\n"),           # a document ranked twice
    ("1 Q0 a 1 2 t\n2 Q0 b 1 1 t\n1 Q0 a 2 1 t\n", "1 0 a 1\n"),  # twice, in two blocks
    ("1 Q0 a 1 2 t\n", "1 0 a 1\n1 0 a 0\n"),                # judged twice
    ("1 Q0 a\x00 1 2 t\n", "1 0 a 1\n"),                     # a NUL byte
    ("", "1 0 a 1\n"),                                       # empty
    ("# only a comment\n\n", "1 0 a 1\n"),
    ("1 Q0 a 1 2 t\n", ""),
])
def test_input_outside_the_c_path_goes_to_the_numpy_path(tmp_path, monkeypatch, run, qrels):
    assert trec_fast.join_bytes(run.encode(), qrels.encode(), 2) is None
    (tmp_path / "r.txt").write_text(run)
    (tmp_path / "q.txt").write_text(qrels)
    outcomes = []
    for pure in ("0", "1"):  # the same outcome (the numpy path's) whichever path is tried first
        monkeypatch.setenv("RANKCLI_PURE_PYTHON", pure)
        try:
            outcomes.append(E.evaluate_trec(tmp_path / "r.txt", tmp_path / "q.txt", ["map"]).result.means)
        except InputError as exc:
            outcomes.append(str(exc))
    assert outcomes[0] == outcomes[1]


@native
def test_a_run_sharing_no_document_gets_the_numpy_paths_error(tmp_path, monkeypatch):
    (tmp_path / "r.txt").write_text("1 Q0 a 1 2 t\n")
    (tmp_path / "q.txt").write_text("1 0 b 1\n")
    assert trec_fast.join_bytes(b"1 Q0 a 1 2 t\n", b"1 0 b 1\n") is not None  # read, but it cannot name the documents
    with pytest.raises(InputError, match="share no document id.*the run has 'a', the qrels 'b'"):
        load_trec_run(tmp_path / "r.txt", tmp_path / "q.txt", ranked=True)


@native
@pytest.mark.parametrize("text", ["0.1", "-0.000", "+.5", "5.", "1e-400", "1e400", "-1E+308", "4.9e-324",
                                  "2.2250738585072011e-308", "9007199254740993", "123456789012345678901234567890",
                                  "0.30000000000000004441", "1" * 400 + ".5", "3.14159265358979323846264338327950288",
                                  "7e22", "7e23", "00000000000000000000000001.25", "1e-22", "123e-25",
                                  # mantissas past 2^53: one rounding in int -> double, one in the scaling
                                  "1173122633160899524e-6", "178808351375360542e2", "1173122.633160899524"])
def test_numbers_convert_exactly_as_the_numpy_path_converts_them(tmp_path, text):
    from rankcli.formats.trec.parse import read_run_columns

    data = f"1 Q0 a 1 {text} t\n".encode()
    (tmp_path / "r.txt").write_bytes(data)
    got = trec_fast.join_bytes(data, b"1 0 a 1\n").scores[0]
    expected = read_run_columns(tmp_path / "r.txt").values[0]
    assert got == expected and np.signbit(got) == np.signbit(expected)
    assert got == float(text)


@native
def test_a_document_id_of_16_mib_goes_to_the_numpy_path():
    huge = b"d" * (1 << 24)
    assert trec_fast.join_bytes(b"1 Q0 " + huge + b" 1 2 t\n", b"1 0 a 1\n") is None
    assert trec_fast.join_bytes(b"1 Q0 " + huge[:-1] + b" 1 2 t\n", b"1 0 a 1\n") is not None


def test_rankcli_pure_python_turns_the_c_path_off(tmp_path, monkeypatch):
    run_path, qrels_path = _random_files(tmp_path, 3)
    monkeypatch.setenv("RANKCLI_PURE_PYTHON", "1")
    assert not trec_fast.available() and trec_fast.join_bytes(b"1 Q0 a 1 2 t\n", b"1 0 a 1\n") is None
    slow = load_trec_run(run_path, qrels_path, ranked=True)
    monkeypatch.setenv("RANKCLI_PURE_PYTHON", "0")
    assert slow.ranked and np.array_equal(slow.labels, load_trec_run(run_path, qrels_path, ranked=True).labels)


def test_a_ranked_run_cannot_be_evaluated_in_input_order():
    run = Run(qids=np.array([1]), labels=np.zeros(1), scores=np.zeros(1), offsets=np.array([0, 1]),
                        ranked=True)
    assert runs.kernel_convention(run, M.Convention.preset("trec")).ties == "input"
    with pytest.raises(ValueError, match="rank order"):
        runs.kernel_convention(run, M.Convention(ties="input"))


# ---------------------------------------------------------------------------------------------------------------------
# Hostile bytes: the C path never crashes, and whatever it reads the numpy path reads the same


_ALPHABET = st.sampled_from([b"1", b"2", b"q", b"Q0", b"a", b"b", b"\xc3\xa9", b" ", b"  ", b"\t", b"\r", b"\x0b",
                             b"\x0c", b"\n", b"\n", b"#", b"-", b"+", b".", b"e", b"5", b"0", b"\x00", b"x", b"7",
                             b"\x01", b"\x1f", b"\x7f", b"a_document_id"])  # a field over eight bytes
_LINE = st.lists(_ALPHABET, min_size=0, max_size=14).map(b"".join)


@native
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(run_lines=st.lists(_LINE, max_size=12), qrels_lines=st.lists(_LINE, max_size=8),
       threads=st.integers(1, 5))
def test_hostile_bytes_never_crash_and_agree_with_the_numpy_path(tmp_path, run_lines, qrels_lines, threads):
    from rankcli.formats.trec.parse import read_qrels_columns, read_run_columns

    valid_run = [b"1 Q0 a 1 2 t", b"1 Q0 b 2 1.5 t", b"2 Q0 a 1 -1e2 u"]
    run = b"\n".join(valid_run + run_lines)
    qrels = b"\n".join([b"1 0 a 2", b"2 0 c 1"] + qrels_lines)
    got = trec_fast.join_bytes(run, qrels, threads)
    if got is None:
        return
    (tmp_path / "r.txt").write_bytes(run)
    (tmp_path / "q.txt").write_bytes(qrels)
    lines = read_run_columns(tmp_path / "r.txt")  # raises if the C path read what the numpy path refuses
    judged = read_qrels_columns(tmp_path / "q.txt")
    assert got.run_qnames.tolist() == lines.qnames.tolist() and got.tag.decode() == lines.tag
    assert sorted(got.scores.tolist()) == sorted(lines.values.tolist())
    assert got.qrels.qnames.tolist() == judged.qnames.tolist()
    np.testing.assert_array_equal(got.qrels.qcodes, judged.qcodes)
    np.testing.assert_array_equal(got.qrels.values, judged.values)


def test_the_environment_of_the_tests_does_not_turn_the_c_path_off():
    assert os.environ.get("RANKCLI_PURE_PYTHON", "") in ("", "0")


def test_every_c_file_is_built_and_shipped():
    """Each .c file of the module is one of setup.py's sources, and each header is named by MANIFEST.in: setuptools
    puts an extension's sources in the sdist by itself, but not its headers, and a missing one breaks every install
    from the sdist (it then falls back to the numpy path, silently)."""
    import fnmatch
    from pathlib import Path

    repo = Path(__file__).resolve().parents[3]
    csrc = repo / "rankcli" / "formats" / "csrc"
    setup_py = (repo / "setup.py").read_text()
    includes = [line.split(None, 1)[1].strip() for line in (repo / "MANIFEST.in").read_text().splitlines()
                if line.startswith("include ")]
    assert sorted(p.name for p in csrc.glob("*.c")) == ["join.c", "module.c", "read.c"]
    for c_file in csrc.glob("*.c"):
        assert f'"{{CSRC}}/{c_file.name}"' in setup_py.replace("f\"", "\""), c_file.name
    for header in csrc.glob("*.h"):
        assert any(fnmatch.fnmatch(f"rankcli/formats/csrc/{header.name}", pattern) for pattern in includes), header


@native
@pytest.mark.parametrize("threads", [1, 2, 3, 7])
def test_blank_and_comment_lines_between_the_lines_leave_no_gap(tmp_path, threads):
    """Each thread reads into its share of one array sized by its bytes' lines; blank and comment lines leave gaps
    that the merge closes in place: the same result as the file without them, scores listed or not."""
    run_path, qrels_path = _random_files(tmp_path, 5, n_queries=30)
    lines = run_path.read_text(encoding="utf-8").splitlines()
    holed = []
    for i, line in enumerate(lines):
        holed += [line] + (["", "# 1 Q0 x 1 2 t", "  \t"] if i % 4 == 0 else [])
    clean = trec_fast.join_bytes(run_path.read_bytes(), qrels_path.read_bytes(), 1)
    data = ("\n".join(holed) + "\n").encode()
    got = trec_fast.join_bytes(data, qrels_path.read_bytes(), threads)
    bare = trec_fast.join_bytes(data, qrels_path.read_bytes(), threads, scores=False)
    for name in ("run_qnames", "run_first", "scores", "match"):
        np.testing.assert_array_equal(getattr(got, name), getattr(clean, name), err_msg=name)
    for name in ("run_qnames", "run_first", "match"):
        np.testing.assert_array_equal(getattr(bare, name), getattr(clean, name), err_msg=name)
    assert bare.scores is None
    np.testing.assert_array_equal(got.qrels.qcodes, clean.qrels.qcodes)
    np.testing.assert_array_equal(bare.qrels.values, clean.qrels.values)


def _same_join(a, b):
    for name in ("run_qnames", "run_first", "scores", "match"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.tag == b.tag
    for name in ("qnames", "qcodes", "values"):
        np.testing.assert_array_equal(getattr(a.qrels, name), getattr(b.qrels, name), err_msg=name)


def _contiguous_files(seed: int, split: bool) -> tuple[bytes, bytes]:
    """A run whose queries' lines are together (unless ``split``: one query in two blocks), tie-heavy, with blank
    and comment lines and CRs between queries, plain decimals only; and its qrels."""
    rng = np.random.default_rng(seed)
    run, qrels = [], []
    for q in range(int(rng.integers(1, 40))):
        qid = f"q{q}" if q % 4 else f"{q}é"
        docs = [f"d{int(i)}" for i in rng.choice(300, size=int(rng.integers(1, 120)), replace=False)]
        lines = [f"{qid} Q0 {d} {i + 1} {rng.choice([0.5, 0.25, 1.0, -2.0, 0.0, 3.125])} t{seed}" for i, d in
                 enumerate(docs)]
        run.append("\n".join(lines) + ("\n\n# a comment\n" if q % 5 == 2 else "\r\n" if q % 7 == 3 else "\n"))
        qrels += [f"{qid} 0 {d} {int(rng.integers(-1, 4))}" for d in docs if rng.random() < 0.3]
        qrels.append(f"{qid} 0 unretrieved{q} 1")
    if split and len(run) > 2:
        run.append(run[0].replace(" Q0 d", " Q0 again_d"))  # query 0 again, after the others
    return "".join(run).encode(), ("\n".join(qrels) + "\n").encode()


@native
@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("threads", [1, 2, 3, 5, 64])
def test_the_run_joined_as_read_equals_the_run_read_whole(seed, threads):
    """Queries whose lines are together are joined as they are read, each thread a slice of whole queries (a query
    running over a slice's end moves the end); a query met again after others (odd seeds) sends the run to the
    whole read. The same result either way, and on any number of threads."""
    run, qrels = _contiguous_files(seed, split=seed % 2 == 1)
    streamed = trec_fast.trec_native.join(run, qrels, threads)
    whole = trec_fast.trec_native.join(run, qrels, threads, True, False)
    assert streamed is not None and whole is not None
    assert [bytes(x) if isinstance(x, bytearray) else x for x in streamed] == \
        [bytes(x) if isinstance(x, bytearray) else x for x in whole]
    _same_join(trec_fast.join_bytes(run, qrels, threads), trec_fast.join_bytes(run, qrels, 1))
