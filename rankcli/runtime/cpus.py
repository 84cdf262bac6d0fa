"""How many CPUs this process may use: the default thread count of every command that runs LightGBM.

``os.cpu_count()`` is every core of the node. A batch job rarely has them all: Slurm and ``taskset`` restrict the CPU
affinity, a container (Docker, Kubernetes) sets a CPU quota through its cgroup, and job scripts set
``OMP_NUM_THREADS``. LightGBM's OpenMP threads started for every core then fight over the few the job was given
(measured on a busy 2-core machine: 12.6 s with the default against 1.3 s with one thread). :func:`available_cpus`
takes the smallest of

- the CPUs in this process's affinity mask (``os.sched_getaffinity``; ``os.cpu_count()`` where that does not exist),
- the cgroup CPU quota, rounded down, at least 1: cgroup v2 ``cpu.max`` (``"<quota> <period>"`` or ``"max"``), or
  cgroup v1 ``cpu.cfs_quota_us / cpu.cfs_period_us`` (``-1``: none), of this process's cgroup and of every ancestor
  up to the hierarchy's mount point (a limit anywhere above applies too),
- ``OMP_NUM_THREADS`` when it is a positive integer (its first entry, for a nested list such as ``4,2``).

Every source that cannot be read (another OS, no cgroup file system, a malformed value) is skipped, never an error.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from rankcli.errors import UsageError


def affinity_cpus() -> int:
    """CPUs in this process's affinity mask (``os.cpu_count()`` where the OS has no affinity call)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def _mounts(proc: Path) -> list[tuple[str, str, str, set[str]]]:
    """``(root within the hierarchy, mount point, fstype, super options)`` of each cgroup mount."""
    out = []
    for line in (_read(proc / "self" / "mountinfo") or "").splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        out.append((fields[3], fields[4], tail[0], set(tail[2].split(","))))
    return out


def _cgroup_dirs(mount_root: str, mount_point: str, path: str) -> list[Path]:
    """The process's cgroup directory under a mount point and every ancestor up to the mount point."""
    base = Path(mount_point)
    rel = path
    if mount_root != "/" and (path == mount_root or path.startswith(mount_root.rstrip("/") + "/")):
        rel = path[len(mount_root.rstrip("/")):]
    parts = [p for p in rel.split("/") if p and p not in (".", "..")]
    return [base.joinpath(*parts[:i]) for i in range(len(parts), -1, -1)]


def _v2_limit(directory: Path) -> float | None:
    text = _read(directory / "cpu.max")
    if text is None:
        return None
    fields = text.split()
    if len(fields) < 1 or fields[0] == "max":
        return None
    try:
        quota = float(fields[0])
        period = float(fields[1]) if len(fields) > 1 else 100000.0
    except ValueError:
        return None
    return _ratio(quota, period)


def _ratio(quota: float, period: float) -> float | None:
    """``quota / period`` CPUs when both are positive and the ratio finite ('inf' parses as a float, and floor(inf)
    would raise OverflowError), else ``None``."""
    limit = quota / period if quota > 0 and period > 0 else math.nan
    return limit if math.isfinite(limit) else None


def _v1_limit(directory: Path) -> float | None:
    quota, period = _read(directory / "cpu.cfs_quota_us"), _read(directory / "cpu.cfs_period_us")
    try:
        q, p = float(quota or ""), float(period or "")
    except ValueError:
        return None
    return _ratio(q, p)


def cgroup_cpu_limit(proc: str | Path = "/proc") -> float | None:
    """The smallest CPU quota (in CPUs, possibly fractional) on this process's cgroups, or ``None`` for none; ``proc``
    is the proc file system to read them from."""
    proc = Path(proc)
    membership = _read(proc / "self" / "cgroup")
    if membership is None:
        return None
    v2_path, v1_paths = None, {}
    for line in membership.splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":
            v2_path = path
        else:
            for c in controllers.split(","):
                v1_paths[c] = path
    limits = []
    for root, point, fstype, options in _mounts(proc):
        if fstype == "cgroup2" and v2_path is not None:
            limits += [_v2_limit(d) for d in _cgroup_dirs(root, point, v2_path)]
        elif fstype == "cgroup" and "cpu" in options and "cpu" in v1_paths:
            limits += [_v1_limit(d) for d in _cgroup_dirs(root, point, v1_paths["cpu"])]
    found = [x for x in limits if x is not None]
    return min(found) if found else None


