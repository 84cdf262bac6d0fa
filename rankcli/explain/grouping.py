"""Feature groups: features permuted together (``--group name=f1,f2,...``), for correlated features such as the BM25
variants of WEB30K. Every feature belongs to exactly one group; a feature named in no group is a group of its own,
named by the feature."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rankcli.errors import InputError, UsageError


@dataclass(frozen=True)
class FeatureGroup:
    """A group's ``name`` and its ``members``: the model's feature names, and their ``columns`` (0-based)."""

    name: str
    members: tuple[str, ...]
    columns: tuple[int, ...]


def _parse_one(text: str, where: str) -> tuple[str, list[str]]:
    name, sep, rest = text.partition("=")
    members = [m.strip() for m in rest.split(",") if m.strip()]
    if not sep or not name.strip() or not members:
        raise UsageError(f"{where}: a group is NAME=FEATURE,FEATURE,..., got {text.strip()[:60]!r}")
    return name.strip(), members


def read_group_file(path: Path | str) -> list[tuple[str, str]]:
    """The ``NAME=F1,F2,...`` lines of a group file (blank lines and ``#`` comments skipped), each as
    ``path:line: text`` for messages: ``[(where, text), ...]``."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the group file ({getattr(exc, 'strerror', None) or exc})") from None
    return [(f"{path}:{i}", line.split("#", 1)[0]) for i, line in enumerate(lines, 1)
            if line.split("#", 1)[0].strip()]


def feature_groups(feature_names: Sequence[str], groups: Sequence[str] = (), files: Sequence[Path | str] = (),
                   reserved: Mapping[str, str] | None = None) -> list[FeatureGroup]:
    """The groups of ``feature_names``: the named ones (``groups`` texts ``NAME=F1,F2,...``, then the lines of the
    group ``files``), in the model's order of their first member, and every other feature alone.

    A feature the model lacks (with the closest name), a feature in two groups, a group name that is another
    group's or another feature's, and a group name among ``reserved`` (column name -> what that column is: the other
    columns of a table with one column per group) are :class:`UsageError` (exit 2)."""
    items = [(f"--group {text[:40]!r}", text) for text in groups]
    for f in files:
        items += read_group_file(f)
    index = {name: j for j, name in enumerate(feature_names)}
    owner: dict[str, str] = {}
    named: dict[str, list[str]] = {}
    defined: dict[str, str] = {}  # group name -> where it is defined, for messages
    for where, text in items:
        name, members = _parse_one(text, where)
        if name in named:
            raise UsageError(f"{where}: group {name!r} is defined twice")
        if reserved and name in reserved:
            raise UsageError(f"{where}: group name {name!r} is also {reserved[name]}, which one column per group "
                             "would overwrite; name the group otherwise")
        for m in members:
            if m not in index:
                close = difflib.get_close_matches(m, list(index), n=1, cutoff=0.5)
                raise UsageError(f"{where}: the model has no feature {m!r}"
                                 + (f"; did you mean {close[0]!r}?" if close else ""))
            if m in owner:
                raise UsageError(f"{where}: feature {m} is already in group {owner[m]!r}; a feature is permuted "
                                 "with one group")
            owner[m] = name
        named[name] = list(dict.fromkeys(members))
        defined[name] = where
    out, done = [], set()
    for j, feature in enumerate(feature_names):
        group = owner.get(feature)
        if group is None:
            if feature in named:
                raise UsageError(f"{defined[feature]}: group name {feature!r} is also a feature not in it; name the "
                                 "group otherwise")
            if reserved and feature in reserved:
                raise UsageError(f"feature {feature!r}, a group of its own, is named as {reserved[feature]}, which "
                                 f"its column would overwrite; put it in a named group (--group NAME={feature})")
            out.append(FeatureGroup(feature, (feature,), (j,)))
        elif group not in done:
            done.add(group)
            members = named[group]
            out.append(FeatureGroup(group, tuple(members), tuple(index[m] for m in members)))
    return out


def membership(groups: Sequence[FeatureGroup], n_features: int) -> np.ndarray | None:
    """The ``(n_features, n_groups)`` 0/1 matrix summing feature columns into groups; None when every group is one
    feature in the model's order (the identity)."""
    if len(groups) == n_features and all(g.columns == (j,) for j, g in enumerate(groups)):
        return None
    m = np.zeros((n_features, len(groups)))
    for k, g in enumerate(groups):
        m[list(g.columns), k] = 1.0
    return m
