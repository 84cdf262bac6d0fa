"""FileLock: lock files that a finished run removes, without two processes ever holding "the" lock at once."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from rankcli.errors import OutputError
from rankcli.formats.atomic import FileLock
from rankcli.formats.experiment_store import LOCKS_DIR, STORE_LOCK, remove_locks


def test_a_waiter_on_a_removed_lock_file_locks_the_file_now_at_the_path(tmp_path):
    """Removed while held and waited for: the waiter, once let in, sees that its file is gone and locks a new one,
    so a third process cannot take a fresh file beside it."""
    path = tmp_path / "x.lock"
    first = FileLock(path)
    assert first.acquire()
    second, got = FileLock(path), []
    waiter = threading.Thread(target=lambda: got.append(second.acquire()))
    waiter.start()
    time.sleep(0.3)  # the waiter has opened the file and blocks in flock
    path.unlink()  # what remove_if_free does while it holds the lock
    first.release()
    waiter.join(10)
    assert got == [True] and path.exists()
    assert not FileLock(path).acquire(blocking=False)  # the file at the path is the one the waiter holds
    second.release()
    assert FileLock(path).remove_if_free() and not path.exists()


def test_remove_if_free_leaves_a_held_lock(tmp_path):
    path = tmp_path / "x.lock"
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys, time; fd = os.open(sys.argv[1], "
                               "os.O_RDWR | os.O_CREAT); fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); "
                               "time.sleep(60)", str(path)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline() == b"held\n"
        assert not FileLock(path).remove_if_free() and path.exists()
    finally:
        holder.kill()
        holder.wait()
    assert FileLock(path).remove_if_free() and not path.exists()
    assert not FileLock(path).remove_if_free()  # nothing to remove


def test_a_removed_lock_directory_is_made_again_only_when_asked(tmp_path):
    path = tmp_path / LOCKS_DIR / "u.lock"
    with pytest.raises(OutputError, match="cannot create the lock file"):
        FileLock(path).acquire()
    lock = FileLock(path, make_parent=True)
    assert lock.acquire() and path.exists()
    lock.release()


def test_remove_locks_keeps_what_a_running_run_holds(tmp_path):
    """A finished run removes every free lock file and .locks/ when empty; a lock another run holds (extending the
    experiment with more trials) stays, and so does its directory."""
    (tmp_path / LOCKS_DIR).mkdir()
    for name in ("a.lock", "b.lock"):
        (tmp_path / LOCKS_DIR / name).touch()
    (tmp_path / STORE_LOCK).touch()
    held = FileLock(tmp_path / LOCKS_DIR / "b.lock")
    assert held.acquire()
    remove_locks(tmp_path)
    assert sorted(p.name for p in (tmp_path / LOCKS_DIR).iterdir()) == ["b.lock"]
    assert not (tmp_path / STORE_LOCK).exists()
    held.release()
    remove_locks(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
