"""``-q`` output is streamed: many one-document queries keep the peak memory of ``rankcli trec_eval -q`` and of
``rankcli eval --format trec_eval -q`` bounded by the data, never by the lines written (2M one-document queries had
reached 22 GB when the lines were built whole)."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.peak_memory import peak_mib, popen_rankcli

#: Queries of the large case; the small one has a tenth of them. Ten -q lines a query (P at 9 cutoffs and map).
QUERIES = 100_000
MEASURES = ["-m", "P", "-m", "map"]


def _write_case(directory, n: int) -> int:
    directory.mkdir()
    (directory / "run").write_text("".join(f"q{i} Q0 d{i} 1 {i % 7}.5 tag\n" for i in range(n)))
    (directory / "qrels").write_text("".join(f"q{i} 0 d{i} {i % 3}\n" for i in range(n)))
    return (directory / "run").stat().st_size + (directory / "qrels").stat().st_size


def _peak_mib(args: list[str], out_path) -> float:
    """The peak resident memory (MiB) of ``rankcli args`` in its own process (tests/peak_memory.py), its standard
    output to ``out_path``."""
    report = out_path.with_name(out_path.name + ".peak")
    with open(out_path, "wb") as out:
        proc = popen_rankcli(args, report, stdout=out, stderr=subprocess.PIPE,
                             env={**os.environ, "OMP_NUM_THREADS": "1"})
        err = proc.communicate()[1]
    assert proc.returncode == 0, err.decode()
    return peak_mib(report)


def _command(kind: str, case, by_query: bool) -> list[str]:
    q = ["-q"] if by_query else []
    if kind == "trec_eval":
        return ["trec_eval", *q, *MEASURES, str(case / "qrels"), str(case / "run")]
    return ["eval", "--format", "trec_eval", *q, *MEASURES, "--qrels", str(case / "qrels"), "--run", str(case / "run")]


@pytest.mark.parametrize("kind", ["trec_eval", "eval"])
def test_per_query_output_is_streamed_in_bounded_memory(tmp_path, kind):
    small_bytes = _write_case(tmp_path / "small", QUERIES // 10)
    large_bytes = _write_case(tmp_path / "large", QUERIES)
    peak, extra = {}, {}
    for name in ("small", "large"):
        case = tmp_path / name
        peak[name] = _peak_mib(_command(kind, case, True), tmp_path / f"{name}.out")
        extra[name] = peak[name] - _peak_mib(_command(kind, case, False), tmp_path / f"{name}.summary")
    output_mib = (tmp_path / "large.out").stat().st_size / 2 ** 20
    data_mib = (large_bytes - small_bytes) / 2 ** 20
    assert output_mib > 30  # the lines held whole would show: more than the slack below
    # what -q adds to the same command without it does not grow with the queries (a block of lines at a time) ...
    assert extra["large"] <= extra["small"] + 16, (peak, extra, output_mib)
    # ... and the whole command grows with the data (the files and their columns), not with the lines written
    assert peak["large"] - peak["small"] <= 8 * data_mib + 16, (peak, data_mib, output_mib)
