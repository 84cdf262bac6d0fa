"""Benchmark `rankcli eval`: NDCG@10 on 30,000 queries x ~120 documents (3.6M rows) from a run on disk.
With --trec: a 30,000 x 100 TREC run and its qrels as text, trec_eval's official measures, end to end
(`flock /tmp/rankcli-bench.lock /work/venv/bin/python bench/eval.py --trec --repeat 3`).

Run it alone on the machine (benchmarks share 2 cores with everything else):

    flock /tmp/rankcli-bench.lock /tmp/venv/bin/python bench/eval.py

Times, in one process, alternating rounds (best of --repeat):
  - `rankcli eval RUN --metric ndcg@10 --json` end to end in a subprocess (start-up, Parquet read, metric, output);
  - rankcli's metric computation in process (`rankcli.core.metrics.evaluate`, arrays already in memory);
  - LightGBM's own NDCG@10 (its C++ metric on init scores), alone and including building its Dataset;
  - ranx `evaluate` (warm: Qrels/Run built and its numba JIT compiled beforehand), if ranx is installed;
  - pytrec_eval (`RelevanceEvaluator.evaluate`, its dicts built beforehand; building them timed apart), if installed;
  - a plain per-query numpy loop;
and prints the values (they must agree) and the ratios the targets are stated in. Competitors that are not installed are
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
from bytecode import compile_bytecode

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


def generate_trec(run_path: Path, qrels_path: Path, n_queries: int, docs: int, seed: int) -> None:
    """A TREC run (``n_queries`` x ``docs`` lines, 4-decimal scores with ties) and its qrels (about 40 judgments per
    query, three quarters of them on retrieved documents, grades 0..4), written as text."""
    rng = np.random.default_rng(seed)
    n = n_queries * docs
    q = np.repeat(np.arange(1, n_queries + 1), docs)
    doc = rng.integers(0, 10**8, n)
    score = np.round(rng.normal(size=n) * 3, 4)
    rank = np.tile(np.arange(1, docs + 1), n_queries)
    run_path.parent.mkdir(parents=True, exist_ok=True)
    qs, ds = q.astype(str), np.char.add("doc-", doc.astype(str).astype("U9"))
    lines = np.char.add(np.char.add(np.char.add(qs, " Q0 "), ds), " ")
    lines = np.char.add(np.char.add(lines, rank.astype(str)), " ")
    lines = np.char.add(np.char.add(lines, np.char.mod("%.4f", score)), " bench\n")
    run_path.write_text("".join(lines.tolist()))
    judged = rng.random(n) < 0.3
    jq, jd = q[judged], ds[judged]
    extra = n_queries * 10  # judged documents the run did not retrieve
    eq = rng.integers(1, n_queries + 1, extra)
    ed = np.char.add("doc-x", rng.integers(0, 10**8, extra).astype(str))
    allq = np.concatenate([jq, eq])
    alld = np.concatenate([jd, ed])
    order = np.argsort(allq, kind="stable")
    allq, alld = allq[order], alld[order]
    keep = np.ones(allq.shape[0], dtype=bool)  # drop the rare repeated (query, document) pair
    pairs = np.char.add(np.char.add(allq.astype(str), "/"), alld)
    _, first = np.unique(pairs, return_index=True)
    keep[:] = False
    keep[first] = True
    allq, alld = allq[keep], alld[keep]
    labels = rng.choice(5, allq.shape[0], p=[0.55, 0.2, 0.12, 0.08, 0.05])
    ql = np.char.add(np.char.add(np.char.add(allq.astype(str), " 0 "), alld), " ")
    ql = np.char.add(np.char.add(ql, labels.astype(str)), "\n")
    qrels_path.write_text("".join(ql.tolist()))


def load(path: Path):
    import pyarrow.parquet as pq

    t = pq.read_table(str(path))
    qids = t.column("qid").to_numpy()
    starts = np.flatnonzero(np.diff(qids)) + 1
    offsets = np.concatenate(([0], starts, [qids.shape[0]])).astype(np.int64)
    return qids, t.column("label").to_numpy(), t.column("score").to_numpy(), offsets


def children_cpu() -> float:
    """User + system CPU seconds of the finished child processes so far."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


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


PYTREC_SCRIPT = """
import sys, time
t0 = time.perf_counter()
import pytrec_eval
qrels, run = {}, {}
with open(sys.argv[1]) as f:
    for line in f:
        q, _, d, r = line.split()
        qrels.setdefault(q, {})[d] = int(r)
with open(sys.argv[2]) as f:
    for line in f:
        q, _, d, _, s, _ = line.split()
        run.setdefault(q, {})[d] = float(s)
t1 = time.perf_counter()
res = pytrec_eval.RelevanceEvaluator(qrels, {"official"}).evaluate(run)
t2 = time.perf_counter()
print(t1 - t0, t2 - t1, sum(v["map"] for v in res.values()) / len(res))
"""

