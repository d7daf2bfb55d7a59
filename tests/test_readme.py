"""The README's commands are the truth: CI runs exactly its test command."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    marker = "Run the tests:\n\n```sh\n"
    command = readme.split(marker, 1)[1].split("\n```", 1)[0].strip()
    assert command in ci.splitlines()


def test_readme_install_command_installs_from_pyproject() -> None:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Two commands", 1)[1].split("```sh\n", 1)[1].split("\n```", 1)[0]
    assert "pip install -q ." in block and "filegate" in block
