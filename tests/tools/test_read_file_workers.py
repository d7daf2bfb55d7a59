"""ReadFile's file work runs on at most READ_WORKERS threads at once (tools/read_file.py: more
threads only fight over the GIL, bench/percall.py), and a cancelled read gives its place back.

Through a real in-process MCP client. One seam is watched: ``_resolve_and_read`` (the thread's
work) is wrapped to count the reads running at once and to hold each a moment, so that the
calls overlap; the real read still runs (a spy, not a stand-in)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from filegate.tools import read_file
from tests.conftest import call, connect, texts


@pytest.fixture
def running(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """``now``/``most``: the reads running at once; ``hold``: how long each is held first."""
    seen: dict[str, Any] = {"now": 0, "most": 0, "hold": 0.2, "lock": threading.Lock()}
    real = read_file._resolve_and_read

    def spied(*args: Any) -> Any:
        with seen["lock"]:
            seen["now"] += 1
            seen["most"] = max(seen["most"], seen["now"])
        try:
            time.sleep(seen["hold"])
            return real(*args)
        finally:
            with seen["lock"]:
                seen["now"] -= 1

    monkeypatch.setattr(read_file, "_resolve_and_read", spied)
    return seen


async def test_at_most_two_reads_run_at_once_and_every_one_is_answered(
    ws: Path, mode: str, running: dict[str, Any]
) -> None:
    for i in range(6):
        (ws / f"f{i}.txt").write_text(f"file {i}\n")
    answers: dict[int, list[str]] = {}
    async with connect(ws, mode) as c:

        async def one(i: int) -> None:
            answers[i] = texts(await call(c, "ReadFile", path=f"f{i}.txt"))

        async with anyio.create_task_group() as tg:
            for i in range(6):
                tg.start_soon(one, i)
    assert running["most"] == read_file.READ_WORKERS == 2
    assert {i: a[0] for i, a in answers.items()} == {i: f"     1\tfile {i}\n" for i in range(6)}


async def test_a_cancelled_read_gives_its_place_back(ws: Path, running: dict[str, Any]) -> None:
    """Two reads held for a long time and cancelled by their callers: a third is answered at
    once, not after the held ones end."""
    (ws / "a.txt").write_text("a\n")
    running["hold"] = 3.0
    async with connect(ws) as c:
        for _ in range(2):
            with anyio.move_on_after(0.3):
                await call(c, "ReadFile", path="a.txt")
        running["hold"] = 0.0
        start = time.monotonic()
        out = texts(await call(c, "ReadFile", path="a.txt"))
    assert out[0] == "     1\ta\n"
    assert time.monotonic() - start < 2.0


@pytest.mark.slow
async def test_a_large_file_is_read_on_the_shared_threads_not_in_the_two_places(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reads of files over SHARED_FROM_BYTES can take seconds (a 10 GiB log's line count): two
    of them running do not keep a small read waiting."""
    big = "x" * 99 + "\n"
    for name in ("big1.txt", "big2.txt"):
        (ws / name).write_text(big * (read_file.SHARED_FROM_BYTES // len(big) + 1))
    (ws / "small.txt").write_text("small\n")
    real = read_file._resolve_and_read
    phases: list[tuple[str, bool]] = []

    def spied(params: Any, *rest: Any) -> Any:
        small_only = rest[-1]
        phases.append((params.path, small_only))
        if params.path.startswith("big") and not small_only:
            time.sleep(3.0)  # a long read, on the shared threads
        return real(params, *rest)

    monkeypatch.setattr(read_file, "_resolve_and_read", spied)
    async with connect(ws) as c:

        async def read_big(name: str) -> None:
            await call(c, "ReadFile", path=name)

        async with anyio.create_task_group() as tg:
            for name in ("big1.txt", "big2.txt"):
                tg.start_soon(read_big, name)
            await anyio.sleep(0.5)  # both are in their long read now
            start = time.monotonic()
            out = texts(await call(c, "ReadFile", path="small.txt"))
            waited = time.monotonic() - start
    assert out[0] == "     1\tsmall\n"
    assert waited < 2.0
    assert ("big1.txt", True) in phases and ("big1.txt", False) in phases
    assert ("small.txt", True) in phases and ("small.txt", False) not in phases
