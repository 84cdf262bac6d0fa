"""Calibration of `rankcli experiment`'s tests across repeated random splits, with LightGBM, under true nulls.

Every simulated experiment runs the experiment's own units (`rankcli.experiment.run_unit`: the seeded 60/20/20 query
split of trial j, training with selection on validation NDCG@5, test NDCG@5 under the paper convention) for two
"losses" that are equal in distribution, on the bundled sample (`sample_data/letor`, 150 queries pooled), J trials
each with the experiment's seed e; both tests are run at alpha 0.05 across the J trials' differences, as the
experiment runs them (`rankcli.core.stats`). The rejection rates over the experiments are the tests' sizes.

Two nulls:

- `seeds`: XE-NDCG against XE-NDCG, the two differing only in the seed of the model (LightGBM's and XE-NDCG's
  sampling: two settings of the experiment, which draw different model seeds for the same split). Nothing ties a
  query to one of them across trials, so the trials' differences are close to independent: the case where the
  paper's test is nearly right.
- `views`: one loss (LambdaMART) trained and tested on two noisy copies of the features, X + Z1 and X + Z2, with Z1,
  Z2 independent N(0, (s sd_f)^2) per document and feature (s = --noise, sd_f the feature's standard deviation),
  drawn once per experiment. The two models are exchangeable given the queries, so the expected difference is
  exactly 0; but each query keeps its noise across the trials, so a query favours one model in every trial that
  tests on it, and the overlapping test sets (and training sets) make the trials' differences correlated: the
  dependence real losses have.

For each null and each J (the first J trials of every experiment, J in --trials) the table gives the rejection rates
of the corrected resampled t-test and the paired t-test, and the variance ratio var_e(mean d) / mean_e(s^2 / J): the
factor by which the mean difference varies more than the paired t-test assumes (it assumes 1; the corrected test
1 + J n_test/n_train).

Run: flock /tmp/rankcli-bench.lock .venv/bin/python bench/calibration_splits.py [--experiments 150 --trials 5,10,20]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

ALPHA = 0.05


def sample_data(work: Path):
    """The bundled sample, converted and pooled (150 queries)."""
    from rankcli.convert import convert
    from rankcli.experiment import load_data

    convert([REPO / "sample_data" / "letor"], work / "data")
    return load_data(work / "data")


def config(loss: str, seed: int, trials: int, trees: int):
    from rankcli.experiment import ExperimentConfig
    from rankcli.experiment.runner import _check_options

    cfg = ExperimentConfig(losses=[loss], trials=trials, metrics=["ndcg@5"], trees=trees, seed=seed)
    _check_options(cfg, 1)
    return cfg


def noisy(data, rng: np.random.Generator, scale: float):
    """A copy of the pooled data whose features carry independent noise of ``scale`` feature standard deviations."""
    from dataclasses import replace

    from rankcli.experiment import ExperimentData

    ds = data.pooled
    sd = ds.features.std(axis=0, dtype=np.float64)
    features = (ds.features + rng.standard_normal(ds.features.shape) * (scale * sd)).astype(np.float32)
    return ExperimentData(pooled=replace(ds, features=features))


def experiment(data, null: str, e: int, trials: int, trees: int, noise: float) -> np.ndarray:
    """``(2, trials)``: the two models' test NDCG@5 in every trial of experiment ``e``."""
    from rankcli.experiment import BASELINE, Setting, run_unit

    out = np.empty((2, trials))
    if null == "seeds":
        cfg = config("xendcg", e, trials, trees)
        other = Setting("other-seed", "baseline")   # the same split, another model seed
        for j in range(trials):
            out[0, j] = run_unit(data, cfg, BASELINE, j, "xendcg").values["ndcg@5"]
            out[1, j] = run_unit(data, cfg, other, j, "xendcg").values["ndcg@5"]
        return out
    cfg = config("lambdamart", e, trials, trees)
    rng = np.random.default_rng([7, e])
    views = (noisy(data, rng, noise), noisy(data, rng, noise))
    for j in range(trials):
        for k, view in enumerate(views):
            out[k, j] = run_unit(view, cfg, BASELINE, j, "lambdamart").values["ndcg@5"]
    return out


def rates(values: np.ndarray, J: int, ratio: float) -> tuple[float, float, float]:
    """Rejection rates of the corrected and the paired t-test over the first ``J`` trials, and the variance ratio."""
    from rankcli.core.stats import corrected_ttests, paired_tests

    a, b = values[:, 0, :J], values[:, 1, :J]
    corrected = corrected_ttests(b, a, ratio).rejects(ALPHA).mean()
    naive = paired_tests(b, a).rejects(ALPHA).mean()
    d = b - a
    inflation = d.mean(axis=1).var(ddof=1) / (d.var(axis=1, ddof=1) / J).mean()
    return float(corrected), float(naive), float(inflation)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiments", type=int, default=150)
    ap.add_argument("--trials", default="5,10,20", help="J values: the first J trials of each experiment")
    ap.add_argument("--trees", type=int, default=20)
    ap.add_argument("--noise", type=float, default=0.5, help="views: noise sd in feature standard deviations")
    ap.add_argument("--nulls", default="seeds,views")
    ap.add_argument("--save", type=Path, help="write the per-trial values (npz)")
    args = ap.parse_args(argv)
    js = [int(x) for x in args.trials.split(",")]
    from rankcli.core.perturb import split_sizes
    from rankcli.runtime.startup import import_lightgbm_lean

    import_lightgbm_lean()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rankcli-bench-calibration-") as work:
        data = sample_data(Path(work))
        train, valid, test = (int(x) for x in split_sizes(data.pooled.n_queries, (0.6, 0.2, 0.2)))
        ratio = test / (train + valid)
        values = {null: np.stack([experiment(data, null, e, max(js), args.trees, args.noise)
                                  for e in range(args.experiments)]) for null in args.nulls.split(",")}
    elapsed = time.perf_counter() - start
    if args.save:
        np.savez(args.save, **values)
    import lightgbm

    print(f"# rankcli experiment: rejection rates under true nulls across random splits, {args.experiments} "
          f"experiments per null, {args.trees} trees, alpha {ALPHA}, n_test/n_train = {test}/{train + valid}")
    print(f"# {datetime.date.today().isoformat()}, {platform.platform()}, {os.cpu_count()} cores, "
          f"python {platform.python_version()}, numpy {np.__version__}, lightgbm {lightgbm.__version__}, "
          f"{elapsed:.0f} s, load average {os.getloadavg()[0]:.1f} at the end")
    print()
    print("| null | J | corrected-ttest | ttest (trials as independent) | variance ratio | corrected assumes |")
    print("|---|---:|---:|---:|---:|---:|")
    for null, v in values.items():
        for J in js:
            c, n, inflation = rates(v, J, ratio)
            print(f"| {null} | {J} | {c:.3f} | {n:.3f} | {inflation:.2f} | {1 + J * ratio:.2f} |")


if __name__ == "__main__":
    main()
