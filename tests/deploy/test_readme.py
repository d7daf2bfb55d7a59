"""The README's commands are the truth: CI runs exactly its test command."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    marker = "Run the tests:\n\n```sh\n"
    command = readme.split(marker, 1)[1].split("\n```", 1)[0].strip()
    assert command in ci.splitlines()


def test_readme_install_offers_a_tool_install_and_the_clone_route() -> None:
    """A tool install (its own environment: a client's entry survives a moved or deleted
    clone), from PyPI or from this source, and the clone's `.venv` the tests use."""
    readme = (ROOT / "README.md").read_text()
    install = readme.split("**1. Install**", 1)[1].split("**2. Connect a client.**", 1)[0]
    tool, clone = [part.split("\n```", 1)[0] for part in install.split("```sh\n")[1:]]
    for command in (
        "pipx install filegate",
        "uv tool install filegate",
        "pipx install .",
        "uv tool install .",
    ):
        assert command in tool
    assert clone.endswith("pip install -q .") and "python3 -m venv .venv" in clone


def test_readme_first_screen_is_short_and_says_how_to_start() -> None:
    """What it is, install, connect, check, where next: before the reference, in ~80 lines."""
    readme = (ROOT / "README.md").read_text()
    first = readme.split("\n## What it is and is not", 1)[0]
    assert len(first.splitlines()) <= 80
    for step in (
        "**1. Install**",
        "**2. Connect a client.**",
        "**3. Check that it works**",
        "**Where next:**",
    ):
        assert step in first
    assert "filegate install claude-desktop" in first and "Run the tests:" in first


@pytest.mark.slow
def test_readme_check_gives_the_answer_it_shows(tmp_path: Path) -> None:
    """The "check that it works" commands run as written (their folder moved to tmp_path) and
    print what the README shows, start-up line included (stderr)."""
    import subprocess

    readme = (ROOT / "README.md").read_text()
    part = readme.split("**3. Check that it works**", 1)[1]
    command = part.split("```sh\n", 1)[1].split("\n```", 1)[0]
    answer = part.split("```text\n", 1)[1].split("\n```", 1)[0]
    folder = str(tmp_path / "fg-check")
    # As after step 1: this checkout's `filegate` first on PATH.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-c", command.replace("/tmp/fg-check", folder)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    shown = answer.replace("/tmp/fg-check", folder).splitlines()
    assert done.stderr.splitlines() == shown[:1]
    assert done.stdout.splitlines() == shown[1:]
