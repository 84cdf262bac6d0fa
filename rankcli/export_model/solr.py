"""Solr's LTR module: a feature store and a MultipleAdditiveTreesModel.

``solr/modules/ltr/.../model/MultipleAdditiveTreesModel.java``: every number is read from a string with
``Float.parseFloat`` (``setThreshold(String)``, ``setValue(String)``, ``setWeight(String)``); a threshold is stored
as ``parseFloat(s) + NODE_SPLIT_SLACK`` (``1E-6f``, float addition); ``scoreNode`` goes left when
``featureVector[i] <= threshold`` (a NaN goes right), and a tree that splits on a feature the model's ``features``
do not list scores 0; ``RegressionTree.score`` is ``weight * value`` in float and ``score`` sums the trees in float.
With ``"isNullSameAsZero": false`` in the model's params (SOLR-16596), a NaN feature value takes the node's
``missing`` branch (``left``; anything else is right) and is not normalised; a feature whose ``defaultValue`` is
``NaN`` gives NaN where it does not match. Otherwise an unmatched feature takes its ``defaultValue`` (0). The
normalisers compute in float: ``StandardNormalizer`` ``(v - avg) / std``, ``MinMaxNormalizer`` ``(v - min) /
delta`` with ``delta = max - min`` in float.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rankcli.core.trees import semantics as sem
from rankcli.core.trees.floats import SOLR_SLACK
from rankcli.errors import InputError
from rankcli.export_model.common import nested_text, readme_exactness, readme_features, reprs, text, write_json
from rankcli.export_model.plan import Plan
from rankcli.export_model.readback import Accessor, ReadBack, SplitRecord, align, java_float, splits_from

FEATURES, MODEL = "features.json", "model.json"
MODEL_CLASS = "org.apache.solr.ltr.model.MultipleAdditiveTreesModel"
_NORMS = {sem.NORM_STANDARD: "org.apache.solr.ltr.norm.StandardNormalizer",
          sem.NORM_MINMAX: "org.apache.solr.ltr.norm.MinMaxNormalizer"}


def _null_aware(plan: Plan) -> bool:
    return plan.key == "solr/null-aware"


def _feature(plan: Plan, spec) -> dict:
    d = spec.definition
    if d is None:
        feature = {"name": spec.name, "class": "rankcli.FillIn", "params": {
            "note": f"rankcli: fill in the definition of {spec.name} (model column {spec.model_name})"}}
    else:
        feature = {"name": spec.name, "class": d["class"], "params": dict(d.get("params") or {})}
    if _null_aware(plan):
        feature["params"]["defaultValue"] = "NaN"
    feature["store"] = plan.name
    return feature


def _trees(plan: Plan) -> list[str]:
    """Each tree as Solr's JSON text: ``{"weight": "1", "root": {...}}``, every number a string."""
    ens = plan.source.ensemble
    names = {s.column: json.dumps(s.name) for s in plan.features}
    cuts, leaves = reprs(plan.written), reprs(plan.leaf)
    null_aware = _null_aware(plan)

    def split_open(n: int, depth: int) -> str:
        missing = f'"missing": "{"left" if plan.nan_left[n] else "right"}", ' if null_aware else ""
        return f'{{"feature": {names[int(ens.feature[n])]}, "threshold": "{cuts[n]}", {missing}"left": '

    def leaf_text(i: int, depth: int) -> str:
        return f'{{"value": "{leaves[i]}"}}'

    return ['{"weight": "1", "root": ' + nested_text(plan, t, split_open, leaf_text, ', "right": ', "}") + "}"
            for t in range(ens.n_trees)]


def _norm(n) -> dict:
    if n.kind == sem.NORM_STANDARD:
        return {"class": _NORMS[n.kind], "params": {"avg": text(n.params["mean"]), "std": text(n.params["std"])}}
    return {"class": _NORMS[n.kind], "params": {"min": text(n.params["min"]), "max": text(n.params["max"])}}


def write(plan: Plan, out: Path) -> list[str]:
    """Write the feature store, the model and the README into ``out``."""
    write_json(out / FEATURES, [_feature(plan, s) for s in plan.features])
    features = []
    for s in plan.features:
        entry = {"name": s.name}
        if s.column in plan.norms:
            entry["norm"] = _norm(plan.norms[s.column])
        features.append(entry)
    params: dict = {"trees": "@TREES@"}
    if _null_aware(plan):
        params["isNullSameAsZero"] = False
    text = json.dumps({"store": plan.name, "class": MODEL_CLASS, "name": plan.name, "features": features,
                       "params": params}, allow_nan=False)
    text = text.replace('"@TREES@"', "[" + ", ".join(_trees(plan)) + "]", 1)
    (out / MODEL).write_text(text + "\n", encoding="utf-8")
    (out / "README.md").write_text(_readme(plan), encoding="utf-8")
    return [FEATURES, MODEL, "README.md"]


