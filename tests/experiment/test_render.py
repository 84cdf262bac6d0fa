"""Tests of experiment's render module (summary.md, table cells and notes)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from rankcli import experiment as ex
from rankcli.display.numbers import number, p_value_or_reason, signed
from rankcli.experiment import sweeps as experiment_sweeps
from rankcli.experiment.render import P_DIGITS, experiment_markdown, protocol_note, significance_paragraph


def _result(config, settings, rng):
    rows = [dict(trial=t, setting=s.name, loss=loss, metric=m, value=float(rng.random()), trees=1, seconds=0.0)
            for s in settings for loss in ex.setting_losses(config, s) for m in config.metrics
            for t in ex.trial_ids(config)]
    summary = ex.summarize_experiment(rows, config, settings, sizes=(90, 30, 30))
    return SimpleNamespace(config=config, settings=settings, summary=summary)


def test_cells():
    digits = P_DIGITS
    assert number(0.123456) == "0.1235"
    assert signed(0.1) == "+0.1000" and signed(-0.05, 2) == "-0.05"
    for missing in (None, math.nan, math.inf):
        assert number(missing) == "n/a" and signed(missing) == "n/a"
    assert p_value_or_reason(0.01234, digits) == "0.012"
    assert p_value_or_reason(math.nan, digits) == "not testable"
    assert p_value_or_reason(None, digits, "fewer than two trials") == "not testable: fewer than two trials"


def test_summary_markdown_tables_and_sign_convention():
    config = ex.ExperimentConfig(losses=["a", "b"], trials=3, metrics=["ndcg@5"], label_noise=[0.0, 0.3])
    settings, sweeps = ex.plan_settings(config)
    result = _result(config, settings, np.random.default_rng(0))
    text = experiment_markdown(result, ex.sweep_rows(result.summary, config, sweeps))
    lines = text.splitlines()
    assert lines[0] == "# rankcli experiment: a, b"
    corrected = ("corrected resampled t-test across trials (Nadeau & Bengio 2003): variance (1/J + n_test/n_train) "
                 "s^2 over J trials, n_test 30 test queries, n_train 120 training + validation queries")
    assert lines[2].startswith(f"Protocol: 3 random splits (trials), n = trials (one test mean per trial); test: "
                               f"{corrected}. Split 0.6,0.2,0.2; seed 0; selection by validation ndcg@5, "
                               "early stopping 50, at most 500 trees; test convention `paper` (queries without a "
                               "relevant document skipped). p-values adjusted with `holm` within each setting.")
    assert lines[4].startswith("Test: the corrected resampled t-test (C. Nadeau and Y. Bengio, Inference for the "
                               "generalization error, Machine Learning 52(3):239-281, 2003). The trials are not "
                               "independent samples")
    assert ("(1/J + n_test/n_train) s^2 instead of s^2/J, with n_test = 30 test queries and n_train = 120 training + "
            "validation queries per trial") in lines[4]
    base = result.summary["settings"][0]
    a = base["losses"]["a"]["ndcg@5"]
    assert f"| a | {a['mean']:.4f} ± {a['stderr']:.4f} | 3 trials |" in lines
    assert "| difference | metric | mean difference | stderr | n | p (corrected-ttest) | p adjusted |" in lines
    test = base["tests"][0]
    assert (f"| b - a | ndcg@5 | {test['difference']:+.4f} | {test['stderr']:.4f} | 3 | {test['p_value']:.3f} | "
            f"{test['p_adjusted']:.3f} |") in lines
    assert "## sweep label-noise: test ndcg@5" in lines
    assert f"p adjusted: {corrected}, `holm` within each level." in lines
    assert experiment_sweeps.SWEEP_NOTES["label-noise"] in lines
    assert "| label-noise | a | b | b - a | p adjusted (b - a) |" in lines
    assert sum(line.startswith("| 0 |") or line.startswith("| 0.3 |") for line in lines) == 2


def test_notes():
    folds = ex.ExperimentConfig(losses=["a", "b"], folds=True, trials=2)
    assert protocol_note(folds) == ("2 folds, each trained once per loss; test metrics pooled over the test "
                                    "queries of all folds; paired t-test over those queries (n = queries)")
    folds.test = "wilcoxon"
    assert "; Wilcoxon signed-rank test over those queries (n = queries)" in protocol_note(folds)
    assert significance_paragraph(folds) == ""
    one = ex.ExperimentConfig(losses=["a", "b"], trials=1)
    assert protocol_note(one).startswith("1 random split (trials), n = trials (one test mean per trial); "
                                         "test: corrected resampled t-test across trials")
    paper = ex.ExperimentConfig(losses=["a", "b"], trials=3, test="ttest")
    assert protocol_note(paper).endswith("test: paired t-test across trials, the paper's test (trials "
                                         "treated as independent)")
    assert significance_paragraph(paper).startswith(
        "Test: the paired t-test across trials, the paper's test (trials treated as independent). The trials are "
        "not independent samples")
    assert experiment_sweeps.naive_only_note(ex.ExperimentConfig(losses=["xendcg", "lambdamart"])) == ""
    biased = ex.ExperimentConfig(losses=["xendcg", "lambdamart"], position_bias=[1.0], click_impressions=7,
                                 logging_fraction=0.02)
    assert experiment_sweeps.naive_only_note(biased).startswith(
        "lambdamart: naive only, trained on the click impressions")
    note = experiment_sweeps.sweep_note(biased, "position-bias")
    assert "a fraction 0.02 of the training queries" in note and "(7 impressions per query" in note
    with pytest.raises(KeyError):
        experiment_sweeps.sweep_note(biased, "unknown")
