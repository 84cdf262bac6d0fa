"""Naive against IPS training on a randomised click log, where debiasing has nothing to correct: a check that the two
differ only in the propensities (the one target scale of rankcli.core.ips.target_scale), not a speed benchmark.

For each seed: the sample's training split, ``simulate-clicks --model pbm --eta ETA --ranker random --max-rank 10
--keep-no-click --impressions N --seed S``; every loss trained with ``--pool-impressions`` and with
``--propensity pbm:ETA`` (``--valid`` the graded validation split, ``--seed S --threads 1``, defaults otherwise) and
evaluated on the graded test split (NDCG@5, paper convention). Prints per loss the range and mean over the seeds and
``ips - naive`` with its paired t-test. The whole CLI runs in subprocesses, so ``PYTHONPATH=<another checkout>``
measures another version of rankcli with the same script.

    python bench/ips_scale.py --seeds 10            # the figures in docs/clicks.md and BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy import stats

SAMPLE = Path(__file__).resolve().parent.parent / "sample_data" / "letor"
LOSSES = ("xendcg", "listnet", "pointwise", "ranknet")


def rankcli(*args) -> str:
    done = subprocess.run([sys.executable, "-m", "rankcli", *map(str, args)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"rankcli {' '.join(map(str, args))}: exit {done.returncode}\n{done.stderr}")
    return done.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--losses", default=",".join(LOSSES))
    ap.add_argument("--eta", type=float, default=1.0)
    ap.add_argument("--impressions", type=int, default=100)
    args = ap.parse_args()
    losses = args.losses.split(",")
    scores = {(loss, mode): [] for loss in losses for mode in ("naive", "ips")}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        rankcli("convert", SAMPLE, "-o", d / "data")
        for seed in range(1, args.seeds + 1):
            log = d / f"log{seed}.parquet"
            rankcli("simulate-clicks", d / "data" / "train.parquet", "-o", log, "--model", "pbm", "--eta", args.eta,
                    "--ranker", "random", "--max-rank", 10, "--keep-no-click", "--impressions", args.impressions,
                    "--seed", seed)
            for loss in losses:
                for mode, flag in (("naive", ["--pool-impressions"]), ("ips", ["--propensity", f"pbm:{args.eta:g}"])):
                    model = d / f"{loss}-{mode}-{seed}"
                    rankcli("train", log, "-o", model, "--loss", loss, *flag, "--valid", d / "data" / "vali.parquet",
                            "--seed", seed, "--threads", 1)
                    out = rankcli("eval", d / "data" / "test.parquet", "--model", model, "--metric", "ndcg@5",
                                  "--json")
                    scores[(loss, mode)].append(json.loads(out)["metrics"]["ndcg@5"])
                print(f"seed {seed} {loss}: naive {scores[(loss, 'naive')][-1]:.4f} ips "
                      f"{scores[(loss, 'ips')][-1]:.4f}", file=sys.stderr, flush=True)
    print(f"| loss | naive | IPS | IPS - naive | ({args.seeds} seeds, eta {args.eta:g}, {args.impressions} "
          "impressions, test NDCG@5: range (mean)) |")
    for loss in losses:
        n, i = np.array(scores[(loss, "naive")]), np.array(scores[(loss, "ips")])
        p = stats.ttest_rel(i, n).pvalue if n.shape[0] > 1 else float("nan")
        print(f"| {loss} | {n.min():.2f}-{n.max():.2f} ({n.mean():.3f}) | {i.min():.2f}-{i.max():.2f} ({i.mean():.3f}) "
              f"| {np.mean(i - n):+.3f} (p {p:.3f}) |")


if __name__ == "__main__":
    main()
