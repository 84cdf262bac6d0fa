"""The reports of ``rankcli click-model`` as rich tables: what was fitted, how a model scores, which model wins."""

from __future__ import annotations

from rankcli.display.numbers import number, p_value


def fit_renderables(report) -> list:
    """A fit: the model and its log, the estimate's course, the global and per-rank parameters."""
    from rich.table import Table

    d = report.as_dict()
    log, fit = d["log"], d["fit"]
    lines = [f"{d['model']} ({d['title']}), {d['estimator'].upper()}, parameters per {d['by']} -> {d['output']}",
             f"log {log['path']} ({log['format']}): {log['sessions']} sessions, {log['results']} results, "
             f"{log['clicks']} clicks, {log['items']} items"]
    ll = fit["log_likelihood"]
    if d["estimator"] == "em":
        converged = " (converged)" if fit["converged"] and d["options"]["tolerance"] else ""
        lines.append(f"EM: {fit['iterations']} iteration(s){converged}, log-likelihood {number(ll[0], 2)} -> "
                     f"{number(ll[-1], 2)} ({fit['seconds']:.2f} s)")
    else:
        lines.append(f"closed form: log-likelihood {number(ll[-1], 2)} ({fit['seconds']:.2f} s)")
    out: list = lines
    if d["global"]:
        out.append("global parameters: " + ", ".join(f"{k} {number(v)}" for k, v in d["global"].items()))
    if d["ranks"]:
        t = Table(title="per-rank parameters", title_justify="left")
        t.add_column("rank", justify="right")
        for name in d["ranks"]:
            t.add_column(name, justify="right")
        for k in range(len(next(iter(d["ranks"].values())))):
            t.add_row(str(k + 1), *[number(v[k]) for v in d["ranks"].values()])
        out.append(t)
    for name, s in d["items"].items():
        out.append(f"{name}: {s['items']} items, mean {number(s['mean'])} (weighted by impressions), "
                   f"range {number(s['min'])}..{number(s['max'])}")
    if d["ranks_connected"] is False:
        out.append("note: the log's items do not connect its ranks (each document shown at one rank only): the "
                   "examination per rank is not identified")
    return out


def eval_renderables(report, per_rank: bool) -> list:
    """An evaluation: the scores, and with ``per_rank`` the perplexities rank by rank."""
    from rich.table import Table

    d = report.as_dict(per_rank=True)
    m, log = d["model"], d["log"]
    out: list = [
        f"{m['model']} ({m['path']}) on {log['path']}: {d['sessions']} sessions",
        f"log-likelihood {number(d['log_likelihood'], 4)} (sum over sessions, natural log); PyClick's (mean per result "
        f"over sessions) {number(d['log_likelihood_pyclick'], 6)}",
        f"perplexity {number(d['perplexity'], 6)}; conditional perplexity {number(d['conditional_perplexity'], 6)}",
        f"items without parameters (scored at the prior): {d['unseen']['items']} ({d['unseen']['results']} results)",
    ]
    ctr = d["ctr_at_1"]
    if ctr is not None:
        out.append(f"CTR at rank 1 (Chapelle-Zhang): RMSE {number(ctr['rmse'], 5)} over {ctr['pairs']} pairs, "
                   f"{ctr['test_sessions']} test sessions" + (f" ({ctr['note']})" if ctr.get("note") else ""))
    rel = d["relevance_prediction"]
    if rel is not None:
        out.append(f"relevance prediction: {rel['metric']} {number(rel['mean'])} over {rel['queries']} queries "
                   f"({rel['skipped']} without a relevant document skipped)")
    if per_rank:
        t = Table(title="per rank", title_justify="left")
        for col in ("rank", "sessions", "perplexity", "cond. perplexity", "click rate", "predicted"):
            t.add_column(col, justify="right")
        for r in d["per_rank"]:
            t.add_row(str(r["rank"]), str(r["sessions"]), number(r["perplexity"]), number(r["conditional_perplexity"]),
                      number(r["click_rate"]), number(r["predicted_click_rate"]))
        out.append(t)
    return out


def compare_renderables(report) -> list:
    """A comparison: each model's held-out scores, then the paired tests against the baseline."""
    from rich.table import Table

    d = report.as_dict()
    held = d["held_out"]
    where = (f"fitted on {d['split']['fit_sessions']} sessions of {held['path']} (seed {d['split']['seed']}), "
             f"scored on the other {d['split']['held_out_sessions']}" if d["split"] else
             f"scored on the held-out log {held['path']}")
    t = Table(title=f"click models {where}", title_justify="left")
    for col in ("model", "log-likelihood", "perplexity", "cond. perplexity", "unseen items"):
        t.add_column(col, justify="right" if col != "model" else "left")
    for mdl in d["models"]:
        t.add_row(f"{mdl['name']} ({mdl['model']})", number(mdl["log_likelihood"], 2), number(mdl["perplexity"], 6),
                  number(mdl["conditional_perplexity"], 6), str(mdl["unseen"]["items"]))
    c = Table(title=f"paired {d['test']} on the log-likelihood per {d['unit']} ({d['units']} {d['unit']}s), "
                    f"{d['correction']}-adjusted, alpha {d['alpha']:g}", title_justify="left")
    for col in ("b - a", "difference", "± se", "p", "p adj.", "wins/ties/losses", "decision"):
        c.add_column(col, justify="right" if col not in ("b - a", "decision") else "left")
    for cmp in d["comparisons"]:
        c.add_row(f"{cmp['b']} - {cmp['a']}", number(cmp["difference"], 5), number(cmp["stderr"], 5),
                  p_value(cmp["p_value"]), p_value(cmp["p_adjusted"]), f"{cmp['wins']}/{cmp['ties']}/{cmp['losses']}",
                  cmp["decision"])
    return [t, c, f"best held-out log-likelihood: {d['best']}"]
