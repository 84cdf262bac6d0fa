"""No file of a user's is replaced: every output option of every command, aimed with ``--overwrite`` at a user's file
of another kind, a dataset, one of the command's own inputs and a directory of the user's, is refused (exit 4; exit 2
for the input, a usage error as docs/reliability.md says) and leaves the target as it was.

The output options are derived from the typer app: every string option or argument of every command is either an
output listed in :data:`OUTPUTS` (with a command line that writes it) or a value listed in :data:`NOT_OUTPUTS`, so a
new option that writes a file cannot escape this test. The refusals come before any work: every case runs in process
(CliRunner's in-process ``main``) and costs milliseconds.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import typer

from rankcli.cli import COMMANDS, app, main
from rankcli.errors import ExitStatus
from tests.conftest import SAMPLE
from tests.conftest import run_main as run

LETOR = SAMPLE / "letor"

#: Every output option: (command, parameter name) -> (the file extension it takes, the command lines writing it to
#: ``{out}``, each with the input it reads that the output is aimed at); the inputs are made once (:func:`inputs`),
#: ``{fresh}`` is a path nothing is at (a command's other output).
OUTPUTS = {
    ("convert", "output"): (".parquet", [(["convert", "{letor}", "-o", "{out}"], "{letor}")]),
    ("export", "output"): (".txt", [(["export", "{data}", "-o", "{out}"], "{data}"),
                                    (["export", "{data}", "-o", "{out}", "--format", "trec-qrels"], "{data}")]),
    ("split", "output"): ("", [(["split", "{data}", "-o", "{out}", "--folds", "3"], "{data}")]),
    ("train", "output"): ("", [(["train", "{data}", "-o", "{out}", "--trees", "1", "--threads", "1"], "{data}")]),
    ("train", "plot"): (".png", [(["train", "{data}", "--valid", "{valid}", "-o", "{fresh}", "--plot", "{out}",
                                   "--trees", "1", "--threads", "1"], "{valid}")]),
    ("compare", "plot"): (".png", [(["compare", "{run}", "{run2}", "--plot", "{out}"], "{run2}")]),
    ("predict", "output"): (".parquet", [(["predict", "{model}", "{data}", "-o", "{out}"], "{data}"),
                                         (["predict", "{model}", "{data}", "-o", "{out}", "--format", "trec"],
                                          "{model}/model.txt")]),
    ("eval", "per_query"): (".parquet", [(["eval", "{run}", "--per-query", "{out}"], "{run}")]),
    ("simulate-clicks", "output"): (".parquet", [(["simulate-clicks", "{data}", "-o", "{out}"], "{data}")]),
    ("propensity", "output"): (".json", [(["propensity", "{clicks}", "-o", "{out}", "--bootstrap", "5"],
                                          "{clicks}")]),
    ("propensity", "plot"): (".png", [(["propensity", "{clicks}", "--plot", "{out}", "--bootstrap", "5"],
                                       "{clicks}")]),
    ("experiment", "output"): ("", [(["experiment", "{data}", "-o", "{out}", "--trials", "1", "--trees", "1"],
                                     "{data}")]),
    ("explain", "output"): (".csv", [(["explain", "{model}", "{data}", "-o", "{out}"], "{data}"),
                                     (["explain", "{model}", "-o", "{out}"], "{model}/rankcli.json")]),
    ("explain", "per_query"): (".csv", [(["explain", "{model}", "{data}", "--per-query", "{out}"], "{data}")]),
    ("explain", "plot"): (".png", [(["explain", "{model}", "{data}", "--plot", "{out}"], "{model}/model.txt")]),
    ("tune", "output"): ("", [(["tune", "{data}", "--valid", "{valid}", "-o", "{out}", "--loss", "xendcg",
                                "--budget", "1", "--trees", "1"], "{valid}")]),
    ("export-model", "output"): ("", [(["export-model", "{model}", "--target", "ranklib", "-o", "{out}"],
                                       "{model}/model.txt")]),
    ("fuse", "output"): (".txt", [(["fuse", "{run}", "{run2}", "-o", "{out}", "--format", "trec"], "{run2}")]),
    ("click-model fit", "output"): ("", [(["click-model", "fit", "{clicks}", "-o", "{out}", "--model", "pbm",
                                           "--iterations", "1"], "{clicks}")]),
}
#: The string parameters that are not outputs: values (metrics, losses, ...), or inputs given as strings. Options that
#: show a choice (``<a|b>``) or take ``KEY=VALUE`` are values without being listed; path-typed ones are read.
NOT_OUTPUTS = {
    "convert": {"inputs", "dask"},
    "split": {"split", "group_by"},
    "train": {"select_by", "dask", "propensity"},
    "predict": {"tag"},
    "eval": {"metric"},
    "simulate-clicks": {"click_probs", "ranker", "randomize"},
    "compare": {"name", "metric", "baseline"},
    "experiment": {"losses", "split", "metric", "select_by", "augment_negatives", "label_noise", "click_noise",
                   "position_bias", "dask", "fuse"},
    "explain": {"metric", "contributions_queries"},
    "tune": {"loss", "select_by", "dask"},
    "export-model": {"target", "name"},
    "fuse": {"runs", "method", "normalize", "weights", "tag", "metric"},
    "click-model fit": {"dask", "prior"},
    "click-model compare": {"models", "name", "baseline", "prior"},
}
#: Commands that parse their own command line (no typer parameters): their outputs are standard output only.
OWN_PARSER = {"trec_eval"}


def _string_parameters() -> dict[str, list]:
    command = typer.main.get_command(app)
    out = {}
    for name, cmd in command.commands.items():
        if cmd.hidden:
            continue
        out[name] = [p for p in cmd.params if type(p.type).__name__ == "StringParamType"]
        for sub, subcmd in getattr(cmd, "commands", {}).items():  # a command group: each subcommand's options too
            out[f"{name} {sub}"] = [p for p in subcmd.params if type(p.type).__name__ == "StringParamType"]
    return out


def test_every_string_parameter_is_an_output_here_or_a_value():
    found = _string_parameters()
    assert {n for n in found if " " not in n} == {n for n in COMMANDS if n != "trec-eval"}
    unclassified = []
    for name, params in found.items():
        for p in params:
            metavar = p.metavar or ""
            if (name, p.name) in OUTPUTS or p.name in NOT_OUTPUTS.get(name, ()):
                continue
            if metavar.startswith("<") or "=" in metavar:
                continue
            unclassified.append(f"{name} {'/'.join(p.opts)}")
    assert not unclassified, f"classify these parameters in OUTPUTS or NOT_OUTPUTS: {unclassified}"
    for name, param in OUTPUTS:
        assert param in {p.name for p in found[name]}, (name, param)
    for name in OWN_PARSER:
        assert found[name] == []


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("inputs")
    made = {"letor": d / "test.txt", "data": d / "data.parquet", "valid": d / "valid.parquet", "model": d / "model",
            "run": d / "run.parquet", "run2": d / "run2.parquet", "clicks": d / "clicks.parquet",
            "fresh": d / "nothing-here"}
    made["letor"].write_bytes((LETOR / "test.txt").read_bytes())
    for args in (["convert", made["letor"], "-o", made["data"]],
                 ["convert", LETOR / "vali.txt", "-o", made["valid"]],
                 ["train", made["data"], "-o", made["model"], "--trees", "2", "--threads", "1"],
                 ["predict", made["model"], made["data"], "-o", made["run"]],
                 ["predict", made["model"], made["valid"], "-o", made["run2"]],
                 ["simulate-clicks", made["data"], "-o", made["clicks"], "--model", "pbm", "--ranker", "random",
                  "--keep-no-click", "--seed", "1"]):
        assert main([str(a) for a in args]) == 0, args
    return made


def _user_file(path: Path, ext: str) -> None:
    """A file of the user's, in the format the extension says, that rankcli did not write."""
    if ext == ".parquet":
        pq.write_table(pa.table({"name": ["ann", "bob"], "age": [3, 4]}), path)
    elif ext == ".png":
        path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR my holiday photo")
    elif ext == ".csv":
        path.write_text("name,age\nann,3\n")
    elif ext == ".json":
        path.write_text('{"my": "settings"}\n')
    else:
        path.write_text("my notes\n")


