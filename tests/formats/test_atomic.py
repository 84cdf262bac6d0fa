"""Atomic outputs: filesystem failures are output errors (exit 4) that leave nothing behind, never internal errors."""

from __future__ import annotations

import errno
import os

import pytest

from rankcli.errors import ExitStatus, OutputError
from rankcli.formats.atomic import atomic_directory, atomic_path


def test_existing_target_needs_overwrite(tmp_path):
    (tmp_path / "x").write_text("old")
    with pytest.raises(OutputError, match=r"x: already exists; pass --overwrite to replace it$"):
        with atomic_path(tmp_path / "x"):
            pass
    with atomic_path(tmp_path / "x", overwrite=True) as tmp:
        tmp.write_text("new")
    assert (tmp_path / "x").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x"]


def test_temporary_file_cannot_be_created(tmp_path, monkeypatch):
    """A directory that exists but refuses new files (/proc, a full or read-only filesystem): exit 4, no traceback."""
    from rankcli.formats.atomic import targets, temporaries

    def refuse(*args, **kwargs):
        raise FileNotFoundError(errno.ENOENT, "No such file or directory")

    monkeypatch.setattr(temporaries, "create_file", refuse)
    monkeypatch.setattr(temporaries, "create_directory", refuse)
    # The probe in check_target finds it before any work; the temporary's creation is checked as well.
    with pytest.raises(OutputError, match=rf"^{tmp_path}/out: cannot create files in {tmp_path} "
                                          r"\(No such file or directory\)$") as info:
        with atomic_path(tmp_path / "out"):
            pass
    assert info.value.exit_status == ExitStatus.OUTPUT
    monkeypatch.setattr(targets, "_probe", lambda directory, display: None)
    with pytest.raises(OutputError, match=rf"^{tmp_path}/out: cannot create a file in {tmp_path} "):
        with atomic_path(tmp_path / "out"):
            pass
    with pytest.raises(OutputError, match=rf"^{tmp_path}/d: cannot create a directory in {tmp_path} "):
        with atomic_directory(tmp_path / "d"):
            pass


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS])
def test_disk_full_while_writing_is_an_output_error(tmp_path, code):
    for make in (atomic_path, atomic_directory):
        with pytest.raises(OutputError, match=rf"^{tmp_path}/out: cannot write \({os.strerror(code)}\)$"):
            with make(tmp_path / "out"):
                raise OSError(code, os.strerror(code))
        assert list(tmp_path.iterdir()) == []


def test_other_errors_pass_through_and_clean_up(tmp_path):
    with pytest.raises(ValueError):
        with atomic_path(tmp_path / "out") as tmp:
            tmp.write_text("partial")
            raise ValueError("boom")
    assert list(tmp_path.iterdir()) == []


def test_cli_output_in_a_directory_that_refuses_files(tmp_path):
    """End to end: rankcli export into /proc (exists, but no regular files can be created there) is exit 4."""
    if not os.path.isdir("/proc"):
        pytest.skip("needs /proc")
    from rankcli.cli import main
    from tests.conftest import SAMPLE

    assert main(["convert", str(SAMPLE / "letor" / "test.txt"), "-o", str(tmp_path / "t.parquet")]) == 0
    assert main(["export", str(tmp_path / "t.parquet"), "-o", "/proc/rankcli-test.txt"]) == ExitStatus.OUTPUT
