"""The typer options that several commands share, declared once so that every command shows them the same way.

Each function returns a fresh ``typer.Option`` to put in a parameter's ``Annotated`` type; the command keeps the
parameter's Python type and default, because those decide the parsing, which is part of the CLI's contract::

    from typing import Annotated

    from rankcli.cli import options as opt

    def command(
        output: Annotated[str, opt.output("Run file to write; - for standard output.")],
        convention: Annotated[opt.Preset | None, opt.convention(default="trec for a TREC run, paper otherwise")]
        = None,
        seed: Annotated[int, opt.seed("the simulation")] = 0,
        json_out: Annotated[bool, opt.json_flag("the summary")] = False,
        overwrite: Annotated[bool, opt.overwrite("output file")] = False,
    ) -> None: ...

The rules these declarations keep:

- An option with a fixed default has it in the signature and typer shows it as ``[default: X]``. An option whose
  default depends on other options or on the machine has ``None`` in the signature and ends its help with
  ``(default: ...)``; pass that text as ``default=``.
- An option taking one of a few words shows them as ``<a|b|c>``: an ``Enum`` type (``Preset``, ``Correction``, ...)
  does it by itself; a plain ``str`` option (checked by the library, with its own error message) gets the same
  display through ``metavar``.
- The size of a LightGBM model is counted in trees, never rounds.

Only typer, enum and typing are imported here: every command module imports this one at start-up (``rankcli --help``).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

import typer

CONVENTIONS = ("paper", "lightgbm", "sklearn", "trec")
# trec breaks ties by document id, which a dataset being trained on does not rank by: train and experiment refuse it.
TRAINING_CONVENTIONS = ("paper", "lightgbm", "sklearn")
CORRECTIONS = ("holm", "bonferroni", "bh", "none")

_PRESET_HELP = {
    "paper": "paper (exp gain, skip, input order)",
    "lightgbm": "lightgbm (exp gain, one, input order)",
    "sklearn": "sklearn (linear gain, zero, average ties)",
    "trec": "trec (trec_eval's: linear gain, zero, ties by docid descending)",
}


class Preset(str, Enum):
    """A metric convention preset (:meth:`rankcli.core.metrics.Convention.preset`)."""

    paper = "paper"
    lightgbm = "lightgbm"
    sklearn = "sklearn"
    trec = "trec"


class Gain(str, Enum):
    """The gain of a convention's DCG: ``2^y - 1`` or ``y``."""

    exponential = "exponential"
    linear = "linear"


class NoRelevant(str, Enum):
    """What a query without a relevant document scores: skipped, 1 or 0."""

    skip = "skip"
    one = "one"
    zero = "zero"


class Ties(str, Enum):
    """How equal scores are ordered: input order, averaged over their permutations, or by docid descending."""

    input = "input"
    average = "average"
    docid_desc = "docid-desc"


class Correction(str, Enum):
    """A multiple-testing correction (:func:`rankcli.core.stats.adjust`)."""

    holm = "holm"
    bonferroni = "bonferroni"
    bh = "bh"
    none = "none"


def choices(words: Sequence[str]) -> str:
    """The ``<a|b|c>`` display of a choice, as typer shows an ``Enum`` option, for a plain ``str`` option."""
    return "<" + "|".join(words) + ">"


def _with_default(text: str, default: str | None) -> str:
    """``text`` ending ``(default: ...).`` when the default is computed (typer cannot show it)."""
    text = text.rstrip(".")
    return f"{text}." if default is None else f"{text} (default: {default})."


def convention(*, default: str | None = None, applies_to: str = "", presets: Sequence[str] = CONVENTIONS,
               note: str = "") -> typer.models.OptionInfo:
    """``--convention``: the metric convention preset.

    Parameters
    ----------
    default : the computed default, for an option whose signature default is ``None`` (e.g. ``"trec for a TREC run,
        paper otherwise"``); leave ``None`` when the signature has a fixed default.
    applies_to : what the convention is used for, e.g. ``"--select-by"`` (empty: every metric of the command).
    presets : the presets the command accepts; a ``str`` option shows them as its metavar.
    note : a sentence added after the presets.
    """
    text = "Metric convention preset" + (f" of {applies_to}" if applies_to else "") + ": "
    text += ", ".join(_PRESET_HELP[p] for p in presets) + "."
    if note:
        text += " " + note
    return typer.Option("--convention", help=_with_default(text, default), show_default=default is None,
                        metavar=choices(presets))


