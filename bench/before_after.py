"""Whole commands of this checkout against another one (`--baseline DIR`, e.g. `git worktree add /tmp/before REV`),
alternating in one run, best of --rounds: the check that a refactoring changed no speed beyond noise.

Each checkout runs its own `python -m rankcli` (its own package, chosen by the working directory) on the same inputs
and writes into its own temporary directory, so a model or run is always read by the code that wrote it. The inputs
are bench/data's WEB30K-shaped text (made by bench/convert.py) and the TREC run and qrels made by
`bench/eval.py --trec`; missing inputs skip their commands. Both checkouts' bytecode is compiled first, as an
installed package has it: under PYTHONDONTWRITEBYTECODE an editable checkout would otherwise compile every module it
imports in every timed process, and a checkout of more, smaller modules would be charged for its source layout.

``--scale`` adds the workloads of the benchmark scripts at their default sizes, made with their own generators:
bench/eval.py's NDCG@10 of a 30,000-query Parquet run (~3.6M rows) and bench/trec_eval.py's 30,000 queries x 1,000
documents (3M qrels lines), trec_eval's official and all_trec sets.

    flock /tmp/rankcli-bench.lock /work/venv/bin/python bench/before_after.py --baseline /tmp/before --rounds 5 --scale
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bytecode import compile_bytecode

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "bench" / "data"
TEXT = DATA / "web30k-like-100000.txt"
TREC_RUN, TREC_QRELS = DATA / "trec_run_30000x100_s0.txt", DATA / "trec_qrels_30000x100_s0.txt"


def steps(work: Path) -> list[tuple[str, list[str], Path | None]]:
    """(name, rankcli arguments, input it needs) in order: later steps read what earlier ones wrote."""
    data, model, run = work / "data.parquet", work / "model", work / "run.parquet"
    return [
        ("--help", ["--help"], None),
        ("convert 100k rows", ["convert", TEXT, "-o", data, "--overwrite"], TEXT),
        ("info", ["info", data], TEXT),
        ("train xendcg 20 trees", ["train", data, "-o", model, "--loss", "xendcg", "--trees", "20", "--overwrite"],
         TEXT),
        ("predict", ["predict", model, data, "-o", run, "--overwrite"], TEXT),
        ("eval ndcg@10,map", ["eval", run, "-m", "ndcg@10", "-m", "map", "--json"], TEXT),
        ("compare run run", ["compare", run, run, "--name", "a", "--name", "b", "--json"], TEXT),
        ("simulate-clicks", ["simulate-clicks", data, "-o", work / "clicks.parquet", "--impressions", "5",
                             "--overwrite"], TEXT),
        ("eval TREC official", ["eval", "--qrels", TREC_QRELS, "--run", TREC_RUN, "-m", "official",
                                "--format", "trec_eval"], TREC_RUN),
        ("trec_eval official", ["trec_eval", TREC_QRELS, TREC_RUN], TREC_RUN),
        ("trec_eval -q official", ["trec_eval", "-q", TREC_QRELS, TREC_RUN], TREC_RUN),
    ]


def scale_steps() -> list[tuple[str, list[str], Path | None]]:
    """The benchmark scripts' own workloads (generated on first use into bench/data)."""
    sys.path.insert(0, str(REPO / "bench"))
    import eval as eval_bench
    import trec_eval as trec_eval_bench

    run = DATA / "eval_run_30000x120_s0.parquet"
    if not run.exists():
        eval_bench.generate(run, 30_000, 120, 0)
    qrels, trec_run = trec_eval_bench.generate(30_000, 1_000, 100)
    return [
        ("eval ndcg@10 3.6M rows", ["eval", run, "--metric", "ndcg@10", "--json"], run),
        ("trec_eval 30k x 1000", ["trec_eval", qrels, trec_run], trec_run),
        ("trec_eval all_trec 30k", ["trec_eval", "-m", "all_trec", qrels, trec_run], trec_run),
    ]


def timed(tree: Path, args: list) -> float:
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "rankcli", *map(str, args)], cwd=tree, capture_output=True,
                            env={**os.environ, "PYTHONPATH": str(tree)})
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{tree}: rankcli {' '.join(map(str, args))}: exit {result.returncode}\n"
                         f"{result.stderr.decode(errors='replace')}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scale", action="store_true", help="add the benchmark scripts' workloads")
    args = parser.parse_args()
    trees = {"after": REPO, "before": args.baseline.resolve()}
    for tree in trees.values():
        compile_bytecode(tree)
    extra = scale_steps() if args.scale else []
    best: dict[tuple[str, str], float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = {name: Path(tmp, name) for name in trees}
        for path in work.values():
            path.mkdir()
        plans = {name: steps(work[name]) + extra for name in trees}  # the same steps, each in its own directory
        for r in range(args.rounds):
            order = list(trees) if r % 2 == 0 else list(reversed(trees))
            for index in range(len(plans["after"])):
                for name in order:
                    step, argv, needs = plans[name][index]
                    if needs is not None and not needs.exists():
                        continue
                    seconds = timed(trees[name], argv)
                    best[step, name] = min(best.get((step, name), float("inf")), seconds)
    print(f"# {platform.machine()}, Python {platform.python_version()}, {os.cpu_count()} cores, best of "
          f"{args.rounds} alternating rounds; before = {trees['before']}")
    print(f"{'command':<24} {'before s':>9} {'after s':>9} {'after/before':>13}")
    for step, _, _ in plans["after"]:
        if (step, "after") in best:
            before, after = best[step, "before"], best[step, "after"]
            print(f"{step:<24} {before:9.3f} {after:9.3f} {after / before:13.2f}")


if __name__ == "__main__":
    main()
