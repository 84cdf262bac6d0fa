"""Estimate the examination propensity of each position from a randomised click log, or from several rankers' logs.

Under the position-based click model a document at position r is clicked with probability theta_r * gamma(document);
theta_r, the examination propensity, is estimated relative to position 1 (theta_1 = 1) from a log whose display order
was randomised, so that position and relevance are independent:

- RandTop-n and fully random logs (simulate-clicks --ranker random, or --randomize top:N): the click rate per
  position, theta_r = clicks at r / clicks at position 1, over the impressions long enough to show r;
- swap interventions (--randomize swap:K): the ratio estimator, the click rate of the swapped document at r over its
  click rate at position 1.

- the logs of several rankers (rankcli propensity A.parquet B.parquet ..., each log one logging policy on the same
  dataset; or --method harvest): intervention harvesting (Agarwal et al. WSDM 2019), the ratio of the weighted click
  rates of the documents one ranker showed at k and another at k', pairs fitted by least squares in log space.

The interval per position is the percentile bootstrap over source queries (--bootstrap replicates, --seed). A
position whose ratio rests on fewer than --min-clicks clicks (default 20) is not estimated: the estimate stops
there, or with --fit power continues with (1/r)^eta fitted to the positions before it (marked as fitted).

The log must keep its impressions without a click (simulate-clicks --keep-no-click) and come from a position-based
click model (--model pbm): a cascade user's examination depends on the clicks above. Otherwise exit 3, saying why.

Output (-o, written atomically): JSON with method, positions, propensity, ci_low, ci_high, impressions, clicks and
per-position counts; stdout a table (or the JSON with --json); --plot FILE.png draws them (needs matplotlib).

Example: rankcli propensity clicks.parquet -o propensity.json --seed 1
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rankcli.cli import options as opt
from rankcli.errors import UsageError
from rankcli.formats.atomic import atomic_path, check_distinct, kinds

NAME = "propensity"
SHORT_HELP = ("Estimate position propensities (with bootstrap intervals) from a randomised click log or several "
              "rankers' logs.")


_FROM_MODEL = typer.Option(
    "--from-click-model", help="Instead of CLICKS: the examination curve of a fitted position-based model "
    "(click-model fit --model pbm, best --by relevance), with bootstrap intervals over its log's queries.",
    show_default=False, metavar="MODEL_DIR")
_MODEL = typer.Option("--model", help="With --regression-em: the click model, pbm.", show_default=False,
                      metavar="<pbm>")
_REGRESSION_EM = typer.Option(
    "--regression-em", help="Fit a position-based model whose relevance is a LightGBM model of the log's features "
    "(regression EM, Wang et al. 2018): for logs with features, no grades and no randomisation.")


def command(
    clicks: Annotated[list[Path] | None, typer.Argument(
        help="Click log (Parquet, from rankcli simulate-clicks); several: one log per logging policy, estimated by "
        "intervention harvesting. None with --from-click-model.", show_default=False)] = None,
    output: Annotated[str | None, opt.output("Propensity JSON to write (- for standard output).")] = None,
    bootstrap: Annotated[int, typer.Option(help="Bootstrap replicates over source queries.")] = 1000,
    confidence: Annotated[float, typer.Option(help="Coverage of the intervals.")] = 0.95,
    min_clicks: Annotated[int, typer.Option("--min-clicks", help="Fewest clicks a position's estimate may rest "
                                            "on.")] = 20,
    fit: Annotated[str, typer.Option(help="Past the last position with enough clicks: none (stop there) | power "
                                     "(follow a fitted (1/r)^eta).", metavar="<none|power>")] = "none",
    method: Annotated[str, typer.Option(help="auto (one log: by its randomisation; several: harvest) | harvest "
                                        "(intervention harvesting over the logs given).",
                                        metavar="<auto|harvest>")] = "auto",
    policy: Annotated[str | None, typer.Option(help="The log's logging policy, for a log without rankcli's "
                                                  "footer: random | top:N | swap:K.", show_default=False,
                                                  metavar="<random|top:N|swap:K>")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap.")] = 0,
    plot: Annotated[str | None, typer.Option(help="Also draw the propensities with their intervals as a PNG "
                                                "(needs matplotlib: the plot extra).", show_default=False,
                                                metavar="PNG")] = None,
    from_click_model: Annotated[Path | None, _FROM_MODEL] = None,
    model: Annotated[str | None, _MODEL] = None,
    regression_em: Annotated[bool, _REGRESSION_EM] = False,
    iterations: Annotated[int, typer.Option("--iterations", help="Regression EM's iterations.")] = 20,
    json_out: Annotated[bool, opt.json_flag("the result")] = False,
    overwrite: Annotated[bool, opt.overwrite("output file")] = False,
) -> None:
    from rankcli.runtime.startup import import_numpy_single_threaded_blas

    # The bootstrap's small matrix products gain nothing from OpenBLAS threads, whose spinning costs seconds on a
    # busy 2-core machine (measured: 0.07 s instead of 0.006 s per product).
    import_numpy_single_threaded_blas()
    if from_click_model is not None or regression_em or model is not None:
        _from_click_models(clicks or [], from_click_model, model, regression_em, iterations, output, plot,
                           json_out, overwrite, bootstrap=bootstrap, confidence=confidence, seed=seed,
                           others=(min_clicks != 20, fit != "none", method != "auto", policy is not None))
        return
    if not clicks:
        raise UsageError("give a click log (CLICKS), or --from-click-model MODEL_DIR")
    _randomised(clicks, output, bootstrap, confidence, min_clicks, fit, method, policy, seed, plot, json_out,
                overwrite)


def _randomised(clicks, output, bootstrap, confidence, min_clicks, fit, method, policy, seed, plot, json_out,
                overwrite) -> None:
    """The estimators from randomised logs and from several rankers' logs."""
    from rankcli.cli._common import prepare_output, print_json, stdout_taken
    from rankcli.formats.propensity import write_propensity
    from rankcli.propensity import estimate_logs

    harvest = _checked_options(clicks, bootstrap, confidence, min_clicks, fit, seed, method, policy)
    check_distinct({"--plot": plot, "--output": output})
    if plot is not None:
        from rankcli.display.plot import INSTALL_HINT, have_matplotlib

        if not have_matplotlib():
            raise UsageError(f"--plot needs matplotlib: {INSTALL_HINT}")
        plot = prepare_output(plot, overwrite=overwrite, inputs=clicks, binary=True, option="--plot",
                              final=output is None, example="propensity.png", file_kind=kinds.PLOT)
    if output is not None:
        output = prepare_output(output, overwrite=overwrite, inputs=clicks, example="propensity.json",
                                file_kind=kinds.PROPENSITY)
        stdout_taken(output, json_out)
    result = estimate_logs(clicks, harvest=harvest, policy=policy, bootstrap=bootstrap, confidence=confidence,
                           min_clicks=min_clicks, fit=fit, seed=seed)
    if plot is not None:
        from rankcli.display.plot import plot_propensity

        with atomic_path(plot, overwrite, suffix=".png", file_kind=kinds.PLOT) as tmp:
            plot_propensity(result.as_dict(), tmp)
    if output is not None:
        write_propensity(output, result.as_dict(), overwrite=overwrite)
    if json_out:
        print_json(result.as_dict())
    elif output is None or str(output) != "-":
        _render(result, output)


