"""An experiment's results as people read them: ``summary.md``, the terminal's tables and sparklines, the PNG plots
(:mod:`rankcli.display.plot`), and the sentences that say which protocol, test and hyperparameters produced them.

Numbers are written by :mod:`rankcli.display.numbers`. A p-value has :data:`P_DIGITS` decimals here, and a test that
could not run says so in its p-value cell (these tables have no decision column). Never prints: the CLI prints the
renderables, and the runner writes ``summary.md``.
"""

from __future__ import annotations

from rankcli.display.numbers import number, p_value_or_reason, signed
from rankcli.display.plot import (
    INSTALL_HINT,
    convergence_note,
    have_matplotlib,
    plot_convergence,
    plot_sweep,
    sparkline,
)
from rankcli.experiment.config import ExperimentConfig, format_level
from rankcli.experiment.settings import Setting, primary_metric, setting_losses, setting_pairs
from rankcli.experiment.significance import PAPER_TEST, REFERENCE, describe_test, spelled_out
from rankcli.experiment.summary import difference_label, sweep_rows
from rankcli.experiment.sweeps import naive_only_note, sweep_note

#: The decimals of an experiment's p-values (summary.md has always shown three).
P_DIGITS = 3


def _p(x, reason: str | None = None) -> str:
    return p_value_or_reason(x, P_DIGITS, reason)


def _test_of(config, summary: dict | None) -> dict:
    """The test of ``summary`` (``summary["test"]``), or what ``config`` alone says of it."""
    if summary and summary.get("test"):
        return summary["test"]
    return describe_test(config.test_name, config.folds, seed=config.seed)


def protocol_note(config, summary: dict | None = None) -> str:
    """One sentence: what a unit of the statistics is, how many there are, and which test runs over them."""
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
    config = result.config
    unit = "queries" if config.folds else "trials"
    lines = [f"## {s['setting']}", "", "| loss | " + " | ".join(config.metrics) + " | n |",
             "|---|" + "---|" * (len(config.metrics) + 1)]
    setting = {st.name: st for st in result.settings}.get(s["setting"])
    for loss in (setting_losses(config, setting) if setting is not None else list(s["losses"])):
        vs = [s["losses"][loss][m] for m in config.metrics]
        ns = sorted({v["n"] for v in vs})
        cells = [f"{number(v['mean'])} ± {number(v['stderr'])}" for v in vs]
        lines.append(f"| {loss} | " + " | ".join(cells) + f" | {'/'.join(map(str, ns))} {unit} |")
    lines.append("")
    if s["tests"]:
        test = _test_of(config, result.summary)["name"]
        lines += [f"| difference | metric | mean difference | stderr | n | p ({test}) | p adjusted |",
                  "|---|---|---|---|---|---|---|"]
        lines += [f"| {difference_label(t['a'], t['b'])} | {t['metric']} | {signed(t['difference'])} | "
                  f"{number(t['stderr'])} | {t['n']} | {_p(t['p_value'], t['reason'])} | "
                  f"{_p(t['p_adjusted'])} |" for t in s["tests"]]
        lines.append("")
    return lines


def _sweep_markdown(config, kind: str, rows: list[dict], summary: dict | None = None) -> list[str]:
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
            [number(r[c]) for c in names] + [signed(r[d]) for d in diffs]
            + [_p(r[f"{d} p_adjusted"]) for d in diffs]) + " |")
    return lines + [""]


def experiment_markdown(result, sweep_tables: dict[str, list[dict]]) -> str:
    """``summary.md``: the protocol, every setting's table and tests, and every sweep's table.

    Parameters
    ----------
    result : the :class:`rankcli.experiment.ExperimentResult` (its config, settings and summary).
    sweep_tables : :func:`rankcli.experiment.sweep_rows` of its summary.
    """
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


def hyperparameter_note(h: dict) -> str:
    """One sentence saying which hyperparameters the units trained with."""
    if h["source"] == "tuned":
        space = h.get("space")
        return (f"hyperparameters tuned per loss and trial on that trial's own training and validation data, "
                f"{h['budget']} trainings each (trial 0: train's parameters), with rankcli tune's search space"
                + (f" as {space['path']} changes it" if space else ""))
    if h["source"] == "params-file":
        files = sorted({e["path"] for e in h["params_file"].values()})
        return f"hyperparameters from {', '.join(files)} for every trial (below the options given)"
    return "hyperparameters from the options, the same for every loss and trial"


def _shown(params: dict) -> str:
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())


