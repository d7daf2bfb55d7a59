"""What a system without /proc or directory descriptors shows (issue 29): `/dev/stdin` is a
stream there too ("is not a file", never "does not exist"), and a FIFO in a searched tree is
skipped by Grep and Glob, never waited on nor a failure. Run as part of tests/tools, also under
FILEGATE_SIMULATE (.ci/run), where Grep's walk goes by path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import call, connect, text

# /dev/stdin is /proc/self/fd/0; where /proc is not mounted that path does not exist. A
# descriptor this process has not open stands for it on a machine that has /proc.
MISSING_DESCRIPTOR = "/proc/self/fd/424242"


@pytest.mark.parametrize("tool,arg", [("ReadFile", "path"), ("Grep", "path")])
async def test_a_descriptor_path_that_does_not_resolve_is_not_a_file(
    ws: Path, mode: str, tool: str, arg: str
) -> None:
    extra = {"pattern": "x"} if tool == "Grep" else {}
    async with connect(ws, mode) as c:
        r = await call(c, tool, **{arg: MISSING_DESCRIPTOR}, **extra)
    assert r.is_error and text(r) == f"`{MISSING_DESCRIPTOR}` is not a file."


async def test_a_fifo_in_the_tree_is_skipped_by_grep_and_glob(ws: Path, mode: str) -> None:
    (ws / "a.py").write_text("needle\n")
    (ws / "sub").mkdir()
    os.mkfifo(ws / "sub" / "pipe.py")
    os.mkfifo(ws / ".gitignore")  # an ignore file that is a FIFO: never opened, never honoured
    async with connect(ws, mode) as c:
        r = await call(c, "Grep", pattern="needle")
        assert not r.is_error and text(r).startswith("a.py"), text(r)
        r = await call(c, "Grep", pattern="needle", output_mode="content")
        assert not r.is_error and "a.py:1:needle" in text(r), text(r)
        r = await call(c, "Glob", pattern="**/*.py")
        assert not r.is_error and "a.py" in text(r), text(r)
