"""Benchmark: `rankcli export-model` with `--check`, per target, on a WEB30K-sized model and dataset.

Target: a 500-tree, 255-leaf model over 136 features, checked on 100,000 rows, in under 10 s per target (export and
check together: loading the model, planning every threshold, writing the files, reading them back, the synthetic
rows, LightGBM's leaves and the engine's scores of every row).

Workload (synthetic, seeded): 1,000 queries of 100 documents; 136 float32 features, half of them sparse (70% zeros)
so that LightGBM's zero-versus-positive splits occur; a model of 500 random trees of 255 leaves each (leaf-wise
growth: a random leaf split at each step), every threshold a midpoint between two neighbouring values of its feature
in the data, as LightGBM places them, about 1 in 40 splits at LightGBM's 1e-35 zero threshold, leaf values
N(0, 0.05). The model directory is written as rankcli writes one (its checksum recorded), so export-model loads it as
any trained model.

Printed per target: export + check seconds (wall, and CPU seconds of the process: every thread, LightGBM's too; on a
shared machine the CPU seconds mislead less), and beside it one LightGBM ``pred_leaf`` of the whole dataset timed just
before (the check needs every row's leaf in every tree, so this part is LightGBM's), the ratio of the two, and the
one-minute load average at the end.

Run: flock /tmp/rankcli-bench.lock .venv/bin/python bench/export_model.py [--rows 100000] [--trees 500]
     [--leaves 255] [--targets solr,vespa,...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

TARGETS = ["elasticsearch-ltr", "elasticsearch-ltr:ranklib", "opensearch-ltr", "solr", "elasticsearch", "vespa",
           "onnx", "ranklib"]


def make_data(rows: int, features: int, rng):
    from rankcli.dataset import Dataset

    per_query = 100
    x = rng.lognormal(0, 1, size=(rows, features)).astype(np.float32)
    sparse = rng.random((rows, features)) < 0.7
    x[:, features // 2:][sparse[:, features // 2:]] = 0
    labels = rng.integers(0, 5, rows).astype(np.float64)
    qids = np.repeat(np.arange(rows // per_query + 1, dtype=np.int64), per_query)[:rows]
    return Dataset(qids=qids, labels=labels, features=x, feature_names=[f"f{i}" for i in range(1, features + 1)])


def _tree_text(index: int, leaves: int, x: np.ndarray, rng) -> str:
    feature = rng.integers(0, x.shape[1], leaves - 1)
    sample = x[rng.integers(0, x.shape[0], leaves - 1)]
    a, b = sample[np.arange(leaves - 1), feature], x[rng.integers(0, x.shape[0], leaves - 1), feature]
    threshold = (np.minimum(a, b).astype(np.float64) + np.maximum(a, b)) / 2
    # LightGBM puts a threshold between two values; between 0 and its neighbours above, at 1e-35
    threshold[(a == b) | (rng.random(leaves - 1) < 0.025)] = float(np.float32(1e-35))
    left, right = np.zeros(leaves - 1, np.int64), np.zeros(leaves - 1, np.int64)
    parent_of_leaf = {0: (-1, True)}
    for node in range(leaves - 1):  # leaf-wise growth: split a random leaf
        leaf = int(rng.integers(0, node + 1))
        new = node + 1
        p, is_left = parent_of_leaf[leaf]
        if p >= 0:
            (left if is_left else right)[p] = node
        left[node], right[node] = ~leaf, ~new
        parent_of_leaf[leaf], parent_of_leaf[new] = (node, True), (node, False)
    values = rng.normal(0, 0.05, leaves)

    def line(key, arr):
        return f"{key}=" + " ".join(repr(float(v)) if isinstance(v, float) else str(v) for v in arr.tolist())

    ones = " ".join(["1"] * leaves)
    return "\n".join([f"Tree={index}", f"num_leaves={leaves}", "num_cat=0", line("split_feature", feature),
                      "split_gain=" + " ".join(["1"] * (leaves - 1)), line("threshold", threshold),
                      "decision_type=" + " ".join(["2"] * (leaves - 1)), line("left_child", left),
                      line("right_child", right), line("leaf_value", values), f"leaf_weight={ones}",
                      f"leaf_count={ones}", "internal_value=" + " ".join(["0"] * (leaves - 1)),
                      "internal_weight=" + " ".join(["1"] * (leaves - 1)),
                      "internal_count=" + " ".join(["2"] * (leaves - 1)), "is_linear=0", "shrinkage=1", ""])


def make_model(directory: Path, ds, trees: int, leaves: int, rng) -> None:
    from rankcli.train.model import write_model_dir

    names = ds.feature_names
    head = ["tree", "version=v4", "num_class=1", "num_tree_per_iteration=1", "label_index=0",
            f"max_feature_idx={len(names) - 1}", "objective=lambdarank", "feature_names=" + " ".join(names),
            "feature_infos=" + " ".join("[0:100]" for _ in names), ""]
    body = [_tree_text(t, leaves, ds.features, rng) for t in range(trees)]
    text = "\n".join(head) + "\n" + "\n".join(body) + "\nend of trees\n\npandas_categorical:null\n"
    info = {"format": "rankcli-model/1", "loss": {"name": "lambdamart"}, "features": names, "seed": 0}
    write_model_dir(directory, text, info)


def predict_seconds(model: Path, ds) -> float:
    """One LightGBM leaf prediction of the whole dataset (the part of the check rankcli cannot avoid): the anchor."""
    from rankcli.runtime.cpus import default_threads
    from rankcli.train import load_model

    booster = load_model(model).booster
    start, cpu = time.perf_counter(), time.process_time()
    booster.predict(ds.features, pred_leaf=True, num_threads=default_threads())
    return time.perf_counter() - start, time.process_time() - cpu


def run(model: Path, data: Path, out: Path, target: str) -> dict:
    from rankcli.export_model import ExportOptions, export_model

    name, _, model_type = target.partition(":")
    start, cpu = time.perf_counter(), time.process_time()
    result = export_model(model, name, out, ExportOptions(model_type=model_type or "xgboost+json", check=data),
                          overwrite=True)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    c = result.check
    return {"target": target, "seconds": round(seconds, 2), "cpu_s": round(cpu, 2), "passed": c.passed,
            "rows_other_branch": c.rows_other_branch, "synthetic": c.synthetic_rows,
            "synthetic_other_branch": c.synthetic_other_branch, "named": len(result.inexact),
            "max_abs_diff": c.max_abs_diff}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--features", type=int, default=136)
    parser.add_argument("--trees", type=int, default=500)
    parser.add_argument("--leaves", type=int, default=255)
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from rankcli.runtime.startup import import_lightgbm_lean

    import_lightgbm_lean()
    from rankcli.formats.parquet import write_dataset

    rng = np.random.default_rng(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="rankcli-bench-export-"))
    try:
        ds = make_data(args.rows, args.features, rng)
        write_dataset(tmp / "data.parquet", ds)
        make_model(tmp / "model", ds, args.trees, args.leaves, rng)
        print(f"model: {args.trees} trees of {args.leaves} leaves over {args.features} features; data: {args.rows:,} "
              "rows; target: export + check < 10 s per target", flush=True)
        for target in args.targets.split(","):  # alternating: LightGBM's own leaf prediction, then the export
            anchor, anchor_cpu = predict_seconds(tmp / "model", ds)
            row = run(tmp / "model", tmp / "data.parquet", tmp / "out", target)
            row.update(lightgbm_pred_leaf_s=round(anchor, 2), lightgbm_pred_leaf_cpu_s=round(anchor_cpu, 2),
                       ratio=round(row["seconds"] / anchor, 2), load=round(os.getloadavg()[0], 2))
            print(json.dumps(row), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
