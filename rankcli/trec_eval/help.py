"""What ``trec_eval -h`` and ``-v`` print (the text of trec_eval 10.0, NIST, in ``help.json``: its help message,
its formats' and its measures' explanations, captured from the binary)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from rankcli.core.trec_eval.registry import MEASURES, Selection, mark

#: The version trec_eval 10.0's Makefile gives it.
TREC_EVAL_VERSION = "10.0-rc3"
_SEP = "\n-----------------------\n"


@cache
def _text() -> dict:
    return json.loads((Path(__file__).parent / "help.json").read_text())


def version_text() -> str:
    """``-v``: trec_eval's line (on standard error, as trec_eval writes it), rankcli's version beside it."""
    from rankcli import __version__

    return f"trec_eval version {TREC_EVAL_VERSION} (rankcli {__version__})\n"


def help_text(options) -> str:
    """``-h``: the help message, the formats ``-T`` and ``-R`` name, and the explanation of each measure ``-m``
    names (trec_eval's ``trec_eval_help``)."""
    t = _text()
    out = [t["help_message"], _SEP]
    if options.results_format == "trec_results":
        out += [t["results_format"], _SEP]
    if options.rel_format in t["rel_formats"]:
        out += [t["rel_formats"][options.rel_format], _SEP]
    out.append("Individual measure documentation for requested measures\n")
    selection = Selection(set(), [])
    for text in options.measures:
        mark(selection, text)
    marked = [m.name for m in MEASURES if m.name in selection.marked]
    if not marked:
        out.append(t["no_measures"])
    for name in marked:
        out.append(f"{name}\n{t['measures'][name]}")
    return "".join(out)
