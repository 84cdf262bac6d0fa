"""Elasticsearch's own Learning To Rank (8.12 and later): a trained model of type ``ensemble`` with a
``learning_to_rank`` inference config.

The evaluation (x-pack ``core/ml/inference/trainedmodel/inference/TreeInferenceModel.java``): thresholds and leaf
values are doubles (``declareDouble``); a feature that is not a valid double (NaN, +-inf: ``Numbers.isValidDouble``)
takes ``default_left``; else ``decision_type`` ``lte`` goes left when ``value <= threshold``.
``InferenceModel.extractFeatures`` gives NaN for a feature the query extractor did not set (the query did not match,
``QueryFeatureExtractor.addFeatures``). ``EnsembleInferenceModel`` sums the trees with ``WeightedSum``:
``Arrays.stream(values).sum()``, Java's compensated summation, and ``LearningToRankRescorer`` keeps
``prediction.floatValue()``: the score is the float32 of that sum. Feature values are Lucene scores (float).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rankcli.core.trees import semantics as sem
from rankcli.core.trees.ensemble import Ensemble
from rankcli.errors import InputError
from rankcli.export_model.common import local_ids, number, placeholder, readme_exactness, readme_features, write_json
from rankcli.export_model.plan import Plan
from rankcli.export_model.readback import Accessor, ReadBack, SplitRecord, align, splits_from

MODEL = "trained_model.json"


def _tree(plan: Plan, t: int, names: list[str], position: dict[int, int]) -> dict:
    ens = plan.source.ensemble
    node_base, leaf_base = local_ids(plan, t)
    n_splits = int(ens.node_offsets[t + 1] - node_base)
    nodes = []
    for n in range(node_base, int(ens.node_offsets[t + 1])):
        left, right = (int(c - node_base) if c >= 0 else n_splits + int(-c - 1 - leaf_base)
                       for c in (ens.left[n], ens.right[n]))
        nodes.append({"node_index": n - node_base, "split_feature": position[int(ens.feature[n])],
                      "threshold": number(plan.written[n]), "decision_type": "lte",
                      "default_left": bool(plan.nan_left[n]), "left_child": left, "right_child": right})
    for i in range(leaf_base, int(ens.leaf_offsets[t + 1])):
        nodes.append({"node_index": n_splits + i - leaf_base, "leaf_value": [number(plan.leaf[i])]})
    return {"tree": {"feature_names": names, "tree_structure": nodes, "target_type": "regression"}}


def _extractor(spec) -> dict:
    d = spec.definition or {}
    out = {"feature_name": spec.name, "query": d.get("query", placeholder("query", spec))}
    if "default_score" in d:
        out["default_score"] = d["default_score"]
    return {"query_extractor": out}


def model_body(plan: Plan) -> dict:
    """The body of ``PUT _ml/trained_models/NAME``."""
    names = [s.name for s in plan.features]
    position = {s.column: i for i, s in enumerate(plan.features)}
    trees = [_tree(plan, t, names, position) for t in range(plan.source.ensemble.n_trees)]
    ensemble = {"feature_names": names, "target_type": "regression", "trained_models": trees,
                "aggregate_output": {"weighted_sum": {"weights": [1.0] * len(trees)}}}
    return {"description": f"rankcli export-model of {plan.source.path.name}",
            "input": {"field_names": names},
            "inference_config": {"learning_to_rank": {"feature_extractors": [_extractor(s) for s in plan.features]}},
            "definition": {"trained_model": {"ensemble": ensemble}}}


def write(plan: Plan, out: Path) -> list[str]:
    """Write the trained-model body and the README into ``out``."""
    write_json(out / MODEL, model_body(plan), indent=None)
    (out / "README.md").write_text(_readme(plan), encoding="utf-8")
    return [MODEL, "README.md"]


class _Flat(Accessor):
    """A ``tree_structure`` list, nodes addressed as ``(list, index)``."""

    def __init__(self, names: list[str]):
        self.names = names

    def is_leaf(self, node) -> bool:
        nodes, i = node
        return "left_child" not in nodes[i]

    def children(self, node) -> tuple:
        nodes, i = node
        return (nodes, nodes[i]["left_child"]), (nodes, nodes[i]["right_child"])

    def split(self, node) -> SplitRecord:
        nodes, i = node
        d = nodes[i]
        if d.get("decision_type", "lte") not in ("lte", "lt"):
            raise InputError(f"node {i}: decision_type {d['decision_type']!r} is not lte or lt")
        nan = sem.NAN_LEFT if d.get("default_left", False) else sem.NAN_RIGHT
        return SplitRecord(self.names[d["split_feature"]], float(d["threshold"]), d.get("decision_type") == "lt", nan)

    def leaf(self, node) -> float:
        nodes, i = node
        value = nodes[i]["leaf_value"]
        return float(value[0] if isinstance(value, list) else value)


def read(plan: Plan, out: Path) -> ReadBack:
    """The exported model read back as Elasticsearch reads it."""
    where = str(out / MODEL)
    try:
        ensemble = json.loads((out / MODEL).read_text(encoding="utf-8"))["definition"]["trained_model"]["ensemble"]
        trees = [m["tree"] for m in ensemble["trained_models"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{where}: not a trained-model ensemble ({exc})") from None
    roots, records, leaves = [], [], []
    ens = plan.source.ensemble
    for t, tree in enumerate(trees):  # each tree names its own features
        by_index = {d["node_index"]: d for d in tree["tree_structure"]}
        nodes = [by_index[i] for i in range(len(by_index))]
        roots.append((nodes, 0))
        sub_records, sub_leaves = align(_one_tree(ens, t), [(nodes, 0)], _Flat(tree["feature_names"]), where)
        records += sub_records
        leaves += sub_leaves
    feature, splits = splits_from(records, {s.name: s.column for s in plan.features}, np.float64, where,
                                  inf_is_missing=True)
    weights = ensemble.get("aggregate_output", {}).get("weighted_sum", {}).get("weights") or [1.0] * len(trees)
    return ReadBack(feature, splits, np.array(leaves, dtype=np.float64), np.array(weights, dtype=np.float64),
                    sem.SUM_KAHAN_FLOAT32)


def _one_tree(ens, t: int):
    """Tree ``t`` of ``ens`` as an ensemble of its own (each exported tree lists its own feature names)."""
    a, b = int(ens.node_offsets[t]), int(ens.node_offsets[t + 1])
    la, lb = int(ens.leaf_offsets[t]), int(ens.leaf_offsets[t + 1])

    def shift(codes):
        return np.where(codes >= 0, codes - a, codes + la)

    return Ensemble(ens.feature[a:b], ens.threshold[a:b], ens.decision_type[a:b], shift(ens.left[a:b]),
                    shift(ens.right[a:b]), ens.leaf_value[la:lb], shift(ens.roots[t:t + 1]),
                    np.array([0, b - a]), np.array([0, lb - la]))


def _readme(plan: Plan) -> str:
    host = "http://localhost:9200"
    return f"""# {plan.name}: a rankcli model for Elasticsearch's Learning To Rank (8.12 and later)

{readme_exactness(plan)}

{readme_features(plan, "the model's feature_names")}

Each feature is a `query_extractor`: a query template whose score is the feature (`{{{{query_text}}}}`-style
parameters come from the rescorer's `params`). Upload the model:

```bash
curl -XPUT '{host}/_ml/trained_models/{plan.name}' -H 'Content-Type: application/json' -d @trained_model.json
```

Rescore with it:

```bash
curl -XPOST '{host}/INDEX/_search' -H 'Content-Type: application/json' -d '{{
  "query": {{"match": {{"title": "rambo"}}}},
  "rescore": {{"window_size": 100, "learning_to_rank": {{"model_id": "{plan.name}",
    "params": {{"query_text": "rambo"}}}}}}
}}'
```

Missing values: a query that does not match a document gives no feature value, which takes each split's
`default_left` branch (set to LightGBM's branch for a missing value). The score Elasticsearch returns is the
float32 of the trees' sum. The learning_to_rank rescorer needs a subscription level that includes it.
"""
