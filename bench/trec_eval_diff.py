"""Differential check of ``rankcli trec_eval`` against trec_eval on 300 random qrels cases and 300 random preference
cases (``-R prefs``, ``-R qrels_prefs``; tests/trec_eval_random.py), every line under each flag set; prints the number
of differing lines (the target: 0).

    python bench/trec_eval_diff.py /path/to/trec_eval [cases]

Build trec_eval from ../shared/reference/trec_eval (or tests/data/trec_eval/src) with the rbp fix described in
tests/data/trec_eval/PROVENANCE.md. A case trec_eval itself fails on (exit status not 0) is counted, not compared;
for a preference case rankcli must then refuse it too (a refusal that does not match counts as a differing line).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rankcli.errors import InputError  # noqa: E402
from rankcli.trec_eval import getopt  # noqa: E402
from rankcli.trec_eval.pipeline import evaluate  # noqa: E402
from tests.trec_eval_random import case, flag_sets, prefs_case, prefs_flag_sets  # noqa: E402


def _compare(binary: str, args: list[str], refusal_expected: bool) -> tuple[int, int, bool]:
    """(differing lines, lines, compared) of one run of both. Where trec_eval fails, a qrels case is left out and a
    preference case must be refused by rankcli too (else it counts as one differing line)."""
    expected = subprocess.run([binary, *args], capture_output=True, cwd=Path(args[-1]).parent)
    if expected.returncode and not refusal_expected:
        return 0, 0, False
    try:
        got = b"".join(evaluate(getopt.parse(args))).splitlines()
    except InputError:
        got = None
    if expected.returncode:
        return int(got is not None), 0, False
    want = expected.stdout.splitlines()
    if got is None:
        return len(want), len(want), True
    return sum(a != b for a, b in zip(got, want)) + abs(len(got) - len(want)), len(want), True


def main() -> int:
    binary = sys.argv[1]
    cases = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    totals = {}
    with tempfile.TemporaryDirectory() as tmp:
        q, r = Path(tmp) / "qrels", Path(tmp) / "run"
        for kind in ("qrels", "prefs"):
            differing = compared = failed = lines = 0
            for seed in range(cases):
                rng = np.random.default_rng(10_000 + seed)
                if kind == "qrels":
                    qrels, run, complete = case(rng)
                    sets = flag_sets(complete)
                else:
                    qrels, run, complete, rel_format = prefs_case(rng)
                    sets = prefs_flag_sets(complete, rel_format)
                q.write_bytes(qrels)
                r.write_bytes(run)
                for flags in sets:
                    d, n, ok = _compare(binary, [*flags, str(q), str(r)], kind == "prefs")
                    differing, lines, compared, failed = differing + d, lines + n, compared + ok, failed + (not ok)
            totals[kind] = differing
            print(f"{kind}: {cases} cases, {compared} comparisons ({lines} lines), {failed} where trec_eval failed: "
                  f"{differing} differing lines")
    return 1 if any(totals.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
