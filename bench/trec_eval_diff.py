"""Differential check of ``rankcli trec_eval`` against trec_eval on 300 random cases (tests/trec_eval_random.py),
every line under each flag set; prints the number of differing lines (the target: 0).

    python bench/trec_eval_diff.py /path/to/trec_eval [cases]

Build trec_eval from ../shared/reference/trec_eval (or tests/data/trec_eval/src) with the rbp fix described in
tests/data/trec_eval/PROVENANCE.md. A case trec_eval itself fails on (exit status not 0) is counted, not compared.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rankcli.trec_eval import getopt  # noqa: E402
from rankcli.trec_eval.pipeline import evaluate  # noqa: E402
from tests.trec_eval_random import case, flag_sets  # noqa: E402


def main() -> int:
    binary = sys.argv[1]
    cases = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    differing = compared = failed = lines = 0
    with tempfile.TemporaryDirectory() as tmp:
        q, r = Path(tmp) / "qrels", Path(tmp) / "run"
        for seed in range(cases):
            qrels, run, complete = case(np.random.default_rng(10_000 + seed))
            q.write_bytes(qrels)
            r.write_bytes(run)
            for flags in flag_sets(complete):
                args = [*flags, str(q), str(r)]
                expected = subprocess.run([binary, *args], capture_output=True)
                if expected.returncode:
                    failed += 1
                    continue
                got = b"".join(evaluate(getopt.parse(args))).splitlines()
                want = expected.stdout.splitlines()
                compared += 1
                lines += len(want)
                differing += sum(a != b for a, b in zip(got, want)) + abs(len(got) - len(want))
    print(f"{cases} cases, {compared} comparisons ({lines} lines), {failed} where trec_eval failed: "
          f"{differing} differing lines")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
