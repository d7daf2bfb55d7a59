"""ReadFile on files large enough for the line-count paths: wc -l, checkpoints, the caches.

Through a real MCP client (in-memory, both eras), on real files of 1-17 MiB.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from filegate.fsio import lines
from tests.conftest import call, connect, texts

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
        monkeypatch.setattr(lines, "_wc_path", [None])
    n = big_file(ws / "big.log", lines.WC_MIN_BYTES + 1)
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
    n = big_file(path, lines.WC_MIN_BYTES + 1)
    _, msg = await read(ws, mode, path="grow.log", line_offset=-1)
    assert f"Total lines in file: {n}." in msg
    with path.open("a") as f:
        f.write("one more\nand a last line without a break")
    os.utime(path, ns=(0, path.stat().st_mtime_ns + 1_000_000))  # even within one clock tick
    out, msg = await read(ws, mode, path="grow.log", line_offset=-2)
    assert out == f"{n + 1:6d}\tone more\n{n + 2:6d}\tand a last line without a break"
    assert f"Total lines in file: {n + 2}." in msg
