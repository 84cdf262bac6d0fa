"""Benchmark: the peak memory of `rankcli click-model fit` on a log of 10 million sessions (target: within 4 GB).

The log: a table (Parquet, row groups of 1M rows) of `--sessions` sessions of 10 results, each a random order of 10 of
a query's 20 documents (sessions / 100 queries), DBN clicks (tests/click_model_data.py), written a million sessions at
a time. `python -m rankcli click-model fit LOG -o DIR --model dbn --iterations N` runs in a subprocess; its peak RSS
(its own VmHWM, as tests/peak_memory.py reads it: getrusage of children would count this process's memory, which the
child shares until exec) and wall time are printed. The memory does not depend on the iteration count (every
iteration reuses the same arrays), so a few iterations measure it.
Run: flock /tmp/rankcli-bench.lock .venv/bin/python bench/click_model_memory.py [--sessions 10000000]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.click_model_data import simulated_log, true_parameters  # noqa: E402
from tests.peak_memory import peak_mib, popen_rankcli  # noqa: E402

CHUNK = 1_000_000


def write_log(path: Path, sessions: int, seed: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    queries = max(1, sessions // 100)
    params = true_parameters("dbn", queries * 20, 10, np.random.default_rng(seed))
    writer = None
    for a in range(0, sessions, CHUNK):
        n = min(CHUNK, sessions - a)
        log = simulated_log("dbn", params, n, np.random.default_rng(seed + 1 + a), queries=queries,
                            docs_per_query=20, length=10)
        table = pa.table({"session": np.repeat(np.arange(a, a + n), 10),
                          "query": np.repeat(log.item[::10].astype(np.int64) // 20, 10),
                          "rank": np.tile(np.arange(1, 11), n), "document": log.item.astype(np.int64),
                          "click": log.click.astype(np.int8)})
        if writer is None:
            writer = pq.ParquetWriter(str(path), table.schema, compression="zstd")
        writer.write_table(table, row_group_size=CHUNK)
    writer.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=10_000_000)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="rankcli-bench-click-memory-") as tmp:
        path = Path(tmp) / "log.parquet"
        t = time.perf_counter()
        write_log(path, args.sessions, args.seed)
        print(f"wrote {args.sessions:,} sessions ({path.stat().st_size / 1e6:.0f} MB) in "
              f"{time.perf_counter() - t:.0f} s", flush=True)
        t = time.perf_counter()
        report = Path(tmp) / "peak"
        proc = popen_rankcli(["click-model", "fit", path, "-o", Path(tmp) / "dbn", "--model", "dbn",
                              "--iterations", args.iterations], report, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=REPO)
        _, err = proc.communicate()
        seconds = time.perf_counter() - t
        if proc.returncode != 0:
            raise SystemExit(err)
        rss = peak_mib(report)
    print(f"click-model fit --model dbn, {args.sessions:,} sessions x 10, {args.iterations} iterations: "
          f"{seconds:.0f} s end to end, peak RSS {rss:.0f} MiB (this process: "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB)", flush=True)
    print(f"load average at end: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
