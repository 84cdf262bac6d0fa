from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

# ranx (tests/fuse/test_ranx.py, the fusion rankcli matches) runs its numba functions as Python: on a fresh install
# numba compiles every method from nothing, minutes of a CI run for a test of small runs; the functions
# and their results are the same, and bench/fuse.py times ranx compiled.
os.environ.setdefault("NUMBA_DISABLE_JIT", "1")

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "sample_data"
SHARED = REPO.parent / "shared"


def pytest_configure(config):
    """Compile the package's bytecode once, before the workers start. The suite starts ``rankcli`` as a process a
    thousand times or so; with PYTHONDONTWRITEBYTECODE set (as on CI's machines) and an editable install, which pip
    does not compile, each of those processes compiled every module it imported from source: 0.1 s of each start-up
    (``rankcli --version`` took 0.25 s rather than 0.12 s). The interpreter still reads bytecode it did not write."""
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: the controller compiled before starting it
        return
    import compileall

    compileall.compile_dir(REPO / "rankcli", quiet=1, workers=1)


def run_cli(*args: str, input: bytes | None = None, cwd: Path | None = None, env: dict | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``python -m rankcli`` in a subprocess, as a user's shell would, capturing bytes."""
    full_env = {**os.environ, **(env or {})}
    full_env.setdefault("PYTHONPATH", str(REPO))
    return subprocess.run([sys.executable, "-m", "rankcli", *map(str, args)], input=input, capture_output=True,
                          cwd=cwd, env=full_env, timeout=timeout)


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(scope="session")
def sample_dir() -> Path:
    return SAMPLE


def run_main(capsys, *args) -> tuple[int, str, str]:
    """The CLI in this process (the same error boundary as a subprocess, without its start-up cost): the exit status,
    stdout and stderr. An uncaught exception reaching the user as a traceback fails the test here."""
    from rankcli.cli import main

    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return status, out, err


@pytest.fixture
def run(capsys):
    """``run("eval", path, "--json") -> (status, stdout, stderr)``, in-process; see :func:`run_main`."""
    return lambda *args: run_main(capsys, *args)


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded generator: every test that draws data is reproducible."""
    return np.random.default_rng(20210419)  # WWW 2021, the paper's conference


def make_ranking(rng: np.random.Generator, n_queries: int = 60, max_size: int = 30, *, min_size: int = 1,
                 grades: int = 5, tie_levels: int | None = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A random batch of queries, ``(labels, scores, offsets)`` in the library's argument order.

    Query sizes are uniform in ``[min_size, max_size]``, labels integer grades ``0..grades-1``, scores integers
    ``0..tie_levels-1`` (tie-heavy on purpose: tie handling is where ranking code goes wrong) or, with
    ``tie_levels=None``, standard normal (no ties)."""
    sizes = rng.integers(min_size, max_size + 1, n_queries)
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    n = int(offsets[-1])
    labels = rng.integers(0, grades, n).astype(np.float64)
    scores = rng.normal(0, 1, n) if tie_levels is None else rng.integers(0, tie_levels, n).astype(np.float64)
    return labels, scores, offsets


@pytest.fixture(name="make_ranking")
def make_ranking_fixture(rng):
    """``make_ranking(n_queries, max_size, ...)`` drawing from the test's seeded ``rng``; see :func:`make_ranking`."""
    return lambda *args, **kwargs: make_ranking(rng, *args, **kwargs)


#: Tests that take tens of seconds each (ranx's numba compilation on a fresh install; the docs' shell examples, which
#: run whole pipelines): run first, so that pytest-xdist's workers do not end the suite waiting on one of them.
LONG_TESTS = ("tests/fuse/test_ranx.py::", "tests/test_docs.py::test_shell_examples_run")


def pytest_collection_modifyitems(config, items):
    """Put :data:`LONG_TESTS` at the front of the run, in that order (a stable sort: every other test keeps its
    order)."""
    def rank(item) -> int:
        return next((i for i, prefix in enumerate(LONG_TESTS) if item.nodeid.startswith(prefix)), len(LONG_TESTS))

    items.sort(key=rank)
