"""A read guard that does not loop (SPEC §8.3): a file changed in place since it was read (a
formatter, a build) can still be edited away from the lines that changed; an edit that
touches them is refused with those lines as they are now, and that refusal counts as a read.
The plain guard: test_read_guard.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from filegate.policy.budget import tool_text_budget
from filegate.tools.readguard.changed_lines import changed_lines, ranges, touched_lines
from filegate.tools.readguard.ledger import INDEX_MAX_BYTES, ReadLedger, line_index
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
            "are shown below as they are now; this counts as reading them."
            "\n     7\tline 7  # changed\n" + WHOLE_STEP
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
    assert refusal(text(r)).endswith("\n     9\tline 10")  # the line that now follows the deleted one


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


# --- what each part of a refusal or notice shows (the mutation target `guardlines`) ---------


async def edit_after_in_place_change(
    ws: Path, before: bytes, now: bytes, old: str, new: str, **server: object
) -> tuple[str, bool, bytes]:
    """Read ``before``, rewrite it in place to ``now``, then one StrReplaceFile: its text,
    whether it was an error, and the file after it."""
    p = ws / "a.txt"
    p.write_bytes(before)
    async with connect(ws, "auto", approval="auto", **server) as c:
        await call(c, "ReadFile", path="a.txt")
        with open(p, "r+b") as f:
            f.write(now)
            f.truncate()
        r = await call(c, "StrReplaceFile", path="a.txt", edit={"old": old, "new": new})
    return refusal(text(r)) if r.is_error else without_write_id(text(r)), r.is_error, p.read_bytes()


WHOLE_STEP = "Write the edit against the changed lines above."


def refusal(said: str) -> str:
    """A §8.3 refusal without its last line, the next step (SPEC §9), which must be there: the
    one for lines shown whole, or the one that says to read the file again."""
    body, _, step = said.rpartition("\n")
    assert step == WHOLE_STEP or (
        step.startswith("Read it again with ReadFile(") and step.endswith("before you edit it.")
    ), said
    return body


async def test_a_change_among_many_repeated_lines_names_only_the_line_that_changed(ws: Path) -> None:
    # Past 200 lines difflib's "autojunk" heuristic would treat the frequent lines as junk and
    # call the ten lines after the change changed too.
    lines = ["}" if n % 2 else "" for n in range(200)] + [f"v{n}" for n in range(5)] + ["}", ""] * 5
    before = "\n".join(lines).encode()
    now = before.replace(b"v4", b"}")
    said, error, _ = await edit_after_in_place_change(ws, before, now, "v0", "V0")
    assert not error and "(now different: line 205)" in said


async def test_an_edit_below_a_changed_first_blank_line_is_applied(ws: Path) -> None:
    said, error, after = await edit_after_in_place_change(ws, b"\na\nb\n", b"\nA\nb\n", "b", "B")
    assert not error and "(now different: line 2)" in said and after == b"\nA\nB\n"


async def test_ten_changed_ranges_are_all_named(ws: Path) -> None:
    before = "".join(f"{n}\n" for n in range(1, 31)).encode()
    now = "".join(f"{n}{' x' if n % 3 == 0 else ''}\n" for n in range(1, 31)).encode()
    said, error, _ = await edit_after_in_place_change(ws, before, now, "1\n2\n", "one\n2\n")
    assert not error
    assert "(now different: lines 3, 6, 9, 12, 15, 18, 21, 24, 27, 30);" in said


async def test_an_edit_whose_first_line_changed_is_refused(ws: Path) -> None:
    before = SOURCE.encode()
    now = SOURCE.replace("line 6\n", "line 6 # fmt\n").encode()
    said, error, after = await edit_after_in_place_change(ws, before, now, "# fmt\nline 7", "#\nseven")
    assert error and "(it touches line 6)" in said and after == now


async def test_a_file_rewritten_in_place_unchanged_is_edited_with_no_notice(ws: Path) -> None:
    said, error, _ = await edit_after_in_place_change(ws, SOURCE.encode(), SOURCE.encode(), "line 9\n", "9\n")
    assert not error
    assert said == "File successfully edited. Applied 1 edit(s) with 1 total replacement(s). Lines: +1 -1."


async def test_changed_lines_are_shown_as_they_are_in_a_crlf_file(ws: Path) -> None:
    before = SOURCE.replace("\n", "\r\n").encode()
    now = before.replace(b"line 4\r\n", b"limit = MAX\r\n").replace(b"line 5\r\n", b"pad  \r\n")
    said, error, _ = await edit_after_in_place_change(ws, before, now, "MAX\r\npad", "M\r\np")
    assert error and said.endswith("\n     4\tlimit = MAX\n     5\tpad  ")


@pytest.mark.parametrize("length", [2000, 2001])
async def test_a_changed_line_longer_than_readfile_shows_is_cut_and_is_not_a_read(
    ws: Path, length: int
) -> None:
    long_line = "x" * (length - 1) + "y"
    now = SOURCE.replace("line 4\n", long_line + "\n").encode()
    said, error, _ = await edit_after_in_place_change(ws, SOURCE.encode(), now, "line 3\n" + long_line, "z")
    assert error
    if length == 2000:
        assert said.endswith(f"\n     4\t{long_line}") and "this counts as reading them" in said
    else:
        assert said.endswith(f"\n     4\t{long_line[:2000]}...") and "Only some of the changed lines" in said


@pytest.mark.parametrize(
    "edits",
    [
        [{"old": "line 3\n", "new": "three\n"}, {"old": "line 17\n", "new": "seventeen\n"}],
        # the second edit's span in the file as the first left it (a longer line before it)
        [{"old": "line 3\n", "new": "three\nand more\n"}, {"old": "line 17\n", "new": "x\n"}],
        [{"old": "line 1", "new": "LINE 1", "replace_all": True}],  # lines 1 and 10-19: not 10
        [{"old": "line 3\n", "new": "three\n"}, {"old": "  line 17\n", "new": "x\n"}],  # the ladder
        [{"old": "line 17\n", "new": "x\n"}, {"old": "line 3\n", "new": "three\n"}],  # out of order
    ],
)
async def test_several_edits_are_each_judged_by_their_own_span(
    ws: Path, edits: list[dict[str, object]]
) -> None:
    """SPEC §8.3: "no matched span touches a line that changed" — each edit's own span, not
    the stretch from the first to the last."""
    p = ws / "a.py"
    p.write_text(SOURCE.replace("line 10\n", "line 10 # fmt\n"))
    before = p.read_text()
    now = before.replace("line 10 # fmt\n", "line  10 # fmt\n")
    if edits[0].get("replace_all"):
        now = before.replace("line 10 # fmt\n", "lime 10\n")  # the changed line holds no "line 1"
    async with connect(ws, "auto", approval="auto") as c:
        await call(c, "ReadFile", path="a.py")
        rewrite_in_place(p, now)
        r = await call(c, "StrReplaceFile", path="a.py", edit=edits)
    assert not r.is_error, text(r)
    assert "(now different: line 10); the edits did not touch those lines" in text(r)


async def test_one_of_several_edits_touching_a_changed_line_is_refused(ws: Path) -> None:
    p = ws / "a.py"
    p.write_text(SOURCE)
    edits = [{"old": "line 3\n", "new": "three\n"}, {"old": "line 10\n", "new": "ten\n"}]
    async with connect(ws, "auto", approval="auto") as c:
        await call(c, "ReadFile", path="a.py")
        rewrite_in_place(p, SOURCE.replace("line 11\n", "line 11 #\n"))
        r = await call(c, "StrReplaceFile", path="a.py", edit=[*edits, {"old": "line 11 #", "new": "x"}])
    assert r.is_error and "(it touches line 11)" in text(r)


@pytest.mark.parametrize("length", [2000, 2001])
@pytest.mark.parametrize("kind", ["crlf", "non-ascii"])
async def test_shown_whole_is_judged_in_the_characters_the_cut_counts(
    ws: Path, kind: str, length: int
) -> None:
    """A 2,000-character line is shown whole, and the refusal counts as a read, whatever its
    bytes: a CR after it or two-byte characters in it (the cut counts characters)."""
    eol = "\r\n" if kind == "crlf" else "\n"
    char = "x" if kind == "crlf" else "é"
    long_line = char * (length - 1) + "y"
    before = "".join(f"line {n}{eol}" for n in range(1, 9))
    now = before.replace(f"line 4{eol}", long_line + eol)
    p = ws / "a.txt"
    p.write_bytes(before.encode())
    async with connect(ws, "auto", approval="auto") as c:
        await call(c, "ReadFile", path="a.txt")
        rewrite_in_place(p, now)
        refused = await call(
            c, "StrReplaceFile", path="a.txt", edit={"old": "y" + eol + "line 5", "new": "5"}
        )
        again = await call(c, "StrReplaceFile", path="a.txt", edit={"old": "y" + eol + "line 5", "new": "5"})
    assert refused.is_error
    if length == 2000:
        assert refusal(text(refused)).endswith(f"\n     4\t{long_line}")
        assert "this counts as reading them" in text(refused)
        assert not again.is_error, text(again)
    else:
        assert refusal(text(refused)).endswith(f"\n     4\t{long_line[:2000]}...")
        assert "Only some of the changed lines" in text(refused)
        assert again.is_error


@pytest.mark.parametrize("spare", [0, -1])
async def test_the_changed_lines_shown_fill_the_result_budget_exactly(ws: Path, spare: int) -> None:
    # Each row is "NNNNNN\t" + the line, plus its line break; REFUSAL_OVERHEAD is kept aside.
    row = 7 + 1500 + 1
    long = ["a" * 1499 + str(n) for n in (1, 2)]
    before = "".join(f"{n}\n" for n in range(1, 6)).encode()
    now = before.replace(b"1\n", long[0].encode() + b"\n", 1).replace(
        b"\n2\n", b"\n" + long[1].encode() + b"\n"
    )
    room = 1000 + 2 * row + spare  # what the tool may fill: the client's budget less its closing lines
    budget = next(b for b in range(room, 2 * room) if tool_text_budget(b) == room)
    said, error, _ = await edit_after_in_place_change(ws, before, now, "a1\n", "b1\n", result_budget=budget)
    assert error
    head = (
        "`a.txt` changed on disk since it was read (now different: lines 1-2), and the edit does not "
        "apply away from those lines (it touches line 1). Nothing was written. "
    )
    if spare == 0:
        assert said.startswith(head + "The changed lines are shown below")
        assert said.endswith(f"\n     1\t{long[0]}\n     2\t{long[1]}")
    else:
        assert said == head + f"Only some of the changed lines fit below.\n     1\t{long[0]}"


async def test_a_refusal_shown_whole_keeps_the_lines_for_the_next_change(ws: Path) -> None:
    """The refusal counts as a read with the lines' index: a second in-place change away from
    the edit is still told apart."""
    p = ws / "a.py"
    p.write_text(SOURCE)
    async with connect(ws, "auto", approval="auto") as c:
        await call(c, "ReadFile", path="a.py")
        rewrite_in_place(p, SOURCE.replace("line 7\n", "line 7 #\n"))
        refused = await call(c, "StrReplaceFile", path="a.py", edit={"old": "line 7\n", "new": "seven\n"})
        rewrite_in_place(p, p.read_text().replace("line 2\n", "line 2 #\n"))
        r = await call(c, "StrReplaceFile", path="a.py", edit={"old": "line 7 #\n", "new": "seven\n"})
    assert refused.is_error
    assert not r.is_error and "(now different: line 2)" in text(r)


async def test_changed_lines_of_a_legacy_encoded_file_are_shown_in_its_codec(ws: Path) -> None:
    """The changed lines "as they are now" (SPEC §8.3) are the text ReadFile would show, so the
    next edit can be written against them; outside UTF-8 every line counts as touched."""
    before = ("café\n" + SOURCE).encode("cp1252")
    now = before.replace(b"line 1\n", b"line \xe9 1\n").replace(b"line 20\n", b"line 20 \xe9\n")
    now = now.replace(b"caf\xe9", b"caf\xe8")
    said, error, after = await edit_after_in_place_change(
        ws, before, now, "line 10\n", "ten\n", legacy_encoding="cp1252"
    )
    assert error and after == now
    assert "(it touches lines 1-2, 21)" in said
    assert said.endswith("\n     1\tcafè\n     2\tline é 1\n    21\tline 20 é")


@pytest.mark.parametrize(
    ("data", "edits", "spans"),
    [
        (b"aaa\nbbb\nccc\n", [("aaa\n", "x\n"), ("ccc", "CC")], [(0, 4), (8, 11)]),
        (b"aaa\nbbb\nccc\n", [("ccc", "CCCC"), ("aaa\n", "")], [(8, 11), (0, 4)]),
        # inside the text an earlier edit wrote: that edit's whole span in the original
        (b"aaa\nbbb\nccc\n", [("bbb", "B1B2"), ("B2\nccc", "Z")], [(4, 7), (4, 11)]),
        (b"ab ab ab\nq\n", [("ab", "xyz", True), ("q", "Q")], [(0, 2), (3, 5), (6, 8), (9, 10)]),
        (b"if x:\n\ty()\nz\n", [("    y()", "    w()"), ("z", "Z")], [(6, 10), (11, 12)]),  # the ladder
    ],
)
def test_each_edit_span_is_kept_in_the_original_bytes(
    data: bytes, edits: list[tuple[object, ...]], spans: list[tuple[int, int]]
) -> None:
    from filegate.tools.edit.replacing import Edit, apply_edits

    parsed = [Edit(old=e[0], new=e[1], replace_all=len(e) > 2) for e in edits]
    assert apply_edits(data, parsed, "f").matched == spans


@pytest.mark.parametrize("changed", ["after", "inside"])
async def test_past_the_tracked_replacements_the_edits_are_judged_as_one_stretch(
    ws: Path, changed: str
) -> None:
    """More replacements than are tracked one by one: the stretch from the first to the last
    decides (a change after it lets the edit through; one inside it, even on a line no
    replacement touches, refuses it)."""
    from filegate.tools.edit.replacing import MAX_TRACKED_REPLACEMENTS

    n = MAX_TRACKED_REPLACEMENTS + 2
    before = ("k\n" * n + "z\nend\n").encode()
    if changed == "after":
        now = before.replace(b"z\n", b"zz\n")
    else:
        lines = before.split(b"\n")
        lines[499] = b"x"  # line 500: no "k" left on it, still more than tracked on the others
        now = b"\n".join(lines)
    p = ws / "a.txt"
    p.write_bytes(before)
    async with connect(ws, "auto", approval="auto") as c:
        await call(c, "ReadFile", path="a.txt")
        p.write_bytes(now)  # in place: the same inode
        r = await call(c, "StrReplaceFile", path="a.txt", edit={"old": "k", "new": "KK", "replace_all": True})
    said, error, after = text(r), r.is_error, p.read_bytes()
    if changed == "after":
        assert not error, said
        assert f"(now different: line {n + 1}); the edits did not touch those lines" in said
        assert after == now.replace(b"k", b"KK")
    else:
        assert error and "(it touches line 500)" in said
        assert after == now


async def test_a_changed_line_holding_a_byte_its_codec_lacks_is_shown_as_readfile_shows_it(
    ws: Path,
) -> None:
    """cp1252 has no character at 0x81: a changed line holding one is shown with U+FFFD there,
    as ReadFile shows it, and the refusal is still the refusal (no crash on the decode)."""
    before = SOURCE.encode("cp1252")
    now = before.replace(b"line 5\n", b"line \x81 5 \xe9\n")
    said, error, after = await edit_after_in_place_change(
        ws, before, now, "line 5\n", "five\n", legacy_encoding="cp1252"
    )
    assert error and after == now
    assert "(now different: line 5)" in said
    assert said.endswith("\n     5\tline \ufffd 5 é")
    async with connect(ws, "auto", legacy_encoding="cp1252") as c:
        r = await call(c, "ReadFile", path="a.txt", line_offset=5, n_lines=1)
    assert text(r).startswith("     5\tline \ufffd 5 é\n")


async def test_a_file_replaced_between_the_guard_and_the_load_keeps_the_plain_refusal(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Changed in place (its lines kept: the guard before the load lets the edit on), then
    replaced by a new file before the load (an editor's atomic save). The race is staged by a
    writer that acts just before the load (writing.load_current wrapped; the load stays real):
    the new file has no lines to compare, so the plain refusal stands and nothing is written."""
    from filegate.tools.edit import writing

    p = ws / "a.py"
    p.write_text(SOURCE)
    real_load = writing.load_current
    replaced = []

    def replace_then_load(*args: object, **kw: object) -> object:
        if not replaced:
            replaced.append(True)
            (ws / "new").write_text(SOURCE.replace("line 2\n", "line two\n"))
            os.replace(ws / "new", p)
        return real_load(*args, **kw)  # type: ignore[arg-type]

    async with connect(ws, "auto", approval="auto") as c:
        await call(c, "ReadFile", path="a.py")
        rewrite_in_place(p, SOURCE.replace("line 1\n", "line one\n"))
        monkeypatch.setattr(writing, "load_current", replace_then_load)
        r = await call(c, "StrReplaceFile", path="a.py", edit={"old": "line 15\n", "new": "line XV\n"})
    assert replaced and r.is_error and "changed since it was read: read it again" in text(r)
    assert p.read_text() == SOURCE.replace("line 2\n", "line two\n")


async def test_a_refusal_with_many_long_changed_lines_stays_under_the_error_size(ws: Path) -> None:
    """SPEC §9: a §8.3 refusal's changed lines count toward ERROR_CHARS, whatever the client's
    budget: what failed on the first line, what to do on the last."""
    from filegate.policy.budget import ERROR_CHARS

    before = "".join(f"line {n}\n" for n in range(1, 41)).encode()
    now = "".join(f"{n:02d}" + "w" * 1990 + "\n" for n in range(1, 41)).encode()
    async with connect(ws, "auto", approval="auto", client="claude-code") as c:
        (ws / "a.txt").write_bytes(before)
        await call(c, "ReadFile", path="a.txt")
        rewrite_in_place(ws / "a.txt", now.decode())
        r = await call(c, "StrReplaceFile", path="a.txt", edit={"old": "line 3\n", "new": "three\n"})
    said = text(r)
    assert r.is_error and len(said) < ERROR_CHARS, len(said)
    first, *rows, last = said.split("\n")
    assert first.startswith("`a.txt` changed on disk since it was read") and "Only some" in first
    assert 2 <= len(rows) < 10 and all(row.endswith("w" * 100) for row in rows)
    assert last == 'Read it again with ReadFile(path="a.txt") before you edit it.'
