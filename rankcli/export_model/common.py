"""What the target writers share: numbers written so that the engine parses back exactly the value meant, nested
trees built from the flat arrays, and the parts of every target's README.

Numbers: a float32 value is written as the shortest decimal of the *double* that holds it (``repr``, 17 digits at
most): parsed as a double and cast to float (Jackson's ``getFloatValue``) or parsed to float directly (Java's
``Float.parseFloat``), it gives that float32 back, because the decimal lies far closer to it than half a float32
step. A double is written as its shortest round-trip decimal, which every double parser reads back exactly.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from rankcli.export_model.plan import Plan


def number(value: float) -> float:
    """``value`` as the Python float whose ``repr`` (what :mod:`json` writes) the engine reads back exactly."""
    return float(value)


def text(value: float) -> str:
    """``value`` as a decimal string (Solr and RankLib read thresholds and leaves from strings)."""
    return repr(float(value))


def write_json(path: Path, obj, indent: int | None = 1) -> None:
    """Write ``obj`` as JSON (one level of indentation keeps large models readable without bloating them)."""
    path.write_text(json.dumps(obj, indent=indent, allow_nan=False) + "\n", encoding="utf-8")


def nested_text(plan: Plan, tree: int, split_open: Callable, leaf_text: Callable, middle: str, close: str) -> str:
    """Tree ``tree`` of ``plan`` as nested text, left child first: ``split_open(node, depth)``, the left subtree,
    ``middle``, the right subtree, ``close`` for a split; ``leaf_text(leaf, depth)`` for a leaf. Built with an
    explicit stack (a tree can be hundreds of levels deep) from strings, not through objects: a model of 500 trees
    of 255 leaves is written in a fraction of a second."""
    ens = plan.source.ensemble
    left, right = ens.left, ens.right
    parts: list[str] = []
    stack: list = [(int(ens.roots[tree]), 0)]
    while stack:
        item = stack.pop()
        if item.__class__ is str:
            parts.append(item)
            continue
        code, depth = item
        if code < 0:
            parts.append(leaf_text(-code - 1, depth))
            continue
        parts.append(split_open(code, depth))
        stack += [close, (int(right[code]), depth + 1), middle, (int(left[code]), depth + 1)]
    return "".join(parts)


def reprs(values: np.ndarray) -> list[str]:
    """Each value's shortest round-trip decimal (``repr`` of the double)."""
    return [repr(v) for v in np.asarray(values, dtype=np.float64).tolist()]


def local_ids(plan: Plan, tree: int) -> tuple[int, int]:
    """``(node_base, leaf_base)``: node ``n`` of ``tree`` is numbered ``n - node_base`` in the file and leaf ``l``
    ``(number of splits) + l - leaf_base``, LightGBM's own numbering."""
    ens = plan.source.ensemble
    return int(ens.node_offsets[tree]), int(ens.leaf_offsets[tree])


def fill_in_list(plan: Plan) -> list[str]:
    """The engine names of the used features without a definition."""
    return [s.name for s in plan.features if s.definition is None]


def readme_features(plan: Plan, what: str) -> str:
    """The README's table of the features the trees use: model column, engine name, defined or to fill in."""
    lines = [f"The trees use {len(plan.features)} features ({what}):", "",
             "| model column | engine name | definition |", "|---|---|---|"]
    for s in plan.features:
        lines.append(f"| {s.model_name} | {_cell(s.name)} | "
                     f"{'given' if s.definition is not None else '**fill in**'} |")
    missing = fill_in_list(plan)
    if missing:
        lines += ["", f"**{len(missing)} features have no definition yet** ({', '.join(missing[:12])}"
                  f"{', ...' if len(missing) > 12 else ''}): the files hold a placeholder that the engine refuses "
                  "until you replace it; or export again with `--feature-map` giving each one."]
    return "\n".join(lines)


def _cell(text: str) -> str:
    """``text`` in a Markdown table cell: ``|`` escaped, line breaks as spaces."""
    return " ".join(text.replace("|", "\\|").splitlines())


def readme_exactness(plan: Plan) -> str:
    """The README's paragraph on how exact the export is."""
    src = plan.source
    norm = src.normalization
    lines = [f"Thresholds are written so that every value {plan.target.name} can hold takes LightGBM's branch "
             "(`rankcli export-model --check DATA` verifies it on your data)."]
    if norm is not None:
        lines.append(f"The model was trained on features normalised {norm.describe()}: "
                     + ("the engine's own normalisers are written (float32; see the check)." if plan.norms else
                        "the normalisation is folded into the thresholds, so the engine is given **raw** feature "
                        "values."))
    if plan.inexact:
        lines.append(f"{len(plan.inexact)} splits cannot be written exactly and are listed by the export's report "
                     f"(first: {plan.inexact[0].split}: {plan.inexact[0].reason}).")
    return "\n\n".join(lines)


def placeholder(kind: str, spec) -> object:
    """A definition the engine refuses until it is filled in (never a silent constant feature)."""
    note = f"rankcli: fill in the definition of {spec.name} (model column {spec.model_name})"
    if kind == "query":
        return {"rankcli_fill_in": {"feature": spec.name, "note": note}}
    return note


def leaf32(values: np.ndarray) -> np.ndarray:
    """Leaf values in float32 (round to nearest), as the float32 engines hold them."""
    return values.astype(np.float32)
