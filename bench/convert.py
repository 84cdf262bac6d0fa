"""Benchmark: `rankcli convert` (whole process, text to Parquet on disk) against scikit-learn's
`load_svmlight_file(query_id=True)` (whole process, text to a sparse matrix in memory) on WEB30K-shaped text.

The text has 136 dense features per line written with 6 significant digits (a mix of counts, fractions and large
scores, like MSLR-WEB30K), labels 0..4 and about 120 documents per query. It is generated once into bench/data/
(gitignored). Both tools run as subprocesses, alternately, in the same run; the script prints the median wall time,
MB/s, the ratio, and each process's peak RSS (from wait4's rusage).

    flock /tmp/rankcli-bench.lock /tmp/venv/bin/python bench/convert.py                 # 100k rows, 3 rounds
    flock /tmp/rankcli-bench.lock /tmp/venv/bin/python bench/convert.py --rows 1000000 --rounds 1 --no-sklearn
    flock /tmp/rankcli-bench.lock /tmp/venv/bin/python bench/convert.py --rows 2000000 --rounds 1 --no-sklearn
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA = HERE / "data"
N_FEATURES = 136


def generate(rows: int, path: Path, seed: int = 0) -> None:
    """WEB30K-shaped SVMlight text, written in chunks with arrow string kernels (fast, deterministic)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(seed)
    kinds = rng.integers(0, 3, N_FEATURES)  # 0 counts, 1 fractions, 2 large scores
    tmp = path.with_suffix(".tmp")
    qid = 0
    with open(tmp, "wb") as out:
        done = 0
        while done < rows:
            n = min(50_000, rows - done)
            sizes = np.clip(rng.normal(120, 40, n // 60 + 2).astype(int), 5, 400)
            qids = np.repeat(np.arange(qid, qid + sizes.shape[0]), sizes)[:n]
            qid = int(qids[-1]) + 1
            labels = np.minimum(rng.geometric(0.45, n) - 1, 4)
            parts = [pa.array(labels).cast(pa.string()),
                     pc.binary_join_element_wise("qid:", pa.array(qids).cast(pa.string()), "")]
            for j in range(N_FEATURES):
                if kinds[j] == 0:
                    v = rng.poisson(rng.uniform(0.5, 30), n).astype(np.float64)
                elif kinds[j] == 1:
                    v = rng.random(n)
                else:
                    v = rng.lognormal(8, 2, n)
                nz = v != 0
                mag = np.floor(np.log10(np.abs(v[nz])))
                scale = 10.0 ** (5 - mag)
                v[nz] = np.round(v[nz] * scale) / scale  # 6 significant digits
                parts.append(pc.binary_join_element_wise(f"{j + 1}:", pa.array(v).cast(pa.string()), ""))
            lines = pc.binary_join_element_wise(*parts, " ")
            text = pc.binary_join_element_wise(lines, "\n", "")
            out.write("".join(text.to_pylist()).encode())
            done += n
    os.replace(tmp, path)


def run_measured(cmd: list[str]) -> tuple[float, float, int]:
    """Wall seconds, peak RSS in MB (this child only, via wait4), exit status."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    err = proc.stderr.read().decode()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        print(err, file=sys.stderr)
    return seconds, usage.ru_maxrss / 1024, proc.returncode


SKLEARN = ("import sys; from sklearn.datasets import load_svmlight_file; "
           "X, y, q = load_svmlight_file(sys.argv[1], query_id=True); print(X.shape)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-sklearn", action="store_true", help="only rankcli (sklearn is superlinear at 1M rows)")
    args = ap.parse_args()

    DATA.mkdir(exist_ok=True)
    path = DATA / f"web30k-like-{args.rows}.txt"
    if not path.exists():
        t = time.perf_counter()
        generate(args.rows, path)
        print(f"generated {path} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    mb = path.stat().st_size / 1e6
    print(f"input: {path.name}: {args.rows:,} rows, {N_FEATURES} features, {mb:.1f} MB; {os.cpu_count()} cores")

    have_sklearn = not args.no_sklearn
    if have_sklearn:
        try:
            import sklearn  # noqa: F401
        except ImportError:
            print("scikit-learn not installed: skipping it", file=sys.stderr)
            have_sklearn = False
    ours, theirs = [], []
    with tempfile.TemporaryDirectory(dir=DATA) as tmp:
        out = Path(tmp) / "out.parquet"
        rankcli = [sys.executable, "-m", "rankcli", "convert", str(path), "-o", str(out), "--overwrite"]
        for r in range(args.rounds):
            s, rss, rc = run_measured(rankcli)
            assert rc == 0, "rankcli convert failed"
            ours.append((s, rss))
            print(f"round {r + 1}: rankcli convert {s:7.2f} s {mb / s:7.1f} MB/s  peak RSS {rss:7.0f} MB", flush=True)
            if have_sklearn:
                s, rss, rc = run_measured([sys.executable, "-c", SKLEARN, str(path)])
                assert rc == 0, "sklearn failed"
                theirs.append((s, rss))
                print(f"round {r + 1}: sklearn load     {s:7.2f} s {mb / s:7.1f} MB/s  peak RSS {rss:7.0f} MB",
                      flush=True)
        out_mb = out.stat().st_size / 1e6
    ours_s = statistics.median(s for s, _ in ours)
    print(f"rankcli convert: median {ours_s:.2f} s = {mb / ours_s:.1f} MB/s, {args.rows / ours_s:,.0f} rows/s, "
          f"peak RSS {max(r for _, r in ours):.0f} MB, Parquet {out_mb:.1f} MB")
    if theirs:
        theirs_s = statistics.median(s for s, _ in theirs)
        print(f"sklearn load_svmlight_file(query_id=True): median {theirs_s:.2f} s = {mb / theirs_s:.1f} MB/s, "
              f"peak RSS {max(r for _, r in theirs):.0f} MB")
        print(f"ratio (sklearn time / rankcli time): {theirs_s / ours_s:.2f}x")


if __name__ == "__main__":
    main()
