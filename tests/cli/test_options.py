"""rankcli.cli.options: the options several commands share are declared once and shown the same way everywhere."""

from __future__ import annotations

import re
from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from rankcli.cli import app
from rankcli.cli import options as opt

WIDE = {"COLUMNS": "400", "TERM": "dumb", "NO_COLOR": "1"}


def _help(command: str) -> str:
    result = CliRunner().invoke(app, [command, "--help"], env=WIDE)
    assert result.exit_code == 0, result.output
    return result.output


def _option_line(text: str, name: str) -> str:
    lines = [line for line in text.splitlines() if re.search(rf"(^|\s){re.escape(name)}\s", line)
             and line.lstrip("│ *").startswith(name)]
    assert len(lines) == 1, f"{name}: {lines}"
    return lines[0]


@pytest.mark.parametrize("command", ["eval", "compare", "train", "experiment"])
def test_convention_lists_its_presets_in_every_command(command):
    line = _option_line(_help(command), "--convention")
    assert re.search(r"<paper\|lightgbm\|sklearn(\|trec)?>", line), line
    assert "Metric convention preset" in line and "<str>" not in line


@pytest.mark.parametrize("command", ["eval", "compare", "experiment"])
def test_metric_has_its_short_name_in_every_command(command):
    assert re.search(r"--metric\s+-m\s", _option_line(_help(command), "--metric"))


@pytest.mark.parametrize("command", ["compare", "experiment"])
def test_correction_lists_its_choices_in_every_command(command):
    assert "<holm|bonferroni|bh|none>" in _option_line(_help(command), "--correction")


def test_no_command_counts_rounds():
    for command in ("train", "experiment"):
        assert "rounds" not in _option_line(_help(command), "--early-stopping")


def _mini_app() -> typer.Typer:
    mini = typer.Typer()

    @mini.command()
    def main(
        convention: Annotated[str, opt.convention(presets=opt.TRAINING_CONVENTIONS)] = "paper",
        threads: Annotated[int | None, opt.threads(default="every CPU")] = None,
        metric: Annotated[list[str] | None, opt.metric("Metrics", default="ndcg@10")] = None,
    ) -> None:
        typer.echo(f"{convention} {threads} {metric}")

    return mini


def test_a_plain_string_option_keeps_its_parsing_and_shows_its_choices():
    """The display comes from the metavar: the value still reaches the command as typed (the library checks it)."""
    mini = _mini_app()
    runner = CliRunner()
    result = runner.invoke(mini, ["--convention", "trec", "-m", "map", "-m", "mrr"])
    assert result.output == "trec None ['map', 'mrr']\n"
    text = runner.invoke(mini, ["--help"], env=WIDE).output
    assert "<paper|lightgbm|sklearn>" in _option_line(text, "--convention")
    assert "[default: paper]" in _option_line(text, "--convention")
    assert "LightGBM threads (default: every CPU)." in _option_line(text, "--threads")
    assert "Metrics (default: ndcg@10)." in _option_line(text, "--metric")
