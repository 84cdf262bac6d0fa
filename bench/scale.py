"""Benchmark: rankcli at the paper's scale on one machine: peak memory and wall time of `train`, `experiment`,
`predict` and `eval --model` on a WEB30K-shaped Parquet file (bench/web30k_like.py), each against a hand-written
LightGBM script doing the same job in the same run (alternating whole processes), and the time a tuning trial spends
outside `lightgbm.train` when its Dataset is reused.

Every command runs as a child process; its peak RSS comes from wait4's rusage (ru_maxrss of that child only), its wall
time from the clock. The hand-written scripts read the Parquet file with pyarrow into a float32 numpy matrix and call
LightGBM directly (the way a user would without rankcli).

    python bench/web30k_like.py --rows 1000000 -o bench/data/web30k_1m.parquet
    flock /tmp/rankcli-bench.lock python bench/scale.py bench/data/web30k_1m.parquet --rounds 1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

#: The hand-written LightGBM jobs (the competitors), as Python programs run with ``python -c``.
HAND = {
    "train": """
import sys, numpy as np, pyarrow.parquet as pq, lightgbm as lgb
t = pq.read_table(sys.argv[1]); names = [c for c in t.column_names if c.startswith('f')]
X = np.column_stack([t.column(c).to_numpy() for c in names]); y = t.column('label').to_numpy()
q = t.column('qid').to_numpy(); del t
_, sizes = np.unique(q, return_counts=True)
ds = lgb.Dataset(X, label=y, group=sizes[np.argsort(np.unique(q, return_index=True)[1])], free_raw_data=True)
lgb.train({'objective': 'rank_xendcg', 'verbosity': -1, 'num_threads': 2, 'seed': 0}, ds, int(sys.argv[2]))
""",
    "predict": """
import sys, numpy as np, pyarrow as pa, pyarrow.parquet as pq, lightgbm as lgb
t = pq.read_table(sys.argv[1]); names = [c for c in t.column_names if c.startswith('f')]
X = np.column_stack([t.column(c).to_numpy() for c in names])
b = lgb.Booster(model_file=sys.argv[2] + '/model.txt')
s = b.predict(X, num_threads=2)
pq.write_table(pa.table({'qid': t.column('qid'), 'label': t.column('label'), 'score': s}), sys.argv[3])
""",
}


def measured(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of a child process; a failure stops the benchmark."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    err = proc.stderr.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        print(err, file=sys.stderr)
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return seconds, usage.ru_maxrss / 1024


def same_trees(a: Path, b: Path) -> bool:
    """Whether two model directories hold the same trees (``model.txt`` up to its parameters section)."""
    def trees(d: Path) -> str:
        return (d / "model.txt").read_text().split("\nparameters:")[0]
    return trees(a) == trees(b)


def rankcli(*args: str) -> list[str]:
    return [sys.executable, "-m", "rankcli", *args]


def trial_overhead(data: Path, trials: int, trees: int) -> dict:
    """A loop of tuning-like trials on one prepared split (the training file, validated on itself): the seconds
    inside ``lightgbm.train`` (TrainResult.seconds minus the binning) against each trial's total."""
    from rankcli.formats.feature_rows import ParquetFeatureRows
    from rankcli.formats.parquet import read_dataset
    from rankcli.train import TrainConfig, prepare, train_prepared

    index = read_dataset(data, features=False, docids=False)
    start = time.perf_counter()
    prepared = prepare(index, None, train_rows=ParquetFeatureRows(data, index.feature_names))
    rows = []
    for t in range(trials + 1):
        config = TrainConfig(loss="xendcg", trees=trees, early_stopping=0, learning_rate=0.05 + 0.01 * t,
                             num_leaves=31 + 8 * t, min_data_in_leaf=20 + 5 * t)
        t0 = time.perf_counter()
        result = train_prepared(prepared, config)
        rows.append((time.perf_counter() - t0, result.seconds))
    first_total = rows[0][0]
    later = rows[1:]
    outside = [(total - inside) / total for total, inside in later]
    return {"binning_and_first_trial_s": round(first_total, 2), "trials": trials,
            "trial_s": [round(total, 2) for total, _ in later],
            "outside_lightgbm_train_fraction": [round(x, 4) for x in outside],
            "constructions": prepared.constructions, "prepare_s": round(time.perf_counter() - start, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", type=Path)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--trees", type=int, default=30)
    ap.add_argument("--only", nargs="*", default=["train", "experiment", "predict", "eval", "trials"])
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--col-wise", action="store_true",
                    help="also train with --param force_col_wise=true (LightGBM keeps no row-wise copy)")
    ap.add_argument("--model", type=Path, help="score with this model directory instead of the one trained here")
    args = ap.parse_args()
    out: dict = {"data": str(args.data), "load": os.getloadavg()}
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        tmp = Path(tmp)
        model = args.model or tmp / "model"
        for r in range(args.rounds):
            if "train" in args.only:
                out.setdefault("train", []).append(measured(rankcli(
                    "train", str(args.data), "-o", str(model), "--loss", "xendcg-native", "--trees", str(args.trees),
                    "--overwrite")))
                out.setdefault("train_lightgbm", []).append(measured(
                    [sys.executable, "-c", HAND["train"], str(args.data), str(args.trees)]))
            if "train" in args.only and args.col_wise:  # the leaner histograms (no row-wise copy)
                out.setdefault("train_col_wise", []).append(measured(rankcli(
                    "train", str(args.data), "-o", str(tmp / "model_col"), "--loss", "xendcg-native", "--trees",
                    str(args.trees), "--param", "force_col_wise=true", "--overwrite")))
                out.setdefault("same_trees_col_wise", []).append(same_trees(model, tmp / "model_col"))
            if "experiment" in args.only:
                out.setdefault("experiment", []).append(measured(rankcli(
                    "experiment", str(args.data), "-o", str(tmp / f"exp{r}"), "--trials", "2", "--trees", "10",
                    "--losses", "xendcg,lambdamart")))
            if model.exists() and "predict" in args.only:
                out.setdefault("predict", []).append(measured(rankcli(
                    "predict", str(model), str(args.data), "-o", str(tmp / "run.parquet"), "--overwrite")))
                out.setdefault("predict_lightgbm", []).append(measured(
                    [sys.executable, "-c", HAND["predict"], str(args.data), str(model), str(tmp / "run2.parquet")]))
            if model.exists() and "eval" in args.only:
                out.setdefault("eval_model", []).append(measured(rankcli(
                    "eval", str(args.data), "--model", str(model), "--metric", "ndcg@5,10")))
    if "trials" in args.only:
        out["trials"] = trial_overhead(args.data, args.trials, args.trees)
    out["load_after"] = os.getloadavg()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
