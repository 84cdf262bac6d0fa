"""The measures ``-m`` asks for, initialised as trec_eval's ``init_meas`` procedures do (``meas_init.c``): each with
its parameters and the names of its values."""

from __future__ import annotations

from dataclasses import dataclass

from rankcli.core.trec_eval.registry import BY_NAME, MEASURES, Selection, TrecMeasure, mark, reads
from rankcli.errors import UsageError
from rankcli.formats.trec.trec_eval_parse import atof
from rankcli.trec_eval.getopt import atol


@dataclass
class Active:
    """A measure to compute: its record, parameters (numbers, or ``(name, value)`` pairs) and value names."""

    record: TrecMeasure
    params: tuple
    names: list

    @property
    def width(self) -> int:
        return len(self.names)


def _cut_long(text: str) -> tuple:
    cuts = sorted(atol(t) for t in text.split(","))
    if cuts[0] <= 0:
        raise UsageError("trec_eval: Negative cutoff detected")
    if len(set(cuts)) != len(cuts):
        raise UsageError("trec_eval: duplicate cutoffs detected")
    return tuple(cuts)


def _cut_double(text: str) -> tuple:
    cuts = sorted(atof(t.encode()) for t in text.split(","))
    if any(a == b for a, b in zip(cuts, cuts[1:])):
        raise UsageError("trec_eval: duplicate cutoffs detected")
    return tuple(cuts)


def _pairs(text: str) -> tuple:
    """``get_param_pairs``: ``name=value`` pairs separated by commas (an empty pair or a missing ``=`` refused)."""
    last = ","
    for c in text:
        if c == ",":
            if last == ",":
                break
            last = ","
        elif c == "=":
            if last == "=":
                last = ","
                break
            last = "="
    if last != "=":
        raise UsageError(f"trec_eval: malformed pair parameters in '{text}'")
    out = []
    for part in text.split(","):
        name, _, value = part.partition("=")
        out.append((name, atof(value.encode())))
    return tuple(out)


def _double_name(name: str, value: float) -> str:
    """``append_double``: ``name_%3.2f`` in a buffer of len(name) + 10 bytes (longer names are cut)."""
    return f"{name}_{value:3.2f}"[:len(name) + 9]


def activate(record: TrecMeasure, text: str | None) -> Active:
    """A measure with the parameters ``text`` (None: its defaults)."""
    kind, name = record.kind, record.name
    if kind == "cut_long":
        params = _cut_long(text) if text is not None else record.defaults
        return Active(record, params, [f"{name}_{c}" for c in params])
    if kind == "cut_double":
        params = _cut_double(text) if text is not None else record.defaults
        return Active(record, params, [_double_name(name, c) for c in params])
    shown = name if text is None else f"{name}_{text}"
    if kind in ("param_double", "relstring"):
        params = tuple(atof(t.encode()) for t in text.split(",")) if text is not None else record.defaults
        return Active(record, params, [shown])
    if kind == "param_pairs":
        return Active(record, _pairs(text) if text is not None else (), [shown])
    return Active(record, (), [name] if kind != "runid" else [])


def select(requests: list[str], rel_format: str) -> list[Active]:
    """The measures ``-m`` marked (``official`` when none), in trec_eval's order, initialised."""
    selection = Selection(set(), [])
    for text in requests or ["official"]:
        mark(selection, text)
    out = []
    shared = None  # dcg, ideal_dcg and ndcg share one parameter record in trec_eval (m_ndcg.c)
    for record in MEASURES:
        if record.name not in selection.marked:
            continue
        if not reads(record, rel_format):
            needs = "prefs or qrels_prefs" if record.needs == "prefs" else record.needs
            raise UsageError(f"measure {record.name} needs -R {needs} (trec_eval cannot compute it with -R "
                             f"{rel_format} either)")
        if record.name in _SHARED:
            shared = selection.parameters_of(record.name) or shared
            out.append(activate(record, shared))
            continue
        out.append(activate(record, selection.parameters_of(record.name)))
    last = next((m.params for m in reversed(out) if m.record.name in _SHARED), None)
    for m in out:  # each computes with the parameters the last of them was given
        if m.record.name in _SHARED:
            m.params = last
    return out


#: trec_eval's measures whose parameters live in one static record (``default_ndcg_gains`` of ``m_ndcg.c``): the
#: parameters given to one apply to the others initialised after it, and all compute with the last ones given.
_SHARED = ("dcg", "ideal_dcg", "ndcg")


__all__ = ["Active", "BY_NAME", "activate", "select"]
