"""Each engine evaluator against the engine's own test models and expected scores (tests/data/export_model/
PROVENANCE.md) and against hand-computed trees: the evaluators read files no rankcli model wrote."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rankcli.core.trees import semantics as sem
from rankcli.core.trees.semantics import engine_scores
from rankcli.errors import InputError
from rankcli.export_model import elasticsearch, ltr_plugin, ranklib, solr, vespa
from rankcli.export_model.readback import flatten, java_float, splits_from

DATA = Path(__file__).resolve().parent.parent / "data" / "export_model"

# o19s XGBoostJsonParserTests.testReadSimpleSplit: array form, "missing" names the yes branch
O19S_SIMPLE = ('[{"nodeid": 0, "split":"feat1", "depth":0, "split_condition":0.123, "yes":1, "no": 2, "missing":1,'
               '"children": [{"nodeid": 1, "depth": 1, "leaf": 0.5}, {"nodeid": 2, "depth": 1, "leaf": 0.2}]}]')


def _xgboost(definition, columns, rows, weights=None):
    roots, accessor, as_zero = ltr_plugin.parse_definition(definition, "golden")
    ens, records, leaves = flatten(roots, accessor)
    back = ltr_plugin.finish_xgboost(records, leaves, columns, as_zero, "golden")
    w = np.ones(len(roots)) if weights is None else np.asarray(weights, dtype=np.float64)
    return engine_scores(ens, back.splits, back.feature, back.leaf, w, back.summation, np.asarray(rows))


def test_o19s_xgboost_simple_split():
    rows = np.array([[0.124], [0.122], [np.float32(0.123)], [np.nan]], dtype=np.float32)
    got = _xgboost(O19S_SIMPLE, {"feat1": 0}, rows)
    assert got.tolist() == [float(np.float32(v)) for v in (0.2, 0.5, 0.2, 0.5)]  # 0.123 itself goes right: strict
    as_object = json.dumps({"splits": json.loads(O19S_SIMPLE.replace('"missing":1', '"missing":2'))})
    assert _xgboost(as_object, {"feat1": 0}, rows)[3] == float(np.float32(0.2))  # NaN follows "missing": no
    with pytest.raises(InputError, match="reg:logistic"):
        _xgboost(json.dumps({"objective": "reg:logistic", "splits": json.loads(O19S_SIMPLE)}), {"feat1": 0}, rows)


def _split(nodeid, feature, cut, yes, no, missing, left, right):
    return {"nodeid": nodeid, "depth": 0, "split": feature, "split_condition": cut, "yes": yes, "no": no,
            "missing": missing, "children": [left, right]}


def test_o19s_simple_tree_with_weights_and_missing():
    """NaiveAdditiveDecisionTreeTests.testScore/testScoreMissing on simple_tree.txt (trees of weight 3.4 and 2.8),
    transcribed as xgboost+json trees with the same splits, branches and missing nodes."""
    leaf = lambda i, v: {"nodeid": i, "leaf": v}  # noqa: E731
    tree1 = _split(0, "feature1", 2.3, 1, 2, 1,
                   _split(1, "feature2", 2.2, 3, 4, 4, leaf(3, 1.2),
                          _split(4, "feature3", 3.2, 5, 6, 5, leaf(5, 17), leaf(6, 11))), leaf(2, 3.2))
    tree2 = _split(0, "feature1", 0.1, 1, 2, 1, leaf(1, 23),
                   _split(2, "feature2", 1.8, 3, 4, 4, leaf(3, 15),
                          _split(4, "feature3", 3.2, 5, 6, 6, leaf(5, 3.2), leaf(6, 10))))
    columns = {"feature1": 0, "feature2": 1, "feature3": 2}
    rows = np.array([[1, 2, 3], [np.nan] * 3], dtype=np.float32)
    got = _xgboost(json.dumps([tree1, tree2]), columns, rows, weights=[np.float32(3.4), np.float32(2.8)])
    f = np.float32
    assert got[0] == float(f(f(1.2) * f(3.4)) + f(f(3.2) * f(2.8)))
    assert got[1] == float(f(f(17) * f(3.4)) + f(f(23) * f(2.8)))


def test_solr_missing_branch_model():
    model = json.loads((DATA / "solr_missing_branch.json").read_text())
    roots, accessor = solr.parse_model(model)
    ens, records, leaves = flatten(roots, accessor)
    columns = {f["name"]: i for i, f in enumerate(model["features"])}
    back = solr.finish(model, records, leaves, columns, "golden")
    rows = np.array([[1, 1, np.nan], [0, 1, np.nan]], dtype=np.float32)
    got = engine_scores(ens, back.splits, back.feature, back.leaf, back.weight, back.summation, rows)
    assert got.tolist() == [30.0, -120.0]
    assert back.splits.cut[0] == np.float32(0.5) + np.float32(1e-6)  # parseFloat("0.5f") + NODE_SPLIT_SLACK


def test_vespa_fast_forest_expression():
    """gbdt_test.cpp, "require that FastForest model evaluation works": 1+10, 4+40 and, all NaN, 4+10."""
    expr = "if((a<2),1.0,if((b<2),if((c<2),2.0,3.0),4.0))+if(!(c>=1),10.0,if((a<1),if((b<1),20.0,30.0),40.0))"
    roots, accessor = vespa.parse_expression(expr, "golden")
    ens, records, leaves = flatten(roots, accessor)
    feature, splits = splits_from(records, {"a": 0, "b": 1, "c": 2}, np.float64, "golden")
    rows = np.array([[0.5] * 3, [2.5] * 3, [np.nan] * 3])
    assert engine_scores(ens, splits, feature, np.array(leaves), np.ones(2), sem.SUM_DOUBLE, rows).tolist() == \
        [11.0, 44.0, 14.0]


def test_elasticsearch_tree_hand_computed():
    """A two-tree ensemble: lte on doubles, default_left for NaN and +-inf, Java's compensated sum, float32 out."""
    trees = [{"feature_names": ["x"], "tree_structure": [
        {"node_index": 0, "split_feature": 0, "threshold": 0.1, "decision_type": "lte", "default_left": True,
         "left_child": 1, "right_child": 2}, {"node_index": 1, "leaf_value": [1e16]},
        {"node_index": 2, "leaf_value": [2.0]}]},
        {"feature_names": ["x"], "tree_structure": [{"node_index": 0, "leaf_value": [1.0]}]}]
    accessor = elasticsearch._Flat(["x"])
    roots = [([tr["tree_structure"][i] for i in range(len(tr["tree_structure"]))], 0) for tr in trees]
    ens, records, leaves = flatten(roots, accessor)
    feature, splits = splits_from(records, {"x": 0}, np.float64, "golden", inf_is_missing=True)
    rows = np.array([[0.1], [np.nextafter(0.1, 1)], [np.nan], [np.inf], [-np.inf]])
    got = engine_scores(ens, splits, feature, np.array(leaves), np.ones(2), sem.SUM_KAHAN_FLOAT32, rows)
    big = float(np.float32(1e16 + 1.0))
    assert got.tolist() == [big, 3.0, big, big, big]


