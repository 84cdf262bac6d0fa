"""RankLib's LambdaMART model file: written for RankLib (and every engine that loads RankLib models: the LTR
plugins' ``model/ranklib``), and read back as RankLib reads it.

RankLib's semantics (o19s/RankyMcRankFace, ``src/ciir/umass/edu/learning/``): ``RankerFactory.loadRankerFromString``
picks the ranker by the first line (``## LambdaMART``); ``parsing/ModelLineProducer`` drops ``#`` lines and each
line's leading and trailing white space and joins the rest, so each XML element stands on its own line;
``tree/Ensemble(String)`` reads each ``<tree weight="w">`` (``Float.parseFloat``), each ``<split>`` whose first child
is ``<feature>`` (a 1-based feature id) and ``<threshold>`` (``Float.parseFloat``), else a leaf ``<output>``
(``Float.parseFloat``); ``tree/Split.eval`` goes left when ``getFeatureValue(id) <= threshold`` (float), where
``DenseDataPoint.getFeatureValue`` turns an unknown (NaN) value into 0; ``Ensemble.eval`` sums
``s += tree.eval(dp) * weight`` with ``float s`` (the product in double, the sum rounded to float each time).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np

from rankcli.core.trees import semantics as sem
from rankcli.errors import InputError
from rankcli.export_model.common import readme_exactness, text
from rankcli.export_model.plan import Plan
from rankcli.export_model.readback import Accessor, ReadBack, SplitRecord, align, java_float, splits_from


def feature_ids(plan: Plan, ordinal: bool) -> dict[int, int]:
    """Each used column's RankLib feature id: its position in the featureset plus one (``ordinal``: the LTR
    plugins number features so), else its SVMlight index (column ``fN`` is feature N)."""
    if ordinal:
        return {s.column: i + 1 for i, s in enumerate(plan.features)}
    out = {}
    for s in plan.features:
        m = re.fullmatch(r"f(\d+)", s.model_name)
        out[s.column] = int(m.group(1)) if m else s.column + 1
    return out


def model_text(plan: Plan, ordinal: bool) -> str:
    """The LambdaMART model file of ``plan``: every tree of weight 1, its leaves the model's (float32)."""
    ens = plan.source.ensemble
    ids = feature_ids(plan, ordinal)
    out = ["## LambdaMART", f"## No. of trees = {ens.n_trees}",
           f"## No. of leaves = {int(np.diff(ens.leaf_offsets).max()) if ens.n_trees else 0}",
           "## No. of threshold candidates = -1", "## Learning rate = 1.0", "## Stop early = -1",
           "## Written by rankcli export-model: thresholds exact for RankLib's float comparison", "", "<ensemble>"]
    for t in range(ens.n_trees):
        out.append(f'<tree id="{t + 1}" weight="1.0">')
        stack: list = [("open", int(ens.roots[t]), None)]
        while stack:
            kind, code, pos = stack.pop()
            if kind == "close":
                out.append("</split>")
                continue
            out.append("<split>" if pos is None else f'<split pos="{pos}">')
            if code < 0:
                out += [f"<output> {text(plan.leaf[-code - 1])} </output>", "</split>"]
                continue
            out += [f"<feature> {ids[int(ens.feature[code])]} </feature>",
                    f"<threshold> {text(plan.written[code])} </threshold>"]
            stack += [("close", code, None), ("open", int(ens.right[code]), "right"),
                      ("open", int(ens.left[code]), "left")]
        out.append("</tree>")
    out.append("</ensemble>")
    return "\n".join(out) + "\n"


class _Xml(Accessor):
    def is_leaf(self, node) -> bool:
        return node[0].tag != "feature"

    def children(self, node) -> tuple:
        return node[2], node[3]

    def split(self, node) -> SplitRecord:
        return SplitRecord(node[0].text.strip(), node[1].text.strip(), False, sem.NAN_AS_ZERO)

    def leaf(self, node) -> str:
        return node[0].text.strip()


def parse_model_text(body: str, where: str) -> list:
    """The trees of a LambdaMART model file: each tree's root ``<split>`` element (read with :class:`_Xml`)."""
    lines = [ln.strip() for ln in body.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if not body.startswith("## LambdaMART"):
        raise InputError(f"{where}: RankLib picks the ranker by the first line, which must be '## LambdaMART'")
    try:
        root = ET.fromstring("".join(lines))
    except ET.ParseError as exc:
        raise InputError(f"{where}: not RankLib's XML ({exc})") from None
    return [tree[0] for tree in root.findall("tree")]


def read_model_text(body: str, plan: Plan, ordinal: bool, where: str) -> ReadBack:
    """A LambdaMART model file read back as RankLib reads it (see the module docstring)."""
    roots = parse_model_text(body, where)
    ens = plan.source.ensemble
    records, leaves = align(ens, roots, _Xml(), where)
    by_id = {str(v): c for c, v in feature_ids(plan, ordinal).items()}
    for r in records:
        r.feature = by_id.get(r.feature, r.feature)
    cuts = java_float([r.cut for r in records]) if records else np.zeros(0, np.float32)
    for r, c in zip(records, cuts):
        r.cut = float(c)
    feature, splits = splits_from(records, {c: c for c in by_id.values()}, np.float32, where)
    leaf = java_float(leaves).astype(np.float64) if leaves else np.zeros(0)
    root = ET.fromstring("".join(ln.strip() for ln in body.splitlines()
                                 if ln.strip() and not ln.lstrip().startswith("#")))
    weight = java_float([tr.get("weight", "1") for tr in root.findall("tree")]).astype(np.float64)
    return ReadBack(feature, splits, leaf, weight, sem.SUM_RANKLIB)


MODEL = "model.ranklib"


def write(plan: Plan, out) -> list[str]:
    """Write the RankLib model (features by their SVMlight index) and the README into ``out``."""
    (out / MODEL).write_text(model_text(plan, ordinal=False), encoding="utf-8")
    (out / "README.md").write_text(_readme(plan), encoding="utf-8")
    return [MODEL, "README.md"]


def read(plan: Plan, out) -> ReadBack:
    """The RankLib model read back as RankLib reads it."""
    path = out / MODEL
    try:
        body = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot read it ({exc.strerror})") from None
    return read_model_text(body, plan, ordinal=False, where=str(path))


def _readme(plan: Plan) -> str:
    ids = feature_ids(plan, ordinal=False)
    used = ", ".join(f"{s.model_name} (id {ids[s.column]})" for s in plan.features[:10])
    return f"""# {plan.name}: a rankcli model as a RankLib LambdaMART model

{readme_exactness(plan)}

RankLib numbers features by their SVMlight index: column fN is feature N. The trees use {len(plan.features)}
features: {used}{', ...' if len(plan.features) > 10 else ''}.

Score a LETOR/SVMlight file with RankLib (or RankyMcRankFace, which the LTR plugins embed):

```bash
java -jar RankLib.jar -load {MODEL} -rank test.txt -score scores.txt
```

Missing values: RankLib reads a feature a line does not list, or NaN, as 0.
"""
