"""Grep without /proc (macOS; issue 15): rg starts in the pinned directory, not at its path.

A unit test of the spawn step (the race itself is tests/security/test_races.py): the directory
is opened, then its path is swapped for a symlink to the outside, then the command starts.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from filegate.fsio import platform
from filegate.tools.grep import params as grep_params
from filegate.tools.grep import rg as grep_rg

LIST = [sys.executable, "-c", "import os; print(sorted(os.listdir('.')))"]


@pytest.mark.parametrize("simulate", ["", "no-proc"])
def test_the_search_runs_in_the_directory_that_was_opened(
    ws: Path, outside: Path, monkeypatch: pytest.MonkeyPatch, simulate: str
) -> None:
    monkeypatch.setenv(platform.SIMULATE_ENV, simulate)
    (ws / "d").mkdir()
    (ws / "d" / "inside.txt").write_text("x")
    fd = os.open(ws / "d", os.O_RDONLY | os.O_DIRECTORY)
    try:
        (ws / "d").rename(ws / "d-old")
        (ws / "d").symlink_to(outside)  # swapped after the check and the open
        target = grep_params.Target("d", ws / "d", ".", False, fd, "d/")
        cmd, fds = grep_rg.from_pinned_directory(LIST, target)
        out = subprocess.run(cmd, pass_fds=fds, cwd=grep_rg.rg_cwd(target), capture_output=True, check=True)
        assert out.stdout.decode().strip() == "['inside.txt']"
    finally:
        os.close(fd)
