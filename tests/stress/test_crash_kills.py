"""SIGKILL a real filegate server at random moments while it runs WriteFile and StrReplaceFile.

tests/tools/test_crash_safety.py kills a bare writer loop around ``replace_file``; this kills the
whole server mid-``tools/call`` (parse, approval, diff, write) for both write tools, on both the
O_TMPFILE path and the named-temp path that file systems without O_TMPFILE take. After every
kill the target holds exactly the old or the new content, with its mode bits; after the next
start the server reads it and its first write leaves no temp file behind. Servers are forked
from a warm parent (procs.Zygote) so a kill costs milliseconds, not an interpreter start.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from filegate.fsio.pending import TEMP_SUFFIX
from tests.rawstdio import RawStdio
from tests.stress.procs import Zygote

# Kills per (tool, temp path) in the default run and in the slow variant (4 combinations:
# 4 x 60 = 240 kills there).
KILLS = 4
SLOW_KILLS = 60
# Calls queued on a server before it is killed: it is always mid-call when the signal lands.
QUEUED = 10
# Old and new contents of different sizes: a torn or truncated file passes for neither.
FILLER = b"".join(
    b"filler line %06d of the file, here to make each write take a while\r\n" % i for i in range(9_000)
)
OLD_HEAD, NEW_HEAD = "state: old\r\n", "state: new, and longer than the old one\r\n"
OLD = OLD_HEAD.encode() + FILLER
NEW = NEW_HEAD.encode() + FILLER


def temps(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.endswith(TEMP_SUFFIX)]


def _calls(tool: str) -> list[tuple[str, dict[str, Any]]]:
    """Calls that flip the target between OLD and NEW; whichever lands, the file is one of them."""
    if tool == "WriteFile":
        return [("WriteFile", {"path": "target.txt", "content": c.decode()}) for c in (NEW, OLD)]
    return [
        ("StrReplaceFile", {"path": "target.txt", "edit": {"old": a, "new": b}})
        for a, b in ((OLD_HEAD, NEW_HEAD), (NEW_HEAD, OLD_HEAD))
    ]


def _ok(reply: dict[str, Any]) -> bool:
    return "result" in reply and not reply["result"].get("isError")


def kill_loop(zygote: Zygote, ws: Path, tool: str, kills: int, seed: int, no_tmpfile: bool) -> dict[str, int]:
    rng = random.Random(seed)
    target = ws / "target.txt"
    target.write_bytes(OLD)
    target.chmod(0o640)
    seen = {"kills": 0, "old": 0, "new": 0, "temp_left_by_a_kill": 0}
    for _ in range(kills):
        server = zygote.spawn(ws, "--approval", "auto", no_tmpfile=no_tmpfile)
        # The next start: it removes the temps killed writers recorded; the file reads back whole.
        read = server.reply(server.call("ReadFile", {"path": "target.txt", "n_lines": 1}))
        assert _ok(read) and "state:" in read["result"]["content"][0]["text"]
        first = server.reply(server.call(*_pick(tool, target)))
        assert _ok(first), first
        assert temps(ws) == [], "a temp file survived the next start"
        ids = [server.call(*_calls(tool)[i % 2]) for i in range(QUEUED)]
        server.reply(ids[0])  # writes are under way
        time.sleep(rng.uniform(0, 0.04))
        os.kill(server.pid, signal.SIGKILL)
        server.close_pipes()
        _wait_gone(server.pid)
        data = target.read_bytes()
        assert data in (OLD, NEW), f"torn file after a kill: {len(data)} bytes"
        assert target.stat().st_mode & 0o777 == 0o640
        seen["kills"] += 1
        seen["old" if data == OLD else "new"] += 1
        left = temps(ws)
        assert len(left) <= 1, left  # one write at a time per file: at most one temp in flight
        seen["temp_left_by_a_kill"] += len(left)
    return seen


def _pick(tool: str, target: Path) -> tuple[str, dict[str, Any]]:
    """The call that flips the file from what it holds now."""
    now_old = target.read_bytes() == OLD
    return _calls(tool)[0 if now_old else 1]


def _wait_gone(pid: int) -> None:
    """Until every thread of the killed server has exited (a thread-group leader shows as a
    zombie while its other threads are still dying, and cannot be reaped before they are)."""
    for _ in range(2000):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0]
            threads = len(os.listdir(f"/proc/{pid}/task"))
        except (OSError, IndexError):
            return
        if state == "Z" and threads <= 1:
            return
        time.sleep(0.005)
    raise AssertionError(f"server {pid} survived SIGKILL")


# One tool on each temp-file path here; the slow test below kills all four pairs hundreds of times.
@pytest.mark.parametrize(
    ("tool", "no_tmpfile"),
    [("WriteFile", False), ("StrReplaceFile", True)],
    ids=["WriteFile-o_tmpfile", "StrReplaceFile-named-temp"],
)
def test_server_killed_mid_write_leaves_old_or_new_content(
    zygote: Zygote, ws: Path, tool: str, no_tmpfile: bool
) -> None:
    seen = kill_loop(zygote, ws, tool, KILLS, seed=hash((tool, no_tmpfile)) & 0xFFFF, no_tmpfile=no_tmpfile)
    assert seen["kills"] == KILLS


@pytest.mark.slow
@pytest.mark.parametrize("no_tmpfile", [False, True], ids=["o_tmpfile", "named-temp"])
@pytest.mark.parametrize("tool", ["WriteFile", "StrReplaceFile"])
def test_server_killed_mid_write_hundreds_of_times(
    zygote: Zygote, ws: Path, tool: str, no_tmpfile: bool
) -> None:
    seen = kill_loop(zygote, ws, tool, SLOW_KILLS, seed=7, no_tmpfile=no_tmpfile)
    print(f"\n{tool} ({'named temp' if no_tmpfile else 'O_TMPFILE'}): {seen}")
    assert seen["kills"] == SLOW_KILLS


# --- two servers writing one file at once (two clients on one project) ----------------------


def _storm(zygote: Zygote, ws: Path, no_tmpfile: bool, rounds: int) -> dict[str, int]:
    """Two server processes write the same file at once while a reader checks every version."""
    target = ws / "target.txt"
    target.write_bytes(OLD)
    servers: list[RawStdio] = [
        zygote.spawn(ws, "--approval", "auto", no_tmpfile=no_tmpfile) for _ in range(2)
    ]
    torn: list[int] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            try:
                data = target.read_bytes()
            except FileNotFoundError:
                torn.append(-1)
                continue
            if data not in (OLD, NEW):
                torn.append(len(data))

    reader = threading.Thread(target=watch)
    reader.start()
    counts = {"ok": 0, "failed": 0}
    try:
        for _ in range(rounds):
            # Each server gets a queue of writes, so both are writing all the time.
            ids = [
                (s, s.call(*_calls("WriteFile")[(k + i) % 2]))
                for i in range(QUEUED)
                for k, s in enumerate(servers)
            ]
            for s, rid in ids:
                counts["ok" if _ok(s.reply(rid)) else "failed"] += 1
    finally:
        stop.set()
        reader.join()
        for s in servers:
            os.kill(s.pid, signal.SIGKILL)
            s.close_pipes()
    assert not torn, f"a reader saw {len(torn)} torn versions, e.g. {torn[:5]} bytes"
    assert target.read_bytes() in (OLD, NEW)
    return counts


def test_two_servers_writing_one_file_never_tear_it(zygote: Zygote, ws: Path) -> None:
    _storm(zygote, ws, no_tmpfile=False, rounds=2)


# A writer process: filegate's replace_file on the named-temp path, with one pause so the test
# can order two writers' steps exactly (the pause only waits; every step is filegate's own).
# "after-write": pause once the whole temp is written; "mid-write": once half of it is.
PAUSING_WRITER = r"""
import os, sys
from pathlib import Path
import filegate.fsio.atomic as atomic
from filegate.fsio.snapshot import Snapshot
from filegate.errors import WriteError
atomic._TMPFILE = 0
path, data, pause = Path(sys.argv[1]), Path(sys.argv[2]).read_bytes(), sys.argv[3]
write_all = atomic._write_all
def paused(fd, chunk):
    if pause == "mid-write":
        write_all(fd, chunk[: len(chunk) // 2])
        chunk = chunk[len(chunk) // 2 :]
    else:
        write_all(fd, chunk)
        chunk = b""
    print(pause, flush=True)
    sys.stdin.readline()
    write_all(fd, chunk)
atomic._write_all = paused
try:
    atomic.replace_file(path, data, expect=Snapshot.of(path.read_bytes(), os.stat(path)), shown="t")
    print("wrote", flush=True)
except WriteError as exc:
    print("refused:", exc, flush=True)
"""


def _writer(tmp_path: Path, target: Path, content: bytes, pause: str) -> subprocess.Popen[bytes]:
    source = tmp_path / f"{pause}.src"
    source.write_bytes(content)
    proc = subprocess.Popen(
        [sys.executable, "-c", PAUSING_WRITER, str(target), str(source), pause],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == pause.encode()
    return proc


def _go(proc: subprocess.Popen[bytes]) -> bytes:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"go\n")
    proc.stdin.flush()
    out = proc.stdout.read()
    proc.wait()
    proc.stdin.close()
    proc.stdout.close()
    return out


def test_two_processes_writing_one_file_never_tear_it_on_the_named_temp_path(tmp_path: Path) -> None:
    target = tmp_path / "t.txt"
    target.write_bytes(OLD)
    first = _writer(tmp_path, target, NEW, "after-write")  # its temp is complete, not yet renamed
    second = _writer(tmp_path, target, OLD + b"more", "mid-write")  # half of its temp is written
    _go(first)  # renames "its" temp over the target
    seen = target.read_bytes()
    _go(second)
    assert seen in (OLD, NEW, OLD + b"more"), (
        f"torn: the target held {len(seen)} bytes of a half-written temp"
    )
