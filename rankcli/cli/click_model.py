"""Fit click models to click logs, evaluate them and compare them (Chuklin, Markov and de Rijke, Click Models for Web
Search, 2015).

Models (--model): gctr, rctr, dctr (click-through rates: global, per rank, per document), pbm (position-based),
cascade, ubm (user browsing), dcm (dependent click), ccm (click chain), dbn and sdbn (dynamic Bayesian network, and
its simplified form). Closed-form maximum likelihood for gctr, rctr, dctr, cascade, dcm and sdbn; EM (--iterations,
PyClick's 50 by default) for pbm, ubm, ccm and dbn. Every parameter starts at 1/2 with pseudo-counts 1 and 2, and EM
values are capped at 1 - 1e-6, as PyClick's (--prior, --cap). Parameters are per (query, document) pair, or with --by
relevance per relevance grade; plus the per-rank examination (ubm: per rank and rank of the last click above).

Logs (--format): rankcli click logs (simulate-clicks output), plain tables of session, query, rank, document, click
(Parquet or tab-separated with a header), and the Yandex Relevance Prediction Challenge format (tab-separated query
and click records, as PyClick's parser reads them). Bad input is exit 3 naming the file and line.

  rankcli click-model fit clicks.parquet -o dbn-model --model dbn
  rankcli click-model eval dbn-model held-out.parquet --per-rank
  rankcli click-model compare clicks.parquet --models pbm,ubm,dbn --split 0.8 --seed 1

A model directory holds model.json (the model, its options, the log's fingerprint, the log-likelihood per iteration)
and its parameters in Parquet; simulate-clicks --model and propensity --from-click-model read it.
"""

from __future__ import annotations

import time
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from rankcli.cli import options as opt
from rankcli.cli.options import Correction, UsageCommand
from rankcli.errors import UsageError, WorseThanBaseline

NAME = "click-model"
SHORT_HELP = "Fit, evaluate and compare click models (PBM, UBM, DBN, CCM, ...) on click logs."
MODEL_CHOICES = "gctr|rctr|dctr|pbm|cascade|ubm|dcm|ccm|dbn|sdbn"


class LogFormat(str, Enum):
    """``--format``: how the click log is laid out."""

    auto = "auto"
    rankcli = "rankcli"
    table = "table"
    yandex = "yandex"


class By(str, Enum):
    """``--by``: what the per-item parameters belong to."""

    document = "document"
    relevance = "relevance"


class EStep(str, Enum):
    """``--e-step``: the E-step's posteriors (DBN and CCM)."""

    exact = "exact"
    pyclick = "pyclick"


class Unknown(str, Enum):
    """``--unknown-clicks``: a Yandex click on a document its query did not show."""

    error = "error"
    ignore = "ignore"


class Test(str, Enum):
    """``--test``: the paired tests of :mod:`rankcli.core.stats`."""

    ttest = "ttest"
    permutation = "permutation"
    wilcoxon = "wilcoxon"
    bootstrap = "bootstrap"


class Unit(str, Enum):
    """``--unit``: what the paired test pairs."""

    session = "session"
    query = "query"


APP = typer.Typer(name=NAME, no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  context_settings={"help_option_names": ["-h", "--help"]})

_FORMAT = typer.Option("--format", help="The log's format (auto: a Parquet file with a session column or a text file "
                       "whose header names session, query, rank, document, click is a table; other Parquet a rankcli "
                       "log; other text Yandex).")
_UNKNOWN = typer.Option("--unknown-clicks", help="Yandex logs: a click on a document its query did not show is an "
                        "error, or ignored as PyClick ignores it (counted).")
_ITERATIONS = typer.Option("--iterations", help="EM iterations (PyClick's 50).")
_TOLERANCE = typer.Option("--tolerance", help="Stop EM once an iteration improves the log-likelihood per session by "
                          "less than this (0: run every iteration).")
