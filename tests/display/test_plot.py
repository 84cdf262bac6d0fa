"""Tests of rankcli.display.plot: text sparklines, and PNG files when matplotlib is installed (the optional extra)."""

from __future__ import annotations

import math

import pytest

from rankcli.display.plot import (
    CONVERGENCE_CAPTION,
    CONVERGENCE_NOTE,
    have_matplotlib,
    plot_convergence,
    plot_sweep,
    sparkline,
)


def test_sparkline_scale_and_resampling():
    assert sparkline([0.0, 0.5, 1.0], 0.0, 1.0) == "▁▅█"
    assert sparkline([], 0, 1) == ""
    assert sparkline([1.0, math.nan], 0.0, 1.0) == "█ "
    assert sparkline([0.3, 0.3], 0.3, 0.3) == "▅▅"  # flat scale: the middle block
    line = sparkline(list(range(500)), 0, 499, width=40)
    assert len(line) == 40 and line[0] == "▁" and line[-1] == "█"


@pytest.mark.skipif(not have_matplotlib(), reason="matplotlib (the plot extra) is not installed")
def test_plots_are_png(tmp_path):
    curves = {"a": {"mean": [0.1, 0.2, 0.3], "stderr": [0.01, math.nan, 0.02], "trials": [2, 2, 2]},
              "b": {"mean": [0.2, 0.25], "stderr": [0.01, 0.01], "trials": [2, 2]}}
    p = plot_convergence(curves, tmp_path / "c.png", "ndcg@5", "t")
    rows = [{"level": 0.0, "a": 0.5, "a stderr": 0.01, "b": 0.6, "b stderr": math.nan, "b - a": 0.1},
            {"level": 0.2, "a": 0.4, "a stderr": 0.02, "b": 0.55, "b stderr": 0.01, "b - a": 0.15}]
    q = plot_sweep(rows, ["a", "b"], tmp_path / "s.png", "label-noise", "ndcg@5")
    for path in (p, q):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_convergence_caption_says_what_carried_forward_means():
    assert "carries forward the value of the model it keeps" in CONVERGENCE_NOTE
    assert CONVERGENCE_CAPTION.startswith(CONVERGENCE_NOTE) and "standard error" in CONVERGENCE_CAPTION


@pytest.mark.skipif(not have_matplotlib(), reason="matplotlib (the plot extra) is not installed")
def test_convergence_plot_has_a_stderr_band_per_loss_and_the_caption():
    import matplotlib.pyplot as plt

    from rankcli.display.plot import convergence_figure

    curves = {"a": {"mean": [0.1, 0.2, 0.3], "stderr": [0.01, 0.02, 0.03], "trials": [3, 3, 3]},
              "b": {"mean": [0.2, 0.25, 0.3], "stderr": [0.01, 0.01, 0.01], "trials": [3, 3, 3]}}
    fig = convergence_figure(curves, "ndcg@5", "t")
    ax = fig.axes[0]
    bands = ax.collections
    assert len(bands) == 2
    lo, hi = bands[0].get_paths()[0].vertices[:, 1].min(), bands[0].get_paths()[0].vertices[:, 1].max()
    assert (lo, hi) == pytest.approx((0.09, 0.33))
    assert [t.get_text() for t in fig.texts] == [CONVERGENCE_CAPTION]
    assert "a ± 1 stderr" in [t.get_text() for t in ax.get_legend().get_texts()]
    plt.close(fig)


@pytest.fixture
def drawn(monkeypatch):
    """The figures the plotting functions save, kept open for the test to inspect (each is still written)."""
    import rankcli.display.plot as plot

    figures = []
    save = plot._save_png

    def keep(fig, path):
        save(fig, path)
        figures.append(fig)

    monkeypatch.setattr(plot, "_save_png", keep)
    monkeypatch.setattr(plot, "_finish", lambda plt, fig, ax, path: (ax.legend(), keep(fig, path), path)[2])
    return figures


def _png_by_rankcli(path) -> bool:
    data = path.read_bytes()
    return data[:8] == b"\x89PNG\r\n\x1a\n" and b"rankcli" in data[:4096] and len(data) > 10_000


@pytest.mark.skipif(not have_matplotlib(), reason="matplotlib (the plot extra) is not installed")
def test_propensity_plot_is_log_log_with_the_reference_drawn_above_the_estimate(tmp_path, drawn):
    from rankcli.display.plot import plot_propensity

    positions = list(range(1, 151))
    prop = [1.0 / r if r < 140 else 0.0 for r in positions]  # a position without clicks: no place on a log axis
    result = {"positions": positions, "propensity": prop, "ci_low": [p * 0.8 for p in prop],
              "ci_high": [p * 1.2 for p in prop], "fitted": [r > 10 for r in positions], "method": "click-rate",
              "fit": {"eta": 1.0}, "source": "clicks.parquet", "policy": "random"}
    path = plot_propensity(result, tmp_path / "p.png")
    assert _png_by_rankcli(path)
    ax = drawn[0].axes[0]
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    lines = {line.get_label(): line for line in ax.get_lines()}
    reference = lines["1/r"]
    assert list(reference.get_ydata()) == [1.0 / r for r in positions]
    assert all(reference.get_zorder() > line.get_zorder() for name, line in lines.items() if name != "1/r")
    assert 0.0 not in [y for line in lines.values() for y in line.get_ydata()]
    assert ax.get_ylim()[0] > 0


@pytest.mark.skipif(not have_matplotlib(), reason="matplotlib (the plot extra) is not installed")
def test_differences_plot_has_a_panel_per_comparison_sorted_with_its_counts(tmp_path, drawn):
    import numpy as np

    from rankcli.compare import compare_values
    from rankcli.display.plot import plot_differences

    rng = np.random.default_rng(3)
    a = rng.random(40)
    values = {"a": {"ndcg@5": a, "map": a}, "b": {"ndcg@5": a + rng.normal(0, 0.1, 40), "map": a}}
    comparisons = compare_values(values, ["ndcg@5", "map"], baseline="a").comparisons
    path = plot_differences(comparisons, tmp_path / "d.png", test="ttest")
    assert _png_by_rankcli(path)
    panels = [ax for ax in drawn[0].axes if ax.get_visible()]
    assert len(panels) == 2
    heights = [bar.get_height() for bar in panels[0].patches]
    assert heights == sorted(np.asarray(values["b"]["ndcg@5"] - a).tolist(), reverse=True)
    c = comparisons[0]
    assert f"wins {c.wins}, ties {c.ties}, losses {c.losses}" in panels[0].get_title()
    assert "wins 0, ties 40, losses 0" in panels[1].get_title()


@pytest.mark.skipif(not have_matplotlib(), reason="matplotlib (the plot extra) is not installed")
def test_validation_curve_marks_the_kept_tree(tmp_path, drawn):
    from rankcli.display.plot import plot_validation_curve

    curve = [0.5, 0.6, None, 0.7, 0.65]
    path = plot_validation_curve(curve, 4, tmp_path / "v.png", metric="ndcg@5", loss="xendcg")
    assert _png_by_rankcli(path)
    ax = drawn[0].axes[0]
    kept = [line for line in ax.get_lines() if line.get_label().startswith("kept")]
    assert len(kept) == 1 and list(kept[0].get_xdata()) == [4] and list(kept[0].get_ydata()) == [0.7]
    assert kept[0].get_label() == "kept: 4 trees, 0.7000"
