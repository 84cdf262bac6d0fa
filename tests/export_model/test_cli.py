"""rankcli export-model from the command line: refusals (exit 3, naming the split), the gate (exit 5), usage errors
(exit 2), the output directory's rules (exit 4), --feature-map, --json; and export pointing models to it."""

from __future__ import annotations

import json
import re
import shutil
import sys

import numpy as np
import pytest

from rankcli.formats.parquet import read_dataset, write_dataset
from rankcli.train.model import write_model_dir


def _copy_with_text(models, tmp_path, name: str, edit) -> str:
    """A hand-made model directory: the lambdamart model with ``edit(model_text)``, its checksum recomputed."""
    src = models["lambdamart"]
    info = json.loads((src / "rankcli.json").read_text())
    info.pop("model_sha256")
    write_model_dir(tmp_path / name, edit((src / "model.txt").read_text()), info)
    return str(tmp_path / name)


def _first_decision(text: str, value: int) -> str:
    head, tree = text.split("Tree=0\n", 1)
    line = re.search(r"^decision_type=(.*)$", tree, re.M)
    codes = line.group(1).split()
    codes[0] = str(value)
    return head + "Tree=0\n" + tree.replace(line.group(0), "decision_type=" + " ".join(codes), 1)


def test_a_categorical_split_is_refused(models, tmp_path, run):
    import lightgbm

    ds = read_dataset(models["data"] / "train.parquet")
    x = ds.features.copy()
    x[:, 2] = np.floor(x[:, 2] * 5)
    train = lightgbm.Dataset(x, ds.labels, group=np.diff(ds.offsets), feature_name=ds.feature_names,
                             categorical_feature=[2], params={"verbose": -1, "min_data_per_group": 1})
    booster = lightgbm.train({"objective": "lambdarank", "verbose": -1, "num_threads": 1, "cat_smooth": 1,
                              "min_data_per_group": 1, "max_cat_to_onehot": 8}, train, num_boost_round=5)
    text = booster.model_to_string()
    assert "num_cat=1" in text or "num_cat=2" in text, "the model made no categorical split"
    model = _copy_with_text(models, tmp_path, "cat", lambda _: text)
    status, _, err = run("export-model", model, "--target", "solr", "-o", tmp_path / "out")
    assert status == 3 and "by category" in err and re.search(r"tree \d+ split \d+ splits feature f3", err)
    assert not (tmp_path / "out").exists()


def test_a_per_query_normalisation_is_refused(models, tmp_path, run):
    from tests.conftest import SAMPLE

    d = tmp_path / "q"
    assert run("convert", SAMPLE / "letor", "-o", d, "--normalize", "zscore")[0] == 0
    assert run("train", d / "train.parquet", "-o", tmp_path / "m", "--trees", "2", "--threads", "1")[0] == 0
    status, _, err = run("export-model", tmp_path / "m", "-t", "vespa", "-o", tmp_path / "out")
    assert status == 3 and "zscore per query" in err and "--per dataset" in err


def test_a_missing_rule_ranklib_cannot_state(models, tmp_path, run):
    # missing type NaN, default right, on a split whose 0 goes left (threshold > 0): RankLib reads NaN as 0
    model = _copy_with_text(models, tmp_path, "nan", lambda t: _first_decision(t, 8))
    status, _, err = run("export-model", model, "-t", "ranklib", "-o", tmp_path / "r")
    assert status == 3 and "tree 0 split 0" in err and "missing branches" in err
    status, out, _ = run("export-model", model, "-t", "elasticsearch-ltr", "-o", tmp_path / "x", "--check",
                         models["data"] / "test.parquet", "--json")
    assert status == 0 and json.loads(out)["check"]["passed"]
    definition = json.loads((tmp_path / "x" / "model.json").read_text())["model"]["model"]["definition"]
    root = definition["splits"][0]
    assert root["missing"] == root["no"]
    status, out, _ = run("export-model", model, "-t", "solr", "-o", tmp_path / "s", "--check",
                         models["data"] / "test.parquet", "--json")
    solr_model = json.loads((tmp_path / "s" / "model.json").read_text())
    assert status == 0 and solr_model["params"]["isNullSameAsZero"] is False
    assert solr_model["params"]["trees"][0]["root"]["missing"] == "right"
    assert all(f["params"]["defaultValue"] == "NaN" for f in json.loads((tmp_path / "s" / "features.json").read_text()))


