"""The README's commands are the truth: CI runs exactly its test command."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    marker = "Run the tests:\n\n```sh\n"
    command = readme.split(marker, 1)[1].split("\n```", 1)[0].strip()
    assert command in ci.splitlines()


def test_readme_install_command_installs_from_pyproject() -> None:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("**1. Install**", 1)[1].split("```sh\n", 1)[1].split("\n```", 1)[0]
    assert block.endswith("pip install -q .") and "python3 -m venv .venv" in block


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


def test_readme_check_gives_the_answer_it_shows(tmp_path: Path) -> None:
    """The "check that it works" commands run as written (their folder moved to tmp_path) and
    print what the README shows, start-up line included (stderr)."""
    import subprocess

    readme = (ROOT / "README.md").read_text()
    part = readme.split("**3. Check that it works**", 1)[1]
    command = part.split("```sh\n", 1)[1].split("\n```", 1)[0]
    answer = part.split("```text\n", 1)[1].split("\n```", 1)[0]
    folder = str(tmp_path / "fg-check")
    done = subprocess.run(["bash", "-c", command.replace("/tmp/fg-check", folder)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    shown = answer.replace("/tmp/fg-check", folder).splitlines()
    assert done.stderr.splitlines() == shown[:1]
    assert done.stdout.splitlines() == shown[1:]
