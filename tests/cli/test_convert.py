"""rankcli convert / info / export end to end: exit statuses, exact stderr, nothing left behind, stdin, Ctrl-C."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pyarrow.parquet as pq
import pytest

from rankcli.errors import ExitStatus
from tests.conftest import REPO, SAMPLE
from tests.conftest import run_main as run
from tests.peak_memory import peak_mib, popen_rankcli


def test_convert_sample_directory_and_info(tmp_path, capsys):
    status, out, err = run(capsys, "convert", SAMPLE / "letor", "-o", tmp_path / "out", "--json")
    assert status == 0, err
    result = json.loads(out)
    assert [f["output"].rsplit("/", 1)[1] for f in result["files"]] == ["test.parquet", "train.parquet",
                                                                         "vali.parquet"]
    train = next(f for f in result["files"] if f["output"].endswith("train.parquet"))
    assert train["features"] == result["features"] == 40
    assert set(train) >= {"rows", "queries", "features", "docs_per_query", "label_histogram",
                          "queries_without_relevant", "seconds", "input", "output"}
    assert sum(train["label_histogram"].values()) == train["rows"]
    status, out, err = run(capsys, "info", tmp_path / "out" / "train.parquet", "--json")
    assert status == 0
    info = json.loads(out)
    for key in ("rows", "queries", "features", "docs_per_query", "label_histogram", "queries_without_relevant"):
        assert info[key] == train[key]
    status, out, err = run(capsys, "info", tmp_path / "out" / "train.parquet")
    assert status == 0 and "queries" in out and "label 4" in out


def test_summary_against_a_reference_count(tmp_path, capsys):
    (tmp_path / "a.txt").write_text("0 qid:1 1:1\n0 qid:1 1:2\n2 qid:2 1:1\n0.5 qid:3 2:1\n1 qid:3 2:1\n1 qid:3 1:1\n")
    status, out, _ = run(capsys, "convert", tmp_path / "a.txt", "-o", tmp_path / "a.parquet", "--json")
    s = json.loads(out)
    assert (s["rows"], s["queries"], s["features"]) == (6, 3, 2)
    assert s["docs_per_query"] == {"min": 1, "median": 2.0, "max": 3, "mean": 2.0}
    assert s["label_histogram"] == {"0": 2, "0.5": 1, "1": 2, "2": 1}
    assert s["queries_without_relevant"] == 1 and s["integer_labels"] is False


def test_lightgbm_layout_with_sidecar_matches_letor(tmp_path, capsys):
    assert run(capsys, "convert", SAMPLE / "lightgbm" / "train.txt", "-o", tmp_path / "l.parquet")[0] == 0
    assert run(capsys, "convert", SAMPLE / "letor" / "train.txt", "-o", tmp_path / "t.parquet")[0] == 0
    lt, tt = pq.read_table(tmp_path / "l.parquet"), pq.read_table(tmp_path / "t.parquet")
    assert lt.drop_columns(["qid"]).equals(tt.drop_columns(["qid", "docid"]))
    ql, qt = lt.column("qid").to_numpy(), tt.column("qid").to_numpy()
    assert np.array_equal(np.flatnonzero(np.diff(ql)), np.flatnonzero(np.diff(qt)))


def test_lightgbm_example_folder_converts_whatever_the_file_names(tmp_path, capsys):
    """LightGBM's own example folder (rank.train, rank.test, each with a .query sidecar) converts, not "no SVMlight
    text files": a file with a sidecar is text whatever its extension; one without (notes.md) is still skipped."""
    folder = tmp_path / "lambdarank"
    folder.mkdir()
    for name in ("rank.train", "rank.train.query", "rank.test", "rank.test.query", "PROVENANCE.md"):
        (folder / name).write_bytes((SAMPLE / "lightgbm-example" / name).read_bytes())
    status, out, err = run(capsys, "convert", folder, "-o", tmp_path / "lgb", "--json")
    assert status == 0, err
    files = {f["output"].rsplit("/", 1)[1]: f for f in json.loads(out)["files"]}
    assert sorted(files) == ["rank.test.parquet", "rank.train.parquet"]
    assert (files["rank.train.parquet"]["queries"], files["rank.train.parquet"]["rows"]) == (4, 27)
    assert (files["rank.test.parquet"]["queries"], files["rank.test.parquet"]["rows"]) == (2, 31)
    sizes = np.unique(pq.read_table(tmp_path / "lgb" / "rank.train.parquet").column("qid").to_numpy(),
                      return_counts=True)[1]
    assert sizes.tolist() == [int(n) for n in (folder / "rank.train.query").read_text().split()]
    (folder / "rank.train.query").unlink()
    (folder / "rank.test.query").unlink()
    status, _, err = run(capsys, "convert", folder, "-o", tmp_path / "none")
    assert status == ExitStatus.INVALID_INPUT
    assert err == (f"Error: {folder}: no SVMlight text files (.txt, .svm, .libsvm, .letor, ... optionally "
                   ".gz/.bz2/.xz, or any file with a .query sidecar)\n")


