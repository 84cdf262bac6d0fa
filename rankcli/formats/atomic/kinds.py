"""The kind of a one-file output, recognised from the file itself: ``--overwrite`` replaces only the same kind.

A Parquet output says what it is in its footer (``rankcli.kind``; a click log is a dataset with ``rankcli.clicks``),
a propensity file by its keys, a plot by the ``Software`` text chunk rankcli writes into the PNG. Text outputs
(SVMlight, TREC qrels and runs) have no room for a marker in their format: they are recognised by their lines, so
that ``--overwrite`` replaces a file of the same format and never, say, a user's notes or a file of another format.
The CSV tables of ``explain`` are recognised by their header: the table's exact columns (``-o``), or ``qid`` and a
metric's name first (``--per-query``; a feature's name there, ``f1``, is taken for a user's table, not for ours).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

DATASET = "dataset"
CLICK_LOG = "click log"
RUN = "run"
PER_QUERY = "per-query file"
PROPENSITY = "propensity file"
PLOT = "plot"
SVMLIGHT = "SVMlight text file"
QRELS = "TREC qrels file"
TREC_RUN = "TREC run file"
EXPLAIN = "explain table"
EXPLAIN_PER_QUERY = "explain per-query table"
#: The kinds recognised by what rankcli wrote into them (the others by their format).
MARKED = (DATASET, CLICK_LOG, RUN, PER_QUERY, PROPENSITY, PLOT, EXPLAIN, EXPLAIN_PER_QUERY)
#: The columns of ``explain -o``, in order (``rankcli.explain`` writes them; its CSV is recognised by this header).
EXPLAIN_COLUMNS = ("feature", "members", "gain", "gain_share", "splits", "splits_share", "drop", "drop_stderr",
                   "p_value", "p_raw", "n", "not_testable", "mean_abs_contribution", "mean_abs_contribution_stderr")
#: The header of earlier rankcli versions' ``explain -o`` CSV (before the contributions' standard error), still
#: recognised as explain's own.
EXPLAIN_COLUMNS_BEFORE = EXPLAIN_COLUMNS[:-1]
#: The measures a per-query column can be named after (``name`` or ``name@parameters``; the measure registry of
#: ``rankcli.core.metrics`` without its information fields; a test keeps the two equal).
METRIC_NAMES = frozenset({
    "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "rprec", "bpref", "mrr", "iprec_at_recall",
    "precision", "recall", "infap", "gm_bpref", "rprec_mult", "11pt_avg", "dcg", "ndcg", "ndcg_rel", "rndcg",
    "relative_p", "success", "set_f", "f1", "num_nonrel_judged_ret", "err"})
#: The ``Software`` text chunk of the PNG plots rankcli writes (matplotlib's ``savefig(metadata=...)``).
PLOT_SOFTWARE = "rankcli"

_PNG = b"\x89PNG\r\n\x1a\n"
_FEATURE = re.compile(r"^f[0-9]+$")
_QRELS_LINE = re.compile(rb"^\s*\S+\s+\S+\s+\S+\s+[-+]?\d+(?:\.\d*)?\s*$")
_TREC_RUN_LINE = re.compile(rb"^\s*\S+\s+\S+\s+\S+\s+[-+]?\d+\s+[-+]?[\d.]+(?:[eE][-+]?\d+)?\s+\S+\s*$"
                            rb"|^\s*\S+\s+\S+\s+\S+\s+[-+]?\d+\s+(?:nan|inf|-inf)\s+\S+\s*$", re.IGNORECASE)


def parquet_kind(metadata: Mapping[str, object]) -> str | None:
    """The output kind of a Parquet file from its rankcli footer keys (without the ``rankcli.`` prefix); None when
    the footer names none of rankcli's one-file outputs."""
    kind = metadata.get("kind")
    if kind == "dataset":
        return CLICK_LOG if "clicks" in metadata else DATASET
    return {"run": RUN, "per-query": PER_QUERY, "explain": EXPLAIN, "explain-per-query": EXPLAIN_PER_QUERY
            }.get(str(kind))


def file_kind(path: Path | str) -> str | None:
    """What the regular file ``path`` holds: ``"empty"``, one of the kinds above, or None (anything else)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return None
    if not head:
        return "empty"
    if head[:4] == b"PAR1":
        return _parquet_file_kind(path)
    if head[:8] == _PNG:
        return PLOT if b"tEXtSoftware\x00" + PLOT_SOFTWARE.encode() in head else None
    if head.lstrip()[:1] == b"{":
        return PROPENSITY if _is_propensity(path) else None
    return _text_kind(path, head)


def _parquet_file_kind(path: Path | str) -> str | None:
    try:
        import pyarrow.parquet as pq

        raw = pq.ParquetFile(str(path)).schema_arrow.metadata or {}
    except Exception:  # noqa: BLE001 - not a readable Parquet file: not one of ours
        return None
    prefix = b"rankcli."
    return parquet_kind({k[len(prefix):].decode("utf-8", "replace"): v.decode("utf-8", "replace")
                         for k, v in raw.items() if k.startswith(prefix)})


def _is_propensity(path: Path | str) -> bool:
    try:
        with open(path, "rb") as fh:
            data = json.loads(fh.read(64 << 20))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and isinstance(data.get("positions"), list) and \
        isinstance(data.get("propensity"), list) and "method" in data


def _csv_kind(first_line: bytes) -> str | None:
    """An ``explain`` CSV table by its header (pyarrow quotes every column name), else None."""
    fields = first_line.rstrip(b"\r").split(b",")
    if not all(len(f) >= 2 and f[:1] == f[-1:] == b'"' for f in fields):
        return None
    names = [f[1:-1].decode("utf-8", "replace") for f in fields]
    if tuple(names) in (EXPLAIN_COLUMNS, EXPLAIN_COLUMNS_BEFORE):
        return EXPLAIN
    if len(names) >= 2 and names[0] == "qid" and names[1].split("@", 1)[0] in METRIC_NAMES and \
            not _FEATURE.match(names[1]):
        return EXPLAIN_PER_QUERY
    return None


def _text_kind(path: Path | str, head: bytes) -> str | None:
    from rankcli.formats.svmlight_text import looks_like_svmlight, svmlight_head

    if head[:1] == b'"' and b"\n" in head:
        found = _csv_kind(head.split(b"\n", 1)[0])
        if found is not None:
            return found
    lines = [line for line in head.split(b"\n")[:-1] if line.strip()][:5] or [head]
    if all(_TREC_RUN_LINE.match(line) for line in lines):
        return TREC_RUN
    if all(_QRELS_LINE.match(line) for line in lines):
        return QRELS
    return SVMLIGHT if svmlight_head(head) or looks_like_svmlight(path) else None
