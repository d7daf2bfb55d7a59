"""ReadFile on files large enough for the line-count paths: wc -l, checkpoints, the caches.

Through a real MCP client (in-memory, both eras), on real files of 1-17 MiB.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from filegate.fsio import linecount, lines
from tests.conftest import MODES_LEGACY_SLOW, call, connect, texts
from tests.fsio.test_lines import sparse_file


@pytest.fixture(params=MODES_LEGACY_SLOW)
def mode(request: pytest.FixtureRequest) -> str:
    """Both eras; the handshake-era twin in the slow set (tests/conftest.py says why)."""
    return str(request.param)


LINE = "0123456789abcdef" * 6 + "line {:08d}\n"  # 110 bytes


def big_file(path: Path, min_bytes: int) -> int:
    """Numbered fixed-width lines; returns how many."""
    n = min_bytes // len(LINE.format(0)) + 1
    with path.open("w") as f:
        f.writelines(LINE.format(i) for i in range(1, n + 1))
    return n


async def read(ws: Path, mode: str, **args: object) -> tuple[str, str]:
    async with connect(ws, mode) as c:
        r = await call(c, "ReadFile", **args)
        assert not r.is_error, texts(r)
        out, msg = texts(r)
        return out, msg


async def test_a_line_across_a_megabyte_boundary_is_read_whole(ws: Path, mode: str) -> None:
    # Line 9533 spans bytes 1,048,520-1,048,630: across the first 1 MiB checkpoint.
    big_file(ws / "a.log", 2 << 20)
    await read(ws, mode, path="a.log", line_offset=-1)  # count first: checkpoints exist
    for n in (9532, 9533, 9534):
        out, _ = await read(ws, mode, path="a.log", line_offset=n, n_lines=1)
        assert out == f"{n:6d}\t" + LINE.format(n)


@pytest.mark.parametrize("wc", [True, False], ids=["wc", "python"])
async def test_big_file_counts_tails_and_windows_alike_with_or_without_wc(
    ws: Path, mode: str, wc: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not wc:
        monkeypatch.setattr(linecount, "_wc_path", [None])
    n = big_file(ws / "big.log", linecount.WC_MIN_BYTES + 1)
    out, msg = await read(ws, mode, path="big.log", line_offset=-2)
    assert out == f"{n - 1:6d}\t{LINE.format(n - 1)}{n:6d}\t{LINE.format(n)}"
    assert (
        msg
        == f"2 lines read from file starting from line {n - 1}. Total lines in file: {n}. End of file reached."
    )
    middle = n // 2
    out, msg = await read(ws, mode, path="big.log", line_offset=middle, n_lines=3)
    assert out == "".join(f"{i:6d}\t{LINE.format(i)}" for i in range(middle, middle + 3))
    assert msg == f"3 lines read from file starting from line {middle}. Total lines in file: {n}."


async def test_an_appended_file_is_counted_again(ws: Path, mode: str) -> None:
    path = ws / "grow.log"
    n = big_file(path, linecount.WC_MIN_BYTES + 1)
    _, msg = await read(ws, mode, path="grow.log", line_offset=-1)
    assert f"Total lines in file: {n}." in msg
    with path.open("a") as f:
        f.write("one more\nand a last line without a break")
    os.utime(path, ns=(0, path.stat().st_mtime_ns + 1_000_000))  # even within one clock tick
    out, msg = await read(ws, mode, path="grow.log", line_offset=-2)
    assert out == f"{n + 1:6d}\tone more\n{n + 2:6d}\tand a last line without a break\n"
    assert f"Total lines in file: {n + 2}." in msg


# --- issue 11.4, 18.6, 18.10: honest numbers, deadlines, holes, abandoned reads --------------

# Hang guard for reads that must answer quickly: generous, a regression hits it by minutes.
HANG_GUARD_S = 60


async def test_a_tail_of_a_sparse_file_is_numbered_from_its_real_total(ws: Path, mode: str) -> None:
    # 20,000 lines, a 1 TiB hole, 10 lines: the hole and "tail 1" are line 20,001. Counting by
    # reading the hole's zeros cannot finish in any time budget: holes must be skipped.
    sparse_file(ws / "sparse.log", 20_000, 1 << 40, 10)
    with anyio.fail_after(HANG_GUARD_S):
        async with connect(ws, mode) as c:
            r = await call(c, "ReadFile", path="sparse.log", line_offset=-3)
    out, msg = texts(r)
    assert out == " 20008\ttail 8\n 20009\ttail 9\n 20010\ttail 10\n"
    assert (
        msg
        == "3 lines read from file starting from line 20008. Total lines in file: 20010. End of file reached."
    )
    assert r.structured_content is None


async def test_a_terabyte_hole_answers_offset_and_tail_reads_quickly(ws: Path, mode: str) -> None:
    sparse_file(ws / "hole.log", 2000, 1 << 40, 0)  # 36 KB on disk
    with anyio.fail_after(HANG_GUARD_S):
        async with connect(ws, mode) as c:
            r = await call(c, "ReadFile", path="hole.log", line_offset=1999, n_lines=3)
            out, msg = texts(r)
            assert out.startswith("  1999\tline 1999\n  2000\tline 2000\n  2001\t\0\0\0")
            assert out.endswith("\0...\n")  # the zeros of the hole, cut like any long line
            assert msg == (
                "3 lines read from file starting from line 1999. Total lines in file: 2001."
                " Lines [2001] were truncated. Continue line 2001 at column_offset=1997."  # SPEC §8.7
            )
            r = await call(c, "ReadFile", path="hole.log", line_offset=-2)
            out, msg = texts(r)
            assert out.startswith("  2000\tline 2000\n  2001\t\0")
            assert "Total lines in file: 2001. End of file reached." in msg


async def test_a_tail_whose_count_cannot_finish_prints_no_absolute_numbers(
    ws: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No time at all for counting (a huge file on a slow disk, made small here).
    monkeypatch.setattr(linecount, "COUNT_BUDGET_S", 0.0)
    monkeypatch.setattr(linecount, "FALLBACK_BUDGET_S", 0.0)
    (ws / "a.log").write_text("".join(f"l{i}\n" for i in range(1, 51)))
    async with connect(ws, mode) as c:
        r = await call(c, "ReadFile", path="a.log", line_offset=-3)
        out, msg = texts(r)
        assert out == "    -3\tl48\n    -2\tl49\n    -1\tl50\n"
        assert msg == (
            "3 lines read from the end of the file, numbered from the end (-1 is the last line)."
            " Total lines in file: at least 3 (counting stopped at the time limit). End of file reached."
        )
        r = await call(c, "ReadFile", path="a.log", line_offset=-5, n_lines=2)
        assert texts(r) == [
            "    -5\tl46\n    -4\tl47\n",
            "2 lines read from the end of the file, numbered from the end (-1 is the last line)."
            " Total lines in file: at least 5 (counting stopped at the time limit).",
        ]
        # Forward numbers are known from the start; reading to the end gives the total too.
        r = await call(c, "ReadFile", path="a.log", line_offset=49)
        assert texts(r) == ["    49\tl49\n    50\tl50\n",
                            "2 lines read from file starting from line 49. Total lines in file: 50. End of file reached."]  # fmt: skip


APPENDER = """
import sys
n, path = int(sys.argv[1]), sys.argv[2]
line = "0123456789abcdef" * 6 + "line {:08d}\\n"
with open(path, "a") as f:
    for i in range(n + 1, n + 3_000_000):  # bounded: ~330 MB at most
        f.write(line.format(i))
        if i % 64 == 0:
            f.flush()
