"""A TREC input refused on the error path exits 3 every time: no SIGABRT from Arrow's thread pool at exit (a
threaded CSV read that failed left parse tasks running, and the process then aborted in about one run in ten)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

from rankcli.cli import main

MALFORMED_RUN = "1 Q0 a 1 3.0 t\n1 Q0 b 2\n"  # the second line lacks fields


def _files(tmp_path):
    (tmp_path / "run.txt").write_text(MALFORMED_RUN)
    (tmp_path / "qrels.txt").write_text("1 0 a 1\n")
    return ["eval", "--qrels", str(tmp_path / "qrels.txt"), "--run", str(tmp_path / "run.txt")]


def test_the_malformed_run_200_times_and_under_threads(tmp_path, capsys):
    args = _files(tmp_path)
    assert [main(args) for _ in range(100)] == [3] * 100
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(lambda _: main(args), range(100))) == [3] * 100
    capsys.readouterr()


def test_a_process_exiting_right_after_the_error_is_not_aborted(tmp_path):
    args = _files(tmp_path)
    script = textwrap.dedent(f"""
        import sys
        from rankcli.cli import main
        sys.exit(main({args!r}))
    """)
    statuses = [subprocess.run([sys.executable, "-c", script], capture_output=True).returncode for _ in range(6)]
    assert statuses == [3] * 6