def test_ranklib_hand_computed():
    """RankLib's float accumulator of double products: s = (float)(s + leaf * weight)."""
    text = "\n".join(["## LambdaMART", "<ensemble>", '<tree id="1" weight="0.1">', "<split>",
                      "<feature> 2 </feature>", "<threshold> 0.5 </threshold>", '<split pos="left">',
                      "<output> 0.3 </output>", "</split>", '<split pos="right">', "<output> -1.7 </output>",
                      "</split>", "</split>", "</tree>", '<tree id="2" weight="0.1">', "<split>",
                      "<output> 0.05 </output>", "</split>", "</tree>", "</ensemble>"]) + "\n"

    roots = ranklib.parse_model_text(text, "golden")
    ens, records, leaves = flatten(roots, ranklib._Xml())
    for r in records:
        r.feature, r.cut = int(r.feature) - 1, float(java_float([r.cut])[0])
    feature, splits = splits_from(records, {0: 0, 1: 1}, np.float32, "golden")
    leaf = java_float(leaves).astype(np.float64)
    weight = java_float(["0.1", "0.1"]).astype(np.float64)
    rows = np.array([[9.0, 0.5], [9.0, np.nan], [9.0, 0.75]], dtype=np.float32)
    got = engine_scores(ens, splits, feature, leaf, weight, sem.SUM_RANKLIB, rows)
    f = np.float32
    w = float(f(0.1))

    def acc(*values):
        s = f(0)
        for v in values:
            s = f(float(s) + float(f(v)) * w)
        return float(s)

    assert got.tolist() == [acc(0.3, 0.05), acc(0.3, 0.05), acc(-1.7, 0.05)]  # NaN is 0, <= 0.5 goes left


def test_java_float_rounds_from_the_decimal():
    # 1 + 2^-24 is halfway between two float32s; a hair above it must round up, as Float.parseFloat does,
    # though the nearest double is the midpoint itself
    above = "1.000000059604644775390625000000000001"
    assert java_float([above])[0] == np.nextafter(np.float32(1), np.float32(2))
    assert java_float(["1.000000059604644775390625"])[0] == np.float32(1)  # the midpoint: ties to even
    assert java_float(["0.1", "-3.4028235e38", "1e-45"]).tolist() == [np.float32(0.1), np.float32(-3.4028235e38),
                                                                      np.float32(1e-45)]
