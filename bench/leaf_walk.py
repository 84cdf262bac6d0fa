"""Benchmark: the compiled leaf walk (rankcli.core.trees.leaf_walk) of this tree against the one of another revision,
ns per (row, tree) pair, alternating in one process so that the machine's load hits both alike.

Two workloads:
- explain: a 200-tree, 31-leaf lambdarank model (LightGBM, leaf-wise, as bench/explain.py trains it) on 200,000 rows
  x 40 float32 features (bench/explain.py's make_data), walked as explain walks it: sub-ensembles of 90 of the trees
  on batches of 39,000 rows (explain's batch: 2^23 cells / 215 trees), Fortran-order batches;
- export: 500 random leaf-wise trees of 255 leaves on 100,000 rows x 136 (bench/export_model.py's), the whole
  ensemble on the whole data at once, as export-model --check walks it.

Both walks run on the same threads (rankcli.runtime.cpus.default_threads); their leaves are compared (equal or the
benchmark fails). The other revision's walk is compiled from its source with setup.py's flags.

Run: flock /tmp/rankcli-bench.lock .venv/bin/python bench/leaf_walk.py [--base main] [--repeats 5]
     [--cases explain,export] [--workdir DIR (keeps the trained model)]
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
SOURCE = "rankcli/core/trees/csrc/leaf_walk.c"


def build(revision: str, where: Path):
    """The leaf_walk module compiled from ``revision``'s source."""
    src = where / f"leaf_walk_{revision.replace('/', '_')}.c"
    src.write_text(subprocess.run(["git", "show", f"{revision}:{SOURCE}"], cwd=REPO, check=True, capture_output=True,
                                  text=True).stdout)
    so = src.with_suffix(sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run(["gcc", "-O2", "-pthread", "-fvisibility=hidden", "-shared", "-fPIC",
                    f"-I{sysconfig.get_paths()['include']}", str(src), "-o", str(so)], check=True)
    loader = importlib.machinery.ExtensionFileLoader("leaf_walk", str(so))
    spec = importlib.util.spec_from_file_location("leaf_walk", str(so), loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def ensemble_of(text: str):
    from rankcli.core.trees.ensemble import from_tree_arrays
    from rankcli.formats.lightgbm_text import parse_model_text

    return from_tree_arrays([(t.split_feature, t.threshold, t.decision_type, t.left_child, t.right_child,
                              t.leaf_value) for t in parse_model_text(text).trees])


def explain_case(workdir: Path):
    import bench.explain as E

    ds = E.make_data(200_000, 40)
    path = workdir / "explain-200x31.txt"
    if not path.exists():
        path.write_text(E.train(ds, 200).model_to_string())
    ens = ensemble_of(path.read_text())
    rng = np.random.default_rng(0)
    subs = [np.sort(rng.choice(ens.n_trees, 90, replace=False)) for _ in range(4)]
    from rankcli.core.trees.ensemble import from_tree_arrays

    arrays = _tree_arrays(ens)
    subs = [from_tree_arrays([arrays[t] for t in s]) for s in subs]
    batches = [np.array(ds.features[a:a + 39_000], order="F") for a in range(0, 200_000, 39_000)]
    return [(sub, b) for b in batches for sub in subs[:1]] + [(s, batches[0]) for s in subs[1:]], ens


def _tree_arrays(ens) -> list[tuple]:
    """Each tree's arrays in LightGBM's per-tree layout (from_tree_arrays' input), for sub-ensembles."""
    out = []
    for t in range(ens.n_trees):
        a, b = ens.node_offsets[t], ens.node_offsets[t + 1]
        la, lb = ens.leaf_offsets[t], ens.leaf_offsets[t + 1]
        left, right = (np.where(c >= 0, c - a, ~(~c - la)) for c in (ens.left[a:b], ens.right[a:b]))
        out.append((ens.feature[a:b], ens.threshold[a:b], ens.decision_type[a:b], left, right, ens.leaf_value[la:lb]))
    return out


def export_case():
    import bench.export_model as X

    rng = np.random.default_rng(0)
    ds = X.make_data(100_000, 136, rng)
    names = ds.feature_names
    head = ["tree", "version=v4", "num_class=1", "num_tree_per_iteration=1", "label_index=0",
            f"max_feature_idx={len(names) - 1}", "objective=lambdarank", "feature_names=" + " ".join(names), ""]
    text = "\n".join(head) + "\n" + "\n".join(X._tree_text(t, 255, ds.features, rng) for t in range(500)) + \
        "\nend of trees\n"
    ens = ensemble_of(text)
    return [(ens, ds.features)], ens


def depths(ens) -> str:
    """Mean leaf depth and mean of the trees' max depths."""
    mean, deepest = [], []
    for t in range(ens.n_trees):
        a, b = ens.node_offsets[t], ens.node_offsets[t + 1]
        depth = {int(ens.roots[t]): 0}
        leaf_depths = []
        for i in range(a, b):
            for c in (ens.left[i], ens.right[i]):
                if c >= 0:
                    depth[int(c)] = depth[i] + 1
                else:
                    leaf_depths.append(depth[i] + 1)
        mean.append(np.mean(leaf_depths) if leaf_depths else 0)
        deepest.append(max(leaf_depths) if leaf_depths else 0)
    return f"mean leaf depth {np.mean(mean):.1f}, mean max depth {np.mean(deepest):.1f}"


def time_walks(calls, walks: dict, repeats: int, threads: int) -> dict:
    """Per walk, (wall, CPU) ns per pair of each repeat; the calls alternate between the walks one by one."""
    from rankcli.core.trees import leaves as L

    pairs = sum(ens.n_trees * x.shape[0] for ens, x in calls)
    times = {k: np.zeros((repeats, 2)) for k in walks}
    saved = L.leaf_walk
    try:
        for r in range(repeats):
            for c, (ens, x) in enumerate(calls):
                order = list(walks) if (r + c) % 2 == 0 else list(walks)[::-1]
                outs = []
                for k in order:
                    L.leaf_walk = walks[k]
                    start, cpu = time.perf_counter(), time.process_time()
                    outs.append(L.leaf_indices(ens, x, threads))
                    times[k][r] += time.perf_counter() - start, time.process_time() - cpu
                if not np.array_equal(outs[0], outs[1]):
                    raise SystemExit("the leaves differ")
    finally:
        L.leaf_walk = saved
    return {k: v / pairs * 1e9 for k, v in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", default="main")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cases", default="explain,export")
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    from rankcli.core.trees import leaves as L
    from rankcli.runtime.cpus import default_threads

    threads = default_threads()
    with tempfile.TemporaryDirectory(prefix="rankcli-bench-walk-") as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        walks = {"base": build(args.base, Path(tmp)), "this": L.leaf_walk}
        for case in args.cases.split(","):
            calls, ens = explain_case(workdir) if case == "explain" else export_case()
            print(f"{case}: {ens.n_trees} trees, {depths(ens)}; {len(calls)} calls, {threads} threads", flush=True)
            times = time_walks(calls, walks, args.repeats, threads)
            for k, v in times.items():
                print(f"  {k:4s} ({args.base if k == 'base' else 'work tree'}): ns per pair, wall median "
                      f"{np.median(v[:, 0]):.2f} min {v[:, 0].min():.2f}; CPU median {np.median(v[:, 1]):.2f} "
                      f"min {v[:, 1].min():.2f}", flush=True)
            ratio = [np.median(times["this"][:, i]) / np.median(times["base"][:, i]) for i in (0, 1)]
            print(f"  this/base (medians): wall {ratio[0]:.3f}, CPU {ratio[1]:.3f}", flush=True)

if __name__ == "__main__":
    main()