_PRIOR = typer.Option("--prior", help="Starting value and pseudo-counts of every parameter, NUMERATOR/DENOMINATOR "
                      "(PyClick's 1/2: a start at 1/2, estimates (1 + k) / (2 + n)).", metavar="N/D")
_CAP = typer.Option("--cap", help="EM values are capped at 1 - CAP (PyClick's 1e-6).")
_E_STEP = typer.Option("--e-step", help="DBN and CCM: exact posteriors (conditioned on the whole session), or "
                       "PyClick's updates, defects included, to reproduce numbers computed with it (docs/clicks.md).")
_BY = typer.Option("--by", help="Per-item parameters per (query, document) pair, or per relevance grade (the log's "
                   "relevance column).")


def prior_from(text: str, cap: float):
    """``--prior N/D`` and ``--cap`` as a :class:`~rankcli.core.click_models.Prior` (exit 2 when malformed)."""
    from rankcli.core.click_models import Prior

    num, sep, den = str(text).partition("/")
    try:
        if not sep:
            raise ValueError
        values = float(num), float(den)
    except ValueError:
        raise UsageError(f"--prior: expected NUMERATOR/DENOMINATOR such as 1/2, got {text!r}") from None
    try:
        return Prior(*values, float(cap))
    except UsageError as exc:
        raise UsageError(f"--{exc}") from None


def _options(model: str, by: By, iterations: int, tolerance: float, prior: str, cap: float, e_step: EStep):
    from rankcli.click_model import FitOptions

    options = FitOptions(model, By(by).value, iterations, tolerance, prior_from(prior, cap), EStep(e_step).value)
    options.check()
    return options


def _progress():
    """A progress callback for EM on stderr: a line every 10 iterations of a fit that has run for 2 seconds."""
    from rankcli.cli._common import log

    start = time.monotonic()

    def report(it: int, total: int, ll: float) -> None:
        if (it % 10 == 0 or it == total) and time.monotonic() - start > 2.0:
            log(f"EM iteration {it}/{total}: log-likelihood {ll:.6g}")

    return report


@APP.command("fit", cls=UsageCommand, help="Fit a click model to a click log and write its directory.")
def fit(
    log: Annotated[Path, typer.Argument(help="Click log (rankcli click log, table, or Yandex text).",
                                        show_default=False)],
    output: Annotated[str, opt.output("Model directory to write.", metavar="MODEL")],
    model: Annotated[str, typer.Option("--model", help="The click model.", metavar=f"<{MODEL_CHOICES}>",
                                       show_default=False)],
    by: Annotated[By, _BY] = By.document,
    iterations: Annotated[int, _ITERATIONS] = 50,
    tolerance: Annotated[float, _TOLERANCE] = 0.0,
    prior: Annotated[str, _PRIOR] = "1/2",
    cap: Annotated[float, _CAP] = 1e-6,
    e_step: Annotated[EStep, _E_STEP] = EStep.exact,
    log_format: Annotated[LogFormat, _FORMAT] = LogFormat.auto,
    unknown_clicks: Annotated[Unknown, _UNKNOWN] = Unknown.error,
    dask: Annotated[str | None, opt.dask("Fit on a Dask cluster (each E-step summed per partition of sessions)",
                                         "Workers receive the coded sessions; the log is read here.")] = None,
    json_out: Annotated[bool, opt.json_flag("the fit")] = False,
    overwrite: Annotated[bool, opt.overwrite("model directory")] = False,
) -> None:
    """``click-model fit`` (its help is the decorator's)."""
    from rankcli.cli._common import prepare_output, print_json, stdout_console
    from rankcli.click_model import fit_log

    options = _options(model, by, iterations, tolerance, prior, cap, e_step)
    out = prepare_output(output, overwrite=overwrite, kind="click-model", inputs=[log], example="click-model")
    runner_factory = None
    if dask is not None:
        from rankcli.click_model.cluster import runner_factory as make_factory

        runner_factory = make_factory(dask)
    report = fit_log(log, out, options, fmt=LogFormat(log_format).value, unknown_clicks=Unknown(unknown_clicks).value,
                     overwrite=overwrite, progress=_progress(), runner_factory=runner_factory)
    if json_out:
        print_json(report.as_dict())
        return
    from rankcli.click_model.render import fit_renderables

    con = stdout_console()
    for r in fit_renderables(report):
        con.print(r)