def _snapshot(root: Path) -> dict:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


TARGETS = ("user's file", "dataset", "input", "user's directory")


def _target(place: Path, target: str, ext: str, inputs: dict, read: str) -> Path:
    if target == "input":
        return Path(read.format(**inputs))
    if target == "dataset":
        out = place / "train.parquet"
        out.write_bytes(inputs["data"].read_bytes())
    elif target == "user's file":
        out = place / f"mine{ext or '.txt'}"
        _user_file(out, ext)
    else:
        out = place / f"mine{ext}"
        out.mkdir()
        (out / "thesis.tex").write_text("years of work")
    return out


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("output", list(OUTPUTS), ids=[f"{c}-{p}" for c, p in OUTPUTS])
def test_overwrite_never_replaces_what_rankcli_did_not_write(capsys, tmp_path, inputs, output, target):
    ext, lines = OUTPUTS[output]
    if output == ("convert", "output") and target == "dataset":
        pytest.skip("a dataset is convert's own kind: --overwrite replaces it (tests/cli/test_outputs.py)")
    for i, (line, read) in enumerate(lines):
        place = tmp_path / f"place{i}"
        place.mkdir()
        out = _target(place, target, ext, inputs, read)
        watched = inputs["data"].parent if target == "input" else place
        before = _snapshot(watched)
        args = [a.format(out=out, **inputs) for a in line] + ["--overwrite"]
        start = time.perf_counter()
        status, _, err = run(capsys, *args)
        seconds = time.perf_counter() - start
        want = ExitStatus.USAGE if target == "input" else ExitStatus.OUTPUT
        assert status == want, (args, err)
        assert str(out) in err and ("input" in err if target == "input" else True), err
        assert _snapshot(watched) == before, args
        assert seconds < 2.0, (args, seconds)  # refused before any work (generous: a loaded machine)


