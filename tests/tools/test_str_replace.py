"""StrReplaceFile through real clients: exact matches, byte-faithful edits, clear failures."""

from __future__ import annotations

import asyncio
import codecs
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import call, connect, text, texts, without_write_id

# Their writes are about something else: see tests/tools/test_read_guard.py for the guard.
pytestmark = pytest.mark.usefixtures("read_guard_off")


async def edit(ws: Path, mode: str, path: str, edits: Any, **kw: Any) -> Any:
    async with connect(ws, mode, **kw) as c:
        return await call(c, "StrReplaceFile", path=path, edit=edits)


async def test_single_edit_with_kimis_message(ws: Path, mode: str) -> None:
    (ws / "a.py").write_text("def f():\n    return 1\n")
    r = await edit(ws, mode, "a.py", {"old": "return 1", "new": "return 2"})
    assert not r.is_error
    assert [without_write_id(t) for t in texts(r)] == [
        "File successfully edited. Applied 1 edit(s) with 1 total replacement(s). Lines: +1 -1."
    ]
    assert (ws / "a.py").read_text() == "def f():\n    return 2\n"
    assert r.structured_content is None  # text only (SPEC §1)


async def test_edits_apply_in_order_and_count_on_the_sequential_state(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("a b\n")
    edits = [
        {"old": "a", "new": "b", "replace_all": True},
        {"old": "b", "new": "c", "replace_all": True},  # sees "b b": two matches, not one
    ]
    r = await edit(ws, mode, "a.txt", edits)
    assert "Applied 2 edit(s) with 3 total replacement(s)." in text(r)
    assert (ws / "a.txt").read_text() == "c c\n"


async def test_empty_old_and_old_equal_new_are_errors(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("x\n")
    r1 = await edit(ws, mode, "a.txt", {"old": "", "new": "y"})
    r2 = await edit(ws, mode, "a.txt", [{"old": "x", "new": "z"}, {"old": "q", "new": "q"}])
    assert r1.is_error and text(r1).startswith("`old` is empty.")
    assert r2.is_error and text(r2).startswith("`old` of edit 2 (of 2) is the same as its `new`")
    assert (ws / "a.txt").read_text() == "x\n"


async def test_not_found_names_the_edit_and_shows_the_closest_region(ws: Path, mode: str) -> None:
    lines = [f"line {i}" for i in range(1, 21)]
    lines[11] = "    total = price * quantity"
    (ws / "a.py").write_text("\n".join(lines) + "\n")
    edits = [
        {"old": "line 1\n", "new": "LINE 1\n"},
        {"old": "total = price * qty", "new": "total = 0"},
    ]
    r = await edit(ws, mode, "a.py", edits)
    assert r.is_error
    message = text(r)
    assert "the old string of edit 2 (of 2) was not found in `a.py`" in message
    assert "must match the text as edit 1 left it" in message
    assert "    12\t    total = price * quantity" in message
    assert (ws / "a.py").read_text().startswith("line 1\n")  # edit 1 was not written either


async def test_not_found_without_anything_similar_says_so(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("alpha\nbeta\n")
    r = await edit(ws, mode, "a.txt", {"old": "zzzzqqqq", "new": "y"})
    assert r.is_error and "No replacements were made: the old string was not found" in text(r)


async def test_multiple_matches_need_replace_all_and_are_listed(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("x = 1\ny = 2\nx = 1\n\nx = 1\n")
    r = await edit(ws, mode, "a.txt", {"old": "x = 1", "new": "x = 9"})
    assert r.is_error and "occurs 3 times in `a.txt` (at lines 1, 3, 5)" in text(r)
    assert (ws / "a.txt").read_text() == "x = 1\ny = 2\nx = 1\n\nx = 1\n"
    r = await edit(ws, mode, "a.txt", {"old": "x = 1", "new": "x = 9", "replace_all": True})
    assert "with 3 total replacement(s)" in text(r)
    assert (ws / "a.txt").read_text() == "x = 9\ny = 2\nx = 9\n\nx = 9\n"


async def test_lf_old_matches_a_crlf_file_and_the_new_text_gets_crlf(ws: Path, mode: str) -> None:
    (ws / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    r = await edit(ws, mode, "w.txt", {"old": "one\ntwo", "new": "ONE\nTWO\nTWO-B"})
    assert not r.is_error, text(r)
    assert "file uses CRLF (\\r\\n); edit 1 matched and written with CRLF." in text(r)
    assert (ws / "w.txt").read_bytes() == b"ONE\r\nTWO\r\nTWO-B\r\nthree\r\n"


async def test_mixed_endings_bom_and_invalid_bytes_survive_outside_the_edit(ws: Path, mode: str) -> None:
    body = b"crlf line\r\nlf line\nbad \xff\xfe\x80 bytes\r\nold word\nlast \xc3 line no eol"
    (ws / "m.txt").write_bytes(codecs.BOM_UTF8 + body)
    r = await edit(ws, mode, "m.txt", {"old": "old word", "new": "new word"})
    assert not r.is_error, text(r)
    assert (ws / "m.txt").read_bytes() == codecs.BOM_UTF8 + body.replace(b"old word", b"new word")


async def test_crlf_old_matches_lf_text_in_a_mixed_file(ws: Path) -> None:
    (ws / "m.txt").write_bytes(b"a\r\nb\nc\n")
    r = await edit(ws, "auto", "m.txt", {"old": "b\r\nc", "new": "B\r\nC"})
    assert not r.is_error, text(r)
    assert (ws / "m.txt").read_bytes() == b"a\r\nB\nC\n"


async def test_utf16_file_is_edited_in_utf16(ws: Path, mode: str) -> None:
    (ws / "u.txt").write_bytes("grüße\r\nwelt\r\n".encode("utf-16"))
    r = await edit(ws, mode, "u.txt", {"old": "welt", "new": "Welt"})
    assert not r.is_error, text(r)
    assert (ws / "u.txt").read_bytes() == "grüße\r\nWelt\r\n".encode("utf-16")


async def test_missing_file_directory_and_binary_are_errors(ws: Path, mode: str) -> None:
    (ws / "d").mkdir()
    png = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x00" * 64
    (ws / "i.png").write_bytes(png)
    r1 = await edit(ws, mode, "nope.txt", {"old": "a", "new": "b"})
    r2 = await edit(ws, mode, "d", {"old": "a", "new": "b"})
    r3 = await edit(ws, mode, "i.png", {"old": "IHDR", "new": "IHDX"})
    assert text(r1) == "`nope.txt` does not exist."
    assert text(r2) == "`d` is not a file."
    assert r3.is_error and "not a text file" in text(r3)
    assert (ws / "i.png").read_bytes() == png


async def test_symlinked_file_is_edited_through_the_link(ws: Path, mode: str) -> None:
    (ws / "real.txt").write_text("v1\n")
    (ws / "alias.txt").symlink_to("real.txt")
    r = await edit(ws, mode, "alias.txt", {"old": "v1", "new": "v2"})
    assert not r.is_error, text(r)
    assert (ws / "alias.txt").is_symlink() and (ws / "real.txt").read_text() == "v2\n"


async def test_edits_that_cancel_out_write_nothing(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("a\n")
    r = await edit(ws, mode, "a.txt", [{"old": "a", "new": "b"}, {"old": "b", "new": "a"}])
    assert r.is_error and "exactly as it was" in text(r)


async def test_a_thousand_edits_in_one_call_all_apply(ws: Path, mode: str) -> None:
    (ws / "big.txt").write_text("".join(f"<{i}>\n" for i in range(1000)))
    edits = [{"old": f"<{i}>\n", "new": f"[{i}]\n"} for i in range(1000)]
    r = await edit(ws, mode, "big.txt", edits)
    assert "Applied 1000 edit(s) with 1000 total replacement(s)." in text(r)
    assert (ws / "big.txt").read_text() == "".join(f"[{i}]\n" for i in range(1000))


async def test_fifty_concurrent_edits_to_one_file_all_land(ws: Path, mode: str) -> None:
    (ws / "c.txt").write_text("".join(f"slot {i:02d}: empty\n" for i in range(50)))
    async with connect(ws, mode, approval="auto") as c:
        calls = [
            call(
                c,
                "StrReplaceFile",
                path="c.txt",
                edit={"old": f"slot {i:02d}: empty", "new": f"slot {i:02d}: filled by {i}"},
            )
            for i in range(50)
        ]
        results = await asyncio.gather(*calls)
    assert all(not r.is_error for r in results), [text(r) for r in results if r.is_error]
    assert (ws / "c.txt").read_text() == "".join(f"slot {i:02d}: filled by {i}\n" for i in range(50))


async def test_old_string_named_like_claude_code_is_refused(ws: Path) -> None:
    (ws / "a.txt").write_text("x\n")
    async with connect(ws) as c:
        r = await call(c, "StrReplaceFile", path="a.txt", edit={"old_string": "x", "new_string": "y"})
    assert r.is_error and "Error validating JSON arguments" in text(r)
    assert (ws / "a.txt").read_text() == "x\n"


# --- boundaries the planted bugs of issue 17 crossed ----------------------------------------


async def test_a_multi_line_new_in_a_pure_crlf_file_is_written_with_crlf(ws: Path, mode: str) -> None:
    """`old` matches as it is (no line break in it), `new` has LFs: the file stays pure CRLF."""
    (ws / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    r = await edit(ws, mode, "w.txt", {"old": "two", "new": "TWO\nTWO-B\nTWO-C"})
    assert not r.is_error, text(r)
    assert (ws / "w.txt").read_bytes() == b"one\r\nTWO\r\nTWO-B\r\nTWO-C\r\nthree\r\n"
    assert "edit 1 matched and written with CRLF." in text(r)


async def test_a_multi_line_new_in_a_mixed_file_is_written_as_given(ws: Path) -> None:
    """The other side of the boundary: a file that already mixes endings is not converted."""
    (ws / "m.txt").write_bytes(b"a\r\nb\nc\n")
    r = await edit(ws, "auto", "m.txt", {"old": "b", "new": "B\nB2"})
    assert not r.is_error, text(r)
    assert (ws / "m.txt").read_bytes() == b"a\r\nB\nB2\nc\n"
    assert "Line endings" not in text(r)


async def test_one_edit_of_a_large_file_holds_it_once(ws: Path, mode: str) -> None:
    """Issue 13.3: the edit is spliced into the bytes read and written from the pieces, and the
    stale check compares in blocks: Python never holds a second copy of the file (the old route
    held the old bytes, the replaced copy and hashed both: over 2x the file at its peak). Beside
    the file, a few MiB that do not grow with it (blocks read to compare, 1 MiB each; the
    history's check of the inode it keeps and the stale check may run at once): 1.07-1.13x a
    32 MB file."""
    line = b"int x = 0; /* filler of a large source file */\n"
    half = line * ((4 << 20) // len(line))
    (ws / "big.c").write_bytes(half + b"int marker = 1;\n" + half)
    size = (ws / "big.c").stat().st_size
    async with connect(ws, mode, approval="auto") as c:
        await call(c, "StrReplaceFile", path="big.c", edit={"old": "marker = 1", "new": "marker = 2"})
        tracemalloc.start()
        try:
            r = await call(c, "StrReplaceFile", path="big.c", edit={"old": "marker = 2", "new": "marker = 3"})
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert not r.is_error and "Lines: +1 -1." in text(r)
    assert (ws / "big.c").read_bytes() == half + b"int marker = 3;\n" + half
    assert peak < size + (5 << 20), f"peak {peak / size:.2f}x the file"  # a second copy: + 8 MiB