def gain() -> typer.models.OptionInfo:
    """``--gain``: override the preset's gain."""
    return typer.Option("--gain", help="Override the preset's gain: 2^y-1 or y.", show_default=False)


def no_relevant() -> typer.models.OptionInfo:
    """``--no-relevant``: override what a query without a relevant document scores."""
    return typer.Option("--no-relevant", help="Override: queries without a relevant document are skipped, score 1 "
                        "(normalised metrics) or 0.", show_default=False)


def ties() -> typer.models.OptionInfo:
    """``--ties``: override the preset's tie rule."""
    return typer.Option("--ties", help="Override: equal scores in input order, averaged over their permutations, or "
                        "ordered by docid descending in byte order (trec_eval's rule).", show_default=False)


def threshold(*, trec_eval_short: bool = False) -> typer.models.OptionInfo:
    """``--threshold``: the relevance threshold of binary metrics; ``-l`` too when ``trec_eval_short``."""
    names = ("--threshold", "-l") if trec_eval_short else ("--threshold",)
    text = "Binary metrics (mrr, map, precision, recall, bpref, ...): a document is relevant when label >= this"
    return typer.Option(*names, help=_with_default(text, "1" + ("; trec_eval's -l" if trec_eval_short else "")),
                        show_default=False)


def max_grade() -> typer.models.OptionInfo:
    """``--max-grade``: the top of the label scale for ERR."""
    return typer.Option("--max-grade", help=_with_default("err: the top of the label scale.", "4"), show_default=False)


def correction(*, default: str | None = None, scope: str = "all tests of the report") -> typer.models.OptionInfo:
    """``--correction``: the multiple-testing correction.

    Parameters
    ----------
    default : the computed default for a ``None`` signature default; ``None`` when the signature has a fixed one.
    scope : the family of p-values corrected together.
    """
    text = f"Multiple-testing correction over {scope}: holm, bonferroni, bh (Benjamini-Hochberg) or none."
    return typer.Option("--correction", help=_with_default(text, default), show_default=default is None,
                        metavar=choices(CORRECTIONS))


def metric(text: str, *, default: str | None = None) -> typer.models.OptionInfo:
    """``-m/--metric``: the metrics of the command, e.g. ``ndcg@10``; ``ndcg@1,3,5`` is shorthand for three cutoffs.

    Parameters
    ----------
    text : what the metrics are for, starting the help text.
    default : the computed default for a ``None`` signature default.
    """
    return typer.Option("--metric", "-m", help=_with_default(text, default), show_default=default is None)


def param(*, overrides: str = "the preset") -> typer.models.OptionInfo:
    """``--param``: any other LightGBM parameter, ``key=value``, repeatable."""
    text = ("Any other LightGBM parameter, key=value (repeatable), checked against LightGBM's names and aliases; "
            f"overrides {overrides}. Not one that an option sets (objective, metric, num_iterations, learning_rate, "
            "num_leaves, min_data_in_leaf, early_stopping_round, num_threads, seeds).")
    return typer.Option("--param", help=text, show_default=False, metavar="KEY=VALUE")


def params_file() -> typer.models.OptionInfo:
    """``--params-file``: hyperparameters from a file (rankcli tune's ``best.json``), below the options and --param."""
    return typer.Option("--params-file", help="Hyperparameters from a file: rankcli tune's best.json (or its output "
                        "directory), or {\"params\": {...}}. Options given and --param win over it; it wins over "
                        "--preset. Recorded in the output.", show_default=False, metavar="FILE")


def space(*, lead: str = "A", after: str = "") -> typer.models.OptionInfo:
    """``--space FILE``: a search-space file of ``rankcli tune`` (and ``experiment --tune``)."""
    return typer.Option("--space", help=f"{lead} TOML or JSON file that narrows, widens, fixes or adds dimensions of "
                        f"the search space{after}.", show_default=False, metavar="FILE")


