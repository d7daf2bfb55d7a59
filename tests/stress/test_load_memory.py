"""40 parallel whole-file loads against a real server, its peak memory measured (SPEC §4
ReadMediaFile, memory): one process-wide byte budget bounds what media reads, previews and
write preparations hold at once. Before it, 20 parallel reads of 100 MiB "PNGs" of 8x8 px took
the server to 2.4 GB and 10 parallel previews to 3 GB."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from filegate.fsio.loads import MAX_LOAD_BYTES
from tests import media_factory as mf
from tests.conftest import call, text
from tests.fakes import Answers
from tests.stress.procs import server_pid, status

MIB = 1 << 20
# Kimi's media limit: the largest file ReadMediaFile loads whole (sparse: no disk used).
MEDIA_FILE = 100 * MIB
# A text file a write loads whole; real lines (a sparse one is refused as binary right after
# its load), so smaller, to keep the disk use and the run short.
TEXT_FILE = 32 * MIB
PARALLEL = 40
# The server under an address-space cap, so the old behaviour fails its calls (MemoryError)
# instead of taking the machine (the media bombs' launcher, tests/tools/test_read_media.py).
CAPPED_LAUNCHER = (
    "import resource, sys; cap = int(sys.argv.pop(1)); "
    "resource.setrlimit(resource.RLIMIT_AS, (cap, cap)); "
    "from filegate.cli import main; sys.exit(main())"
)
SERVER_AS_CAP = 3 << 30
# Python, fastmcp and Pillow idle (~100 MiB), the budget's worth of loaded files, and what a
# load adds beside its bytes (a diff's slices, a decode of 8x8 px, 40 calls' frames).
PEAK_LIMIT = 128 * MIB + MAX_LOAD_BYTES + 64 * MIB
# Hang guard: 40 loads of 100 MiB taking turns two at a time.
CALL_GUARD_S = 120


def text_file(path: Path) -> None:
    line = b"a line of text\n"
    path.write_bytes(b"first line\n" + line * (TEXT_FILE // len(line)))


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Path]:
    """The workspace, emptied after the test: its text files hold 800 MB of real disk."""
    yield Path(os.path.realpath(tmp_path))
    for child in tmp_path.iterdir():
        child.unlink()


@pytest.mark.slow
async def test_forty_parallel_whole_file_loads_stay_within_the_budget(ws: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    for i in range(PARALLEL):
        kind = i % 3
        if kind == 0:  # a media read: the file is read whole before its header is decoded
            mf.write_sparse_png(ws / f"pic{i}.png", MEDIA_FILE)
            calls.append(("ReadMediaFile", {"path": f"pic{i}.png"}))
        elif kind == 1:  # a preview: an append's diff needs the old content
            text_file(ws / f"log{i}.txt")
            calls.append(
                ("WriteFile", {"path": f"log{i}.txt", "content": "x\n", "mode": "append", "dry_run": True})
            )
        else:  # a write's preparation: loaded, edited and diffed, then the user says no
            text_file(ws / f"src{i}.txt")
            calls.append(("StrReplaceFile", {"path": f"src{i}.txt", "edit": {"old": "first", "new": "1st"}}))
    mf.write_png(ws / "warm.png", mf.line_art(16, 16))
    args = ["-c", CAPPED_LAUNCHER, str(SERVER_AS_CAP), "--workdir", str(ws), "--read-guard", "off"]
    transport = StdioTransport(sys.executable, args, cwd=str(ws), keep_alive=False)
    async with Client(transport, elicitation_handler=Answers(action="decline")) as c:
        warm = await call(c, "ReadMediaFile", path="warm.png")  # Pillow imported: not measured
        assert not warm.is_error, text(warm)
        pid = server_pid(ws)
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := VmRSS
        with anyio.fail_after(CALL_GUARD_S):
            results = await asyncio.gather(*(call(c, tool, **a) for tool, a in calls))
        peak = status(pid)["VmHWM"]
    for (tool, _args), r in zip(calls, results, strict=True):
        assert r.is_error == (tool == "StrReplaceFile"), text(r)
    assert peak < PEAK_LIMIT, f"server peak {peak >> 20} MiB for {PARALLEL} parallel loads"
