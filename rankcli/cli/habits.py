"""The spellings users bring from LightGBM, XGBoost, Optuna and RankLib, answered with rankcli's own option.

A LightGBM user types ``--num-iterations``, an Optuna user ``--n-trials``, a RankLib user ``-metric2t NDCG@10``.
Left to the option parser, the first gets the closest option by spelling (``--num-leaves``: wrong), and RankLib's
single-dash words are read as clusters of short options (``-metric2t`` as ``-m etric2t``), so the error names
something the user never typed. These words are recognised before the parser, on every command that has the option
they stand for and does not use the word itself, and answered with one usage error naming rankcli's option (with the
value translated where rankcli spells it otherwise: ``-ranker 6`` is ``--loss lambdamart``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rankcli.errors import UsageError


@dataclass(frozen=True)
class Habit:
    """A foreign spelling and what rankcli calls it.

    ``target`` is rankcli's option (``--trees``) or, for a word that names a positional argument, that argument's name
    in upper case (``DATA``); ``origin`` is whose option it is (``LightGBM's``; empty for a spelling that is simply
    not rankcli's, such as ``--lr``); ``note`` is said after the option when a plain rename would mislead."""

    word: str
    target: str
    origin: str
    note: str = ""


_LONG = (
    [Habit(w, "--trees", "LightGBM's") for w in ("--num-iterations", "--num-iteration", "--num-boost-round",
                                                "--num-rounds", "--num-round", "--num-trees", "--num-tree")]
    + [Habit("--n-estimators", "--trees", "LightGBM's scikit-learn"),
       Habit("--objective", "--loss", "LightGBM's"),
       Habit("--objective", "--losses", "LightGBM's"),
       Habit("--metric", "--select-by", "LightGBM's", "(the validation metric early stopping and model selection use)"),
       Habit("--eval-at", "--select-by", "LightGBM's", "(one metric, with its cutoff)"),
       Habit("--ndcg-eval-at", "--select-by", "LightGBM's", "(one metric, with its cutoff)"),
       Habit("--lr", "--learning-rate", ""),
       Habit("--eta", "--learning-rate", "XGBoost's"),
       Habit("--shrinkage-rate", "--learning-rate", "LightGBM's"),
       Habit("--n-trials", "--budget", "Optuna's"),
       Habit("--n-trials", "--tune", "Optuna's", "(the number of trainings per loss)"),
       Habit("--early-stopping-rounds", "--early-stopping", "LightGBM's"),
       Habit("--early-stopping-round", "--early-stopping", "LightGBM's"),
       Habit("--num-threads", "--threads", "LightGBM's"),
       Habit("--n-jobs", "--threads", "LightGBM's scikit-learn"),
       Habit("--num-leaf", "--num-leaves", "LightGBM's"),
       Habit("--max-leaves", "--num-leaves", "LightGBM's"),
       Habit("--min-child-samples", "--min-data-in-leaf", "LightGBM's scikit-learn"),
       Habit("--min-data-per-leaf", "--min-data-in-leaf", "LightGBM's"),
       Habit("--random-state", "--seed", "LightGBM's scikit-learn"),
       Habit("--validation", "--valid", ""),
       Habit("--valid-data", "--valid", "LightGBM's")]
)

_RANKLIB = [
    Habit("-ranker", "--loss", "RankLib's"),
    Habit("-ranker", "--losses", "RankLib's"),
    Habit("-metric2t", "--select-by", "RankLib's", "(the metric on validation data)"),
    Habit("-metric2T", "--metric", "RankLib's", "(the test metric)"),
    Habit("-metric2T", "--select-by", "RankLib's", "(rankcli scores the test data with `rankcli eval`)"),
    Habit("-tree", "--trees", "RankLib's"),
    Habit("-leaf", "--num-leaves", "RankLib's"),
    Habit("-shrinkage", "--learning-rate", "RankLib's"),
    Habit("-mls", "--min-data-in-leaf", "RankLib's"),
    Habit("-estop", "--early-stopping", "RankLib's"),
    Habit("-epoch", "--trees", "RankLib's", "(a boosting round per epoch)"),
    Habit("-train", "DATA", "RankLib's"),
    Habit("-train", "TRAIN", "RankLib's"),
    Habit("-validate", "--valid", "RankLib's"),
    Habit("-test", "DATA", "RankLib's", "(score the test data with `rankcli predict MODEL DATA` or `rankcli eval DATA "
                                      "--model MODEL`)"),
    Habit("-save", "--output", "RankLib's"),
    Habit("-load", "MODEL_DIR", "RankLib's"),
    Habit("-norm", "--normalize", "RankLib's"),
    Habit("-kcv", "--folds", "RankLib's", "(`rankcli split DATA -o DIR --folds K` makes the folds)"),
]

#: RankLib's ``-ranker`` numbers and the rankcli loss that trains the same kind of model (None: rankcli has none).
RANKLIB_RANKERS = {"0": ("MART", "pointwise"), "1": ("RankNet", "ranknet"), "2": ("RankBoost", None),
                   "3": ("AdaRank", None), "4": ("Coordinate Ascent", None), "6": ("LambdaMART", "lambdamart"),
                   "7": ("ListNet", "listnet"), "8": ("Random Forests", None)}

#: RankLib's ``-norm`` names and convert's.
RANKLIB_NORMS = {"zscore": "zscore", "linear": "minmax", "sum": "sum"}


def _names(command: Any) -> set[str]:
    """Every option string of ``command`` (a click command), and its arguments' names in upper case."""
    names: set[str] = set()
    for param in command.params:
        names.update(param.opts)
        names.update(param.secondary_opts)
        if param.param_type_name == "argument":
            names.add((param.metavar or param.name or "").upper())
    return names


def _translated(habit: Habit, value: str | None) -> str:
    """The rankcli spelling of the habit's value, where rankcli writes it otherwise (empty when it does not)."""
    if value is None or value.startswith("-"):
        return ""
    if habit.word == "-ranker":  # a number; RankLib's own error for anything else
        known = RANKLIB_RANKERS.get(value.strip())
        if known is None:
            return ""
        name, loss = known
        return f" {loss}" if loss else f" (RankLib's {name}: rankcli has no such loss)"
    if habit.word == "--objective":
        from rankcli.train.losses import FOREIGN_LOSS_NAMES, LOSSES

        folded = value.strip().lower()
        ours = folded if folded in LOSSES else FOREIGN_LOSS_NAMES.get(folded, (None, None))[1]
        return f" {ours}" if ours else ""
    if habit.word in ("--eval-at", "--ndcg-eval-at"):
        first = value.split(",")[0].strip()
        return f" ndcg@{first}" if first.isdigit() else ""
    if habit.word == "-norm":
        return f" {RANKLIB_NORMS[value]}" if value in RANKLIB_NORMS else ""
    if habit.word.startswith("-metric2"):
        from rankcli.core.metrics.specs import UnknownMetricError, parse_metric

        try:
            parse_metric(value.lower())
        except UnknownMetricError:
            return ""
        return f" {value.lower()}"
    return ""


def _habit_for(word: str, names: set[str]) -> Habit | None:
    """The first habit spelled ``word`` whose target this command has."""
    for habit in (*_LONG, *_RANKLIB):
        if habit.word == word and habit.target in names:
            return habit
    return None


def _taking_values(command: Any) -> set[str]:
    """The option strings of ``command`` whose next argument is their value."""
    return {opt for param in command.params if param.param_type_name == "option" and not param.is_flag
            and param.nargs != 0 for opt in param.opts}


def check_habits(command_path: str, command: Any, args: list[str]) -> None:
    """A :class:`UsageError` for the first foreign spelling in ``args`` (up to ``--``) that ``command`` answers.

    A word the command uses itself is left alone (``experiment --metric`` is its test metric), and so is the value of
    one of the command's options (``--select-by -tree`` is the option's to refuse)."""
    names, taking = _names(command), _taking_values(command)
    value_next = False
    for i, arg in enumerate(args):
        if arg == "--":
            return
        if value_next or not arg.startswith("-"):
            value_next = False
            continue
        word, eq, inline = arg.partition("=")
        if word in names:
            value_next = word in taking and not eq
            continue
        habit = _habit_for(word, names)
        if habit is not None:
            value = inline or (args[i + 1] if i + 1 < len(args) else None)
            raise UsageError(f"{_message(habit, value, command_path)}. Try '{command_path} --help'.")


def _message(habit: Habit, value: str | None, command_path: str) -> str:
    whose = f"{habit.origin} option" if habit.origin else "not an option"
    if habit.target.startswith("-"):
        does = f"calls it {habit.target}{_translated(habit, value)}"
    else:
        does = f"takes {habit.target} as an argument"
    return f"{habit.word} is {whose}; {command_path} {does} {habit.note}".rstrip()


def one_loss_spelling(command: Any, args: list[str]) -> list[str]:
    """``args`` with the losses in the spelling ``command`` declares: ``experiment`` takes ``--losses a,b`` and
    ``tune`` a repeated ``--loss``, and each is also given the other's, so ``--loss a --loss b`` and ``--losses a,b``
    both work on both (in the order given; arguments after ``--`` are left alone)."""
    names = _names(command)
    cut = args.index("--") if "--" in args else len(args)
    head, tail = args[:cut], args[cut:]
    if "--losses" in names and "--loss" not in names:
        kept, given, joined_at = [], [], None
        i = 0
        while i < len(head):
            word, eq, inline = head[i].partition("=")
            if word in ("--loss", "--losses") and (eq or i + 1 < len(head)):
                given.append(inline if eq else head[i + 1])
                joined_at = len(kept) if joined_at is None else joined_at
                i += 1 if eq else 2
                continue
            kept.append(head[i])
            i += 1
        if joined_at is None or not any(a.partition("=")[0] == "--loss" for a in head):
            return args
        return kept[:joined_at] + ["--losses", ",".join(given)] + kept[joined_at:] + tail
    if "--loss" in names and "--losses" not in names:
        out = []
        i = 0
        while i < len(head):
            word, eq, inline = head[i].partition("=")
            if word == "--losses" and (eq or i + 1 < len(head)):
                value = inline if eq else head[i + 1]
                out += [x for name in value.split(",") for x in ("--loss", name.strip())]
                i += 1 if eq else 2
                continue
            out.append(head[i])
            i += 1
        return out + tail
    return args
