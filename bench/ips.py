"""Benchmark: what IPS adds to training time per tree (the target: "IPS adds no more than 5% to training time
per tree").

Workload: ``--queries`` source queries of 10..40 documents (grades 0..4 with MSLR-like frequencies, ``--features``
feature columns that carry the grade weakly); `rankcli simulate-clicks --model pbm --ranker random --max-rank 10
--keep-no-click --impressions 10` makes the click log (a subprocess, not timed). Its impressions are pooled per source
query twice (`rankcli.train.ips.pooled_training_set`, as `train` does): without propensities (`--pool-impressions`: the
click-through rates) and with `--propensity pbm:1` (c / p(position), p = 1/r). The two training sets have the same
rows (every document displayed at least once), only the labels differ.

Each round trains every variant for ``--trees`` trees in this process (`rankcli.train.train_model` with the objective
`train` uses), alternating, the order of naive and IPS swapped every other round. Time per tree = (end of the last
tree - end of the first) / (trees - 1): LightGBM's Dataset construction (binning, identical for both) and the first
tree are left out, so the ratio is not diluted by them. Medians over the rounds; the ratio IPS / naive per loss (target
at most 1.05). Also timed: the pooling itself (once per training run, not per tree) and the objective alone (gradient
and hessian of the whole training set), where IPS could add work.

For ranknet the naive `--pool-impressions` run already uses the pairwise IPS objective (propensities all 1), so the
ratio isolates the propensities; the library RankNet on the pooled click-through rates (pairs y_d > y_e only, the
objective `train --loss ranknet` would use on a pooled dataset without IPS) is timed too, for reference.

Run: flock /tmp/rankcli-bench.lock nice /work/venv/bin/python bench/ips.py [--queries 10000] [--trees 30] [--rounds 3]
     [--threads 1 --cpu-time]   (CPU time per tree: less sensitive to other jobs on a shared machine)
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rankcli import __version__  # noqa: E402
from rankcli.dataset import Dataset  # noqa: E402
from rankcli.formats.parquet import feature_names, read_dataset, write_dataset  # noqa: E402
from rankcli.train import LibraryObjective, TrainConfig, train_model  # noqa: E402
from rankcli.train.ips import LOG_COLUMNS, objective_for, pooled_training_set  # noqa: E402

GRADE_FREQ = (0.51, 0.32, 0.14, 0.02, 0.01)


def make_data(queries: int, features: int, seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(10, 41, queries)
    n = int(sizes.sum())
    qids = np.repeat(np.arange(1, queries + 1, dtype=np.int64), sizes)
    labels = rng.choice(5, size=n, p=GRADE_FREQ).astype(np.float64)
    x = rng.random((n, features), dtype=np.float32)
    x[:, :5] += (labels[:, None] * rng.random((n, 5)) * 0.3).astype(np.float32)  # a weak signal in 5 features
    return Dataset(qids=qids, labels=labels, features=np.round(x, 3), feature_names=feature_names(features))


CLOCK = time.perf_counter
LEAVES: dict[tuple[str, str], list[float]] = {}


def per_tree(pooled: Dataset, config: TrainConfig, objective, key: tuple[str, str]) -> float:
    ends: list[float] = []
    result = train_model(pooled, None, config, on_iteration=lambda i, v, b: ends.append(CLOCK()), objective=objective)
    leaves = [int(line[len("num_leaves="):]) for line in result.booster.model_to_string().splitlines()
              if line.startswith("num_leaves=")]
    LEAVES.setdefault(key, []).append(float(np.mean(leaves)))
    return (ends[-1] - ends[0]) / (len(ends) - 1)


def objective_seconds(objective, n: int, repeats: int = 5) -> float:
    preds = np.random.default_rng(0).normal(size=n)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        objective(preds, None)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--features", type=int, default=136)
    ap.add_argument("--trees", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--losses", default="xendcg,ranknet")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cpu-time", action="store_true", help="time trees in this process's CPU time (time.process_time) "
                    "instead of wall-clock time: less sensitive to other jobs on a shared machine (use --threads 1)")
    args = ap.parse_args()
    global CLOCK
    if args.cpu_time:
        CLOCK = time.process_time
    loss_names = [s.strip() for s in args.losses.split(",") if s.strip()]

    print(f"# bench/ips.py  {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC  rankcli {__version__}  "
          f"{platform.machine()} {os.cpu_count()} cores  load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory(prefix="rankcli-bench-ips-") as tmp:
        tmp = Path(tmp)
        data, log = tmp / "in.parquet", tmp / "clicks.parquet"
        write_dataset(data, make_data(args.queries, args.features, args.seed))
        sim = subprocess.run([sys.executable, "-m", "rankcli", "simulate-clicks", str(data), "-o", str(log), "--model",
                              "pbm", "--ranker", "random", "--max-rank", "10", "--keep-no-click", "--impressions",
                              "10", "--seed", "1", "--json"], capture_output=True, text=True, cwd=REPO)
        if sim.returncode != 0:
            raise SystemExit(f"simulate-clicks failed ({sim.returncode}):\n{sim.stderr}")
        ds = read_dataset(log, extra_columns=LOG_COLUMNS)

    results: dict[str, dict[str, list[float]]] = {}
    pools: dict[str, dict[str, Dataset]] = {}
    pool_times: dict[str, list[float]] = {"naive": [], "ips": []}
    for loss in loss_names:
        pools[loss] = {}
        for variant, spec in (("naive", None), ("ips", ("pbm", 1.0))):
            t = time.perf_counter()
            pools[loss][variant], _ = pooled_training_set(ds, loss=loss, propensity=spec)
            pool_times[variant].append(time.perf_counter() - t)
        a, b = pools[loss]["naive"], pools[loss]["ips"]
        assert a.n_rows == b.n_rows and np.array_equal(a.offsets, b.offsets)
        results[loss] = {"naive": [], "ips": []}
        if loss == "ranknet":
            results[loss]["library ranknet, pooled CTR"] = []
    sample = next(iter(pools.values()))["naive"]
    print(f"click log: {ds.n_queries:,} impressions, {ds.n_rows:,} rows; pooled: {sample.n_queries:,} queries, "
          f"{sample.n_rows:,} rows, {sample.n_features} features; {args.trees} trees per run, {args.threads} threads, "
          f"{args.rounds} rounds; clock: {'CPU time' if args.cpu_time else 'wall-clock'}")

    for r in range(args.rounds):
        for loss in loss_names:
            config = TrainConfig(loss=loss, trees=args.trees, early_stopping=0, threads=args.threads, seed=args.seed)
            order = ["naive", "ips"] if r % 2 == 0 else ["ips", "naive"]
            for variant in order + [v for v in results[loss] if v not in ("naive", "ips")]:
                pooled = pools[loss]["naive" if variant.startswith("library") else variant]
                objective = None if variant.startswith("library") else objective_for(loss, pooled)
                results[loss][variant].append(per_tree(pooled, config, objective, (loss, variant)))
        print(f"round {r + 1}: " + "  ".join(f"{loss} {v} {t[-1] * 1e3:.1f} ms" for loss in loss_names
                                              for v, t in results[loss].items()), flush=True)

    print()
    print(f"{'loss':10} {'variant':30} {'ms/tree (median)':>17} {'rounds (ms)':>24} {'objective ms':>13} "
          f"{'leaves/tree':>12}")
    for loss in loss_names:
        for variant, times in results[loss].items():
            pooled = pools[loss]["naive" if variant.startswith("library") else variant]
            obj = (LibraryObjective(loss, pooled.labels, pooled.offsets) if variant.startswith("library") or
                   objective_for(loss, pooled) is None else objective_for(loss, pooled))
            each = ", ".join(f"{t * 1e3:.1f}" for t in times)
            print(f"{loss:10} {variant:30} {statistics.median(times) * 1e3:17.1f} "
                  f"{each:>24} {objective_seconds(obj, pooled.n_rows) * 1e3:13.1f} "
                  f"{statistics.mean(LEAVES[(loss, variant)]):12.1f}")
        ratio = statistics.median(results[loss]["ips"]) / statistics.median(results[loss]["naive"])
        per_round = [i / n for i, n in zip(results[loss]["ips"], results[loss]["naive"])]
        print(f"{loss:10} ratio IPS (pbm:1) / naive (--pool-impressions) per tree: {ratio:.3f} "
              f"(per round {', '.join(f'{x:.3f}' for x in per_round)}; target <= 1.05: "
              f"{'met' if ratio <= 1.05 else 'NOT met'})")
    print(f"pooling (once per run, {len(loss_names)} losses): naive {statistics.median(pool_times['naive']):.3f} s, "
          f"pbm:1 {statistics.median(pool_times['ips']):.3f} s")
    print(f"load at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