def loss_option(*, scope: str) -> typer.models.OptionInfo:
    """``--loss-option [LOSS:]NAME=VALUE``: a loss's own parameter, repeatable (``scope`` says which losses)."""
    text = ("A loss's own parameter, [LOSS:]NAME=VALUE (repeatable), e.g. approxndcg:temperature=0.5, "
            "lambdaloss:variant=ndcg-loss2, lambdaloss:mu=5, lambdaloss:sigma=2, listnet:step=diagonal; "
            f"{scope} (docs/commands/train.md lists them).")
    return typer.Option("--loss-option", help=text, show_default=False, metavar="[LOSS:]NAME=VALUE")


def step() -> typer.models.OptionInfo:
    """``--step``: ListNet's boosting step."""
    return typer.Option("--step", help="ListNet's boosting step: paper (the approximate inverse Hessian XE-NDCG "
                                       "takes, the default) or diagonal (the Hessian's diagonal).",
                        show_default=False, metavar="<paper|diagonal>")


def seed(of: str, *, result: str = "output bytes") -> typer.models.OptionInfo:
    """``--seed``: the seed of every random step of ``of``; the same inputs and seed give the same ``result``."""
    return typer.Option("--seed", help=f"Seed of {of} (same seed, same {result}).")


def threads(text: str = "LightGBM threads", *, default: str | None = None) -> typer.models.OptionInfo:
    """``--threads``: LightGBM's threads; ``default`` is the computed default for a ``None`` signature default."""
    return typer.Option("--threads", help=_with_default(text, default), show_default=default is None)


def trees(*, default: str | None = None) -> typer.models.OptionInfo:
    """``--trees``: the largest number of trees trained."""
    return typer.Option("--trees", help=_with_default("Maximum number of trees.", default),
                        show_default=default is None)


def early_stopping(*, default: str | None = None) -> typer.models.OptionInfo:
    """``--early-stopping``: trees without improvement on the validation metric before training stops."""
    return typer.Option("--early-stopping", help=_with_default("Stop after this many trees without improvement of "
                        "the validation metric (0: off).", default), show_default=default is None)


def output(text: str, *, metavar: str = "PATH") -> typer.models.OptionInfo:
    """``-o/--output``: what the command writes (``-`` is standard output where the command allows it)."""
    return typer.Option("--output", "-o", help=text, show_default=False, metavar=metavar)


def overwrite(what: str = "output", *, text: str | None = None) -> typer.models.OptionInfo:
    """``--overwrite``: replace an existing ``what`` (only one that rankcli wrote; see rankcli.formats.atomic)."""
    return typer.Option("--overwrite", help=text or f"Replace an existing {what}.")


def json_flag(what: str = "the result", *, note: str = "") -> typer.models.OptionInfo:
    """``--json``: print ``what`` as JSON on standard output instead of a table."""
    return typer.Option("--json", help=f"Print {what} as JSON on stdout{note}.")


def dask(action: str, note: str) -> typer.models.OptionInfo:
    """``--dask``: run on a Dask cluster (``local:N`` or a scheduler address; see :mod:`rankcli.distributed`).

    Parameters
    ----------
    action : what the command does there, e.g. ``"Train data-parallel on a Dask cluster"``.
    note : what the command needs of the cluster or promises of the result (a sentence).
    """
    return typer.Option("--dask", help=f"{action}: local:N (N worker processes here) or a scheduler address such as "
                        f"tcp://host:8786. {note} Needs pip install \"rankcli\\[dask]\".", show_default=False)


class UsageCommand(typer.core.TyperCommand):
    """A command whose usage line names its arguments as its reference page does: ``rankcli experiment [OPTIONS]
    DATA``, an optional argument in brackets (``[RUN]``), a repeated one with ``...`` (typer writes ``{data}``)."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        """The arguments parsed, after the spellings of LightGBM, Optuna and RankLib are answered with rankcli's
        (:mod:`rankcli.cli.habits`); a command that passes unknown options on (trec_eval's own) is left alone."""
        if not ctx.ignore_unknown_options:
            from rankcli.cli.habits import check_habits

            check_habits(ctx.command_path, self, args)
        return super().parse_args(ctx, args)

    def collect_usage_pieces(self, ctx) -> list[str]:
        """The pieces of the usage line after the command's name: ``[OPTIONS]``, then every argument."""
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name != "argument":
                pieces += param.get_usage_pieces(ctx)
                continue
            name = param.metavar or (param.name or "").upper() + ("..." if param.nargs != 1 else "")
            pieces.append(name if param.required else f"[{name}]")
        return pieces
