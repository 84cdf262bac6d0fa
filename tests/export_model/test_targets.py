"""rankcli export-model: every target's export of every loss family passes --check with no row on another branch
(Solr: but at the near-zero splits it names), the check bites a naive export, ONNX equals LightGBM in onnxruntime,
and what a target cannot state is refused."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rankcli.export_model import ExportOptions, export_model
from rankcli.formats.parquet import read_dataset, write_dataset

TARGETS = [("elasticsearch-ltr", {}), ("elasticsearch-ltr", {"model_type": "ranklib"}), ("opensearch-ltr", {}),
           ("opensearch-ltr", {"missing_as_zero": True}), ("opensearch-ltr", {"model_type": "ranklib"}),
           ("solr", {}), ("elasticsearch", {}), ("vespa", {}), ("onnx", {}), ("ranklib", {})]


def _id(case):
    target, options = case
    return "-".join([target] + [f"{k}={v}" for k, v in options.items()])


@pytest.mark.parametrize("case", TARGETS, ids=_id)
def test_every_loss_family_passes_the_check(models, tmp_path, case):
    target, options = case
    if target == "onnx":
        pytest.importorskip("onnxruntime")
    for name in ("lambdamart", "xendcg", "zscore"):
        result = export_model(models[name], target, tmp_path / name,
                              ExportOptions(check=models["data"] / "test.parquet", **options))
        check = result.check
        assert check.passed, (name, check.as_dict())
        assert check.rows == 578 and check.rows_other_branch == 0 and check.synthetic_other_branch == 0
        assert check.synthetic_rows > 10 * result.splits / 2  # on, below and above each threshold, and more
        assert check.max_abs_diff <= check.max_bound and check.queries_changed_beyond_bound == 0
        if target == "solr":  # only LightGBM's zero-versus-positive splits, named, each one
            assert all(i["lightgbm_cut"] == pytest.approx(1e-35) and i["engine_cut"] == 0.0 for i in result.inexact)
            assert (check.synthetic_at_named_splits > 0) == bool(result.inexact)
        else:
            assert result.inexact == [] and check.synthetic_at_named_splits == 0
        if name == "zscore":
            assert "folded" in result.normalization


def test_solr_names_the_near_zero_splits_of_lambdamart(models, tmp_path):
    result = export_model(models["lambdamart"], "solr", tmp_path / "s")
    text = (models["lambdamart"] / "model.txt").read_text()
    zero = sum(line.count("1.0000000180025095e-35") for line in text.splitlines() if line.startswith("threshold="))
    assert zero > 0 and len(result.inexact) == zero


def _root_probe(models, strict: bool):
    """DATA rows whose value at a tree's root split is the float32 a naive export writes (round to nearest), where
    the engine decides otherwise than LightGBM: a value at or below LightGBM's threshold for a strict engine (it
    goes right there), above it for a <= engine (it goes left). Returns ``(dataset, tree)``."""
    from rankcli.formats.lightgbm_text import parse_model_text

    model = parse_model_text((models["lambdamart"] / "model.txt").read_text())
    for k, tree in enumerate(model.trees):
        t = float(tree.threshold[0])
        v = np.float32(t)
        if (float(v) <= t) if strict else (float(v) > t):
            ds = read_dataset(models["data"] / "test.parquet")
            ds.features[:, int(tree.split_feature[0])] = v
            return ds, k
    raise AssertionError("no root threshold rounds that way")


@pytest.mark.parametrize("target, strict", [("elasticsearch-ltr", True), ("ranklib", False)])
def test_a_naive_export_fails_the_check(models, tmp_path, target, strict):
    ds, tree = _root_probe(models, strict)
    write_dataset(tmp_path / "probe.parquet", ds)
    naive = export_model(models["lambdamart"], target, tmp_path / "naive",
                         ExportOptions(check=tmp_path / "probe.parquet", naive=True)).check
    exact = export_model(models["lambdamart"], target, tmp_path / "exact",
                         ExportOptions(check=tmp_path / "probe.parquet")).check
    assert not naive.passed and naive.rows_other_branch == ds.n_rows and naive.synthetic_other_branch > 0
    assert naive.max_abs_diff > naive.max_bound and naive.splits_other_branch and tree >= 0
    assert exact.passed and exact.rows_other_branch == 0 and exact.max_abs_diff <= exact.max_bound


def test_onnx_equals_lightgbm_within_float32_rounding(models, tmp_path):
    pytest.importorskip("onnxruntime")
    from rankcli.export_model.onnx_model import score
    from rankcli.train import load_model

    for name in ("lambdamart", "zscore"):
        export_model(models[name], "onnx", tmp_path / name)
        ds = read_dataset(models["data"] / "test.parquet")
        reference = load_model(models[name]).predict(ds)
        got = score(tmp_path / name, ds.features)
        ulp = np.spacing(np.abs(reference).astype(np.float32)).astype(np.float64)
        assert np.all(np.abs(got - reference) <= ulp), name
        assert np.mean(got == reference.astype(np.float32)) > 0.99


def test_engine_normalizers_are_written_and_checked(models, tmp_path):
    for target in ("elasticsearch-ltr", "solr"):
        for name in ("zscore", "minmax"):
            result = export_model(models[name], target, tmp_path / f"{target}-{name}",
                                  ExportOptions(engine_normalizer=True, check=models["data"] / "test.parquet"))
            assert "engine normalisers" in result.normalization
            named = {i["split"] for i in result.inexact}
            assert result.check.synthetic_other_branch == 0 or set(result.check.splits_other_branch) <= named
            body = json.loads((tmp_path / f"{target}-{name}" / "model.json").read_text())
            text = json.dumps(body)
            assert ("feature_normalizers" in text) if target != "solr" else ("Normalizer" in text)


def test_check_reads_letor_text(models, tmp_path):
    from tests.conftest import SAMPLE

    result = export_model(models["lambdamart"], "vespa", tmp_path / "v",
                          ExportOptions(check=SAMPLE / "letor" / "test.txt"))
    assert result.check.passed and result.check.rows == 578 and result.check.max_abs_diff == 0.0


@pytest.mark.parametrize("target", ["ranklib", "solr", "elasticsearch-ltr"])
def test_the_fast_check_scores_as_the_full_evaluator(models, tmp_path, target):
    """--check walks again only the (row, tree) pairs leaving LightGBM's path; on a naive export, where many do,
    its engine scores are those of walking every tree from the root with the engine's rule."""
    from rankcli.core.trees.semantics import engine_scores
    from rankcli.export_model import WRITERS, plan_export
    from rankcli.export_model.check import _probes, _score_chunk

    ds, _ = _root_probe(models, strict=target == "elasticsearch-ltr")
    plan = plan_export(models["lambdamart"], target, ExportOptions(naive=True))
    out = tmp_path / "o"
    out.mkdir()
    WRITERS[target].write(plan, out)
    back = WRITERS[target].read(plan, out)
    probes = _probes(plan.source, back, plan)
    bad = np.unique(probes.nodes[probes.disagree])
    reference, engine, _, rows = _score_chunk(plan.source, back, ds.features, bad, None, True)
    full = engine_scores(plan.source.ensemble, back.splits, back.feature, back.leaf, back.weight, back.summation,
                         ds.features)
    assert rows.size == ds.n_rows and np.array_equal(engine, full)
    assert np.array_equal(reference, plan.source.model.score(ds.features))


