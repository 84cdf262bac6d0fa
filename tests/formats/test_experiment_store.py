"""Tests of rankcli.formats.experiment_store: the files of an experiment directory, written and read back."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from rankcli.errors import InputError, OutputError
from rankcli.experiment import UnitResult
from rankcli.formats import experiment_store as store
from rankcli.formats.metric_file import read_metric_file


def _unit(trial, loss, value, per_query=False):
    qids = np.array([7, 3, 5]) if per_query else None
    values = {"ndcg@5": np.array([0.5, math.nan, 1.0])} if per_query else {}
    return UnitResult("baseline", trial, loss, {"ndcg@5": value}, 2, 0.5, [0.1, 0.3], qids, values)


def test_units_round_trip(tmp_path):
    s = store.ResultStore(tmp_path, ["baseline"], ["b", "a"], ["ndcg@5"], convention={"gain": "exponential"})
    s.add(_unit(1, "a", 0.25, per_query=True))
    s.add(_unit(0, "b", 0.75))
    s.add(_unit(0, "a", 0.5))
    again = store.ResultStore(tmp_path, ["baseline"], ["b", "a"], ["ndcg@5"])  # reads trials.parquet
    # rows in report order: trial, then the losses as listed
    assert [(r["trial"], r["loss"], r["value"]) for r in again.rows] == [(0, "b", 0.75), (0, "a", 0.5), (1, "a", 0.25)]
    assert again.table().column_names == list(store.TRIAL_COLUMNS)
    assert again.done(["ndcg@5"]) == {("baseline", 0, "b"), ("baseline", 0, "a"), ("baseline", 1, "a")}
    assert again.done(["ndcg@5", "ndcg@10"]) == set()
    assert again.kept_trees()[("baseline", 1, "a")] == 2
    curves = store.load_curves(tmp_path)
    assert [(c.setting, c.trial, c.loss) for c in curves] == [("baseline", 0, "a"), ("baseline", 0, "b"),
                                                             ("baseline", 1, "a")]
    assert curves[0].values.tolist() == [0.1, 0.3]
    path = store.queries_path(tmp_path, "baseline", 1, "a")
    assert path.name == "baseline__00001__a.parquet"
    f = read_metric_file(path, ["ndcg@5"])  # a per-query metric file, as compare reads it
    assert f.qids.tolist() == [7, 3, 5] and f.metadata["kind"] == "per-query"
    assert (f.metadata["setting"], f.metadata["fold"], f.metadata["loss"]) == ("baseline", "1", "a")
    assert json.loads(f.metadata["convention"]) == {"gain": "exponential"}
    qids, values = store.read_per_query(path, ["ndcg@5", "ndcg@10"])
    assert qids.tolist() == [7, 3, 5] and list(values) == ["ndcg@5"]
    with pytest.raises(InputError, match="no column ndcg@10; the experiment directory is inconsistent"):
        store.check_same_queries({"a": path}, {"a": qids}, ["ndcg@5", "ndcg@10"], {"a": values})


def test_directory_is_created_resumed_and_refused(tmp_path):
    exp = tmp_path / "exp"
    identity = {"config": {"seed": 0}, "data_fingerprint": "abc"}
    assert store.prepare_directory(exp, identity, {"trials": 3}, overwrite=False) is False
    written = json.loads((exp / store.CONFIG_FILE).read_text())
    assert written == {"config": {"seed": 0}, "data_fingerprint": "abc", "trials": 3}
    assert store.prepare_directory(exp, identity, {"trials": 4}, overwrite=False) is True
    other = {"config": {"seed": 1}, "data_fingerprint": "abc"}
    with pytest.raises(OutputError, match=r"different configuration \(seed: 0 before, 1 now\)"):
        store.prepare_directory(exp, other, {}, overwrite=False)
    (exp / "summary.md").write_text("old")
    (exp / "notes.txt").write_text("mine")
    assert store.prepare_directory(exp, other, {}, overwrite=True) is False
    assert not (exp / "summary.md").exists() and (exp / "notes.txt").read_text() == "mine"
    stranger = tmp_path / "stranger"
    stranger.mkdir()
    (stranger / "data.txt").write_text("x")
    with pytest.raises(OutputError, match="holds no rankcli experiment"):
        store.prepare_directory(stranger, identity, {}, overwrite=True)


def test_text_files(tmp_path):
    curves = {"baseline": {"a": {"mean": [0.5, math.nan], "stderr": [math.nan, 0.25], "trials": [2, 1],
                                 "running": [2, 1]}}}
    assert store.write_convergence(tmp_path, curves).read_text() == (
        "setting,loss,tree,mean,stderr,trials,running\nbaseline,a,1,0.5,nan,2,2\nbaseline,a,2,nan,0.25,1,1\n")
    rows = [{"level": 0.0, "setting": "baseline", "a": 0.5}, {"level": 0.3, "setting": "label-noise=0.3", "a": 0.4}]
    assert store.write_sweep(tmp_path, "label-noise", rows).read_text() == (
        "level,setting,a\n0.0,baseline,0.5\n0.3,label-noise=0.3,0.4\n")
    assert json.loads(store.write_json(tmp_path, "s.json", {"x": math.nan, "y": np.float64(1.5)}).read_text()) == {
        "x": None, "y": 1.5}


def test_json_values_have_no_nan_and_no_numpy_scalars():
    from rankcli.formats.jsonable import jsonable

    value = {1: (np.float64("nan"), np.float32(0.5), np.int64(3), np.bool_(True), float("inf"), "x", None)}
    assert jsonable(value) == {"1": [None, 0.5, 3, True, None, "x", None]}
    assert [type(v) for v in jsonable(value)["1"][1:4]] == [float, int, bool]
