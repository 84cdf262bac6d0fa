"""The directory ``rankcli click-model fit`` writes: a fitted click model.

Layout (written atomically, with rankcli's output marker, so that ``--overwrite`` replaces only a click-model
directory):

``model.json``
    ``format`` (``rankcli-click-model/1``), ``model``, ``by`` (``document``: parameters per (query, document) pair;
    ``relevance``: per relevance grade), the fit's ``options`` (iterations, tolerance, prior, cap, E-step), the
    ``log`` it was fitted on (path, format, fingerprint, counts), the ``fit`` (iterations run, whether it
    converged, the log-likelihood per iteration), the parameter ``families`` and the ``files``.
``items.parquet``
    One row per item: ``query`` and ``document`` (strings), or ``relevance`` (float64); a column per per-item
    family (``attr``, ``sat``, ``ctr``); ``impressions`` and ``clicks`` in the log.
``ranks.parquet``
    One row per rank (``rank``, 1-based): a column per per-rank family (``exam``, ``cont``, ``ctr``), with
    ``impressions`` and ``clicks`` (models with per-rank parameters).
``rank_previous.parquet``
    UBM's examination: ``rank``, ``previous_click_rank`` (0: no click above), ``distance`` (their difference),
    ``exam`` and ``observations`` (how many results the estimate rests on).
``global.parquet``
    The single-valued parameters: ``parameter``, ``value`` (DBN's ``cont``, CCM's ``tau1..3``, GCTR's ``ctr``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rankcli.errors import InputError
from rankcli.formats.arrow import array_from_numpy, column_to_numpy, strings_array
from rankcli.formats.atomic import atomic_directory
from rankcli.formats.inputs import unreadable_input
from rankcli.formats.parquet import WRITE_OPTIONS, open_parquet
from rankcli.formats.session_log import codes
from rankcli.formats.trec.parse import read_qrels_columns

FORMAT = "rankcli-click-model/1"
MODEL_JSON = "model.json"
KIND = "click-model"
FILES = {"item": "items.parquet", "rank": "ranks.parquet", "rank_prev": "rank_previous.parquet",
         "single": "global.parquet"}


@dataclass
class StoredModel:
    """A click-model directory as read: ``info`` is ``model.json``; ``tables`` the Parquet files by family kind."""

    path: Path
    info: dict
    tables: dict[str, pa.Table]

    def column(self, kind: str, name: str) -> np.ndarray:
        """A numeric column of the table of family ``kind``."""
        return column_to_numpy(self.tables[kind].column(name))


def _table(columns: dict) -> pa.Table:
    arrays = {}
    for name, values in columns.items():
        if isinstance(values, (pa.Array, pa.ChunkedArray)):
            arrays[name] = values
        else:
            values = np.asarray(values)
            arrays[name] = array_from_numpy(values.astype(np.int64) if values.dtype.kind in "iub" else
                                            values.astype(np.float64))
    return pa.table(arrays)


def write_click_model(path: Path | str, info: dict, tables: dict[str, dict], *, overwrite: bool = False) -> None:
    """Write a click-model directory atomically: ``info`` as ``model.json`` (its ``files`` filled in), and each of
    ``tables`` (family kind -> column name -> numpy array or Arrow array) as its Parquet file."""
    files = {kind: FILES[kind] for kind in tables}
    record = {"format": FORMAT, **info, "files": files}
    text = json.dumps(record, indent=2, allow_nan=False) + "\n"
    with atomic_directory(path, overwrite, kind=KIND) as tmp:
        for kind, columns in tables.items():
            pq.write_table(_table(columns), str(Path(tmp) / FILES[kind]), **WRITE_OPTIONS)
        (Path(tmp) / MODEL_JSON).write_text(text)


def read_click_model(path: Path | str) -> StoredModel:
    """Read the click-model directory at ``path``; anything else is an :class:`InputError` saying what it is not."""
    p = Path(path)
    if not p.exists():
        raise unreadable_input(p)
    if not p.is_dir():
        raise InputError(f"{p}: not a directory; a click model is the directory rankcli click-model fit writes")
    meta = p / MODEL_JSON
    try:
        info = json.loads(meta.read_text())
    except FileNotFoundError:
        hint = " (a ranker's model directory: rankcli.json)" if (p / "rankcli.json").exists() else ""
        raise InputError(f"{p}: no {MODEL_JSON}: not a click-model directory{hint}; rankcli click-model fit "
                         "writes one") from None
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"{meta}: not readable JSON ({exc})") from None
    if not isinstance(info, dict) or info.get("format") != FORMAT:
        raise InputError(f"{meta}: format {info.get('format') if isinstance(info, dict) else None!r}, expected "
                         f"{FORMAT!r}")
    tables = {}
    for kind, name in (info.get("files") or {}).items():
        if kind not in FILES or name != FILES[kind]:
            raise InputError(f"{meta}: unknown file entry {kind!r}: {name!r}")
        try:  # page checksums verified, as every Parquet read of rankcli's
            tables[kind] = open_parquet(p / name).read()
        except (OSError, pa.ArrowInvalid) as exc:
            raise InputError(f"{p / name}: cannot read ({exc})") from None
    return StoredModel(p, info, tables)


def _joint_codes(left: pa.Array, right: pa.Array) -> tuple[np.ndarray, np.ndarray, int]:
    """Codes of two string arrays under one vocabulary, and its size."""
    c, vocab = codes(pa.chunked_array([left.cast(pa.string()), right.cast(pa.string())], type=pa.string()))
    c = c.astype(np.int64)  # the callers multiply codes by the vocabulary's size
    return c[:len(left)], c[len(left):], max(len(vocab), 1)


def match_documents(stored: StoredModel, queries: pa.Array, documents: pa.Array, query_of_row: np.ndarray,
                    document_of_row: np.ndarray) -> np.ndarray:
    """The item of a per-document model for every row of a log (``query_of_row`` indexes ``queries``,
    ``document_of_row`` indexes ``documents``); -1 where the model has no parameters for the pair."""
    items = stored.tables["item"]
    mq, lq, _ = _joint_codes(items.column("query").combine_chunks(), queries)
    md, ld, width = _joint_codes(items.column("document").combine_chunks(), documents)
    model_keys = mq * width + md
    row_keys = lq[query_of_row] * width + ld[document_of_row]
    return _lookup(model_keys, row_keys)


def match_grades(stored: StoredModel, relevance: np.ndarray) -> np.ndarray:
    """The item of a per-grade model for every row's relevance; -1 for a grade the model has no parameters for."""
    return _lookup(stored.column("item", "relevance"), np.asarray(relevance, dtype=np.float64))


