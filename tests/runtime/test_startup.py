"""rankcli.runtime.startup: the heavy imports of short CLI processes, in a fresh interpreter each (sys.modules is
global)."""

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
    code = ("import os, sys; from rankcli.runtime.startup import import_numpy_single_threaded_blas as f; "
            "f(); print('numpy' in sys.modules, 'OPENBLAS_NUM_THREADS' in os.environ)")
    assert _run(code) == ["True", "False"]


def test_numpy_blas_threads_chosen_by_the_user_are_kept():
    code = ("import os, sys; from rankcli.runtime.startup import import_numpy_single_threaded_blas as f; "
            "f(); print('numpy' in sys.modules, os.environ['OMP_NUM_THREADS'], 'OPENBLAS_NUM_THREADS' in os.environ)")
    assert _run(code, OMP_NUM_THREADS="2") == ["False", "2", "False"]  # left to the caller's plain import


def test_lightgbm_lean_without_sklearn_and_pandas_and_sys_modules_restored():
    code = ("import sys; from rankcli.runtime.startup import import_lightgbm_lean as f; lgb = f(); "
            "print(lgb.__name__, 'sklearn' in sys.modules, 'pandas' in sys.modules)")
    assert _run(code) == ["lightgbm", "False", "False"]


def test_lightgbm_lean_leaves_a_process_that_loaded_sklearn_alone():
    """A library user's process that has scikit-learn keeps LightGBM's full behaviour (its estimators)."""
    code = ("import sys\ntry:\n import sklearn\nexcept ImportError:\n print('skip'); raise SystemExit\n"
            "from rankcli.runtime.startup import import_lightgbm_lean as f\n"
            "lgb = f()\nprint(hasattr(lgb, 'LGBMRanker'))")
    assert _run(code)[0] in ("True", "skip")


def test_the_cli_makes_openmp_threads_wait_passively_unless_the_user_chose():
    """LightGBM's OpenMP threads spin at every barrier by default, which on a busy node takes the core from the thread
    they wait for; the CLI sets the passive policy before libgomp loads, and a user's own choice stands."""
    code = ("import os; from rankcli.cli import main; main(['--version']); "
            "print(os.environ.get('OMP_WAIT_POLICY'), os.environ.get('GOMP_SPINCOUNT'))")
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    run = [sys.executable, "-c", code]
    assert subprocess.run(run, capture_output=True, text=True, env=clean).stdout.split()[-2:] == ["passive", "None"]
    for name, value in (("OMP_WAIT_POLICY", "active"), ("GOMP_SPINCOUNT", "1000")):
        out = subprocess.run(run, capture_output=True, text=True, env={**clean, name: value}).stdout.split()
        assert out[-2:] == (["active", "None"] if name == "OMP_WAIT_POLICY" else ["None", "1000"])


def test_lightgbm_in_a_cli_process_reads_the_passive_policy(tmp_path):
    """The policy reaches libgomp itself: OMP_DISPLAY_ENV makes it print the settings it read when it loaded (its
    wait policy line says PASSIVE either way; the spin count is 300000 by default and 0 under the passive policy)."""
    from tests.conftest import SAMPLE

    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    data = tmp_path / "d.parquet"
    cli = [sys.executable, "-m", "rankcli"]
    subprocess.run([*cli, "convert", str(SAMPLE / "letor" / "vali.txt"), "-o", str(data)], check=True, env=clean,
                   capture_output=True)
    out = subprocess.run([*cli, "train", str(data), "-o", str(tmp_path / "m"), "--trees", "1"], text=True,
                         capture_output=True, env={**clean, "OMP_DISPLAY_ENV": "VERBOSE"})
    assert out.returncode == 0, out.stderr
    assert "GOMP_SPINCOUNT = '0'" in out.stderr and "GOMP_SPINCOUNT = '300000'" not in out.stderr
