"""Models of each loss family trained once on the sample data, for the export tests: LambdaMART, XE-NDCG, and
LambdaMART on features normalised per dataset (zscore and minmax)."""

from __future__ import annotations

import pytest

from rankcli.cli import main
from tests.conftest import SAMPLE

TREES = "12"


def _train(d, name: str, data: str, loss: str) -> None:
    assert main(["train", str(d / data / "train.parquet"), "--valid", str(d / data / "vali.parquet"), "-o",
                 str(d / "models" / name), "--loss", loss, "--trees", TREES, "--threads", "1"]) == 0


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    """``{"lambdamart", "xendcg", "zscore", "minmax"}`` -> model directory, and ``"data"`` -> the raw sample
    converted (``train``, ``vali``, ``test`` Parquet files)."""
    d = tmp_path_factory.mktemp("export-models")
    (d / "models").mkdir()
    assert main(["convert", str(SAMPLE / "letor"), "-o", str(d / "raw")]) == 0
    for method in ("zscore", "minmax"):
        assert main(["convert", str(SAMPLE / "letor"), "-o", str(d / method), "--normalize", method, "--per",
                     "dataset"]) == 0
    _train(d, "lambdamart", "raw", "lambdamart")
    _train(d, "xendcg", "raw", "xendcg")
    _train(d, "zscore", "zscore", "lambdamart")
    _train(d, "minmax", "minmax", "lambdamart")
    m = d / "models"
    return {"lambdamart": m / "lambdamart", "xendcg": m / "xendcg", "zscore": m / "zscore", "minmax": m / "minmax",
            "data": d / "raw", "root": d}
