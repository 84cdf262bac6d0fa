"""Benchmark `rankcli fuse` against ranx (`ranx.fuse`), in one process alternating, and whole processes file to file.

The case (default: the target's 5 runs x 5,000 queries x 500 documents): each run retrieves, for every query, 500 of
the query's pool of --pool documents (default 1,000) with normal scores written in full (no ties within a run: ranx
ranks tied documents in an order of its own), as TREC files into bench/data/fuse/ (seeded, reused).

    flock /tmp/rankcli-bench.lock .venv/bin/python bench/fuse.py [--queries 5000] [--docs 500] [--runs 5]
        [--pool 1000] [--repeat 3] [--methods rrf,sum,wsum,mnz] [--file-methods rrf] [--file-repeat 1]
        [--no-files] [--no-memory]

1. In process, runs already built: ranx's `Run` objects (read by `Run.from_file`; numba compiled beforehand on a
   small case) against rankcli's runs as read (`rankcli.fuse.reading.read_runs`: rows grouped by query, document
   names and their hashes). Timed: ranx `fuse(runs, norm="min-max", method=M)` against rankcli's
   `prepare` + `combine` + `ranking` (alignment, normalisation, fusion, the fused order), alternating, best and
   median of --repeat. The fused scores are compared on every query.
2. File to file (--file-methods, --file-repeat rounds: ranx's reading is slow): `rankcli fuse RUN... -o OUT --method
   M` against a script doing ranx's `Run.from_file` for each run, `fuse` and `save` (its numba cache warm),
   alternating; wall time, CPU time and peak RSS as GNU time reports them (/usr/bin/time: a fork of this process
   would count its memory as the child's).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

PARAMS = {"wsum": "weights", "wmnz": "weights", "mixed": "weights", "w_bordafuse": "weights"}

RANX_SCRIPT = """
import sys
from ranx import Run, fuse
method, out, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
runs = [Run.from_file(p, kind="trec") for p in paths]
params = {"weights": [1 / len(runs)] * len(runs)} if method in ("wsum", "wmnz", "mixed", "w_bordafuse") else {}
fused = fuse(runs, norm="min-max", method=method, params=params)
fused.save(out, kind="trec")
"""


def generate(directory: Path, n_runs: int, n_queries: int, docs: int, pool: int, seed: int) -> list[Path]:
    """The runs as TREC files (each query's lines best first)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / f"run{r}.txt" for r in range(n_runs)]
    if all(p.exists() for p in paths):
        return paths
    rng = np.random.default_rng(seed)
    q = np.repeat(np.arange(1, n_queries + 1), docs)
    rank = np.tile(np.arange(1, docs + 1), n_queries)
    for r, path in enumerate(paths):
        picks = np.argsort(rng.random((n_queries, pool)), axis=1)[:, :docs]
        ids = picks + (np.arange(n_queries) * pool)[:, None]
        scores = -np.sort(-rng.normal(size=(n_queries, docs)) * 3, axis=1)
        names = np.char.add("doc", ids.ravel().astype(str))
        lines = np.char.add(np.char.add(np.char.add(q.astype(str), " Q0 "), names), " ")
        lines = np.char.add(np.char.add(lines, rank.astype(str)), " ")
        lines = np.char.add(np.char.add(lines, np.char.mod("%.17g", scores.ravel())), f" run{r}\n")
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(lines.tolist()))
        os.replace(tmp, path)
    return paths


def ranx_params(method: str, n: int) -> dict:
    return {"weights": [1 / n] * n} if PARAMS.get(method) == "weights" else {}


def warm_ranx(methods: list[str]) -> None:
    """numba compiles each function on its first call: call everything once on a small case."""
    from ranx import Run, fuse

    small = [Run({"q1": {"a": 1.0, "b": 0.5}, "q2": {"a": 0.3}}), Run({"q1": {"b": 2.0}, "q2": {"c": 1.0}})]
    for m in methods:
        fuse(small, norm="min-max", method=m, params=ranx_params(m, 2))


def ours(rs, method: str):
    from rankcli.core.fusion import combine, prepare, ranking, resolve_params
    from rankcli.core.fusion import method as lookup

    m = lookup(method)
    ev, _ = prepare(rs.runs, rs.n_queries, "min-max", query_names=rs.query_names, scores=m.reads != "ranks")
    fused = combine(ev, m, resolve_params(m, {}, len(rs.runs)))
    ranking(ev, fused)
    return ev, fused


def agreement(ev, fused, rs, ranx_run) -> float:
    """The largest difference between the two fused scores over every (query, document)."""
    al = ev.aligned
    worst = 0.0
    names = al.names.astype("U")
    for qi, q in enumerate(rs.query_names.tolist()):
        theirs = ranx_run[q]
        a, b = al.offsets[qi], al.offsets[qi + 1]
        if len(theirs) != b - a:
            return float("inf")
        mine = fused[a:b]
        other = np.array([theirs[n] for n in names[a:b].tolist()])
        worst = max(worst, float(np.abs(mine - other).max()))
    return worst


