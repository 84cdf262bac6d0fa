"""Removing rankcli's own files from a directory it reopens (an experiment, a tune output), and nothing else.

A reopened output is not replaced whole, as a model directory is: ``--overwrite`` starts (part of) it over by removing
the files an earlier run wrote. What those are is a :class:`Layout`: file names (``fnmatch`` patterns) and
subdirectories with their own layouts. :func:`remove_owned` removes exactly the entries the layout names, after
checking that none of them holds anything rankcli did not write: a subdirectory rankcli writes is removed with its
files only when every entry in it is one of them, and a directory where the layout has a file (or a file or a
symbolic link where it has a directory) is not rankcli's either. Otherwise nothing is removed and the refusal (exit 4)
names what is in the way, whatever the flags. Entries at the top that the layout does not name are left as they are.

A temporary of an atomic write (:mod:`~rankcli.formats.atomic.temporaries`) counts as rankcli's: it is removed when its
owner is provably gone, and left to a live owner.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rankcli.errors import OutputError
from rankcli.formats.atomic import temporaries


@dataclass(frozen=True)
class Layout:
    """What rankcli writes into a directory: ``files``, ``fnmatch`` patterns of the regular files' names, and
    ``dirs``, a pattern of a subdirectory's name -> the layout of that subdirectory."""

    files: tuple[str, ...] = ()
    dirs: Mapping[str, Layout] = field(default_factory=dict)

    def file(self, name: str) -> bool:
        """Whether ``name`` is one of this layout's files."""
        return any(fnmatch.fnmatchcase(name, p) for p in self.files)

    def directory(self, name: str) -> Layout | None:
        """The layout of the subdirectory ``name``, or None when this layout has no such subdirectory."""
        return next((sub for p, sub in self.dirs.items() if fnmatch.fnmatchcase(name, p)), None)


@dataclass
class _Plan:
    files: list[Path] = field(default_factory=list)
    dirs: list[Path] = field(default_factory=list)  # deepest first
    foreign: list[str] = field(default_factory=list)


def _scan(directory: Path, layout: Layout, plan: _Plan, prefix: str, strict: bool) -> None:
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as exc:
        raise temporaries.output_error(directory, exc, "cannot list") from None
    for entry in entries:
        name, path = entry.name, Path(entry.path)
        if temporaries.TEMPORARY.match(name):
            if temporaries.owner_gone(name):
                (plan.dirs if entry.is_dir(follow_symlinks=False) else plan.files).append(path)
            continue
        sub = layout.directory(name)
        is_dir = entry.is_dir(follow_symlinks=False)
        if sub is not None and is_dir:
            _scan(path, sub, plan, f"{prefix}{name}/", strict=True)
            plan.dirs.append(path)
        elif sub is None and layout.file(name) and not is_dir:
            plan.files.append(path)
        elif strict or sub is not None or layout.file(name):
            plan.foreign.append(f"{prefix}{name}{'/' if is_dir else ''}")


def foreign_entries(directory: Path | str, layout: Layout) -> list[str]:
    """The entries of ``directory`` that :func:`remove_owned` would refuse to remove, as paths relative to it."""
    plan = _Plan()
    _scan(Path(directory), layout, plan, "", strict=False)
    return plan.foreign


def remove_owned(directory: Path | str, layout: Layout) -> list[Path]:
    """Remove from ``directory`` the entries ``layout`` names (the module docstring says which), or nothing: an
    :class:`~rankcli.errors.OutputError` (exit 4) names the entries rankcli did not write among them. Returns what was
    removed."""
    directory = Path(directory)
    plan = _Plan()
    _scan(directory, layout, plan, "", strict=False)
    if plan.foreign:
        shown = ", ".join(plan.foreign[:5]) + (f", ... ({len(plan.foreign)} in all)" if len(plan.foreign) > 5 else "")
        raise OutputError(f"{directory}: holds files rankcli did not write where --overwrite would remove its own "
                          f"({shown}); rankcli removes only its own files, whatever the flags: move them away or "
                          "choose a new directory")
    removed = []
    try:
        for path in plan.files:
            path.unlink(missing_ok=True)
            removed.append(path)
        for path in plan.dirs:
            if path.exists():
                try:
                    path.rmdir()
                except OSError:
                    if not temporaries.TEMPORARY.match(path.name):
                        continue  # a live writer's temporary is still in it: the directory stays
                    temporaries.remove(path)
            removed.append(path)
    except OSError as exc:
        raise temporaries.output_error(directory, exc, "cannot remove an earlier run's files") from None
    return removed
