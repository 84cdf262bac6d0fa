"""Tests of rankcli.plot: text sparklines, and PNG files when matplotlib is installed (the optional extra)."""

from __future__ import annotations

import math

import pytest

from rankcli.plot import CONVERGENCE_CAPTION, CONVERGENCE_NOTE, have_matplotlib, plot_convergence, plot_sweep, sparkline


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

    from rankcli.plot import convergence_figure

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
