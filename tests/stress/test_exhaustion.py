"""Resource exhaustion: things that are not files, huge files, huge directories, huge searches.

Every call answers (within its documented limit, with a clear message), the server's memory
stays bounded (VmHWM of a real server process, from /proc), and the next call is answered.
The default run uses sizes that take seconds; ``-m slow`` runs the sizes the issue names.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from fastmcp import Client

from tests.conftest import connect, text
from tests.stress.procs import rg_children, server_pid, status, stdio_server, wait_until
from tests.tooling import tool_missing

# One event loop for the module: the shared server (a subprocess and its client) lives in it.
# Writes here are about exhaustion, not the read guard (tests/tools/test_read_guard.py).
# One xdist worker for the module: its shared server starts once, not once a worker.
pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.usefixtures("read_guard_off"),
    pytest.mark.xdist_group("exhaustion-shared"),
]

GIB = 1 << 30
MIB = 1 << 20
# Hang guard for one call: longer than any limit filegate documents (Grep's 20 s timeout,
# ReadFile's 5 s line count), so only a call that would never answer trips it.
CALL_LIMIT_S = 60.0
# What one call may add to the server's peak memory while reading a file of any size (SPEC:
# "a few MiB" for ReadFile; rg's output is capped at 20 MB, and parsing it costs a few times that).
READ_GROWTH = 48 * MIB
SEARCH_GROWTH = 160 * MIB


async def guarded(client: Client[Any], tool: str, **args: Any) -> Any:
    return await client.call_tool(tool, args, raise_on_error=False, timeout=CALL_LIMIT_S)


def sparse_text(path: Path, size: int) -> Path:
    """Text lines at the start, then a hole up to ``size`` bytes (no disk used)."""
    with open(path, "wb") as f:
        f.write(b"a line of text\n" * 2000)
        f.truncate(size)
    return path


def single_line(path: Path, size: int) -> Path:
    with open(path, "wb") as f:
        chunk = b"x" * MIB
        for _ in range(size // MIB):
            f.write(chunk)
        f.write(b" needle at the end")
    return path


class Server:
    """A stdio filegate subprocess with a client, and its memory high-water mark."""

    def __init__(self, client: Client[Any], pid: int, ws: Path) -> None:
        self.client = client
        self.pid = pid
        self.ws = ws
        self.baseline = 0

    async def call(self, tool: str, **args: Any) -> Any:
        return await guarded(self.client, tool, **args)

    def reset_peak(self) -> None:
        """Start a new measurement: VmHWM := VmRSS (Linux 4.0+, clear_refs "5")."""
        Path(f"/proc/{self.pid}/clear_refs").write_text("5")
        self.baseline = status(self.pid)["VmHWM"]

    def growth(self) -> int:
        return status(self.pid)["VmHWM"] - self.baseline

    async def check_still_answers(self) -> None:
        r = await self.call("ReadFile", path="small.txt")
        assert not r.is_error and "small" in text(r)


@contextlib.asynccontextmanager
async def running(ws: Path, *flags: str, grep_timeout: float | None = None) -> AsyncIterator[Server]:
    (ws / "small.txt").write_text("small file\n")
    async with Client(stdio_server(ws, *flags, grep_timeout=grep_timeout)) as client:
        server = Server(client, server_pid(ws), ws)
        await server.check_still_answers()  # warm: imports, first call paths
        server.reset_peak()
        yield server


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Server]:
    """One server for the huge-file tests (spawning one costs seconds); each test gets a clean
    directory of its own under the workspace and a fresh peak measurement."""
    ws = Path(os.path.realpath(tmp_path_factory.mktemp("exhaustion")))
    async with running(ws, "--approval", "auto") as s:
        yield s


@pytest_asyncio.fixture(loop_scope="module")
async def server(shared: Server) -> AsyncIterator[Server]:
    await shared.check_still_answers()
    shared.reset_peak()
    yield shared


@pytest.fixture
def room(shared: Server, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh directory for one test inside the shared server's workspace (its relative name)."""
    name = request.node.name[:60].replace("[", "-").replace("]", "")
    d = shared.ws / name
    d.mkdir()
    yield name
    shutil.rmtree(d)


