from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "sample_data"
SHARED = REPO.parent / "shared"


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
