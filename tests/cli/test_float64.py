"""``convert --float64``: features stored as float64 (the footer says so), kept float64 by every command that reads
them, and a model trained on them equal to LightGBM's trained on the same text with ``precise_float_parser=true``.

The synthetic data makes the precision visible: feature ``f1`` is ``0.1 + k * 1e-10`` (``k`` = 0..19 within each
query) and the label is ``k >= 10``. In float32 every ``f1`` is the same number (its spacing near 0.1 is 7.5e-9), so
no model can rank by it; in float64 one split ranks every query perfectly (NDCG 1)."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest

from rankcli.cli import main
from tests.conftest import SAMPLE
from tests.conftest import run_main as run

FAST = ("--trees", "5", "--threads", "1", "--min-data-in-leaf", "5")


def _text(path, seed: int, queries: int, first_qid: int) -> list[list[float]]:
    """Write the synthetic SVMlight file; returns its rows' ``[f1, f2]`` as Python parses the text (float64)."""
    rng = np.random.default_rng(seed)
    lines, rows = [], []
    for q in range(queries):
        for k in rng.permutation(20):
            f1, f2 = f"{0.1 + k * 1e-10:.12f}", f"{rng.random():.6f}"
            lines.append(f"{int(k >= 10)} qid:{first_qid + q} 1:{f1} 2:{f2}")
            rows.append([float(f1), float(f2)])
    path.write_text("\n".join(lines) + "\n")
    return rows


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """The text files, their float32 (``d32/``) and float64 (``d64/``) conversions and a model trained on each."""
    d = tmp_path_factory.mktemp("float64")
    rows = {}
    for part, seed, n, first in (("train", 1, 12, 1), ("vali", 2, 4, 101), ("test", 3, 4, 201)):
        rows[part] = _text(d / f"{part}.txt", seed, n, first)
    texts = [str(d / f"{p}.txt") for p in ("train", "vali", "test")]
    assert main(["convert", *texts, "-o", str(d / "d32")]) == 0
    assert main(["convert", *texts, "-o", str(d / "d64"), "--float64"]) == 0
    for p in ("32", "64"):
        assert main(["train", str(d / f"d{p}" / "train.parquet"), "--valid", str(d / f"d{p}" / "vali.parquet"),
                     "-o", str(d / f"m{p}"), *FAST]) == 0
    d.joinpath("rows.json").write_text(json.dumps(rows))
    return d


def _precision(path) -> tuple[str, bytes | None]:
    schema = pq.ParquetFile(path).schema_arrow
    return str(schema.field("f1").type), (schema.metadata or {}).get(b"rankcli.feature_dtype")


def test_convert_float64_stores_the_text_numbers_and_says_so(data):
    assert _precision(data / "d64" / "test.parquet") == ("double", b"float64")
    assert _precision(data / "d32" / "test.parquet") == ("float", None)  # float32 stays the default
    expected = np.array(json.loads((data / "rows.json").read_text())["test"])
    got = pq.read_table(data / "d64" / "test.parquet", columns=["f1", "f2"])
    assert np.array_equal(np.column_stack([got.column(c).to_numpy() for c in ("f1", "f2")]), expected)
    assert len(set(pq.read_table(data / "d32" / "test.parquet").column("f1").to_pylist())) == 1


def test_train_says_which_precision_it_trained_on(capsys, data, tmp_path):
    for p in ("32", "64"):
        assert json.loads((data / f"m{p}" / "rankcli.json").read_text())["feature_dtype"] == f"float{p}"
        status, out, err = run(capsys, "train", data / f"d{p}" / "train.parquet", "-o", tmp_path / p, *FAST)
        assert status == 0, err
        assert re.search(rf"^{re.escape(str(tmp_path / p))}: xendcg, \d+ trees, float{p} features, ", out), out
    status, out, _ = run(capsys, "train", data / "d64" / "train.parquet", "-o", tmp_path / "j", *FAST, "--json")
    assert status == 0 and json.loads(out)["feature_dtype"] == "float64"


def test_predict_and_eval_score_the_float64_values(capsys, data, tmp_path):
    import lightgbm

    status, out, err = run(capsys, "eval", data / "d64" / "test.parquet", "--model", data / "m64", "--json")
    assert status == 0, err
    assert json.loads(out)["metrics"]["ndcg@10"] == 1.0
    status, out, _ = run(capsys, "eval", data / "d32" / "test.parquet", "--model", data / "m32", "--json")
    assert status == 0 and json.loads(out)["metrics"]["ndcg@10"] < 0.9  # what float32 loses
    assert run(capsys, "predict", data / "m64", data / "d64" / "test.parquet", "-o", tmp_path / "r.parquet")[0] == 0
    rows = np.array(json.loads((data / "rows.json").read_text())["test"])
    booster = lightgbm.Booster(model_file=str(data / "m64" / "model.txt"))
    scores = pq.read_table(tmp_path / "r.parquet").column("score").to_numpy()
    assert np.array_equal(scores, booster.predict(rows))