# --- things that are not files ---------------------------------------------------------------


async def test_fifos_sockets_and_devices_never_block_any_tool(ws: Path, mode: str) -> None:
    os.mkfifo(ws / "pipe")  # no writer: opening it for reading would block forever
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(ws / "sock"))
    os.symlink("/dev/zero", ws / "zero-link")
    targets = ["pipe", "sock", "/dev/zero", "/dev/urandom", "/dev/stdin", "/proc/self/fd/0",
               "/dev/null", str(ws / "zero-link")]  # fmt: skip
    (ws / "notes.txt").write_text("grep me\n")
    try:
        async with connect(ws, mode, confine=False, approval="auto") as c:
            for t in targets:
                for tool, args in [
                    ("ReadFile", {"path": t}),
                    ("ReadMediaFile", {"path": t}),
                    ("WriteFile", {"path": t, "content": "x"}),
                    ("WriteFile", {"path": t, "content": "x", "mode": "append"}),
                    ("StrReplaceFile", {"path": t, "edit": {"old": "a", "new": "b"}}),
                    ("Grep", {"pattern": "x", "path": t}),
                ]:
                    r = await guarded(c, tool, **args)
                    assert r.is_error, (tool, t)
                    assert "is not a file" in text(r), (tool, t, text(r))
                if t.startswith("/"):
                    r = await guarded(c, "Glob", pattern="*", directory=t)
                    assert r.is_error, t
            # A search of a directory holding a FIFO and a socket skips them, and ends.
            r = await guarded(c, "Grep", pattern="grep|x", path=".", output_mode="content")
            assert not r.is_error and "notes.txt:1:grep me" in text(r)
            r = await guarded(c, "Glob", pattern="*")
            assert "pipe" in text(r) and "sock" in text(r)
    finally:
        sock.close()
    assert (ws / "pipe").is_fifo() and (ws / "sock").is_socket()
    assert os.path.islink(ws / "zero-link")


# --- huge files --------------------------------------------------------------------------------


async def check_huge_file_calls(server: Server, room: str, size: int) -> None:
    huge = sparse_text(server.ws / room / "huge.txt", size)
    path = f"{room}/huge.txt"
    r = await server.call("ReadFile", path=path)
    assert not r.is_error and "1000 lines read" in text(r)
    r = await server.call("ReadFile", path=path, line_offset=1500, n_lines=10)
    assert not r.is_error and "10 lines read from file starting from line 1500" in text(r)
    r = await server.call("ReadFile", path=path, line_offset=-3)
    assert not r.is_error and "truncated" in text(r)  # the hole is one long line of NULs
    r = await server.call("Grep", pattern="a line", path=path, output_mode="count_matches")
    assert not r.is_error or "timed out" in text(r)
    assert server.growth() < READ_GROWTH, f"peak grew {server.growth() / MIB:.0f} MiB"
    await server.check_still_answers()
    assert huge.stat().st_size == size


async def test_ten_gib_sparse_file_is_refused_by_size_before_any_read(server: Server, room: str) -> None:
    sparse_text(server.ws / room / "ten.txt", 10 * GIB)
    path = f"{room}/ten.txt"
    # The module's server started before read_guard_off: a one-line window satisfies its guard.
    assert not (await server.call("ReadFile", path=path, n_lines=1)).is_error
    for tool, args, expect in [
        ("ReadMediaFile", {"path": path}, "exceeds the max 100MB"),
        ("StrReplaceFile", {"path": path, "edit": {"old": "a line", "new": "b"}}, "at most"),
        ("WriteFile", {"path": path, "content": "tail\n", "mode": "append"}, "at most"),
    ]:
        r = await server.call(tool, **args)
        assert r.is_error and expect in text(r), (tool, text(r))
    assert server.growth() < READ_GROWTH
    assert (server.ws / path).stat().st_size == 10 * GIB
    await server.check_still_answers()


@pytest.mark.slow
async def test_one_gib_sparse_text_file_reads_in_bounded_memory(server: Server, room: str) -> None:
    await check_huge_file_calls(server, room, GIB)


@pytest.mark.slow
async def test_ten_gib_sparse_text_file_reads_in_bounded_memory(server: Server, room: str) -> None:
    await check_huge_file_calls(server, room, 10 * GIB)
    print(f"\n10 GiB sparse file: server peak grew {server.growth() / MIB:.1f} MiB")


