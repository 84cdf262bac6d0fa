"""The other direction of an export: feature values logged by the engine, joined with judgments, as a dataset
(``rankcli convert --from ltr-log|solr-features LOG --qrels JUDGMENTS``), so that train -> export-model -> log ->
convert is a loop. The formats are :mod:`rankcli.formats.feature_logs`'; this returns ``convert``'s result object."""

from __future__ import annotations

import time
from pathlib import Path

from rankcli.formats.feature_logs import write_logged
from rankcli.info import summarize_dataset

#: ``convert --from`` values.
LOG_KINDS = ("ltr-log", "solr-features")


def convert_log(kind: str, log: str, qrels: str, output: Path | str, *, overwrite: bool = False):
    """Convert the feature log ``log`` (``kind``: :data:`LOG_KINDS`) joined with the judgments ``qrels`` into the
    Parquet dataset ``output``; returns a :class:`rankcli.convert.ConvertResult`."""
    from rankcli.convert import ConvertResult, FileResult

    start = time.perf_counter()
    ds, notes = write_logged(kind, log, qrels, output, overwrite=overwrite)
    summary = summarize_dataset(ds.labels, ds.offsets, ds.n_features, has_docid=True)
    summary.seconds = time.perf_counter() - start
    return ConvertResult(str(output), False, [FileResult([str(log)], str(output), summary)], ds.n_features,
                         summary.seconds, notes)