RANX_SCRIPT = """
import sys, time
from ranx import Qrels, Run, evaluate
metrics = ["map", "mrr", "precision@5", "precision@10", "precision@15", "precision@20", "precision@30",
           "precision@100", "precision@200", "precision@500", "precision@1000", "r-precision", "bpref"]
qrels, run = Qrels.from_file(sys.argv[3], kind="trec"), Run.from_file(sys.argv[4], kind="trec")
evaluate(qrels, run, metrics)  # warm: numba compiles on the first call
t0 = time.perf_counter()
qrels, run = Qrels.from_file(sys.argv[1], kind="trec"), Run.from_file(sys.argv[2], kind="trec")
t1 = time.perf_counter()
res = evaluate(qrels, run, metrics)
t2 = time.perf_counter()
print(t1 - t0, t2 - t1, res["map"])
"""


def trec_main(args) -> None:
    """The TREC path: text run and qrels, every measure of trec_eval's ``official`` set, end to end."""
    run_path = HERE / "data" / f"trec_run_{args.queries}x{args.docs}_s{args.seed}.txt"
    qrels_path = HERE / "data" / f"trec_qrels_{args.queries}x{args.docs}_s{args.seed}.txt"
    if not run_path.exists() or not qrels_path.exists():
        print(f"generating {run_path} and {qrels_path} ...", file=sys.stderr)
        generate_trec(run_path, qrels_path, args.queries, args.docs, args.seed)
    print(f"workload: TREC run {args.queries} queries x {args.docs} documents ({run_path.stat().st_size / 1e6:.0f} MB)"
          f", qrels {qrels_path.stat().st_size / 1e6:.0f} MB; trec_eval's 'official' measures")
    print(f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    compile_bytecode(REPO)
    probe = "from rankcli.formats.trec import join_native; print(join_native.available())"
    native = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO,
                            env=env).stdout.strip()
    print(f"rankcli's C path (rankcli.formats.trec_native): {'built' if native == 'True' else 'NOT built'}"
          f"{'' if args.skip_slow else '; the numpy path timed too (RANKCLI_PURE_PYTHON=1)'}")
    small = HERE / "data" / "trec_small_run.txt", HERE / "data" / "trec_small_qrels.txt"
    if not small[0].exists():
        generate_trec(small[0], small[1], 50, 20, 1)
    results: dict[str, list[float]] = {}
    values: dict[str, float] = {}
    cpu: dict[str, list[float]] = {}  # user + system CPU seconds of each whole process (steadier than wall time
    # on a shared machine; pytrec_eval's includes its interpreter start and import, ranx's its JIT warm-up)
    for _ in range(args.repeat):
        t, c = time.perf_counter(), children_cpu()
        out = subprocess.run([sys.executable, "-m", "rankcli", "eval", "--qrels", str(qrels_path), "--run",
                              str(run_path), "-m", "official", "--format", "trec_eval"], capture_output=True,
                             check=True, cwd=REPO, env=env)
        results.setdefault("rankcli eval --format trec_eval -m official (process, end to end)", []).append(
            time.perf_counter() - t)
        cpu.setdefault("rankcli", []).append(children_cpu() - c)
        values["rankcli eval --format trec_eval -m official (process, end to end)"] = float(next(
            line.split("\t")[2] for line in out.stdout.decode().splitlines() if line.startswith("map ")))
        if not args.skip_slow:  # what an install without a C compiler gets
            name = "rankcli, numpy path only (RANKCLI_PURE_PYTHON=1)"
            t = time.perf_counter()
            out = subprocess.run([sys.executable, "-m", "rankcli", "eval", "--qrels", str(qrels_path), "--run",
                                  str(run_path), "-m", "official", "--format", "trec_eval"], capture_output=True,
                                 check=True, cwd=REPO, env={**env, "RANKCLI_PURE_PYTHON": "1"})
            results.setdefault(name, []).append(time.perf_counter() - t)
            values[name] = float(next(line.split("\t")[2] for line in out.stdout.decode().splitlines()
                                      if line.startswith("map ")))
        try:
            c = children_cpu()
            out = subprocess.run([sys.executable, "-c", PYTREC_SCRIPT, str(qrels_path), str(run_path)],
                                 capture_output=True, check=True, text=True)
            cpu.setdefault("pytrec_eval", []).append(children_cpu() - c)
            parse, ev, value = map(float, out.stdout.split())
            for name, secs in (("pytrec_eval parse + evaluate (in process)", parse + ev),
                               ("pytrec_eval parse (Python dicts)", parse), ("pytrec_eval evaluate", ev)):
                results.setdefault(name, []).append(secs)
                values[name] = value
        except subprocess.CalledProcessError as exc:
            print(f"pytrec_eval: skipped ({exc.stderr.strip().splitlines()[-1]})")
        try:
            out = subprocess.run([sys.executable, "-c", RANX_SCRIPT, str(qrels_path), str(run_path),
                                  str(small[1]), str(small[0])], capture_output=True, check=True, text=True)
            load_s, ev, value = map(float, out.stdout.split())
            for name, secs in (("ranx from_file + evaluate (warm JIT)", load_s + ev), ("ranx from_file", load_s),
                               ("ranx evaluate (warm)", ev)):
                results.setdefault(name, []).append(secs)
                values[name] = value
        except subprocess.CalledProcessError as exc:
            print(f"ranx: skipped ({exc.stderr.strip().splitlines()[-1]})")
    best = {k: min(v) for k, v in results.items()}
    print(f"\n{'':66s} {'best s':>7s} {'all runs (s)':>20s}  map")
    for k, v in results.items():
        print(f"{k:66s} {best[k]:7.2f} {' '.join(f'{x:.2f}' for x in v):>20s}  {values[k]:.4f}")
    ours_name = "rankcli eval --format trec_eval -m official (process, end to end)"
    ours, ours_median = best[ours_name], float(np.median(results[ours_name]))
    for theirs, goal in (("pytrec_eval parse + evaluate (in process)", "goal >= 5"),
                         ("ranx from_file + evaluate (warm JIT)", "goal > 1")):
        if theirs in best:
            print(f"{theirs} / rankcli end to end: best {best[theirs] / ours:.2f}x, median "
                  f"{float(np.median(results[theirs])) / ours_median:.2f}x  ({goal})")
    for name, secs in cpu.items():
        print(f"CPU seconds (user + system) of the whole {name} process: best {min(secs):.2f}, all "
              f"{' '.join(f'{x:.2f}' for x in secs)}")
    if "pytrec_eval" in cpu:
        print(f"pytrec_eval process CPU / rankcli process CPU: {min(cpu['pytrec_eval']) / min(cpu['rankcli']):.2f}x")
    print("note: ranx computes a subset of 'official' (map, mrr, precision@k, r-precision, bpref; no iprec, gm_map, "
          "counts); pytrec_eval and rankcli compute all of it.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trec", action="store_true", help="the TREC path: text run + qrels, trec_eval's "
                    "official measures, end to end, against pytrec_eval and ranx (defaults: 30,000 x 100)")
    ap.add_argument("--queries", type=int, default=30_000)
    ap.add_argument("--docs", type=int, default=120, help="mean documents per query (uniform in [docs/2, 3docs/2])")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-slow", action="store_true", help="skip pytrec_eval and the plain loop (with --trec: "
                    "skip only rankcli's numpy path)")
    args = ap.parse_args()
    if args.trec:
        if "--docs" not in sys.argv:
            args.docs = 100
        trec_main(args)
        return

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
        import pandas as pd
        import ranx as ranx_mod

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
            t_eval, v = timed(lambda booster=booster: lgbm.evaluate(booster))
            record("LightGBM metric", t_eval, v)
            record("LightGBM metric + Dataset build", t_build + t_eval, v)
            del booster
        if ranx is not None:
            record("ranx evaluate (warm)", *timed(lambda: ranx.evaluate(ranx_qrels, ranx_run, RANX_METRIC)))
        if pytrec is not None:
            t_dicts, (qd, rd) = timed(lambda: as_dicts(qids, labels, scores, offsets))
            t_eval, per_q = timed(lambda qd=qd, rd=rd: pytrec.RelevanceEvaluator(qd, {"ndcg_cut_10"}).evaluate(rd))
            record("pytrec_eval (evaluator + evaluate)", t_eval, float(np.mean([r["ndcg_cut_10"]
                                                                                  for r in per_q.values()])))
            record("pytrec_eval incl. building its dicts", t_dicts + t_eval,
                   values["pytrec_eval (evaluator + evaluate)"])
        if not args.skip_slow:
            record("plain per-query loop", *timed(lambda: plain_loop(labels, scores, offsets)))

    best = {k: min(v) for k, v in results.items()}
    print(f"\n{'':40s} {'best s':>8s} {'all runs (s)':>24s}  value")
    for k, v in results.items():
        print(f"{k:40s} {best[k]:8.3f} {' '.join(f'{x:.2f}' for x in v):>24s}  {values[k]:.6f}")
    ours, cli = best["rankcli metric (in process)"], best["rankcli eval (CLI, end to end)"]
    print()
    if "LightGBM metric + Dataset build" in best:
        print(f"rankcli metric / (LightGBM metric + Dataset build): "
              f"{ours / best['LightGBM metric + Dataset build']:.2f}x  (goal <= 1.2)")
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
