"""Pictures of an experiment: PNG plots with matplotlib (optional extra ``rankcli[plot]``) and text sparklines.

matplotlib is imported only inside the plotting functions; :func:`have_matplotlib` says whether it is there.
"""

from __future__ import annotations

import math
from pathlib import Path

INSTALL_HINT = 'pip install "rankcli[plot]"'
_BLOCKS = "▁▂▃▄▅▆▇█"


def have_matplotlib() -> bool:
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


def plot_convergence(curves: dict[str, dict], path: Path, metric: str, title: str) -> Path:
    """Mean validation metric against the number of trees, one line per loss (the paper's Figure 1)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for i, (loss, c) in enumerate(curves.items()):
        mean = c["mean"]
        if mean:
            ax.plot(range(1, len(mean) + 1), mean, label=loss, color=f"C{i}")
    ax.set_xlabel("number of trees")
    ax.set_ylabel(f"mean validation {metric}")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_sweep(rows: list[dict], losses: list[str], path: Path, kind: str, metric: str) -> Path:
    """Mean test metric per loss against the sweep level (top) and the difference to the first loss (bottom)."""
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
        bottom.plot(levels, [r[f"{loss} - {first}"] for r in rows], marker="o", label=f"{loss} - {first}",
                    color=f"C{i}")
    bottom.axhline(0.0, color="grey", linewidth=0.8)
    bottom.set_xlabel(kind)
    bottom.set_ylabel("difference")
    bottom.grid(alpha=0.3)
    if len(losses) > 1:
        bottom.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
