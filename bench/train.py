"""Per-iteration training time of rankcli's losses against LightGBM's native objectives, in one process.

Generates a LETOR-like dataset (default 300k rows, 136 features, query sizes around 120 like MSLR-WEB30K, graded
labels 0..4 that depend on a few features), then trains each loss for ``--trees`` trees per round, alternating the
losses within every round, and reports the median time per tree (the time between the first and the last tree's
end, so Dataset construction is excluded). Goal: the library's ``xendcg`` at most 1.15x LightGBM's native
``rank_xendcg``. Also times the objective alone (gradient + hessian for the whole dataset).

Run with the flock rule:
    flock /tmp/rankcli-bench.lock /tmp/venv/bin/python bench/train.py --threads 1 --trees 10 --rounds 5
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import numpy as np

from rankcli.core import losses
from rankcli.dataset import Dataset
from rankcli.train import LibraryObjective, TrainConfig, train_model


def generate(rows: int, features: int, rng: np.random.Generator, sizes: list[int] | None = None) -> Dataset:
    """LETOR-like data: query sizes ``sizes`` (default: drawn around 120, as MSLR-WEB30K's), labels 0..4 that depend
    on 10 of the features."""
    if sizes is None:
        sizes = []
        while sum(sizes) < rows:
            sizes.append(int(np.clip(rng.normal(120, 50), 5, 400)))
        sizes[-1] -= sum(sizes) - rows
        sizes = [s for s in sizes if s > 0]
    qids = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    x = rng.random((rows, features), dtype=np.float32)
    w = np.zeros(features)
    w[:10] = rng.normal(0, 1, 10)
    signal = x @ w.astype(np.float32) + rng.normal(0, 0.5, rows)
    cuts = np.quantile(signal, [0.5, 0.75, 0.9, 0.97])
    labels = np.searchsorted(cuts, signal).astype(np.float64)
    return Dataset(qids=qids, labels=labels, features=np.asfortranarray(x),
                   feature_names=[f"f{i}" for i in range(1, features + 1)])


def time_per_tree(ds: Dataset, loss: str, trees: int, threads: int | None) -> float:
    stamps: list[float] = []
    train_model(ds, None, TrainConfig(loss=loss, trees=trees, threads=threads, seed=1),
                on_iteration=lambda *_: stamps.append(time.perf_counter()))
    return (stamps[-1] - stamps[0]) / (len(stamps) - 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=300_000)
    ap.add_argument("--features", type=int, default=136)
    ap.add_argument("--trees", type=int, default=15, help="trees per loss per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1,
                    help="LightGBM threads (default 1: multi-threaded timings swing widely on a shared machine)")
    ap.add_argument("--losses", default="xendcg-native,xendcg,lambdamart,listnet,ranknet")
    args = ap.parse_args()

    rng = np.random.default_rng(0)
    ds = generate(args.rows, args.features, rng)
    print(f"data: {ds.n_rows} rows, {ds.n_queries} queries, {ds.n_features} features; "
          f"{args.trees} trees per loss per round, {args.rounds} rounds; {platform.machine()}, "
          f"threads={args.threads or 'all'}")

    # The objective alone, whole dataset: the Python-side cost per tree.
    scores = rng.normal(size=ds.n_rows)
    for loss in ("xendcg", "listnet", "ranknet"):
        obj = LibraryObjective(loss, ds.labels, ds.offsets, "uniform", 0)
        obj(scores)
        t = time.perf_counter()
        for _ in range(5):
            obj(scores)
        print(f"objective only  {loss:13s} {1000 * (time.perf_counter() - t) / 5:8.1f} ms per call")
    print(f"(RankNet pair block cap: {losses.MAX_PAIR_ELEMENTS} cells)")

    names = args.losses.split(",")
    per: dict[str, list[float]] = {n: [] for n in names}
    ratios: list[float] = []
    for r in range(args.rounds):
        order = names if r % 2 == 0 else names[::-1]  # alternate which loss goes first
        for name in order:
            per[name].append(time_per_tree(ds, name, args.trees, args.threads))
        if "xendcg" in per and "xendcg-native" in per:
            ratios.append(per["xendcg"][-1] / per["xendcg-native"][-1])
        print(f"round {r + 1}: " + ", ".join(f"{n} {1000 * per[n][-1]:.0f} ms" for n in names), flush=True)
    print()
    base = statistics.median(per["xendcg-native"]) if "xendcg-native" in per else None
    print(f"{'loss':15s} {'median ms/tree':>15s} {'vs rank_xendcg':>15s}")
    for n in names:
        med = statistics.median(per[n])
        print(f"{n:15s} {1000 * med:15.1f} {med / base if base else float('nan'):14.2f}x")
    if ratios:
        print(f"\nxendcg / xendcg-native per round: {', '.join(f'{x:.3f}' for x in ratios)}; "
              f"median {statistics.median(ratios):.3f}x (goal <= 1.15x)")


if __name__ == "__main__":
    main()