def test_existing_target_needs_overwrite(tmp_path, capsys):
    (tmp_path / "a.txt").write_text("1 qid:1 1:1\n")
    (tmp_path / "a.parquet").write_text("")  # empty (as mktemp leaves it): replaced, but only with --overwrite
    status, out, err = run(capsys, "convert", tmp_path / "a.txt", "-o", tmp_path / "a.parquet")
    assert status == ExitStatus.OUTPUT and err == f"Error: {tmp_path}/a.parquet: already exists; pass --overwrite " \
                                                  "to replace it\n"
    assert (tmp_path / "a.parquet").read_text() == ""
    assert run(capsys, "convert", tmp_path / "a.txt", "-o", tmp_path / "a.parquet", "--overwrite")[0] == 0
    assert run(capsys, "convert", tmp_path / "a.txt", "-o", tmp_path / "a.parquet", "--overwrite")[0] == 0


ERRORS = [
    ("abc qid:1 1:0.5\n", "{p}:1: non-numeric label, got 'abc'"),
    ("1 qid:1 5\n", "{p}:1: expected <index>:<value>, got '5'"),
    ("1 qid:1 3:1 3:2\n", "{p}:1: duplicate feature index on one line, got '3:2'"),
    ("1 qid:1 3:abc\n", "{p}:1: non-numeric feature value, got '3:abc'"),
    ("1 qid:q7 3:1\n", "{p}:1: non-integer qid, got 'qid:q7'"),
    ("1 qid:1 0:1\n", "{p}:1: feature index must be >= 1 (pass --zero-based for 0-based files), got '0:1'"),
    ("1 qid:1 -3:1\n", "{p}:1: feature index must be >= 1 (pass --zero-based for 0-based files), got '-3:1'"),
    ("1 qid:7 1:1\n" * 2 + "0 qid:8 1:1\n1 qid:7 1:1\n", "{p}:4: qid 7 reappears (first seen at line 1)"),
    ("", "{p}: no data rows (empty input)"),
    ("\x1f\x8b\x08\x00garbage\n", "{p}:1: not SVMlight text (binary data), got '\\x1f\\x8b\\x08\\x00garb'"),
]


@pytest.mark.parametrize("text,message", ERRORS)
def test_bad_input_exits_3_and_leaves_nothing(tmp_path, capsys, text, message):
    src = tmp_path / "train.txt"
    src.write_bytes(text.encode("latin-1"))
    status, out, err = run(capsys, "convert", src, "-o", tmp_path / "train.parquet")
    assert status == ExitStatus.INVALID_INPUT
    assert err == "Error: " + message.format(p=src) + "\n"
    assert out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.txt"]