def in_process(paths: list[Path], methods: list[str], repeat: int) -> None:
    from ranx import Run, fuse

    from rankcli.fuse.reading import read_runs

    t = time.perf_counter()
    rs = read_runs([str(p) for p in paths])
    print(f"rankcli read the runs in {time.perf_counter() - t:.1f} s")
    t = time.perf_counter()
    warm_ranx(methods)
    print(f"ranx JIT warm-up {time.perf_counter() - t:.1f} s")
    t = time.perf_counter()
    runs = [Run.from_file(str(p), kind="trec") for p in paths]
    print(f"ranx read the runs (Run.from_file) in {time.perf_counter() - t:.1f} s")
    for m in methods:
        times = {"ranx": [], "rankcli": []}
        for _ in range(repeat):
            t = time.perf_counter()
            theirs = fuse(runs, norm="min-max", method=m, params=ranx_params(m, len(runs)))
            times["ranx"].append(time.perf_counter() - t)
            t = time.perf_counter()
            ev, fused = ours(rs, m)
            times["rankcli"].append(time.perf_counter() - t)
        diff = agreement(ev, fused, rs, theirs)
        best = {k: min(v) for k, v in times.items()}
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"{m:>6}: ranx fuse {best['ranx']:.2f} s (median {med['ranx']:.2f}), rankcli {best['rankcli']:.2f} s "
              f"(median {med['rankcli']:.2f}); speed-up {best['ranx'] / best['rankcli']:.2f}x best, "
              f"{med['ranx'] / med['rankcli']:.2f}x median; largest score difference {diff:.3g}")
        del theirs, ev, fused


def timed(cmd: list[str]) -> tuple[float, float, int, int]:
    """Wall seconds, CPU seconds, peak RSS (KiB) and exit status of one whole process, as GNU time measures it."""
    proc = subprocess.run(["/usr/bin/time", "-f", "TIME %e %U %S %M", *cmd], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(REPO)}, text=True)
    line = [x for x in proc.stderr.splitlines() if x.startswith("TIME ")][-1].split()
    return float(line[1]), float(line[2]) + float(line[3]), int(line[4]), proc.returncode


def file_to_file(paths: list[Path], methods: list[str], repeat: int, out: Path) -> None:
    script = out / "ranx_fuse.py"
    script.write_text(RANX_SCRIPT)
    for m in methods:
        ranx_cmd = [sys.executable, str(script), m, str(out / f"ranx-{m}.txt"), *map(str, paths)]
        ours_cmd = [sys.executable, "-m", "rankcli", "fuse", *map(str, paths), "-o", str(out / f"rankcli-{m}.txt"),
                    "--method", m, "--overwrite"]
        rows = {"ranx": [], "rankcli": []}
        for _ in range(repeat):
            for name, cmd in (("ranx", ranx_cmd), ("rankcli", ours_cmd)):
                wall, cpu, rss, status = timed(cmd)
                if status != 0:
                    raise SystemExit(f"{name} failed (status {status}): {' '.join(cmd)}")
                rows[name].append((wall, cpu, rss))
        best = {k: min(v) for k, v in rows.items()}
        print(f"{m:>6} file to file: ranx {best['ranx'][0]:.1f} s wall ({best['ranx'][1]:.1f} s CPU, "
              f"{best['ranx'][2] / 1024:.0f} MiB peak), rankcli {best['rankcli'][0]:.1f} s wall "
              f"({best['rankcli'][1]:.1f} s CPU, {best['rankcli'][2] / 1024:.0f} MiB peak); "
              f"speed-up {best['ranx'][0] / best['rankcli'][0]:.2f}x wall")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=5000)
    ap.add_argument("--docs", type=int, default=500)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--pool", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=32)
    ap.add_argument("--methods", default="rrf,sum,wsum,mnz")
    ap.add_argument("--file-methods", default="rrf")
    ap.add_argument("--file-repeat", type=int, default=1)
    ap.add_argument("--no-files", action="store_true", help="skip the file-to-file rounds")
    ap.add_argument("--no-memory", action="store_true", help="skip the in-process rounds")
    args = ap.parse_args()
    case = f"{args.runs}x{args.queries}x{args.docs}-pool{args.pool}-seed{args.seed}-v2"
    directory = HERE / "data" / "fuse" / case
    paths = generate(directory, args.runs, args.queries, args.docs, args.pool, args.seed)
    methods = args.methods.split(",")
    print(f"case {case}; load: {os.getloadavg()}")
    if not args.no_memory:
        in_process(paths, methods, args.repeat)
    if not args.no_files:
        file_to_file(paths, args.file_methods.split(","), args.file_repeat, directory)
    print(f"load at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
