"""rankcli.startup: the heavy imports of short CLI processes, in a fresh interpreter each (sys.modules is global)."""

from __future__ import annotations

import os
import subprocess
import sys


def _run(code: str, **env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**clean, **env},
                         check=True)
    return out.stdout.split()


def test_numpy_loaded_with_single_threaded_blas_and_environment_restored():
    """numpy is loaded with OPENBLAS_NUM_THREADS=1 and the variable is removed again afterwards."""
    code = ("import os, sys; from rankcli.startup import import_numpy_single_threaded_blas as f; "
            "f(); print('numpy' in sys.modules, 'OPENBLAS_NUM_THREADS' in os.environ)")
    assert _run(code) == ["True", "False"]


def test_numpy_blas_threads_chosen_by_the_user_are_kept():
    code = ("import os, sys; from rankcli.startup import import_numpy_single_threaded_blas as f; "
            "f(); print('numpy' in sys.modules, os.environ['OMP_NUM_THREADS'], 'OPENBLAS_NUM_THREADS' in os.environ)")
    assert _run(code, OMP_NUM_THREADS="2") == ["False", "2", "False"]  # left to the caller's plain import


def test_lightgbm_lean_without_sklearn_and_pandas_and_sys_modules_restored():
    code = ("import sys; from rankcli.startup import import_lightgbm_lean as f; lgb = f(); "
            "print(lgb.__name__, 'sklearn' in sys.modules, 'pandas' in sys.modules)")
    assert _run(code) == ["lightgbm", "False", "False"]


def test_lightgbm_lean_leaves_a_process_that_loaded_sklearn_alone():
    """A library user's process that has scikit-learn keeps LightGBM's full behaviour (its estimators)."""
    code = ("import sys\ntry:\n import sklearn\nexcept ImportError:\n print('skip'); raise SystemExit\n"
            "from rankcli.startup import import_lightgbm_lean as f\nlgb = f()\nprint(hasattr(lgb, 'LGBMRanker'))")
    assert _run(code)[0] in ("True", "skip")
