"""Training time by thread count and data size, on a machine kept busy: what the default thread count saves.

For each training-set size (``--rows``, LETOR-like data as bench/train.py generates it), trains ``--trees`` trees with
one thread, with every CPU this process may use (``rankcli.cpus.available_cpus``) and with rankcli's default (the
CPUs, at most one thread per ``rankcli.cpus.ROWS_PER_THREAD`` training rows), alternating the three within every
round, and prints the best and median wall time of each and the ratio of every-CPU to default. ``--busy K`` keeps K
processes spinning on the CPUs meanwhile (what a shared machine or an oversubscribed job does to LightGBM's threads,
which wait for each other after every histogram); the load average is printed before and after.

Run with the flock rule:
    flock /tmp/rankcli-bench.lock .venv/bin/python bench/threads.py --rows 2000,20000,100000 --busy 2
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from train import generate  # noqa: E402  (bench/, this script's directory, is on the path)

from rankcli.cpus import ROWS_PER_THREAD, available_cpus, default_threads  # noqa: E402
from rankcli.train import TrainConfig, train_model  # noqa: E402


def _spin() -> None:
    while True:
        pass


def seconds(ds, trees: int, threads: int) -> float:
    start = time.perf_counter()
    train_model(ds, None, TrainConfig(loss="lambdamart", trees=trees, threads=threads, seed=1))
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default="2000,20000,100000", help="training-set sizes, comma-separated")
    ap.add_argument("--features", type=int, default=46)
    ap.add_argument("--trees", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--busy", type=int, default=0, help="processes kept spinning during the measurement")
    args = ap.parse_args()

    cpus = available_cpus()
    print(f"# {platform.machine()}, {os.cpu_count()} cores, {cpus} available; {args.trees} trees of lambdamart, "
          f"{args.rounds} rounds alternating; ROWS_PER_THREAD {ROWS_PER_THREAD}; {args.busy} spinning processes")
    print(f"# load before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.busy)]
    for p in spinners:
        p.start()
    try:
        print(f"{'rows':>8} {'case':>10} {'threads':>8} {'best s':>8} {'median s':>9}")
        for rows in (int(r) for r in args.rows.split(",")):
            ds = generate(rows, args.features, np.random.default_rng(0))
            counts = {"one": 1, "every CPU": cpus, "default": default_threads(None, rows)}
            times: dict[str, list[float]] = {name: [] for name in counts}
            seconds(ds, 2, 1)  # warm up: imports, first allocations
            for _ in range(args.rounds):
                for name, n in counts.items():
                    times[name].append(seconds(ds, args.trees, n))
            for name, n in counts.items():
                print(f"{rows:>8} {name:>10} {n:>8} {min(times[name]):>8.3f} {statistics.median(times[name]):>9.3f}")
            ratio = statistics.median(times["every CPU"]) / statistics.median(times["default"])
            print(f"{rows:>8} every CPU / default, medians: {ratio:.2f}x")
    finally:
        for p in spinners:
            p.terminate()
            p.join()
    print(f"# load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
