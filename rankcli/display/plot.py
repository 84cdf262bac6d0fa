"""Pictures of an experiment: PNG plots with matplotlib (optional extra ``rankcli[plot]``) and text sparklines.

matplotlib is imported only inside the plotting functions; :func:`have_matplotlib` says whether it is there.
"""

from __future__ import annotations

import math
from pathlib import Path

from rankcli.formats.atomic.kinds import PLOT_SOFTWARE

INSTALL_HINT = 'pip install "rankcli[plot]"'
_BLOCKS = "▁▂▃▄▅▆▇█"


def _save_png(fig, path) -> None:
    """The figure as a PNG whose ``Software`` text chunk says rankcli wrote it: ``--overwrite`` replaces only such a
    plot (:mod:`rankcli.formats.atomic.kinds`)."""
    from rankcli import __version__

    fig.savefig(path, dpi=120, format="png", metadata={"Software": f"{PLOT_SOFTWARE} {__version__}"})


def have_matplotlib() -> bool:
    """Whether matplotlib (the ``plot`` extra) can be imported; the plotting functions need it."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only, never a window
    import matplotlib.pyplot as plt

    return plt


def sparkline(values: list[float], lo: float, hi: float, width: int = 40) -> str:
    """``values`` resampled to at most ``width`` points and drawn with block characters on the scale [lo, hi]."""
    vals = [v for v in values]
    if not vals:
        return ""
    if len(vals) > width:
        # take the value at evenly spaced positions, always keeping the last one
        idx = [round(i * (len(vals) - 1) / (width - 1)) for i in range(width)]
        vals = [vals[i] for i in idx]
    span = hi - lo
    out = []
    for v in vals:
        if v is None or not math.isfinite(v):
            out.append(" ")
        elif span <= 0:
            out.append(_BLOCKS[len(_BLOCKS) // 2])
        else:
            out.append(_BLOCKS[min(len(_BLOCKS) - 1, max(0, int((v - lo) / span * len(_BLOCKS))))])
    return "".join(out)


def convergence_note(unit: str = "trial") -> str:
    """What every point of a convergence curve is (printed under the sparklines), ``unit`` being what the curves are
    of: ``trial`` (random splits) or ``fold``."""
    return (f"Every point averages all {unit}s; a {unit} that stopped early (early stopping) carries forward the "
            "value of the model it keeps (its best iteration).")


def convergence_caption(unit: str = "trial") -> str:
    """The convergence plot's caption: :func:`convergence_note` and the band."""
    return convergence_note(unit) + f" Shaded band: ± 1 standard error of the mean over {unit}s."


#: :func:`convergence_note` and :func:`convergence_caption` of random splits (trials).
CONVERGENCE_NOTE = convergence_note()
CONVERGENCE_CAPTION = convergence_caption()


def plot_convergence(curves: dict[str, dict], path: Path, metric: str, title: str, unit: str = "trial") -> Path:
    """Mean validation metric against the number of trees, one line per loss with a ± 1 standard error band (the
    paper's Figure 1), written as a PNG.

    Parameters
    ----------
    curves : loss -> ``{"mean": [...], "stderr": [...]}`` per tree (one setting of
        :func:`rankcli.experiment.convergence`: carried-forward curves, so every point averages the same trials).
    path : the PNG file written (returned).
    metric : the validation metric's name, for the axis.
    title : the plot's title.
    unit : what the curves are of, ``trial`` or ``fold`` (the caption says it).
    """
    plt = _pyplot()
    fig = convergence_figure(curves, metric, title, unit)
    _save_png(fig, path)
    plt.close(fig)
    return path