@APP.command("eval", cls=UsageCommand, help="Score a fitted click model on a log: log-likelihood, perplexity per "
             "rank and overall, conditional perplexity, CTR prediction at rank 1 and, with --qrels, relevance "
             "prediction.")
def evaluate(
    model_dir: Annotated[Path, typer.Argument(help="Click-model directory (click-model fit).", show_default=False,
                                              metavar="MODEL")],
    log: Annotated[Path, typer.Argument(help="Click log to score the model on.", show_default=False)],
    qrels: Annotated[Path | None, typer.Option("--qrels", help="TREC qrels: also the NDCG of each query's documents "
                                               "ranked by the model's predicted relevance.", show_default=False)]
    = None,
    cutoff: Annotated[int, typer.Option("--cutoff", help="The NDCG cutoff of the relevance prediction.")] = 10,
    ctr: Annotated[bool, typer.Option("--ctr/--no-ctr", help="CTR prediction at rank 1 (Chapelle-Zhang: the model "
                                      "refitted per document on the sessions showing it lower).")] = True,
    per_rank: Annotated[bool, typer.Option("--per-rank", help="Show (and put in --json) the perplexities, click "
                                           "rates and predicted click rates rank by rank.")] = False,
    log_format: Annotated[LogFormat, _FORMAT] = LogFormat.auto,
    unknown_clicks: Annotated[Unknown, _UNKNOWN] = Unknown.error,
    json_out: Annotated[bool, opt.json_flag("the evaluation")] = False,
) -> None:
    """``click-model eval`` (its help is the decorator's)."""
    from rankcli.cli._common import print_json, stdout_console
    from rankcli.click_model import evaluate_log

    if cutoff < 1:
        raise UsageError(f"--cutoff: must be at least 1, got {cutoff}")
    report = evaluate_log(model_dir, log, fmt=LogFormat(log_format).value,
                          unknown_clicks=Unknown(unknown_clicks).value, ctr=ctr, qrels=qrels, cutoff=cutoff)
    if json_out:
        print_json(report.as_dict(per_rank=per_rank))
        return
    from rankcli.click_model.render import eval_renderables

    con = stdout_console()
    for r in eval_renderables(report, per_rank):
        con.print(r)


@APP.command("compare", cls=UsageCommand, help="Compare click models on held-out sessions: --log HELD_OUT with "
             "fitted model directories, or one LOG with --models and --split (fitted on a seeded split by session, "
             "compared on the rest). Paired tests on the per-session (--unit query: per-query) log-likelihoods, "
             "multiple-testing corrected; --fail-if-worse exits 5 when a model is significantly worse than the "
             "baseline (the first).")
