"""The package's structure, checked with ``ast`` over every module so that a change which breaks it fails CI.

The rules (docs/internals.md explains why):
- ``rankcli.core`` is pure computation: it imports numpy, scipy and the standard library, and of rankcli only itself
  and ``rankcli.errors``.
- ``rankcli.formats`` owns every file format and is the only package that imports pyarrow (besides
  ``rankcli.compat``, for pyarrow's private names that formats code calls through it); of rankcli it imports
  only itself, the data model ``rankcli.dataset``, ``rankcli.errors`` and ``rankcli.compat``.
- ``rankcli.dataset`` (the in-memory data model) imports only ``rankcli.errors``.
- Orchestration (every other module outside ``rankcli.cli``) never imports ``rankcli.cli``.
- A command module in ``rankcli.cli`` does not import another command module (shared pieces live in
  ``rankcli.cli._common`` and ``rankcli.cli.options``).
- No import cycles between rankcli modules, counting imports inside functions too.
- A private name (``_x``) of another module is used only in ``rankcli.compat``, which documents each such use.
- No module over 500 lines, no function over 80 lines.
- Every public function and class at module level has a docstring (a command's help is its module's docstring).
"""
from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "rankcli"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
STDLIB = set(sys.stdlib_module_names)
CORE_THIRD_PARTY = {"numpy", "scipy"}
CLI_SHARED = {"rankcli.cli", "rankcli.cli._common", "rankcli.cli.options"}


@dataclass(frozen=True)
class Import:
    importer: str
    target: str  # the module imported (a rankcli submodule when the name imported is one)
    name: str | None  # the name taken from it, for ``from target import name``
    line: int


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


MODULES = modules()
TREES = {name: ast.parse(path.read_text(encoding="utf-8"), str(path)) for name, path in MODULES.items()}