def convergence_figure(curves: dict[str, dict], metric: str, title: str, unit: str = "trial"):
    """The matplotlib figure of :func:`plot_convergence` (lines, bands, caption), for callers that draw it elsewhere;
    ``curves``, ``metric``, ``title`` and ``unit`` as there."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    for i, (loss, c) in enumerate(curves.items()):
        mean = c["mean"]
        if not mean:
            continue
        trees = range(1, len(mean) + 1)
        ax.plot(trees, mean, label=loss, color=f"C{i}")
        err = c.get("stderr")
        if err:
            lo = [m - e if e is not None and math.isfinite(e) else m for m, e in zip(mean, err)]
            hi = [m + e if e is not None and math.isfinite(e) else m for m, e in zip(mean, err)]
            ax.fill_between(trees, lo, hi, color=f"C{i}", alpha=0.2, linewidth=0,
                            label=f"{loss} ± 1 stderr")
    ax.set_xlabel("number of trees")
    ax.set_ylabel(f"mean validation {metric}")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.text(0.01, 0.01, convergence_caption(unit), fontsize=7, wrap=True, ha="left", va="bottom")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


def plot_sweep(rows: list[dict], losses: list[str], path: Path, kind: str, metric: str) -> Path:
    """Mean test metric per loss against the sweep level (top) and each loss's difference to the first loss,
    ``loss - first`` = mean(loss) - mean(first), labelled so (bottom), written as a PNG.

    Parameters
    ----------
    rows : one sweep's rows of :func:`rankcli.experiment.sweep_rows` (``level``, ``<loss>``, ``<loss> stderr``,
        ``<loss> - <first>``).
    losses : the losses drawn, the first the reference of the differences.
    path : the PNG file written (returned).
    kind : the sweep's name (``label-noise``, ...), for the title and the axis.
    metric : the test metric's name, for the axis.
    """
    plt = _pyplot()
    levels = [r["level"] for r in rows]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6.4, 6.4), sharex=True,
                                      gridspec_kw={"height_ratios": [2, 1]})
    for i, loss in enumerate(losses):
        mean = [r[loss] for r in rows]
        err = [r.get(f"{loss} stderr") for r in rows]
        err = [e if e is not None and math.isfinite(e) else 0.0 for e in err]
        top.errorbar(levels, mean, yerr=err, marker="o", capsize=3, label=loss, color=f"C{i}")
    top.set_ylabel(f"mean test {metric}")
    top.set_title(f"{kind} sweep")
    top.grid(alpha=0.3)
    top.legend()
    first = losses[0]
    for i, loss in enumerate(losses[1:], start=1):
        label = f"{loss} - {first}"
        bottom.plot(levels, [r[label] for r in rows], marker="o", label=label, color=f"C{i}")
    bottom.axhline(0.0, color="grey", linewidth=0.8)
    bottom.set_xlabel(kind)
    bottom.set_ylabel(f"difference (loss - {first})" if len(losses) > 2 else
                      (f"{losses[1]} - {first}" if len(losses) == 2 else "difference"))
    bottom.grid(alpha=0.3)
    if len(losses) > 1:
        bottom.legend()
    fig.tight_layout()
    _save_png(fig, path)
    plt.close(fig)
    return path


def plot_propensity(result: dict, path: Path) -> Path:
    """Propensity per position with its bootstrap interval, positions from the power fit drawn hollow, and ``1/r`` for
    reference, on log-log axes, written as a PNG.

    Log-log because propensities fall like a power of the rank: on a linear axis every position past 10 of a long
    list sits flat at the bottom, and ``(1/r)^eta`` is a straight line of slope ``-eta`` here. A propensity of 0 (a
    position without clicks) has no place on a log axis and is left out of the line (the JSON keeps it).

    Parameters
    ----------
    result : the ``rankcli propensity --json`` document (``positions``, ``propensity``, ``ci_low``, ``ci_high``,
        ``fitted``, ``method``, ``fit``, ``source``, ``policy``).
    path : the PNG file written (returned).
    """
    plt = _pyplot()
    pos = result["positions"]
    prop = result["propensity"]
    shown = [p for p in prop if p is not None and p > 0]
    floor = min(shown + [1.0]) / 2
    lo = [max(v if v is not None else p or floor, floor) for v, p in zip(result["ci_low"], prop)]
    hi = [max(v if v is not None else p or floor, floor) for v, p in zip(result["ci_high"], prop)]
    fitted = result.get("fitted") or [False] * len(pos)
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.plot(pos, [1.0 / r for r in pos], "--", color="C3", linewidth=1.6, label="1/r", zorder=3)
    ax.fill_between(pos, lo, hi, color="C0", alpha=0.2, linewidth=0,
                    label=f"{result.get('confidence', 0.95):.0%} bootstrap interval")
    est = [(r, p) for r, p, f in zip(pos, prop, fitted) if not f and p is not None and p > 0]
    fit = [(r, p) for r, p, f in zip(pos, prop, fitted) if f and p is not None and p > 0]
    marker = "o-" if len(pos) <= 30 else "-"
    ax.plot([r for r, _ in est], [p for _, p in est], marker, color="C0", markersize=4,
            label=f"estimate ({result['method']})", zorder=2)
    if fit:
        ax.plot([r for r, _ in fit], [p for _, p in fit], "--", color="C0",
                label=f"(1/r)^eta, eta {result['fit']['eta']:.2f} (too few clicks)", zorder=2)
    ax.set_xlabel("position (log scale)")
    ax.set_ylabel("examination propensity, position 1 = 1 (log scale)")
    ax.set_title(f"propensity from {Path(result.get('source', '')).name} (policy {result.get('policy')})")
    ax.set_ylim(floor, max(1.5, max(hi) * 1.5))
    from matplotlib.ticker import ScalarFormatter

    ax.xaxis.set_major_formatter(ScalarFormatter())  # positions as numbers (1, 10, 100), not powers of ten
    ax.grid(which="both", alpha=0.2)
    return _finish(plt, fig, ax, path)


def _finish(plt, fig, ax, path: Path) -> Path:
    """Grid, legend and layout of a one-axes figure, written to ``path`` as a PNG and closed."""
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    _save_png(fig, path)
    plt.close(fig)
    return path


def plot_best_so_far(curves: dict[str, list[float]], path: Path, metric: str, budget: int) -> Path:
    """The best validation value after each finished trial, one line per loss: whether the budget was enough (a
    curve still rising at the end was not), written as a PNG.

    Parameters
    ----------
    curves : loss -> best validation value after trial 1, 2, ... (finished trials in number order).
    path : the PNG file written (returned).
    metric : the validation metric's name, for the axis.
    budget : the trials each loss was given, for the axis and the title.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    for i, (loss, values) in enumerate(curves.items()):
        if values:
            ax.step(range(1, len(values) + 1), values, where="post", marker="o", markersize=3, label=loss,
                    color=f"C{i}")
    ax.set_xlabel("finished trials (the first: train's parameters)")
    ax.set_ylabel(f"best validation {metric} so far")
    ax.set_xlim(0.5, max(budget, max((len(v) for v in curves.values()), default=1)) + 0.5)
    ax.set_title(f"tuning: best so far ({budget} trials per loss)")
    return _finish(plt, fig, ax, path)


