"""Benchmark: `rankcli click-model fit` against PyClick, model by model, and DBN on a million sessions.

Targets: per session, at least 100x PyClick's fitting speed for every EM model (PBM, UBM, CCM, DBN) and 10x for the
closed-form ones; the same perplexity and conditional perplexity as PyClick to 1e-9 from the same initial values and
iteration count; 1,000,000 sessions of 10 results fitted by DBN (50 iterations) in under 60 s at under 2 GB peak RSS.

Workload: sessions of 10 results, each a random order of 10 of a query's 20 documents (queries = sessions / 100),
clicked by a DBN (attractiveness 0.05-0.9, satisfaction 0.1-0.8, continuation 0.85): tests/click_model_data.py.

- PyClick (../shared/reference/pyclick, run as it is) fits `--pyclick-sessions` sessions (2,000; `--pyclick-slow`,
  300, for DBN and CCM, whose updates are quadratic in the list length), 50 EM iterations; its perplexity,
  conditional perplexity and log-likelihood on the same sessions are computed by its Evaluation.py.
- rankcli fits the same sessions (e_step "pyclick" for DBN and CCM: PyClick's updates) and compares the scores, then
  fits `--scale` (10) times as many sessions for the time per session (the median of `--rounds` fits, in process).
- The million: a table of 1,000,000 sessions (Parquet) fitted by `python -m rankcli click-model fit LOG -o DIR --model
  dbn` in a subprocess, end to end (reading, coding, 50 iterations, writing), and by the library alone; the peak RSS
  is the subprocess's (getrusage of children).

Run: flock /tmp/rankcli-bench.lock .venv/bin/python bench/click_models.py [--models pbm,dbn] [--skip-million]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rankcli.core import click_models as cm  # noqa: E402
from rankcli.core.click_models.evaluation import evaluate  # noqa: E402
from tests.click_model_data import simulated_log, true_parameters  # noqa: E402

EM_MODELS = ("pbm", "ubm", "ccm", "dbn")
SLOW = ("ccm", "dbn")
PYCLICK_NAMES = {"gctr": ("CTR", "GCTR"), "rctr": ("CTR", "RCTR"), "dctr": ("CTR", "DCTR"), "pbm": ("PBM", "PBM"),
                 "cascade": ("CM", "CM"), "ubm": ("UBM", "UBM"), "dcm": ("DCM", "DCM"), "ccm": ("CCM", "CCM"),
                 "dbn": ("DBN", "DBN"), "sdbn": ("SDBN", "SDBN")}


def log_of(n_sessions: int, seed: int) -> cm.Sessions:
    queries = max(1, n_sessions // 100)
    params = true_parameters("dbn", queries * 20, 10, np.random.default_rng(seed))
    return simulated_log("dbn", params, n_sessions, np.random.default_rng(seed + 1), queries=queries,
                         docs_per_query=20, length=10)


def pyclick_sessions(sessions: cm.Sessions):
    from pyclick.search_session.SearchResult import SearchResult
    from pyclick.search_session.SearchSession import SearchSession

    out = []
    for s in range(sessions.n_sessions):
        a, b = sessions.offsets[s], sessions.offsets[s + 1]
        session = SearchSession(str(int(sessions.item[a]) // 20))
        session.web_results = [SearchResult(str(int(i)), int(c)) for i, c in zip(sessions.item[a:b],
                                                                                  sessions.click[a:b])]
        out.append(session)
    return out


def run_pyclick(name: str, sessions, iterations: int):
    import importlib

    from pyclick.click_models import Evaluation
    from pyclick.click_models.Inference import EMInference

    module, cls = PYCLICK_NAMES[name]
    model = getattr(importlib.import_module(f"pyclick.click_models.{module}"), cls)()
    if isinstance(model._inference, EMInference):
        model._inference = EMInference(iterations)
    t = time.perf_counter()
    model.train(sessions)
    seconds = time.perf_counter() - t
    perplexity = Evaluation.Perplexity().evaluate(model, sessions)[0]
    cond = Evaluation.PerplexityCond().evaluate(model, sessions)[0]
    return seconds, perplexity, cond


def compare_model(name: str, args) -> dict:
    n = args.pyclick_slow if name in SLOW else args.pyclick_sessions
    small = log_of(n, args.seed)
    theirs = run_pyclick(name, pyclick_sessions(small), args.iterations) if not args.skip_pyclick else None
    model = cm.get_model(name)
    fitted = cm.fit(model, small, iterations=args.iterations, e_step="pyclick")
    ev = evaluate(model, small, fitted.values, cm.Layout(small.n_items, small.max_rank))
    big = log_of(n * args.scale, args.seed + 7)
    times = []
    for _ in range(args.rounds):
        fresh = cm.Sessions(big.offsets, big.item, big.click, big.n_items)  # its blocks are built inside the timing
        t = time.perf_counter()
        cm.fit(model, fresh, iterations=args.iterations, threads=args.threads)
        times.append(time.perf_counter() - t)
    ours = statistics.median(times)
    row = {"model": name, "pyclick_sessions": n, "rankcli_sessions": big.n_sessions, "rankcli_s": ours}
    if theirs is not None:
        row.update(pyclick_s=theirs[0], ratio=(theirs[0] / n) / (ours / big.n_sessions),
                   d_perplexity=abs(ev.perplexity - theirs[1]),
                   d_conditional=abs(ev.conditional_perplexity - theirs[2]) if name != "cascade" else None)
    return row


def million(args) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sessions = log_of(args.million, args.seed + 3)
    t, c = time.perf_counter(), time.process_time()
    cm.fit(cm.DBN(), sessions, iterations=args.iterations, threads=args.threads)
    library, library_cpu = time.perf_counter() - t, time.process_time() - c
    with tempfile.TemporaryDirectory(prefix="rankcli-bench-click-models-") as tmp:
        path = Path(tmp) / "log.parquet"
        L = 10
        n = sessions.n_sessions
        table = pa.table({"session": np.repeat(np.arange(n), L), "query": np.repeat(sessions.item[::L] // 20, L),
                          "rank": np.tile(np.arange(1, L + 1), n), "document": sessions.item.astype(np.int64),
                          "click": sessions.click.astype(np.int8)})
        pq.write_table(table, path, row_group_size=1 << 20)
        del table, sessions
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "rankcli", "click-model", "fit", str(path), "-o",
                              str(Path(tmp) / "dbn"), "--model", "dbn", "--iterations", str(args.iterations)],
                             capture_output=True, text=True, cwd=REPO)
        command = time.perf_counter() - t
        if out.returncode != 0:
            raise SystemExit(out.stderr)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"sessions": args.million, "library_s": library, "library_cpu_s": library_cpu, "command_s": command,
            "command_cpu_s": usage.ru_utime + usage.ru_stime, "command_peak_rss_mb": usage.ru_maxrss / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(cm.MODELS))
    ap.add_argument("--pyclick-sessions", type=int, default=2000)
    ap.add_argument("--pyclick-slow", type=int, default=300)
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--iterations", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--million", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--skip-pyclick", action="store_true")
    ap.add_argument("--skip-million", action="store_true")
    ap.add_argument("--pyclick", default=str(REPO.parent / "shared" / "reference" / "pyclick"))
    args = ap.parse_args()
    if not args.skip_pyclick:
        folder = next((p / "shared" / "reference" / "pyclick" for p in REPO.parents
                       if (p / "shared" / "reference" / "pyclick").is_dir()), Path(args.pyclick))
        sys.path.insert(0, str(folder))
        warnings.simplefilter("ignore")
    print(f"load average at start: {os.getloadavg()}", flush=True)
    for name in [m for m in args.models.split(",") if m]:
        r = compare_model(name, args)
        kind = "EM " if name in EM_MODELS else "MLE"
        line = f"{name:8s} {kind} rankcli {r['rankcli_sessions']:>7} sessions {r['rankcli_s']:8.3f} s"
        if "pyclick_s" in r:
            line += (f" | PyClick {r['pyclick_sessions']:>5} sessions {r['pyclick_s']:8.2f} s | per session "
                     f"{r['ratio']:9.0f}x | |d perplexity| {r['d_perplexity']:.1e}"
                     + (f" |d cond.| {r['d_conditional']:.1e}" if r["d_conditional"] is not None else ""))
        print(line, flush=True)
    if not args.skip_million:
        m = million(args)
        print(f"DBN, {m['sessions']:,} sessions x 10, {args.iterations} iterations: library {m['library_s']:.1f} s "
              f"({m['library_cpu_s']:.1f} CPU s); command end to end {m['command_s']:.1f} s "
              f"({m['command_cpu_s']:.1f} CPU s), peak RSS {m['command_peak_rss_mb']:.0f} MB", flush=True)
    print(f"load average at end: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
