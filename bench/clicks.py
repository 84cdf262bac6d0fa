"""Benchmark: cascade click simulation with a random ranker, per-query Python loop vs `rankcli simulate-clicks`.

Workload: 30,000 queries of 60..180 documents (mean ~120), 10 impressions each (300,000 impressions),
grades 0..4 drawn with MSLR-WEB30K-like frequencies (.51, .32, .14, .02, .01), the paper's click probabilities
(.05, .3, .5, .7, .95). The input Parquet file has only 10 feature columns (random values with three decimals, as in
LETOR files) to keep it small; the output carries them, as it carries any feature columns.

- `python loop`: the straightforward per-query loop (shuffle the list, scan from the top, click with p(label), stop at
  the first click), on in-memory Python lists; its time excludes any file reading or writing (favours it).
- `rankcli`: `python -m rankcli simulate-clicks IN -o OUT` in a subprocess, timed end to end: process start-up,
  imports, Parquet read, simulation, Parquet write (zstd).
- `in-process`: `rankcli.simulate.simulate_clicks` on the already loaded dataset (no I/O), for information.

Rounds alternate the competitors in this one process; the median of each is reported.
Run: flock /tmp/rankcli-bench.lock /tmp/venv/bin/python bench/clicks.py [--queries 30000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rankcli.dataset import Dataset  # noqa: E402
from rankcli.formats.parquet import feature_names, read_dataset, write_dataset  # noqa: E402
from rankcli.simulate import simulate_clicks  # noqa: E402

PROBS = (0.05, 0.3, 0.5, 0.7, 0.95)
GRADE_FREQ = (0.51, 0.32, 0.14, 0.02, 0.01)


def make_data(queries: int, seed: int, sizes: tuple[int, int] = (60, 180)) -> Dataset:
    """``queries`` queries of ``sizes[0]..sizes[1]`` documents, MSLR-like grade frequencies, ten features with three
    decimals (bench/propensity.py uses it too, with smaller queries)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(sizes[0], sizes[1] + 1, queries)
    n = int(sizes.sum())
    qids = np.repeat(np.arange(1, queries + 1, dtype=np.int64), sizes)
    labels = rng.choice(5, size=n, p=GRADE_FREQ).astype(np.float64)
    # Three decimals, as in LETOR files (sample_data, MSLR): realistic, and Parquet's dictionary encoding applies.
    features = (rng.integers(0, 1000, (n, 10)) / 1000).astype(np.float32)
    return Dataset(qids=qids, labels=labels, features=features, feature_names=feature_names(10))


def python_loop(lists: list[list[int]], probs, impressions: int, seed: int) -> tuple[int, int]:
    """Per query, per impression: shuffle, scan, stop at the first click. Returns (kept impressions, rows)."""
    rnd = random.Random(seed)
    kept = rows = 0
    out = []
    for q, labels in enumerate(lists):
        idx = list(range(len(labels)))
        for i in range(impressions):
            rnd.shuffle(idx)
            for pos, d in enumerate(idx):
                if rnd.random() < probs[labels[d]]:
                    out.append((q, i, idx[: pos + 1]))
                    kept += 1
                    rows += pos + 1
                    break
    return kept, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=30_000)
    ap.add_argument("--impressions", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    ds = make_data(args.queries, args.seed)
    n_imp = args.queries * args.impressions
    lists = [ds.labels[a:b].astype(int).tolist() for a, b in zip(ds.offsets[:-1], ds.offsets[1:])]
    print(f"{args.queries} queries, {ds.n_rows} documents (mean {ds.n_rows / args.queries:.0f}/query), "
          f"{args.impressions} impressions each = {n_imp} impressions; 10 feature columns", flush=True)
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        src = Path(tmp) / "in.parquet"
        out = Path(tmp) / "clicks.parquet"
        write_dataset(src, ds)
        print(f"input parquet {src.stat().st_size / 1e6:.1f} MB", flush=True)
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        cmd = [sys.executable, "-m", "rankcli", "simulate-clicks", str(src), "-o", str(out), "--seed", "1",
               "--impressions", str(args.impressions), "--overwrite", "--json"]
        loaded = read_dataset(src)
        t_loop, t_cli, t_lib = [], [], []
        for r in range(args.rounds):
            t0 = time.perf_counter()
            kept_py, rows_py = python_loop(lists, PROBS, args.impressions, args.seed + r)
            t_loop.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, env=env)
            t_cli.append(time.perf_counter() - t0)
            if proc.returncode != 0:
                sys.exit(f"rankcli failed: {proc.stderr.decode()}")
            t0 = time.perf_counter()
            clicks, summary = simulate_clicks(loaded, impressions=args.impressions, rng=np.random.default_rng(r))
            t_lib.append(time.perf_counter() - t0)
            print(f"round {r + 1}: python loop {t_loop[-1]:.2f} s ({kept_py} kept, {rows_py} rows) | rankcli "
                  f"{t_cli[-1]:.2f} s | in-process {t_lib[-1]:.2f} s ({summary.kept} kept, {summary.rows} rows)",
                  flush=True)
        print(f"output parquet {out.stat().st_size / 1e6:.1f} MB")
    loop, cli, lib = statistics.median(t_loop), statistics.median(t_cli), statistics.median(t_lib)
    print(f"\n{'':28s}{'seconds':>10s}{'impressions/s':>16s}{'vs loop':>10s}")
    for name, t in (("python loop (no I/O)", loop), ("rankcli end to end", cli), ("simulate_clicks in-process", lib)):
        print(f"{name:28s}{t:10.2f}{n_imp / t:16,.0f}{loop / t:9.1f}x")


if __name__ == "__main__":
    main()
