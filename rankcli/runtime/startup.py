"""Start-up tricks of the short CLI processes: how a heavy dependency is imported, with ``sys.modules`` and
environment variables, so that a command does not pay for what it never uses.

Both functions act only in a process that has not loaded the package yet, and undo what they change to
``sys.modules`` and ``os.environ`` once the import is done, so that a library user's process (which may have loaded
the package already, or want its full behaviour) and child processes are untouched. The commands call them before
their first import of the package; nothing else in rankcli edits ``sys.modules`` or ``os.environ`` (but the one
lasting setting below).

- :func:`import_lightgbm_lean`: LightGBM without its scikit-learn and pandas integrations (~1.5-2 s of CPU less for
  ``train``, ``predict``, ``eval --model``, ``simulate-clicks --ranker MODEL``).
- :func:`import_numpy_single_threaded_blas`: numpy with OpenBLAS on one thread for commands that do no linear
  algebra worth threads (``simulate-clicks``, ``propensity``): OpenBLAS's idle worker threads spin-wait at start-up,
  taking CPU from the command's own threads on a small machine.

One setting is the process's own and stays: :func:`prefer_passive_openmp_waits`, which the CLI's entry point applies
before anything loads OpenMP, so that LightGBM's threads sleep instead of spinning when they wait for each other.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType

_LEAN_HIDDEN = ("sklearn", "pandas")
_BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
#: The variables by which a user chooses how OpenMP threads wait (GNU libgomp reads both when it loads).
_OPENMP_WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def import_lightgbm_lean() -> ModuleType:
    """Import LightGBM without its optional scikit-learn and pandas integrations; returns the ``lightgbm`` module.

    ``import lightgbm`` imports scikit-learn and pandas when they are installed, which costs ~2 s of CPU at start-up
    and which rankcli never uses (it passes numpy arrays to the core API). The two packages are hidden (a ``None``
    entry in ``sys.modules`` makes ``import name`` raise ImportError, which LightGBM handles as "not installed") only
    while LightGBM is imported. Nothing is done when LightGBM or scikit-learn is already loaded (a library user's
    process keeps LightGBM's full behaviour). In a lean process LightGBM's scikit-learn estimators (``LGBMRanker``,
    ``lightgbm.dask``) are unavailable, which rankcli does not need.
    """
    if "lightgbm" in sys.modules or "sklearn" in sys.modules:
        import lightgbm

        return lightgbm
    hidden = [name for name in _LEAN_HIDDEN if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        import lightgbm
    finally:
        for name in hidden:
            sys.modules.pop(name, None)
    return lightgbm


def import_numpy_single_threaded_blas() -> None:
    """Import numpy with its OpenBLAS on one thread, unless numpy is already loaded or the user set the thread count.

    ``OPENBLAS_NUM_THREADS=1`` is set only for the import (OpenBLAS reads it when it loads) and removed again, so that
    child processes see the user's environment. A user's ``OPENBLAS_NUM_THREADS`` or ``OMP_NUM_THREADS`` wins.
    """
    if "numpy" in sys.modules or any(name in os.environ for name in _BLAS_VARIABLES):
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]


def prefer_passive_openmp_waits() -> None:
    """Set ``OMP_WAIT_POLICY=passive`` for this process and its children, unless the user chose a wait policy.

    LightGBM's OpenMP threads meet at a barrier after every histogram and split; by default libgomp lets a waiting
    thread spin for up to 300,000 iterations before it sleeps. On a node shared with other jobs the thread it waits
    for may not be running, so the spinning takes the core from it: training at the default thread count was up to
    16x slower than ``--threads 1`` on this project's 2-core machine with other jobs running, and as fast with the
    passive policy (BENCHMARKS.md, "train on a busy node"). libgomp reads the variable once, when it is loaded (with
    LightGBM), so this must run before that; children (``--jobs`` workers) inherit it, which is what they need too.
    A user's ``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT`` (their own tuning) is left as it is, and a library user's
    process is untouched: only ``rankcli.cli.main`` calls this.
    """
    if not any(name in os.environ for name in _OPENMP_WAIT_VARIABLES):
        os.environ["OMP_WAIT_POLICY"] = "passive"
