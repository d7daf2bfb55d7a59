"""StrReplaceFile's matching and the diff, at their seam (pure functions, no server).

The same behaviour is tested through real clients in test_str_replace.py and
tests/server/test_approval.py; these pin the boundaries where a small slip would pass there
(issue 17: tests that kill mutants).
"""

from __future__ import annotations

import random

import pytest

from filegate.errors import EditFailed
from filegate.fsio.spliced import Spliced
from filegate.tools.edit.diffing import unified_diff
from filegate.tools.edit.replacing import Edit, _Eols, apply_edits
from filegate.tools.edit.writing import Encoding, count_lines, line_counts


def edits(*pairs: tuple[str, str], replace_all: bool = False) -> list[Edit]:
    return [Edit(old=o, new=n, replace_all=replace_all) for o, n in pairs]


def test_an_exact_match_is_replaced_once_and_counted() -> None:
    out = apply_edits(b"a b a\n", edits(("a b", "X")), "f")
    assert (out.data, out.replacements, out.to_crlf, out.to_lf) == (b"X a\n", 1, [], [])


def test_replace_all_counts_every_occurrence() -> None:
    out = apply_edits(b"a a a\n", edits(("a", "b"), replace_all=True), "f")
    assert (out.data, out.replacements) == (b"b b b\n", 3)


def test_found_twice_without_replace_all_names_the_lines() -> None:
    with pytest.raises(EditFailed) as caught:
        apply_edits(b"x\ny\nx\n", edits(("x", "z")), "f")
    assert "occurs 2 times in `f` (at lines 1, 3)" in caught.value.message


def test_not_found_shows_the_closest_region_numbered() -> None:
    with pytest.raises(EditFailed) as caught:
        apply_edits(b"alpha\nprice = total * qty\nomega\n", edits(("price = total * quantity", "p")), "f")
    assert "closest match is at lines 1-3" in caught.value.message
    assert "     2\tprice = total * qty" in caught.value.output


def test_lf_old_in_a_crlf_file_matches_and_new_gets_crlf() -> None:
    out = apply_edits(b"one\r\ntwo\r\n", edits(("one\ntwo", "1\n2")), "f")
    assert (out.data, out.to_crlf) == (b"1\r\n2\r\n", [1])


def test_single_line_old_multi_line_new_in_a_pure_crlf_file_gets_crlf() -> None:
    out = apply_edits(b"one\r\ntwo\r\n", edits(("two", "2\n2b")), "f")
    assert (out.data, out.to_crlf) == (b"one\r\n2\r\n2b\r\n", [1])


def test_a_new_already_in_crlf_is_not_counted_as_adapted() -> None:
    out = apply_edits(b"one\r\ntwo\r\n", edits(("two", "2\r\n2b")), "f")
    assert (out.data, out.to_crlf) == (b"one\r\n2\r\n2b\r\n", [])


def test_a_file_without_crlf_keeps_lf() -> None:
    out = apply_edits(b"one\ntwo\n", edits(("two", "2\n2b")), "f")
    assert (out.data, out.to_crlf) == (b"one\n2\n2b\n", [])


def test_crlf_old_matches_lf_text_in_a_mixed_file_and_new_gets_lf() -> None:
    out = apply_edits(b"a\r\nb\nc\n", edits(("b\r\nc", "B\r\nC")), "f")
    assert (out.data, out.to_lf) == (b"a\r\nB\nC\n", [1])


def test_later_edits_see_the_earlier_ones() -> None:
    out = apply_edits(b"a\n", edits(("a", "b"), ("b", "c")), "f")
    assert (out.data, out.replacements) == (b"c\n", 2)
    with pytest.raises(EditFailed) as caught:
        apply_edits(b"a\n", edits(("a", "b"), ("a", "c")), "f")
    assert "edit 2 (of 2)" in caught.value.message and "as edit 1 left it" in caught.value.message


def test_the_diff_counts_lines_at_lf_only_and_escapes_the_rest() -> None:
    old = "one\ntwo\u2028still two\nthree\n".encode()
    new = old.replace(b"three", b"THREE")
    diff = unified_diff("f", old, new)
    assert "@@ -1,3 +1,3 @@" in diff.text and " two\\u2028still two" in diff.text
    assert (diff.added, diff.removed, diff.unsafe) == (1, 1, True)
    plain = unified_diff("/abs/f", b"a\r\n", b"b\r\n")
    assert plain.text.startswith("--- /abs/f\n+++ /abs/f\n") and not plain.unsafe


# --- the span an edit reports bounds the diff (issue 13.3) ----------------------------------


