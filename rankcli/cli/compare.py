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

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from rankcli.cli.eval import Gain, NoRelevant, Preset, Ties

NAME = "compare"
SHORT_HELP = "Compare runs per query with significance tests."


class Test(str, Enum):
    ttest = "ttest"
    permutation = "permutation"
    wilcoxon = "wilcoxon"
    bootstrap = "bootstrap"


class Correction(str, Enum):
    holm = "holm"
    bonferroni = "bonferroni"
    bh = "bh"
    none = "none"


class Format(str, Enum):
    table = "table"
    markdown = "markdown"
    latex = "latex"
    tsv = "tsv"


def command(
    runs: Annotated[list[Path], typer.Argument(help="Two or more runs or per-query metric files.", show_default=False)],
    qrels: Annotated[Path | None, typer.Option("--qrels", help="TREC qrels for TREC runs.")] = None,
    name: Annotated[list[str] | None, typer.Option("--name", help="Name of a run (repeat once per run, in order).",
                                                      show_default=False)] = None,
    metric: Annotated[list[str] | None, typer.Option(
        "--metric", "-m", help="Metric to compare (repeatable; ndcg@1,3,5 is shorthand). Default: ndcg@5 and ndcg@10 "
        "for runs, every metric column the per-query files share.", show_default=False)] = None,
    test: Annotated[Test, typer.Option("--test", help="The paired test (two-sided).")] = Test.ttest,
    alpha: Annotated[float, typer.Option("--alpha", help="Significance level for the adjusted p-values.")] = 0.01,
    correction: Annotated[Correction | None, typer.Option(
        "--correction", help="Multiple-testing correction over all tests of the report. Default: holm with more "
        "than one test, else none.", show_default=False)] = None,
    baseline: Annotated[str | None, typer.Option(
        "--baseline", help="The run (name or path) every other run is tested against. Default: the first of two "
        "runs; all pairs for more.", show_default=False)] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the permutation and bootstrap tests.")] = 0,
    permutations: Annotated[int, typer.Option(
        "--permutations", help="Sign-flip permutations (permutation test) or resamples (bootstrap).")] = 10000,
    intersect: Annotated[bool, typer.Option(
        "--intersect", help="Compare on the queries every run has with identical labels instead of failing.")] = False,
    convention: Annotated[Preset | None, typer.Option(
        "--convention", help="Metric convention preset, as in eval: paper (exp gain, skip, input order), lightgbm "
        "(exp gain, one, input order), sklearn (linear gain, zero, average ties), trec (linear gain, zero, ties by "
        "docid descending, as trec_eval). Default: trec with --qrels (TREC runs), paper otherwise. Runs only: "
        "per-query files carry the convention they were evaluated under.", show_default=False)] = None,
    gain: Annotated[Gain | None, typer.Option("--gain", help="Override the preset's gain: 2^y-1 or y.",
                                                 show_default=False)] = None,
    no_relevant: Annotated[NoRelevant | None, typer.Option(
        "--no-relevant", help="Override: queries without a relevant document are skipped, score 1 or 0.",
        show_default=False)] = None,
    ties: Annotated[Ties | None, typer.Option(
        "--ties", help="Override: equal scores in input order, averaged over their permutations, or ordered by docid "
        "descending in byte order (trec_eval's rule).", show_default=False)] = None,
    threshold: Annotated[float | None, typer.Option(
        "--threshold", help="mrr/map/precision/recall: a document is relevant when label >= this. Default: 1.",
        show_default=False)] = None,
    max_grade: Annotated[float | None, typer.Option("--max-grade", help="err: the top of the label scale. "
                                                       "Default: 4.", show_default=False)] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print every number as JSON.")] = False,
    output_format: Annotated[Format, typer.Option("--format", help="Output format (without --json).")] = Format.table,
    fail_if_worse: Annotated[bool, typer.Option(
        "--fail-if-worse", help="Exit with status 5 when a run is significantly worse than the baseline.")] = False,
) -> None:
    import sys

    from rankcli.errors import UsageError, WorseThanBaseline

    output_format = Format(output_format).value
    if json_output and output_format != "table":
        raise UsageError("--json and --format cannot be used together")
    if fail_if_worse and baseline is None and len(runs) > 2:
        raise UsageError("--fail-if-worse needs --baseline when comparing more than two runs")
    if permutations < 1:
        raise UsageError(f"--permutations must be at least 1, got {permutations}")
    if seed < 0:
        raise UsageError(f"--seed must be >= 0, got {seed}")

    from rankcli import report as render
    from rankcli.cli._common import log, print_json, stdout_console
    from rankcli.compare import compare_inputs
    from rankcli.core.metrics import Convention

    def value(x):
        return None if x is None else x.value

    from rankcli.evaluate import default_convention

    preset = value(convention) or default_convention(qrels is not None)
    conv = Convention.preset(preset).with_(gain=value(gain), no_relevant=value(no_relevant),
                                                      ties=value(ties), relevance_threshold=threshold,
                                                      max_grade=max_grade)
    if all(x is None for x in (convention, gain, no_relevant, ties, threshold, max_grade)):
        conv = None  # the default; an explicit convention must match the one per-query files were computed under
    result = compare_inputs(runs, names=name, metrics=metric, qrels=qrels, convention=conv, test=value(test),
                            alpha=alpha, correction=value(correction), baseline=baseline, seed=seed,
                            permutations=permutations, intersect=intersect)
    for note in result.notes:
        log(note)
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
    if fail_if_worse:
        worse = result.worse_than_baseline()
        if worse:
            first = worse[0]
            raise WorseThanBaseline(
                f"{len(worse)} comparison{'s' if len(worse) != 1 else ''} significantly worse than the baseline "
                f"{result.baseline}: {first.b} on {first.metric} ({first.difference:+.4f}, adjusted p "
                f"{first.p_adjusted:.4g} < {result.alpha:g})")
