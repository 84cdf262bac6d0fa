"""The README is part of the interface: its commands must be the ones CI runs, and it must cover every subcommand."""

import re

import typer

from rankcli.cli import app
from tests.conftest import REPO

README = (REPO / "README.md").read_text()


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
    group = typer.main.get_command(app)
    for name in group.commands:
        assert f"rankcli {name}" in README, f"rankcli {name} missing from README.md"


def test_pipeline_script_uses_only_existing_subcommands():
    script = (REPO / "examples" / "pipeline.sh").read_text()
    used = set(re.findall(r'"\$rankcli" ([a-z-]+)', script))
    group = typer.main.get_command(app)
    assert used and used <= set(group.commands)
