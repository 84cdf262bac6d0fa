"""Feature values logged by a search engine, and the judgment lists they are joined with.

- **LTR plugin logs** (o19s Elasticsearch LTR, OpenSearch LTR): a search response whose hits carry
  ``fields._ltrlog``, a list of ``{logger name: [{"name": feature, "value": v}, ...]}``; a feature the query did not
  match has no ``value`` (or 0 with the log spec's ``missing_as_zero``) and is read as NaN, what the plugin's
  scoring sees.
- **Solr feature logs**: a Solr response whose ``response.docs`` carry ``[features]`` (or ``[fv]``), the CSV form
  ``name=value,name=value`` of ``CSVFeatureLogger`` (a feature the sparse form leaves out is its default, 0).

A log file holds one response per judged query, tagged with the query's id: JSON Lines of ``{"qid": Q, "response":
{...}}`` (or the response's own keys beside ``"qid"``), a JSON array of those, or one JSON object ``{Q: response}``.
Documents are named by the hit's ``_id`` (LTR plugins) or the doc's ``id`` field (Solr).

Judgments: TREC qrels (``qid iter docid grade``) or RankLib's ``grade qid:Q # docid ...``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from rankcli.errors import InputError, InputFormatError


@dataclass
class LoggedQuery:
    """One query's logged documents: their ids and their feature values by name."""

    qid: str
    docids: list[str]
    values: list[dict[str, float]]


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None


def _responses(path: Path) -> list[tuple[str, dict, str]]:
    """``(qid, response, where)`` of each response in a log file."""
    text = _read_text(path)
    stripped = text.lstrip()
    items: list[tuple[object, str]] = []
    if stripped.startswith("[") or (stripped.startswith("{") and "\n{" not in stripped.rstrip()):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise InputFormatError(f"not JSON ({exc.msg})", str(path), exc.lineno) from None
        if isinstance(data, dict) and "qid" not in data:
            items = [({"qid": k, "response": v}, f"{path}: query {k!r}") for k, v in data.items()]
        else:
            items = [(d, f"{path}: item {i + 1}") for i, d in enumerate(data if isinstance(data, list) else [data])]
    else:
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    items.append((json.loads(line), f"{path}:{number}"))
                except ValueError as exc:
                    raise InputFormatError(f"not JSON ({exc.msg})", str(path), number, line[:60]) from None
    out = []
    for item, where in items:
        if not isinstance(item, dict) or "qid" not in item:
            raise InputError(f"{where}: expected an object with the query's \"qid\" and its \"response\"")
        response = item.get("response", item)
        if not isinstance(response, dict):
            raise InputError(f"{where}: the response is not a JSON object")
        out.append((str(item["qid"]), response, where))
    return out


def _number(value, where: str) -> float:
    if value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InputError(f"{where}: a feature value is not a number, got {str(value)[:40]!r}") from None


def read_ltr_log(path: Path | str) -> list[LoggedQuery]:
    """The queries of an LTR plugin log (``_ltrlog`` entries of search responses)."""
    path = Path(path)
    out = []
    for qid, response, where in _responses(path):
        hits = (response.get("hits") or {}).get("hits")
        if not isinstance(hits, list):
            raise InputError(f"{where}: no hits.hits list: not a search response")
        docids, values = [], []
        for hit in hits:
            logs = (hit.get("fields") or {}).get("_ltrlog")
            if not isinstance(logs, list) or "_id" not in hit:
                raise InputError(f"{where}: hit {hit.get('_id', '?')!r} has no fields._ltrlog list (log the "
                                 "features with the ltr_log search extension)")
            row: dict[str, float] = {}
            for entry in logs:
                for features in (entry or {}).values():
                    for f in features:
                        row[str(f["name"])] = _number(f.get("value"), f"{where}: hit {hit['_id']!r}")
            docids.append(str(hit["_id"]))
            values.append(row)
        out.append(LoggedQuery(qid, docids, values))
    return out


def _solr_vector(text: str, where: str) -> dict[str, float]:
    row = {}
    for part in filter(None, (p.strip() for p in str(text).split(","))):
        name, sep, value = part.rpartition("=")
        if not sep:
            raise InputError(f"{where}: a [features] entry is not name=value, got {part[:40]!r}")
        row[name] = _number(value, where)
    return row


