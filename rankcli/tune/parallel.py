"""Several processes on one tune: ``--jobs N`` (N processes on this machine) and ``--dask`` (one task per worker thread
of a Dask cluster). Every process runs :func:`rankcli.tune.runner.tune_losses` on the same output directory; the
studies' claim locks keep each loss's budget exact (:mod:`rankcli.tune.study`), so they need no other coordination.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from rankcli.errors import UsageError


def _ignore_interrupt() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops the helpers


def _merge(counts: list[dict[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in counts:
        for loss, n in c.items():
            out[loss] = out.get(loss, 0) + n
    return out


def run_in_processes(train_path: str, valid_path: str, out: str, config: Any, jobs: int, on_trial) -> dict[str, int]:
    """Run the tune in this process and ``jobs - 1`` helper processes; the trials each trained, per loss."""
    from rankcli.tune.worker import tune_losses

    ctx = multiprocessing.get_context("spawn")  # no fork after pyarrow/OpenMP threads have started
    pool = ProcessPoolExecutor(max_workers=jobs - 1, mp_context=ctx, initializer=_ignore_interrupt)
    try:
        helpers = [pool.submit(tune_losses, train_path, valid_path, out, config) for _ in range(jobs - 1)]
        mine = tune_losses(train_path, valid_path, out, config, on_trial)
        counts = [mine] + [f.result() for f in helpers]
    except BaseException:
        # Ctrl-C or a failed trial: stop the helpers now (their finished trials are in the journals; a trial they
        # were training is run again by the next run), then re-raise.
        for proc in list((getattr(pool, "_processes", None) or {}).values()):
            proc.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return _merge(counts)


def run_on_dask(target: str, train_path: str, valid_path: str, out: str, config: Any, jobs: int) -> dict[str, int]:
    """Run the tune as one task per worker thread of the Dask cluster ``target`` (``jobs`` is ignored); every worker
    must see the data and the output directory (a shared filesystem), where the studies live."""
    from rankcli.distributed import cluster
    from rankcli.tune.worker import tune_losses

    cluster.require_dask()
    paths = [os.path.abspath(p) for p in (train_path, valid_path, out)]
    with cluster.client_for(target) as client:
        cluster.require_workers(client)
        seen = cluster.visible_everywhere(client, paths)
        hidden = [p for p in paths if not seen[p]]
        if hidden:
            raise UsageError(f"--dask: {hidden[0]} is not visible to every worker; the data and the output directory "
                             "(where the studies are shared) must be on a filesystem every worker sees")
        threads = max(1, sum(client.nthreads().values()))
        futures = [client.submit(tune_losses, *paths, config, pure=False, key=f"rankcli-tune-{i}-{os.urandom(4).hex()}")
                   for i in range(threads)]
        try:
            return _merge(client.gather(futures))
        except BaseException:
            client.cancel(futures, force=True)
            raise