"""


async def test_a_tail_of_a_log_being_appended_is_numbered_right(ws: Path, mode: str) -> None:
    path = ws / "grow.log"
    n = big_file(path, linecount.WC_MIN_BYTES + 1)  # counted by wc, which reads to the current end
    writer = subprocess.Popen([sys.executable, "-c", APPENDER, str(n), str(path)])
    try:
        async with connect(ws, mode) as c:
            for _ in range(5):
                r = await call(c, "ReadFile", path="grow.log", line_offset=-2)
                out, msg = texts(r)
                rows = out.splitlines()
                assert len(rows) == 2
                for row in rows:  # each line holds its own number: the printed one must match
                    number, body = row.split("\t")
                    whole = LINE.format(int(number)).rstrip("\n")
                    # The last line may be caught half-written (no line break yet).
                    assert body == whole or (row is rows[-1] and whole.startswith(body))
                total = int(msg.split("Total lines in file: ")[1].split(".")[0])
                assert total == int(rows[-1].split("\t")[0])
    finally:
        writer.kill()
        writer.wait()


@pytest.mark.slow
async def test_abandoned_reads_do_not_keep_burning_cpu(ws: Path) -> None:
    # The client gives up on 8 reads of a file with a 1 TiB hole after 2 s each (fastmcp then
    # cancels the call on the server). Afterwards this process (the in-memory server) must be
    # nearly idle: 8 reads still scanning zeros would use a core or more.
    sparse_file(ws / "hole.log", 2000, 1 << 40, 0)
    with anyio.fail_after(HANG_GUARD_S):
        async with connect(ws, "auto") as c:

            async def give_up(offset: int) -> None:
                with contextlib.suppress(Exception):
                    await c.call_tool("ReadFile", {"path": "hole.log", "line_offset": offset}, timeout=2)

            async with anyio.create_task_group() as tg:
                for i in range(8):
                    tg.start_soon(give_up, 2001 + i if i % 2 else -1 - i)
            before = time.process_time()
            await anyio.sleep(2)  # a measuring window, not an ordering
            used = time.process_time() - before
    assert used < 1.0, f"{used:.2f} s of CPU in 2 s after the reads were abandoned"


async def test_an_offset_not_reached_in_time_says_so(
    ws: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lines, "SCAN_BUDGET_S", 0.0)  # no time at all: a disk that hangs
    (ws / "a.log").write_text("x\n" * 600_000)  # more than one chunk before line 500,000
    async with connect(ws, mode) as c:
        r = await call(c, "ReadFile", path="a.log", line_offset=500_000)
        assert not r.is_error
        (msg,) = texts(r)
        assert msg.startswith("No lines read from file. Total lines in file: at least ")
        assert msg.endswith("Line 500000 was not reached within the time limit (0 lines were passed).")
