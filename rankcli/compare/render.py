"""A :class:`rankcli.compare.Report` as rich renderables, Markdown, LaTeX and TSV.

The functions never print: they return rich renderables or strings, and the CLI writes them to stdout. Nothing
time-dependent goes into any output, so the same inputs give byte-identical output. Numbers are written by
:mod:`rankcli.display.numbers`; the TSV keeps every number at full precision, for scripts.
"""

from __future__ import annotations

import math

from rankcli.compare.loading import KIND_NAMES
from rankcli.display.numbers import number, p_value, signed

#: Markers against the baseline: significantly better / worse.
_UP, _DOWN = "\u25b2", "\u25bc"
_SUPERSCRIPT = dict(zip("abcdefghijklmnoprstuvwxyz0123456789",
                        "\u1d43\u1d47\u1d9c\u1d48\u1d49\u1da0\u1d4d\u02b0\u2071\u02b2\u1d4f\u02e1\u1d50\u207f\u1d52"
                        "\u1d56\u02b3\u02e2\u1d57\u1d58\u1d5b\u02b7\u02e3\u02b8\u1dbb\u2070\u00b9\u00b2\u00b3\u2074"
                        "\u2075\u2076\u2077\u2078\u2079"))


def _letters(report) -> dict[str, str]:
    """All-pairs mode: run -> its letter (a, b, c, ...; numbers after z)."""
    out = {}
    for i, name in enumerate(report.run_names):
        out[name] = "abcdefghijklmnopqrstuvwxyz"[i] if i < 26 else str(i + 1)
    return out


def compare_markers(report) -> dict[str, dict[str, str]]:
    """run -> metric -> marker: with a baseline ``up``/``down`` (significantly better/worse than it), otherwise the
    letters of the runs this run is significantly better than (``"bc"``)."""
    marks: dict[str, dict[str, str]] = {n: {m: "" for m in report.metrics} for n in report.run_names}
    if report.baseline is not None:
        for c in report.comparisons:
            if c.decision in ("better", "worse"):
                marks[c.b][c.metric] = "up" if c.decision == "better" else "down"
        return marks
    letters = _letters(report)
    winners: dict[str, dict[str, list[str]]] = {n: {m: [] for m in report.metrics} for n in report.run_names}
    for c in report.comparisons:
        if c.decision == "better":
            winners[c.b][c.metric].append(c.a)
        elif c.decision == "worse":
            winners[c.a][c.metric].append(c.b)
    order = {n: i for i, n in enumerate(report.run_names)}
    for n in report.run_names:
        for m in report.metrics:
            marks[n][m] = "".join(letters[x] for x in sorted(winners[n][m], key=order.get))
    return marks


def _pairs_described(report) -> str:
    """Which pairs the report tests: against the baseline, every run against one (``fuse --compare``), or all."""
    if report.baseline is not None:
        return f"baseline {report.baseline}"
    against = {c.b for c in report.comparisons}
    if len(against) == 1 and len(report.comparisons) == len(report.runs) - 1 > 1:
        return f"each run against {next(iter(against))}"
    return "all pairs"

def compare_summary(report) -> str:
    """One line: test, alpha, correction, baseline, queries, convention."""
    tests = sum(1 for c in report.comparisons if c.result.testable)
    parts = [f"test {report.test}"]
    if report.test in ("permutation", "bootstrap"):
        parts[0] += f" ({report.permutations} {'resamples' if report.test == 'bootstrap' else 'permutations'}, " \
                    f"seed {report.seed})"
    parts.append(f"alpha {report.alpha:g}")
    parts.append(f"correction {report.correction} over {tests} test{'s' if tests != 1 else ''}")
    parts.append(_pairs_described(report))
    q = f"{report.queries} queries"
    if report.dropped:
        q += f" ({report.dropped} dropped: not in every run or labels differ)"
    parts.append(q)
    used = sorted(set(report.used.values()))
    if used and used != [report.queries]:
        parts.append("tested on " + ", ".join(f"{m} {n}" for m, n in report.used.items()) +
                     " (queries where every run has a value)")
    if report.convention:
        conv = report.convention
        if {"gain", "no_relevant", "ties"} <= set(conv):
            parts.append(f"convention gain={conv['gain']} no_relevant={conv['no_relevant']} ties={conv['ties']}")
    return "; ".join(parts)