def read_solr_features(path: Path | str) -> list[LoggedQuery]:
    """The queries of a Solr feature log (``[features]`` of ``response.docs``)."""
    path = Path(path)
    out = []
    for qid, response, where in _responses(path):
        docs = (response.get("response") or {}).get("docs")
        if not isinstance(docs, list):
            raise InputError(f"{where}: no response.docs list: not a Solr response")
        docids, values = [], []
        for doc in docs:
            vector = doc.get("[features]", doc.get("[fv]"))
            if vector is None or "id" not in doc:
                raise InputError(f"{where}: a doc has no id or no [features] field (ask for fl=id,[features])")
            docids.append(str(doc["id"]))
            values.append(_solr_vector(vector, f"{where}: doc {doc['id']!r}"))
        out.append(LoggedQuery(qid, docids, values))
    return out


def read_judgments(path: Path | str) -> list[tuple[str, str, float]]:
    """``(qid, docid, grade)`` of a judgment list, in file order: TREC qrels or RankLib's ``grade qid:Q # docid``."""
    path = Path(path)
    out = []
    for number, line in enumerate(_read_text(path).splitlines(), 1):
        body = line.strip()
        if not body or body.startswith("#"):
            continue
        fields = body.split()
        try:
            if fields[1].startswith("qid:"):
                docid = body.partition("#")[2].split()
                if not docid:
                    raise ValueError("no docid after #")
                out.append((fields[1][4:], docid[0], float(fields[0])))
            elif len(fields) == 4:
                out.append((fields[0], fields[2], float(fields[3])))
            else:
                raise ValueError("not 4 fields")
        except (ValueError, IndexError):
            raise InputFormatError("expected TREC qrels 'qid iter docid grade' or RankLib's 'grade qid:Q # docid'",
                                   str(path), number, body[:60]) from None
    return out


def _integer_qid(qid: str, where: str) -> int:
    try:
        return int(qid)
    except ValueError:
        raise InputError(f"{where}: query id {qid!r} is not an integer (a rankcli dataset's qid is int64)") from None


def logged_dataset(queries: list[LoggedQuery], judgments: list[tuple[str, str, float]], where: str):
    """The judged documents of the log as a dataset (queries in the judgments' order, each query's documents in
    judgment order; columns ``f1..fN`` for the logged feature names in order of first appearance). Returns
    ``(dataset, names, notes)``: ``notes`` count what was read but not used."""
    import numpy as np

    from rankcli.dataset import Dataset

    names: dict[str, int] = {}
    for q in queries:
        for row in q.values:
            for name in row:
                names.setdefault(name, len(names))
    logged = {}
    for q in queries:
        for docid, row in zip(q.docids, q.values):
            logged.setdefault(q.qid, {})[docid] = row
    order: dict[str, list] = {}
    for qid, docid, grade in judgments:
        order.setdefault(qid, []).append((docid, grade))
    qids, labels, docids, rows, unlogged = [], [], [], [], 0
    for qid, docs in order.items():
        found = logged.get(qid, {})
        for docid, grade in docs:
            if docid not in found:
                unlogged += 1
                continue
            qids.append(_integer_qid(qid, where)), labels.append(grade), docids.append(docid)
            rows.append(found[docid])
    if not rows:
        raise InputError(f"{where}: no judged document appears in the log (documents are matched by query id and id)")
    features = np.full((len(rows), len(names)), np.nan, dtype=np.float32)
    for i, row in enumerate(rows):
        for name, value in row.items():
            features[i, names[name]] = value
    judged = sum(len(v) for v in order.values())
    logged_docs = sum(len(q.docids) for q in queries)
    notes = [f"{unlogged} judged documents are not in the log (left out)"] if unlogged else []
    if logged_docs > judged - unlogged:
        notes.append(f"{logged_docs - (judged - unlogged)} logged documents have no judgment (left out)")
    ds = Dataset(qids=np.array(qids, dtype=np.int64), labels=np.array(labels, dtype=np.float64), features=features,
                 feature_names=[f"f{i + 1}" for i in range(len(names))], docids=np.array(docids, dtype=object))
    return ds, list(names), notes


def write_logged(kind: str, log: str, qrels: str, output, *, overwrite: bool = False):
    """``convert --from ltr-log|solr-features``: read ``log`` and the judgments ``qrels``, write the joined dataset
    to ``output`` (its footer records the engine's feature names, ``rankcli.feature_names``, which ``train``
    carries into the model and ``export-model`` writes back). Returns ``(dataset, notes)``."""
    from rankcli.formats.parquet import write_dataset

    queries = read_ltr_log(log) if kind == "ltr-log" else read_solr_features(log)
    ds, names, notes = logged_dataset(queries, read_judgments(qrels), str(log))
    write_dataset(output, ds, overwrite=overwrite,
                  metadata={"source": str(log), "feature_names": names, "converted_by": "rankcli convert",
                            "feature_log": kind})
    return ds, notes
