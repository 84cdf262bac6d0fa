"""Benchmark rankcli's start-up: `rankcli --help`, `rankcli --version` and `rankcli eval --help`, each a fresh
process, against the bare interpreter (`python -c pass`) started the same way, alternating, best and median of
--repeat. The ratio says what rankcli adds on top of Python's own start-up.

Run it alone on the machine (benchmarks share 2 cores with everything else):

    flock /tmp/rankcli-bench.lock /work/venv/bin/python bench/startup.py --repeat 20

`--baseline DIR` also times the rankcli of another checkout (e.g. `git worktree add /tmp/before <commit>`) in the
same rounds, for a before/after comparison within one run.

tests/cli/test_main.py checks what keeps start-up low (no heavy library imported by --help/--version); the time
itself is measured here, not asserted in a test.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bytecode import compile_bytecode

REPO = Path(__file__).resolve().parent.parent

CASES = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "rankcli --version": [sys.executable, "-m", "rankcli", "--version"],
    "rankcli --help": [sys.executable, "-m", "rankcli", "--help"],
    "rankcli eval --help": [sys.executable, "-m", "rankcli", "eval", "--help"],
}


def wall(cmd: list[str], cwd: Path = REPO) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--baseline", type=Path, help="another checkout whose rankcli is timed in the same rounds")
    args = parser.parse_args()
    cases = {name: (cmd, REPO) for name, cmd in CASES.items()}
    if args.baseline:
        cases.update({f"{name} (baseline)": (cmd, args.baseline.resolve())
                      for name, cmd in CASES.items() if name.startswith("rankcli")})
    for tree in {REPO, *([args.baseline.resolve()] if args.baseline else [])}:
        compile_bytecode(tree)
    times: dict[str, list[float]] = {name: [] for name in cases}
    for cmd, cwd in cases.values():  # warm the file cache
        wall(cmd, cwd)
    for _ in range(args.repeat):
        for name, (cmd, cwd) in cases.items():
            times[name].append(wall(cmd, cwd))
    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
          f"{args.repeat} rounds, alternating")
    base = statistics.median(times["python -c pass"])
    print(f"{'command':<33} {'best s':>8} {'median s':>9} {'median - python':>16}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<33} {min(values):8.3f} {median:9.3f} {median - base:16.3f}")


if __name__ == "__main__":
    main()
