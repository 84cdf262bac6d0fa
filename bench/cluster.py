"""The Dask engine's overhead: `rankcli experiment --jobs 2` against `--dask local:2` (a 2-worker LocalCluster).

Converts ``rank.train`` and ``rank.test`` of ``../shared/data/lightgbm-example`` into one directory (251 pooled
queries), then runs the same experiment (lambdamart, xendcg, listnet; at most 500 trees, early stopping after 50 on
validation NDCG@5; 1 thread per model) alternately with a process pool of 2 and on a LocalCluster of 2 worker
processes, each into a fresh directory, timing the whole command (start-up included). Prints trials (all losses of
one split) and units (one loss of one split) per minute, and checks that both give identical trials.parquet values.

With --train-rows N it also times `train --dask local:2` against single-machine `train --threads 2` (lambdamart, 100
trees) on a generated N-row, 136-feature dataset: data-parallel training's overhead when both workers share 2 cores.

Run with the flock rule:  flock /tmp/rankcli-bench.lock /tmp/venv/bin/python bench/cluster.py [--trials 12 --rounds 2]
                          [--train-rows 300000]
(Named cluster.py, not dask.py: a script named dask.py would shadow the dask package on sys.path.)
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "lightgbm-example"


def rankcli(*args: object) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rankcli", *map(str, args)], check=True, capture_output=True, text=True)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--trials", type=int, default=12, help="Trials of the experiment part (0: skip it).")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--losses", default="lambdamart,xendcg,listnet")
    ap.add_argument("--train-rows", type=int, default=0,
                    help="Also time `train --dask local:2` against single-machine `train --threads 2` on a generated "
                         "dataset of this many rows (136 features); 0: skip.")
    args = ap.parse_args()
    try:
        import distributed  # noqa: F401
    except ImportError:
        print('skipped: dask is not installed (pip install "rankcli[dask]")', file=sys.stderr)
        return
    if args.trials > 0 and not (args.data / "rank.train").exists():
        print(f"skipped: {args.data} has no rank.train", file=sys.stderr)
        return
    work = Path(tempfile.mkdtemp(prefix="rankcli-bench-dask-"))
    try:
        if args.trials > 0:
            bench_experiment(args, work)
        if args.train_rows:
            bench_train(work, args.train_rows, args.rounds)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def bench_experiment(args: argparse.Namespace, work: Path) -> None:
    """`experiment --jobs 2` against `--dask local:2` on the LightGBM example."""
    import pyarrow.parquet as pq

    rankcli("convert", args.data / "rank.train", args.data / "rank.test", "-o", work / "data")
    common = ["--losses", args.losses, "--trials", args.trials, "--trees", 500, "--early-stopping", 50,
              "--seed", 0, "--no-plots"]
    modes = {"--jobs 2": ["--jobs", 2], "--dask local:2": ["--dask", "local:2"]}
    times: dict[str, list[float]] = {m: [] for m in modes}
    tables = {}
    for r in range(args.rounds):
        for mode, extra in (modes.items() if r % 2 == 0 else reversed(list(modes.items()))):
            exp = work / f"exp-{mode.split()[-1].replace(':', '')}-{r}"
            times[mode].append(rankcli("experiment", work / "data", "-o", exp, *common, *extra))
            tables[mode] = pq.read_table(exp / "trials.parquet").drop_columns(["seconds"])
            print(f"round {r}: {mode}: {times[mode][-1]:.1f} s", file=sys.stderr)
    units = args.trials * len(args.losses.split(","))
    print(f"rankcli experiment DATA -o EXP {' '.join(map(str, common))} [--jobs 2 | --dask local:2]")
    print(f"{args.trials} trials x {len(args.losses.split(','))} losses = {units} units; "
          f"best of {args.rounds} runs, whole command")
    for mode, ts in times.items():
        best = min(ts)
        print(f"  {mode:>15}: {best:6.1f} s  {args.trials / best * 60:6.1f} trials/min  "
              f"{units / best * 60:6.1f} units/min   (runs: {', '.join(f'{t:.1f}' for t in ts)})")
    ratio = min(times["--dask local:2"]) / min(times["--jobs 2"])
    print(f"  dask / jobs wall time: {ratio:.2f}x")
    same = tables["--jobs 2"].equals(tables["--dask local:2"])
    print(f"  identical trials.parquet values: {same}")


def bench_train(work: Path, rows: int, rounds: int) -> None:
    """Data-parallel training on one machine: what the engine costs when both workers share the same 2 cores."""
    import numpy as np

    from rankcli.dataset import Dataset
    from rankcli.formats.parquet import feature_names, write_dataset

    rng = np.random.default_rng(0)
    sizes = rng.integers(50, 151, size=rows // 100 + 2)
    sizes = sizes[: np.searchsorted(np.cumsum(sizes), rows) + 1]
    n = int(sizes.sum())
    features = np.round(rng.random((n, 136), dtype=np.float32), 3)
    signal = features[:, :5] @ np.array([2.0, 1.5, 1.0, 0.5, 0.5], dtype=np.float32) + rng.normal(0, 0.7, n)
    labels = np.digitize(signal, np.quantile(signal, [0.5, 0.75, 0.9, 0.97])).astype(np.float64)
    qids = np.repeat(np.arange(sizes.shape[0], dtype=np.int64), sizes)
    path = work / "big.parquet"
    write_dataset(path, Dataset(qids=qids, labels=labels, features=features, feature_names=feature_names(136)))
    common = ["--loss", "lambdamart", "--trees", 100, "--early-stopping", 0, "--seed", 0, "--overwrite"]
    modes = {"single --threads 1": ["--threads", 1], "single --threads 2": ["--threads", 2],
             "--dask local:2": ["--dask", "local:2"]}
    times: dict[str, list[float]] = {m: [] for m in modes}
    for r in range(rounds):
        for mode, extra in (modes.items() if r % 2 == 0 else reversed(list(modes.items()))):
            times[mode].append(rankcli("train", path, "-o", work / "model", *common, *extra))
            print(f"round {r}: train {mode}: {times[mode][-1]:.1f} s", file=sys.stderr)
    options = " ".join(map(str, common))
    print(f"rankcli train big.parquet -o model {options} [--threads 1 | --threads 2 | --dask local:2]")
    print(f"{n} rows, {sizes.shape[0]} queries, 136 features, 100 trees; best of {rounds} runs, whole command")
    for mode, ts in times.items():
        print(f"  {mode:>18}: {min(ts):6.1f} s   (runs: {', '.join(f'{t:.1f}' for t in ts)})")
    best_single = min(min(times["single --threads 1"]), min(times["single --threads 2"]))
    print(f"  dask / best single wall time: {min(times['--dask local:2']) / best_single:.2f}x")


if __name__ == "__main__":
    main()
