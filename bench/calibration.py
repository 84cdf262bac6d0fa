"""Calibration of `rankcli compare`'s paired tests: rejection rates under the null hypothesis, by simulation.

For each test (ttest, permutation, wilcoxon, bootstrap), distribution of the per-query differences and number of
queries n, --datasets null data sets are drawn from a fixed seed and tested with
`rankcli.core.stats.paired_tests` (one data set per row; the random tests draw their sign vectors or resamples afresh
for each of --batches batches). The table gives the share of data sets rejected at alpha = 0.05 and 0.01.

Distributions (all with mean 0):
- normal: N(0, 1), every test's null hypothesis holds (t-test exact);
- t3: Student t with 3 degrees of freedom, symmetric and heavy-tailed (every test's null holds, none is exact but the
  permutation and Wilcoxon tests);
- exp: a centred exponential, Exp(1) - 1: skewed with mean 0. The t-test and bootstrap's null (mean 0) holds, but no
  test is exact; the permutation and Wilcoxon tests assume symmetry, and Wilcoxon tests a median (here ln 2 - 1 < 0),
  so it rejects more as n grows: it is not a test of the mean.

For comparison the table also has the bootstrap rankcli once offered (percentile interval of resampled
means, p = 2 (min(#mean* <= 0, #mean* >= 0) + 1) / (B + 1)), which was anti-conservative for few queries.

Binomial noise of a rate near 0.05 over 10,000 data sets: standard error 0.0022 (0.001 near 0.01).
Run: flock /tmp/rankcli-bench.lock nice /work/venv/bin/python bench/calibration.py [--datasets 10000]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rankcli.core.stats import TESTS, paired_tests  # noqa: E402

SIZES = (5, 10, 20, 50)
ALPHAS = (0.05, 0.01)
DISTRIBUTIONS = ("normal", "t3", "exp")
OLD_BOOTSTRAP = "bootstrap, percentile (rankcli's former bootstrap)"


def draw(dist: str, rng: np.random.Generator, shape) -> np.ndarray:
    if dist == "normal":
        return rng.standard_normal(shape)
    if dist == "t3":
        return rng.standard_t(3, shape)
    return rng.exponential(1.0, shape) - 1.0


def old_bootstrap_p(d: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """The percentile bootstrap's p-value as rankcli once computed it, vectorised over the rows."""
    n = d.shape[1]
    idx = rng.integers(0, n, size=(resamples, n))
    means = np.take(d, idx, axis=1).mean(axis=2)          # (rows, resamples)
    lo = np.count_nonzero(means <= 0.0, axis=1)
    hi = np.count_nonzero(means >= 0.0, axis=1)
    return np.minimum(1.0, 2.0 * (np.minimum(lo, hi) + 1) / (resamples + 1))


def p_values(test: str, d: np.ndarray, seed, batches: int, resamples: int) -> np.ndarray:
    out = []
    for i, rows in enumerate(np.array_split(np.arange(d.shape[0]), batches)):
        rng = np.random.default_rng([*seed, i])
        if test == OLD_BOOTSTRAP:
            out.append(old_bootstrap_p(d[rows], rng, resamples))
        else:
            out.append(paired_tests(d[rows], np.zeros((rows.shape[0], d.shape[1])), test, rng=rng,
                                    permutations=resamples).p_value)
    return np.concatenate(out)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=10000)
    parser.add_argument("--resamples", type=int, default=1999, help="permutations / bootstrap resamples per test")
    parser.add_argument("--batches", type=int, default=10, help="fresh sign vectors / resamples for each batch")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    start = time.perf_counter()
    tests = [*TESTS, OLD_BOOTSTRAP]
    rates = {}
    for di, dist in enumerate(DISTRIBUTIONS):
        for n in SIZES:
            d = draw(dist, np.random.default_rng([args.seed, di, n]), (args.datasets, n))
            for ti, test in enumerate(tests):
                p = p_values(test, d, (args.seed, di, n, ti), args.batches, args.resamples)
                rates[test, dist, n] = [float(np.mean(p < a)) for a in ALPHAS]
    elapsed = time.perf_counter() - start

    import scipy

    print(f"# rankcli compare: rejection rates under the null, {args.datasets} data sets per cell, "
          f"{args.resamples} permutations/resamples, seed {args.seed}")
    print(f"# {datetime.date.today().isoformat()}, {platform.platform()}, {os.cpu_count()} cores, "
          f"python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
          f"{elapsed:.0f} s")
    print()
    print("Rejection rate at alpha = 0.05 / 0.01 (nominal: at most 0.05 / 0.01)")
    print()
    print("| test | differences | " + " | ".join(f"n = {n}" for n in SIZES) + " |")
    print("|---|---|" + "---:|" * len(SIZES))
    for test in tests:
        for dist in DISTRIBUTIONS:
            cells = [f"{rates[test, dist, n][0]:.3f} / {rates[test, dist, n][1]:.3f}" for n in SIZES]
            print(f"| {test} | {dist} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
