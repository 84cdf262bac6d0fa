"""trec_eval's output lines (``meas_print_single.c``, ``meas_print_final.c``, ``meas_avg.c``), as bytes: a query id
is written as it was read, whatever its bytes."""

from __future__ import annotations

import math

import numpy as np

from rankcli.trec_eval.getopt import Options
from rankcli.trec_eval.measures import Active

_LONG_MIN = -(1 << 63)


def fixed(value: float) -> str:
    """C's ``%6.4f`` of a double, NaN printed as glibc prints it (``-nan`` when its sign bit is set)."""
    if value != value:
        return f"{'-nan' if math.copysign(1.0, value) < 0 else 'nan':>6}"
    return f"{value:6.4f}"


def integer(value: float) -> str:
    """C's ``%ld`` of ``(long) value`` (x86-64: a value out of range, or NaN, converts to LONG_MIN)."""
    if value != value or not (-9.223372036854776e18 <= value < 9.223372036854776e18):
        return str(_LONG_MIN)
    return str(int(value))


def _name(name: str) -> bytes:
    return f"{name:<22}".encode()


class Renderer:
    """The lines of the measures ``measures`` (in order), per query and in the summary."""

    def __init__(self, measures: list[Active], o: Options):
        self.o = o
        self.layout = []  # per measure: (measure, [(name, column)])
        column = 0
        for m in measures:
            names = []
            for name in m.names:
                names.append((_name(name), column if m.record.kind != "relstring" else -1))
                column += m.record.kind != "relstring"
            self.layout.append((m, names))
        self.column_names = [m_name.rstrip() for m, names in self.layout for m_name, column in names if column >= 0]
        self.z = b"Z" if o.zscores is not None else b""

    def queries(self, qids: np.ndarray, values: np.ndarray, strings) -> bytes:
        """The ``-q`` lines of a block of queries."""
        out: list[bytes] = []
        cells = values.tolist()
        for i, qid in enumerate(qids.tolist()):
            row = cells[i]
            for m, names in self.layout:
                kind = m.record.kind
                if kind == "relstring":
                    out.append(b"%s\t%s\t'%s'\n" % (names[0][0], qid, strings[i]))
                elif m.record.per_query:
                    for name, column in names:
                        text = integer(row[column]) if kind == "long" and not self.z else fixed(row[column])
                        out.append(b"%s%s\t%s\t%s\n" % (self.z, name, qid, text.encode()))
        return b"".join(out)

    def _summary_value(self, m: Active, total: float, n: int, positive_labels: int) -> float:
        summary = m.record.summary
        if summary == "count":
            return float(n)
        if summary == "num_rel" and self.o.complete:
            return float(positive_labels)
        if summary == "mean" and n:
            return total / n
        if summary == "gm" and n:
            return math.exp(total / n)
        return total

    def summary(self, total: np.ndarray, n: int, run_id: bytes, positive_labels: int) -> bytes:
        """The ``all`` lines: each summary from the running sums ``total`` over the ``n`` queries."""
        out = []
        for m, names in self.layout:
            kind = m.record.kind
            if kind == "runid":
                out.append(b"%s\tall\t%s\n" % (_name("runid"), run_id))
                continue
            if kind == "relstring":
                continue
            for name, column in names:
                value = self._summary_value(m, float(total[column]) if total is not None else 0.0, n,
                                            positive_labels)
                text = integer(value) if kind == "long" and not self.z else fixed(value)
                out.append(b"%s%s\tall\t%s\n" % (self.z, name, text.encode()))
        return b"".join(out)