async def test_fifty_megabyte_single_line_file(server: Server, room: str) -> None:
    single_line(server.ws / room / "line.txt", 50 * MIB)
    path = f"{room}/line.txt"
    r = await server.call("ReadFile", path=path)
    assert not r.is_error and "Lines [1] were truncated" in text(r)
    r = await server.call("ReadFile", path=path, line_offset=-1)
    assert not r.is_error and "Lines [1] were truncated" in text(r)
    r = await server.call("Grep", pattern="needle", path=path, output_mode="content")
    assert not r.is_error and len(text(r)) < 10_000
    r = await server.call("Grep", pattern="needle", path=room, output_mode="files_with_matches")
    assert not r.is_error and "line.txt" in text(r)
    read_growth = server.growth()
    assert read_growth < READ_GROWTH, f"reads grew the peak by {read_growth / MIB:.0f} MiB"
    # An edit holds the old and the new bytes (SPEC bounds it at 128 MiB files): a few copies.
    r = await server.call("StrReplaceFile", path=path, edit={"old": "needle", "new": "pin"})
    assert not r.is_error, text(r)
    assert server.growth() < 6 * 50 * MIB, f"edit grew the peak by {server.growth() / MIB:.0f} MiB"
    assert (server.ws / path).read_bytes().endswith(b" pin at the end")
    await server.check_still_answers()
    print(f"\n50 MB line: reads +{read_growth / MIB:.1f} MiB, edit +{server.growth() / MIB:.1f} MiB peak")


# --- huge directories and searches -------------------------------------------------------------


def _many_entries(d: Path, n: int) -> None:
    d.mkdir()
    for i in range(n):
        os.close(os.open(d / f"f{i:06d}.txt", os.O_CREAT | os.O_WRONLY, 0o644))


async def check_big_directory(server: Server, room: str, n: int) -> None:
    big = server.ws / room / "big"
    _many_entries(big, n)
    r = await server.call("Glob", pattern="*.txt", directory=str(big))
    assert not r.is_error and "Only the first 1000 matches are returned" in text(r)
    assert len(text(r).splitlines()) <= 1002
    r = await server.call("Glob", pattern=f"{room}/big/*.none")
    assert not r.is_error and "No matches found" in text(r)
    r = await server.call("Glob", pattern="**/*.txt", directory=str(big))  # allowed (SPEC §4), capped
    assert not r.is_error and "Only the first 1000 matches are returned" in text(r)
    assert len(text(r).splitlines()) <= 1002
    r = await server.call("Grep", pattern="x", path=f"{room}/big", output_mode="files_with_matches")
    assert not r.is_error
    assert server.growth() < SEARCH_GROWTH, f"peak grew {server.growth() / MIB:.0f} MiB"
    await server.check_still_answers()


@pytest.mark.slow
async def test_directory_with_twenty_thousand_entries(server: Server, room: str) -> None:
    await check_big_directory(server, room, 20_000)


@pytest.mark.slow
async def test_directory_with_two_hundred_thousand_entries(server: Server, room: str) -> None:
    await check_big_directory(server, room, 200_000)
    print(f"\n200,000 entries: server peak grew {server.growth() / MIB:.1f} MiB")


async def check_match_everything(server: Server, path: str) -> None:
    r = await server.call("Grep", pattern=".", path=path, output_mode="content", head_limit=0)
    assert not r.is_error, text(r)[:500]
    assert "Output exceeded buffer limit" in text(r) or "Output is truncated" in text(r)
    assert len(text(r)) < 60_000
    r = await server.call("Grep", pattern=".", path=path, output_mode="count_matches", head_limit=5)
    assert not r.is_error and "total occurrences" in text(r)
    assert server.growth() < SEARCH_GROWTH, f"peak grew {server.growth() / MIB:.0f} MiB"
    await server.check_still_answers()