def _lookup(keys: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    pos = np.searchsorted(sorted_keys, wanted)
    pos_c = np.minimum(pos, max(sorted_keys.shape[0] - 1, 0))
    found = (pos < sorted_keys.shape[0]) & (sorted_keys[pos_c] == wanted) if sorted_keys.shape[0] else \
        np.zeros(wanted.shape[0], bool)
    return np.where(found, order[pos_c] if sorted_keys.shape[0] else -1, -1).astype(np.int64)


def item_strings(values: pa.Array, codes: np.ndarray) -> pa.Array:
    """``values[codes]`` (a vocabulary indexed by codes), for the item table's key columns."""
    if len(values) == 0:
        return strings_array([])
    return values.take(array_from_numpy(np.asarray(codes, dtype=np.int64)))


def match_dataset(stored: StoredModel, qids: np.ndarray, offsets: np.ndarray, docids: np.ndarray | None) -> np.ndarray:
    """The item of a per-document model for every row of a dataset: its query is ``str(qid)`` (a rankcli click log's
    ``source_qid``), its document the ``docid`` or, without one, the row's 0-based number (``source_row``); -1 where
    the model has no parameters for the pair."""
    first = np.asarray(qids, dtype=np.int64)[offsets[:-1]]
    queries = array_from_numpy(first).cast(pa.string())
    query_of_row = np.repeat(np.arange(first.shape[0], dtype=np.int64), np.diff(offsets))
    if docids is None:
        documents = array_from_numpy(np.arange(offsets[-1], dtype=np.int64)).cast(pa.string())
    else:
        documents = strings_array([str(d).encode() for d in docids])
    return match_documents(stored, queries, documents, query_of_row, np.arange(offsets[-1], dtype=np.int64))


def read_qrels_for(path: Path | str, queries: pa.Array, documents: pa.Array) -> tuple[np.ndarray, np.ndarray,
                                                                                         np.ndarray]:
    """TREC qrels at ``path`` coded against a log's vocabularies: ``(query, document, label)`` per judgment, the codes
    -1 for a query or document the log never shows."""
    cols = read_qrels_columns(path)
    qids = strings_array([bytes(q) for q in cols.qids])
    docids = strings_array([bytes(d).rstrip(b"\0") for d in cols.docids])
    return (_codes_in(qids, queries), _codes_in(docids, documents), np.asarray(cols.values, dtype=np.float64))


def _codes_in(values: pa.Array, vocabulary: pa.Array) -> np.ndarray:
    """The index of each of ``values`` in ``vocabulary`` (distinct strings), -1 where absent."""
    v_codes, w_codes, width = _joint_codes(values, vocabulary)
    position = np.full(width, -1, np.int64)
    position[w_codes] = np.arange(w_codes.shape[0])
    return position[v_codes]
