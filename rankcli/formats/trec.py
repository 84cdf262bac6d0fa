"""TREC run and qrels files.

- A run: one line per retrieved document, ``qid Q0 docid rank score tag``, whitespace-separated. The ``Q0`` and ``rank``
  fields are read but not used: the order comes from ``score`` (descending); equal scores are ordered by the
  evaluation's convention (trec_eval's rule, docid descending in byte order, under the ``trec`` convention).
- Qrels: ``qid iteration docid relevance``, whitespace-separated; the iteration field is ignored.
- Documents that rankcli writes (``export --format trec-qrels``, ``predict --format trec``) are named by
  :func:`document_names`: the docid, else ``<qid>-<row>``.

Query ids are kept as strings (TREC ids need not be numbers). Blank lines and lines starting with ``#`` are skipped.
Errors name the file and line: ``run.txt:17: expected 6 fields "qid Q0 docid rank score tag", got "301 Q0 d1"``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rankcli.errors import InputError, InputFormatError, SchemaError


@dataclass
class TrecRunLines:
    """A run file's lines in file order: ``qids``, ``docids`` (object arrays of str) and ``scores`` (float64)."""

    qids: np.ndarray
    docids: np.ndarray
    scores: np.ndarray
    tags: set
    tag: str = ""  # the first line's tag: trec_eval's runid


@dataclass
class Qrels:
    """Judgments in file order: ``qids``, ``docids`` (object arrays of str) and ``labels`` (float64)."""

    qids: np.ndarray
    docids: np.ndarray
    labels: np.ndarray


def _lines(path: Path):
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if path.is_dir():
        raise InputError(f"{path}: is a directory, expected a file")
    try:
        with open(path, "rb") as probe:
            gzipped = probe.read(2) == b"\x1f\x8b"  # gzip's magic bytes: runs and qrels as TREC distributes them
        if gzipped:
            import gzip

            fh = gzip.open(path, "rt", encoding="utf-8-sig", errors="strict")
        else:
            fh = open(path, "r", encoding="utf-8-sig", errors="strict")  # -sig: skip a leading BOM
        with fh:
            for number, line in enumerate(fh, 1):
                yield number, line
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except (OSError, EOFError) as exc:  # a truncated or corrupt .gz
        raise InputError(f"{path}: cannot read ({getattr(exc, 'strerror', None) or exc})") from None


def _number(text: str, what: str, path: Path, number: int) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputFormatError(f"{what} must be a number", str(path), number, text) from None
    if math.isnan(value):
        raise InputFormatError(f"{what} is NaN", str(path), number, text)
    return value


def _records(path: Path, layout: str, docid_field: int, duplicate: str):
    """Yield ``(line number, fields)`` of the data lines of a whitespace-separated TREC file.

    Blank and ``#`` lines are skipped; a line whose field count differs from ``layout``'s, or a (qid, docid) pair
    seen before (``duplicate`` phrases it), is an :class:`InputFormatError` at that line.
    """
    count = len(layout.split())
    seen: dict[tuple[str, str], int] = {}
    for number, line in _lines(path):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        if len(parts) != count:
            raise InputFormatError(f'expected {count} fields "{layout}"', str(path), number, line.rstrip("\n"))
        qid, docid = parts[0], parts[docid_field]
        key = (qid, docid)
        if key in seen:
            raise InputFormatError(f"document {docid} {duplicate} for query {qid} (first at line {seen[key]})",
                                   str(path), number, line.rstrip("\n"))
        seen[key] = number
        yield number, parts


def read_trec_run(path: Path | str) -> TrecRunLines:
    """Read a TREC run (``qid Q0 docid rank score tag``). A document listed twice for one query is an error."""
    path = Path(path)
    qids, docids, scores, tags, first = [], [], [], set(), None
    for number, (qid, _, docid, _, score, tag) in _records(path, "qid Q0 docid rank score tag", 2, "appears twice"):
        qids.append(qid)
        docids.append(docid)
        scores.append(_number(score, "score", path, number))
        tags.add(tag)
        if first is None:
            first = tag
    if not qids:
        raise InputError(f"{path}: the run is empty")
    return TrecRunLines(np.array(qids, dtype=object), np.array(docids, dtype=object),
                        np.array(scores, dtype=np.float64), tags, first)


def read_qrels(path: Path | str) -> Qrels:
    """Read TREC qrels (``qid iteration docid relevance``). A (qid, docid) pair judged twice is an error."""
    path = Path(path)
    qids, docids, labels = [], [], []
    for number, (qid, _, docid, rel) in _records(path, "qid iteration docid relevance", 2, "is judged twice"):
        qids.append(qid)
        docids.append(docid)
        labels.append(_number(rel, "relevance", path, number))
    if not qids:
        raise InputError(f"{path}: the qrels file is empty")
    return Qrels(np.array(qids, dtype=object), np.array(docids, dtype=object), np.array(labels, dtype=np.float64))


#: What cannot be part of a document name in a TREC file: the empty name, whitespace (Python's ``str.split`` set, which
#: the readers split lines on) and NUL (trec_eval's C strings end there). RE2 syntax, for ``pyarrow.compute``.
_UNWRITABLE = (r"^$|[\x00\t\n\x0b\x0c\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}"
               r"\x{205f}\x{3000}]")


def _arrow_strings(values):
    """An Arrow string array from an Arrow array or a numpy/list of ``str`` (``None`` = null), without pandas."""
    import pyarrow as pa

    from rankcli.formats.parquet import array_from_numpy
    from rankcli.formats.svmlight import strings_array

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        return values if pa.types.is_string(values.type) else values.cast(pa.string())
    values = np.asarray(values)
    if values.dtype.kind in "iuf":
        return array_from_numpy(values).cast(pa.string())
    return strings_array([None if v is None else str(v).encode() for v in values.tolist()])


