"""Benchmark `rankcli eval` (issue 3): NDCG@10 on 30,000 queries x ~120 documents (3.6M rows) from a run on disk.

Run it alone on the machine (benchmarks share 2 cores with everything else):

    flock /tmp/rankcli-bench.lock /tmp/venv/bin/python bench/eval.py

Times, in one process, alternating rounds (best of --repeat):
  - `rankcli eval RUN --metric ndcg@10 --json` end to end in a subprocess (start-up, Parquet read, metric, output);
  - rankcli's metric computation in process (`rankcli.core.metrics.evaluate`, arrays already in memory);
  - LightGBM's own NDCG@10 (its C++ metric on init scores), alone and including building its Dataset;
  - ranx `evaluate` (warm: Qrels/Run built and its numba JIT compiled beforehand), if ranx is installed;
  - pytrec_eval (`RelevanceEvaluator.evaluate`, its dicts built beforehand; building them timed apart), if installed;
  - a plain per-query numpy loop;
and prints the values (they must agree) and the ratios the issue asks for. Competitors that are not installed are
skipped. The run is generated once into bench/data/ (seeded) and reused.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from rankcli.core import metrics as M  # noqa: E402


#: ranx's "ndcg" uses the label as gain (Jarvelin & Kekalainen); "ndcg_burges" is the 2^label - 1 gain used here.
RANX_METRIC = "ndcg_burges@10"


def generate(path: Path, n_queries: int, mean_docs: int, seed: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    sizes = rng.integers(mean_docs // 2, mean_docs * 3 // 2 + 1, n_queries)
    n = int(sizes.sum())
    qids = np.repeat(np.arange(1, n_queries + 1, dtype=np.int64) * 7, sizes)
    labels = rng.choice(5, n, p=[0.5, 0.25, 0.15, 0.07, 0.03]).astype(np.float64)
    scores = np.round(labels * 0.6 + rng.normal(size=n), 3)  # rounded: realistic share of exact ties
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    pq.write_table(pa.table({"qid": qids, "label": labels, "score": scores}), str(tmp), row_group_size=1 << 20)
    os.replace(tmp, path)


def load(path: Path):
    import pyarrow.parquet as pq

    t = pq.read_table(str(path))
    qids = t.column("qid").to_numpy()
    starts = np.flatnonzero(np.diff(qids)) + 1
    offsets = np.concatenate(([0], starts, [qids.shape[0]])).astype(np.int64)
    return qids, t.column("label").to_numpy(), t.column("score").to_numpy(), offsets


def timed(fn):
    t = time.perf_counter()
    value = fn()
    return time.perf_counter() - t, value


def ours_cli(path: Path) -> float:
    out = subprocess.run([sys.executable, "-m", "rankcli", "eval", str(path), "--metric", "ndcg@10", "--json"],
                         capture_output=True, check=True, cwd=REPO,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    return json.loads(out.stdout)["metrics"]["ndcg@10"]


def ours_inprocess(labels, scores, offsets) -> float:
    return M.evaluate(["ndcg@10"], labels, scores, offsets, M.Convention.preset("lightgbm")).means["ndcg@10"]


class LightGBMMetric:
    def __init__(self):
        import lightgbm

        self.lgb = lightgbm

    def build(self, labels, scores, offsets):
        lgb = self.lgb
        x = np.zeros((labels.shape[0], 1), dtype=np.float32)
        params = {"objective": "lambdarank", "metric": "ndcg", "eval_at": [10], "verbose": -1,
                  "is_provide_training_metric": True, "num_threads": 2}
        ds = lgb.Dataset(x, labels, group=np.diff(offsets), init_score=scores, params={"verbose": -1})
        return lgb.Booster(params, ds)

    @staticmethod
    def evaluate(booster) -> float:
        return booster.eval_train()[0][2]


def plain_loop(labels, scores, offsets, k=10) -> float:
    total, n = 0.0, 0
    disc = 1.0 / np.log2(np.arange(2, k + 2))
    for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist()):
        lab, sc = labels[a:b], scores[a:b]
        top = lab[np.argsort(-sc, kind="stable")[:k]]
        ideal = np.sort(lab)[::-1][:k]
        idcg = ((2.0 ** ideal - 1) * disc[: ideal.shape[0]]).sum()
        total += ((2.0 ** top - 1) * disc[: top.shape[0]]).sum() / idcg if idcg > 0 else 1.0
        n += 1
    return total / n


def as_dicts(qids, labels, scores, offsets):
    qrels, run = {}, {}
    for q, a, b in zip(qids[offsets[:-1]].tolist(), offsets[:-1].tolist(), offsets[1:].tolist()):
        docs = [f"d{i}" for i in range(b - a)]
        qrels[str(q)] = {d: int(y) for d, y in zip(docs, labels[a:b].tolist()) if y > 0}
        run[str(q)] = dict(zip(docs, scores[a:b].tolist()))
    return qrels, run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=30_000)
    ap.add_argument("--docs", type=int, default=120, help="mean documents per query (uniform in [docs/2, 3docs/2])")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-slow", action="store_true", help="skip pytrec_eval and the plain loop")
    args = ap.parse_args()

    path = HERE / "data" / f"eval_run_{args.queries}x{args.docs}_s{args.seed}.parquet"
    if not path.exists():
        print(f"generating {path} ...", file=sys.stderr)
        generate(path, args.queries, args.docs, args.seed)
    qids, labels, scores, offsets = load(path)
    print(f"workload: {len(offsets) - 1} queries, {labels.shape[0]} rows, NDCG@10 (queries without a relevant "
          f"document score 1, LightGBM's convention)")
    print(f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}")

    results: dict[str, list[float]] = {}
    values: dict[str, float] = {}

    def record(name, seconds, value):
        results.setdefault(name, []).append(seconds)
        values[name] = value

    try:
        lgbm = LightGBMMetric()
    except ImportError:
        lgbm = None
    ranx = None
    try:
        import ranx as ranx_mod

        import pandas as pd

        t0 = time.perf_counter()
        docs = (np.arange(labels.shape[0]) - np.repeat(offsets[:-1], np.diff(offsets))).astype(str).astype(object)
        q = qids.astype(str).astype(object)  # ranx insists on object columns (pandas 3 defaults to its string dtype)
        rel = labels > 0
        def obj(a):
            return pd.Series(a, dtype=object)

        ranx_qrels = ranx_mod.Qrels.from_df(pd.DataFrame({"q_id": obj(q[rel]), "doc_id": obj(docs[rel]),
                                                          "score": labels[rel].astype(np.int64)}))
        ranx_run = ranx_mod.Run.from_df(pd.DataFrame({"q_id": obj(q), "doc_id": obj(docs), "score": scores}))
        ranx_mod.evaluate(ranx_qrels, ranx_run, RANX_METRIC)  # compile the JIT
        print(f"ranx: objects built and JIT warmed in {time.perf_counter() - t0:.1f} s (not counted)")
        ranx = ranx_mod
    except ImportError:
        print("ranx: not installed, skipped")
    pytrec = None
    if not args.skip_slow:
        try:
            import pytrec_eval

            pytrec = pytrec_eval
        except ImportError:
            print("pytrec_eval: not installed, skipped")

    for _ in range(args.repeat):
        record("rankcli eval (CLI, end to end)", *timed(lambda: ours_cli(path)))
        # The CLI's default convention is the paper's (skip); in process we use LightGBM's for a like-for-like value.
        record("rankcli metric (in process)", *timed(lambda: ours_inprocess(labels, scores, offsets)))
        if lgbm is not None:
            t_build, booster = timed(lambda: lgbm.build(labels, scores, offsets))
            t_eval, v = timed(lambda: lgbm.evaluate(booster))
            record("LightGBM metric", t_eval, v)
            record("LightGBM metric + Dataset build", t_build + t_eval, v)
            del booster
        if ranx is not None:
            record("ranx evaluate (warm)", *timed(lambda: ranx.evaluate(ranx_qrels, ranx_run, RANX_METRIC)))
        if pytrec is not None:
            t_dicts, (qd, rd) = timed(lambda: as_dicts(qids, labels, scores, offsets))
            t_eval, per_q = timed(lambda: pytrec.RelevanceEvaluator(qd, {"ndcg_cut_10"}).evaluate(rd))
            record("pytrec_eval (evaluator + evaluate)", t_eval, float(np.mean([r["ndcg_cut_10"]
                                                                                  for r in per_q.values()])))
            record("pytrec_eval incl. building its dicts", t_dicts + t_eval, values["pytrec_eval (evaluator + evaluate)"])
        if not args.skip_slow:
            record("plain per-query loop", *timed(lambda: plain_loop(labels, scores, offsets)))

    best = {k: min(v) for k, v in results.items()}
    print(f"\n{'':40s} {'best s':>8s} {'all runs (s)':>24s}  value")
    for k, v in results.items():
        print(f"{k:40s} {best[k]:8.3f} {' '.join(f'{x:.2f}' for x in v):>24s}  {values[k]:.6f}")
    ours, cli = best["rankcli metric (in process)"], best["rankcli eval (CLI, end to end)"]
    print()
    if "LightGBM metric + Dataset build" in best:
        print(f"rankcli metric / (LightGBM metric + Dataset build): {ours / best['LightGBM metric + Dataset build']:.2f}x"
              "  (goal <= 1.2)")
        print(f"rankcli metric / LightGBM metric alone:             {ours / best['LightGBM metric']:.2f}x")
    if "ranx evaluate (warm)" in best:
        print(f"rankcli eval end to end / ranx warm evaluate:       {cli / best['ranx evaluate (warm)']:.2f}x"
              "  (goal < 1)")
    for k in ("pytrec_eval (evaluator + evaluate)", "plain per-query loop"):
        if k in best:
            print(f"{k} / rankcli metric: {best[k] / ours:.1f}x")
    print("note: ranx (ndcg_burges, exponential gain) breaks ties its own way, so its value differs slightly; "
          "pytrec_eval's ndcg_cut_10 is trec_eval's linear-gain NDCG, a different number by definition.")


if __name__ == "__main__":
    main()
