"""rankcli.compare.compare_values: pairs, NaN handling, corrections and decisions on hand-made vectors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from rankcli.compare import compare_values, pairs_for


def test_pairs():
    assert pairs_for(["a", "b", "c"], None) == [("a", "b"), ("a", "c"), ("b", "c")]
    assert pairs_for(["a", "b", "c"], "b") == [("b", "a"), ("b", "c")]


def test_compare_values_nan_queries_and_decisions():
    rng = np.random.default_rng(0)
    base = rng.random(40)
    better = base + 0.2 + rng.normal(0, 0.05, 40)
    same = base.copy()
    base[3] = np.nan                                    # a query the baseline has no value for
    values = {"base": {"m": base}, "better": {"m": better}, "same": {"m": same}}
    means, used, comps, correction = compare_values(values, ["m"], baseline="base")
    assert used == {"m": 39} and correction == "holm"
    keep = ~np.isnan(base)
    assert means["better"]["m"] == pytest.approx(better[keep].mean())
    c_better, c_same = comps
    assert (c_better.a, c_better.b) == ("base", "better")
    assert c_better.result.p_value == pytest.approx(sps.ttest_rel(better[keep], base[keep]).pvalue)
    assert c_better.p_adjusted == pytest.approx(min(1.0, 2 * c_better.result.p_value))   # Holm, m = 2, smallest
    assert c_better.decision == "better" and c_better.wins == 39
    assert c_same.decision == "not significant" and c_same.result.p_value == 1.0 and c_same.ties == 39
    assert c_same.p_adjusted == 1.0


def test_compare_values_explicit_pairs_form_one_corrected_family():
    """The pairs a caller names (experiment: each naive loss against its IPS loss) are tested in that order and
    corrected together, as one call; the result reads by field."""
    rng = np.random.default_rng(5)
    base = rng.random(30)
    values = {name: {"m": base + shift + rng.normal(0, 0.05, 30)}
              for name, shift in (("a", 0.0), ("a_ips", 0.1), ("b", 0.0), ("b_ips", 0.0))}
    out = compare_values(values, ["m"], pairs=[("a", "a_ips"), ("b", "b_ips")], correction="bonferroni")
    assert [(c.a, c.b) for c in out.comparisons] == [("a", "a_ips"), ("b", "b_ips")]
    assert out.correction == "bonferroni" and out.used == {"m": 30}
    for c in out.comparisons:
        assert c.p_adjusted == pytest.approx(min(1.0, 2 * c.result.p_value))
        assert c.result.p_value == pytest.approx(sps.ttest_rel(values[c.b]["m"], values[c.a]["m"]).pvalue)
    assert out.comparisons[0].decision == "better"
    assert out.means["a_ips"]["m"] == pytest.approx(values["a_ips"]["m"].mean())


def test_compare_values_not_testable():
    values = {"a": {"m": np.array([0.5, np.nan])}, "b": {"m": np.array([0.7, 0.1])}}
    means, used, comps, correction = compare_values(values, ["m"])
    assert used == {"m": 1} and correction == "none"
    assert comps[0].decision == "not testable" and math.isnan(comps[0].p_adjusted) and not comps[0].significant


def test_compare_values_zero_variance_is_not_testable_and_out_of_the_family():
    rng = np.random.default_rng(3)
    base = rng.random(20)
    values = {"base": {"m": base, "k": base}, "shifted": {"m": base + 0.125, "k": base + rng.normal(0.1, 0.05, 20)}}
    for test in ("ttest", "bootstrap"):
        _, _, comps, correction = compare_values(values, ["m", "k"], baseline="base", test=test)
        flat, noisy = comps
        assert flat.decision == "not testable" and flat.result.reason == "all differences are equal (zero variance)"
        assert math.isnan(flat.p_adjusted) and not flat.significant and flat.as_dict()["reason"] == flat.result.reason
        # One testable comparison left: no correction needed.
        assert correction == "none" and noisy.p_adjusted == noisy.result.p_value and noisy.as_dict()["reason"] is None
    _, _, comps, _ = compare_values(values, ["m"], baseline="base", test="permutation", alpha=0.05)
    assert comps[0].result.p_value == pytest.approx(1 / 10001, rel=0.5) and comps[0].decision == "better"


def _per_query_file(path, columns, metadata=None):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"qid": pa.array([1, 2, 3], pa.int64()),
                      **{k: pa.array(v, pa.float64()) for k, v in columns.items()}})
    pq.write_table(table.replace_schema_metadata(metadata or {"rankcli.kind": "per-query"}), path)
    return path


def test_per_query_file_with_an_infinite_metric_value_names_the_file_query_and_column(tmp_path):
    """An inf in a per-query file reached the paired test: "paired test needs finite values; drop the queries without
    a value (NaN) first", naming neither the file nor the query, and suggesting NaN for what was inf."""
    from rankcli.compare import compare_inputs
    from rankcli.errors import SchemaError

    a = _per_query_file(tmp_path / "a.parquet", {"ndcg@10": [0.5, -np.inf, 0.2]})
    b = _per_query_file(tmp_path / "b.parquet", {"ndcg@10": [0.4, 0.3, 0.2]})
    with pytest.raises(SchemaError, match=f"^{a}: column ndcg@10 of query 2 is -inf, not a metric value"):
        compare_inputs([a, b])


def test_per_query_file_without_a_metric_column_says_how_columns_are_named(tmp_path):
    """It said "needs metric columns besides qid (found: qid, m)", although m is a column besides qid."""
    from rankcli.compare import compare_inputs
    from rankcli.errors import SchemaError

    a = _per_query_file(tmp_path / "a.parquet", {"m": [0.5, 0.1, 0.2]})
    b = _per_query_file(tmp_path / "b.parquet", {"m": [0.4, 0.3, 0.2]})
    with pytest.raises(SchemaError, match="named as rankcli names metrics \\(ndcg@10, map, ...\\), found none: its "
                                          "columns are qid, m$"):
        compare_inputs([a, b])


@pytest.mark.parametrize("bad", ["a\nb", "", "  ", "x\ty", "x\u2028y", "\x1b[31mred"])
def test_run_names_must_be_one_visible_line(tmp_path, bad):
    """--name 'a<newline>b' ended the LaTeX comment line and split the Markdown table row the name is printed in;
    --name '' labelled comparisons 'x - '."""
    from rankcli.compare import compare_inputs
    from rankcli.errors import UsageError

    a = _per_query_file(tmp_path / "a.parquet", {"ndcg@10": [0.5, 0.1, 0.2]})
    b = _per_query_file(tmp_path / "b.parquet", {"ndcg@10": [0.4, 0.3, 0.2]})
    with pytest.raises(UsageError, match="^--name: a run name must be visible text on one line"):
        compare_inputs([a, b], names=[bad, "ok"])
    odd = _per_query_file(tmp_path / f"{bad or 'x'}.parquet", {"ndcg@10": [0.4, 0.3, 0.2]}) if bad.strip() else None
    if odd is not None:
        with pytest.raises(UsageError, match="(?s)^the name taken from .*; pass --name NAME$"):
            compare_inputs([a, odd])
    assert compare_inputs([a, b], names=["ä b", "x - y"]).baseline == "ä b"