def test_a_zero_as_missing_rule_no_threshold_states(models, tmp_path, run):
    # missing type Zero, default right, on a split at 0.47: (-inf, -1e-35) and (1e-35, 0.47] left, zero right
    model = _copy_with_text(models, tmp_path, "zero", lambda t: _first_decision(t, 4))
    status, _, err = run("export-model", model, "-t", "onnx", "-o", tmp_path / "o")
    assert status == 3 and "tree 0 split 0" in err and "zero_as_missing" in err
    assert re.search(r"\(f\d+ <= \d\.\d+\)", err) and "np." not in err  # the threshold as a number, not numpy's repr


def test_the_check_gate_exits_5(models, tmp_path, run):
    """Solr cannot state LightGBM's zero-versus-positive splits: values in (0, 1e-35] go the other way."""
    ds = read_dataset(models["data"] / "test.parquet")
    ds.features[:, :] = np.where(ds.features == 0, np.float32(1e-36), ds.features)
    write_dataset(tmp_path / "tiny.parquet", ds)
    status, out, err = run("export-model", models["lambdamart"], "-t", "solr", "-o", tmp_path / "s", "--check",
                           tmp_path / "tiny.parquet")
    assert status == 5 and "FAILED" in out and "take another branch" in err
    assert (tmp_path / "s" / "model.json").exists()  # the export is written; the gate reports
    status, _, _ = run("export-model", models["lambdamart"], "-t", "elasticsearch-ltr", "-o", tmp_path / "e",
                       "--check", tmp_path / "tiny.parquet")
    assert status == 0


@pytest.mark.parametrize("args, message", [
    (["-t", "vespa", "--engine-normalizer"], "no feature normalisers"),
    (["-t", "solr", "--model-type", "ranklib"], "--model-type is for the LTR plugins"),
    (["-t", "elasticsearch", "--missing-as-zero"], "--missing-as-zero"),
    (["-t", "bogus"], "--target: choose one of"),
    (["-t", "elasticsearch-ltr", "--engine-normalizer"], "trained on raw features"),
])
def test_usage_errors(models, tmp_path, run, args, message):
    model = models["zscore"] if "vespa" in args else models["lambdamart"]
    status, _, err = run("export-model", model, "-o", tmp_path / "o", *args)
    assert status == 2 and message in err


