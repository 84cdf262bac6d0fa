"""rankcli.dataset: the data model's offsets, built from a qid column."""

import numpy as np
import pytest

from rankcli import dataset


def test_offsets_from_contiguous_qids():
    qids = np.array([7, 7, 3, 3, 3, 9])
    assert dataset.offsets_from_qids(qids).tolist() == [0, 2, 5, 6]
    assert dataset.offsets_from_qids(np.array([], dtype=np.int64)).tolist() == [0]


def test_reappearing_qid_names_both_rows():
    with pytest.raises(dataset.NonContiguousQueryError) as err:
        dataset.offsets_from_qids(np.array([1, 1, 2, 3, 2, 4, 1]))
    assert (err.value.qid, err.value.row, err.value.first_row) == (2, 4, 2)
