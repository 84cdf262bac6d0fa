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

Second target (--default-run): a default `rankcli explain MODEL DATA --json` on 200,000 rows x 40 features takes at
most 60 s, the whole process timed. Data: 2,000 queries of 100 documents (make_data with 40 features), written as
Parquet; the model is `rankcli train DATA -o MODEL` with its defaults (500 trees, 31 leaves, lambdamart, no
validation set: every tree kept, the costliest default model). The run prints explain's own stderr summary, the
contributions sample its JSON records, and the seconds against the target.

    flock /tmp/rankcli-bench.lock .venv/bin/python bench/explain.py --default-run [--rows 200000] [--features 40]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
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


def rankcli(*args: str, stdout=subprocess.DEVNULL) -> float:
    """Run ``python -m rankcli ARGS`` (its stderr passed through); the wall seconds. A failure stops the benchmark."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rankcli", *args], stdout=stdout, check=True, cwd=REPO)
    return time.perf_counter() - start


def default_run(rows: int, features: int, extra: list[str], workdir: Path | None, stages: bool,
                validated: bool) -> None:
    """The second target (module docstring): a default explain, the whole process, against 60 s. ``workdir``: keep
    the data and the model there (and reuse them when they are there already)."""
    with tempfile.TemporaryDirectory(prefix="rankcli-bench-explain-") as tmp:
        where = workdir or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        out = Path(tmp) / "explain.json"
        model, data = prepare(where, rows, features, validated)
        if stages:
            stage_seconds(model, data, extra)
        load = os.getloadavg()[0]
        with open(out, "w") as f:
            seconds = rankcli("explain", str(model), str(data), "--json", *extra, stdout=f)
        result = json.loads(out.read_text())
    sample = result.get("contributions") or {}
    print(f"rankcli explain MODEL DATA --json {' '.join(extra)}: {seconds:.1f} s (target <= 60); repeats "
          f"{result['repeats']}, contributions on {sample.get('queries')} of {sample.get('of')} queries; load "
          f"{load:.2f} before, {os.getloadavg()[0]:.2f} after")
    feats = sorted((f for f in result["features"] if f["mean_abs_contribution"]),
                   key=lambda f: -f["mean_abs_contribution"])[:10]
    rel = [f["mean_abs_contribution_stderr"] / f["mean_abs_contribution"] for f in feats]
    if rel:
        print(f"the sample's standard error / mean_abs_contribution, top {len(rel)} features by contribution: "
              f"{min(rel):.3f}-{max(rel):.3f}")


def split_data(rows: int, features: int, seed: int):
    """make_data's shape (queries of 100 documents, labels from the first 20 features plus noise) with the label
    weights fixed, so that the training, validation and explained sets (other seeds) come from one distribution."""
    from rankcli.dataset import Dataset

    weights = np.random.default_rng(0).normal(size=20)
    rng = np.random.default_rng(seed)
    queries = rows // 100
    x = np.asfortranarray(rng.normal(size=(queries * 100, features)).astype(np.float32))
    signal = x[:, :20] @ weights + rng.normal(scale=2.0, size=x.shape[0])
    labels = np.digitize(signal, np.quantile(signal, [0.5, 0.75, 0.9, 0.97])).astype(np.float64)
    qids = np.repeat(np.arange(queries, dtype=np.int64), 100)
    return Dataset(qids=qids, labels=labels, features=x, feature_names=[f"f{i}" for i in range(1, features + 1)])


def prepare(where: Path, rows: int, features: int, validated: bool) -> tuple[Path, Path]:
    """``(model, data)``: the data to explain (``rows``, seed 3) and a model trained by ``rankcli train`` with its
    defaults, on half as many rows (seed 1) validated on a quarter (seed 2, early stopping: what a user runs) or,
    without ``validated``, on the data itself with all 500 trees (the costliest default model); kept when they are
    in ``where`` already."""
    from rankcli.formats.parquet import write_dataset

    data, train, valid = where / "data.parquet", where / "train.parquet", where / "valid.parquet"
    model = where / ("model-valid" if validated else "model-500")
    for path, n, seed in ((data, rows, 3), (train, rows // 2, 1), (valid, rows // 4, 2)):
        if not path.exists():
            write_dataset(path, split_data(n, features, seed))
    if not (model / "model.txt").exists():
        args = ["train", str(train), "--valid", str(valid)] if validated else ["train", str(data)]
        print(f"rankcli {' '.join(args)} -o MODEL: {rankcli(*args, '-o', str(model)):.1f} s", flush=True)
    import lightgbm

    booster = lightgbm.Booster(model_file=str(model / "model.txt"))
    print(f"data: {rows:,} rows x {features} features; model: {booster.num_trees()} trees; load "
          f"{os.getloadavg()[0]:.2f}", flush=True)
    return model, data


def stage_seconds(model: Path, data: Path, extra: list[str]) -> None:
    """explain in process, the seconds of each stage as its progress measured them (tree-rows x cost)."""
    import rankcli.explain as library
    from rankcli.formats.parquet import read_dataset
    from rankcli.train import load_model

    made = []

    class Kept(library.Work):
        def __init__(self, report=None):
            super().__init__(report)
            made.append(self)

    library.Work = Kept
    options = {"repeats": int(extra[extra.index("--repeats") + 1])} if "--repeats" in extra else {}
    start = time.perf_counter()
    library.explain(load_model(model), read_dataset(data), **options)
    work = made[0]
    parts = {s: work.planned[s] * (work.cost(s) or 0.0) for s in work.planned}
    print(f"in process: {time.perf_counter() - start:.1f} s; " + ", ".join(
        f"{s} {v:.1f} s ({work.planned[s]:.3g} tree-rows)" for s, v in parts.items()), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=None, help="100,000 (200,000 with --default-run)")
    parser.add_argument("--features", type=int, default=None, help="136 (40 with --default-run)")
    parser.add_argument("--default-run", action="store_true", help="the second target: a default explain, 60 s")
    parser.add_argument("--explain-args", default="", help="with --default-run: more options for explain")
    parser.add_argument("--workdir", type=Path, help="with --default-run: keep (and reuse) the data and model here")
    parser.add_argument("--stages", action="store_true", help="with --default-run: each stage's seconds first")
    parser.add_argument("--all-trees", action="store_true",
                        help="with --default-run: the model of 500 trees trained without --valid")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--contributions", action="store_true", help="time the TreeSHAP pass too")
    args = parser.parse_args()
    if args.default_run:
        default_run(args.rows or 200_000, args.features or 40, args.explain_args.split(), args.workdir, args.stages,
                    not args.all_trees)
        return
    args.rows, args.features = args.rows or 100_000, args.features or 136

    from rankcli.core.metrics import Convention, parse_metric, per_query
    from rankcli.explain.contributions import mean_abs_contributions, query_batches
    from rankcli.explain.grouping import feature_groups
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
