"""Benchmark `rankcli trec_eval` against trec_eval itself, whole processes alternating.

Builds trec_eval from NIST's source (tests/data/trec_eval/src, the copy of ../shared/reference/trec_eval with the
one-line rbp fix of its PROVENANCE.md) twice, with its Makefile's flags (no optimisation) and with -O2, generates a
seeded case (default: the target's 30,000 queries x 1,000 documents and 3M qrels lines) into bench/data/, then runs
each command --repeat times, alternating, and prints the best and median wall time, the peak RSS (from
wait4's rusage) and the ratios; every output is checked equal to trec_eval's.

    flock /tmp/rankcli-bench.lock .venv/bin/python bench/trec_eval.py [--queries 30000] [--docs 1000] [--repeat 3]
        [--skip-plain] [--only all_trec|official] [--prefs]

``--prefs`` times the preference measures instead (``-R qrels_prefs -m all_prefs``: the qrels read as preferences),
for instance on 50 queries of 2,000 judged documents: ``--queries 50 --judged 2000 --prefs``.

A contender that fails is reported as failed (its exit status or signal) and left out of the rounds that follow.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from bytecode import compile_bytecode

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SRC = REPO / "tests" / "data" / "trec_eval" / "src"
DATA = HERE / "data"


def build(flags: list[str], out: Path) -> Path:
    if not out.exists():
        cc = shutil.which("cc") or shutil.which("gcc")
        subprocess.run([cc, *flags, "-w", f"-I{SRC}", '-DVERSIONID="10.0-rc3"', "-o", str(out),
                        *map(str, sorted(SRC.glob("*.c"))), "-lm"], check=True)
    return out


def generate(queries: int, docs: int, judged: int) -> tuple[Path, Path]:
    """A run (``docs`` documents per query, scores with ties) and qrels (``judged`` per query, labels 0-2)."""
    run, qrels = DATA / f"te_run_{queries}x{docs}.txt", DATA / f"te_qrels_{queries}x{judged}.txt"
    if run.exists() and qrels.exists():
        return qrels, run
    DATA.mkdir(exist_ok=True)
    rng = np.random.default_rng(7)
    with open(run, "w") as f:
        for q in range(queries):
            ids = rng.choice(20 * docs, docs, replace=False)
            scores = np.sort(np.round(rng.random(docs), 4))[::-1]
            f.write("".join(f"{300 + q} Q0 D{d} {i + 1} {s} bench\n" for i, (d, s) in enumerate(zip(ids, scores))))
    with open(qrels, "w") as f:
        for q in range(queries):
            ids = rng.choice(20 * docs, judged, replace=False)
            labels = rng.choice(3, judged, p=[0.7, 0.2, 0.1])
            f.write("".join(f"{300 + q} 0 D{d} {lab}\n" for d, lab in zip(ids, labels)))
    return qrels, run


def timed(cmd: list[str]) -> tuple[float, int, bytes, float, int]:
    """Wall seconds, peak RSS (KiB), standard output, CPU seconds (user + system) and wait status of one whole
    process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    return wall, usage.ru_maxrss, out, usage.ru_utime + usage.ru_stime, status


def describe(status: int) -> str:
    return f"killed by signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else \
        f"exit status {os.WEXITSTATUS(status)}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=30000)
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--judged", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--prefs", action="store_true", help="-R qrels_prefs -m all_prefs instead of all_trec, official")
    ap.add_argument("--skip-plain", action="store_true",
                    help="leave out the build with the Makefile's flags (the slowest contender)")
    ap.add_argument("--only", choices=["all_trec", "official"], help="one measure set only")
    args = ap.parse_args()
    DATA.mkdir(exist_ok=True)
    plain = build(["-g"], DATA / "trec_eval_plain")
    optimised = build(["-O2"], DATA / "trec_eval_O2")
    qrels, run = generate(args.queries, args.docs, args.judged)
    rankcli = [sys.executable, "-m", "rankcli", "trec_eval"]
    compile_bytecode(REPO)
    print(f"case: {args.queries} queries x {args.docs} documents, {args.queries * args.judged} qrels lines; "
          f"load {os.getloadavg()}")
    sets = {"all_prefs": ["-q", "-R", "qrels_prefs", "-m", "all_prefs"]} if args.prefs else \
        {"all_trec": ["-m", "all_trec"], "official": []}
    for label, measures in sets.items():
        if args.only not in (None, label):
            continue
        contenders = {"trec_eval (Makefile flags)": [str(plain), *measures, str(qrels), str(run)],
                      "trec_eval -O2": [str(optimised), *measures, str(qrels), str(run)],
                      "rankcli trec_eval": [*rankcli, *measures, str(qrels), str(run)]}
        if args.skip_plain:
            del contenders["trec_eval (Makefile flags)"]
        results: dict = {name: [] for name in contenders}
        failed: dict = {}
        expected = None
        for _ in range(args.repeat):
            for name, cmd in contenders.items():
                if name in failed:
                    continue
                wall, rss, out, cpu, status = timed(cmd)
                if status:
                    failed[name] = describe(status)
                    continue
                expected = expected or out
                if out != expected:
                    raise SystemExit(f"{name}: output differs from trec_eval's")
                results[name].append((wall, rss, cpu))
        print(f"\n{' '.join(measures) or 'official'}:")
        ours = results["rankcli trec_eval"]
        for name, runs in results.items():
            if name in failed:
                print(f"  {name:28s} failed: {failed[name]}")
                continue
            walls = [w for w, _, _ in runs]
            line = f"  {name:28s} best {min(walls):7.2f} s  median {statistics.median(walls):7.2f} s  " \
                   f"CPU {min(c for _, _, c in runs):7.2f} s  peak RSS {max(r for _, r, _ in runs) / 1024:7.0f} MiB"
            if name != "rankcli trec_eval" and ours:
                line += f"   rankcli x{min(walls) / min(w for w, _, _ in ours):.2f} faster (best)"
            print(line)
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
