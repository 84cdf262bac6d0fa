"""The LTR plugins (o19s Elasticsearch LTR, OpenSearch LTR): a featureset and a ``_createmodel`` body.

``model/xgboost+json`` (``ranker/parser/XGBoostJsonParser.java``): an object ``{"objective", "splits"}`` whose
``objective`` picks the score transform (``reg:linear``: none); each split node has ``nodeid``, ``depth``,
``split`` (a feature name), ``split_condition`` (read as float: ``declareFloat``), ``yes``/``no`` (the node ids of
``children[0]``/``children[1]``) and ``missing`` (the branch of a NaN); a leaf ``nodeid`` and ``leaf`` (float).
``ranker/dectree/NaiveAdditiveDecisionTree.java``: a NaN feature (``SparseFeatureVector``: an unmatched feature is
NaN) takes ``missing``; else left when ``threshold > value``; ``sum += weight * tree.eval`` in float, weight 1. The
missing branch is honoured from o19s 1.5.9 (Elasticsearch 8.11.4) and OpenSearch LTR 3.8.0.0; before that a NaN goes
right (OpenSearch 3.2-3.7) or an unmatched feature is 0 (older). OpenSearch's ``missing_as_zero`` (its master
branch) makes a missing feature 0. ``model/ranklib``: :mod:`rankcli.export_model.ranklib`, features numbered by their
position in the featureset. Feature normalisers (``feature_normalizers``: ``standard`` mean/standard_deviation,
``min_max`` minimum/maximum) compute in float (``StandardFeatureNormalizer``, ``MinMaxFeatureNormalizer``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rankcli.core.trees import semantics as sem
from rankcli.errors import InputError
from rankcli.export_model import ranklib
from rankcli.export_model.common import (
    local_ids,
    nested_text,
    placeholder,
    readme_exactness,
    readme_features,
    reprs,
    write_json,
)
from rankcli.export_model.plan import Plan
from rankcli.export_model.readback import Accessor, ReadBack, SplitRecord, align, splits_from

FEATURESET, MODEL = "featureset.json", "model.json"


def _feature(spec) -> dict:
    d = spec.definition or {}
    return {"name": spec.name, "params": d.get("params", ["keywords"]),
            "template_language": d.get("template_language", "mustache"),
            "template": d.get("template", placeholder("query", spec))}


def _xgboost_trees(plan: Plan) -> list[str]:
    """Each tree as xgboost+json text: node ids LightGBM's (splits ``0..n-2``, leaves ``n-1+leaf``), children
    ``[yes, no]``."""
    ens = plan.source.ensemble
    names = {s.column: json.dumps(s.name) for s in plan.features}
    cuts, leaves = reprs(plan.written), reprs(plan.leaf)
    out = []
    for t in range(ens.n_trees):
        node_base, leaf_base = local_ids(plan, t)
        n_splits = int(ens.node_offsets[t + 1] - node_base)

        def ident(code: int, node_base=node_base, leaf_base=leaf_base, n_splits=n_splits) -> int:
            return code - node_base if code >= 0 else n_splits + (-code - 1 - leaf_base)

        def split_open(n: int, depth: int) -> str:
            yes, no = ident(int(ens.left[n])), ident(int(ens.right[n]))
            return (f'{{"nodeid": {ident(n)}, "depth": {depth}, "split": {names[int(ens.feature[n])]}, '
                    f'"split_condition": {cuts[n]}, "yes": {yes}, "no": {no}, '
                    f'"missing": {yes if plan.nan_left[n] else no}, "children": [')

        def leaf_text(i: int, depth: int) -> str:
            return f'{{"nodeid": {ident(-i - 1)}, "depth": {depth}, "leaf": {leaves[i]}}}'

        out.append(nested_text(plan, t, split_open, leaf_text, ", ", "]}"))
    return out


def _normalizers(plan: Plan) -> dict:
    out = {}
    for c, n in plan.norms.items():
        name = plan.feature_of(c).name
        if n.kind == sem.NORM_STANDARD:
            out[name] = {"standard": {"mean": n.params["mean"], "standard_deviation": n.params["std"]}}
        else:
            out[name] = {"min_max": {"minimum": n.params["min"], "maximum": n.params["max"]}}
    return out


def model_body(plan: Plan) -> str:
    """The ``_createmodel`` body, as JSON text."""
    xgboost = plan.key.split("/")[1] != "ranklib"
    definition: object = "@TREES@" if xgboost else ranklib.model_text(plan, ordinal=True)
    model = {"type": "model/xgboost+json" if xgboost else "model/ranklib", "definition": definition}
    if plan.norms:
        model["feature_normalizers"] = _normalizers(plan)
    text = json.dumps({"model": {"name": plan.name, "model": model}}, allow_nan=False)
    if not xgboost:
        return text
    head = '{"objective": "reg:linear", ' + ('"missing_as_zero": true, ' if plan.key.endswith("missing-as-zero")
                                               else "")
    return text.replace('"@TREES@"', head + '"splits": [' + ", ".join(_xgboost_trees(plan)) + "]}", 1)


def write(plan: Plan, out: Path) -> list[str]:
    """Write the featureset, the model body and the README into ``out``."""
    write_json(out / FEATURESET, {"featureset": {"name": plan.name, "features": [_feature(s) for s in plan.features]}})
    (out / MODEL).write_text(model_body(plan) + "\n", encoding="utf-8")
    (out / "README.md").write_text(_readme(plan), encoding="utf-8")
    return [FEATURESET, MODEL, "README.md"]


class _Json(Accessor):
    def is_leaf(self, node) -> bool:
        return "leaf" in node

    def children(self, node) -> tuple:
        kids = node["children"]
        if [k["nodeid"] for k in kids] != [node["yes"], node["no"]]:
            raise InputError(f"split {node.get('nodeid')}: yes/no do not name children[0]/children[1]")
        return kids[0], kids[1]

    def split(self, node) -> SplitRecord:
        nan = sem.NAN_LEFT if node.get("missing") == node["yes"] else sem.NAN_RIGHT
        return SplitRecord(node["split"], float(np.float32(float(node["split_condition"]))), True, nan)

    def leaf(self, node) -> float:
        return float(np.float32(float(node["leaf"])))


def _norm_arrays(plan: Plan, model: dict, feature: np.ndarray, columns: dict) -> tuple:
    kind = np.zeros(feature.shape[0], dtype=np.int64)
    center = np.zeros(feature.shape[0], dtype=np.float32)
    scale = np.ones(feature.shape[0], dtype=np.float32)
    for name, norm in (model.get("feature_normalizers") or {}).items():
        at = feature == columns[name]
        if "standard" in norm:
            kind[at], center[at] = sem.NORM_STANDARD, np.float32(norm["standard"]["mean"])
            scale[at] = np.float32(norm["standard"]["standard_deviation"])
        else:
            lo, hi = np.float32(norm["min_max"]["minimum"]), np.float32(norm["min_max"]["maximum"])
            kind[at], center[at], scale[at] = sem.NORM_MINMAX, lo, hi - lo  # (value - min) / (max - min), float
    return kind, center, scale


#: xgboost+json objectives whose score is the trees' sum (XGBoostJsonParser.setNormalizer: NOOP_NORMALIZER).
IDENTITY = ("binary:logitraw", "rank:ndcg", "rank:map", "rank:pairwise", "reg:linear")


def parse_definition(definition, where: str) -> tuple[list, Accessor, bool]:
    """An xgboost+json definition (the array of trees, or the object with ``splits``): ``(roots, accessor,
    missing_as_zero)``. A sigmoid objective is refused: the evaluator adds the trees only."""
    if isinstance(definition, str):
        definition = json.loads(definition)
    if isinstance(definition, dict):
        objective = definition.get("objective", "reg:linear")
        if objective not in IDENTITY:
            raise InputError(f"{where}: objective {objective!r} transforms the sum; rankcli evaluates "
                             f"{', '.join(IDENTITY)}")
        return definition["splits"], _Json(), bool(definition.get("missing_as_zero"))
    return definition, _Json(), False


def finish_xgboost(records: list, leaves: list, columns: dict, missing_as_zero: bool, where: str) -> ReadBack:
    """The :class:`ReadBack` of parsed xgboost+json trees (``columns``: feature name -> column)."""
    feature, splits = splits_from(records, columns, np.float32, where)
    if missing_as_zero:
        splits.nan[:] = sem.NAN_AS_ZERO
    return ReadBack(feature, splits, np.array(leaves, dtype=np.float64), np.ones(0), sem.SUM_FLOAT32)


def read(plan: Plan, out: Path) -> ReadBack:
    """The exported model read back as the plugin reads it."""
    where = str(out / MODEL)
    try:
        model = json.loads((out / MODEL).read_text(encoding="utf-8"))["model"]["model"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{where}: not a _createmodel body ({exc})") from None
    columns = {s.name: s.column for s in plan.features}
    if model["type"] == "model/ranklib":
        back = ranklib.read_model_text(model["definition"], plan, ordinal=True, where=where)
    else:
        roots, accessor, as_zero = parse_definition(model["definition"], where)
        records, leaves = align(plan.source.ensemble, roots, accessor, where)
        back = finish_xgboost(records, leaves, columns, as_zero, where)
        back.weight = np.ones(len(roots))
    if model.get("feature_normalizers"):
        back.splits.norm, back.splits.norm_center, back.splits.norm_scale = _norm_arrays(plan, model, back.feature,
                                                                                       columns)
    return back


def _readme(plan: Plan) -> str:
    os_ = plan.target.name == "opensearch-ltr"
    api = "_plugins/_ltr" if os_ else "_ltr"
    engine = "OpenSearch with the Learning to Rank plugin" if os_ else "Elasticsearch with the o19s LTR plugin"
    host = "http://localhost:9200"
    kind = plan.key.split("/")[1]
    missing = ("missing features are read as 0 (`missing_as_zero`, OpenSearch LTR's master branch)"
               if plan.key.endswith("missing-as-zero") else
               "a feature the query does not match is missing and takes each split's `missing` branch (honoured "
               "from o19s 1.5.9 / Elasticsearch 8.11.4 and OpenSearch LTR 3.8.0.0; older versions send it right "
               "or read it as 0)" if kind == "xgboost+json" else "a feature the query does not match is 0")
    return f"""# {plan.name}: a rankcli model for {engine} (`model/{kind}`)

{readme_exactness(plan)}

{readme_features(plan, "the featureset's order")}

Load it (the feature store once, then the featureset and the model):

```bash
curl -XPUT '{host}/{api}'
curl -XPOST '{host}/{api}/_featureset/{plan.name}' -H 'Content-Type: application/json' -d @featureset.json
curl -XPOST '{host}/{api}/_featureset/{plan.name}/_createmodel' -H 'Content-Type: application/json' -d @model.json
```

Rescore the top documents of a query with it:

```bash
curl -XPOST '{host}/INDEX/_search' -H 'Content-Type: application/json' -d '{{
  "query": {{"match": {{"title": "rambo"}}}},
  "rescore": {{"window_size": 100, "query": {{"rescore_query": {{
    "sltr": {{"params": {{"keywords": "rambo"}}, "model": "{plan.name}"}}}}}}}}
}}'
```

Missing values: {missing}. Log the features of judged queries with the `ltr_log` search extension and bring them
back with `rankcli convert --from ltr-log LOG --qrels JUDGMENTS`.
"""
