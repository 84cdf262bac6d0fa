"""Benchmark: `rankcli propensity` on 1M impressions against the `rankcli simulate-clicks` run that made them.

Target: propensity estimation on 1M impressions takes less time than the simulation that made them.

Workload: 100,000 queries of 10..40 documents, grades 0..4 with MSLR-like frequencies (.51, .32, .14, .02, .01), 10
feature columns (three decimals, as in LETOR files); PBM clicks (eta 1, the paper's click probabilities) on a fully
random order, top 10 displayed, no-click impressions kept, 10 impressions per query = 1,000,000 impressions of 10
documents (10M rows).

- `simulate`: `python -m rankcli simulate-clicks IN -o LOG --model pbm --ranker random --max-rank 10 --keep-no-click
  --impressions 10 --seed 1 --json` in a subprocess, end to end.
- `propensity`: `python -m rankcli propensity LOG -o OUT.json --seed 1 --json` in a subprocess, end to end (1000
  bootstrap replicates over the 100,000 source queries).

Rounds alternate the two; the median of each is reported, with the ratio propensity / simulate (target: below 1).
Run: flock /tmp/rankcli-bench.lock /work/venv/bin/python bench/propensity.py [--queries 100000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from clicks import make_data  # noqa: E402  (bench/, this script's directory, is on the path)

from rankcli.formats.parquet import write_dataset  # noqa: E402


def timed(args: list[str]) -> tuple[float, str]:
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "rankcli", *args], capture_output=True, text=True, cwd=REPO)
    elapsed = time.perf_counter() - t
    if out.returncode != 0:
        raise SystemExit(f"rankcli {' '.join(args)} failed ({out.returncode}):\n{out.stderr}")
    return elapsed, out.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=100_000)
    ap.add_argument("--impressions", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="rankcli-bench-propensity-") as tmp:
        tmp = Path(tmp)
        data = tmp / "in.parquet"
        write_dataset(data, make_data(args.queries, args.seed, sizes=(10, 40)))
        log = tmp / "clicks.parquet"
        out = tmp / "propensity.json"
        sim_args = ["simulate-clicks", str(data), "-o", str(log), "--model", "pbm", "--ranker", "random",
                    "--max-rank", "10", "--keep-no-click", "--impressions", str(args.impressions), "--seed", "1",
                    "--json", "--overwrite"]
        prop_args = ["propensity", str(log), "-o", str(out), "--seed", "1", "--json", "--overwrite"]
        sim_times, prop_times = [], []
        result = None
        for _ in range(args.rounds):
            t, text = timed(sim_args)
            sim_times.append(t)
            summary = json.loads(text)
            t, text = timed(prop_args)
            prop_times.append(t)
            result = json.loads(text)
        sim, prop = statistics.median(sim_times), statistics.median(prop_times)
        print(f"impressions {summary['impressions']:,}  rows {summary['rows']:,}  log {log.stat().st_size / 1e6:.1f} MB"
              f"  source queries {result['queries']:,}  bootstrap {result['bootstrap']}")
        print(f"simulate-clicks (end to end)  {sim:7.2f} s   rounds {', '.join(f'{t:.2f}' for t in sim_times)}")
        print(f"propensity      (end to end)  {prop:7.2f} s   rounds {', '.join(f'{t:.2f}' for t in prop_times)}")
        print(f"ratio propensity / simulate   {prop / sim:7.2f}   (target: below 1)")
        print("propensity: " + ", ".join(f"{p}:{v:.3f}" for p, v in zip(result["positions"], result["propensity"])))


if __name__ == "__main__":
    main()
