"""The README and docs/ are part of the interface.

- The README starts with the two commands, and its test command is the one CI runs.
- Every subcommand appears in the README; docs/commands/<command>.md documents exactly the options that
  ``rankcli <command> --help`` shows (read from the typer app, not from the help text).
- Every ``rankcli <command> ...`` written anywhere in the docs uses options that command has.
- Every shell example (```bash, ```sh, ```console blocks) of README.md and docs/**/*.md runs: the blocks of one file
  run in order in one bash process, in a fresh temporary directory holding ``sample_data/`` and ``examples/``, with
  ``rankcli`` on PATH, then its ```python blocks as one program; a non-zero exit fails the test. Where the docs use
  data too large to ship (an MSLR-WEB download), the test builds a small stand-in under the same name
  (:data:`STAND_INS`). A block runs unless it needs what a test cannot have: ``# doc-test: needs <program>`` (an
  external program, skipped when absent) or ``# doc-test: skip <reason>`` naming a cluster. The README's first block,
  the install commands, is what ``.ci/run`` runs.
- User docs speak of the product only: no issue numbers, no history.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
import typer

from rankcli.cli import app
from tests.conftest import REPO

README_PATH = REPO / "README.md"
README = README_PATH.read_text()
DOCS = sorted((REPO / "docs").rglob("*.md"))
COMMAND_DOCS = REPO / "docs" / "commands"
SHELL_LANGUAGES = {"bash", "sh", "console"}
GLOBAL_OPTIONS = {"--help", "-h", "--debug", "--version"}
OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
LONG_OPTION = re.compile(r"(?<![\w-])(--[A-Za-z][\w-]*)")


@cache
def _commands() -> dict:
    return dict(typer.main.get_command(app).commands)


def _help_options(name: str) -> set[str]:
    """The options ``rankcli <name> --help`` shows: every visible option's spellings, without -h/--help; for a
    command with subcommands (``click-model fit``, ...), those of every subcommand."""
    options = set()
    command = _commands()[name]
    for cmd in [command, *getattr(command, "commands", {}).values()]:
        for param in cmd.params:
            if param.param_type_name == "option" and not getattr(param, "hidden", False):
                options.update(param.opts, param.secondary_opts)
    return options - GLOBAL_OPTIONS


def _top_commands() -> list[str]:
    block = re.search(r"```bash\n(.*?)```", README, re.S).group(1)
    return [line for line in block.splitlines() if line and not line.startswith("#")]


def test_readme_starts_with_the_two_commands():
    assert README.index("```bash") < 200
    main_job, tests = _top_commands()
    assert "pip install" in main_job and "examples/pipeline.sh" in main_job
    assert "pip install" in tests and "pytest" in tests


def test_ci_runs_exactly_the_readme_test_command():
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert _top_commands()[1] in ci


def test_every_subcommand_is_documented_in_the_readme():
    for name in _commands():
        assert f"rankcli {name}" in README, f"rankcli {name} missing from README.md"
        assert f"docs/commands/{name}.md" in README, f"README.md does not link docs/commands/{name}.md"


def test_pipeline_script_uses_only_existing_subcommands():
    script = (REPO / "examples" / "pipeline.sh").read_text()
    used = set(re.findall(r'"\$rankcli" ([a-z-]+)', script))
    assert used and used <= set(_commands())


def test_readme_is_short():
    assert len(README.splitlines()) <= 210


def _anchor(title: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("path", [README_PATH, *DOCS], ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_lead_somewhere(path):
    """Every relative link of the README and docs/ names an existing file, and an anchor one of its headings."""
    text = re.sub(r"^```[^\n]*\n.*?^```", "", path.read_text(), flags=re.S | re.M)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists():
            broken.append(target)
        elif anchor and linked.is_file():
            headings = re.findall(r"^#+ (.*)$", re.sub(r"^```[^\n]*\n.*?^```", "", linked.read_text(),
                                                        flags=re.S | re.M), re.M)
            if anchor not in {_anchor(h) for h in headings}:
                broken.append(target)
    assert not broken, f"{path.relative_to(REPO)}: broken links {broken}"


# -- the command reference against --help --------------------------------------------------------------------------

def _section(text: str, title: str) -> str:
    match = re.search(rf"^## {title}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, f"no '## {title}' section"
    return match.group(1)


@pytest.mark.parametrize("name", sorted(_commands()))
def test_command_reference_documents_exactly_the_help_options(name):
    path = COMMAND_DOCS / f"{name}.md"
    assert path.is_file(), f"{path.relative_to(REPO)} missing"
    rows = [line for line in _section(path.read_text(), "Options").splitlines() if line.startswith("|")]
    documented = {opt for row in rows for opt in OPTION.findall(row.split("|")[1])}
    shown = _help_options(name)
    assert not shown - documented, f"{path.name}: options in --help but not documented: {sorted(shown - documented)}"
    assert not documented - shown, f"{path.name}: documented options --help lacks: {sorted(documented - shown)}"


def _code_spans(text: str) -> list[str]:
    """Inline code spans and the logical lines of fenced code blocks (continuations joined)."""
    spans = []
    for match in re.finditer(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M):
        spans += match.group(1).replace("\\\n", " ").splitlines()
    without_blocks = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.S | re.M)
    return spans + [span.replace("\n", " ") for span in re.findall(r"`([^`]+)`", without_blocks)]


def _invocations(text: str):
    """(command, the rest of its line) for every ``rankcli <command>`` written in code."""
    for span in _code_spans(text):
        for match in re.finditer(r"(?:^|[\s$(])rankcli ([a-z][a-z-]*)(.*?)(?=[|;&)]|\brankcli |$)", span):
            if match.group(1) in _commands():
                yield match.group(1), re.sub(r"#.*", "", match.group(2))


@pytest.mark.parametrize("path", [README_PATH, *DOCS], ids=lambda p: str(p.relative_to(REPO)))
def test_every_option_written_after_a_command_exists(path):
    wrong = [(name, opt) for name, rest in _invocations(path.read_text())
             for opt in LONG_OPTION.findall(rest) if opt not in _help_options(name) | GLOBAL_OPTIONS]
    assert not wrong, f"{path.relative_to(REPO)}: options a command does not have: {wrong}"


@pytest.mark.parametrize("name", sorted(_commands()))
def test_command_reference_names_only_its_own_options(name):
    """In docs/commands/<name>.md a bare --option is one of <name>'s; another command's is written after its name."""
    text = (COMMAND_DOCS / f"{name}.md").read_text()
    foreign = set()
    for span in _code_spans(text):
        if re.match(rf"(?:rankcli )?(?!{re.escape(name)}\b)({'|'.join(map(re.escape, _commands()))})\b", span):
            foreign.add(span)
    text = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.S | re.M)
    text = re.sub(r"\]\([^)]*\)", "]", text.replace("\n", " "))  # link targets are not options
    for span in foreign:
        text = text.replace(f"`{span}`", "")
    unknown = sorted(set(LONG_OPTION.findall(text)) - _help_options(name) - GLOBAL_OPTIONS)
    assert not unknown, f"docs/commands/{name}.md names options rankcli {name} does not have: {unknown}"


# -- every shell example runs ---------------------------------------------------------------------------------------

def _blocks(path: Path, languages: set[str]) -> list[tuple[int, str]]:
    """(line number of the first line, text) of each fenced block in one of ``languages``; console blocks keep only
    their commands."""
    blocks, lines = [], path.read_text().splitlines()
    i = 0
    while i < len(lines):
        fence = re.match(r"^```(\w+)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        body = lines[i + 1:end]
        if fence.group(1) in languages:
            if fence.group(1) == "console":
                body = _console_commands(body)
            blocks.append((i + 2, "\n".join(body)))
        i = end + 1
    return blocks


def _shell_blocks(path: Path) -> list[tuple[int, str]]:
    return _blocks(path, SHELL_LANGUAGES)


def _console_commands(body: list[str]) -> list[str]:
    """The commands of a console transcript (``$ `` lines and their continuations); output lines become blank."""
    out, continued = [], False
    for line in body:
        if line.startswith("$ ") or continued:
            out.append(line[2:] if line.startswith("$ ") and not continued else line)
            continued = line.endswith("\\")
        else:
            out.append("")
    return out


def _runnable(block: str) -> str | None:
    """The reason a block does not run here, or None."""
    for marker in re.findall(r"^\s*# doc-test: (.*)$", block, re.M):
        kind, _, what = marker.partition(" ")
        assert kind in ("skip", "needs") and what.strip(), f"'# doc-test: {marker}': skip <reason> | needs <program>"
        assert kind == "needs" or "cluster" in what, f"'# doc-test: {marker}': a block is skipped only when it needs " \
            "a cluster (or, with 'needs <program>', an external program); give it a stand-in instead (STAND_INS)"
        if kind == "skip":
            return what
        if shutil.which(what.strip()) is None:
            return f"{what.strip()} not installed"
    return None


def _script(path: Path) -> tuple[str, list[tuple[int, int]], list[str]]:
    """One bash script of the file's runnable blocks, the (script line, doc line) of each block's start, and notes.

    The shell blocks run first, in order; then the file's Python blocks, in order, as one program (they share their
    names, as a reader following the page would)."""
    parts = ["set -eo pipefail", "trap 'echo \"doc-test: failed at script line $LINENO\" >&2' ERR"]
    starts, notes, python = [], [], []
    for i, (doc_line, block) in enumerate(_shell_blocks(path)):
        reason = _runnable(block)
        if path == README_PATH and i == 0:
            reason = "the two install commands: .ci/run runs them in a fresh virtual environment"
        if reason:
            notes.append(f"{path.name}:{doc_line}: skipped ({reason})")
            continue
        starts.append((sum(part.count("\n") + 1 for part in parts) + 1, doc_line))
        parts.append(block)
    for doc_line, block in _blocks(path, {"python"}):
        reason = _runnable(block)
        if reason:
            notes.append(f"{path.name}:{doc_line}: skipped ({reason})")
        else:
            python.append(f"# {path.name}:{doc_line}\n{block}")
    if python:
        starts.append((sum(part.count("\n") + 1 for part in parts) + 1, 0))
        parts.append("python - <<'DOC_TEST_PYTHON'\n" + "\n".join(python) + "\nDOC_TEST_PYTHON")
    return "\n".join(parts) + "\n", starts, notes


def _doc_line(starts: list[tuple[int, int]], script_line: int) -> int:
    start, doc = max((s for s in starts if s[0] <= script_line), default=(1, 0))
    return doc + script_line - start if doc else 0


FILES_WITH_EXAMPLES = [p for p in [README_PATH, *DOCS] if _blocks(p, SHELL_LANGUAGES | {"python"})]


def _mslr_tree(root: Path) -> None:
    """A stand-in for an MSLR-WEB10K/30K download: ``Fold1..5/{train,vali,test}.txt`` as the download lays them out
    (136 features, ``qid:``, graded labels 0..4), two queries of 24 documents per file: the least LightGBM trains on
    with its default ``min_data_in_leaf`` of 20."""
    import numpy as np

    rng = np.random.default_rng(10_000)
    qid = 0
    for fold in range(1, 6):
        (root / f"Fold{fold}").mkdir(parents=True)
        for part in ("train", "vali", "test"):
            lines = []
            for _ in range(2):
                qid += 1
                for label in rng.permutation(np.arange(24) % 5):
                    features = " ".join(f"{j}:{v:.3f}" for j, v in enumerate(rng.random(136), 1))
                    lines.append(f"{label} qid:{qid} {features}")
            (root / f"Fold{fold}" / f"{part}.txt").write_text("\n".join(lines) + "\n")


#: Data the docs use that is too large to ship, by the name the docs give it: built in the examples' directory when a
#: file's examples mention the name.
STAND_INS = {"MSLR-WEB10K": _mslr_tree, "MSLR-WEB30K": _mslr_tree}


def _run_examples(path: Path, directory: Path) -> tuple[int, str, list[tuple[int, int]], list[str]]:
    """Run the file's examples in ``directory``: (exit status, stderr, block starts, notes)."""
    script, starts, notes = _script(path)
    if not starts:
        return 0, "", starts, notes
    for name in ("sample_data", "examples"):
        (directory / name).symlink_to(REPO / name)
    for name, build in STAND_INS.items():
        if re.search(rf"(?<![\w/-]){re.escape(name)}\b", script):
            build(directory / name)
    # One LightGBM thread: the examples are tiny, and idle OpenMP threads spinning would only burn CPU.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "MPLBACKEND": "Agg", "COLUMNS": "120", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(["bash", "-c", script], cwd=directory, env=env, capture_output=True, text=True, timeout=600)
    return done.returncode, done.stderr, starts, notes