def test_sidecar_errors(tmp_path, capsys):
    src = tmp_path / "train.txt"
    src.write_text("1 1:1\n0 1:2\n")
    (tmp_path / "train.txt.query").write_text("3\n")
    status, _, err = run(capsys, "convert", src, "-o", tmp_path / "o.parquet")
    assert status == 3
    assert err == (f"Error: {src}.query: group sizes add up to 3 rows but {src} has 2; the sidecar does not belong "
                   "to this file\n")
    (tmp_path / "train.txt.query").unlink()
    status, _, err = run(capsys, "convert", src, "-o", tmp_path / "o.parquet")
    assert status == 3 and err.startswith(f"Error: {src}:1: no qid: on the lines and no {src}.query sidecar")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.txt"]


def test_truncated_gzip_in_a_directory_leaves_no_directory(tmp_path, capsys):
    d = tmp_path / "Fold1"
    d.mkdir()
    (d / "train.txt").write_text("1 qid:1 1:1\n")
    blob = gzip.compress(b"".join(b"1 qid:%d 1:0.5 2:0.25\n" % i for i in range(5000)))
    (d / "vali.txt.gz").write_bytes(blob[:-40])
    status, _, err = run(capsys, "convert", d, "-o", tmp_path / "out")
    assert status == 3
    assert err == f"Error: {d}/vali.txt.gz: truncated compressed file (it ends before the end-of-stream marker)\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Fold1"]


def test_export_svmlight_and_qrels_round_trip(tmp_path, capsys):
    assert run(capsys, "convert", SAMPLE / "letor" / "vali.txt", "-o", tmp_path / "v.parquet",
               "--keep-comments")[0] == 0
    status, _, err = run(capsys, "export", tmp_path / "v.parquet", "-o", tmp_path / "v.txt")
    assert status == 0 and "wrote 913 rows" in err
    assert run(capsys, "convert", tmp_path / "v.txt", "-o", tmp_path / "v2.parquet", "--keep-comments")[0] == 0
    assert pq.read_table(tmp_path / "v2.parquet").equals(pq.read_table(tmp_path / "v.parquet"))
    # the export reads the same as the original text (values may be spelled differently: 9.6e-05 for 0.000096)
    from sklearn.datasets import load_svmlight_file

    a = load_svmlight_file(str(SAMPLE / "letor" / "vali.txt"), query_id=True, n_features=40)
    b = load_svmlight_file(str(tmp_path / "v.txt"), query_id=True, n_features=40)
    assert (a[0] != b[0]).nnz == 0 and np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2])

    assert run(capsys, "export", tmp_path / "v.parquet", "-o", tmp_path / "v.qrels", "--format", "trec-qrels")[0] == 0
    lines = (tmp_path / "v.qrels").read_text().splitlines()
    t = pq.read_table(tmp_path / "v.parquet")
    assert len(lines) == t.num_rows
    qid, it, doc, label = lines[0].split()
    assert (int(qid), it, doc, float(label)) == (t["qid"][0].as_py(), "0", t["docid"][0].as_py(), t["label"][0].as_py())
    from rankcli.formats.trec.parse import read_qrels

    qrels = read_qrels(tmp_path / "v.qrels")
    assert np.array_equal(qrels.labels, t["label"].to_numpy())


def test_export_qrels_without_docid_names_rows(tmp_path, capsys):
    (tmp_path / "a.txt").write_text("1 qid:4 1:1\n0 qid:4 1:1\n2 qid:9 1:1\n")
    assert run(capsys, "convert", tmp_path / "a.txt", "-o", tmp_path / "a.parquet")[0] == 0
    assert run(capsys, "export", tmp_path / "a.parquet", "-o", tmp_path / "a.qrels", "-f", "trec-qrels")[0] == 0
    assert (tmp_path / "a.qrels").read_text() == "4 0 4-0 1\n4 0 4-1 0\n9 0 9-2 2\n"


