"""The README's commands are the truth: CI runs exactly its test command, and its first screen
works as written on a machine with Python 3.11+ and git alone."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tooling import INSTALL_TIMEOUT_S

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def first_screen() -> str:
    """From the top to "## What it is and is not": what a newcomer reads first."""
    return README.read_text().split("\n## What it is and is not", 1)[0]


def test_ci_runs_the_readme_test_command() -> None:
    marker = "Run the tests:\n\n```sh\n"
    command = README.read_text().split(marker, 1)[1].split("\n```", 1)[0].strip()
    assert command in (ROOT / ".ci" / "run").read_text().splitlines()


def test_the_first_screen_says_filegate_is_not_on_pypi_and_leads_with_a_route_that_works() -> None:
    """No `pipx install filegate` (there is no such package yet): a clone and a virtual
    environment of its own, which need nothing but Python and git; uv and pipx after it, with
    how to get pipx."""
    first = first_screen()
    assert "**not on PyPI yet**" in first
    install = first.split("**1. Install**", 1)[1].split("**2. Connect a client.**", 1)[0]
    commands = install.split("```sh\n", 1)[1].split("\n```", 1)[0].splitlines()
    assert commands[0].startswith("git clone ") and commands[1].startswith("python3 -m venv ")
    assert "pipx install filegate" not in README.read_text() and "uvx filegate" not in README.read_text()
    assert "uv tool install ." in install and "pipx install ." in install
    assert "python3 -m pip install --user pipx" in install


def test_the_first_screen_is_short_and_its_third_step_is_filegate_check() -> None:
    first = first_screen()
    assert len(first.splitlines()) <= 80
    steps = ["**1. Install**", "**2. Connect a client.**", "**3. Check that it works**", "**Where next:**"]
    assert [first.index(s) for s in steps] == sorted(first.index(s) for s in steps)
    check = first.split("**3. Check that it works**", 1)[1]
    assert check.split("```sh\n", 1)[1].split("\n```", 1)[0].endswith("/filegate check")
    assert "filegate install claude-desktop" in first and "Run the tests:" in first


def test_the_readme_is_short_and_cites_no_spec_or_issue() -> None:
    """At most 400 lines; the details live in docs/, each linked; no SPEC section or issue number
    (documents a reader does not have)."""
    text = README.read_text()
    assert len(text.splitlines()) <= 400
    assert not re.search(r"§|\bSPEC\b|\bissues? #?\d", text)
    for doc in re.findall(r"\]\((docs/[A-Z-]+\.md)", text):
        assert (ROOT / doc).is_file(), doc
    for heading in ("## The tools", "## Clients", "## Safety", "## Undo", "## Documentation"):
        assert f"\n{heading}\n" in text


def shown_lines(block: str) -> list[re.Pattern[str]]:
    """The README's shown output, line by line, "…" standing for what differs each run."""
    return [
        re.compile(".*".join(re.escape(part) for part in line.split("…")) + "$")
        for line in block.splitlines()
    ]


@pytest.mark.slow
@pytest.mark.timeout(INSTALL_TIMEOUT_S)  # pip installs filegate and its dependencies
def test_the_first_screen_runs_as_written_in_a_fresh_clone(tmp_path: Path) -> None:
    """Steps 1-3 as one script: in a fresh clone of this repository (in place of the GitHub URL),
    with a scratch HOME, and nothing on PATH but Python 3.11+, git and the system's tools. The
    project folder the README names is made first (it is the user's own). Then the output is
    the README's, and Claude Desktop's file names the installed filegate."""
    first = first_screen()
    steps = first.split("**1. Install**", 1)[1].split("**Where next:**", 1)[0]
    script = [block.strip() for block in re.findall(r"```sh\n(.*?)\n```", steps, flags=re.S)]
    assert len(script) == 3, script
    shown = steps.split("```text\n", 1)[1].split("\n```", 1)[0]
    source = tmp_path / "upstream" / "filegate"  # cloned as `filegate`, as from GitHub
    subprocess.run(["git", "clone", "-q", str(ROOT), str(source)], check=True, timeout=120)
    script[0] = script[0].replace("https://github.com/filegate/filegate", str(source))
    work = tmp_path / "work"
    work.mkdir()
    home = tmp_path / "home"
    (home / "src" / "myproject").mkdir(parents=True)
    tools = tmp_path / "bin"
    tools.mkdir()
    python = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    (tools / "python3").symlink_to(python)
    (tools / "git").symlink_to(shutil.which("git") or "git")
    env = {k: v for k, v in os.environ.items() if k.startswith("PIP_") or k in ("LANG", "TMPDIR")}
    env |= {"HOME": str(home), "PATH": f"{tools}:/usr/bin:/bin"}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", "\n".join(script)], cwd=work, env=env,
                          capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    printed = done.stdout.splitlines()
    # What the install step printed comes first; the check's output is the README's, at the end.
    patterns = shown_lines(shown)
    tail = printed[-len(patterns) :]
    for pattern, line in zip(patterns, tail, strict=True):
        assert pattern.match(line), f"{line!r} is not as the README shows: {pattern.pattern}"
    config = json.loads((home / ".config" / "Claude" / "claude_desktop_config.json").read_text())
    entry = config["mcpServers"]["filegate"]
    assert entry["command"] == str(home / ".local" / "share" / "filegate" / "bin" / "filegate")
    assert entry["args"] == ["--workdir", str(home / "src" / "myproject")]
