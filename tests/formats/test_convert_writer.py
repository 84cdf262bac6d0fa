"""rankcli.formats.convert_writer: chunks of parsed rows into one query-aligned Parquet file."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rankcli.formats.convert_writer import ChunkWriter, ParsedRows, sorted_by_qid


def chunk(qids, width, docids=None) -> ParsedRows:
    n = len(qids)
    features = np.asfortranarray(np.arange(n * width, dtype=np.float32).reshape(n, width) + 1)
    return ParsedRows(np.arange(n, dtype=np.float64), np.asarray(qids, dtype=np.int64), features,
                 None if docids is None else pa.array(docids, pa.string()), None)


def test_a_wider_chunk_starts_a_part_and_the_join_pads(tmp_path):
    seen = []
    writer = ChunkWriter(tmp_path / "out.parquet", False, None, {"kind": "dataset"},
                         on_rows=lambda labels, offsets: seen.append(offsets.tolist()), flush_rows=3)
    try:
        writer.add(chunk([1, 1, 2], 2))  # query 2 may continue: held back
        writer.add(chunk([2, 3], 4, ["x", "y"]))  # wider, and with docids: a new part
        writer.close()
        assert len(writer.parts) == 2 and (writer.width, writer.docid) == (4, True)
        writer.join(tmp_path / "out.parquet", 5)
    finally:
        writer.cleanup()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.parquet"]
    table = pq.read_table(tmp_path / "out.parquet")
    assert table.column_names == ["qid", "label", "docid", "f1", "f2", "f3", "f4", "f5"]
    assert table.column("qid").to_pylist() == [1, 1, 2, 2, 3]
    assert table.column("docid").to_pylist() == [None, None, None, "x", "y"]
    assert table.column("f3").to_pylist() == [0, 0, 0, 3, 7] and table.column("f5").to_pylist() == [0] * 5
    assert seen == [[0, 2], [0, 2], [0, 1]]  # whole queries only: query 2 went out with its second chunk


def test_a_single_part_of_the_final_width_is_moved_into_place(tmp_path):
    writer = ChunkWriter(tmp_path / "t.parquet", False, 3, {})
    writer.add(chunk([5, 5, 6], 2))
    writer.close()
    part = writer.parts[0].path
    writer.join(tmp_path / "t.parquet", 3)
    assert not part.exists() and pq.read_schema(tmp_path / "t.parquet").names == ["qid", "label", "f1", "f2", "f3"]


def test_sorted_by_qid_is_stable_and_frees_its_input():
    chunks = [chunk([3, 1], 1, ["a", "b"]), chunk([2, 1, 3], 2)]
    out = list(sorted_by_qid(chunks, 2))
    assert chunks == [] and [c.n_rows for c in out] == [2, 2, 1]
    assert np.concatenate([c.qids for c in out]).tolist() == [1, 1, 2, 3, 3]
    assert sum((c.docids.to_pylist() for c in out), []) == ["b", None, None, "a", None]
    assert np.concatenate([c.labels for c in out]).tolist() == [1, 1, 0, 0, 2]
    assert np.concatenate([c.features for c in out])[:, 1].tolist() == [0, 4, 2, 0, 6]