def test_export_json_summary(tmp_path, capsys):
    (tmp_path / "a.txt").write_text("1 qid:4 1:1\n0 qid:4 1:1\n2 qid:9 1:1\n")
    assert run(capsys, "convert", tmp_path / "a.txt", "-o", tmp_path / "a.parquet")[0] == 0
    status, out, err = run(capsys, "export", tmp_path / "a.parquet", "-o", tmp_path / "a.qrels", "-f", "trec-qrels",
                           "--json")
    assert status == 0 and err == f"wrote 3 rows to {tmp_path}/a.qrels\n"
    summary = json.loads(out)
    assert {k: summary[k] for k in ("input", "output", "format", "rows")} == {
        "input": str(tmp_path / "a.parquet"), "output": str(tmp_path / "a.qrels"), "format": "trec-qrels", "rows": 3}
    status, out, err = run(capsys, "export", tmp_path / "a.parquet", "-o", tmp_path / "a.qrels", "-f", "trec-qrels")
    assert status == 4 and out == ""
    assert err == f"Error: {tmp_path}/a.qrels: already exists; pass --overwrite to replace it\n"


def test_export_does_not_import_pandas(tmp_path):
    """pa.array / pa.scalar / Python literals in pyarrow.compute import pandas (about a second); export avoids them."""
    (tmp_path / "a.txt").write_text("1 qid:4 1:1 # docid = x\n0 qid:4 2:0.5 # docid = y\n2 qid:9 1:1 # docid = z\n")
    code = ("import sys\nfrom rankcli.cli import main\n"
            f"assert main(['convert', {str(tmp_path / 'a.txt')!r}, '-o', {str(tmp_path / 'a.parquet')!r}]) == 0\n"
            "loaded = 'pandas' in sys.modules\n"
            f"assert main(['export', {str(tmp_path / 'a.parquet')!r}, '-o', {str(tmp_path / 'a.txt2')!r}]) == 0\n"
            f"assert main(['export', {str(tmp_path / 'a.parquet')!r}, '-o', {str(tmp_path / 'a.qrels')!r},"
            " '-f', 'trec-qrels']) == 0\n"
            "print(loaded, 'pandas' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1].split() == ["False", "False"]
    assert (tmp_path / "a.qrels").read_text() == "4 0 x 1\n4 0 y 0\n9 0 z 2\n"
    assert (tmp_path / "a.txt2").read_text() == ("1 qid:4 1:1 2:0 # docid = x\n0 qid:4 2:0.5 # docid = y\n"
                                                 "2 qid:9 1:1 # docid = z\n")


def test_info_on_a_missing_or_bad_file(tmp_path, capsys):
    status, _, err = run(capsys, "info", tmp_path / "nope.parquet")
    assert status == 3 and err == f"Error: {tmp_path}/nope.parquet: no such file\n"
    (tmp_path / "x.parquet").write_text("not parquet")
    status, _, err = run(capsys, "info", tmp_path / "x.parquet")
    assert status == 3 and err.startswith(f"Error: {tmp_path}/x.parquet: not a readable Parquet file")


def test_stdin_subprocess(tmp_path, cli):
    text = (SAMPLE / "letor" / "test.txt").read_bytes()
    result = cli("convert", "-", "-o", tmp_path / "s.parquet", "--json", input=text)
    assert result.returncode == 0, result.stderr.decode()
    s = json.loads(result.stdout)
    assert s["input"] == "<stdin>" and s["rows"] == text.count(b"\n")
    result = cli("convert", "-", "-o", tmp_path / "bad.parquet", input=b"1 qid:1 1:1\n1 qid:1 1:x\n")
    assert result.returncode == 3
    assert result.stderr.decode() == "Error: <stdin>:2: non-numeric feature value, got '1:x'\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.parquet"]