def test_explain_overwrite_replaces_its_own_outputs_only(capsys, tmp_path, inputs):
    """Each of explain's outputs, written once, is replaced by --overwrite; aimed at one another (a per-query table
    where the table goes, a plot where a table goes, ...) they are refused."""
    from rankcli.formats.atomic import kinds

    model, data = inputs["model"], inputs["data"]
    want = {"table.csv": kinds.EXPLAIN, "table.parquet": kinds.EXPLAIN, "pq.csv": kinds.EXPLAIN_PER_QUERY,
            "pq.parquet": kinds.EXPLAIN_PER_QUERY, "plot.png": kinds.PLOT}

    def explain(table: str, per_query: str, plot: str, *extra) -> tuple[int, str, str]:
        return run(capsys, "explain", model, data, "-o", tmp_path / table, "--per-query", tmp_path / per_query,
                   "--plot", tmp_path / plot, "--repeats", "1", "--no-contributions", *extra)

    assert explain("table.csv", "pq.csv", "plot.png")[0] == 0
    status, _, err = explain("table.csv", "pq.csv", "plot.png")
    assert status == ExitStatus.OUTPUT and "already exists" in err
    assert explain("table.csv", "pq.csv", "plot.png", "--overwrite")[0] == 0
    assert explain("table.parquet", "pq.parquet", "plot.png", "--overwrite")[0] == 0
    assert {name: kinds.file_kind(tmp_path / name) for name in want} == want
    before = _snapshot(tmp_path)
    for table, per_query, plot in (("pq.csv", "pq2.csv", "p.png"), ("table.parquet", "table.csv", "p.png"),
                                   ("t.csv", "pq.csv", "table.csv"), ("t.csv", "pq.csv", "pq.parquet")):
        status, _, err = explain(table, per_query, plot, "--overwrite")
        assert status == ExitStatus.OUTPUT and "--overwrite replaces only an output of the same kind" in err, err
        assert _snapshot(tmp_path) == before


def test_a_per_query_csv_of_features_is_not_taken_for_explain_s(tmp_path):
    """A user's CSV whose second column is a feature (``f1`` is also the name of a measure) or a label is theirs."""
    from rankcli.formats.atomic import kinds

    for header in ('"qid","f1","f2"', '"qid","label","f1"', '"qid","score"', "qid,ndcg@10,f1"):
        (tmp_path / "t.csv").write_text(header + "\n1,0.5,0.25\n")
        assert kinds.file_kind(tmp_path / "t.csv") is None, header
    (tmp_path / "t.csv").write_text('"qid","ndcg@10","bm25"\n1,0.5,0.25\n')
    assert kinds.file_kind(tmp_path / "t.csv") == kinds.EXPLAIN_PER_QUERY


