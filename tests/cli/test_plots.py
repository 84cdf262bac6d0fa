"""The plots a user looks for, from the command line: train's validation curve, compare's per-query differences and
propensity's curve, each written atomically as a PNG that rankcli marks as its own (so --overwrite may replace it)."""

from __future__ import annotations

import pytest

from rankcli.display.plot import have_matplotlib
from rankcli.errors import ExitStatus
from tests.conftest import SAMPLE
from tests.conftest import run_main as run

pytestmark = pytest.mark.skipif(not have_matplotlib(), reason="matplotlib (the plot extra) is not installed")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    from rankcli.cli import main

    d = tmp_path_factory.mktemp("plots")
    for part in ("vali", "test"):
        assert main(["convert", str(SAMPLE / "letor" / f"{part}.txt"), "-o", str(d / f"{part}.parquet")]) == 0
    return d


def _png(path) -> bool:
    data = path.read_bytes()
    return data[:8] == b"\x89PNG\r\n\x1a\n" and b"rankcli" in data[:4096] and len(data) > 10_000


def test_train_plot_draws_the_validation_curve(capsys, data, tmp_path):
    args = ["train", data / "vali.parquet", "--valid", data / "test.parquet", "-o", tmp_path / "m", "--trees", "8",
            "--threads", "1", "--plot", tmp_path / "curve.png"]
    status, out, err = run(capsys, *args)
    assert status == 0, err
    assert _png(tmp_path / "curve.png") and (tmp_path / "m" / "model.txt").is_file()
    again = run(capsys, *args)
    assert again[0] == ExitStatus.OUTPUT and "exists" in again[2]
    assert run(capsys, *args, "--overwrite")[0] == 0


@pytest.mark.parametrize("extra,said", [
    (["--plot", "{tmp}/c.png"], "--plot draws the validation curve: give --valid VALID"),
    (["--valid", "{vali}", "--plot", "-"], "--plot -: give the PNG a file name"),
    (["--valid", "{vali}", "--plot", "{tmp}/m/c.png"], "--plot {tmp}/m/c.png is inside the model directory {tmp}/m"),
])
def test_train_plot_refusals(capsys, data, tmp_path, extra, said):
    fill = {"tmp": tmp_path, "vali": data / "vali.parquet"}
    extra = [x.format(**fill) for x in extra]
    status, out, err = run(capsys, "train", data / "test.parquet", "-o", tmp_path / "m", "--trees", "2", *extra)
    assert status == ExitStatus.USAGE and said.format(**fill) in err
    assert not (tmp_path / "m").exists()


def test_train_plot_never_replaces_an_input(capsys, data, tmp_path):
    status, out, err = run(capsys, "train", data / "test.parquet", "--valid", data / "vali.parquet", "-o",
                           tmp_path / "m", "--plot", data / "vali.parquet", "--overwrite")
    assert status in (ExitStatus.USAGE, ExitStatus.OUTPUT) and not (tmp_path / "m").exists()
    assert (data / "vali.parquet").read_bytes()[:4] == b"PAR1"


def test_compare_plot_draws_the_sorted_differences(capsys, data, tmp_path):
    from rankcli.cli import main

    for trees in ("1", "6"):
        assert main(["train", str(data / "vali.parquet"), "-o", str(tmp_path / f"m{trees}"), "--trees", trees,
                     "--threads", "1"]) == 0
        assert main(["predict", str(tmp_path / f"m{trees}"), str(data / "test.parquet"), "-o",
                     str(tmp_path / f"r{trees}.parquet")]) == 0
    runs = [tmp_path / "r1.parquet", tmp_path / "r6.parquet"]
    status, out, err = run(capsys, "compare", *runs, "--plot", tmp_path / "d.png", "--json")
    assert status == 0, err
    assert _png(tmp_path / "d.png")
    assert run(capsys, "compare", *runs, "--plot", tmp_path / "d.png")[0] == ExitStatus.OUTPUT
    assert run(capsys, "compare", *runs, "--plot", tmp_path / "d.png", "--overwrite")[0] == 0
    refused = run(capsys, "compare", *runs, "--plot", runs[0], "--overwrite")
    assert refused[0] in (ExitStatus.USAGE, ExitStatus.OUTPUT) and runs[0].read_bytes()[:4] == b"PAR1"
    assert run(capsys, "compare", *runs, "--plot", "-")[0] == ExitStatus.USAGE
