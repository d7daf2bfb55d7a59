"""tools/grep/sandbox.py: a child started inside the Landlock sandbox from a thread of its own,
seen as an anyio Process (its own session, its pipes, its exit awaited by pidfd, every
descriptor closed after). Real processes, a real sandbox; Grep's own use of it is tested
through a client in test_grep_sandbox.py."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import anyio
import pytest

from filegate.tools.grep import sandbox as grep_sandbox
from tests.conftest import call, connect, text

needs_landlock = pytest.mark.skipif(grep_sandbox.abi_version() < 1, reason="no Landlock on this kernel")
SH = "/bin/sh"


def _sandbox(tmp_path: Path) -> grep_sandbox.Sandbox:
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        # The shell's tools granted too (the sandbox lets a child run only what it names).
        sandbox = grep_sandbox.build(SH, [fd], (), [shutil.which(t) or t for t in ("cat", "sleep")])
    finally:
        os.close(fd)
    assert sandbox is not None
    return sandbox


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@needs_landlock
async def test_the_child_runs_in_its_own_session_with_its_pipes_and_is_awaited(tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_text("inside\n")
    before = _open_fds()
    sandbox = _sandbox(tmp_path)
    stdin = os.open(tmp_path / "in.txt", os.O_RDONLY)
    try:
        script = "cat; echo complaint >&2; sleep 0.3; exit 3"
        proc = grep_sandbox.start(sandbox, [SH, "-c", script], str(tmp_path), stdin, subprocess.PIPE, [])
    finally:
        sandbox.close()
        os.close(stdin)
    assert os.getsid(proc.pid) == proc.pid  # a session of its own: killed with its group
    assert proc.stdout is not None and proc.stderr is not None and proc.stdin is None
    out = b"".join([chunk async for chunk in proc.stdout])
    err = b"".join([chunk async for chunk in proc.stderr])
    assert proc.returncode is None or proc.returncode == 3
    assert await proc.wait() == 3  # awaited while it sleeps, not only once it has exited
    await proc.aclose()
    await proc.aclose()  # a second close closes nothing else
    assert out == b"inside\n" and err == b"complaint\n"
    assert _open_fds() == before  # its pipes and its pidfd


@needs_landlock
async def test_a_killed_child_is_reaped_and_nothing_is_left_open(tmp_path: Path) -> None:
    before = _open_fds()
    sandbox = _sandbox(tmp_path)
    r, w = os.pipe()
    try:
        proc = grep_sandbox.start(sandbox, [SH, "-c", "exec sleep 30"], str(tmp_path), None, w, [])
    finally:
        sandbox.close()
        os.close(w)
    with anyio.fail_after(10):
        proc.kill()
        assert await proc.wait() == -9
        await proc.aclose()
    assert os.read(r, 10) == b""  # its stdout (ours to close) reached its end
    os.close(r)
    assert _open_fds() == before


@needs_landlock
async def test_repeated_greps_leave_no_descriptor_open(ws: Path) -> None:
    """Each search's pipes and pidfds are closed (a directory and a single file, whose search
    reads the file on rg's stdin)."""
    (ws / "a.txt").write_text("needle\n")
    async with connect(ws) as c:
        assert text(await call(c, "Grep", pattern="needle")) == "a.txt"
        before = _open_fds()
        for _ in range(3):
            assert text(await call(c, "Grep", pattern="needle")) == "a.txt"
            r = await call(c, "Grep", pattern="needle", path="a.txt", output_mode="content")
            assert text(r) == "a.txt:1:needle"
        assert _open_fds() == before