def test_the_measure_names_a_per_query_column_may_take_are_the_registry_s():
    from rankcli.core.metrics.definitions import BY_NAME
    from rankcli.formats.atomic.kinds import METRIC_NAMES

    assert METRIC_NAMES == {name for name, record in BY_NAME.items() if record.family != "info"}


def _tune_dir(out: Path, loss: str = "xendcg") -> None:
    from rankcli.formats.tune_store import MARKER_FILE, STUDY_FILE, TUNE_FORMAT

    out.mkdir()
    (out / MARKER_FILE).write_text(json.dumps({"format": TUNE_FORMAT, "losses": [loss]}))
    (out / loss).mkdir()
    (out / loss / STUDY_FILE).write_text(json.dumps({"format": TUNE_FORMAT, "identity": {}}))
    (out / loss / "study.journal").write_text("")
    (out / "best.json").write_text("{}")


def test_tune_overwrite_keeps_a_user_s_file_in_a_study_directory(capsys, tmp_path, inputs):
    """``tune --overwrite`` removed ``DIR/<loss>/`` whole (shutil.rmtree), a user's file in it too: now nothing is
    removed and the refusal names the file."""
    out = tmp_path / "tuned"
    _tune_dir(out)
    (out / "xendcg" / "my-notes.md").write_text("what I tried")
    before = _snapshot(out)
    status, _, err = run(capsys, "tune", inputs["data"], "--valid", inputs["valid"], "-o", out, "--loss", "xendcg",
                         "--budget", "1", "--trees", "1", "--overwrite")
    assert status == ExitStatus.OUTPUT, err
    assert "rankcli did not write" in err and "xendcg/my-notes.md" in err
    (out / ".tune.lock").unlink()  # the lock every run takes on the directory, rankcli's own
    assert _snapshot(out) == before


def test_tune_s_study_files_are_the_ones_overwrite_removes():
    from rankcli.formats.tune_store import LOSS_FILES
    from rankcli.tune.journal import JOURNAL_FILE
    from rankcli.tune.study import CLAIM_LOCK

    assert {JOURNAL_FILE, JOURNAL_FILE + ".lock", CLAIM_LOCK} <= set(LOSS_FILES)


def test_experiment_overwrite_removes_the_experiment_s_files_only(tmp_path):
    """``experiment --overwrite`` removed every hidden entry (a ``.git`` too) and its directories whole: now it
    removes the experiment's own files, leaves what it does not know at the top, and refuses (removing nothing) when
    one of its directories holds a file of the user's."""
    from rankcli.errors import OutputError
    from rankcli.formats import experiment_store as store

    identity = {"config": {"a": 1}, "data_fingerprint": "x"}
    exp = tmp_path / "exp"
    assert store.prepare_directory(exp, identity, {}, overwrite=False) is False
    for rel in ("trials.parquet", "summary.md", "sweep-label-noise.csv", "curves/b__00000__xendcg.parquet",
                ".locks/b__00000__xendcg.lock", ".trials.lock", ".git/HEAD", "NOTES.md"):
        (exp / rel).parent.mkdir(parents=True, exist_ok=True)
        (exp / rel).write_text("x")
    (exp / "curves" / "my-plot.txt").write_text("mine")
    before = _snapshot(exp)
    with pytest.raises(OutputError, match=r"rankcli did not write .*\(curves/my-plot.txt\)"):
        store.prepare_directory(exp, {**identity, "config": {"a": 2}}, {}, overwrite=True)
    assert _snapshot(exp) == before
    (exp / "curves" / "my-plot.txt").unlink()
    assert store.prepare_directory(exp, {**identity, "config": {"a": 2}}, {}, overwrite=True) is False
    assert sorted(p.name for p in exp.iterdir()) == [".git", "NOTES.md", "config.json"]
    assert (exp / ".git" / "HEAD").read_text() == "x"
