"""A click log in memory as the click models read it (:class:`SessionLog`), whatever its file format, and the coding
of its identifiers."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rankcli.formats.arrow import column_to_numpy


@dataclass
class SessionLog:
    """A click log, coded: session ``s`` is rows ``offsets[s]:offsets[s + 1]`` in rank order; ``query`` per session
    and ``document`` per row index the vocabularies ``queries`` and ``documents`` (Arrow string arrays)."""

    path: str
    format: str
    offsets: np.ndarray  # (S + 1,) int64
    query: np.ndarray  # (S,) int64 into queries
    document: np.ndarray  # (N,) int64 into documents
    click: np.ndarray  # (N,) bool
    queries: pa.Array
    documents: pa.Array
    relevance: np.ndarray | None = None  # (N,) float64
    footer: dict = field(default_factory=dict)  # a rankcli log's rankcli.clicks
    notes: dict = field(default_factory=dict)  # counts: repeated clicks, ignored clicks, ...
    fingerprint: str = ""

    @property
    def n_sessions(self) -> int:
        """Sessions in the log."""
        return int(self.offsets.shape[0] - 1)


def fingerprint(path: Path | str) -> str:
    """A hash of the file's bytes (BLAKE2b, 128 bits), read in megabyte blocks."""
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def codes(column: pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """``(codes, vocabulary)``: one integer code per value (int32 below 2**31 values), ``vocabulary[code]`` the value
    (first-seen order)."""
    encoded = pc.dictionary_encode(column).combine_chunks()
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.chunk(0) if encoded.num_chunks else pa.array([], pa.dictionary(pa.int32(), pa.string()))
    vocabulary = encoded.dictionary
    if not pa.types.is_string(vocabulary.type):  # integer identifiers: only the distinct ones become text
        vocabulary = vocabulary.cast(pa.string())
    return column_to_numpy(encoded.indices).astype(np.int64), vocabulary


def integer_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, uniques)`` of an integer array in first-appearance order, by Arrow's hash kernel: no sort and no
    int64 temporaries the size of the input (``np.unique`` takes about four), which matters for 100M results."""
    encoded = pc.dictionary_encode(pa.Array.from_buffers(pa.int64(), values.shape[0],
                                                         [None, pa.py_buffer(np.ascontiguousarray(values,
                                                                                                  np.int64))]))
    uniques = column_to_numpy(encoded.dictionary)
    dtype = np.int32 if uniques.shape[0] < (1 << 31) else np.int64
    return column_to_numpy(encoded.indices).astype(dtype, copy=False), uniques
