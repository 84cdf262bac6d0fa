"""Files a user already has, given where rankcli expects its own: SVMlight text to a command that reads Parquet is
told to convert it, and trec_eval's argument order (``eval QRELS RUN``) is pointed to ``rankcli trec_eval``."""

from __future__ import annotations

import gzip

import pytest

from rankcli.cli import main
from rankcli.errors import ExitStatus
from tests.conftest import SAMPLE
from tests.conftest import run_main as run

TEXT = SAMPLE / "letor" / "test.txt"


def hint(path) -> str:
    """The refusal of text where only Parquet is read: the exact convert command to run (beside the text file)."""
    out = str(path).removesuffix(".gz").removesuffix(".txt")
    return f"not Parquet; looks like SVMlight text: run 'rankcli convert {path} -o {out}.parquet' first"


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("hints")
    assert main(["convert", str(TEXT), "-o", str(d / "test.parquet")]) == 0
    assert main(["train", str(d / "test.parquet"), "-o", str(d / "m"), "--trees", "1", "--threads", "1"]) == 0
    return d / "m"


# (train, predict, eval --model, explain, info, tune and experiment convert text on the fly:
# tests/cli/test_text_inputs.py)
@pytest.mark.parametrize("args", [
    ["eval", "{text}"], ["compare", "{text}", "{text2}"],
    ["export", "{text}", "-o", "{tmp}/e.txt"], ["simulate-clicks", "{text}", "-o", "{tmp}/c.parquet"],
    ["split", "{text}", "-o", "{tmp}/folds", "--folds", "3"],
    ["propensity", "{text}"],
], ids=lambda a: " ".join(a[:2]))
def test_svmlight_text_where_parquet_is_read_is_told_to_convert(capsys, tmp_path, model, args):
    text2 = tmp_path / "other.txt"
    text2.write_bytes(TEXT.read_bytes())
    args = [a.format(text=TEXT, text2=text2, model=model, tmp=tmp_path) for a in args]
    status, out, err = run(capsys, *args)
    assert (status, out) == (ExitStatus.INVALID_INPUT, ""), err
    assert err == f"Error: {TEXT}: {hint(TEXT)}\n"


def test_compressed_and_qid_less_text_is_recognised_and_other_files_are_not(capsys, tmp_path):
    gz = tmp_path / "train.txt.gz"
    gz.write_bytes(gzip.compress(TEXT.read_bytes()))
    lgb = SAMPLE / "lightgbm-example" / "rank.train"
    for path in (gz, lgb):
        assert run(capsys, "propensity", path) == (ExitStatus.INVALID_INPUT, "", f"Error: {path}: {hint(path)}\n")
    for text in ("1 Q0 doc1 1 2.5 tag\n", "1 0 doc1 1\n", "12\n19\n", "hello world\n", ""):
        other = tmp_path / "other"
        other.write_text(text)
        status, _, err = run(capsys, "info", other)
        assert status == ExitStatus.INVALID_INPUT and "not a readable Parquet file" in err, (text, err)


def test_trec_eval_argument_order_points_to_trec_eval(capsys, tmp_path):
    status, out, err = run(capsys, "eval", "qrels.txt", "run.txt")
    assert (status, out) == (ExitStatus.USAGE, "")
    assert err == ("Error: unexpected extra argument (run.txt): rankcli eval takes one run. For trec_eval's order "
                   "QRELS RUN use rankcli trec_eval qrels.txt run.txt (or rankcli eval --qrels qrels.txt --run "
                   "run.txt)\n")
    status, _, err = run(capsys, "eval", "a", "b", "c")
    assert (status, err) == (ExitStatus.USAGE, "Error: unexpected extra arguments (b c): rankcli eval takes one run\n")