def compare(
    inputs: Annotated[list[Path], typer.Argument(help="Model directories (with --log), or one click log (with "
                                                 "--models).", show_default=False, metavar="MODEL_DIR_OR_LOG...")],
    held_out: Annotated[Path | None, typer.Option("--log", help="The held-out click log the model directories are "
                                                  "scored on.", show_default=False)] = None,
    models: Annotated[str | None, typer.Option("--models", help="Models to fit on the split, comma-separated (e.g. "
                                               "pbm,ubm,dbn).", show_default=False)] = None,
    split: Annotated[float, typer.Option("--split", help="With --models: the fraction of sessions fitted on.")] = 0.8,
    name: Annotated[list[str] | None, typer.Option("--name", help="Name of a model directory (repeat once per "
                                                   "directory, in order).", show_default=False)] = None,
    baseline: Annotated[str | None, typer.Option("--baseline", help="The model every other is tested against "
                                                 "(default: the first).", show_default=False)] = None,
    unit: Annotated[Unit, typer.Option("--unit", help="What the test pairs: sessions, or queries (each query's "
                                       "sessions summed, for sessions that share documents).")] = Unit.session,
    test: Annotated[Test, typer.Option("--test", help="The paired test (two-sided).")] = Test.ttest,
    alpha: Annotated[float, typer.Option("--alpha", help="Significance level for the adjusted p-values.")] = 0.01,
    correction: Annotated[Correction | None, opt.correction(default="holm with more than one test, else none")] = None,
    permutations: Annotated[int, typer.Option("--permutations", help="Sign-flip permutations (permutation test) or "
                                              "resamples (bootstrap).")] = 10000,
    seed: Annotated[int, opt.seed("the split and the permutation and bootstrap tests", result="results")] = 0,
    by: Annotated[By, _BY] = By.document,
    iterations: Annotated[int, _ITERATIONS] = 50,
    tolerance: Annotated[float, _TOLERANCE] = 0.0,
    prior: Annotated[str, _PRIOR] = "1/2",
    cap: Annotated[float, _CAP] = 1e-6,
    e_step: Annotated[EStep, _E_STEP] = EStep.exact,
    log_format: Annotated[LogFormat, _FORMAT] = LogFormat.auto,
    unknown_clicks: Annotated[Unknown, _UNKNOWN] = Unknown.error,
    json_out: Annotated[bool, opt.json_flag("every number")] = False,
    fail_if_worse: Annotated[bool, typer.Option("--fail-if-worse", help="Exit with status 5 when a model is "
                                                "significantly worse than the baseline.")] = False,
) -> None:
    """``click-model compare`` (its help is the decorator's)."""
    from rankcli.cli._common import print_json, stdout_console

    if permutations < 1:
        raise UsageError(f"--permutations must be at least 1, got {permutations}")
    if seed < 0:
        raise UsageError(f"--seed must be >= 0, got {seed}")
    tests = {"test": Test(test).value, "alpha": alpha, "correction": None if correction is None else
             Correction(correction).value, "seed": seed, "permutations": permutations,
             "baseline": baseline, "unit": Unit(unit).value, "fmt": LogFormat(log_format).value,
             "unknown_clicks": Unknown(unknown_clicks).value}
    fitting = (by, iterations, tolerance, prior, cap, e_step)
    report = _compared(inputs, held_out, models, split, name, fitting, tests)
    if json_out:
        print_json(report.as_dict())
    else:
        from rankcli.click_model.render import compare_renderables

        con = stdout_console()
        con.width = 1000
        for r in compare_renderables(report):
            con.print(r)
    if fail_if_worse:
        _fail_if_worse(report)


def _compared(inputs, held_out, models, split, names, fitting, tests):
    """The comparison the options ask for: directories on a held-out log, or models fitted on a split."""
    from rankcli.click_model import compare_models, compare_split

    if (held_out is None) == (models is None):
        raise UsageError("give either --log HELD_OUT with model directories, or one LOG with --models")
    if models is None:
        return compare_models(held_out, inputs, names=names, **tests)
    if len(inputs) != 1:
        raise UsageError(f"--models fits on one click log, got {len(inputs)} inputs")
    if names:
        raise UsageError("--name names model directories; with --models the models are named by their names")
    listed = [m.strip() for m in models.split(",") if m.strip()]
    options = _options(listed[0] if listed else "", *fitting)
    return compare_split(inputs[0], listed, options, split=split, **tests)


def _fail_if_worse(report) -> None:
    worse = report.worse_than_baseline()
    if worse:
        first = worse[0]
        raise WorseThanBaseline(f"a requested gate failed: {first.b} explains the held-out sessions significantly "
                                f"worse than {report.baseline} ({first.difference:+.4g} log-likelihood per "
                                f"{report.unit}, adjusted p {first.p_adjusted:.4g} < {report.alpha:g})")
