"""The paper's Table 1 on LightGBM's lambdarank example data with `rankcli experiment`, and its wall time.

Converts ``rank.train`` and ``rank.test`` of ``../shared/data/lightgbm-example`` (SVMlight with ``.query`` files)
with ``rankcli convert`` into one directory, whose queries ``rankcli experiment`` pools (251 queries) and splits
60/20/20 at random per trial; LambdaMART, XE-NDCG and ListNet are trained on every split (at most 500 trees, early
stopping after 50 on validation NDCG@5, rankcli's default LightGBM parameters, 1 thread per model) and tested with
the paper convention. Prints the summary (summary.md) and the wall time of the experiment command.

Run with the flock rule:  flock /tmp/rankcli-bench.lock /tmp/venv/bin/python bench/experiment.py [--trials 30 --jobs 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "lightgbm-example"


def rankcli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rankcli", *map(str, args)], check=True, capture_output=True,
                          text=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--losses", default="lambdamart,xendcg,listnet")
    ap.add_argument("--keep", type=Path, help="Keep the experiment directory here (default: a temporary one).")
    args = ap.parse_args()
    if not (args.data / "rank.train").exists():
        print(f"skipped: {args.data} has no rank.train", file=sys.stderr)
        return
    work = Path(tempfile.mkdtemp(prefix="rankcli-bench-experiment-"))
    try:
        rankcli("convert", args.data / "rank.train", args.data / "rank.test", "-o", work / "data")
        exp = args.keep or work / "exp"
        if args.keep and args.keep.exists():
            shutil.rmtree(args.keep)
        command = ["experiment", work / "data", "-o", exp, "--losses", args.losses, "--trials", args.trials,
                   "--jobs", args.jobs, "--trees", 500, "--early-stopping", 50, "--seed", 0]
        start = time.perf_counter()
        rankcli(*command)
        wall = time.perf_counter() - start
        print((exp / "summary.md").read_text())
        print(f"command: rankcli {' '.join(str(c) for c in command)}")
        print(f"wall time: {wall:.1f} s ({args.trials} trials x {len(args.losses.split(','))} losses, "
              f"--jobs {args.jobs}, {os.cpu_count()} cores)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