def test_explain_tune_and_simulate_clicks_read_float64(capsys, data, tmp_path):
    status, out, err = run(capsys, "explain", data / "m64", data / "d64" / "test.parquet", "--repeats", "1",
                           "--no-contributions", "--json")
    assert status == 0, err
    report = json.loads(out)
    assert report["model_metric"] == 1.0 and report["features"][0]["feature"] == "f1"
    pytest.importorskip("optuna")
    status, out, err = run(capsys, "tune", data / "d64" / "train.parquet", "--valid", data / "d64" / "vali.parquet",
                           "-o", tmp_path / "t", "--loss", "xendcg", "--budget", "1", "--trees", "3",
                           "--early-stopping", "0", "--threads", "1", "--json")
    assert status == 0, err
    assert json.loads(out)["losses"]["xendcg"]["best_value"] == 1.0
    for ranker in ("random", str(data / "m64")):
        out = tmp_path / f"clicks-{len(ranker)}.parquet"
        assert run(capsys, "simulate-clicks", data / "d64" / "train.parquet", "-o", out, "--ranker", ranker)[0] == 0
        assert _precision(out) == ("double", b"float64")


def test_split_experiment_export_and_export_model_keep_float64(capsys, data, tmp_path):
    folds = tmp_path / "folds"
    assert run(capsys, "split", data / "d64" / "train.parquet", "-o", folds, "--folds", "3")[0] == 0
    assert _precision(folds / "Fold1" / "test.parquet") == ("double", b"float64")
    status, out, err = run(capsys, "experiment", folds, "-o", tmp_path / "x", "--folds", "--losses", "xendcg", *FAST)
    assert status == 0, err
    values = pq.read_table(tmp_path / "x" / "trials.parquet").column("value").to_pylist()
    assert values and min(values) == 1.0  # every fold's test queries ranked by f1
    assert run(capsys, "export", data / "d64" / "test.parquet", "-o", tmp_path / "e.txt")[0] == 0
    exported = [line.split()[2] for line in (tmp_path / "e.txt").read_text().splitlines()]
    original = [line.split()[2] for line in (data / "test.txt").read_text().splitlines()]
    assert [float(x[2:]) for x in exported] == [float(x[2:]) for x in original]  # every float64 digit kept
    status, _, err = run(capsys, "export-model", data / "m64", "--target", "ranklib", "-o", tmp_path / "em",
                         "--check", data / "d64" / "test.parquet")
    assert status == 0, err


def _lightgbm_booster(model_dir, text, precise: bool):
    """LightGBM trained on the text file ``text`` (and its ``.query`` sidecar) with the parameters the rankcli model
    records, ``precise_float_parser`` as given."""
    import lightgbm

    params = {k: v for k, v in json.loads((model_dir / "rankcli.json").read_text())["params"].items()
              if k not in ("data", "valid") and v != ""}
    params["precise_float_parser"] = precise
    while True:  # rankcli.json records LightGBM's booleans as LightGBM prints them (0/1): given back as booleans
        try:
            return lightgbm.train(params, lightgbm.Dataset(str(text), params=dict(params)),
                                  num_boost_round=params["num_iterations"])
        except lightgbm.basic.LightGBMError as exc:
            key = re.search(r"Parameter (\w+) should be \"true\"", str(exc))
            assert key is not None, exc
            params[key.group(1)] = bool(params[key.group(1)])


def _trees(model_text: str, shift: int = 0) -> list[str]:
    """The tree sections of a model's text, split features renumbered by ``shift`` (LightGBM reading SVMlight text
    has a column for index 0, rankcli's f1 is index 1)."""
    body = model_text[model_text.index("Tree=0"):model_text.index("end of trees")].strip()
    out = []
    for line in body.splitlines():
        if line.startswith("split_feature="):
            line = "split_feature=" + " ".join(str(int(x) + shift) for x in line.split("=", 1)[1].split())
        out.append(line)
    return out


def test_a_float64_model_is_lightgbms_on_the_same_text(capsys, tmp_path):
    """LightGBM's lambdarank example (its first queries, in sample_data): trained from ``convert --float64``, the
    trees are LightGBM's own with precise_float_parser=true, threshold for threshold; from the float32 default they
    are not (the thresholds are midpoints of float32 values)."""
    for name in ("rank.train", "rank.train.query"):
        shutil.copy(SAMPLE / "lightgbm-example" / name, tmp_path / name)
    args = ("--loss", "lambdamart", "--trees", "5", "--threads", "1", "--min-data-in-leaf", "2")
    models = {}
    for flag in ("--float64", None):
        name = "64" if flag else "32"
        assert run(capsys, "convert", tmp_path / "rank.train", "-o", tmp_path / f"{name}.parquet",
                   *([flag] if flag else []))[0] == 0
        status, _, err = run(capsys, "train", tmp_path / f"{name}.parquet", "-o", tmp_path / f"m{name}", *args)
        assert status == 0, err
        models[name] = _trees((tmp_path / f"m{name}" / "model.txt").read_text())
    theirs = _trees(_lightgbm_booster(tmp_path / "m64", tmp_path / "rank.train", True).model_to_string(), -1)
    assert len([t for t in theirs if t.startswith("Tree=")]) == 5
    assert any(t.startswith("split_feature=") for t in theirs)
    assert models["64"] == theirs
    assert models["32"] != theirs
