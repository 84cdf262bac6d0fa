"""Test NDCG@5/@10 of every loss on LightGBM's lambdarank example data, over random query-level splits.

Pools ``rank.train`` and ``rank.test`` of ``../shared/data/lightgbm-example`` (LightGBM's examples/lambdarank data,
SVMlight with ``.query`` group files), then for each of ``--seeds`` seeds splits the queries 60/20/20 at random
(rankcli.core.perturb.split_queries), trains every loss with the paper's protocol (at most ``--trees`` trees, early
stopping after 50 on validation NDCG@5, paper convention; LightGBM parameters otherwise rankcli's defaults) and
evaluates the selected model on the test part (NDCG@5/@10, paper convention: queries without a relevant document
skipped). Prints mean and standard error over the seeds, and the paired difference of the library's ``xendcg`` to
``xendcg-native``. Goal (issue 4): ``xendcg`` within one standard error of ``xendcg-native``.

Run with the flock rule:  flock /tmp/rankcli-bench.lock /tmp/venv/bin/python bench/quality.py
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from rankcli.core.metrics import Convention, evaluate
from rankcli.core.perturb import split_queries
from rankcli.dataset import Dataset
from rankcli.train import LOSSES, TrainConfig, train_model

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "lightgbm-example"


def load(directory: Path) -> Dataset:
    from sklearn.datasets import load_svmlight_file

    parts = []
    for name in ("rank.train", "rank.test"):
        x, y = load_svmlight_file(str(directory / name), n_features=300, zero_based=False)
        sizes = np.loadtxt(directory / f"{name}.query", dtype=np.int64, ndmin=1)
        parts.append((x, y, sizes))
    n_features = max(int(np.max(x.indices, initial=0)) + 1 for x, _, _ in parts)
    x = np.vstack([np.asarray(p[0][:, :n_features].todense(), dtype=np.float32) for p in parts])
    y = np.concatenate([p[1] for p in parts])
    sizes = np.concatenate([p[2] for p in parts])
    qids = np.repeat(np.arange(sizes.shape[0], dtype=np.int64), sizes)
    return Dataset(qids=qids, labels=y.astype(np.float64), features=np.asfortranarray(x),
                   feature_names=[f"f{i}" for i in range(1, n_features + 1)])


def mean_se(values: list[float]) -> tuple[float, float]:
    a = np.asarray(values, dtype=float)
    return float(a.mean()), float(a.std(ddof=1) / math.sqrt(a.shape[0])) if a.shape[0] > 1 else math.nan


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--trees", type=int, default=500)
    ap.add_argument("--early-stopping", type=int, default=50)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--losses", default=",".join(LOSSES))
    args = ap.parse_args()
    if not (args.data / "rank.train").exists():
        raise SystemExit(f"{args.data}: LightGBM example data not found (rank.train, rank.test and .query files)")

    ds = load(args.data)
    names = args.losses.split(",")
    conv = Convention.preset("paper")
    print(f"data: {ds.n_rows} rows, {ds.n_queries} queries, {ds.n_features} features (rank.train + rank.test pooled); "
          f"{args.seeds} seeds of 60/20/20 query splits; <= {args.trees} trees, early stopping {args.early_stopping} "
          f"on validation ndcg@5 (paper convention)")
    results: dict[str, dict[str, list[float]]] = {n: {"ndcg@5": [], "ndcg@10": [], "trees": [], "s": []} for n in names}
    for seed in range(args.seeds):
        tr, va, te = split_queries(ds.n_queries, (0.6, 0.2, 0.2), np.random.default_rng(seed))
        train, valid, test = ds.take_queries(tr), ds.take_queries(va), ds.take_queries(te)
        for name in names:
            t = time.perf_counter()
            config = TrainConfig(loss=name, trees=args.trees, early_stopping=args.early_stopping, seed=seed,
                                 threads=args.threads)
            result = train_model(train, valid, config)
            scores = result.booster.predict(test.features)
            got = evaluate(["ndcg@5", "ndcg@10"], test.labels, scores, test.offsets, conv).means
            for k in ("ndcg@5", "ndcg@10"):
                results[name][k].append(got[k])
            results[name]["trees"].append(result.best_iteration)
            results[name]["s"].append(time.perf_counter() - t)
        print(f"seed {seed}: " + ", ".join(f"{n} {results[n]['ndcg@5'][-1]:.4f}" for n in names), flush=True)

    print("\n| loss | test NDCG@5 (mean ± s.e.) | test NDCG@10 (mean ± s.e.) | trees (mean) | seconds per model |")
    print("|---|---|---|---|---|")
    for n in names:
        m5, s5 = mean_se(results[n]["ndcg@5"])
        m10, s10 = mean_se(results[n]["ndcg@10"])
        print(f"| {n} | {100 * m5:.2f} ± {100 * s5:.2f} | {100 * m10:.2f} ± {100 * s10:.2f} | "
              f"{np.mean(results[n]['trees']):.0f} | {np.mean(results[n]['s']):.1f} |")
    if "xendcg" in results and "xendcg-native" in results:
        print()
        for k in ("ndcg@5", "ndcg@10"):
            diff = np.array(results["xendcg"][k]) - np.array(results["xendcg-native"][k])
            md, sd = mean_se(list(diff))
            _, se_native = mean_se(results["xendcg-native"][k])
            within = "within" if abs(md) <= se_native else ("above" if md > 0 else "below")
            goal = "goal met" if md >= -se_native else "goal NOT met"
            print(f"xendcg - xendcg-native, {k}: {100 * md:+.2f} points (paired s.e. {100 * sd:.2f}); {within} one "
                  f"standard error of xendcg-native ({100 * se_native:.2f}): {goal}")


if __name__ == "__main__":
    main()
