"""Result objects -> rich tables, JSON-ready dicts, Markdown, LaTeX and TSV. The one library module that knows rich.

Renderers are grouped by command below. They never print: rich renderables or strings are returned and the CLI
writes them to stdout. Nothing time-dependent goes into any output, so the same inputs give byte-identical output.
"""

from __future__ import annotations

import math

# =====================================================================================================================
# compare (rankcli.compare.Report)

#: Markers against the baseline: significantly better / worse.
_UP, _DOWN = "\u25b2", "\u25bc"
_SUPERSCRIPT = dict(zip("abcdefghijklmnoprstuvwxyz0123456789",
                        "\u1d43\u1d47\u1d9c\u1d48\u1d49\u1da0\u1d4d\u02b0\u2071\u02b2\u1d4f\u02e1\u1d50\u207f\u1d52"
                        "\u1d56\u02b3\u02e2\u1d57\u1d58\u1d5b\u02b7\u02e3\u02b8\u1dbb\u2070\u00b9\u00b2\u00b3\u2074"
                        "\u2075\u2076\u2077\u2078\u2079"))


def _num(x: float | None, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.{digits}f}"


def _signed(x: float | None, digits: int = 4) -> str:
    if x is None or math.isnan(x):
        return "n/a"
    return f"{x:+.{digits}f}"


def _pval(p: float) -> str:
    if p is None or math.isnan(p):
        return "n/a"
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"


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
    from rankcli.compare.loading import KIND_NAMES

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
        rows.append([f"{c.b} - {c.a}", c.metric, _signed(c.difference), _num(c.result.stderr), _pval(c.result.p_value),
                     _pval(c.p_adjusted), f"{c.wins}/{c.ties}/{c.losses}", _decision(c)])
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
                      *[Text(_num(report.means[n][m]) + _plain_mark(report, marks[n][m])) for m in report.metrics])
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
            value = _num(report.means[n][m])
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
            value = _num(report.means[n][m])
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


# =====================================================================================================================
# eval (rankcli.evaluate.EvalReport)


def eval_dict(report) -> dict:
    """``rankcli eval --json``: exactly ``{"convention": {...}, "queries": N, "skipped": K, "metrics": {...}}``."""
    return report.as_dict()


#: How a metric's per-query values are summarised, in words (the registry's ``aggregate``).
_AGGREGATES = {"mean": "mean", "sum": "sum", "count": "count", "gmean": "geometric mean"}