def compare_inputs(report) -> str:
    """One line: each input's name, kind and path."""
    return "inputs: " + "; ".join(f"{r.name} = {KIND_NAMES.get(r.kind, r.kind)} {r.path}" for r in report.runs)


def compare_notes(report) -> list[str]:
    """Lines that explain the markers and flag untestable comparisons."""
    notes = []
    if report.baseline is not None:
        notes.append(f"{_UP} / {_DOWN}: significantly better / worse than {report.baseline} "
                     f"(adjusted p < {report.alpha:g}).")
    else:
        notes.append(f"superscript letters: significantly better than the runs with those letters "
                     f"(adjusted p < {report.alpha:g}).")
    untestable: dict[str, int] = {}
    for c in report.comparisons:
        if not c.result.testable:
            reason = c.result.reason or "no p-value"
            untestable[reason] = untestable.get(reason, 0) + 1
    for reason, count in untestable.items():
        explained = _REASON_NOTES.get(reason, reason)
        notes.append(f"{count} comparison{'s' if count != 1 else ''} not testable ({explained}).")
    return notes


#: Why a comparison is not testable (rankcli.core.stats.REASON_*), as the notes under the table explain it.
_REASON_NOTES = {
    "fewer than two queries": "fewer than two queries with a value in every run",
    "all differences are equal (zero variance)": "every query differs by the same amount, so the test has no "
                                                 "variance to use; permutation and wilcoxon give an exact p-value",
}


def _decision(c) -> str:
    # Not testable: say why in the table itself.
    if not c.result.testable and c.result.reason:
        return f"{c.decision}: {c.result.reason}"
    return c.decision


def _run_label(report, name: str) -> str:
    if report.baseline is not None:
        return f"{name} (baseline)" if name == report.baseline else name
    return f"({_letters(report)[name]}) {name}"


def _plain_mark(report, mark: str) -> str:
    if mark == "up":
        return _UP
    if mark == "down":
        return _DOWN
    return "".join(_SUPERSCRIPT.get(ch, "^" + ch) for ch in mark)


def _comparison_rows(report) -> list[list[str]]:
    rows = []
    for c in report.comparisons:
        rows.append([f"{c.b} - {c.a}", c.metric, signed(c.difference), number(c.result.stderr),
                     p_value(c.result.p_value), p_value(c.p_adjusted), f"{c.wins}/{c.ties}/{c.losses}", _decision(c)])
    return rows


_COMPARISON_HEADER = ["comparison", "metric", "difference", "stderr", "p", "p adjusted", "W/T/L", "decision"]


