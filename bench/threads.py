"""Training time by thread count and data size, on a machine kept busy: what the default thread count saves.

For each training-set size (``--rows``, LETOR-like data as bench/train.py generates it), trains ``--trees`` trees with
one thread, with every CPU this process may use (``rankcli.runtime.cpus.available_cpus``) and with rankcli's default
(the CPUs, at most one thread per ``rankcli.runtime.cpus.ROWS_PER_THREAD`` training rows), alternating the three
within every round, and prints the best and median wall time of each and the ratio of every-CPU to default. ``--busy K``
keeps K processes spinning on the CPUs meanwhile (what a shared machine or an oversubscribed job does to LightGBM's
threads, which wait for each other after every histogram); the load average is printed before and after.

Run with the flock rule:
    flock /tmp/rankcli-bench.lock .venv/bin/python bench/threads.py --rows 2000,20000,100000 --busy 2

``--commands train,experiment,tune,explain`` measures whole CLI processes instead (``rankcli <command>`` on one
generated dataset of ``--rows`` rows), because the OpenMP wait policy is read once, when a process loads libgomp:
rankcli's default (no wait variable set: the CLI sets ``OMP_WAIT_POLICY=passive``), the spinning wait LightGBM gets
without it (``GOMP_SPINCOUNT=300000``, libgomp's default, which the CLI leaves alone as a user's choice), and
``--threads 1``, alternating within every round, idle (``--busy 0``) and with every CPU taken (``--busy 2``). It
prints the worst and the median of each; the target is the default's worst within 2.5x of ``--threads 1``'s median
with both cores busy (``--spins 3000,30000`` adds libgomp spinning that many iterations as more variants):
    flock /tmp/rankcli-bench.lock .venv/bin/python bench/threads.py --commands train,experiment,tune,explain \
        --rows 200000 --rounds 3 --busy 2
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from train import generate  # noqa: E402  (bench/, this script's directory, is on the path)

from rankcli.runtime.cpus import ROWS_PER_THREAD, available_cpus, default_threads  # noqa: E402
from rankcli.train import TrainConfig, train_model  # noqa: E402


def _spin() -> None:
    while True:
        pass


def seconds(ds, trees: int, threads: int) -> float:
    start = time.perf_counter()
    train_model(ds, None, TrainConfig(loss="lambdamart", trees=trees, threads=threads, seed=1))
    return time.perf_counter() - start


#: The environments compared by ``--commands``: rankcli's default, libgomp's spinning default, one thread.
VARIANTS = {"default (passive)": ({}, []), "spinning (300000)": ({"GOMP_SPINCOUNT": "300000"}, []),
            "--threads 1": ({}, ["--threads", "1"])}


def variants(spins: str) -> dict:
    """VARIANTS and, for each count in ``spins`` (comma-separated), libgomp spinning that many iterations."""
    extra = {f"spinning ({n})": ({"GOMP_SPINCOUNT": n}, []) for n in spins.split(",") if n}
    return {**VARIANTS, **extra}


def command_lines(command: str, data: Path, out: Path, trees: int) -> list[str]:
    """The rankcli command line measured for ``command`` (an output under ``out``, replaced each run)."""
    cli = [sys.executable, "-m", "rankcli"]
    if command == "train":
        return [*cli, "train", str(data), "--valid", str(data), "-o", str(out / "m"), "--trees", str(trees),
                "--overwrite"]
    if command == "experiment":
        return [*cli, "experiment", str(data), "-o", str(out / "x"), "--trials", "2", "--trees", str(trees),
                "--losses", "lambdamart,xendcg", "--jobs", "2", "--no-plots", "--overwrite"]
    if command == "tune":
        return [*cli, "tune", str(data), "--valid", str(data), "-o", str(out / "t"), "--loss", "lambdamart",
                "--budget", "2", "--trees", str(trees), "--overwrite"]
    if command == "explain":
        return [*cli, "explain", str(out / "model"), str(data), "--repeats", "1"]
    raise SystemExit(f"unknown command {command!r}")


def measure_commands(args: argparse.Namespace) -> None:
    """Whole CLI processes under each wait policy (see the module's help)."""
    import subprocess
    import tempfile

    from rankcli.formats.parquet import write_dataset

    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS")}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        data = out / "data.parquet"
        write_dataset(data, generate(int(args.rows), args.features, np.random.default_rng(0)))
        subprocess.run(command_lines("train", data, out, args.trees)[:-1] + ["-o", str(out / "model")], check=True,
                       env=clean, capture_output=True)
        print(f"{'command':>11} {'variant':>18} {'worst s':>8} {'median s':>9}")
        for command in args.commands.split(","):
            compared = variants(args.spins)
            times: dict[str, list[float]] = {name: [] for name in compared}
            for _ in range(args.rounds):
                for name, (env, extra) in compared.items():
                    line = command_lines(command, data, out, args.trees)
                    if extra and command == "explain":  # no --threads option: the thread count rankcli reads
                        env, extra = {"OMP_NUM_THREADS": "1"}, []
                    start = time.perf_counter()
                    subprocess.run(line + extra, check=True, env={**clean, **env}, capture_output=True)
                    times[name].append(time.perf_counter() - start)
            for name, t in times.items():
                print(f"{command:>11} {name:>18} {max(t):>8.2f} {statistics.median(t):>9.2f}")
            ratio = max(times["default (passive)"]) / statistics.median(times["--threads 1"])
            print(f"{command:>11} default's worst / --threads 1's median: {ratio:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default="2000,20000,100000", help="training-set sizes, comma-separated")
    ap.add_argument("--features", type=int, default=46)
    ap.add_argument("--trees", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--busy", type=int, default=0, help="processes kept spinning during the measurement")
    ap.add_argument("--spins", default="", help="with --commands: more GOMP_SPINCOUNT values to compare")
    ap.add_argument("--commands", default="", help="measure these rankcli commands as whole processes (see above)")
    args = ap.parse_args()

    cpus = available_cpus()
    print(f"# {platform.machine()}, {os.cpu_count()} cores, {cpus} available; {args.trees} trees of lambdamart, "
          f"{args.rounds} rounds alternating; ROWS_PER_THREAD {ROWS_PER_THREAD}; {args.busy} spinning processes")
    print(f"# load before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.busy)]
    for p in spinners:
        p.start()
    try:
        if args.commands:
            measure_commands(args)
            return
        print(f"{'rows':>8} {'case':>10} {'threads':>8} {'best s':>8} {'median s':>9}")
        for rows in (int(r) for r in args.rows.split(",")):
            ds = generate(rows, args.features, np.random.default_rng(0))
            counts = {"one": 1, "every CPU": cpus, "default": default_threads(None, rows)}
            times: dict[str, list[float]] = {name: [] for name in counts}
            seconds(ds, 2, 1)  # warm up: imports, first allocations
            for _ in range(args.rounds):
                for name, n in counts.items():
                    times[name].append(seconds(ds, args.trees, n))
            for name, n in counts.items():
                print(f"{rows:>8} {name:>10} {n:>8} {min(times[name]):>8.3f} {statistics.median(times[name]):>9.3f}")
            ratio = statistics.median(times["every CPU"]) / statistics.median(times["default"])
            print(f"{rows:>8} every CPU / default, medians: {ratio:.2f}x")
    finally:
        for p in spinners:
            p.terminate()
            p.join()
    print(f"# load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