def _from_click_models(clicks, model_dir, model, regression_em, iterations, output, plot, json_out, overwrite, *,
                       bootstrap, confidence, seed, others) -> None:
    """``--from-click-model`` and ``--regression-em``: the propensity file of a position-based click model."""
    from rankcli.cli._common import prepare_output, print_json, stdout_taken
    from rankcli.formats.propensity import write_propensity

    if any(others):
        raise UsageError("--min-clicks, --fit, --method and --policy belong to the estimators from randomised logs, "
                         "not to --from-click-model or --regression-em")
    if plot is not None:
        raise UsageError("--plot draws the estimators from randomised logs; not with --from-click-model or "
                         "--regression-em")
    if regression_em == (model_dir is not None):
        raise UsageError("give either --from-click-model MODEL_DIR (without CLICKS) or CLICKS --model pbm "
                         "--regression-em")
    if model_dir is not None and (clicks or model is not None):
        raise UsageError("--from-click-model replaces CLICKS (the model knows its log) and --model")
    if regression_em and (len(clicks) != 1 or (model or "pbm") != "pbm"):
        raise UsageError("--regression-em fits a position-based model (--model pbm) to one click log")
    if bootstrap < 1 or not 0.0 < confidence < 1.0 or seed < 0 or iterations < 1:
        raise UsageError("--bootstrap and --iterations must be at least 1, --confidence within (0, 1), --seed >= 0")
    inputs = clicks if regression_em else [model_dir]
    if output is not None:
        output = prepare_output(output, overwrite=overwrite, inputs=inputs, example="propensity.json",
                                file_kind=kinds.PROPENSITY)
        stdout_taken(output, json_out)
    if regression_em:
        from rankcli.click_model.regression_em import regression_em as fit

        result = fit(clicks[0], iterations=iterations, seed=seed)
    else:
        from rankcli.click_model.propensity import propensity_from_model

        result = propensity_from_model(model_dir, bootstrap=bootstrap, confidence=confidence, seed=seed)
    if output is not None:
        write_propensity(output, result, overwrite=overwrite)
    if json_out:
        print_json(result)
    elif output is None or str(output) != "-":
        _render_record(result, output)


