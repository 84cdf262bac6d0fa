"""Benchmark: rankcli's paired tests against scipy's generic resampling tests, and `rankcli compare` end to end.

Workload: per-query differences of 30,000 queries (MSLR-WEB30K's size), 10,000 permutations / resamples.

- permutation: `rankcli.core.stats.paired_test(test="permutation")` (random sign bits, sums read from per-byte
  tables) against `scipy.stats.permutation_test(..., permutation_type="samples", vectorized=True, batch=500)` on the
  same paired vectors with the same number of resamples (scipy's statistic: mean difference).
- bootstrap: `paired_test(test="bootstrap")` (studentized and null-shifted; scipy has no such test)
  against `scipy.stats.bootstrap((d,), np.mean, method="percentile", batch=500)`.
- ttest / wilcoxon: scipy's functions are what rankcli uses; timed for information.
- end to end: `python -m rankcli compare A B` in a subprocess on two Parquet runs of 30,000 queries x 60..180
  documents (~3.6M rows each), metrics ndcg@5 and ndcg@10: process start, Parquet reads, metrics, tests, output.

Rounds alternate the competitors in this one process; the median of each is reported.
Run: flock /tmp/rankcli-bench.lock /tmp/venv/bin/python bench/compare.py [--queries 30000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
#: scipy's resamples per vectorised batch: ~120 MB per array at 30,000 queries (without it scipy holds all at once,
#: over 10 GB here). rankcli bounds its own chunks at 4M elements.
BATCH = 500
sys.path.insert(0, str(REPO))

from rankcli.core.stats import paired_test  # noqa: E402


def _time(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def write_runs(directory: Path, queries: int, seed: int) -> tuple[Path, Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    sizes = rng.integers(60, 181, queries)
    qid = np.repeat(np.arange(1, queries + 1, dtype=np.int64), sizes)
    label = rng.choice(5, size=qid.shape[0], p=(0.51, 0.32, 0.14, 0.02, 0.01)).astype(np.float64)
    paths = []
    for name, noise in (("a", 3.0), ("b", 2.9)):
        path = directory / f"{name}.parquet"
        score = label + rng.normal(0, noise, qid.shape[0])
        pq.write_table(pa.table({"qid": qid, "label": label, "score": score}), str(path))
        paths.append(path)
    return paths[0], paths[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=30000)
    parser.add_argument("--resamples", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from scipy import stats

    rng = np.random.default_rng(0)
    a = rng.random(args.queries)
    b = np.clip(a + rng.normal(0.002, 0.2, args.queries), 0, 1)
    B = args.resamples

    def scipy_perm():
        return stats.permutation_test((b, a), lambda x, y, axis: np.mean(x - y, axis=axis), vectorized=True,
                                      permutation_type="samples", n_resamples=B, rng=np.random.default_rng(1),
                                      batch=BATCH)

    def scipy_boot():
        return stats.bootstrap((b - a,), np.mean, n_resamples=B, method="percentile", rng=np.random.default_rng(1),
                               confidence_level=0.99, batch=BATCH)

    cases = {
        "permutation rankcli": lambda: paired_test(b, a, "permutation", rng=np.random.default_rng(1), permutations=B),
        "permutation scipy.stats.permutation_test": scipy_perm,
        "bootstrap rankcli": lambda: paired_test(b, a, "bootstrap", rng=np.random.default_rng(1), permutations=B,
                                                 confidence=0.99),
        "bootstrap scipy.stats.bootstrap": scipy_boot,
        "ttest rankcli": lambda: paired_test(b, a, "ttest"),
        "wilcoxon rankcli": lambda: paired_test(b, a, "wilcoxon"),
    }
    times = {k: [] for k in cases}
    with tempfile.TemporaryDirectory() as tmp:
        ra, rb = write_runs(Path(tmp), args.queries, 0)
        e2e = {"rankcli compare (ttest)": ["--test", "ttest"],
               "rankcli compare (permutation)": ["--test", "permutation"]}
        times.update({k: [] for k in e2e})
        for _ in range(args.rounds):
            for name, fn in cases.items():
                times[name].append(_time(fn))
            for name, extra in e2e.items():
                cmd = [sys.executable, "-m", "rankcli", "compare", str(ra), str(rb), "--json", *extra]
                times[name].append(_time(partial(subprocess.run, cmd, check=True, capture_output=True, cwd=REPO)))
    print(f"queries {args.queries}, resamples {B}, rounds {args.rounds} (median seconds)")
    med = {k: statistics.median(v) for k, v in times.items()}
    for name, t in med.items():
        print(f"  {name:45s} {t:8.3f}")
    permutation = med["permutation scipy.stats.permutation_test"] / med["permutation rankcli"]
    bootstrap = med["bootstrap scipy.stats.bootstrap"] / med["bootstrap rankcli"]
    print(f"  ratio permutation scipy / rankcli: {permutation:.1f}x")
    print(f"  ratio bootstrap scipy / rankcli:   {bootstrap:.1f}x")


if __name__ == "__main__":
    main()