def test_the_row_prefilter_keeps_every_diverging_row(models, tmp_path):
    """--check walks the divergence only for rows with a value between a bad split's two breakpoints (or a
    non-finite one); on Solr's near-zero splits, values placed between and around the cuts, the rows it keeps give
    every diverging (row, tree) pair that all rows give."""
    from rankcli.core.trees.parity import candidate_rows, diverging_pairs
    from rankcli.export_model import WRITERS, plan_export
    from rankcli.export_model.check import _engine_rule, _leaves, _probes

    plan = plan_export(models["lambdamart"], "solr", ExportOptions())
    out = tmp_path / "o"
    out.mkdir()
    WRITERS["solr"].write(plan, out)
    back = WRITERS["solr"].read(plan, out)
    probes = _probes(plan.source, back, plan)
    bad = np.unique(probes.nodes[probes.disagree])
    assert bad.size
    src, ens = plan.source, plan.source.ensemble
    x = read_dataset(models["data"] / "test.parquet").features.copy()
    columns = np.unique(ens.feature[bad])
    tiny = np.array([0, 1e-36, 1e-35, 2e-35, -1e-36, 1.1e-13, np.nan, 1.0], dtype=np.float32)
    x[:, columns] = tiny[np.arange(x.shape[0]) % tiny.size][:, None]
    leaves = _leaves(src, x)
    rule = _engine_rule(back)
    every = diverging_pairs(ens, leaves, x, bad, src.raw_left, rule)
    maybe = candidate_rows(ens, x, bad, src.raw_left, rule)
    rows, trees = diverging_pairs(ens, leaves[maybe], x[maybe], bad, src.raw_left, rule)
    assert every[0].size > 0 and maybe.size < x.shape[0]
    assert np.array_equal(np.sort(every[0] * ens.n_trees + every[1]), np.sort(maybe[rows] * ens.n_trees + trees))


@pytest.mark.parametrize("target, name, value", [("elasticsearch", "lambdamart", np.inf),
                                                 ("ranklib", "zscore", np.nan), ("solr", "zscore", np.nan)])
def test_the_check_walks_the_data_values_its_probes_leave_out(models, tmp_path, target, name, value):
    """The synthetic rows leave out the values the engine does not hold (Elasticsearch's +-inf, NaN where a missing
    feature is 0), but DATA may hold them, and the engine decides them its way: on those rows the check's engine
    scores are those of walking every tree with the engine's rule, and rows on another branch fail it."""
    from rankcli.core.trees.semantics import engine_scores
    from rankcli.export_model import WRITERS, plan_export
    from rankcli.predict import predict_dataset

    ds = read_dataset(models["data"] / "test.parquet")
    ds.features[::3, :] = value
    write_dataset(tmp_path / "odd.parquet", ds)
    result = export_model(models[name], target, tmp_path / "o", ExportOptions(check=tmp_path / "odd.parquet"))
    plan = plan_export(models[name], target, ExportOptions())
    back = WRITERS[target].read(plan, tmp_path / "o")
    engine = engine_scores(plan.source.ensemble, back.splits, back.feature, back.leaf, back.weight, back.summation,
                           ds.features)
    _, rankcli_scores, _ = predict_dataset(models[name], tmp_path / "odd.parquet")
    diff = np.abs(engine - rankcli_scores)
    assert diff.max() > 1e-3  # the engine scores these rows otherwise: the check must say so
    assert result.check.max_abs_diff == pytest.approx(diff.max(), rel=1e-6, abs=1e-9)
    assert result.check.rows_other_branch > 0 and not result.check.passed
