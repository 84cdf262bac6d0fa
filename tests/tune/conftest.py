"""The sample LETOR data every tune test trains on, written once per module."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.letor_sample import write_letor


@pytest.fixture(scope="module")
def letor(tmp_path_factory) -> dict[str, Path]:
    return write_letor(tmp_path_factory.mktemp("letor"))
