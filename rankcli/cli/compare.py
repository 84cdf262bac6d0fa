"""Compare runs per query with paired significance tests, fit for papers and for CI gates.

Each RUN is a Parquet run (qid, label, score: what `rankcli predict` writes), a TREC run (qid Q0 docid rank score tag)
together with --qrels, or a per-query metric file from `rankcli eval --per-query` (qid and one column per metric).
Runs are named by their file name without the extension unless --name is given (once per run, in order). TREC runs are
read as `rankcli eval` reads them: under the trec convention by default, and a run that shares no document id with
the qrels is exit 3.

With --baseline RUN (a name or a path) every other run is tested against it; with exactly two runs the first is the
baseline; otherwise every pair is tested. Each comparison tests the later run against the earlier one (or the
baseline): difference = mean(b) - mean(a), W/T/L = queries where b is higher / equal / lower.

Tests (two-sided): ttest (paired t-test, the paper's; default), permutation (paired sign-flip randomization test,
p = (hits + 1) / (permutations + 1); every sign vector is enumerated, exactly, when 2^queries <= --permutations),
wilcoxon (signed-rank; zeros dropped, exact p up to 50 non-zero differences), bootstrap (symmetric studentized
bootstrap of the mean: centred differences resampled --permutations times, |t*| against |t|; its interval ci_low,
ci_high excludes 0 exactly when p < --alpha). Fewer than two queries: not testable (n/a). All differences zero: p = 1.
All differences equal and non-zero: not testable for ttest and bootstrap (no variance), exact p for the others.

The p-values of every (comparison, metric) test form one family for --correction: holm (default when there is more
than one test), bonferroni, bh (Benjamini-Hochberg), none. Significant means adjusted p < --alpha (default 0.01, the
paper's). All runs must cover the same queries with the same labels (exit 3 names the first differing query) unless
--intersect. Per metric, only queries where every run has a value are used (queries without a relevant document are
skipped under the paper convention).

Output: a table of means with markers (▲/▼ against the baseline, or superscript letters of the runs a run is
significantly better than) and one row per comparison; --json with every number; --format markdown|latex|tsv. The same
inputs and --seed give byte-identical output. --fail-if-worse exits with status 5 when any run is significantly worse
than the baseline on any metric.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from rankcli.cli import options as opt
from rankcli.cli.options import Correction, Gain, NoRelevant, Preset, Ties
from rankcli.errors import UsageError, WorseThanBaseline
from rankcli.formats.atomic import atomic_path, kinds

NAME = "compare"
SHORT_HELP = "Compare runs per query with significance tests."


class Test(str, Enum):
    """``--test``: the paired tests of :mod:`rankcli.core.stats`."""

    ttest = "ttest"
    permutation = "permutation"
    wilcoxon = "wilcoxon"
    bootstrap = "bootstrap"


class Format(str, Enum):
    """``--format``: how the report is printed without ``--json``."""

    table = "table"
    markdown = "markdown"
    latex = "latex"
    tsv = "tsv"


# The options that take more than a line to declare, named here so that the signature of `command` reads as the list
# of its options, in the order --help shows them.
_NAMES = typer.Option("--name", help="Name of a run (repeat once per run, in order).", show_default=False)
_METRIC = opt.metric("Metric to compare (repeatable; ndcg@1,3,5 is shorthand)",
                     default="ndcg@5 and ndcg@10 for runs, every metric column the per-query files share")
_BASELINE = typer.Option("--baseline", help="The run (name or path) every other run is tested against (default: the "
                         "first of two runs; all pairs for more).", show_default=False)
_PERMUTATIONS = typer.Option("--permutations", help="Sign-flip permutations (permutation test) or resamples "
                             "(bootstrap).")
_INTERSECT = typer.Option("--intersect", help="Compare on the queries every run has with identical labels instead of "
                          "failing.")
_CONVENTION = opt.convention(default="trec with --qrels (TREC runs), paper otherwise",
                             note="Runs only: per-query files carry the convention they were evaluated under.")
_FAIL_IF_WORSE = typer.Option("--fail-if-worse", help="Exit with status 5 when a run is significantly worse than the "
                              "baseline.")
_PLOT = typer.Option("--plot", help="Also draw each comparison's per-query differences, sorted, with its wins, ties "
                     "and losses, as a PNG (needs matplotlib: the plot extra).", show_default=False, metavar="PNG")


def command(
    runs: Annotated[list[Path], typer.Argument(help="Two or more runs or per-query metric files.", show_default=False)],
    qrels: Annotated[Path | None, typer.Option("--qrels", help="TREC qrels for TREC runs.")] = None,
    name: Annotated[list[str] | None, _NAMES] = None,
    metric: Annotated[list[str] | None, _METRIC] = None,
    test: Annotated[Test, typer.Option("--test", help="The paired test (two-sided).")] = Test.ttest,
    alpha: Annotated[float, typer.Option("--alpha", help="Significance level for the adjusted p-values.")] = 0.01,
    correction: Annotated[Correction | None, opt.correction(default="holm with more than one test, else none")] = None,
    baseline: Annotated[str | None, _BASELINE] = None,
    seed: Annotated[int, opt.seed("the permutation and bootstrap tests", result="p-values")] = 0,
    permutations: Annotated[int, _PERMUTATIONS] = 10000,
    intersect: Annotated[bool, _INTERSECT] = False,
    convention: Annotated[Preset | None, _CONVENTION] = None,
    gain: Annotated[Gain | None, opt.gain()] = None,
    no_relevant: Annotated[NoRelevant | None, opt.no_relevant()] = None,
    ties: Annotated[Ties | None, opt.ties()] = None,
    threshold: Annotated[float | None, opt.threshold()] = None,
    max_grade: Annotated[float | None, opt.max_grade()] = None,
    json_output: Annotated[bool, opt.json_flag("every number")] = False,
    output_format: Annotated[Format, typer.Option("--format", help="Output format (without --json).")] = Format.table,
    fail_if_worse: Annotated[bool, _FAIL_IF_WORSE] = False,
    plot: Annotated[str | None, _PLOT] = None,
    overwrite: Annotated[bool, opt.overwrite("--plot file")] = False,
) -> None:
    output_format = Format(output_format).value
    _check_options(json_output, output_format, fail_if_worse, baseline, runs, permutations, seed)
    from rankcli.cli._common import log
    from rankcli.compare import compare_inputs

    if plot is not None:
        plot = _plot_path(plot, overwrite, runs, qrels)

    conv = _convention(qrels is not None, convention, gain, no_relevant, ties, threshold, max_grade)
    result = compare_inputs(runs, names=name, metrics=metric, qrels=qrels, convention=conv, test=_value(test),
                            alpha=alpha, correction=_value(correction), baseline=baseline, seed=seed,
                            permutations=permutations, intersect=intersect)
    if qrels is not None and convention is None:
        from rankcli.cli._common import log_implied_convention

        log_implied_convention(conv, "--qrels makes these TREC runs, scored as trec_eval scores them",
                               "--convention paper gives the paper's (exponential gain, such queries skipped)")
    for note in result.notes:
        log(note)
    if plot is not None:
        _plot(result, plot, overwrite)
    _render(result, json_output, output_format)
    if fail_if_worse:
        _fail_if_worse(result)


def _check_options(json_output: bool, output_format: str, fail_if_worse: bool, baseline: str | None, runs: list,
                   permutations: int, seed: int) -> None:
    """Refuse option combinations and values before any input is read (exit 2)."""
    if json_output and output_format != "table":
        raise UsageError("--json and --format cannot be used together")
    if fail_if_worse and baseline is None and len(runs) > 2:
        raise UsageError("--fail-if-worse needs --baseline when comparing more than two runs")
    if permutations < 1:
        raise UsageError(f"--permutations must be at least 1, got {permutations}")
    if seed < 0:
        raise UsageError(f"--seed must be >= 0, got {seed}")


def _plot_path(plot: str, overwrite: bool, runs: list[Path], qrels: Path | None):
    """The checked --plot path (matplotlib installed, never an input or standard output)."""
    from rankcli.cli._common import prepare_output
    from rankcli.display.plot import INSTALL_HINT, have_matplotlib

    if not have_matplotlib():
        raise UsageError(f"--plot needs matplotlib: {INSTALL_HINT}")
    if plot == "-":
        raise UsageError("--plot -: standard output carries the report; give the PNG a file name")
    return prepare_output(plot, overwrite=overwrite, inputs=[*runs, *([qrels] if qrels else [])], binary=True,
                          option="--plot", example="differences.png", file_kind=kinds.PLOT)


def _plot(result, plot, overwrite: bool) -> None:
    """The per-query differences of every comparison that has them, as one PNG (written atomically)."""
    from rankcli.display.plot import MAX_DIFFERENCE_PANELS, plot_differences

    drawn = [c for c in result.comparisons if c.differences is not None and len(c.differences)]
    if len(drawn) > MAX_DIFFERENCE_PANELS:
        raise UsageError(f"--plot draws one panel per comparison, at most {MAX_DIFFERENCE_PANELS}; this report has "
                         f"{len(drawn)}: fewer --metric values or a --baseline make fewer")
    with atomic_path(plot, overwrite, suffix=".png", file_kind=kinds.PLOT) as tmp:
        plot_differences(drawn, tmp, test=result.test)


def _value(x: Enum | None):
    return None if x is None else x.value


def _convention(trec_input: bool, preset, gain, no_relevant, ties, threshold, max_grade):
    """The convention the options ask for, or None when none is given: the default then is the preset for the input
    (trec for TREC runs, else paper), and per-query files keep their own (an explicit one must match theirs)."""
    if all(x is None for x in (preset, gain, no_relevant, ties, threshold, max_grade)):
        return None
    from rankcli.core.metrics import Convention
    from rankcli.evaluate import default_convention

    return Convention.preset(_value(preset) or default_convention(trec_input)).with_(
        gain=_value(gain), no_relevant=_value(no_relevant), ties=_value(ties), relevance_threshold=threshold,
        max_grade=max_grade)


def _render(result, json_output: bool, output_format: str) -> None:
    """The report on standard output: JSON, a table, or Markdown/LaTeX/TSV text."""
    from rankcli.cli._common import print_json, stdout_console
    from rankcli.compare import render

    if json_output:
        print_json(result.as_dict())
    elif output_format == "table":
        # A fixed, generous width: tables never wrap, and the output does not depend on the terminal.
        console = stdout_console()
        console.width = 1000
        console.print(render.compare_table(result))
    else:
        text = {"markdown": render.compare_markdown, "latex": render.compare_latex,
                "tsv": render.compare_tsv}[output_format](result)
        sys.stdout.write(text)
        sys.stdout.flush()


def _fail_if_worse(result) -> None:
    """Exit status 5 (:class:`~rankcli.errors.WorseThanBaseline`) when a run is significantly worse than the
    baseline."""
    worse = result.worse_than_baseline()
    if worse:
        first = worse[0]
        raise WorseThanBaseline(
            f"{len(worse)} comparison{'s' if len(worse) != 1 else ''} significantly worse than the baseline "
            f"{result.baseline}: {first.b} on {first.metric} ({first.difference:+.4f}, adjusted p "
            f"{first.p_adjusted:.4g} < {result.alpha:g})")