def compare_table(report):
    """Rich renderables: the summary line, the means table with markers, the comparisons table, the notes."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    marks = compare_markers(report)
    means = Table(box=None, pad_edge=False, show_edge=False)
    means.add_column("run")
    for m in report.metrics:
        means.add_column(m)          # left-justified: the numbers line up, the markers trail
    # Cells as Text: a run named "[x]" is a name, not rich markup.
    for n in report.run_names:
        means.add_row(Text(_run_label(report, n)),
                      *[Text(number(report.means[n][m]) + _plain_mark(report, marks[n][m])) for m in report.metrics])
    comps = Table(box=None, pad_edge=False, show_edge=False)
    for i, h in enumerate(_COMPARISON_HEADER):
        comps.add_column(h, justify="right" if 2 <= i <= 6 else "left")
    for row in _comparison_rows(report):
        comps.add_row(*[Text(x) for x in row])
    return Group(Text(compare_summary(report)), Text(compare_inputs(report)), Text(""), means, Text(""), comps,
                 Text(""), *[Text(n) for n in compare_notes(report)])


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def compare_markdown(report) -> str:
    """A compare report as Markdown: the summary line, the means per run (the best in bold) and the tests."""
    marks = compare_markers(report)
    best = {m: max((report.means[n][m] for n in report.run_names if not math.isnan(report.means[n][m])),
                   default=None) for m in report.metrics}
    lines = [compare_summary(report), "", compare_inputs(report), "", "| run | " + " | ".join(report.metrics) + " |",
             "|---|" + "---:|" * len(report.metrics)]
    for n in report.run_names:
        cells = []
        for m in report.metrics:
            value = number(report.means[n][m])
            if best[m] is not None and report.means[n][m] == best[m]:
                value = f"**{value}**"
            mark = marks[n][m]
            if mark in ("up", "down"):
                value += _UP if mark == "up" else _DOWN
            elif mark:
                value += f"<sup>{mark}</sup>"
            cells.append(value)
        lines.append(f"| {_md_escape(_run_label(report, n))} | " + " | ".join(cells) + " |")
    lines += ["", "| " + " | ".join(_COMPARISON_HEADER) + " |", "|---|---|" + "---:|" * 5 + "---|"]
    for row in _comparison_rows(report):
        lines.append("| " + " | ".join(_md_escape(x) for x in row) + " |")
    lines += [""] + [f"{n}" for n in compare_notes(report)]
    return "\n".join(lines) + "\n"


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def _tex(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def compare_latex(report) -> str:
    """A ``tabular`` of means (best per metric in bold) with markers; plain LaTeX, no packages needed."""
    marks = compare_markers(report)
    best = {m: max((report.means[n][m] for n in report.run_names if not math.isnan(report.means[n][m])),
                   default=None) for m in report.metrics}
    lines = [f"% rankcli compare: {_tex(compare_summary(report))}",
             r"\begin{tabular}{l" + "r" * len(report.metrics) + "}", r"\hline",
             "Run & " + " & ".join(_tex(m) for m in report.metrics) + r" \\", r"\hline"]
    for n in report.run_names:
        cells = []
        for m in report.metrics:
            value = number(report.means[n][m])
            if best[m] is not None and report.means[n][m] == best[m]:
                value = r"\textbf{" + value + "}"
            mark = marks[n][m]
            if mark == "up":
                value += r"$^{\uparrow}$"
            elif mark == "down":
                value += r"$^{\downarrow}$"
            elif mark:
                value += r"\textsuperscript{" + mark + "}"
            cells.append(value)
        lines.append(_tex(_run_label(report, n)) + " & " + " & ".join(cells) + r" \\")
    lines += [r"\hline", r"\end{tabular}"]
    if report.baseline is not None:
        lines.append(f"% $\\uparrow$ / $\\downarrow$: significantly better / worse than {_tex(report.baseline)} "
                     f"(adjusted p < {report.alpha:g})")
    else:
        lines.append(f"% superscript letters: significantly better than the runs with those letters "
                     f"(adjusted p < {report.alpha:g})")
    return "\n".join(lines) + "\n"


_TSV_COLUMNS = ["a", "b", "metric", "n", "mean_a", "mean_b", "difference", "stderr", "ci_low", "ci_high", "test",
                "statistic", "p_value", "p_adjusted", "significant", "decision", "wins", "ties", "losses", "reason"]


def _tsv_cell(x) -> str:
    if x is None:
        return ""
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, float):
        return "nan" if math.isnan(x) else repr(x)
    return str(x).replace("\t", " ").replace("\n", " ")


def compare_tsv(report) -> str:
    """One row per comparison, every number at full precision: for spreadsheets and scripts."""
    lines = ["\t".join(_TSV_COLUMNS)]
    for c in report.comparisons:
        d = c.as_dict()
        lines.append("\t".join(_tsv_cell(d[k]) for k in _TSV_COLUMNS))
    return "\n".join(lines) + "\n"
