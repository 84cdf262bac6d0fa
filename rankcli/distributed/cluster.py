"""The Dask cluster behind ``--dask``: parsing its value, connecting (or starting a LocalCluster), waiting for workers,
and asking the workers what they see of the filesystem."""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rankcli.errors import OutputError, UsageError
from rankcli.runtime.cpus import available_cpus

if TYPE_CHECKING:  # pragma: no cover
    import distributed

#: How long ``--dask tcp://...`` waits for the scheduler before giving up (seconds).
CONNECT_TIMEOUT = 10.0
INSTALL_HINT = 'install the optional extra: pip install "rankcli[dask]"'

_ADDRESS = re.compile(r"^(?:(?P<scheme>[a-z][a-z0-9+]*)://)?(?P<host>\[[0-9a-fA-F:]+\]|[^:/\s]+)(?::(?P<port>\d+))?$")


def require_dask(training: bool = False) -> None:
    """Raise a :class:`UsageError` naming the extra to install when Dask, distributed or pandas is missing (and, for
    ``training``, scikit-learn, on which ``lightgbm.dask`` builds)."""
    # find_spec locates a package without importing it (scikit-learn alone takes ~1.7 s to import here).
    missing = [m for m in ("dask", "distributed", "pandas") + (("sklearn",) if training else ())
               if importlib.util.find_spec(m) is None]
    if missing:
        raise UsageError(f"--dask needs {', '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} not "
                         f"installed; {INSTALL_HINT}")


@dataclass(frozen=True)
class DaskTarget:
    """A parsed ``--dask`` value: ``local:N`` (a LocalCluster of N worker processes) or a scheduler address."""

    spec: str
    workers: int | None = None      # local:N
    address: str | None = None      # tcp://host:port

    @property
    def is_local(self) -> bool:
        """Whether this is ``local:N`` (a LocalCluster started here)."""
        return self.workers is not None


def parse_dask_target(spec: str) -> DaskTarget:
    """Parse ``--dask``: ``local`` / ``local:N`` or ``[scheme://]host[:port]`` (default scheme tcp, port 8786)."""
    text = spec.strip()
    if text == "local" or text.startswith("local:"):
        count = text[len("local:"):] if text != "local" else str(available_cpus())
        if not count.isdigit() or int(count) < 1:
            raise UsageError(f"--dask local:N needs a positive number of workers, got {spec!r}")
        return DaskTarget(spec=text, workers=int(count))
    if text.startswith("inproc://"):  # a scheduler in this process (tests, notebooks)
        return DaskTarget(spec=text, address=text)
    m = _ADDRESS.match(text)
    if not m:
        raise UsageError(f"--dask expects local:N or a scheduler address such as tcp://host:8786, got {spec!r}")
    scheme = m.group("scheme") or "tcp"
    if scheme not in ("tcp", "tls", "ucx", "ws", "wss"):
        raise UsageError(f"--dask: unknown protocol {scheme!r} in {spec!r}; use tcp://host:port or local:N")
    port = m.group("port") or "8786"
    return DaskTarget(spec=text, address=f"{scheme}://{m.group('host')}:{port}")


def configured_timeout(strict: bool = True) -> float:
    """Seconds to wait for the scheduler or a first worker: ``$RANKCLI_DASK_TIMEOUT``, else :data:`CONNECT_TIMEOUT`.

    A value that is not a number is a :class:`UsageError` when ``strict``, else the default."""
    try:
        return float(os.environ.get("RANKCLI_DASK_TIMEOUT", CONNECT_TIMEOUT))
    except ValueError:
        if not strict:
            return CONNECT_TIMEOUT
        raise UsageError(f"RANKCLI_DASK_TIMEOUT must be a number of seconds, got "
                         f"{os.environ['RANKCLI_DASK_TIMEOUT']!r}") from None


def _quiet_stdout() -> None:
    """Run on local worker processes, which share our stdout: it is reserved for results (``--json``), and LightGBM's
    network code prints ``[LightGBM] [Info]`` lines whatever its verbosity. Errors still reach us as exceptions."""
    sys.stdout.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)


