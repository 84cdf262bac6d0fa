"""The peak resident memory of a rankcli process, as the process itself saw it.

``wait4``'s ``ru_maxrss`` (and ``RUSAGE_CHILDREN``) also count the memory of the pytest worker that forks the child,
which the child shares between fork and exec: after earlier tests have made a worker large, every child looks as
large as the worker, so a bound on the child passes or fails by what ran before it. ``VmHWM`` in
``/proc/self/status`` is the high-water mark of the process's own address space since exec; the child reads it as
its interpreter exits (``atexit`` runs on ``sys.exit``, which is how the CLI ends) and writes it to a file. Polling
the child's status from outside would miss the growth of its last moments.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_CHILD = """\
import atexit, runpy, sys
def _report(path=sys.argv.pop(1)):
    with open("/proc/self/status") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(path, "w") as out:
        out.write(peak)
atexit.register(_report)
sys.argv[0] = "rankcli"
runpy.run_module("rankcli", run_name="__main__", alter_sys=True)
"""


def popen_rankcli(args, report: Path, **popen) -> subprocess.Popen:
    """Start ``python -m rankcli *args`` so that it writes its peak resident memory to ``report`` as it exits."""
    return subprocess.Popen([sys.executable, "-c", _CHILD, str(report), *map(str, args)], **popen)


def peak_mib(report: Path) -> float:
    """The peak (MiB) that a process started by :func:`popen_rankcli` wrote to ``report``."""
    return int(Path(report).read_text()) / 1024
