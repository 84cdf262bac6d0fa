"""Benchmark: the cost of Parquet page checksums (every file rankcli writes carries them, every read verifies them).

Alternating in one run, on WEB30K-shaped text (bench/convert.py's generator, 136 features):

- ``rankcli convert`` end to end (a subprocess each time) writing with checksums and without
  (``rankcli.formats.parquet.WRITE_OPTIONS["write_page_checksum"]`` switched off in the child);
- the read path, in this process: ``read_dataset`` (the whole feature matrix, what train/explain/eval --model read)
  and a pass over ``ParquetFeatureRows`` (what predict and training read by row group) on the file with checksums,
  verified and not (``VERIFY_PAGE_CHECKSUMS``), and on the file without them.

    flock /tmp/rankcli-bench.lock .venv/bin/python bench/checksums.py             # 100k rows, 5 + 30 rounds
    flock /tmp/rankcli-bench.lock .venv/bin/python bench/checksums.py --rounds 1 --read-rounds 60  # mostly reads
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.convert import DATA, N_FEATURES, generate, run_measured  # noqa: E402

CONVERT = ("import sys; import rankcli.formats.parquet as p; p.WRITE_OPTIONS['write_page_checksum'] = sys.argv[1] == "
           "'1'; from rankcli.cli import main; sys.exit(main(sys.argv[2:]))")


def convert_rounds(text: Path, out: Path, rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"with": [], "without": []}
    for r in range(rounds):
        for label, flag in (("with", "1"), ("without", "0")) if r % 2 == 0 else (("without", "0"), ("with", "1")):
            target = out.with_name(f"{label}.parquet")
            s, _, rc = run_measured([sys.executable, "-c", CONVERT, flag, "convert", str(text), "-o", str(target),
                                     "--overwrite"])
            assert rc == 0, "convert failed"
            times[label].append(s)
            print(f"round {r + 1}: convert {label:7s} checksums {s:6.2f} s", flush=True)
    return times


def read_once(path: Path, verify: bool) -> tuple[float, float]:
    from rankcli.formats import parquet
    from rankcli.formats.feature_rows import ParquetFeatureRows

    parquet.VERIFY_PAGE_CHECKSUMS = verify
    t = time.perf_counter()
    ds = parquet.read_dataset(path)
    whole = time.perf_counter() - t
    t = time.perf_counter()
    rows = ParquetFeatureRows(path, ds.feature_names)
    for end in rows.row_group_ends():
        rows.block(int(end) - 1, int(end))
    by_group = time.perf_counter() - t
    del ds, rows
    return whole, by_group


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--read-rounds", type=int, default=30, help="reads are short: more rounds of them")
    args = ap.parse_args()
    DATA.mkdir(exist_ok=True)
    text = DATA / f"web30k-like-{args.rows}.txt"
    if not text.exists():
        generate(args.rows, text)
    print(f"input: {text.name}: {args.rows:,} rows, {N_FEATURES} features, {text.stat().st_size / 1e6:.1f} MB")
    with tempfile.TemporaryDirectory(dir=DATA) as tmp:
        out = Path(tmp) / "x.parquet"
        conv = convert_rounds(text, out, max(args.rounds, 1))  # writes the two files the reads take
        with_file, without_file = out.with_name("with.parquet"), out.with_name("without.parquet")
        sizes = with_file.stat().st_size, without_file.stat().st_size
        reads: dict[str, list[tuple[float, float]]] = {"checksums, verified": [], "checksums, not verified": [],
                                                       "no checksums": []}
        for _ in range(args.read_rounds):
            for label, path, verify in (("checksums, verified", with_file, True),
                                        ("checksums, not verified", with_file, False),
                                        ("no checksums", without_file, True)):
                reads[label].append(read_once(path, verify))
    w, wo = statistics.median(conv["with"]), statistics.median(conv["without"])
    print(f"convert: with checksums {w:.2f} s, without {wo:.2f} s: ratio {w / wo:.3f}; "
          f"file {sizes[0] / 1e6:.2f} MB vs {sizes[1] / 1e6:.2f} MB (+{sizes[0] - sizes[1]} bytes)")
    base = [statistics.median(x[i] for x in reads["no checksums"]) for i in (0, 1)]
    for label, values in reads.items():
        med = [statistics.median(x[i] for x in values) for i in (0, 1)]
        print(f"read {label:24s} read_dataset {med[0]:.3f} s ({med[0] / base[0]:.3f}x)   "
              f"by row group {med[1]:.3f} s ({med[1] / base[1]:.3f}x)")


if __name__ == "__main__":
    main()
