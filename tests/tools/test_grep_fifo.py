"""A FIFO in the tree never makes Grep hang (issue 22 item 8; SPEC §2.7), through a real client.

rg skips a FIFO its walk lists. A FIFO swapped in between rg's listing and its open() makes rg
wait in open() (no writer) or read() (the swapper holds a writer): rg has no flag to refuse it
at open. Grep's timeout bounds that wait, and the answer says the search timed out: a bounded
stall, not a hang. Here a thread keeps swapping files for FIFOs, both ways, while Grep runs
with a short timeout; every call answers within it and says so when it stopped there."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from filegate.tools.grep import rg as grep_rg
from tests.conftest import call, connect, text

VICTIMS = 60
DECOYS = 2000
CALL_LIMIT_S = 6.0  # well under the 20 s timeout: rg never waits on a FIFO it listed
TIMEOUT_S = 1.5
MARGIN_S = 4.0  # rg killed, its output parsed and the answer sent, on a loaded machine


def _tree(ws: Path) -> Path:
    d = ws / "src"
    d.mkdir()
    for i in range(VICTIMS):
        (d / f"v{i:03}.txt").write_text(f"needle {i}\n")
    for i in range(DECOYS):  # a long listing: rg opens its entries well after it read them
        (d / f"d{i:04}.txt").write_text("hay\n" * 50)
    (ws / "keep.txt").write_text("needle kept\n")
    return d


@contextmanager
def _swapping(d: Path, hold_writer: bool) -> Iterator[None]:
    """Flip each victim between a FIFO (most of the time) and a regular file, by rename."""
    stop = threading.Event()
    writers: list[int] = []

    def run() -> None:
        n = 0
        while not stop.is_set():
            for i in range(VICTIMS):
                victim = d / f"v{i:03}.txt"
                tmp = d / f".swap-{n}"
                n += 1
                os.mkfifo(tmp)
                if hold_writer:  # a writer that never writes: rg's open passes, its read waits
                    writers.append(os.open(tmp, os.O_RDWR | os.O_NONBLOCK))
                os.replace(tmp, victim)
            time.sleep(0.004)
            for i in range(VICTIMS):
                victim = d / f"v{i:03}.txt"
                tmp = d / f".swap-{n}"
                n += 1
                tmp.write_text(f"needle {i}\n")
                os.replace(tmp, victim)
            time.sleep(0.0005)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join()
        for fd in writers:
            os.close(fd)


async def test_a_fifo_present_in_the_tree_is_skipped(ws: Path, mode: str) -> None:
    d = _tree(ws)
    os.mkfifo(d / "pipe.txt")
    async with connect(ws, mode) as c:
        started = time.monotonic()
        r = await call(c, "Grep", pattern="needle", output_mode="files_with_matches")
    assert time.monotonic() - started < CALL_LIMIT_S
    assert not r.is_error and "keep.txt" in text(r) and "pipe.txt" not in text(r)


@pytest.mark.slow
@pytest.mark.parametrize("hold_writer", [False, True], ids=["open-waits", "read-waits"])
@pytest.mark.slow
async def test_a_fifo_swapped_in_during_the_walk_never_makes_grep_wait(
    ws: Path, mode: str, hold_writer: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Longer than its timeout: the in-process server's timeout is shortened to TIMEOUT_S."""
    monkeypatch.setattr(grep_rg, "RG_TIMEOUT_S", TIMEOUT_S)
    d = _tree(ws)
    stalled = 0
    async with connect(ws, mode) as c:
        with _swapping(d, hold_writer):
            for _ in range(4):
                started = time.monotonic()
                r = await call(c, "Grep", pattern="needle", output_mode="content")
                took = time.monotonic() - started
                assert took < TIMEOUT_S + MARGIN_S, (took, text(r)[-300:])
                stalled += f"Grep timed out after {TIMEOUT_S:g}s" in text(r)
    assert stalled, "the swap never hit rg's open: the test proved nothing"