def _render_record(result: dict, output) -> None:
    from rich.table import Table

    from rankcli.cli._common import stdout_console

    con = stdout_console()
    con.print(f"propensity from {result['source']}: {result['method']}" + (f" -> {output}" if output else ""))
    con.print(f"interval: {result.get('interval')}")
    t = Table(title="examination propensity per position (position 1 = 1)")
    for col in ("position", "propensity", "ci low", "ci high", "clicks", "impressions"):
        t.add_column(col, justify="right")
    for i, r in enumerate(result["positions"]):
        t.add_row(str(r), _num(result["propensity"][i]), _num(result["ci_low"][i]), _num(result["ci_high"][i]),
                  str(result["clicks_by_position"][i]), str(result["impressions_by_position"][i]))
    con.print(t)


def _checked_options(clicks: list[Path], bootstrap: int, confidence: float, min_clicks: int, fit: str, seed: int,
                     method: str, policy: str | None) -> bool:
    """Whether the logs are estimated by intervention harvesting; a :class:`~rankcli.errors.UsageError` for any
    option out of range or in conflict, before an output is prepared."""
    from rankcli.core.propensity import FITS, check_bootstrap
    from rankcli.propensity import parse_policy

    check_bootstrap(bootstrap)
    if not (0.0 < confidence < 1.0):
        raise UsageError(f"--confidence: must be within (0, 1), got {confidence:g}")
    if min_clicks < 1:
        raise UsageError(f"--min-clicks: must be at least 1, got {min_clicks}")
    if fit not in FITS:
        raise UsageError(f"--fit: expected one of {', '.join(FITS)}, got {fit!r}")
    if seed < 0:
        raise UsageError(f"--seed must be >= 0, got {seed}")
    if method not in ("auto", "harvest"):
        raise UsageError(f"--method: expected auto or harvest, got {method!r}")
    harvest = method == "harvest" or len(clicks) > 1
    if policy is not None:
        if harvest:
            raise UsageError("--policy states one randomised log's policy; intervention harvesting reads each log's "
                             "ranker from its footer")
        parse_policy(policy)
    if len(set(map(str, clicks))) < len(clicks):
        raise UsageError("the same click log is given twice")
    return harvest


#: Positions the table shows before it leaves out all but the last (the JSON has every one).
TABLE_ROWS = 30


def _render(result, output) -> None:
    from rich.table import Table

    from rankcli.cli._common import stdout_console

    e = result.estimate
    con = stdout_console()
    con.print(f"propensity from {result.source}: {e.method} estimator, policy {result.policy}, "
              f"click model {result.click_model or 'not recorded'}"
              + (f" -> {output}" if output is not None else ""))
    con.print(f"impressions {e.impressions}  clicks {e.clicks}  source queries {e.queries}  "
              f"{e.confidence:.0%} percentile bootstrap over queries ({e.bootstrap} replicates)")
    n = len(e.positions)
    elided = n > TABLE_ROWS + 1  # a fitted tail can run to the longest list: the first rows and the last are shown
    t = Table(title="examination propensity per position (position 1 = 1)",
              caption=f"positions {TABLE_ROWS + 1} to {n - 1} left out (-o FILE or --json: every position)"
              if elided else None)
    for col in ("position", "propensity", "ci low", "ci high", "clicks", "impressions"):
        t.add_column(col, justify="right")
    for i in (list(range(TABLE_ROWS)) + [n - 1] if elided else range(n)):
        r = e.positions[i]
        if elided and i == n - 1:
            t.add_row(*["..."] * 6)
        mark = " (fitted)" if e.fitted[i] else " (near threshold)" if e.near_threshold[i] else ""
        t.add_row(str(int(r)), f"{e.propensity[i]:.4f}{mark}", _num(e.ci_low[i]), _num(e.ci_high[i]),
                  str(int(e.clicks_by_position[i])), str(int(e.impressions_by_position[i])))
    con.print(t)
    if e.fit is not None:
        lo, hi = e.fit["eta_ci"]
        con.print(f"power fit (1/r)^eta: eta {e.fit['eta']:.3f} [{lo:.3f}, {hi:.3f}]")
    for note in e.notes:
        con.print(note)


def _num(v: float | None) -> str:
    return "-" if v is None or v != v else f"{v:.4f}"
