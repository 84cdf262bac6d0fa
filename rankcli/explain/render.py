"""An :class:`~rankcli.explain.Explanation` as a rich table and as a plot (the plot needs the ``plot`` extra)."""

from __future__ import annotations

from pathlib import Path

from rankcli.display.numbers import number, p_value
from rankcli.display.plot import plot_importance


def explain_table(explanation, top: int):
    """A rich table of the ``top`` most important features (all with ``top`` 0) and a note under it."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    r = explanation.ranking
    rows = explanation.rows()
    shown = rows if top <= 0 else rows[:top]
    title = f"rankcli explain: {explanation.model}" + (f" on {explanation.data}: drop in {r.metric}"
                                                       if r is not None else "")
    table = Table(title=title, title_justify="left")
    table.add_column("feature")
    if r is not None:
        for name in ("drop", "± se", "p adj."):
            table.add_column(name, justify="right")
    table.add_column("gain", justify="right")
    table.add_column("gain %", justify="right")
    table.add_column("splits", justify="right")
    if explanation.contributions is not None:
        table.add_column("|contrib.|", justify="right")
    for row in shown:
        name = row["feature"] + (f" ({len(row['members'])})" if len(row["members"]) > 1 else "")
        cells = [name]
        if r is not None:
            cells += [number(row["drop"]), number(row["drop_stderr"]), p_value(row["p_value"])]
        cells += [f"{row['gain']:.4g}", _percent(row["gain_share"]), str(row["splits"])]
        if explanation.contributions is not None:
            cells.append(number(row["mean_abs_contribution"]))
        table.add_row(*cells)
    lines = []
    if len(shown) < len(rows):
        lines.append(f"top {len(shown)} of {len(rows)} features (--top 0: all; --json and -o: all)")
    if r is not None:
        lines.append(f"{r.metric} of the model {number(r.mean)} over {rows[0]['n'] if rows else 0} queries "
                     f"({r.base.shape[0]} in the data); drop: the mean loss of {r.metric} when the feature is "
                     f"permuted within each query ({r.repeats} permutation{'s' if r.repeats > 1 else ''}, seed "
                     f"{r.seed}), ± its standard error; p adj.: paired {r.test} against no drop, "
                     f"{r.correction}-adjusted over {len(rows)} features"
                     + _contributions_note(explanation))
        lines.append(f"convention: {_convention(r.convention)}")
    return Group(table, Text("\n".join(lines)))


def _percent(share: float | None) -> str:
    return "n/a" if share is None else f"{share:.1%}"


def _contributions_note(explanation) -> str:
    """The table's note on ``|contrib.|``: what it is and, when it is estimated, on which sample of queries."""
    s = explanation.sample
    if explanation.contributions is None or s is None:
        return ""
    note = "; |contrib.|: mean absolute TreeSHAP contribution, centred within each query"
    if s.complete:
        return note
    return (f"{note}, on {s.queries.shape[0]:,} of {s.of:,} queries drawn at random (seed {s.seed}; "
            "--contributions-queries all: every query; --json: its standard error)")


def _convention(conv: dict) -> str:
    return " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in conv.items())


def explain_plot(explanation, path: Path, top: int = 20) -> Path:
    """A PNG of the ``top`` features: their drop with ± 1 standard error bars (with data) beside their gain share."""
    rows = explanation.rows()[: top if top > 0 else None]
    r = explanation.ranking
    return plot_importance(
        [row["feature"] for row in rows], [row["gain_share"] for row in rows],
        [row["drop"] for row in rows] if r is not None else None,
        [row["drop_stderr"] for row in rows] if r is not None else None,
        path, metric=r.metric if r is not None else None,
        title=f"{explanation.model}" + (f" on {explanation.data}" if explanation.data else ""))
