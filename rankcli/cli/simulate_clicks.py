"""Simulate click logs with a cascade or position-based model.

Reads a dataset with graded labels and writes one row per displayed document of every simulated impression: `qid`
(a new id per impression), `source_qid`, `docid` (or `source_row` when the data has none), `position` (1-based),
`label` (the click, 0/1), `relevance` (the original label) and all feature columns, so that `rankcli train` trains on
the clicks directly.

Cascade (default; Craswell et al. 2008, as Bruch 2021 uses it): the user scans the list from the top, clicks a
document of grade g with probability p(g) and stops at the first click; the impression is the list up to and
including the click. PBM: the document at position r is examined with probability (1/r)^eta and, if examined,
clicked with probability p(g); all clicks are kept.

Logging policy: --ranker random shuffles every impression (fully randomised); a deterministic ranker (label, input,
a model directory) shows its order, or with --randomize top:N shuffles its top N per impression (RandTop-n, Joachims
et al. 2017) and with --randomize swap:K swaps its position K with a uniformly random displayed position (the swap
intervention); the log then has a ranker_rank column (the document's rank in the ranker's order). Randomised PBM logs
with --keep-no-click are what `rankcli propensity` estimates position bias from.

Impressions without any click carry no preference and are dropped unless --keep-no-click; the summary says how many.
Click rates in the summary count every simulated impression, dropped ones included.

Example: rankcli simulate-clicks train.parquet -o clicks.parquet --impressions 10 --seed 1
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rankcli.cli import options as opt
from rankcli.errors import UsageError
from rankcli.formats.atomic import kinds, model_files

NAME = "simulate-clicks"
SHORT_HELP = "Simulate click logs with a cascade or position-based model."


def command(
    data: Annotated[Path, typer.Argument(help="Dataset with graded labels (Parquet).", show_default=False)],
    output: Annotated[str, opt.output("Click log to write (Parquet; - for standard output into a pipe or file).")],
    model: Annotated[str, typer.Option(help="Click model: cascade | pbm | a click-model directory (rankcli "
                                       "click-model fit: clicks drawn from its fitted parameters).",
                                       metavar="<cascade|pbm|MODEL_DIR>")] = "cascade",
    click_probs: Annotated[str | None, typer.Option("--click-probs", help="Click probability per grade 0, 1, 2, ..., "
                                                    "comma-separated (default: the paper's, "
                                                    "0.05,0.3,0.5,0.7,0.95).", show_default=False)] = None,
    eta: Annotated[float | None, typer.Option(help="PBM: examination probability at position r is (1/r)^eta "
                                              "(default: 1).", show_default=False)] = None,
    max_rank: Annotated[int | None, typer.Option("--max-rank", help="Display only the top N documents of each "
                                                     "list (default: the whole list).", show_default=False)] = None,
    impressions: Annotated[int, typer.Option(help="Impressions simulated per query.")] = 10,
    ranker: Annotated[str, typer.Option(help="Display order: random (a fresh shuffle per impression, the paper's) | "
                                        "label (ideal order) | input (the data's order) | a model directory "
                                        "(its scores, ties in input order).")] = "random",
    randomize: Annotated[str | None, typer.Option(help="Randomise a deterministic ranker's order per impression: "
                                                     "top:N (shuffle its top N, RandTop-n) | swap:K (swap position K "
                                                     "with a uniformly random displayed position).",
                                                     show_default=False)] = None,
    keep_no_click: Annotated[bool, typer.Option("--keep-no-click", help="Keep impressions without any click.")]
    = False,
    label_grades: Annotated[bool, typer.Option("--label-grades", help="Map the distinct label values to grades "
                                               "0..n-1 in increasing order (needed for real-valued labels).")] = False,
    seed: Annotated[int, opt.seed("the simulation")] = 0,
    json_out: Annotated[bool, opt.json_flag("the summary")] = False,
    overwrite: Annotated[bool, opt.overwrite("output file")] = False,
) -> None:
    if ranker in ("random", "label", "input"):  # a model directory as ranker may multiply matrices: BLAS threads
        from rankcli.runtime.startup import import_numpy_single_threaded_blas

        import_numpy_single_threaded_blas()
    from rankcli.cli._common import log, prepare_output, print_json, stdout_taken
    from rankcli.simulate import RANKERS, simulate_file

    fitted = _fitted_model(model, click_probs, eta)
    click_probs = "0.05,0.3,0.5,0.7,0.95" if click_probs is None else click_probs
    eta = 1.0 if eta is None else eta
    probs, policy = _checked_options("pbm" if fitted else model, click_probs, impressions, max_rank, eta, seed,
                                     ranker, randomize)
    output = prepare_output(output, overwrite=overwrite,
                            inputs=[data, *(model_files(ranker) if ranker not in RANKERS else []),
                                    *([model] if fitted else [])], binary=True,
                            example="clicks.parquet", file_kind=kinds.CLICK_LOG)
    stdout_taken(output, json_out)
    if ranker not in RANKERS:  # as predict: without LightGBM's scikit-learn/pandas integrations (~1.5 s less)
        from rankcli.runtime.startup import import_lightgbm_lean

        import_lightgbm_lean()
    summary = simulate_file(data, output, ranker=ranker, seed=seed, overwrite=overwrite, model=model,
                            click_probs=probs, eta=eta, max_rank=max_rank, impressions=impressions,
                            keep_no_click=keep_no_click, label_grades=label_grades, randomize=policy)
    if json_out:
        print_json({"output": str(output), "seed": seed, **summary.as_dict()})
        return
    _render(summary, output)
    if summary.dropped and not keep_no_click:
        log(f"dropped {summary.dropped} impression(s) without a click (--keep-no-click keeps them)")


def _fitted_model(model: str, click_probs: str | None, eta: float | None) -> bool:
    """Whether ``--model`` names a click-model directory; with one, --click-probs and --eta are usage errors (the
    fitted parameters say how users click)."""
    from rankcli.click_model.simulation import is_model_dir

    if model in ("cascade", "pbm") or not is_model_dir(model):
        return False
    given = [name for name, v in (("--click-probs", click_probs), ("--eta", eta)) if v is not None]
    if given:
        raise UsageError(f"--model {model} (a fitted click model) and {' and '.join(given)} cannot be used together: "
                         "the model's parameters say how users click")
    return True


def _checked_options(model: str, click_probs: str, impressions: int, max_rank: int | None, eta: float, seed: int,
                     ranker: str, randomize: str | None):
    """The parsed click probabilities and logging policy; a :class:`~rankcli.errors.UsageError` for any option out
    of range, before the model is loaded and the output prepared."""
    from rankcli.core.clicks import MODELS
    from rankcli.simulate import RANKERS, check_randomize, parse_click_probs, parse_randomize

    if model not in MODELS:
        raise UsageError(f"--model: expected one of {', '.join(MODELS)}, got {model!r}")
    probs = parse_click_probs(click_probs)
    if impressions < 1:
        raise UsageError(f"--impressions: must be at least 1, got {impressions}")
    if max_rank is not None and max_rank < 1:
        raise UsageError(f"--max-rank: must be at least 1, got {max_rank}")
    if eta < 0:
        raise UsageError(f"--eta: must be non-negative, got {eta:g}")
    if seed < 0:
        raise UsageError(f"--seed must be >= 0, got {seed}")
    if ranker not in RANKERS and not Path(ranker).is_dir():
        raise UsageError(f"--ranker: expected random, label, input or a model directory, got {ranker!r}")
    policy = parse_randomize(randomize)
    check_randomize(ranker, policy, max_rank)
    return probs, policy


def _render(summary, output: Path) -> None:
    from rich.table import Table

    from rankcli.cli._common import stderr_console, stdout_console

    con = stderr_console() if str(output) == "-" else stdout_console()  # -o -: stdout carries the log
    con.print(f"{summary.model} clicks, ranker {summary.ranker}, logging policy {summary.params['policy']} -> {output}")
    con.print(f"impressions {summary.impressions}  kept {summary.kept}  dropped (no click) {summary.dropped}  "
              f"clicks {summary.clicks}  rows {summary.rows}")
    t = Table(title="click rate per grade (all simulated impressions)")
    for col in ("grade", "p(click)", "shown", "clicks", "click rate"):
        t.add_column(col, justify="right")
    probs = summary.params.get("click_probs")  # None: a fitted click model's clicks
    for g, (s, c, r) in enumerate(zip(summary.shown_by_grade, summary.clicks_by_grade, summary.click_rate_by_grade)):
        label = f"{g}" if summary.grade_values is None or g >= len(summary.grade_values) else \
            f"{g} (label {summary.grade_values[g]:g})"
        t.add_row(label, f"{probs[g]:g}" if probs is not None else "fitted", str(s), str(c),
                  "-" if r != r else f"{r:.4f}")
    con.print(t)
    n = len(summary.shown_by_position)
    elided = n > 12  # the first ten positions and the last, the ones between marked as left out
    t = Table(title="click rate per position", caption=f"positions 11 to {n - 1} left out (--json lists every "
              "position)" if elided else None)
    for col in ("position", "shown", "clicks", "click rate"):
        t.add_column(col, justify="right")
    for i in (list(range(10)) + [n - 1] if elided else range(n)):
        if elided and i == n - 1:
            t.add_row("...", "...", "...", "...")
        r = summary.click_rate_by_position[i]
        t.add_row(str(i + 1), str(summary.shown_by_position[i]), str(summary.clicks_by_position[i]),
                  "-" if r != r else f"{r:.4f}")
    con.print(t)
