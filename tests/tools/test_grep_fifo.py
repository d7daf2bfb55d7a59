"""A FIFO in the tree never makes Grep wait (issue 22 item 8), through a real client.

rg skips a FIFO its walk lists; the hole was a FIFO swapped in between rg's listing and its
open(): rg blocked in open() (no writer) or read() (the swapper holds a writer) until the 20 s
timeout, on every Grep. Here a thread keeps swapping files for FIFOs, both ways, while Grep
runs; every call must answer in well under the timeout."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from filegate.fsio import platform
from tests.conftest import call, connect, text

VICTIMS = 60
DECOYS = 2000
CALL_LIMIT_S = 6.0  # the timeout is 20 s; the watcher stops rg within ~0.2 s


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


@pytest.mark.parametrize("hold_writer", [False, True], ids=["open-waits", "read-waits"])
async def test_a_fifo_swapped_in_during_the_walk_never_makes_grep_wait(
    ws: Path, mode: str, hold_writer: bool
) -> None:
    if not platform.has_proc():  # FILEGATE_SIMULATE=no-proc, macOS, Windows: nothing watches rg
        pytest.skip(
            "rg is stopped on a FIFO only where /proc shows its wait; elsewhere the 20 s timeout bounds it"
        )
    d = _tree(ws)
    stopped = 0
    async with connect(ws, mode) as c:
        with _swapping(d, hold_writer):
            for _ in range(6):
                started = time.monotonic()
                r = await call(c, "Grep", pattern="needle", output_mode="content")
                took = time.monotonic() - started
                assert took < CALL_LIMIT_S, (took, text(r)[-300:])
                assert not r.is_error, text(r)
                assert "timed out" not in text(r)
                stopped += "a file was replaced by a FIFO" in text(r)
    assert stopped, "the swap never hit rg's open: the test proved nothing"
