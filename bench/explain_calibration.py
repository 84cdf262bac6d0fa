"""Calibration of `rankcli explain`'s per-feature tests with LightGBM: noise features a real model splits on, scored on
fresh data, and (for contrast) on the model's own training data.

The null: --noise features of pure noise (standard normal, independent of the labels and of everything else) beside
--signal informative ones; each of --models LightGBM lambdarank models is trained on its own training set (it splits
on the noise features: they fit its training data's noise), then explained on --cases fresh data sets of --queries
queries each, drawn from the same distribution. On fresh data a noise feature's permutation cannot change the expected
metric, so its test must reject at most alpha of the time. The cases are stacked into one dataset (their queries are
independent), so explain's own permutation code (rankcli.explain.ranking.permuted_metrics, the model's predict, ndcg@10
under the paper convention) runs once per feature and repeat over all of them; each case is then tested on its own
queries by explain's own drop_tests (compare's paired tests, Holm over all the features as explain does).

Reported per test, at alpha 0.05: the share of (case, noise feature) pairs whose raw p is below alpha, the family-wise
share of cases with a noise feature whose Holm-adjusted p is below alpha, and the share of a drop's non-zero values
that are positive (0.5 when the drops are symmetric). The tests explain offers: ttest, permutation and bootstrap with
--repeats (default 5), wilcoxon with 1; "wilcoxon R=5", which explain refuses, is measured for the record. Then each
model on its own training data (all its queries, the same features): the Holm-adjusted p of its noise features.

Binomial noise of a rate near 0.05: sqrt(0.05 * 0.95 / N) for N pairs (printed).
Run: flock /tmp/rankcli-bench.lock .venv/bin/python bench/explain_calibration.py [--cases 400] [--queries 1500]
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

ALPHA = 0.05


def make_data(rng: np.random.Generator, queries: int, signal: int, noise: int):
    """``queries`` queries of 5 to 30 documents: graded labels 0..4 from the first ``signal`` features plus noise,
    then ``noise`` features of pure noise."""
    from rankcli.dataset import Dataset

    sizes = rng.integers(5, 31, queries)
    n = int(sizes.sum())
    x = rng.normal(size=(n, signal + noise)).astype(np.float32)
    score = x[:, :signal] @ np.linspace(1.0, 0.3, signal) + rng.normal(scale=1.0, size=n)
    labels = np.digitize(score, np.quantile(score, [0.55, 0.8, 0.92, 0.98])).astype(np.float64)
    # every query has a relevant document (its best-scored one), so that the paper convention skips none and every
    # case is tested on all its queries
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    best = score == np.repeat(np.maximum.reduceat(score, offsets[:-1]), sizes)
    labels[best] = np.maximum(labels[best], 1.0)
    qids = np.repeat(np.arange(queries, dtype=np.int64), sizes)
    names = [f"f{i}" for i in range(1, signal + noise + 1)]
    return Dataset(qids=qids, labels=labels, features=np.asfortranarray(x), feature_names=names)


def train(ds, trees: int, seed: int):
    import lightgbm

    params = {"objective": "lambdarank", "num_leaves": 31, "learning_rate": 0.1, "min_data_in_leaf": 20,
              "verbosity": -1, "seed": seed, "deterministic": True, "force_row_wise": True, "num_threads": 2}
    train_set = lightgbm.Dataset(ds.features, ds.labels, group=np.diff(ds.offsets))
    return lightgbm.train(params, train_set, num_boost_round=trees)


def permuted(booster, ds, repeats: int, seed: int, columns: range):
    """``(base, mean over repeats, first repeat)`` per query and feature of ``columns``: explain's permutation (its
    ``permutation(offsets, seed, r)``, shared by the features as in ``permuted_metrics``), the model's scores and
    ndcg@10 per query, one pass over the repeats keeping the first repeat apart (what ``--repeats 1`` gives)."""
    from rankcli.core.metrics import Convention, parse_metric, per_query
    from rankcli.explain.ranking import permutation

    spec, conv = parse_metric("ndcg@10"), Convention.preset("paper")

    def metric(x):
        return per_query([spec], ds.labels, booster.predict(x, num_threads=2), ds.offsets, conv)[str(spec)]

    features = np.array(ds.features, order="F")
    base = metric(features)
    sums, first = np.zeros((len(columns), base.shape[0])), None
    for r in range(repeats):
        perm = permutation(ds.offsets, seed, r)
        for k, j in enumerate(columns):
            saved = features[:, j].copy()
            features[:, j] = saved[perm]
            sums[k] += metric(features)
            features[:, j] = saved
        if r == 0:
            first = sums.copy()
    return base, sums / repeats, first


def case_tests(base, mean, first, queries: int, cases: int, seed: int) -> dict[str, dict]:
    """Per test: raw and Holm-adjusted p of every case's noise features (``(cases, features)``), and the share of
    positive non-zero drops. The tests are explain's (drop_tests runs stats.paired_test per feature on the queries;
    here stats.paired_tests, one row per case, which tests/explain/test_calibration.py checks equal). Holm over the
    noise features only: explain's family also holds the signal features, whose p-values (near 0 at these sizes) come
    first in Holm's order, so the noise features' adjusted values are the same."""
    from rankcli.core import stats

    plan = {"ttest": mean, "permutation": mean, "bootstrap": mean, "wilcoxon": first, "wilcoxon R=5": mean}
    rows = (cases, queries)
    out = {}
    for name, values in plan.items():
        test = name.split()[0]
        raw = np.column_stack([
            stats.paired_tests(base.reshape(rows), v.reshape(rows), test, rng=np.random.default_rng([seed, k]),
                               permutations=1000).p_value for k, v in enumerate(values)])
        adjusted = np.vstack([stats.adjust_pvalues(row, "holm") for row in raw])
        d = (base[None, :] - values).ravel()
        moved = d[np.isfinite(d) & (d != 0)]
        out[name] = {"raw": raw, "adjusted": adjusted, "positive": float(np.mean(moved > 0)),
                     "moved": int(moved.shape[0])}
    return out


def report(results: list[dict], label: str) -> None:
    print(f"\n{label}: rejection at alpha {ALPHA}")
    print(f"{'test':<14} {'per feature':>12} {'(pairs)':>8} {'+- se':>7} {'family-wise (Holm)':>19} {'(cases)':>8} "
          f"{'P(d>0 | d!=0)':>14}")
    for name in results[0]:
        raw = np.concatenate([r[name]["raw"].ravel() for r in results])
        fam = np.concatenate([(r[name]["adjusted"] < ALPHA).any(axis=1) for r in results])
        pos = np.average([r[name]["positive"] for r in results], weights=[r[name]["moved"] for r in results])
        raw = raw[np.isfinite(raw)]
        se = np.sqrt(ALPHA * (1 - ALPHA) / raw.shape[0])
        print(f"{name:<14} {np.mean(raw < ALPHA):>12.4f} {raw.shape[0]:>8} {se:>7.4f} {np.mean(fam):>19.4f} "
              f"{fam.shape[0]:>8} {pos:>14.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=4)
    parser.add_argument("--cases", type=int, default=100, help="fresh data sets per model")
    parser.add_argument("--queries", type=int, default=1500)
    parser.add_argument("--train-queries", type=int, default=1000)
    parser.add_argument("--signal", type=int, default=5)
    parser.add_argument("--noise", type=int, default=5)
    parser.add_argument("--trees", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch", type=int, default=25, help="cases stacked per model call")
    args = parser.parse_args()
    import lightgbm

    print(f"explain calibration: {args.models} models x {args.cases} fresh cases of {args.queries} queries; "
          f"{args.signal} signal + {args.noise} noise features; {args.trees} trees; R = {args.repeats}; "
          f"LightGBM {lightgbm.__version__}, numpy {np.__version__}; load {os.getloadavg()}")
    t0 = time.perf_counter()
    noise = slice(args.signal, args.signal + args.noise)
    fresh, fitted = [], []
    for m in range(args.models):
        rng = np.random.default_rng([2027, m])
        ds = make_data(rng, args.train_queries, args.signal, args.noise)
        booster = train(ds, args.trees, seed=m + 1)
        splits = booster.feature_importance("split")
        print(f"model {m}: splits on the noise features {splits[noise].tolist()} "
              f"(signal {splits[:args.signal].tolist()})")
        columns = range(args.signal, args.signal + args.noise)
        base, mean, first = permuted(booster, ds, args.repeats, m, columns)
        fitted.append(case_tests(base, mean, first, args.train_queries, 1, seed=m))
        for b0 in range(0, args.cases, args.batch):
            k = min(args.batch, args.cases - b0)
            test = make_data(np.random.default_rng([2027, m, 1, b0]), k * args.queries, args.signal, args.noise)
            base, mean, first = permuted(booster, test, args.repeats, 1000 * m + b0, columns)
            fresh.append(case_tests(base, mean, first, args.queries, k, seed=1000 * m + b0))
        print(f"  done in {time.perf_counter() - t0:.0f} s (load {os.getloadavg()[0]:.1f})", flush=True)
    report(fresh, f"fresh data, {args.queries} queries per case")
    report(fitted, f"the models' own training data ({args.train_queries} queries)")
    holm = np.concatenate([r["ttest"]["adjusted"].ravel() for r in fitted])
    print(f"training data, ttest: Holm-adjusted p of the noise features: min {holm.min():.2g}, median "
          f"{np.median(holm):.2g}, max {holm.max():.2g}")
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