@pytest.mark.parametrize("path", FILES_WITH_EXAMPLES, ids=lambda p: str(p.relative_to(REPO)))
def test_shell_examples_run(path, tmp_path):
    """One file's examples in a fresh directory: each file is its own test, so that the suite's processes (-n 2)
    share the files out rather than one process running every file's examples."""
    status, stderr, starts, notes = _run_examples(path, tmp_path)
    if not starts:
        pytest.skip("; ".join(notes))
    if status != 0:
        failed = re.findall(r"doc-test: failed at script line (\d+)", stderr)
        line = _doc_line(starts, int(failed[-1])) if failed else 0
        where = f"{path.relative_to(REPO)}" + (f":{line}" if line > 0 else " (its Python blocks, or where unknown)")
        pytest.fail(f"{where}: an example exited with status {status}\n{stderr[-3000:]}")


def test_only_a_cluster_or_an_external_program_keeps_a_block_from_running():
    """Every shell block runs, on a stand-in where the real data is large; the markers that stop one are checked as
    the blocks are read (:func:`_runnable`), here for every file whether its examples are selected or not."""
    for path in [README_PATH, *DOCS]:
        for _, block in _shell_blocks(path):
            _runnable(block)


def test_the_stand_in_is_laid_out_as_the_download():
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "MSLR-WEB10K"
        _mslr_tree(root)
        files = sorted(str(p.relative_to(root)) for p in root.rglob("*.txt"))
        assert files == [f"Fold{k}/{part}.txt" for k in range(1, 6) for part in ("test", "train", "vali")]
        first = (root / "Fold1" / "train.txt").read_text().splitlines()
        assert len(first) == 48 and first[0].split()[1] == "qid:1" and first[0].split()[-1].startswith("136:")


#: Words of a changelog, not of a manual.
HISTORY = re.compile(r"\bissues? #?\d+|\bthe issue\b|\bbefore (?:issue|this change|the fix)\b|\bthe new default\b"
                     r"|\bno longer\b|\bused to\b", re.I)


@pytest.mark.parametrize("path", [README_PATH, *DOCS], ids=lambda p: str(p.relative_to(REPO)))
def test_user_docs_speak_of_the_product_only(path):
    found = [(n, m.group(0)) for n, line in enumerate(path.read_text().splitlines(), 1) for m in HISTORY.finditer(line)]
    assert not found, f"{path.relative_to(REPO)}: history, not the product: {found}"