@pytest.mark.slow
async def test_grep_matching_every_line_past_the_output_buffer(server: Server, room: str) -> None:
    line = b"int filegate_stress_line = 42; /* every line of this tree matches */\n"
    for i in range(40):  # 40 x 0.5 MB: rg's output (with names and numbers) passes its 20 MB cap
        sub = server.ws / room / f"d{i % 6}"
        sub.mkdir(exist_ok=True)
        (sub / f"f{i}.c").write_bytes(line * 7_500)
    await check_match_everything(server, room)
    print(f"\nmatch-all: server peak grew {server.growth() / MIB:.1f} MiB")


@pytest.mark.slow
async def test_grep_matching_every_line_of_the_kernel_tree() -> None:
    corpus = Path(__file__).resolve().parents[3] / "shared" / "tools" / "corpus"
    try:
        kernel = subprocess.run([str(corpus)], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        tool_missing("the kernel corpus (../shared/tools/corpus) is not available")
    ws = Path(kernel)
    async with Client(stdio_server(ws, "--read-only")) as client:
        s = Server(client, server_pid(ws), ws)
        await s.call("ReadFile", path="README")
        s.reset_peak()
        # include_ignored: Debian's linux-source tree ignores everything but debian/ (its
        # .gitignore ends with `/*` and `!/debian/`), so without it nothing is searched at all.
        r = await s.call("Grep", pattern=".", output_mode="content", head_limit=0, include_ignored=True)
        assert not r.is_error or "timed out" in text(r)
        assert r.is_error or re.match(r"[^\n:]+:1:", text(r)), text(r)[:300]  # lines, not "No matches"
        assert s.growth() < SEARCH_GROWTH, f"peak grew {s.growth() / MIB:.0f} MiB"
        assert wait_until(lambda: not rg_children(s.pid), 10)
        assert not (await s.call("ReadFile", path="README")).is_error
        print(f"\nkernel tree, every line: peak grew {s.growth() / MIB:.1f} MiB; {text(r)[-300:]}")


@pytest.mark.slow
async def test_regexes_rg_refuses_are_clear_errors(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("abc\n")
    async with connect(ws, mode) as c:
        for pattern, expect in [
            ("(", "unclosed group"),
            ("\\p{NoSuchProperty}", "Unicode property not found"),
            ("a{1000}{1000}{1000}", "exceeds size limit"),
            ("(?<=a)b", "look-around"),
            ("a\x00b", "NUL byte"),
            ("\ud800", "lone UTF-16 surrogate"),
            ("a" * 200_000, "too long to pass to ripgrep"),
        ]:
            r = await guarded(c, "Grep", pattern=pattern)
            assert r.is_error and expect in text(r), (pattern, text(r))
            assert "Traceback" not in text(r)
        for args, expect in [
            ({"glob": "{{{"}, "invalid glob `{{{`: nested alternate groups"),
            ({"glob": "*\x00"}, "NUL byte"),
            ({"type": "no-such-type"}, "unknown file type `no-such-type`"),
        ]:
            r = await guarded(c, "Grep", pattern="a", **args)
            assert r.is_error and expect in text(r), (args, text(r))
        assert not (await guarded(c, "Grep", pattern="abc")).is_error


# --- a search past its timeout ---------------------------------------------------------------


async def check_past_timeout(ws: Path, timeout: float) -> None:
    tera = ws / "tera.txt"
    sparse_text(tera, 1 << 40)  # 1 TiB of hole: rg reads zeros far longer than any timeout
    # The launcher lowers the timeout; 20 s is filegate's own, unpatched.
    async with running(ws, grep_timeout=None if timeout == 20.0 else timeout) as s:
        r = await s.call("Grep", pattern="never-there", path="tera.txt")
        assert r.is_error and f"Grep timed out after {timeout:g}s" in text(r), text(r)
        assert wait_until(lambda: not rg_children(s.pid), 10), "rg outlived its call"
        await s.check_still_answers()
        r = await s.call("Grep", pattern="small")
        assert not r.is_error and "small.txt" in text(r)


@pytest.mark.slow
async def test_grep_past_its_timeout_answers_kills_rg_and_serves_the_next_call(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    await check_past_timeout(ws, 1.5)  # Kimi's 20 s, lowered by the launcher so the default run is quick


@pytest.mark.slow
async def test_grep_past_the_real_twenty_second_timeout(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    await check_past_timeout(ws, 20.0)