def test_onnx_without_its_packages_gives_the_pip_line(models, tmp_path, run, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    status, _, err = run("export-model", models["lambdamart"], "-t", "onnx", "-o", tmp_path / "o")
    assert status == 2 and "pip install 'rankcli[onnx]'" in err


def test_output_directory_rules(models, tmp_path, run):
    args = ["export-model", models["lambdamart"], "-t", "ranklib", "-o", tmp_path / "o"]
    assert run(*args)[0] == 0
    assert run(*args)[0] == 4
    assert run(*args, "--overwrite")[0] == 0
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    status, _, err = run("export-model", models["lambdamart"], "-t", "ranklib", "-o", tmp_path / "mine", "--overwrite")
    assert status == 4 and (tmp_path / "mine" / "notes.txt").read_text() == "mine"


def test_feature_map_json_and_tsv(models, tmp_path, run):
    mapping = {"f1": {"name": "title_bm25", "elasticsearch-ltr": {"template": {"match": {"title": "{{keywords}}"}}},
                      "solr": {"class": "org.apache.solr.ltr.feature.SolrFeature",
                               "params": {"q": "{!dismax qf=title}${user_query}"}}},
               "f20": "body_bm25"}
    (tmp_path / "map.json").write_text(json.dumps(mapping))
    assert run("export-model", models["lambdamart"], "-t", "elasticsearch-ltr", "-o", tmp_path / "e",
               "--feature-map", tmp_path / "map.json")[0] == 0
    features = {f["name"]: f for f in json.loads((tmp_path / "e" / "featureset.json").read_text())["featureset"][
        "features"]}
    assert features["title_bm25"]["template"] == {"match": {"title": "{{keywords}}"}}
    assert "rankcli_fill_in" in features["body_bm25"]["template"] and "f4" in features
    assert "body_bm25" in (tmp_path / "e" / "README.md").read_text()
    (tmp_path / "map.tsv").write_text("# feature\tname\tdefinition\nf1\ttitle_bm25\tbm25(title)\n")
    assert run("export-model", models["lambdamart"], "-t", "vespa", "-o", tmp_path / "v", "--feature-map",
               tmp_path / "map.tsv", "--check", models["data"] / "test.parquet")[0] == 0
    profile = (tmp_path / "v" / "rank-profile.sd").read_text()
    assert "function title_bm25() {\n        expression: bm25(title)" in profile
    (tmp_path / "bad.tsv").write_text("f999\tx\n")
    status, _, err = run("export-model", models["lambdamart"], "-t", "vespa", "-o", tmp_path / "b", "--feature-map",
                         tmp_path / "bad.tsv")
    assert status == 3 and "bad.tsv:1" in err and "no feature 'f999'" in err


def test_json_summary(models, tmp_path, run):
    status, out, _ = run("export-model", models["lambdamart"], "-t", "elasticsearch", "-o", tmp_path / "o", "--json",
                         "--check", models["data"] / "test.parquet")
    summary = json.loads(out)
    assert status == 0 and summary["target"] == "elasticsearch" and summary["files"] == ["trained_model.json",
                                                                                          "README.md"]
    assert summary["check"]["passed"] and summary["check"]["rows"] == 578 and summary["inexact"] == []
    assert {"rows_other_branch", "synthetic_rows", "max_abs_diff", "max_bound", "queries_changed"} <= set(
        summary["check"])


def test_export_of_a_model_directory_points_to_export_model(models, tmp_path, run):
    status, _, err = run("export", models["lambdamart"], "-o", tmp_path / "x.txt")
    assert status == 2 and "export-model" in err


def test_readme_holds_the_load_commands(models, tmp_path, run):
    for target, needle in [("elasticsearch-ltr", "_ltr/_featureset"), ("opensearch-ltr", "_plugins/_ltr"),
                           ("solr", "schema/model-store"), ("elasticsearch", "_ml/trained_models"),
                           ("vespa", "vespa deploy"), ("ranklib", "-load model.ranklib")]:
        assert run("export-model", models["lambdamart"], "-t", target, "-o", tmp_path / target)[0] == 0
        assert needle in (tmp_path / target / "README.md").read_text(), target
    shutil.rmtree(tmp_path / "vespa")


@pytest.mark.parametrize("target", ["vespa", "onnx", "solr"])
def test_a_model_without_trees_is_refused(models, tmp_path, run, target):
    """A model.txt holding no tree (hand-made: train writes at least one) is refused by every target, not an
    internal error or an empty expression the engine refuses."""
    if target == "onnx":
        pytest.importorskip("onnx")

    def no_trees(text: str) -> str:
        head, rest = text.split("Tree=0\n", 1)
        head = re.sub(r"^tree_sizes=.*\n", "", head, flags=re.M)
        return head + "end of trees" + rest.split("end of trees", 1)[1]

    model = _copy_with_text(models, tmp_path, "empty", no_trees)
    status, _, err = run("export-model", model, "-t", target, "-o", tmp_path / "o", "--check",
                         models["data"] / "test.parquet")
    assert status == 3 and "no tree" in err and "internal error" not in err
    assert not (tmp_path / "o").exists()


def test_feature_map_with_a_byte_order_mark_or_an_empty_name(models, tmp_path, run):
    """A JSON feature map saved with a UTF-8 byte order mark is read as JSON; an empty engine name, which no
    engine takes, is refused naming the feature, as a TSV line without a name is."""
    (tmp_path / "bom.json").write_bytes(b"\xef\xbb\xbf" + json.dumps({"f1": "title_bm25"}).encode())
    assert run("export-model", models["lambdamart"], "-t", "solr", "-o", tmp_path / "s", "--feature-map",
               tmp_path / "bom.json")[0] == 0
    assert "title_bm25" in [f["name"] for f in json.loads((tmp_path / "s" / "features.json").read_text())]
    for name, body in (("empty.json", {"f1": ""}), ("blank.json", {"f1": {"name": "  "}})):
        (tmp_path / name).write_text(json.dumps(body))
        status, _, err = run("export-model", models["lambdamart"], "-t", "solr", "-o", tmp_path / "e",
                             "--feature-map", tmp_path / name)
        assert status == 3 and "feature 'f1'" in err and "empty" in err
        assert not (tmp_path / "e").exists()


def test_feature_map_giving_a_feature_twice_is_refused(models, tmp_path, run):
    """A feature given twice (a repeated JSON key or TSV line) is refused naming it, not decided by the last."""
    (tmp_path / "twice.json").write_text('{"f1": "title_bm25", "f1": "body_bm25"}')
    (tmp_path / "twice.tsv").write_text("f1\ttitle_bm25\nf20\tx\nf1\tbody_bm25\n")
    for name, where in (("twice.json", "twice.json: feature 'f1'"), ("twice.tsv", "twice.tsv:3")):
        status, _, err = run("export-model", models["lambdamart"], "-t", "solr", "-o", tmp_path / "o",
                             "--feature-map", tmp_path / name)
        assert status == 3 and where in err and "twice" in err, err
        assert not (tmp_path / "o").exists()
    (tmp_path / "array.json").write_text('[{"f1": "title_bm25"}]')
    status, _, err = run("export-model", models["lambdamart"], "-t", "solr", "-o", tmp_path / "o", "--feature-map",
                         tmp_path / "array.json")
    assert status == 3 and "a JSON object" in err and "got array" in err


def _chain_tree(text: str, leaves: int) -> str:
    """``text`` with its trees replaced by one chain of ``leaves`` leaves: each split's left child a leaf, so the
    tree is ``leaves - 1`` levels deep (LightGBM grows such trees on a large num_leaves)."""
    head, rest = text.split("Tree=0\n", 1)
    head = re.sub(r"^tree_sizes=.*\n", "", head, flags=re.M)
    n = leaves - 1

    def row(key, values):
        return f"{key}=" + " ".join(str(v) for v in values)

    tree = ["Tree=0", f"num_leaves={leaves}", "num_cat=0", row("split_feature", [i % 40 for i in range(n)]),
            row("split_gain", [1] * n), row("threshold", [repr(0.001 * (i + 1)) for i in range(n)]),
            row("decision_type", [2] * n), row("left_child", [-(i + 1) for i in range(n)]),
            row("right_child", [i + 1 for i in range(n - 1)] + [-leaves]),
            row("leaf_value", [repr(0.01 * i) for i in range(leaves)]), row("leaf_weight", [1] * leaves),
            row("leaf_count", [1] * leaves), row("internal_value", [0] * n), row("internal_weight", [1] * n),
            row("internal_count", [1] * n), "is_linear=0", "shrinkage=1", "", ""]
    return head + "\n".join(tree) + "\nend of trees" + rest.split("end of trees", 1)[1]


@pytest.mark.parametrize("target", ["elasticsearch-ltr", "solr", "vespa"])
def test_a_tree_a_thousand_levels_deep_is_checked(models, tmp_path, run, target):
    """The nested targets' files are read back for --check however deep the trees (Python's JSON reader and the
    Vespa expression reader recurse per level), not an internal error."""
    model = _copy_with_text(models, tmp_path, "deep", lambda t: _chain_tree(t, 1200))
    status, out, err = run("export-model", model, "-t", target, "-o", tmp_path / "o", "--check",
                           models["data"] / "test.parquet", "--json")
    assert status == 0 and json.loads(out)["check"]["passed"], err


def test_readme_feature_table_keeps_its_columns_whatever_the_names(models, tmp_path, run):
    """A feature name holding ``|`` or a line break stays in its cell of README.md's table."""
    (tmp_path / "map.json").write_text(json.dumps({"f1": "title|bm25", "f20": "body\nbm25"}))
    assert run("export-model", models["lambdamart"], "-t", "solr", "-o", tmp_path / "s", "--feature-map",
               tmp_path / "map.json")[0] == 0
    rows = [ln for ln in (tmp_path / "s" / "README.md").read_text().splitlines() if ln.startswith("| f")]
    assert rows and all(len(re.findall(r"(?<!\\)\|", ln)) == 4 for ln in rows), rows
    assert "| f1 | title\\|bm25 |" in "\n".join(rows)