def plot_importance(features: list[str], gain_share: list[float], drops: list[float] | None,
                    stderr: list[float] | None, path: Path, *, metric: str | None, title: str) -> Path:
    """Feature importance as horizontal bars, most important on top, written as a PNG: the drop in ``metric`` when
    the feature is permuted within each query with ± 1 standard error bars (when ``drops`` is given), beside the
    share of the model's gain.

    Parameters
    ----------
    features : the features (or groups), most important first.
    gain_share : each one's share of the total gain.
    drops, stderr : each one's mean drop and its standard error over queries, or None (no data).
    path : the PNG file written (returned).
    metric : the metric of the drops. title : the figure's title.
    """
    plt = _pyplot()
    n = len(features)
    panels = 2 if drops is not None else 1
    fig, axes = plt.subplots(1, panels, figsize=(4.2 * panels + 1.6, 1.2 + 0.28 * max(n, 3)), sharey=True,
                             squeeze=False)
    y = list(range(n))[::-1]

    def clean(values):
        return [v if v is not None and math.isfinite(v) else 0.0 for v in values]

    if drops is not None:
        ax = axes[0][0]
        ax.barh(y, clean(drops), xerr=clean(stderr or [0.0] * n), color="C0", capsize=2)
        ax.axvline(0.0, color="grey", linewidth=0.8)
        ax.set_xlabel(f"drop in {metric} when permuted within queries (± 1 stderr)")
        ax.grid(axis="x", alpha=0.3)
    ax = axes[0][panels - 1]
    ax.barh(y, clean(gain_share), color="C1")
    ax.set_xlabel("share of the model's gain")
    ax.grid(axis="x", alpha=0.3)
    axes[0][0].set_yticks(y)
    axes[0][0].set_yticklabels(features)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    _save_png(fig, path)
    plt.close(fig)
    return path


