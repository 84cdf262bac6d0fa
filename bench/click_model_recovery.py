"""Recovery at 200,000 sessions: logs simulated from known PBM, UBM and DBN parameters are fitted back within the
sampling error, and the true model wins `compare` on held-out sessions.

For each true model: `--replicates` logs of `--sessions` sessions of 5 results (80 documents in 10 queries; random
orders; tests/click_model_data.py), each fitted by its own model (50 EM iterations, the exact E-step). Per parameter
(PBM and UBM: examination relative to rank 1 and click probability at rank 1, which they identify; DBN: every
parameter) the bias over the replicates is compared with its standard error, z = mean error / (sd / sqrt(reps)) (a t
with reps - 1 degrees of freedom: with 5 replicates its mean |z| is 0.94 for an unbiased estimate), and
the largest |error| with the replicates' sd; the RMSE over parameters is printed for the first replicate. Then PBM,
UBM and DBN are fitted on 80% of the first replicate and tested on the other 20% with rankcli's paired t-test per
session (Holm over the two comparisons against the true model).
Run: flock /tmp/rankcli-bench.lock .venv/bin/python bench/click_model_recovery.py
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rankcli.compare import compare_values  # noqa: E402
from rankcli.core import click_models as cm  # noqa: E402
from rankcli.core.click_models.evaluation import evaluate  # noqa: E402
from tests.click_model_data import simulated_log, true_parameters  # noqa: E402
from tests.core.test_click_model_recovery import scale_free  # noqa: E402

LENGTH = 5


def recovery(true: str, args) -> None:
    params = true_parameters(true, 80, LENGTH, np.random.default_rng(1))
    want = scale_free(true, params)
    estimates = {f: [] for f in want}
    for r in range(args.replicates):
        log = simulated_log(true, params, args.sessions, np.random.default_rng(100 + r))
        got = scale_free(true, cm.fit(cm.get_model(true), log, iterations=50, threads=2).values)
        for f in want:
            estimates[f].append(got[f])
    for f, values in estimates.items():
        est = np.array(values)
        err = est - want[f]
        sd = est.std(axis=0, ddof=1)
        varies = sd > 0  # PBM's and UBM's examination at rank 1 is 1 by construction
        z = err.mean(axis=0)[varies] / (sd[varies] / np.sqrt(est.shape[0]))
        print(f"{true} {f:11s} {est.shape[1]:3d} parameters: RMSE {np.sqrt(np.mean(err[0] ** 2)):.4f}, "
              f"max |error| {np.abs(err).max():.4f} (max sd {sd.max():.4f}), bias |z| mean {np.abs(z).mean():.2f} "
              f"max {np.abs(z).max():.2f}", flush=True)


def wins(true: str, args) -> None:
    params = true_parameters(true, 80, LENGTH, np.random.default_rng(1))
    log = simulated_log(true, params, args.sessions, np.random.default_rng(100))
    n = int(0.8 * args.sessions)
    train, held = cm.subset(log, np.arange(n)), cm.subset(log, np.arange(n, args.sessions))
    layout = cm.Layout(log.n_items, LENGTH)
    per_session = {}
    for name in ("pbm", "ubm", "dbn"):
        values = cm.fit(cm.get_model(name), train, iterations=50, threads=2).values
        per_session[name] = evaluate(cm.get_model(name), held, values, layout).per_session
    report = compare_values({m: {"ll": v} for m, v in per_session.items()}, ["ll"], baseline=true)
    best = max(per_session, key=lambda m: per_session[m].sum())
    tests = ", ".join(f"{c.b} {c.difference:+.4f} (p adj. {c.p_adjusted:.2g}, {c.decision})" for c in
                      report.comparisons)
    print(f"{true} log, {held.n_sessions} held-out sessions: best {best}; against {true}: {tests}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=200_000)
    ap.add_argument("--replicates", type=int, default=5)
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()}", flush=True)
    for true in ("pbm", "ubm", "dbn"):
        recovery(true, args)
    for true in ("pbm", "ubm", "dbn"):
        wins(true, args)
    print(f"load average at end: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
