"""Integer parameters at and past the 64-bit edge (issue 22 item 7), through a real client.

JSON integers have no bound; each must give a proper answer (SPEC §4 Grep: an offset past the
end is not an error), never the bare "Error calling tool" of an exception inside the tool."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import call, connect, text

HUGE = [2**63 - 1, 2**63, 2**64 + 5, 10**30]


@pytest.mark.parametrize("value", HUGE)
async def test_grep_offset_and_head_limit_past_any_index(ws: Path, mode: str, value: int) -> None:
    (ws / "a.txt").write_text("hello\nworld\n")
    async with connect(ws, mode) as c:
        for output_mode in ("content", "files_with_matches", "count_matches"):
            far = await call(c, "Grep", pattern="o", output_mode=output_mode, offset=value, head_limit=5)
            wide = await call(c, "Grep", pattern="o", output_mode=output_mode, offset=1, head_limit=value)
            assert not far.is_error, text(far)
            assert f"No results at offset {value}" in text(far), text(far)
            assert not wide.is_error, text(wide)
            assert "Error calling tool" not in text(wide)


@pytest.mark.parametrize("value", HUGE)
async def test_grep_context_lines_past_rg_integers(ws: Path, mode: str, value: int) -> None:
    (ws / "a.txt").write_text("one\nneedle\nthree\n")
    async with connect(ws, mode) as c:
        for flag, first, last in (("-A", 1, 3), ("-B", 0, 2), ("-C", 0, 3)):
            r = await call(c, "Grep", pattern="needle", output_mode="content", **{flag: value})
            assert not r.is_error, (flag, text(r))
            want = ["a.txt-1-one", "a.txt:2:needle", "a.txt-3-three"][first:last]
            assert text(r).splitlines()[: len(want)] == want, text(r)


@pytest.mark.parametrize("value", HUGE)
async def test_read_file_and_glob_take_huge_integers(ws: Path, mode: str, value: int) -> None:
    (ws / "a.txt").write_text("hello\nworld\n")
    async with connect(ws, mode) as c:
        far = await call(c, "ReadFile", path="a.txt", line_offset=value)
        many = await call(c, "ReadFile", path="a.txt", n_lines=value)
        listed = await call(c, "Glob", pattern="*.txt")
    assert not far.is_error and "No lines read from file" in text(far), text(far)
    assert not many.is_error and "hello" in text(many), text(many)
    assert not listed.is_error and "a.txt" in text(listed)