def _random_case(rng: random.Random) -> tuple[bytes, list[Edit]]:
    """A small file of few distinct lines (so matches repeat and diffs align oddly) and edits
    that apply to it in order, some replace_all, some written with the other line ending."""
    words = ["a", "b", "ab", "", "a b", "x\u2028y"]
    eol = rng.choice(["\n", "\r\n", "mixed"])
    lines = [
        rng.choice(words) + (rng.choice(["\n", "\r\n"]) if eol == "mixed" else eol)
        for _ in range(rng.randint(1, 30))
    ]
    text = "".join(lines)
    if rng.random() < 0.3:
        text = text.rstrip("\r\n")  # no newline at the end
    edits: list[Edit] = []
    current = text
    for _ in range(rng.randint(1, 3)):
        if not current:
            break
        i = rng.randrange(len(current))
        old = current[i : i + rng.randint(1, 12)]
        new = rng.choice(["", "Q", "Q\n", "\nQ\nR\n", old + "Z", "b\r\n", "\x1b[1m"])
        if not old.strip("\r\n") or old == new:
            continue
        replace_all = current.count(old) > 1
        edits.append(
            Edit(
                old=old.replace("\r\n", "\n") if rng.random() < 0.3 else old, new=new, replace_all=replace_all
            )
        )
        current = current.replace(old, new)  # only to pick the next edit from; may not match the tool's
    return text.encode(), edits


@pytest.mark.parametrize("seed", range(8))
def test_a_diff_bounded_by_the_edits_span_is_the_whole_diff(seed: int) -> None:
    rng = random.Random(seed)
    checked = 0
    for _ in range(250):
        data, case = _random_case(rng)
        if not case:
            continue
        try:
            out = apply_edits(data, case, "f")
        except EditFailed:
            continue
        new, span = bytes(out.data), out.span(data)
        assert new[: span[0]] == data[: span[0]] and new[span[2] :] == data[span[1] :]
        whole = unified_diff("f", data, new)
        assert unified_diff("f", data, out.data, span=span) == whole
        assert line_counts(data, out.data, Encoding(), span) == (
            count_lines(data, Encoding()),
            count_lines(new, Encoding()),
        )
        counts = unified_diff("f", data, out.data, span=span, show=False)
        assert (counts.text, counts.added, counts.removed, counts.complete) == (
            "",
            whole.added,
            whole.removed,
            whole.complete,
        )
        checked += 1
    assert checked > 100


def test_one_edit_is_spliced_into_the_file_not_copied() -> None:
    data = b"head\nold line\ntail\n"
    out = apply_edits(data, edits(("old line", "new line")), "f")
    assert isinstance(out.data, Spliced) and out.data.base is data
    assert (bytes(out.data), out.span(data)) == (b"head\nnew line\ntail\n", (5, 13, 13))


def test_a_difference_deep_in_a_block_is_found_where_it_is() -> None:
    # The common head and tail are searched block by block, then bisected within a block.
    old = b"line\n" * 30_000
    for at in (0, 1, 65_535, 65_536, 65_537, len(old) - 1):
        new = old[:at] + b"#" + old[at + 1 :]
        diff = unified_diff("f", old, new)
        line = at // 5 + 1
        assert (diff.added, diff.removed) == (1, 1)
        assert f"@@ -{line - min(3, line - 1)}," in diff.text.splitlines()[2]


@pytest.mark.parametrize(
    ("data", "crlf"),
    [
        (b"a\nb\n", False),
        (b"a\r\nb", True),
        (b"a\rb\nc\r\n", True),
        (b"a\rb\rc\n", False),
        (b"\r", False),
        (b"", False),
    ],
)
def test_a_crlf_is_found_after_lone_crs_and_only_where_there_is_one(data: bytes, crlf: bool) -> None:
    """The search for a CRLF starts from the first CR (a one-byte search is memchr-fast)."""
    assert _Eols(data).crlf is crlf
    # An LF old matches the file's CRLF only where the file has CRLF.
    if crlf:
        out = apply_edits(data + b"X\r\nY\r\n", edits(("X\nY", "Z")), "f")
        assert (out.to_crlf, bytes(out.data)) == ([1], data + b"Z\r\n")


def test_matches_sharing_a_line_are_counted_per_line_not_repeated() -> None:
    # Issue 24.4: "at lines 1, 1, 1" read oddly; the count per line is said instead.
    with pytest.raises(EditFailed) as caught:
        apply_edits(b"x x x\ny\nx\n", edits(("x", "z")), "f")
    assert "occurs 4 times in `f` (3 times on line 1, once on line 3)" in caught.value.message
    with pytest.raises(EditFailed) as caught:
        apply_edits(b"aaa\n", edits(("a", "b")), "f")
    assert "occurs 3 times in `f` (3 times on line 1)" in caught.value.message