def test_interrupt_leaves_nothing(tmp_path):
    """Ctrl-C while converting a slow standard input: status 130, no output and no temporary file left."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "rankcli", "convert", "-", "-o", str(tmp_path / "o.parquet"),
                             "--block-bytes", "64"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=tmp_path, env=env)
    for i in range(200):  # several blocks written, the process waits for more input
        proc.stdin.write(b"1 qid:%d 1:0.5 2:0.25\n" % i)
    proc.stdin.flush()
    deadline = time.time() + 60
    while time.time() < deadline and not any(p.name.startswith(".o.parquet") for p in tmp_path.iterdir()):
        time.sleep(0.1)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == ExitStatus.INTERRUPTED
    assert err.decode().endswith("Error: interrupted\n")
    assert list(tmp_path.iterdir()) == []


def test_sidecar_beside_a_file_with_qid_is_ignored_with_a_note(tmp_path, capsys):
    """A .query sidecar next to a file that has qid: is not used: said on stderr, and not even read (a broken one
    does not fail the conversion); an overflowing one beside a file without qid: is exit 3 with path:line."""
    src = tmp_path / "train.txt"
    src.write_text("1 qid:1 1:1\n0 qid:2 1:2\n")
    (tmp_path / "train.txt.query").write_text("not sizes\n")
    status, out, err = run(capsys, "convert", src, "-o", tmp_path / "o.parquet", "--json")
    assert status == 0, err
    assert err.splitlines()[0] == (f"note: {src}.query ignored: {src} has qid: on its lines, which give the queries")
    assert pq.read_table(tmp_path / "o.parquet").column("qid").to_pylist() == [1, 2]
    src.write_text("1 1:1\n0 1:2\n")
    (tmp_path / "train.txt.query").write_text("99999999999999999999999\n")
    status, _, err = run(capsys, "convert", src, "-o", tmp_path / "p.parquet")
    assert status == 3
    assert err == (f"Error: {src}.query:1: group sizes add up to more rows than a file can hold "
                   "(9223372036854775807), got '99999999999999999999999'\n")


def test_symlink_loop_and_broken_link_are_named(tmp_path, capsys):
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    status, _, err = run(capsys, "convert", tmp_path / "loop", "-o", tmp_path / "o.parquet")
    assert status == 3 and err == f"Error: {tmp_path}/loop: symbolic link loop (too many levels of symbolic links)\n"
    status, _, err = run(capsys, "convert", tmp_path / "dangling", "-o", tmp_path / "o.parquet")
    assert status == 3
    assert err == f"Error: {tmp_path}/dangling: broken symbolic link (its target {tmp_path}/nowhere does not exist)\n"
    status, _, err = run(capsys, "info", tmp_path / "loop")
    assert status == 3 and err == f"Error: {tmp_path}/loop: symbolic link loop (too many levels of symbolic links)\n"


def test_num_features_beyond_the_dense_limit_is_refused_up_front(tmp_path, capsys):
    """Past the documented 20,000 columns, --num-features is refused before anything is written (1000000 would
    write 218 MB for a 2-row file)."""
    src = tmp_path / "a.txt"
    src.write_text("1 qid:1 1:1\n0 qid:1 2:1\n")
    status, _, err = run(capsys, "convert", src, "-o", tmp_path / "a.parquet", "--num-features", "1000000")
    assert status == ExitStatus.USAGE
    assert err == ("Error: --num-features 1000000: at most 20000 (each feature is a dense float32 column; a sparse "
                   "file with more features does not fit this data model)\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def _peak_rss_mb(tmp_path, args, feed) -> tuple[int, bytes, float]:
    """Run the CLI fed by ``feed()`` (an iterator of byte chunks) on stdin: exit status, stderr, peak RSS in MB (the
    child's own, tests/peak_memory.py)."""
    report = tmp_path / "peak"
    proc = popen_rankcli(args, report, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        for chunk in feed():
            proc.stdin.write(chunk)
    except BrokenPipeError:  # the command stopped reading: what the test wants
        pass
    try:
        proc.stdin.close()
    except BrokenPipeError:
        pass
    err = proc.stderr.read()
    proc.wait()
    return proc.returncode, err, peak_mib(report)


def test_memory_is_bounded_for_input_without_newlines(tmp_path):
    """Input without newlines must not cost memory in proportion to it (300 MB of /dev/zero peaked at 5.9 GB and a 50 MB
    comment line at 2 GB before the error): the first read of binary data is refused, and a line stops at MAX_LINE_BYTES
    (4 MiB): the peak stays near the interpreter's own (about 100 MB with numpy and pyarrow loaded) while up to 300 MB
    are offered."""
    zeros = bytes(1 << 20)

    def dev_zero():
        for _ in range(300):
            yield zeros

    status, err, peak = _peak_rss_mb(tmp_path, ["convert", "-", "-o", tmp_path / "z.parquet"], dev_zero)
    assert status == 3 and err.decode() == ("Error: <stdin>:1: not SVMlight text (binary data), got "
                                            "'\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00'\n")
    assert peak < 400, peak

    def long_comment():
        yield b"1 qid:1 1:1\n1 qid:1 1:2 # "
        for _ in range(50):
            yield b"a" * (1 << 20)
        yield b"\n"

    status, err, peak = _peak_rss_mb(tmp_path, ["convert", "-", "-o", tmp_path / "c.parquet"], long_comment)
    assert status == 3 and err.decode().startswith("Error: <stdin>:2: line longer than 4194304 bytes, the limit")
    assert peak < 400, peak
    assert [p.name for p in tmp_path.iterdir() if p.name != "peak"] == []


def test_overflow_is_an_error_and_no_numpy_warning_reaches_stderr(tmp_path, cli):
    """A value float32 cannot hold (`1 qid:1 1:1e39`) is an error, not an inf with a RuntimeWarning on stderr. Run with
    warnings shown (-W default overrides any filter) so that a leaked warning would show in stderr."""
    src = tmp_path / "a.txt"
    src.write_text("1 qid:1 1:1 2:1e39\n" * 3)
    result = cli("convert", src, "-o", tmp_path / "a.parquet", env={"PYTHONWARNINGS": "default"})
    assert result.returncode == 3
    assert result.stderr.decode() == (f"Error: {src}:1: feature value overflows float32 (largest finite "
                                      "3.4028235e+38), got '2:1e39'\n")
    src.write_text("inf qid:1 1:inf 2:nan 3:3.4e38\n")
    result = cli("convert", src, "-o", tmp_path / "b.parquet", env={"PYTHONWARNINGS": "default"})
    assert result.returncode == 0 and b"Warning" not in result.stderr, result.stderr.decode()


@pytest.mark.parametrize("column,values,message", [
    ("docid", ["a", "b c", "d"], "row 1 (qid 1): docid 'b c' cannot be written to SVMlight text: it contains "
     "whitespace (or nothing), and `# docid = X` reads X up to the first blank: it would not read back"),
    ("docid", ["a", None, "e\nf"], "row 2 (qid 2): docid 'e\\nf' cannot be written to SVMlight text: it contains "
     "whitespace (or nothing), and `# docid = X` reads X up to the first blank: it would not read back"),
    ("docid", ["a", "b", ""], "row 2 (qid 2): docid '' cannot be written to SVMlight text: it contains whitespace "
     "(or nothing), and `# docid = X` reads X up to the first blank: it would not read back"),
    ("comment", ["docid = a", "x\ry", "z"], "row 1 (qid 1): comment 'x\\ry' cannot be written to SVMlight text: it "
     "contains a line break, which would end the SVMlight line"),
])
def test_export_refuses_text_that_would_not_read_back(tmp_path, capsys, column, values, message):
    """Messages that mislead: a docid with whitespace or a newline was written, and read back cut (or as two lines)."""
    import pyarrow as pa

    data = tmp_path / "d.parquet"
    pq.write_table(pa.table({"qid": pa.array([1, 1, 2]), "label": [1.0, 0.0, 1.0], column: values,
                             "f1": pa.array([1, 2, 3], pa.float32())}), str(data))
    status, out, err = run(capsys, "export", data, "-o", tmp_path / "d.txt")
    assert (status, out, err) == (ExitStatus.INVALID_INPUT, "", f"Error: {data}: {message}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.parquet"]
    # null docids are fine: the row is written without a comment
    pq.write_table(pa.table({"qid": pa.array([1, 1]), "label": [1.0, 0.0], "docid": ["a", None],
                             "f1": pa.array([1, 2], pa.float32())}), str(data))
    assert run(capsys, "export", data, "-o", tmp_path / "ok.txt")[0] == 0
    assert (tmp_path / "ok.txt").read_text() == "1 qid:1 1:1 # docid = a\n0 qid:1 1:2\n"
