"""rankcli.formats.clicks: the click log's Arrow tables equal the data model's table of the simulated dataset, whole
and in pieces, with the features gathered from an Arrow table or from numpy."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from rankcli.formats.clicks import click_batches, click_table
from rankcli.formats.parquet import dataset_table
from rankcli.simulate import simulate_clicks, simulate_log
from tests.simulate.test_simulate import synthetic


@pytest.mark.parametrize("docids", [False, True])
@pytest.mark.parametrize("model,ranker,randomize", [("cascade", "random", None), ("pbm", "random", None),
                                                    ("cascade", "input", ("top", 3)), ("pbm", "label", ("swap", 2))])
def test_click_table_equals_dataset_table(docids, model, ranker, randomize):
    """The click log's Arrow assembly (features gathered from an Arrow table, or from ds.features) is the very table
    that write_dataset would write for simulate_clicks' dataset: same columns, order, types and values (only declared
    non-nullable, docid aside)."""
    ds = synthetic(40, 9, 3)
    if docids:
        ds.docids = np.array([f"d{i}" if i % 7 else None for i in range(ds.n_rows)], dtype=object)
    kw = {"ranker": ranker, "randomize": randomize}
    out, summary = simulate_clicks(ds, model=model, impressions=3, rng=np.random.default_rng(5), **kw)
    assert ("ranker_rank" in out.extra) == (randomize is not None)
    expected = dataset_table(out, out.extra)
    expected = expected.cast(pa.schema([f.with_nullable(f.name == "docid") for f in expected.schema]))
    log, summary2 = simulate_log(ds, model=model, impressions=3, rng=np.random.default_rng(5), **kw)
    assert summary2 == summary
    source_cols = {name: pa.chunked_array([ds.features[:100, j], ds.features[100:, j]])
                   for j, name in enumerate(ds.feature_names)}
    if docids:
        source_cols["docid"] = pa.array(ds.docids, pa.string())
    source = pa.table(source_cols)
    for got in (click_table(ds, log, source), click_table(ds, log)):
        assert got.schema == expected.schema
        assert got.equals(expected)
    # In pieces (as the CLI writes row groups): the same table.
    bounds = [0, 7, 7, 50, int(log.rows.shape[0])]
    pieces = list(click_batches(ds, log, source, bounds))
    assert [p.num_rows for p in pieces] == [7, 0, 43, log.rows.shape[0] - 50]
    assert pa.concat_tables(pieces).equals(expected)