def eval_table(report):
    """A rich table of the summaries (means; sums, counts and geometric means said so when there are any), then the
    number of queries evaluated/skipped and the convention."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    result = report.result
    counts_differ = len(set(result.evaluated.values())) > 1
    records = {str(s): s.record for s in report.specs}
    how = {name: records[name].aggregate if name in records else "mean" for name in result.means}
    mixed = set(how.values()) != {"mean"}
    table = Table(title=f"rankcli eval: {report.source}" if report.source else "rankcli eval", title_justify="left")
    table.add_column("metric")
    table.add_column("value" if mixed else "mean", justify="right")
    if mixed:
        table.add_column("over queries")
    if counts_differ:
        table.add_column("queries", justify="right")
    for name, mean in result.means.items():
        whole = name in records and records[name].integer and how[name] in ("sum", "count") and math.isfinite(mean)
        cells = [name, f"{mean:.0f}" if whole else _num(mean)]
        if mixed:
            cells.append(_AGGREGATES.get(how[name], how[name]))
        if counts_differ:
            cells.append(str(result.evaluated.get(name, 0)))
        table.add_row(*cells)
    conv = result.convention
    if counts_differ:
        counted = f"queries: {result.queries} evaluated by every metric, {result.skipped} skipped by some"
    else:
        counted = f"queries: {result.queries} evaluated, {result.skipped} skipped"
    lines = [counted + (" (no relevant document)" if result.skipped else "") + f"; {report.rows} rows",
             f"convention: {conv.describe()}"]
    lines += [f"note: {n}" for n in report.notes]
    return Group(table, Text("\n".join(lines)))


# =====================================================================================================================
# experiment (rankcli.experiment.ExperimentResult)

def number_cell(x: float | None, digits: int = 4) -> str:
    """A number for an experiment table: ``n/a`` when it is missing or not finite."""
    return "n/a" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def signed_cell(x: float | None, digits: int = 4) -> str:
    """A difference for an experiment table, with its sign: ``n/a`` when it is missing or not finite."""
    return "n/a" if x is None or not math.isfinite(x) else f"{x:+.{digits}f}"


def p_cell(p: float | None, digits: int = 3, reason: str | None = None) -> str:
    """A p-value for a table; a test that could not be run says so (and why, when ``reason`` is given)."""
    if p is None or not math.isfinite(p):
        return f"not testable: {reason}" if reason else "not testable"
    return f"{p:.{digits}f}"


def _test_of(config, summary: dict | None) -> dict:
    """The test of ``summary`` (``summary["test"]``), or what ``config`` alone says of it."""
    from rankcli.experiment.significance import describe_test

    if summary and summary.get("test"):
        return summary["test"]
    return describe_test(config.test_name, config.folds, seed=config.seed)


def protocol_note(config, summary: dict | None = None) -> str:
    """One sentence: what a unit of the statistics is, how many there are, and which test runs over them."""
    from rankcli.experiment.significance import spelled_out

    test = _test_of(config, summary)
    if config.folds:
        n = None
        if summary and summary["settings"]:
            ns = {v["n"] for ms in summary["settings"][0]["losses"].values() for v in ms.values()}
            n = max(ns) if ns else None
        queries = f"{n} " if n is not None else ""
        return (f"{config.trials} fold{'s' if config.trials != 1 else ''}, each trained once per loss; test metrics "
                f"pooled over the {queries}test queries of all folds; {spelled_out(test['name'])} over those queries "
                "(n = queries)")
    return (f"{config.trials} random split{'s' if config.trials != 1 else ''} (trials), n = trials (one test mean "
            f"per trial); test: {test['label']}")


def significance_paragraph(config, summary: dict | None = None) -> str:
    """summary.md's sentences on the test across random-split trials: why the trials are not independent, what the
    test that ran answers, and the other one (empty under the folds protocol, whose units are the test queries)."""
    from rankcli.experiment.significance import PAPER_TEST, REFERENCE

    if config.folds:
        return ""
    test = _test_of(config, summary)
    why = ("The trials are not independent samples: every test set is drawn from the same pool of queries and the "
           "training sets overlap, so the differences of two trials are correlated.")
    if test["name"] == "ttest":
        return (f"Test: the paired t-test across trials, {PAPER_TEST}. {why} Its p-values are therefore too small; "
                "`--test corrected-ttest` (the default) corrects the variance for the overlap.")
    counts = (f", with n_test = {test['n_test']} test queries and n_train = {test['n_train']} training + validation "
              "queries per trial" if "n_train" in test else "")
    return (f"Test: the corrected resampled t-test ({REFERENCE}). {why} The variance of the mean difference over the "
            f"J trials is estimated as (1/J + n_test/n_train) s^2 instead of s^2/J{counts}; the stderr shown is its "
            f"square root. `--test ttest` gives {PAPER_TEST}.")


def _setting_markdown(result, s: dict) -> list[str]:
    from rankcli.experiment.settings import setting_losses
    from rankcli.experiment.summary import difference_label

    config = result.config
    unit = "queries" if config.folds else "trials"
    lines = [f"## {s['setting']}", "", "| loss | " + " | ".join(config.metrics) + " | n |",
             "|---|" + "---|" * (len(config.metrics) + 1)]
    setting = {st.name: st for st in result.settings}.get(s["setting"])
    for loss in (setting_losses(config, setting) if setting is not None else list(s["losses"])):
        vs = [s["losses"][loss][m] for m in config.metrics]
        ns = sorted({v["n"] for v in vs})
        cells = [f"{number_cell(v['mean'])} ± {number_cell(v['stderr'])}" for v in vs]
        lines.append(f"| {loss} | " + " | ".join(cells) + f" | {'/'.join(map(str, ns))} {unit} |")
    lines.append("")
    if s["tests"]:
        test = _test_of(config, result.summary)["name"]
        lines += [f"| difference | metric | mean difference | stderr | n | p ({test}) | p adjusted |",
                  "|---|---|---|---|---|---|---|"]
        lines += [f"| {difference_label(t['a'], t['b'])} | {t['metric']} | {signed_cell(t['difference'])} | "
                  f"{number_cell(t['stderr'])} | {t['n']} | {p_cell(t['p_value'], reason=t['reason'])} | "
                  f"{p_cell(t['p_adjusted'])} |" for t in s["tests"]]
        lines.append("")
    return lines


def _sweep_markdown(config, kind: str, rows: list[dict], summary: dict | None = None) -> list[str]:
    from rankcli.experiment.config import format_level
    from rankcli.experiment.settings import primary_metric
    from rankcli.experiment.summary import sweep_columns
    from rankcli.experiment.sweeps import naive_only_note, sweep_note

    names, diffs = sweep_columns(config, kind)
    test = _test_of(config, summary)
    lines = [f"## sweep {kind}: test {primary_metric(config)}", "", sweep_note(config, kind), "",
             f"p adjusted: {test['label']}, `{config.correction}` within each level.", ""]
    if kind == "position-bias":
        lines += ["Per loss, `<loss>+ips - <loss>` is mean(IPS) - mean(naive) over the units, with its paired "
                  f"test (p adjusted with `{config.correction}` within each level); "
                  "`<loss>+ips+control - <loss>+control` is the same on the randomised log (the control, adjusted "
                  "as a family of its own).", ""]
        if naive_only_note(config):
            lines += [naive_only_note(config), ""]
    lines += [f"| {kind} | " + " | ".join(names + diffs + [f"p adjusted ({d})" for d in diffs]) + " |",
              "|---|" + "---|" * (len(names) + 2 * len(diffs))]
    for r in rows:
        lines.append(f"| {format_level(r['level'])} | " + " | ".join(
            [number_cell(r[c]) for c in names] + [signed_cell(r[d]) for d in diffs]
            + [p_cell(r[f"{d} p_adjusted"]) for d in diffs]) + " |")
    return lines + [""]


def experiment_markdown(result, sweep_tables: dict[str, list[dict]]) -> str:
    """``summary.md``: the protocol, every setting's table and tests, and every sweep's table.

    Parameters
    ----------
    result : the :class:`rankcli.experiment.ExperimentResult` (its config, settings and summary).
    sweep_tables : :func:`rankcli.experiment.sweep_rows` of its summary.
    """
    from rankcli.experiment.summary import hyperparameter_markdown, loss_options_note

    config, train = result.config, result.config.train
    split = "given folds" if config.folds else "split " + ",".join(f"{x:g}" for x in config.split)
    lines = [f"# rankcli experiment: {', '.join(config.losses)}", "",
             f"Protocol: {protocol_note(config, result.summary)}. {split.capitalize()}; seed {config.seed}; "
             f"selection by validation {train.select_by}, early stopping {train.early_stopping}, at most "
             f"{train.trees} trees; test convention `{train.convention}`"
             f"{' (queries without a relevant document skipped)' if train.convention == 'paper' else ''}. "
             f"p-values adjusted with `{config.correction}` within each setting. A difference `b - a` is "
             "mean(b) - mean(a); `n` counts the units a number is computed over."
             + loss_options_note(config.resolved_loss_options()), ""]
    lines += [significance_paragraph(config, result.summary), ""] if not config.folds else []
    lines += [f"Overlap allowed (`--allow-overlap`): {note}." for note in result.summary.get("overlap", [])]
    lines += [""] if result.summary.get("overlap") else []
    lines += hyperparameter_markdown(result.summary.get("hyperparameters"))
    for s in result.summary["settings"]:
        lines += _setting_markdown(result, s)
    for kind, rows in sweep_tables.items():
        lines += _sweep_markdown(config, kind, rows, result.summary)
    return "\n".join(lines)
