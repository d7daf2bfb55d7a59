"""A read guard that does not loop (SPEC §8.3): a file changed in place since it was read (a
formatter, a build) can still be edited away from the lines that changed; an edit that
touches them is refused with those lines as they are now, and that refusal counts as a read.
The plain guard: test_read_guard.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from filegate.tools.changed_lines import changed_lines, ranges, touched_lines
from filegate.tools.readguard import INDEX_MAX_BYTES, ReadLedger, line_index
from tests.conftest import call, connect, text, without_write_id

SOURCE = "".join(f"line {n}\n" for n in range(1, 21))


def rewrite_in_place(p: Path, data: str) -> None:
    """What a formatter that writes in place does: same inode, new content."""
    with open(p, "r+") as f:
        f.write(data)
        f.truncate()


async def test_an_edit_away_from_the_lines_a_formatter_changed_is_applied_and_says_so(
    ws: Path, mode: str
) -> None:
    p = ws / "a.py"
    p.write_text(SOURCE)
    async with connect(ws, mode, approval="auto") as c:
        await call(c, "ReadFile", path="a.py")
        rewrite_in_place(p, SOURCE.replace("line 3\n", "line  3\n").replace("line 4\n", "line 4 # fmt\n"))
        r = await call(c, "StrReplaceFile", path="a.py", edit={"old": "line 15\n", "new": "line XV\n"})
    assert not r.is_error, text(r)
    assert without_write_id(text(r)).endswith(
        "`a.py` changed on disk since it was read (now different: lines 3-4); the edits did not touch "
        "those lines, so they were applied."
    )
    assert p.read_text() == SOURCE.replace("line 3\n", "line  3\n").replace(
        "line 4\n", "line 4 # fmt\n"
    ).replace("line 15\n", "line XV\n")


async def test_an_edit_touching_a_changed_line_is_refused_with_it_shown_and_that_counts_as_a_read(
    ws: Path, mode: str
) -> None:
    p = ws / "a.py"
    p.write_text(SOURCE)
    async with connect(ws, mode, approval="auto") as c:
        await call(c, "ReadFile", path="a.py")
        rewrite_in_place(p, SOURCE.replace("line 7\n", "line 7  # changed\n"))
        r = await call(c, "StrReplaceFile", path="a.py", edit={"old": "line 6\nline 7", "new": "six\nseven"})
        assert r.is_error
        assert text(r) == (
            "`a.py` changed on disk since it was read (now different: line 7), and the edit does not "
            "apply away from those lines (it touches line 7). Nothing was written. The changed lines "
            "are shown below as they are now; this counts as reading them, so write the edit against them."
            "\n\n     7\tline 7  # changed"
        )
        # The second call, written against what was shown, lands: no ReadFile between.
        again = await call(
            c, "StrReplaceFile", path="a.py", edit={"old": "line 7  # changed", "new": "seven"}
        )
    assert not again.is_error, text(again)
    assert p.read_text() == SOURCE.replace("line 7\n", "seven\n")


async def test_an_old_text_the_change_removed_is_refused_with_the_changed_lines(ws: Path) -> None:
    p = ws / "a.py"
    p.write_text(SOURCE)
    async with connect(ws, "auto", approval="auto") as c:
        await call(c, "ReadFile", path="a.py")
        rewrite_in_place(p, SOURCE.replace("line 9\n", ""))
        r = await call(c, "StrReplaceFile", path="a.py", edit={"old": "line 9\n", "new": "nine\n"})
    assert r.is_error and "(its old text does not match the file as it is now)" in text(r)
    assert text(r).endswith("\n     9\tline 10")  # the line that now follows the deleted one


async def test_a_file_rewritten_on_every_save_converges_within_two_calls(ws: Path) -> None:
    """A watcher that rewrites the file after each write: each edit lands within two calls."""
    p = ws / "a.py"
    p.write_text(SOURCE)
    calls = 0
    async with connect(ws, "auto", approval="auto") as c:
        await call(c, "ReadFile", path="a.py")
        for n in (2, 8, 14, 20):
            for attempt in (1, 2):
                calls += 1
                old = f"line {n}\n" if attempt == 1 else f"line {n} #\n"
                r = await call(c, "StrReplaceFile", path="a.py", edit={"old": old, "new": f"L{n}\n"})
                if not r.is_error:
                    break
            assert not r.is_error, text(r)
            # The formatter, in place: it rewrites the line the next edit is about.
            data = p.read_text()
            rewrite_in_place(p, data.replace(f"line {n + 6}\n", f"line {n + 6} #\n"))
    # The first edit lands at once; each later one is refused once (the line it meant changed,
    # shown) and lands on its second call, with no ReadFile between.
    assert calls == 1 + 2 * 3


async def test_an_overwrite_of_a_changed_file_still_needs_a_fresh_read(ws: Path) -> None:
    p = ws / "a.py"
    p.write_text(SOURCE)
    async with connect(ws, "auto", approval="auto") as c:
        await call(c, "ReadFile", path="a.py")
        rewrite_in_place(p, SOURCE.replace("line 1\n", "line one\n"))
        r = await call(c, "WriteFile", path="a.py", content="new\n")
    assert r.is_error and "changed since it was read: read it again" in text(r)


@pytest.mark.parametrize("how", ["replaced", "deleted"])
async def test_a_replaced_or_deleted_file_keeps_the_plain_refusal(ws: Path, how: str) -> None:
    p = ws / "a.py"
    p.write_text(SOURCE)
    async with connect(ws, "auto", approval="auto") as c:
        await call(c, "ReadFile", path="a.py")
        (ws / "tmp").write_text(SOURCE.replace("line 1\n", "line one\n"))
        if how == "replaced":
            os.replace(ws / "tmp", p)  # a new inode
        else:
            p.unlink()
        r = await call(c, "StrReplaceFile", path="a.py", edit={"old": "line 15\n", "new": "line XV\n"})
    assert r.is_error
    if how == "replaced":
        assert "changed since it was read: read it again" in text(r)
        assert p.read_text() == SOURCE.replace("line 1\n", "line one\n")
    else:
        assert "does not exist" in text(r) and not p.exists()


async def test_a_file_past_the_index_limit_keeps_the_plain_refusal(ws: Path) -> None:
    p = ws / "big.txt"
    p.write_bytes(b"x" * 80 + b"\n" + b"y\n" * (INDEX_MAX_BYTES // 2))
    async with connect(ws, "auto", approval="auto") as c:
        await call(c, "ReadFile", path="big.txt", n_lines=1)
        with open(p, "r+b") as f:
            f.write(b"z")
        r = await call(c, "StrReplaceFile", path="big.txt", edit={"old": "x\ny\n", "new": "x\nY\n"})
    assert r.is_error and "changed since it was read: read it again" in text(r)


async def test_changed_lines_past_the_result_budget_do_not_count_as_a_read(ws: Path) -> None:
    p = ws / "a.txt"
    p.write_text("".join(f"{n}\n" for n in range(3000)))
    async with connect(ws, "auto", approval="auto", result_budget=4096) as c:
        await call(c, "ReadFile", path="a.txt")
        rewrite_in_place(p, "".join(f"{n} changed\n" for n in range(3000)))
        first = await call(c, "StrReplaceFile", path="a.txt", edit={"old": "5 changed\n", "new": "five\n"})
        second = await call(c, "StrReplaceFile", path="a.txt", edit={"old": "5 changed\n", "new": "five\n"})
    assert first.is_error and "Only some of the changed lines fit below" in text(first)
    assert len(text(first)) <= 4096
    assert second.is_error and "Only some of the changed lines fit below" in text(second)


# --- the pieces ------------------------------------------------------------------------------


def test_ten_thousand_files_read_keep_the_ledger_bounded() -> None:
    ledger = ReadLedger("in this session", capacity=1024, index_budget=50_000)
    body = b"".join(b"line %d\n" % n for n in range(100))
    for n in range(10_000):
        ledger.saw(Path(f"/w/{n}.py"), (1, n, len(body), 0, 0), body)
    assert len(ledger) == 1024
    assert ledger.indexed_lines <= 50_000
    # The most recent keep their index; the oldest still remembered keep only their identity.
    assert ledger.index_since(Path("/w/9999.py"), (1, 9999, 0, 1, 1)) is not None
    assert ledger.index_since(Path("/w/8976.py"), (1, 8976, 0, 1, 1)) is None
    assert ledger.verdict(Path("/w/8976.py"), (1, 8976, len(body), 0, 0)) == "read"


def test_an_index_is_only_for_the_same_inode() -> None:
    ledger = ReadLedger("in this session")
    ledger.saw(Path("/w/a"), (1, 2, 3, 4, 5), b"a\nb\n")
    assert ledger.index_since(Path("/w/a"), (1, 2, 9, 9, 9)) is not None
    assert ledger.index_since(Path("/w/a"), (1, 3, 3, 4, 5)) is None
    assert ledger.index_since(Path("/w/a"), (2, 2, 3, 4, 5)) is None
    assert ledger.index_since(Path("/w/b"), (1, 2, 3, 4, 5)) is None


def test_no_index_for_utf16_or_a_file_too_large() -> None:
    ledger = ReadLedger("in this session")
    ledger.saw(Path("/w/u"), (1, 2, 4, 4, 5), b"\xff\xfea\x00")
    ledger.saw(Path("/w/big"), (1, 3, INDEX_MAX_BYTES + 1, 4, 5), b"x")
    assert ledger.index_since(Path("/w/u"), (1, 2, 0, 0, 0)) is None
    assert ledger.index_since(Path("/w/big"), (1, 3, 0, 0, 0)) is None
    assert ledger.indexed_lines == 0


def test_changed_lines_are_numbered_in_the_file_as_it_is_now() -> None:
    before = line_index(b"a\nb\nc\nd\n")
    assert changed_lines(before, b"a\nb\nc\nd\n") == []
    assert changed_lines(before, b"a\nB\nc\nd\n") == [2]
    assert changed_lines(before, b"new\na\nb\nc\nd\n") == [1]
    assert changed_lines(before, b"a\nc\nd\n") == [2]  # b deleted: c follows it now
    assert changed_lines(before, b"a\nb\nc\n") == [4]  # the last line gone


def test_touched_lines_and_ranges() -> None:
    data = b"a\nbb\nccc\n"
    assert list(touched_lines(data, 0, 1)) == [1]
    assert list(touched_lines(data, 2, 5)) == [2]  # "bb\n": the line break is still line 2
    assert list(touched_lines(data, 1, 6)) == [1, 2, 3]
    assert list(touched_lines(data, 4, 4)) == [2]
    assert ranges([3]) == "line 3" and ranges([1, 2, 3, 7, 9, 10]) == "lines 1-3, 7, 9-10"
    assert ranges(list(range(1, 40, 2))).endswith(", …")