#: The most panels ``compare --plot`` draws in one figure (one per comparison of two runs on one metric).
MAX_DIFFERENCE_PANELS = 24


def plot_differences(comparisons: list, path: Path, *, test: str) -> Path:
    """Each comparison's per-query differences ``b - a``, sorted from the largest gain to the largest loss, with its
    wins, ties and losses, as IR papers show a per-query comparison, written as a PNG (one panel per comparison).

    Parameters
    ----------
    comparisons : :class:`rankcli.compare.Comparison` objects whose ``differences`` are set.
    path : the PNG file written (returned).
    test : the test whose adjusted p-value each panel states.
    """
    plt = _pyplot()
    n = len(comparisons)
    cols = min(n, 3)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.4 * cols, 3.2 * rows), squeeze=False)
    for ax, c in zip([a for row in axes for a in row], comparisons):
        d = sorted((float(x) for x in c.differences), reverse=True)
        colours = ["C2" if x > 0 else "C3" if x < 0 else "grey" for x in d]
        ax.bar(range(1, len(d) + 1), d, width=1.0, color=colours, linewidth=0)
        ax.axhline(0.0, color="black", linewidth=0.6)
        ax.axhline(c.difference, color="C0", linewidth=1.0, linestyle="--", label=f"mean {c.difference:+.4f}")
        p = "n/a" if not math.isfinite(c.p_adjusted) else f"{c.p_adjusted:.3g}"
        ax.set_title(f"{c.b} - {c.a}: {c.metric}\nwins {c.wins}, ties {c.ties}, losses {c.losses}; "
                     f"{test} p (adjusted) {p}", fontsize=9)
        ax.set_xlabel("queries, sorted by difference")
        ax.set_ylabel(f"{c.metric} difference")
        ax.set_xlim(0.5, max(len(d), 1) + 0.5)
        ax.legend(fontsize=8, loc="upper right")
        ax.grid(axis="y", alpha=0.3)
    for ax in [a for row in axes for a in row][n:]:
        ax.set_visible(False)
    fig.tight_layout()
    _save_png(fig, path)
    plt.close(fig)
    return path


def plot_validation_curve(curve: list, best_iteration: int, path: Path, *, metric: str, loss: str) -> Path:
    """A trained model's validation curve (``metric`` after each tree) with the tree the model keeps marked, written as
    a PNG.

    Parameters
    ----------
    curve : the validation value after each trained tree (None where not finite), rankcli.json's ``curve``.
    best_iteration : the number of trees the model keeps (1-based; the marked point).
    path : the PNG file written (returned).
    metric : the validation metric (``--select-by``). loss : the loss, for the title.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    trees = list(range(1, len(curve) + 1))
    ax.plot(trees, [v if v is not None else math.nan for v in curve], "-", color="C0", label=f"validation {metric}")
    if 1 <= best_iteration <= len(curve) and curve[best_iteration - 1] is not None:
        kept = curve[best_iteration - 1]
        ax.axvline(best_iteration, color="C3", linewidth=0.8, linestyle=":")
        ax.plot([best_iteration], [kept], "o", color="C3", label=f"kept: {best_iteration} trees, {kept:.4f}")
    ax.set_xlabel("trees")
    ax.set_ylabel(f"validation {metric}")
    ax.set_title(f"{loss}: validation curve ({len(curve)} trees trained)")
    return _finish(plt, fig, ax, path)
