"""rg under Landlock (tools/grep_sandbox.py): it reads nothing outside the searched directory,
even through a symlink it follows, and a search never fails where the sandbox is missing.

The race of tests/security/test_races.py (a file swapped for a symlink between rg's listing
and its open) is made deterministic here: the symlink is there before rg starts and rg is told
to follow it (``--follow``), which is what the race makes rg do by chance."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from filegate.fsio import platform
from filegate.tools.grep import params as grep_params
from filegate.tools.grep import rg as grep_rg
from filegate.tools.grep import sandbox as grep_sandbox
from tests.conftest import call, connect, text

CANARY = "OUTSIDE-CANARY-7f3a"

needs_landlock = pytest.mark.skipif(grep_sandbox.abi_version() < 1, reason="no Landlock on this kernel")
# Grep starts rg inside the sandbox where rg is pinned to its directory by /proc: Linux with
# Landlock. Elsewhere (FILEGATE_SIMULATE=no-proc stands for macOS) it starts plainly.
landlock_way = pytest.mark.skipif(
    grep_sandbox.abi_version() < 1 or not platform.has_proc(),
    reason="rg starts inside Landlock only with /proc",
)


@pytest.fixture
def trap(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """ws/inside.txt (a match), ws/link.txt -> outside/canary.txt; ws open as a directory fd."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "canary.txt").write_text(f"{CANARY} outside\n")
    (ws / "inside.txt").write_text(f"{CANARY} inside\n")
    os.symlink(outside / "canary.txt", ws / "link.txt")
    fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    yield ws, fd
    os.close(fd)


def _rg_following(fd: int, sandbox: grep_sandbox.Sandbox | None) -> subprocess.CompletedProcess[bytes]:
    """rg told to follow links, started plainly or from a thread inside ``sandbox``."""
    rg = grep_rg.find_rg()
    assert rg is not None

    def run() -> subprocess.CompletedProcess[bytes]:
        cmd = [rg, "--no-config", "--follow", "--", CANARY, "."]
        return subprocess.run(cmd, cwd=f"/proc/self/fd/{fd}", capture_output=True, check=False)

    return sandbox.run_inside(run) if sandbox else run()


def test_without_the_sandbox_rg_follows_the_link_out(trap: tuple[Path, int]) -> None:
    """The hole the sandbox closes (so the test below can fail)."""
    out = _rg_following(trap[1], None)
    assert b"canary.txt" not in out.stdout  # rg prints the link's name, not its target's
    assert b"outside" in out.stdout


@needs_landlock
def test_sandboxed_rg_cannot_read_outside_through_a_symlink(trap: tuple[Path, int]) -> None:
    rg = grep_rg.find_rg()
    assert rg is not None
    sandbox = grep_sandbox.build(rg, [trap[1]])
    assert sandbox is not None
    try:
        out = _rg_following(trap[1], sandbox)
    finally:
        sandbox.close()
    assert b"inside" in out.stdout  # the searched directory is read
    assert b"outside" not in out.stdout
    assert out.stderr.count(b"rg: ") == 1 and b"link.txt: Permission denied" in out.stderr
    assert out.returncode == 2  # an error was met (the link), some lines matched


@landlock_way
async def test_grep_starts_rg_inside_the_sandbox(trap: tuple[Path, int]) -> None:
    """Grep's own spawn (_start_rg) applies the sandbox: rg told to follow the link is refused."""
    ws, fd = trap
    rg = grep_rg.find_rg()
    assert rg is not None
    target = grep_params.Target(".", ws, ".", False, fd, "")
    proc = await grep_rg.start_rg([rg, "--no-config", "--follow", "--", CANARY, "."], target, [], [])
    assert proc.stdout is not None and proc.stderr is not None
    out = b"".join([chunk async for chunk in proc.stdout])
    err = b"".join([chunk async for chunk in proc.stderr])
    await proc.wait()
    await proc.aclose()
    assert b"inside" in out and b"outside" not in out
    assert b"link.txt: Permission denied" in err


async def test_grep_searches_where_landlock_is_unavailable(
    ws: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stand-in for an old kernel (a simulated ABI 0): Grep runs rg as before."""
    monkeypatch.setitem(grep_sandbox._state, "abi", 0)
    (ws / "a.txt").write_text(f"{CANARY}\n")
    async with connect(ws, mode) as c:
        r = await call(c, "Grep", pattern=CANARY)
    assert not r.is_error and text(r).splitlines()[0] == "a.txt"


@landlock_way
async def test_grep_falls_back_when_the_child_cannot_enter_the_sandbox(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ruleset the kernel refuses (here: a descriptor that is no ruleset, as a seccomp filter
    or an EPERM would) fails in the thread that starts rg, before anything is started; Grep
    runs rg without the sandbox from then on, and the search still answers."""
    monkeypatch.setitem(grep_sandbox._state, "abi", grep_sandbox.abi_version())

    def not_a_ruleset(*_: object) -> grep_sandbox.Sandbox:
        return grep_sandbox.Sandbox(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))

    monkeypatch.setattr(grep_sandbox, "build", not_a_ruleset)
    (ws / "a.txt").write_text(f"{CANARY}\n")
    async with connect(ws) as c:
        r = await call(c, "Grep", pattern=CANARY)
    assert not r.is_error and text(r).splitlines()[0] == "a.txt"
    assert grep_sandbox._state["abi"] == 0


# Forks of this process, counted while a test asks (os.register_at_fork cannot be undone).
_forks: list[int] = []
os.register_at_fork(before=lambda: _forks.append(1) if _forks and _forks[0] == 0 else None)


@needs_landlock
async def test_grep_starts_rg_without_forking_the_server(trap: tuple[Path, int]) -> None:
    """rg enters the sandbox from a thread that entered it first (a vfork), not in a
    preexec_fn, which forks the whole server (5-30 ms a search): no fork happens, and the
    server's own threads are not confined after it (they read outside the workspace). That rg
    is confined: test_grep_starts_rg_inside_the_sandbox."""
    ws, _ = trap
    outside = ws.parent / "outside" / "canary.txt"
    _forks[:] = [0]
    try:
        async with connect(ws) as c:
            r = await call(c, "Grep", pattern=CANARY, output_mode="content")
            assert outside.read_text().startswith(CANARY)  # the loop's thread is not confined
            assert await anyio.to_thread.run_sync(outside.read_text)  # nor a worker thread
    finally:
        forks, _forks[:] = len(_forks) - 1, []
    assert forks == 0  # nor without /proc, where a trampoline pins rg (no preexec_fn)
    assert not r.is_error and text(r) == f"inside.txt:1:{CANARY} inside"
