"""Unbounded work is refused up front, so that a typo in a size cannot exhaust memory or disk: exit 2 naming the
limit, before anything is allocated or written.

The limits are documented in docs/input-limits.md; convert's --num-features cap is tested in tests/cli/test_convert.py.
"""

from __future__ import annotations

from rankcli.errors import ExitStatus
from tests.conftest import SAMPLE
from tests.conftest import run_main as run


def test_simulate_clicks_refuses_impressions_beyond_the_row_cap(tmp_path, capsys):
    """--impressions 100000000 on the sample ended in MemoryError (2.2e11 displayed documents)."""
    data = tmp_path / "train.parquet"
    assert run(capsys, "convert", SAMPLE / "letor" / "train.txt", "-o", data)[0] == 0
    status, out, err = run(capsys, "simulate-clicks", data, "-o", tmp_path / "c.parquet", "--impressions", 100000000)
    assert status == ExitStatus.USAGE and out == ""
    assert err == ("Error: --impressions 100000000: up to 218,100,000,000 displayed documents (100,000,000 "
                   "impressions of each of 90 queries, 2,181 documents shown per round), more than the limit of "
                   "100,000,000; lower --impressions or --max-rank, or simulate in several runs with different "
                   "--seed values\n")
    # --max-rank bounds what an impression shows: 1 document x 90 queries x 1,200,000 impressions is still too many
    status, _, err = run(capsys, "simulate-clicks", data, "-o", tmp_path / "c.parquet", "--impressions", 1_200_000,
                         "--max-rank", 1)
    assert status == ExitStatus.USAGE and "up to 108,000,000 displayed documents" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.parquet"]


def test_experiment_refuses_an_augmentation_level_beyond_the_cap(tmp_path, capsys):
    """--augment-negatives 1e9 ended in MemoryError after the other units had trained; now nothing runs."""
    status, out, err = run(capsys, "experiment", SAMPLE / "letor" / "train.txt", "-o", tmp_path / "exp",
                           "--augment-negatives", "0.5,1e9")
    assert status == ExitStatus.USAGE and out == ""
    assert err == ("Error: --augment-negatives: a level must be at most 10 (each training list grows by that many "
                   "times its length; the paper sweeps 0 to 1), got 1e+09\n")
    assert list(tmp_path.iterdir()) == []