class _Nodes(Accessor):
    def __init__(self, null_aware: bool):
        self.null_aware = null_aware

    def is_leaf(self, node) -> bool:
        return "feature" not in node

    def children(self, node) -> tuple:
        return node["left"], node["right"]

    def split(self, node) -> SplitRecord:
        nan = (sem.NAN_LEFT if node.get("missing") == "left" else sem.NAN_RIGHT) if self.null_aware else sem.NAN_AS_ZERO
        return SplitRecord(node["feature"], str(node["threshold"]), False, nan)

    def leaf(self, node) -> str:
        return str(node.get("value", "0"))


def _norm_arrays(model: dict, feature: np.ndarray, columns: dict) -> tuple:
    kind = np.zeros(feature.shape[0], dtype=np.int64)
    center = np.zeros(feature.shape[0], dtype=np.float32)
    scale = np.ones(feature.shape[0], dtype=np.float32)
    for f in model["features"]:
        norm = f.get("norm")
        if not norm or norm.get("class", "").endswith("IdentityNormalizer"):
            continue
        at = feature == columns[f["name"]]
        p = norm["params"]
        if norm["class"] == _NORMS[sem.NORM_STANDARD]:
            kind[at], center[at], scale[at] = sem.NORM_STANDARD, java_float([p["avg"]])[0], java_float([p["std"]])[0]
        else:
            lo, hi = java_float([p["min"]])[0], java_float([p["max"]])[0]
            kind[at], center[at], scale[at] = sem.NORM_MINMAX, lo, hi - lo  # delta = max - min, in float
    return kind, center, scale


def parse_model(model: dict) -> tuple[list, Accessor]:
    """A Solr model's trees: ``(roots, accessor)``."""
    null_aware = model["params"].get("isNullSameAsZero", True) is False
    return [tr["root"] for tr in model["params"]["trees"]], _Nodes(null_aware)


def finish(model: dict, records: list, leaves: list, columns: dict, where: str) -> ReadBack:
    """The :class:`ReadBack` of a parsed Solr model (``columns``: feature name -> column): thresholds
    ``parseFloat + 1E-6f``, values and weights ``parseFloat``, the normalisers."""
    cuts = java_float([r.cut for r in records]) + SOLR_SLACK if records else np.zeros(0, np.float32)
    for r, c in zip(records, cuts):
        r.cut = float(c)
    feature, splits = splits_from(records, columns, np.float32, where)
    if any(f.get("norm") for f in model["features"]):
        splits.norm, splits.norm_center, splits.norm_scale = _norm_arrays(model, feature, columns)
    weight = java_float([str(tr["weight"]) for tr in model["params"]["trees"]]).astype(np.float64)
    leaf = java_float(leaves).astype(np.float64) if leaves else np.zeros(0)
    return ReadBack(feature, splits, leaf, weight, sem.SUM_FLOAT32)


def read(plan: Plan, out: Path) -> ReadBack:
    """The exported model read back as Solr reads it."""
    where = str(out / MODEL)
    try:
        model = json.loads((out / MODEL).read_text(encoding="utf-8"))
        roots, accessor = parse_model(model)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{where}: not a Solr model ({exc})") from None
    records, leaves = align(plan.source.ensemble, roots, accessor, where)
    return finish(model, records, leaves, {s.name: s.column for s in plan.features}, where)


def _readme(plan: Plan) -> str:
    host = "http://localhost:8983/solr/COLLECTION"
    missing = ("`isNullSameAsZero` is false and every feature's `defaultValue` is `NaN`, so a feature that does not "
               "match is missing and takes each split's `missing` branch (Solr with SOLR-16596)" if _null_aware(plan)
               else "a feature that does not match takes its `defaultValue`, 0, as in the training data")
    return f"""# {plan.name}: a rankcli model for Solr's LTR module

{readme_exactness(plan)}

{readme_features(plan, "the model's features list")}

Upload the feature store, then the model (the features first: the model names them):

```bash
curl -XPUT '{host}/schema/feature-store' --data-binary @features.json -H 'Content-type:application/json'
curl -XPUT '{host}/schema/model-store' --data-binary @model.json -H 'Content-type:application/json'
```

Rerank the top documents of a query with it (`efi.*` fill the features' `${{...}}` parameters):

```bash
curl '{host}/query' --data-urlencode 'q=rambo' \\
  --data-urlencode 'rq={{!ltr model={plan.name} reRankDocs=100 efi.user_query=rambo}}' --data-urlencode 'fl=id,score'
```

Missing values: {missing}. Log features with `fl=[features store={plan.name} efi.user_query=...]` and bring
them back with `rankcli convert --from solr-features LOG --qrels JUDGMENTS`.
"""