def hyperparameter_markdown(h: dict | None) -> list[str]:
    """``summary.md``'s lines on the hyperparameters: the sentence of :func:`hyperparameter_note` and, when tuned,
    the parameters of each unit, or with a parameter file the parameters of each loss."""
    if h is None:
        return []
    note = hyperparameter_note(h)
    lines = [f"{note[0].upper()}{note[1:]}.", ""]
    if h["source"] == "tuned" and h["units"]:
        lines += ["| setting | trial | loss | validation (tuned) | validation (train's) | parameters |",
                  "|---|---:|---|---:|---:|---|"]
        lines += [f"| {u['setting']} | {u['trial']} | {u['loss']} | {number(u['validation'])} | "
                  f"{number(u['default_validation'])} | {_shown(u['params'])} |" for u in h["units"]]
        lines.append("")
    if h["source"] == "params-file":
        lines += ["| loss | parameters (from the file) |", "|---|---|"]
        lines += [f"| {loss} | {_shown(e['params']) or 'none: the options'} |" for loss, e in h["params_file"].items()]
        lines.append("")
    return lines


def sweep_columns(config: ExperimentConfig, kind: str) -> tuple[list[str], list[str]]:
    """The loss columns and difference labels of the sweep ``kind``'s table in the experiment ``config``: the losses
    and ``loss - first``, or (position-bias) every variant and ``loss+ips - loss`` per loss with an IPS variant."""
    if kind == "position-bias":
        setting = Setting("position-bias=0", "position-bias", 0.0)
        return setting_losses(config, setting), [difference_label(a, b) for a, b in setting_pairs(config, setting)]
    return list(config.losses), [difference_label(config.losses[0], loss) for loss in config.losses[1:]]


def loss_options_note(options: dict[str, dict]) -> str:
    """`` Loss options: listnet step=paper; ...`` (with a leading space), or '' for losses without options."""
    if not options:
        return ""
    return " Loss options: " + "; ".join(f"{loss} " + ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                                                                for k, v in values.items())
                                         for loss, values in options.items()) + "."


def plots(result, wanted: bool) -> tuple[list, str]:
    """The PNG plots of ``result`` written into its directory (convergence, one per sweep; position-bias: one per
    loss), when ``wanted``: the files written, and a note for the log when matplotlib is missing."""
    if not wanted:
        return [], ""
    if not have_matplotlib():
        return [], (f"experiment: no plots (matplotlib is not installed); the data are in convergence.csv and "
                    f"sweep-*.csv. For PNG plots: {INSTALL_HINT}, then rerun the same command (it resumes and only "
                    "redraws).")
    files = []
    cfg = result.config
    base = result.convergence.get("baseline", {})
    if any(c["mean"] for c in base.values()):
        files.append(plot_convergence(base, result.exp_dir / "convergence.png", cfg.train.select_by,
                                      f"convergence (baseline, {cfg.trials} {'folds' if cfg.folds else 'trials'})",
                                      "fold" if cfg.folds else "trial"))
    for kind, rows in sweep_rows(result.summary, cfg, result.sweeps).items():
        if kind == "position-bias":  # one plot per loss: naive and IPS, and their difference
            for a, b in setting_pairs(cfg, result.sweeps[kind][0].setting):
                files.append(plot_sweep(rows, [a, b], result.exp_dir / f"sweep-{kind}-{a}.png", kind,
                                        primary_metric(cfg)))
            continue
        files.append(plot_sweep(rows, cfg.losses, result.exp_dir / f"sweep-{kind}.png", kind, primary_metric(cfg)))
    return files, ""


def baseline_tables(result) -> list:
    """Table 1 of the baseline and its paired tests (every setting's full tables are in summary.md)."""
    from rich.table import Table
    from rich.text import Text

    cfg, out = result.config, []
    for s in result.summary["settings"][:1]:
        ns = sorted({v["n"] for ms in s["losses"].values() for v in ms.values()})
        over = (f"{'/'.join(map(str, ns))} pooled test queries of {cfg.trials} fold{'s' if cfg.trials != 1 else ''}"
                if cfg.folds else f"{cfg.trials} trials")
        t = Table(title=f"{s['setting']}: test metrics, mean ± stderr over {over} ({cfg.train.convention} convention)",
                  title_justify="left")
        t.add_column("loss")
        for m in cfg.metrics:
            t.add_column(m, justify="right")
        for loss in s["losses"]:  # the losses, and with --fuse their fused run
            t.add_row(Text(loss), *[f"{number(v['mean'])} ± {number(v['stderr'])}"
                                    for v in (s["losses"][loss][m] for m in cfg.metrics)])
        out.append(t)
        if s["tests"]:
            test = result.summary["test"]
            tt = Table(title=f"{test['label']} (n = {'queries' if cfg.folds else 'trials'}; p adjusted: "
                             f"{cfg.correction}); b - a = mean(b) - mean(a)", title_justify="left")
            for col in ("difference", "metric", "mean", "stderr", "n", "p", "p adjusted"):
                tt.add_column(col, justify="left" if col in ("difference", "metric") else "right",
                              no_wrap=col == "difference")
            for x in s["tests"]:
                tt.add_row(Text(difference_label(x["a"], x["b"])), x["metric"], signed(x["difference"]),
                           number(x["stderr"]), str(x["n"]), _p(x["p_value"], x["reason"]),
                           _p(x["p_adjusted"]))
            out.append(tt)
    return out


