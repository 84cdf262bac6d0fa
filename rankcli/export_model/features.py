"""``--feature-map``: the engine's name and definition of each model feature.

JSON: an object whose keys are the model's features (``f3``, or the engine name the training data recorded) and
whose values are the engine's name (a string) or an object ``{"name": ..., <definition>}``. A definition is what
the target computes the feature with: ``template`` (a query template; ``params``, default ``["keywords"]``) for the
LTR plugins, ``class`` and ``params`` for Solr, ``query`` for Elasticsearch, ``expression`` (a rank feature) for
Vespa. One file can serve several targets: a key named after a target (``"solr": {...}``) holds that target's
definition. TSV: ``feature<TAB>name[<TAB>definition]``, the definition JSON (or a Vespa expression as text); ``#``
starts a comment line. Only the features the trees use need an entry; the others keep their names.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from rankcli.errors import InputError, InputFormatError

#: The definition keys each target reads.
DEFINITION_KEYS = {"elasticsearch-ltr": ("template", "params", "template_language"),
                   "opensearch-ltr": ("template", "params", "template_language"),
                   "solr": ("class", "params"), "elasticsearch": ("query", "default_score"),
                   "vespa": ("expression",), "onnx": (), "ranklib": ()}
_VESPA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass
class FeatureSpec:
    """One feature the trees use: its model column, the engine's name, and its definition (None: to fill in)."""

    column: int
    model_name: str
    name: str
    definition: dict | None = None


def _definition(entry: dict, target: str, where: str) -> dict | None:
    if target in entry and isinstance(entry[target], dict):
        entry = entry[target]
    elif target == "opensearch-ltr" and isinstance(entry.get("elasticsearch-ltr"), dict):
        entry = entry["elasticsearch-ltr"]
    keys = DEFINITION_KEYS[target]
    found = {k: entry[k] for k in keys if k in entry}
    if not found:
        return None
    main = keys[0] if keys else None
    if main is not None and main not in found:
        raise InputError(f"{where}: a {target} definition needs {main!r}, got keys {sorted(found)}")
    if target == "vespa" and not isinstance(found["expression"], str):
        raise InputError(f"{where}: a Vespa definition's expression is a rank feature expression (a string), got "
                         f"{type(found['expression']).__name__}")
    return found


def _entries_json(path: Path, text: str) -> list[tuple[str, object, str]]:
    try:  # the objects' pairs as written: a feature given twice is refused, not decided by the last
        data = json.loads(text, object_pairs_hook=_Pairs)
    except ValueError as exc:
        raise InputFormatError(f"not JSON ({exc.msg})", str(path), exc.lineno) from None
    if not isinstance(data, _Pairs):
        raise InputError(f"{path}: a feature map is a JSON object of feature -> name or definition, got "
                         f"{'array' if isinstance(data, list) else type(data).__name__}")
    return [(k, _objects(v), f"{path}: feature {k!r}") for k, v in data]


class _Pairs(list):
    """A JSON object as its ``(key, value)`` pairs in file order."""


def _objects(value):
    """A JSON value read as :class:`_Pairs` with every object a dict again."""
    if isinstance(value, _Pairs):
        return {k: _objects(v) for k, v in value}
    if isinstance(value, list):
        return [_objects(v) for v in value]
    return value


def _entries_tsv(path: Path, text: str) -> list[tuple[str, object, str]]:
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.rstrip("\r").split("\t")
        if len(parts) < 2 or not parts[1].strip():
            raise InputFormatError("expected feature<TAB>name[<TAB>definition]", str(path), number, line[:60])
        value: object = parts[1].strip()
        if len(parts) > 2 and parts[2].strip():
            raw = "\t".join(parts[2:]).strip()
            try:
                definition = json.loads(raw)
            except ValueError:
                definition = {"expression": raw}  # a Vespa rank feature, as text
            if not isinstance(definition, dict):
                definition = {"expression": raw}
            value = {"name": parts[1].strip(), **definition}
        out.append((parts[0].strip(), value, f"{path}:{number}"))
    return out


def read_feature_map(path: Path | str, target: str, names: list[str], engine_names: list[str]) -> dict[int, tuple]:
    """``--feature-map``: column index -> ``(name, definition or None)`` for the features it lists. ``names`` are the
    model's columns, ``engine_names`` the names the training data recorded (either may be a key)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte order mark (Windows editors) is no part of the map
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the feature map ({getattr(exc, 'strerror', None) or exc})") from None
    entries = _entries_json(path, text) if text.lstrip().startswith(("{", "[")) else _entries_tsv(path, text)
    index = {n: i for i, n in enumerate(engine_names)}
    index.update({n: i for i, n in enumerate(names)})
    out: dict[int, tuple] = {}
    for key, value, where in entries:
        if key not in index:
            raise InputError(f"{where}: the model has no feature {key!r} (its features are {names[0]} .. "
                             f"{names[-1]})")
        if isinstance(value, str):
            name, definition = value, None
        elif isinstance(value, dict) and isinstance(value.get("name", key), str):
            name, definition = value.get("name", key), _definition(value, target, where)
        else:
            raise InputError(f"{where}: expected a name or an object with a name, got {json.dumps(value)[:60]}")
        if not name.strip():
            raise InputError(f"{where}: the engine name is empty; an engine names each feature")
        if index[key] in out:
            raise InputError(f"{where}: {names[index[key]]} is given twice; give each feature once")
        out[index[key]] = (name, definition)
    return out


def feature_specs(used: list[int], names: list[str], engine_names: list[str], mapped: dict[int, tuple],
                  target: str) -> list[FeatureSpec]:
    """The :class:`FeatureSpec` of each used column: the map's entry, else the training data's engine name."""
    specs = []
    for c in used:
        name, definition = mapped.get(c, (engine_names[c], None))
        specs.append(FeatureSpec(c, names[c], name, definition))
    seen: dict[str, str] = {}
    for s in specs:
        if s.name in seen:
            raise InputError(f"--feature-map: features {seen[s.name]} and {s.model_name} both get the name "
                             f"{s.name!r}; an engine names each feature once")
        seen[s.name] = s.model_name
        if target == "vespa" and not _VESPA_NAME.match(s.name):
            raise InputError(f"--feature-map: {s.name!r} ({s.model_name}) is not a Vespa function name "
                             "([A-Za-z_][A-Za-z0-9_]*); give it one in the feature map")
    return specs
