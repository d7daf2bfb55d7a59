"""StrReplaceFile's matching and the diff, at their seam (pure functions, no server).

The same behaviour is tested through real clients in test_str_replace.py and
tests/server/test_approval.py; these pin the boundaries where a small slip would pass there
(issue 17: tests that kill mutants).
"""

from __future__ import annotations

import pytest

from filegate.errors import EditFailed
from filegate.tools.diffing import unified_diff
from filegate.tools.str_replace import Edit, apply_edits


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
