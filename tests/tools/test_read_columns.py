"""ReadFile's column_offset (SPEC §8.7): a line longer than 2,000 characters read to its end."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import call, connect, text, texts

CONTINUE = re.compile(r" Continue line (\d+) at column_offset=(\d+)\.")


async def read_line_in_windows(ws: Path, name: str, line: int = 1, **kw: object) -> tuple[str, int]:
    """The whole of line ``line`` as windows give it, following each cut's column_offset."""
    got, column, calls = [], 0, 0
    async with connect(ws, "auto", **kw) as c:
        while True:
            r = await call(c, "ReadFile", path=name, line_offset=line, n_lines=1, column_offset=column)
            out, msg = texts(r)
            calls += 1
            body = out.split("\t", 1)[1].removesuffix("\n")
            cut = CONTINUE.search(msg)
            if cut is None:
                got.append(body)
                return "".join(got), calls
            assert int(cut.group(1)) == line
            got.append(body.removesuffix("..."))
            column = int(cut.group(2))


@pytest.mark.slow  # 501 calls
async def test_a_one_megabyte_line_is_read_to_its_end_in_windows(ws: Path) -> None:
    line = "".join(f"{i:07d}," for i in range(125_000))  # 1,000,000 characters, no line break
    (ws / "min.json").write_text(line)
    whole, calls = await read_line_in_windows(ws, "min.json")
    assert whole == line and calls == 501


async def test_columns_count_characters_not_bytes_and_the_next_line_follows(ws: Path) -> None:
    line = "été✓" * 1500  # 6,000 characters, 13,500 bytes
    (ws / "u.txt").write_text("first\n" + line + "\nlast\n")
    whole, calls = await read_line_in_windows(ws, "u.txt", line=2)
    assert whole == line and calls == 4
    async with connect(ws, "auto") as c:
        out, msg = texts(await call(c, "ReadFile", path="u.txt", line_offset=2, column_offset=5999))
    assert out == "     2\t✓\n     3\tlast\n"
    assert msg == (
        "2 lines read from file starting from line 2. Total lines in file: 3. End of file reached."
        " Line 2 is shown from column_offset=5999."
    )


async def test_columns_in_a_legacy_codec_and_past_the_end_of_a_line(ws: Path) -> None:
    (ws / "l1.txt").write_bytes(b"caf\xe9 au lait\r\nx\r\n")
    async with connect(ws, "auto", legacy_encoding="cp1252") as c:
        out1, _ = texts(await call(c, "ReadFile", path="l1.txt", column_offset=3, n_lines=1))
        out2, _ = texts(await call(c, "ReadFile", path="l1.txt", column_offset=99, n_lines=1))
        bad = await call(c, "ReadFile", path="l1.txt", line_offset=-1, column_offset=2)
    assert out1 == "     1\té au lait\n" and out2 == "     1\t\n"
    assert bad.is_error and "column_offset needs a positive line_offset" in text(bad)
