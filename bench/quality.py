"""Test NDCG of every loss through `rankcli experiment`, on the bundled sample data and LightGBM's example data.

Each dataset is converted to Parquet (``rankcli convert``) and pooled; ``rankcli experiment`` (the library's
``run_experiment``) then splits the queries 60/20/20 at random for each of ``--trials`` trials and trains every loss
on the same splits with the paper's protocol: at most ``--trees`` trees, early stopping after 50 on validation
NDCG@5 (paper convention), rankcli's default LightGBM parameters, one thread per model. Reported: mean ± standard
error over the trials of test NDCG@5 and NDCG@10 per loss, the trees kept, and two paired differences over the same
splits: ListNet's paper step against its diagonal step (a second experiment with ``--step diagonal``, same seed, so
the same splits and LightGBM seeds), and rankcli's ``xendcg`` against LightGBM's ``xendcg-native``. A report, never a
ranking of losses: with a few hundred queries most differences are within noise.

Datasets: ``bundled`` = ``sample_data/letor`` (train, vali and test pooled: 3,672 rows, 150 queries, 46 features);
``lightgbm`` = ``../shared/data/lightgbm-example`` (``rank.train`` and ``rank.test`` pooled: 3,773 rows, 251
queries, 300 features), skipped when absent.

Run with the flock rule:
    flock /tmp/rankcli-bench.lock .venv/bin/python bench/quality.py --trials 10 --jobs 2
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
# ../shared beside the checkout (or beside the directory of worktrees)
EXAMPLE = next((d / "shared" / "data" / "lightgbm-example" for d in ROOT.parents
                if (d / "shared" / "data" / "lightgbm-example").is_dir()),
               ROOT.parent / "shared" / "data" / "lightgbm-example")
SOURCES = {
    "bundled": [ROOT / "sample_data" / "letor" / f"{p}.txt" for p in ("train", "vali", "test")],
    "lightgbm": [EXAMPLE / f"rank.{p}" for p in ("train", "test")],
}
LOSSES = "lambdamart,xendcg,xendcg-native,listnet,ranknet,listmle,listmle-pa,approxndcg,lambdaloss,pointwise"
METRICS = ("ndcg@5", "ndcg@10")


def convert(dataset: str, out: Path) -> Path | None:
    """The dataset's files as Parquet files in ``out/<dataset>/`` (pooled by ``experiment``), or None if absent."""
    sources = SOURCES[dataset]
    if not all(p.is_file() for p in sources):
        return None
    target = out / dataset
    target.mkdir(parents=True, exist_ok=True)
    for p in sources:
        subprocess.run([sys.executable, "-m", "rankcli", "convert", str(p), "-o", str(target / f"{p.name}.parquet"),
                        "--overwrite"], check=True, capture_output=True)
    return target


def run(data: Path, exp_dir: Path, losses: str, args, **options):
    from rankcli.experiment import ExperimentConfig, run_experiment

    config = ExperimentConfig(losses=losses.split(","), trials=args.trials, trees=args.trees,
                              early_stopping=args.early_stopping, seed=args.seed, **options)
    return run_experiment(data, exp_dir, config, jobs=args.jobs)


def unit_values(exp_dir: Path) -> dict:
    """(loss, metric) -> {trial: value}, and (loss) -> {trial: trees}, from trials.parquet."""
    import pyarrow.parquet as pq

    values: dict = {}
    for row in pq.read_table(exp_dir / "trials.parquet").to_pylist():
        values.setdefault((row["loss"], row["metric"]), {})[row["trial"]] = row["value"]
        values.setdefault((row["loss"], "trees"), {})[row["trial"]] = row["trees"]
    return values


def mean_se(xs) -> tuple[float, float]:
    a = np.asarray(list(xs), dtype=float)
    return float(a.mean()), (float(a.std(ddof=1) / math.sqrt(a.shape[0])) if a.shape[0] > 1 else math.nan)


def paired(a: dict, b: dict) -> tuple[float, float]:
    """Mean and standard error of b - a over the trials both have."""
    return mean_se(b[t] - a[t] for t in sorted(set(a) & set(b)))


def report(dataset: str, values: dict, diagonal: dict, losses: list[str]) -> None:
    print(f"\n### {dataset}\n")
    print("| loss | test NDCG@5 (mean ± s.e.) | test NDCG@10 (mean ± s.e.) | trees kept (mean) |")
    print("|---|---|---|---|")
    rows = [(loss, values) for loss in losses] + [("listnet --step diagonal", diagonal)]
    for name, source in rows:
        loss = name.split()[0]
        cells = [f"{100 * m:.2f} ± {100 * s:.2f}" for m, s in (mean_se(source[(loss, k)].values()) for k in METRICS)]
        print(f"| {name} | {' | '.join(cells)} | {np.mean(list(source[(loss, 'trees')].values())):.0f} |")
    print()
    for k in METRICS if ("listnet", "ndcg@5") in values else ():
        md, sd = paired(diagonal[("listnet", k)], values[("listnet", k)])
        print(f"listnet paper step - diagonal step, {k}: {100 * md:+.2f} points (paired s.e. {100 * sd:.2f})")
    if ("xendcg-native", "ndcg@5") in values:
        for k in METRICS:
            md, sd = paired(values[("xendcg-native", k)], values[("xendcg", k)])
            print(f"xendcg - xendcg-native, {k}: {100 * md:+.2f} points (paired s.e. {100 * sd:.2f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="bundled,lightgbm")
    ap.add_argument("--losses", default=LOSSES)
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--trees", type=int, default=500)
    ap.add_argument("--early-stopping", type=int, default=50)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", type=Path, help="keep the experiment directories here (default: a temporary one)")
    args = ap.parse_args()
    losses = args.losses.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        for dataset in args.datasets.split(","):
            data = convert(dataset, root / "data")
            if data is None:
                print(f"\n{dataset}: data not found ({SOURCES[dataset][0].parent}), skipped")
                continue
            start = time.perf_counter()
            print(f"{dataset}: {args.trials} trials of 60/20/20 query splits, <= {args.trees} trees, early stopping "
                  f"{args.early_stopping} on validation ndcg@5 (paper convention), seed {args.seed}, jobs "
                  f"{args.jobs}; load average {os.getloadavg()[0]:.2f}", flush=True)
            run(data, root / f"exp-{dataset}", args.losses, args)
            run(data, root / f"exp-{dataset}-diagonal", "listnet", args, loss_options={"listnet": {"step": "diagonal"}})
            report(dataset, unit_values(root / f"exp-{dataset}"), unit_values(root / f"exp-{dataset}-diagonal"),
                   losses)
            print(f"\n({time.perf_counter() - start:.0f} s; load average {os.getloadavg()[0]:.2f})", flush=True)


if __name__ == "__main__":
    main()
