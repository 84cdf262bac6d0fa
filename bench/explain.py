"""Benchmark: `rankcli explain`'s ranking importance against the model calls it cannot avoid.

Target: on 100,000 rows x 136 features (WEB30K's width), all F x R within-query permutations take at most
1.5 x F x R x the time of one predict of the whole dataset. What explain adds to the F x R model calls: one
within-query permutation per repeat, the permuted column's gather and restore, and the metric per query after each
call.

Workload: 1,000 queries of 100 documents, 136 standard normal features, graded labels 0..4 from the first 20
features plus noise; a LightGBM lambdarank model (--trees trees, 31 leaves, feature_fraction 0.5, so that it splits on
nearly every feature). Every feature is permuted (the library's skip of features the model never splits on is turned
off), R = --repeats.

Measurement, interleaved so that the machine's load hits both alike: after each of explain's (feature, repeat) steps
a callback times one plain `predict` of the unpermuted dataset, the competitor, and that time is taken out of
explain's total. Ratio = explain's own time / the sum of the F x R plain predicts. Both use the same threads
(rankcli.runtime.cpus.default_threads). --contributions also times the TreeSHAP pass (for information).

Run: flock /tmp/rankcli-bench.lock .venv/bin/python bench/explain.py [--rows 100000] [--repeats 2] [--trees 100]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def make_data(rows: int, features: int, seed: int = 0):
    from rankcli.dataset import Dataset

    rng = np.random.default_rng(seed)
    per_query = 100
    queries = rows // per_query
    x = np.asfortranarray(rng.normal(size=(queries * per_query, features)).astype(np.float32))
    signal = x[:, :20] @ rng.normal(size=20) + rng.normal(scale=2.0, size=x.shape[0])
    labels = np.digitize(signal, np.quantile(signal, [0.5, 0.75, 0.9, 0.97])).astype(np.float64)
    qids = np.repeat(np.arange(queries, dtype=np.int64), per_query)
    return Dataset(qids=qids, labels=labels, features=x, feature_names=[f"f{i}" for i in range(1, features + 1)])


def train(ds, trees: int):
    import lightgbm

    params = {"objective": "lambdarank", "num_leaves": 31, "learning_rate": 0.1, "feature_fraction": 0.5,
              "min_data_in_leaf": 20, "verbosity": -1, "seed": 1, "deterministic": True, "force_row_wise": True}
    train_set = lightgbm.Dataset(ds.features, ds.labels, group=np.diff(ds.offsets), free_raw_data=False)
    return lightgbm.train(params, train_set, num_boost_round=trees)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--features", type=int, default=136)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--contributions", action="store_true", help="time the TreeSHAP pass too")
    args = parser.parse_args()

    from rankcli.core.metrics import Convention, parse_metric, per_query
    from rankcli.explain.contributions import mean_abs_contributions, query_batches
    from rankcli.explain.groups import feature_groups
    from rankcli.explain.ranking import permuted_metrics
    from rankcli.runtime.cpus import default_threads

    ds = make_data(args.rows, args.features)
    t0 = time.perf_counter()
    booster = train(ds, args.trees)
    threads = default_threads()
    used = int(np.count_nonzero(booster.feature_importance("split")))
    print(f"data: {ds.n_rows:,} rows, {ds.n_queries:,} queries, {ds.n_features} features; model: {args.trees} trees, "
          f"splits on {used} of {ds.n_features} features (trained in {time.perf_counter() - t0:.1f} s); "
          f"{threads} threads; load {os.getloadavg()[0]:.2f}")

    def predict(x):
        return booster.predict(x, num_threads=threads)

    spec, conv = parse_metric("ndcg@10"), Convention.preset("paper")

    def metric(scores):
        return per_query([spec], ds.labels, scores, ds.offsets, conv)[str(spec)]

    features = ds.features
    plain = []

    def competitor() -> None:
        start = time.perf_counter()
        predict(features)
        plain.append(time.perf_counter() - start)

    for _ in range(2):  # warm up LightGBM's and numpy's first calls
        competitor()
    plain.clear()
    groups = feature_groups(ds.feature_names)
    start = time.perf_counter()
    permuted_metrics(predict, features, metric, ds.offsets, groups, repeats=args.repeats, seed=0, used=None,
                     on_step=competitor)
    total = time.perf_counter() - start
    own, baseline = total - sum(plain), sum(plain)
    calls = len(groups) * args.repeats
    print(f"one plain predict: median {np.median(plain) * 1000:.1f} ms (min {min(plain) * 1000:.1f}, max "
          f"{max(plain) * 1000:.1f}) over {len(plain)} calls interleaved with explain's")
    print(f"explain, all {len(groups)} x {args.repeats} = {calls} permutations (the base scoring included): "
          f"{own:.2f} s, {own / calls * 1000:.1f} ms per permutation")
    print(f"ratio to F x R plain predicts: {own / baseline:.3f} (target <= 1.5); load {os.getloadavg()[0]:.2f}")
    if args.contributions:
        start = time.perf_counter()
        mean_abs_contributions(lambda x: booster.predict(x, pred_contrib=True, num_threads=threads),
                               query_batches(features, ds.offsets), ds.n_features)
        print(f"contributions (TreeSHAP, batches of 65,536 rows): {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