def _absolute(importer: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    if MODULES[importer].name != "__init__.py":
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(name: str) -> Iterator[Import]:
    for node in ast.walk(TREES[name]):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(name, alias.name, None, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(name, node)
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in MODULES:
                    yield Import(name, sub, None, node.lineno)
                else:
                    yield Import(name, target, alias.name, node.lineno)


def _root(module: str) -> str:
    return module.split(".")[0]


def _is_private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def layer_violations() -> set[str]:
    found = set()
    for name in MODULES:
        for imp in imports_of(name):
            target, root = imp.target, _root(imp.target)
            ours = root == "rankcli"
            if root == "pyarrow" and not name.startswith("rankcli.formats") and name != "rankcli.compat":
                found.add(f"{name} imports pyarrow outside rankcli.formats")
            if name.startswith("rankcli.core"):
                if ours and not (target.startswith("rankcli.core") or target == "rankcli.errors"):
                    found.add(f"{name} imports {target} (core imports only core and errors)")
                if not ours and root not in STDLIB and root not in CORE_THIRD_PARTY:
                    found.add(f"{name} imports {root} (core imports numpy, scipy and the standard library)")
            elif name.startswith("rankcli.formats"):
                allowed = ("rankcli.formats", "rankcli.dataset", "rankcli.errors", "rankcli.compat")
                if ours and target != "rankcli" and not target.startswith(allowed):
                    found.add(f"{name} imports {target} (formats imports only formats, dataset, errors, compat)")
            elif name == "rankcli.dataset":
                if ours and target != "rankcli.errors":
                    found.add(f"{name} imports {target} (the data model imports only errors)")
            elif name.startswith("rankcli.cli"):
                if (ours and target.startswith("rankcli.cli.") and target not in CLI_SHARED
                        and name not in CLI_SHARED and target != name):
                    found.add(f"{name} imports {target} (a command module imports no other command)")
            elif name != "rankcli.__main__" and ours and (target == "rankcli.cli" or target.startswith("rankcli.cli.")):
                found.add(f"{name} imports {target} (orchestration never imports the CLI)")
    return found


def private_uses() -> set[str]:
    """Private names of other modules: ``from x import _y``, ``import x._y``, ``x._y`` on an imported module."""
    found = set()
    for name, tree in TREES.items():
        if name == "rankcli.compat":
            continue
        module_aliases: dict[str, str] = {}
        for imp in imports_of(name):
            if imp.name is not None and _is_private(imp.name) and imp.target != name:
                found.add(f"{name} imports {imp.target}.{imp.name}")
            parts = imp.target.split(".")
            if _root(imp.target) != "rankcli" and any(_is_private(p) for p in parts[1:]):
                found.add(f"{name} imports {imp.target}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    module_aliases[alias.asname or alias.name.split(".")[0]] = alias.name
            elif isinstance(node, ast.ImportFrom):
                target = _absolute(name, node)
                for alias in node.names:
                    if f"{target}.{alias.name}" in MODULES or _root(target) != "rankcli":
                        module_aliases[alias.asname or alias.name] = f"{target}.{alias.name}"
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and _is_private(node.attr) and isinstance(node.value, ast.Name)
                    and node.value.id in module_aliases):
                found.add(f"{name} uses {module_aliases[node.value.id]}.{node.attr}")
    return found


def cycles() -> set[str]:
    graph = {name: {imp.target for imp in imports_of(name) if imp.target in MODULES and imp.target != name}
             for name in MODULES}
    # A package's __init__ importing its own submodules (to register or re-export them) is not a cycle of design.
    for name in MODULES:
        graph[name] = {t for t in graph[name] if not t.startswith(name + ".")}
    found, index, low, stack, on_stack = set(), {}, {}, [], set()

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.add("cycle: " + " <-> ".join(sorted(component)))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def size_violations() -> set[str]:
    found = set()
    for name, path in MODULES.items():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            found.add(f"{name} has more than {MAX_MODULE_LINES} lines")
        for node in ast.walk(TREES[name]):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.add(f"{name}.{node.name} has more than {MAX_FUNCTION_LINES} lines")
    return found


# Violations that the redesign (issue 13) is removing. Remove an entry in the change that fixes it; a stale entry
# fails like a new violation, so this list can only shrink.
KNOWN: set[str] = set()


@pytest.mark.parametrize("check", [layer_violations, private_uses, cycles, size_violations], ids=lambda f: f.__name__)
def test_structure(check):
    found = check()
    new = sorted(found - KNOWN)
    assert not new, "new structural violations:\n" + "\n".join(new)


def test_known_violations_are_still_real():
    found = layer_violations() | private_uses() | cycles() | size_violations()
    stale = sorted(KNOWN - found)
    assert not stale, "fixed, remove from KNOWN:\n" + "\n".join(stale)


def missing_docstrings() -> set[str]:
    found = set()
    for name, tree in TREES.items():
        for node in tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or node.name.startswith("_"):
                continue
            if name.startswith("rankcli.cli") and node.name == "command":
                continue
            if not ast.get_docstring(node):
                found.add(f"{name}.{node.name} has no docstring")
    return found


def test_public_functions_and_classes_have_docstrings():
    assert not sorted(missing_docstrings())


def test_the_checks_can_fail(tmp_path):
    """Each rule, fed a module that breaks it, reports it (so an empty result is not a broken checker)."""
    bad = {
        "rankcli.core.bad": "import pyarrow\nfrom rankcli import train\n",
        "rankcli.evaluate_bad": "from rankcli.cli import eval\n",
        "rankcli.formats.bad": "from rankcli.core import groups\n",
        "rankcli.bad_private": "from rankcli.convert import _output_name\nimport typer._click\n",
        "rankcli.undocumented": "def public():\n    pass\n",
    }
    saved_modules, saved_trees = dict(MODULES), dict(TREES)
    try:
        for name, source in bad.items():
            MODULES[name] = tmp_path / (name + ".py")
            TREES[name] = ast.parse(source)
        layers, private, undocumented = layer_violations(), private_uses(), missing_docstrings()
    finally:
        MODULES.clear(), MODULES.update(saved_modules)
        TREES.clear(), TREES.update(saved_trees)
    assert "rankcli.core.bad imports pyarrow outside rankcli.formats" in layers
    assert any(v.startswith("rankcli.core.bad imports rankcli.train") for v in layers)
    assert any(v.startswith("rankcli.evaluate_bad imports rankcli.cli") for v in layers)
    assert any(v.startswith("rankcli.formats.bad imports rankcli.core.groups") for v in layers)
    assert "rankcli.bad_private imports rankcli.convert._output_name" in private
    assert "rankcli.bad_private imports typer._click" in private
    assert "rankcli.undocumented.public has no docstring" in undocumented
