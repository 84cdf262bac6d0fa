"""ONNX: one ``ai.onnx.ml`` ``TreeEnsembleRegressor`` (opset 3) over a double input, run by onnxruntime.

onnxruntime (``onnxruntime/core/providers/cpu/ml/treeregressor.cc``) instantiates
``TreeEnsembleCommon<T, ThresholdType, float>`` with the threshold type of the *input*: a float input would hold
every threshold in float32, whatever ``nodes_values_as_tensor`` says, and sum the leaves in float32. So the input
is double: thresholds (``nodes_values_as_tensor``) and leaf weights (``target_weights_as_tensor``) are LightGBM's
doubles, ``BRANCH_LEQ`` is LightGBM's ``<=``, ``nodes_missing_value_tracks_true`` sends a NaN to the true (left)
branch where LightGBM sends it left, and the leaves are summed in double; the output tensor is float32. The input
has one column per model feature, in the model's order (``features``; the doc string names them).
"""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np

from rankcli.core.trees import semantics as sem
from rankcli.errors import InputError, UsageError
from rankcli.export_model.common import readme_exactness, readme_features
from rankcli.export_model.plan import Plan
from rankcli.export_model.readback import Accessor, ReadBack, SplitRecord, align, splits_from

MODEL = "model.onnx"
#: The versions the export and the check need (``rankcli[onnx]``).
ONNX_MIN, ONNXRUNTIME_MIN = "1.14", "1.16"
PIP_LINE = "pip install 'rankcli[onnx]'"