def omp_num_threads(environ: dict | None = None) -> int | None:
    """``OMP_NUM_THREADS`` (its first entry) of ``environ`` (default: ``os.environ``) when it is a positive integer,
    else ``None``."""
    value = (os.environ if environ is None else environ).get("OMP_NUM_THREADS", "")
    first = value.split(",")[0].strip()
    # isdecimal, not isdigit: '²' is a digit that int() refuses
    return int(first) if first.isdecimal() and int(first) > 0 else None


def available_cpus(*, environ: dict | None = None, proc: str | Path = "/proc") -> int:
    """The number of CPUs this process may use (see the module docstring); at least 1.

    ``environ``: the environment to read ``OMP_NUM_THREADS`` from (default: ``os.environ``); ``proc``: the proc file
    system to read the cgroups from (tests pass a fake one)."""
    n = affinity_cpus()
    quota = cgroup_cpu_limit(proc)
    if quota is not None:
        n = min(n, max(1, math.floor(quota)))
    omp = omp_num_threads(environ)
    if omp is not None:
        n = min(n, omp)
    return max(1, n)


def max_threads() -> int:
    """The largest ``--threads`` accepted: 1024, or four per core on a node with more than 256 cores."""
    return max(1024, 4 * (os.cpu_count() or 1))


def check_threads(threads: int | None) -> int | None:
    """``threads`` (``--threads``) when it is None or 1 .. :func:`max_threads`, else :class:`UsageError`.

    LightGBM's thread count is a 32-bit integer (3,000,000,000 would wrap to "every core" without a word) and OpenMP
    allocates per thread up front (``--threads 99999999999999999999`` would kill the process in libgomp, "Out of
    memory", with no ``Error:`` line); threads beyond the CPUs only slow LightGBM down.
    """
    if threads is None:
        return None
    if threads < 1:
        raise UsageError(f"--threads must be at least 1, got {threads}")
    if threads > max_threads():
        raise UsageError(f"--threads must be at most {max_threads()} (threads beyond the CPUs only slow LightGBM "
                         f"down; this process may use {available_cpus()}), got {threads}")
    return threads


#: Rows per LightGBM thread in the default thread count for training: a training set of fewer than twice this many
#: rows trains on one thread. LightGBM's advice ("do not set it too large if your dataset is small, for instance, do
#: not use 64 threads for a dataset with 10,000 rows"): its threads meet at a barrier after every histogram and split,
#: so with little data per thread they wait more than they work, and on a busy machine a thread that is not running
#: holds the others up (bench/threads.py, BENCHMARKS.md "train: default threads").
ROWS_PER_THREAD = 20_000


def threads_for_rows(rows: int) -> int:
    """The most threads ``rows`` training rows are given by default: one per :data:`ROWS_PER_THREAD`, at least 1."""
    return max(1, int(rows) // ROWS_PER_THREAD)


def default_threads(threads: int | None = None, rows: int | None = None) -> int:
    """``threads`` when given (``--threads``, checked by :func:`check_threads`), else :func:`available_cpus`, and with
    ``rows`` (training) at most :func:`threads_for_rows`: the one rule for every command. It depends only on the CPUs
    this process may use and on the data, so the same job on the same machine gets the same count (a model is
    byte-identical only for the same count; ``rankcli.json`` records it)."""
    if threads:
        return int(check_threads(threads))
    cpus = available_cpus()
    return cpus if rows is None else min(cpus, threads_for_rows(rows))


__all__ = ["ROWS_PER_THREAD", "affinity_cpus", "available_cpus", "cgroup_cpu_limit", "check_threads",
           "default_threads", "max_threads", "omp_num_threads", "threads_for_rows"]