def _quiet_local_workers(client: distributed.Client) -> None:
    """Silence the stdout of local workers now and after a restart (a worker plugin runs on every (re)started
    worker)."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class QuietStdout(WorkerPlugin):
        """Sends the worker's stdout to /dev/null when the worker starts."""

        name = "rankcli-quiet-stdout"

        def setup(self, worker: Any) -> None:
            """Called by the worker as it starts."""
            _quiet_stdout()

    if hasattr(client, "register_plugin"):
        client.register_plugin(QuietStdout())
    else:  # distributed < 2023.9
        client.register_worker_plugin(QuietStdout())


@contextmanager
def connect(spec: str | DaskTarget, *, timeout: float | None = None, threads_per_worker: int | None = None,
            memory_limit: str | float | None = "auto") -> Iterator[distributed.Client]:
    """A Dask client for ``--dask``, closed (with its LocalCluster, if any) on exit.

    ``local:N`` starts a :class:`distributed.LocalCluster` of N worker processes sharing this machine's cores
    (``threads_per_worker`` defaults to cores // N, at least 1). An address connects to a running scheduler, waiting at
    most ``timeout`` seconds (default: ``$RANKCLI_DASK_TIMEOUT``, else 10); an unreachable scheduler is an
    :class:`OutputError` (exit 4) naming the address.
    """
    require_dask()
    if timeout is None:
        timeout = configured_timeout()
    target = spec if isinstance(spec, DaskTarget) else parse_dask_target(spec)

    from distributed import Client, LocalCluster

    if target.is_local:
        threads = threads_per_worker or max(1, available_cpus() // target.workers)
        cluster = LocalCluster(n_workers=target.workers, threads_per_worker=threads, processes=True,
                               memory_limit=memory_limit, dashboard_address=None, silence_logs=logging.ERROR)
        try:
            client = Client(cluster, timeout=f"{max(timeout, 30):g}s")
            try:
                _quiet_local_workers(client)
                yield client
            finally:
                client.close()
        finally:
            cluster.close()
        return
    try:
        client = Client(target.address, timeout=f"{timeout:g}s")
    except (OSError, TimeoutError) as exc:
        raise OutputError(f"cannot reach the Dask scheduler at {target.address} ({exc}); start one with "
                          f"`dask scheduler` and `dask worker {target.address}`, or use --dask local:N") from None
    try:
        yield client
    finally:
        client.close()


def n_workers(client: distributed.Client) -> int:
    """The number of workers currently connected to the scheduler."""
    return len(client.nthreads())


def require_workers(client: distributed.Client, timeout: float | None = None) -> int:
    """The number of workers, after waiting up to ``timeout`` seconds for a first one (a scheduler without workers
    would otherwise hold every task forever): :class:`OutputError` if none comes."""
    if n_workers(client) == 0:
        if timeout is None:
            timeout = configured_timeout(strict=False)
        try:
            client.wait_for_workers(1, timeout=timeout)
        except (TimeoutError, OSError):
            raise OutputError(f"the Dask scheduler at {client.scheduler.address} has no workers (waited "
                              f"{timeout:g} s); start some with `dask worker {client.scheduler.address}`") from None
    return n_workers(client)


@contextmanager
def client_for(target: str | DaskTarget | distributed.Client) -> Iterator[distributed.Client]:
    """Use a client the caller already holds, or open one for a ``--dask`` value (closed on exit)."""
    if isinstance(target, (str, DaskTarget)):
        with connect(target) as client:
            yield client
    else:
        yield target


def visible_everywhere(client: distributed.Client, paths: list[str], kind: str = "exists") -> dict[str, bool]:
    """For each path, whether every worker sees it (``kind``: ``exists`` or ``isdir``)."""
    check = os.path.isdir if kind == "isdir" else os.path.exists
    seen = client.run(lambda ps: [check(p) for p in ps], paths)
    return {p: all(flags[i] for flags in seen.values()) for i, p in enumerate(paths)}