def require(module: str):
    """Import ``onnx`` or ``onnxruntime``, or a usage error (exit 2) with the pip line."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise UsageError(f"--target onnx needs the {module} package ({module} >= "
                         f"{ONNX_MIN if module == 'onnx' else ONNXRUNTIME_MIN}): {PIP_LINE}") from None


def _attributes(plan: Plan) -> dict:
    ens = plan.source.ensemble
    tree_ids, node_ids, feats, modes, values, true_ids, false_ids, tracks = ([] for _ in range(8))
    t_tree, t_node, t_weight = [], [], []
    for t in range(ens.n_trees):
        a, b = int(ens.node_offsets[t]), int(ens.node_offsets[t + 1])
        la = int(ens.leaf_offsets[t])

        def ident(c, a=a, b=b, la=la):
            return int(c - a) if c >= 0 else (b - a) + int(-c - 1 - la)

        for n in range(a, b):
            tree_ids.append(t), node_ids.append(n - a), feats.append(int(ens.feature[n])), modes.append("BRANCH_LEQ")
            values.append(float(plan.written[n])), true_ids.append(ident(ens.left[n]))
            false_ids.append(ident(ens.right[n])), tracks.append(int(bool(plan.nan_left[n])))
        for i in range(la, int(ens.leaf_offsets[t + 1])):
            tree_ids.append(t), node_ids.append((b - a) + i - la), feats.append(0), modes.append("LEAF")
            values.append(0.0), true_ids.append(0), false_ids.append(0), tracks.append(0)
            t_tree.append(t), t_node.append((b - a) + i - la), t_weight.append(float(plan.leaf[i]))
    return dict(nodes_treeids=tree_ids, nodes_nodeids=node_ids, nodes_featureids=feats, nodes_modes=modes,
                nodes_values=values, nodes_truenodeids=true_ids, nodes_falsenodeids=false_ids,
                nodes_missing_value_tracks_true=tracks, target_treeids=t_tree, target_nodeids=t_node,
                target_weights=t_weight)


def model_proto(plan: Plan):
    """The ONNX model of ``plan``."""
    onnx = require("onnx")
    from onnx import TensorProto, helper, numpy_helper

    a = _attributes(plan)
    width = len(plan.source.feature_names)
    node = helper.make_node(
        "TreeEnsembleRegressor", ["features"], ["score"], domain="ai.onnx.ml", n_targets=1, aggregate_function="SUM",
        post_transform="NONE", nodes_treeids=a["nodes_treeids"], nodes_nodeids=a["nodes_nodeids"],
        nodes_featureids=a["nodes_featureids"], nodes_modes=a["nodes_modes"],
        nodes_values_as_tensor=numpy_helper.from_array(np.array(a["nodes_values"], dtype=np.float64)),
        nodes_truenodeids=a["nodes_truenodeids"], nodes_falsenodeids=a["nodes_falsenodeids"],
        nodes_missing_value_tracks_true=a["nodes_missing_value_tracks_true"], target_ids=[0] * len(a["target_nodeids"]),
        target_treeids=a["target_treeids"], target_nodeids=a["target_nodeids"],
        target_weights_as_tensor=numpy_helper.from_array(np.array(a["target_weights"], dtype=np.float64)))
    doc = "columns: " + " ".join(plan.source.feature_names)
    graph = helper.make_graph([node], plan.name, [helper.make_tensor_value_info("features", TensorProto.DOUBLE,
                                                                                 [None, width], doc_string=doc)],
                              [helper.make_tensor_value_info("score", TensorProto.FLOAT, [None, 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)],
                              producer_name="rankcli export-model")
    model.ir_version = min(model.ir_version, 9)
    onnx.checker.check_model(model)
    return model


def write(plan: Plan, out: Path) -> list[str]:
    """Write ``model.onnx`` and the README into ``out``."""
    (out / MODEL).write_bytes(model_proto(plan).SerializeToString())
    (out / "README.md").write_text(_readme(plan), encoding="utf-8")
    return [MODEL, "README.md"]


class _Arrays(Accessor):
    def __init__(self, attrs: dict, index: dict, names: list[str]):
        self.a, self.index, self.names = attrs, index, names

    def is_leaf(self, node) -> bool:
        return self.a["nodes_modes"][node] == b"LEAF"

    def children(self, node) -> tuple:
        t = self.a["nodes_treeids"][node]
        return (self.index[(t, self.a["nodes_truenodeids"][node])],
                self.index[(t, self.a["nodes_falsenodeids"][node])])

    def split(self, node) -> SplitRecord:
        mode = self.a["nodes_modes"][node]
        if mode not in (b"BRANCH_LEQ", b"BRANCH_LT"):
            raise InputError(f"node {node}: mode {mode.decode()} is not BRANCH_LEQ or BRANCH_LT")
        tracks = self.a["nodes_missing_value_tracks_true"]
        nan = sem.NAN_LEFT if tracks and tracks[node] else sem.NAN_RIGHT
        return SplitRecord(self.names[self.a["nodes_featureids"][node]], float(self.a["nodes_values"][node]),
                           mode == b"BRANCH_LT", nan)

    def leaf(self, node) -> float:
        return float(self.a["weights"][(self.a["nodes_treeids"][node], self.a["nodes_nodeids"][node])])


def read(plan: Plan, out: Path) -> ReadBack:
    """The ONNX file read back (its structure and numbers; onnxruntime itself scores in ``--check``)."""
    onnx = require("onnx")
    from onnx import helper, numpy_helper

    where = str(out / MODEL)
    node = onnx.load(str(out / MODEL)).graph.node[0]
    a = {}
    for attr in node.attribute:
        value = helper.get_attribute_value(attr)
        a[attr.name] = numpy_helper.to_array(value).tolist() if attr.type == attr.TENSOR else value
    a["nodes_values"] = a.get("nodes_values_as_tensor", a.get("nodes_values"))
    weights = a.get("target_weights_as_tensor", a.get("target_weights"))
    a["weights"] = {(t, n): w for t, n, w in zip(a["target_treeids"], a["target_nodeids"], weights)}
    index = {(t, n): i for i, (t, n) in enumerate(zip(a["nodes_treeids"], a["nodes_nodeids"]))}
    roots = [index[(t, 0)] for t in sorted(set(a["nodes_treeids"]))]
    names = list(plan.source.feature_names)
    records, leaves = align(plan.source.ensemble, roots, _Arrays(a, index, names), where)
    columns = {n: i for i, n in enumerate(names)}
    feature, splits = splits_from(records, columns, np.float64, where)
    return ReadBack(feature, splits, np.array(leaves, dtype=np.float64), np.ones(len(roots)), sem.SUM_DOUBLE_FLOAT32)


def score(out: Path, features: np.ndarray) -> np.ndarray:
    """``model.onnx`` run by onnxruntime on ``features`` (rows, model columns), as float64."""
    ort = require("onnxruntime")
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(out / MODEL), options, providers=["CPUExecutionProvider"])
    x = np.ascontiguousarray(features, dtype=np.float64)
    return session.run(None, {"features": x})[0][:, 0].astype(np.float64)


def _readme(plan: Plan) -> str:
    return f"""# {plan.name}: a rankcli model as ONNX (ai.onnx.ml TreeEnsembleRegressor, opset 3)

{readme_exactness(plan)}

{readme_features(plan, "columns of the input")}

The input `features` is a double tensor `[rows, {len(plan.source.feature_names)}]`, one column per model feature in
the model's order ({', '.join(plan.source.feature_names[:6])}{', ...' if len(plan.source.feature_names) > 6 else ''});
give float32 values as doubles (exact). A double input makes onnxruntime hold the thresholds and sum the trees in
double; the output `score` is float32. Needs onnxruntime {ONNXRUNTIME_MIN} or later.

```bash
python -c "import numpy as np, onnxruntime as ort
s = ort.InferenceSession('{MODEL}')
print(s.run(None, {{'features': np.zeros((1, {len(plan.source.feature_names)}))}})[0])"
```
"""
