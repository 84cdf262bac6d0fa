"""rankcli.runtime.memory: freed heap memory scattered among live blocks goes back to the operating system."""

from __future__ import annotations

import ctypes
import platform
import sys

import numpy as np
import pytest

from rankcli.runtime import memory


def _resident_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
                    reason="malloc_trim is glibc's")
def test_freed_small_blocks_among_live_ones_are_returned():
    """What binning leaves behind: many small arrays (below glibc's mmap threshold) freed while every 16th lives on,
    so glibc keeps the free chunks until malloc_trim hands their pages back."""
    arrays = [np.ones(1000) for _ in range(4000)]  # 8 kB each, 32 MB in all
    kept = arrays[::16]
    del arrays
    before = _resident_bytes()
    assert memory.release_free_memory()
    assert before - _resident_bytes() > 16 * 2**20
    assert len(kept) == 250


def test_a_c_library_without_malloc_trim_is_skipped(monkeypatch):
    class NoTrim:
        def __init__(self, name):
            pass

    monkeypatch.setattr(ctypes, "CDLL", NoTrim)
    assert memory.release_free_memory() is False
