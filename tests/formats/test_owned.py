"""rankcli.formats.atomic.owned: removing an earlier run's files from a reopened directory removes exactly the layout's
entries, refuses (removing nothing) when one of them holds or is something rankcli did not write, and never follows a
symbolic link."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rankcli.errors import OutputError
from rankcli.formats.atomic import Layout, foreign_entries, remove_owned, temporary_name

LAYOUT = Layout(files=("summary.md", "sweep-*.csv", ".lock"), dirs={"curves": Layout(files=("*.parquet",))})


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _make(root: Path, *names: str) -> None:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x")


def test_the_layout_s_entries_go_and_what_it_does_not_name_stays(tmp_path):
    _make(tmp_path, "summary.md", "sweep-a.csv", ".lock", "curves/u1.parquet", "curves/u2.parquet", "NOTES.md",
          ".git/HEAD", "sweep-a.txt")
    removed = remove_owned(tmp_path, LAYOUT)
    assert _tree(tmp_path) == [".git", ".git/HEAD", "NOTES.md", "sweep-a.txt"]
    assert len(removed) == 6


@pytest.mark.parametrize("make, foreign", [
    (lambda d: _make(d, "curves/mine.txt"), "curves/mine.txt"),          # a user's file in rankcli's directory
    (lambda d: _make(d, "summary.md/inside"), "summary.md/"),            # a directory where rankcli writes a file
    (lambda d: _make(d, "curves/deeper/x.parquet"), "curves/deeper/"),   # a directory rankcli never makes
])
def test_anything_else_in_the_way_removes_nothing(tmp_path, make, foreign):
    _make(tmp_path, "summary.md" if foreign != "summary.md/" else "sweep-b.csv", "curves/u1.parquet")
    make(tmp_path)
    before = _tree(tmp_path)
    assert foreign in foreign_entries(tmp_path, LAYOUT)
    with pytest.raises(OutputError, match="rankcli did not write") as err:
        remove_owned(tmp_path, LAYOUT)
    assert foreign in str(err.value) and _tree(tmp_path) == before


def test_symbolic_links_are_never_followed(tmp_path):
    mine = tmp_path / "mine"
    _make(mine, "u.parquet", "thesis.tex")
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(mine, out / "curves")                     # a link where rankcli writes a directory: not rankcli's
    with pytest.raises(OutputError, match=r"\(curves\)"):
        remove_owned(out, LAYOUT)
    os.unlink(out / "curves")
    os.symlink(mine / "thesis.tex", out / "summary.md")  # a link named as rankcli's file: the link goes, not its target
    remove_owned(out, LAYOUT)
    assert not os.path.lexists(out / "summary.md") and (mine / "thesis.tex").read_text() == "x"


def test_a_dead_writer_s_temporary_goes_a_live_one_stays(tmp_path):
    from rankcli.formats.atomic import owner_token

    _make(tmp_path, "curves/u.parquet")
    live = tmp_path / "curves" / temporary_name("v.parquet")         # this process's: alive
    live.write_text("being written")
    dead = tmp_path / f".summary.md+{owner_token()}+{2 ** 22 + 7}+0123abcd.tmp"   # no such process
    dead.write_text("left by a kill -9")
    theirs = tmp_path / ".summary.md+notes"                           # not a temporary's name: the user's
    theirs.write_text("mine")
    remove_owned(tmp_path, LAYOUT)
    assert live.exists() and (tmp_path / "curves").is_dir() and theirs.exists() and not dead.exists()
    assert not (tmp_path / "curves" / "u.parquet").exists()