def convergence_lines(result) -> list[str]:
    """One sparkline per loss of the baseline's convergence curves, on a common scale."""
    cfg = result.config
    curves = {loss: c["mean"] for loss, c in result.convergence.get("baseline", {}).items() if c["mean"]}
    if not curves:
        return []
    vals = [v for c in curves.values() for v in c if v == v]
    lo, hi = (min(vals), max(vals)) if vals else (0.0, 1.0)
    lines = [f"convergence (baseline): mean validation {cfg.train.select_by} per tree over all {cfg.trials} "
             f"{'folds' if cfg.folds else 'trials'}, scale {number(lo)}..{number(hi)}"]
    width = max(len(x) for x in curves)
    for loss, c in curves.items():
        peak = max((v for v in c if v == v), default=float("nan"))
        lines.append(f"  {loss:<{width}} {sparkline(c, lo, hi)}  {len(c)} trees, last {number(c[-1])}, "
                     f"peak {number(peak)}")
    return lines + [f"  {convergence_note('fold' if cfg.folds else 'trial')}"]


def sweep_table(cfg, kind: str, rows: list[dict], summary: dict):
    """A sweep's table: the mean test metric per level and loss, the differences and their adjusted p-values."""
    from rich.table import Table
    from rich.text import Text

    names, diffs = sweep_columns(cfg, kind)
    caption = sweep_note(cfg, kind) + (f" {naive_only_note(cfg)}" if kind == "position-bias" and
                                       naive_only_note(cfg) else "")
    test = summary["test"]
    t = Table(title=f"{kind} sweep: mean test {primary_metric(cfg)}; p adjusted ({cfg.correction}): {test['label']}",
              title_justify="left", caption=caption, caption_justify="left")
    t.add_column("level", justify="right")
    for loss in names:
        t.add_column(Text(loss), justify="right")
    for d in diffs:
        t.add_column(Text(d), justify="right")
    for d in diffs:
        t.add_column(Text(f"p adj. ({d})"), justify="right")
    for r in rows:
        t.add_row(format_level(r["level"]), *[number(r[x]) for x in names],
                  *[signed(r[d]) for d in diffs], *[_p(r[f"{d} p_adjusted"]) for d in diffs])
    return t


def sweep_lines(cfg, kind: str, rows: list[dict]) -> list[str]:
    """A sweep's sparklines: the test metric per level, one line per loss."""
    names, _ = sweep_columns(cfg, kind)
    vals = [r[x] for r in rows for x in names if r[x] is not None and r[x] == r[x]]
    lo, hi = (min(vals), max(vals)) if vals else (0.0, 1.0)
    lines = [f"{kind}: test {primary_metric(cfg)} per level ({', '.join(format_level(r['level']) for r in rows)}), "
             f"scale {number(lo)}..{number(hi)}"]
    width = max(len(x) for x in names)
    for loss in names:
        series = [r[loss] for r in rows]
        lines.append(f"  {loss:<{width}} {sparkline(series, lo, hi)}  {' '.join(number(v) for v in series)}")
    return lines


def terminal_items(result, to_stderr: bool) -> list:
    """What ``rankcli experiment`` prints, in order: the overlap notes, Table 1 and its tests, the convergence
    sparklines, and per sweep its table and sparklines; under ``--json`` (``to_stderr``, beside the JSON) only the
    notes and sparklines."""
    items: list = [f"overlap allowed (--allow-overlap): {note}" for note in result.summary.get("overlap", [])]
    items += [] if to_stderr else baseline_tables(result)
    items += convergence_lines(result)
    for kind, rows in sweep_rows(result.summary, result.config, result.sweeps).items():
        if not to_stderr:
            items.append(sweep_table(result.config, kind, rows, result.summary))
        items += sweep_lines(result.config, kind, rows)
    return items
