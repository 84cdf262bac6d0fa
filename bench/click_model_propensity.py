"""Position bias from click models against rankcli's randomised estimators, on simulated logs of the bundled sample.

Logs: `simulate-clicks --model pbm` (eta 1: the true curve is 1/r), top 10, no-click impressions kept, 100 impressions
per query of the sample's 90 training queries, shown by four policies: a fresh random order per impression, RandTop-10
over the label ranker, and two fixed rankers (`input`: the data's order; `label`: the ideal order). Estimators:

- `click-rate`: `propensity LOG` (random and RandTop-10 logs);
- `harvest`: `propensity LABEL INPUT` (intervention harvesting over the two fixed rankers' logs);
- `pbm-relevance`: `click-model fit LOG --model pbm --by relevance`, then `propensity --from-click-model`;
- `pbm-document`: the same fitted per (query, document) (refused on the fixed rankers' logs: not identified);
- `regression-em`: `propensity LOG --model pbm --regression-em` (20 iterations).

Printed per (log, estimator): the estimate at positions 2-10 over 1/r, its largest and mean absolute relative error,
and the fraction of positions whose interval holds 1/r (where there is one), and the seconds.
Run: flock /tmp/rankcli-bench.lock .venv/bin/python bench/click_model_propensity.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent


def rankcli(*args) -> tuple[int, str, float]:
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "rankcli", *map(str, args)], capture_output=True, text=True, cwd=REPO)
    return out.returncode, out.stdout if out.returncode == 0 else out.stderr, time.perf_counter() - t


def main() -> None:
    truth = 1.0 / np.arange(1, 11)
    with tempfile.TemporaryDirectory(prefix="rankcli-bench-cm-propensity-") as tmp:
        d = Path(tmp)
        assert rankcli("convert", REPO / "sample_data" / "letor", "-o", d / "data")[0] == 0
        train = d / "data" / "train.parquet"
        policies = {"random": ["--ranker", "random"], "top10": ["--ranker", "label", "--randomize", "top:10"],
                    "input": ["--ranker", "input", "--seed", "2"], "label": ["--ranker", "label", "--seed", "3"]}
        for name, args in policies.items():
            status, msg, _ = rankcli("simulate-clicks", train, "-o", d / f"{name}.parquet", "--model", "pbm",
                                     "--max-rank", "10", "--keep-no-click", "--impressions", "100", "--seed", "1",
                                     *args)
            assert status == 0, msg
        runs = []
        for log in policies:
            path = d / f"{log}.parquet"
            if log in ("random", "top10"):
                runs.append((log, "click-rate", ["propensity", path, "--json", "--bootstrap", "200"]))
            for by in ("relevance", "document"):
                runs.append((log, f"pbm-{by}", ["fit", by, path]))
            runs.append((log, "regression-em", ["propensity", path, "--model", "pbm", "--regression-em", "--json"]))
        runs.append(("label+input", "harvest", ["propensity", d / "label.parquet", d / "input.parquet", "--json",
                                                "--bootstrap", "200"]))
        for log, estimator, args in runs:
            seconds = 0.0
            if args[0] == "fit":
                model = d / f"{log}-{args[1]}"
                status, msg, s = rankcli("click-model", "fit", args[2], "-o", model, "--model", "pbm", "--by",
                                         args[1])
                seconds += s
                args = ["propensity", "--from-click-model", model, "--json", "--bootstrap", "200"]
            status, out, s = rankcli(*args)
            seconds += s
            if status != 0:
                print(f"{log:12s} {estimator:14s} refused (exit {status}): {out.strip()[:110]}")
                continue
            r = json.loads(out)
            p = np.array(r["propensity"][:10], dtype=float)
            rel = np.abs(p / truth - 1)[1:]
            lo, hi = r.get("ci_low"), r.get("ci_high")
            cover = "-"
            if lo and lo[0] is not None:
                lo, hi = np.array(lo[:10], dtype=float), np.array(hi[:10], dtype=float)
                cover = f"{np.mean((lo <= truth) & (truth <= hi))[()] * 100:.0f}%"
            print(f"{log:12s} {estimator:14s} r*p(r) {np.round(p * np.arange(1, 11), 2)[1:]} max {rel.max():.3f} "
                  f"mean {rel.mean():.3f} covered {cover} {seconds:.1f} s", flush=True)


if __name__ == "__main__":
    main()