def document_names(qids, docids=None, rows=None, *, source: str = "", check: bool = True):
    """The name of each document in every TREC file rankcli writes or reads against a dataset: an Arrow string array.

    A document is named by its ``docid`` when it has one; otherwise (no docid column, or a null in it) by
    ``<qid>-<row>``, with ``row`` its 0-based row number in the dataset (``rows``; default ``0..n-1``). ``export
    --format trec-qrels``, ``predict --format trec`` and the evaluation of a Parquet run under the ``trec`` tie rule
    all name documents with this function, so a run and the qrels exported from the same dataset always match.

    ``qids``, ``docids`` and ``rows`` may be numpy arrays, lists or Arrow arrays. With ``check``, a name that a TREC
    line cannot hold (empty, with whitespace or a NUL byte) is a :class:`SchemaError` naming the row (and ``source``).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from rankcli.formats.parquet import array_from_numpy
    from rankcli.formats.svmlight import scalar

    qid_text = _arrow_strings(qids)
    n = len(qid_text)
    rows = np.arange(n, dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    if rows.shape[0] != n:
        raise ValueError(f"document_names: {rows.shape[0]} row numbers for {n} query ids")
    names = pc.binary_join_element_wise(qid_text, array_from_numpy(rows).cast(pa.string()), scalar("-"))
    if docids is not None:
        given = _arrow_strings(docids)
        if len(given) != n:
            raise ValueError(f"document_names: {len(given)} docids for {n} query ids")
        names = pc.coalesce(given, names)  # a row without a docid is named <qid>-<row>
    if check and n:
        bad = pc.match_substring_regex(names, _UNWRITABLE)
        if pc.any(bad).as_py():
            i = bad.to_pylist().index(True)
            name = names[i].as_py()
            why = ("it is empty" if name == "" else "it contains a NUL byte, where trec_eval's strings end"
                   if "\x00" in name else "it contains whitespace, which separates the fields of a TREC line")
            where = f"{source}: " if source else ""
            raise SchemaError(f"{where}row {int(rows[i])} (qid {qid_text[i].as_py()}): docid {name!r} cannot name a "
                              f"document in a TREC file: {why}")
    return names


def qrels_lines(qids, docids, labels, rows=None, *, source: str = ""):
    """TREC qrels lines ``qid 0 docid label\\n`` as an Arrow string array, built in C.

    Documents are named by :func:`document_names` (the docid, or ``<qid>-<row>`` where there is none). Labels print
    as integers when they are (``2``), else as given (``0.07``).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from rankcli.formats.parquet import array_from_numpy
    from rankcli.formats.svmlight import scalar

    # array_from_numpy / scalar: no pandas import (pa.array, pa.scalar and Python literals in pc calls import it)
    qid_text = _arrow_strings(qids)
    doc_text = document_names(qid_text, docids, rows, source=source)
    if isinstance(labels, (pa.Array, pa.ChunkedArray)):
        label_text = labels.cast(pa.float64()).cast(pa.string())
    else:
        label_text = array_from_numpy(np.asarray(labels, dtype=np.float64)).cast(pa.string())
    return pc.binary_join_element_wise(qid_text, scalar("0"), doc_text,
                                       pc.binary_join_element_wise(label_text, scalar("\n"), scalar("")), scalar(" "))


def write_qrels(path: Path | str, qids, docids, labels, *, rows=None, overwrite: bool = False) -> int:
    """Write TREC qrels (``qid 0 docid label``) atomically; returns the number of lines. See :func:`qrels_lines`."""
    from rankcli.formats.atomic import atomic_path
    from rankcli.formats.svmlight import write_lines

    lines = qrels_lines(qids, docids, labels, rows, source=str(path))
    with atomic_path(path, overwrite) as tmp, open(tmp, "wb") as out:
        write_lines(out, lines)
    return len(lines)


def _qid_key(qid) -> bytes:
    return str(qid).encode()


def trec_eval_text(specs, per_query: dict, means: dict, qids, *, runid: str | None = None,
                   queries: bool = False) -> str:
    """Results in trec_eval's layout: ``%-22s\t%s\t%6.4f`` lines (measure, query id or ``all``, value; counts as
    integers ``%ld``; ``runid`` with the run's tag), measures in trec_eval's order (``measures.c``), with
    ``queries`` (``-q``) each query's lines first, queries in byte order of their ids (trec_eval sorts its qrels),
    then the summary ``all`` lines. Measures that trec_eval does not print per query (num_q, gm_map, gm_bpref,
    runid) appear only in the summary, as in trec_eval. Metrics without a trec_eval name print under rankcli's.
    """
    from rankcli.core.measures import trec_order

    ordered = trec_order(specs)

    def line(spec, where, value) -> str:
        name = spec.output_name()
        if spec.record.integer:
            text = str(int(value)) if value == value else "nan"
        else:
            text = f"{value:6.4f}"
        return f"{name:<22}\t{where}\t{text}\n"

    out = []
    if queries:
        for i in sorted(range(len(qids)), key=lambda i: _qid_key(qids[i])):
            for spec in ordered:
                if spec.record.per_query_line and str(spec) in per_query:
                    out.append(line(spec, qids[i], float(per_query[str(spec)][i])))
    for spec in ordered:
        if spec.record.family == "info":
            out.append(f"{'runid':<22}\tall\t{runid if runid is not None else 'rankcli'}\n")
        elif str(spec) in means:
            out.append(line(spec, "all", means[str(spec)]))
    return "".join(out)
