"""Time per boosting iteration of every library loss against LightGBM's native lambdarank, in one process.

WEB30K-shaped data (default 100,000 rows in queries of 120 documents, 136 features, graded labels 0..4 that depend on
a few features; ``--sizes web30k`` draws the query sizes around 120 as MSLR-WEB30K's instead). Each loss trains
``--trees`` trees per round, the losses alternating within every round (their order reversed every other round), and
the time per iteration is the time between the first and the last tree's end divided by the trees between them
(Dataset construction and the first tree left out). LightGBM's ``lambdarank`` runs with its defaults (truncation
level 30). Prints the median per loss and its ratio to lambdarank; goal: every loss within 2x. Also times each
library objective alone (gradient and hessian of every row, once per call).

Run with the flock rule:
    flock /tmp/rankcli-bench.lock .venv/bin/python bench/losses.py --threads 1 --trees 12 --rounds 5
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np
from train import generate as letor_like  # bench/, this script's directory, is on the path
from train import time_per_tree as time_per_iteration

from rankcli.dataset import Dataset
from rankcli.train import LOSSES, LibraryObjective

LIBRARY = ["xendcg", "listnet", "ranknet", "listmle", "listmle-pa", "approxndcg", "lambdaloss"]


def generate(rows: int, features: int, sizes: str, rng: np.random.Generator) -> Dataset:
    """bench/train.py's LETOR-like data, in queries of 120 documents (``fixed``) or sizes drawn around 120."""
    fixed = [120] * (rows // 120) + ([rows % 120] if rows % 120 else [])
    return letor_like(rows, features, rng, fixed if sizes == "fixed" else None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--features", type=int, default=136)
    ap.add_argument("--sizes", choices=("fixed", "web30k"), default="fixed")
    ap.add_argument("--trees", type=int, default=12, help="trees per loss per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1, help="LightGBM threads (the objectives run on one)")
    ap.add_argument("--losses", default=",".join(["lambdamart"] + LIBRARY))
    args = ap.parse_args()

    rng = np.random.default_rng(0)
    ds = generate(args.rows, args.features, args.sizes, rng)
    print(f"data: {ds.n_rows} rows, {ds.n_queries} queries ({args.sizes} sizes, mean {ds.n_rows / ds.n_queries:.0f}), "
          f"{ds.n_features} features; {args.trees} trees per loss per round, {args.rounds} rounds; "
          f"{platform.machine()}, threads={args.threads}, load average {os.getloadavg()[0]:.2f} at start")
    names = args.losses.split(",")
    scores = rng.normal(size=ds.n_rows)
    for loss in [n for n in names if not LOSSES[n].native]:
        obj = LibraryObjective(loss, ds.labels, ds.offsets, "uniform", 0)
        obj(scores)
        t = time.perf_counter()
        for _ in range(3):
            obj(scores)
        print(f"objective only  {loss:12s} {1000 * (time.perf_counter() - t) / 3:8.1f} ms per call")

    per: dict[str, list[float]] = {n: [] for n in names}
    for r in range(args.rounds):
        order = names if r % 2 == 0 else names[::-1]
        for name in order:
            per[name].append(time_per_iteration(ds, name, args.trees, args.threads))
        print(f"round {r + 1}: " + ", ".join(f"{n} {1000 * per[n][-1]:.0f} ms" for n in names), flush=True)
    base = statistics.median(per["lambdamart"]) if "lambdamart" in per else None
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end\n")
    print("| loss | median ms per iteration | vs lambdarank | within 2x |")
    print("|---|---|---|---|")
    for n in names:
        med = statistics.median(per[n])
        ratio = med / base if base else float("nan")
        print(f"| {n} | {1000 * med:.1f} | {ratio:.2f}x | {'yes' if ratio <= 2 else 'NO'} |")


if __name__ == "__main__":
    main()
