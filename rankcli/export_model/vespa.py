"""Vespa: a ranking expression file and a rank profile.

Vespa's LightGBM importer (``model-integration/.../importer/lightgbm/LightGBMParser.java``) writes each split as
``f < t`` or, with default_left, ``!(f >= t)``: strict, where LightGBM is not, and blind to the missing type. Worse,
an ``if`` whose condition is ``<`` (or ``!(>=)``, or ``in``) on a feature and a constant is a "tree"
(``eval/.../basic_nodes.cpp``, ``If::If``), and a large forest of them (``gbdt.cpp``, ``Optimize::select_best``: a tree
of more than 12 leaves and an average path length over 2500) is evaluated by ``VMForest``
(``vm_forest.cpp``), which stores every threshold and leaf as a float (``encode_const(float)``). So rankcli writes
the expression itself with ``<=`` (and ``!(f > t)`` where a missing value goes left): no "tree", no float32
conversion — Vespa compiles it and evaluates it in double, the thresholds and leaves exactly LightGBM's doubles,
summed in order as LightGBM sums them. A NaN compares false: ``f <= t`` sends it right, ``!(f > t)`` left.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from rankcli.core.trees import semantics as sem
from rankcli.errors import InputError
from rankcli.export_model.common import readme_exactness, readme_features, text
from rankcli.export_model.plan import Plan
from rankcli.export_model.readback import Accessor, ReadBack, SplitRecord, align, splits_from

_TOKEN = re.compile(r"\s*(if\b|<=|<|>=|>|!|\(|\)|,|\+|[A-Za-z_][A-Za-z0-9_]*"
                    r"|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)")
#: condition operator -> (strict, NaN goes left): f <= t, f < t, !(f > t), !(f >= t)
_CONDITIONS = {("<=", False): (False, False), ("<", False): (True, False), (">", True): (False, True),
               (">=", True): (True, True)}


def _paths(plan: Plan) -> tuple[str, str]:
    return f"schemas/{plan.name}.expression", "rank-profile.sd"


def expression(plan: Plan) -> str:
    """The ranking expression: the sum of one nested ``if`` per tree."""
    ens = plan.source.ensemble
    names = {s.column: s.name for s in plan.features}
    out = []
    for t in range(ens.n_trees):
        parts: list[str] = []
        stack: list = [int(ens.roots[t])]
        while stack:  # pre-order, writing "if (cond, " before a split's children and ")" after them
            item = stack.pop()
            if isinstance(item, str):
                parts.append(item)
            elif item < 0:
                parts.append(text(plan.leaf[-item - 1]))
            else:
                name, cut = names[int(ens.feature[item])], text(plan.written[item])
                parts.append(f"if (!({name} > {cut}), " if plan.nan_left[item] else f"if ({name} <= {cut}, ")
                stack += [")", int(ens.right[item]), ", ", int(ens.left[item])]
        out.append("".join(parts))
    return " +\n".join(out) + "\n"


def _profile(plan: Plan) -> str:
    lines = [f"rank-profile {plan.name} inherits default {{"]
    for s in plan.features:
        body = s.definition["expression"] if s.definition else f"rankcli_fill_in_{s.name}"
        lines += [f"    function {s.name}() {{", f"        expression: {body}", "    }"]
    lines += ["    first-phase {", "        expression: nativeRank", "    }", "    second-phase {",
              "        rerank-count: 100", f"        expression: file:{plan.name}.expression", "    }", "}"]
    return "\n".join(lines) + "\n"


def write(plan: Plan, out: Path) -> list[str]:
    """Write the expression file, the rank profile and the README into ``out``."""
    expr, profile = _paths(plan)
    (out / "schemas").mkdir()
    (out / expr).write_text(expression(plan), encoding="utf-8")
    (out / profile).write_text(_profile(plan), encoding="utf-8")
    (out / "README.md").write_text(_readme(plan), encoding="utf-8")
    return ["schemas", profile, "README.md"]


class _Parsed(Accessor):
    """Parsed ``if`` nodes: ``("if", name, cut_text, strict, nan_left, left, right)`` or ``("leaf", text)``."""

    def is_leaf(self, node) -> bool:
        return node[0] == "leaf"

    def children(self, node) -> tuple:
        return node[5], node[6]

    def split(self, node) -> SplitRecord:
        return SplitRecord(node[1], float(node[2]), node[3], sem.NAN_LEFT if node[4] else sem.NAN_RIGHT)

    def leaf(self, node) -> float:
        return float(node[1])


def parse_expression(body: str, where: str) -> tuple[list, Accessor]:
    """A sum of trees of ``if (cond, a, b)`` with ``cond`` one of ``f <= t``, ``f < t``, ``!(f > t)``,
    ``!(f >= t)`` (parenthesised or not): ``(roots, accessor)``. NaN fails every comparison, so a negated condition
    sends it to ``a``."""
    tokens = _TOKEN.findall(body)
    pos = 0

    def expect(tok: str) -> None:
        nonlocal pos
        if pos >= len(tokens) or tokens[pos] != tok:
            got = tokens[pos] if pos < len(tokens) else "the end"
            raise InputError(f"{where}: expected {tok!r} at token {pos}, got {got!r}")
        pos += 1

    def condition(negated: bool = False):
        nonlocal pos
        if tokens[pos] in ("(", "!"):
            inner = tokens[pos] == "!"
            pos += 1
            if inner:
                expect("(")
            found = condition(negated ^ inner)
            expect(")")
            return found
        name, op, cut = tokens[pos:pos + 3]
        if (op, negated) not in _CONDITIONS:
            raise InputError(f"{where}: a condition {'!(' if negated else ''}{name} {op} {cut}; rankcli reads "
                             "f <= t, f < t, !(f > t) and !(f >= t)")
        pos += 3
        return (name, cut) + _CONDITIONS[(op, negated)]

    def term():
        nonlocal pos
        if tokens[pos] != "if":
            pos += 1
            return ("leaf", tokens[pos - 1])
        expect("if")
        expect("(")
        cond = condition()
        expect(",")
        left = term()
        expect(",")
        right = term()
        expect(")")
        return ("if",) + cond + (left, right)

    terms = [term()]
    while pos < len(tokens):
        expect("+")
        terms.append(term())
    return terms, _Parsed()


def read(plan: Plan, out: Path) -> ReadBack:
    """The expression read back as Vespa evaluates it (doubles; ``<=``; NaN by the condition's form)."""
    path = out / _paths(plan)[0]
    try:
        body = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot read it ({exc.strerror})") from None
    terms, accessor = parse_expression(body, str(path))
    records, leaves = align(plan.source.ensemble, terms, accessor, str(path))
    feature, splits = splits_from(records, {s.name: s.column for s in plan.features}, np.float64, str(path))
    return ReadBack(feature, splits, np.array(leaves, dtype=np.float64), np.ones(len(terms)), sem.SUM_DOUBLE)


def _readme(plan: Plan) -> str:
    expr, profile = _paths(plan)
    return f"""# {plan.name}: a rankcli model for Vespa

{readme_exactness(plan)}

{readme_features(plan, "one function each in the rank profile")}

`{expr}` is the model as a ranking expression (every split `<=`, in double: exactly LightGBM's decisions and sum);
`{profile}` is a rank profile using it. Copy `{expr}` into your application package's `schemas/` directory, paste
the rank profile into your schema (`schemas/SCHEMA.sd`), give each function its rank feature (for example
`bm25(title)` or `attribute(popularity)`), and deploy:

```bash
cp {expr} my-app/schemas/
vespa deploy my-app
vespa query 'yql=select * from sources * where userQuery()' 'query=rambo' 'ranking={plan.name}'
```

Do not import the model through `models/` and `lightgbm(...)` instead: Vespa's importer writes strict `<`
comparisons, and large forests of those are evaluated with float32 thresholds and leaves (docs/commands/
export-model.md, "Vespa"). Missing values: a NaN feature takes LightGBM's branch for a missing value at every split.
"""
