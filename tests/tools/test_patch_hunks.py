"""A V4A patch's hunks applied to a file's text (tools/patch/hunks.py): StrReplaceFile's edits,
narrowed by ``@@`` lines and ``*** End of File`` only where the text alone is found more than
once. Scenarios from the format's documented edge cases: hunks out of order, ambiguous
context, trailing context, the end of the file."""

from __future__ import annotations

import pytest

from filegate.errors import EditFailed
from filegate.tools.edit.replacing import Applied
from filegate.tools.patch.hunks import after_anchors, apply_hunks, last_lines
from filegate.tools.patch.v4a import parse_v4a


def patched(data: bytes, *body: str) -> tuple[bytes, list[str]]:
    plan = parse_v4a("\n".join(["*** Begin Patch", "*** Update File: f.py", *body, "*** End Patch"]))
    applied = apply_hunks(plan.changes[0].edits, data, [], "f.py", tolerant=True, tab_width=lambda: None)
    return bytes(applied.data), applied.reports


TWO_FUNCTIONS = b"def a():\n    x = 1\n    return x\n\ndef b():\n    x = 1\n    return x\n"


def test_hunks_out_of_order_land_by_their_own_text() -> None:
    data = b"one\ntwo\nthree\nfour\nfive\n"
    out, _ = patched(data, "@@", " four", "-five", "+FIVE", "@@", " one", "-two", "+TWO")
    assert out == b"one\nTWO\nthree\nfour\nFIVE\n"


def test_ambiguous_context_is_refused_listing_the_places() -> None:
    with pytest.raises(EditFailed) as info:
        patched(TWO_FUNCTIONS, "@@", "     x = 1", "-    return x", "+    return x + 1")
    assert "occurs 2 times in `f.py` (at lines 2, 6)" in info.value.message
    assert info.value.brief == "Ambiguous edit"


def test_an_anchor_narrows_ambiguous_context_to_the_part_after_it() -> None:
    out, reports = patched(TWO_FUNCTIONS, "@@ def b():", "     x = 1", "-    return x", "+    return x + 1")
    assert out == TWO_FUNCTIONS.replace(b"return x\n", b"return x + 1\n").replace(
        b"return x + 1\n\ndef", b"return x\n\ndef"
    )
    assert reports == ["Edit 1 matched after its `@@` lines (line 5 on)."]


def test_an_anchor_is_not_needed_where_the_text_is_found_once() -> None:
    out, reports = patched(b"a\nb\n", "@@ class Missing:", "-b", "+c")
    assert out == b"a\nc\n" and reports == []


def test_an_ambiguous_hunk_whose_anchor_is_missing_is_refused_saying_so() -> None:
    with pytest.raises(EditFailed) as info:
        patched(TWO_FUNCTIONS, "@@ def c():", "     x = 1", "-    return x", "+    return 0")
    assert "occurs 2 times" in info.value.message
    assert "Its `@@` line `def c():` is not in the file either." in info.value.message


def test_an_anchor_still_ambiguous_after_it_is_refused() -> None:
    with pytest.raises(EditFailed) as info:
        patched(TWO_FUNCTIONS, "@@ def a():", "     x = 1", "-    return x", "+    return 0")
    assert "still matches more than once" in info.value.message


def test_nested_anchors_narrow_step_by_step() -> None:
    data = b"class A:\n    def f(self):\n        pass\nclass B:\n    def f(self):\n        pass\n"
    out, _ = patched(data, "@@ class B:", "@@     def f(self):", "-        pass", "+        return 1")
    assert out == data[: data.index(b"class B")] + b"class B:\n    def f(self):\n        return 1\n"


def test_end_of_file_narrows_to_the_last_lines() -> None:
    data = b"x = 1\ny = 2\nx = 1\n"
    out, reports = patched(data, "@@", "-x = 1", "+x = 3", "*** End of File")
    assert out == b"x = 1\ny = 2\nx = 3\n"
    assert reports == ["Edit 1 matched at the file's end (line 3 on)."]


def test_the_last_line_without_a_line_break_matches_and_stays_without_one() -> None:
    out, reports = patched(b"a\nb\nlast", "@@", " b", "-last", "+LAST", "*** End of File")
    assert out == b"a\nb\nLAST"
    assert "which has no final line break" in reports[-1]
    out, _ = patched(b"a\nlast", "@@", "-last", "+LAST")  # without the marker too
    assert out == b"a\nLAST"


def test_trailing_blank_context_that_the_file_lacks_still_lands() -> None:
    out, _ = patched(b"a\nb\nc\n", "@@", " a", "-b", "+B", " c", "")
    assert out == b"a\nB\nc\n"


def test_an_addition_only_hunk_goes_after_its_anchor_or_at_the_end() -> None:
    out, reports = patched(b"import os\n\nx = 1\n", "@@ import os", "+import sys")
    assert out == b"import os\nimport sys\n\nx = 1\n"
    assert reports == ["Edit 1 only adds lines: inserted after its `@@` line (line 1)."]
    out, _ = patched(b"x = 1", "@@", "+y = 2")
    assert out == b"x = 1\ny = 2\n"
    with pytest.raises(EditFailed, match="adds lines after its `@@` line `nowhere`"):
        patched(b"x\n", "@@ nowhere", "+y")


def test_a_crlf_file_keeps_crlf() -> None:
    out, _ = patched(b"a\r\nb\r\nc\r\n", "@@", " a", "-b", "+B", "+B2")
    assert out == b"a\r\nB\r\nB2\r\nc\r\n"
    out, _ = patched(b"a\r\nb\r\n", "@@ a", "+z")
    assert out == b"a\r\nz\r\nb\r\n"


def test_the_ladder_tolerates_indentation_as_in_str_replace() -> None:
    out, reports = patched(
        b"if x:\n\tif y:\n\t\tgo()\n", "@@", "     if y:", "-        go()", "+        stop()"
    )
    assert out == b"if x:\n\tif y:\n\t\tstop()\n"
    assert "ignoring indentation" in reports[0]


def test_a_missing_hunk_is_refused_as_str_replace_refuses_it() -> None:
    with pytest.raises(EditFailed) as info:
        patched(b"a\nb\n", "@@", " a", "-q", "+r", "@@", "-zzz", "+y")
    assert "edit 1 (of 2) was not found in `f.py`" in info.value.message


def test_anchor_lines_match_ignoring_blanks_and_by_prefix() -> None:
    data = b"x\n  def run(self, a):\n    pass\n"
    assert after_anchors(data, ["def run(self, a):"]) == 2
    assert after_anchors(data, ["def run"]) == 2
    assert after_anchors(data, ["x", "pass"]) == data.index(b"    pass")
    assert after_anchors(data, ["pass", "x"]) is None


def test_last_lines() -> None:
    assert last_lines(b"a\nb\nc\n", 2) == 2
    assert last_lines(b"a\nb\nc", 1) == 4
    assert last_lines(b"a\n", 5) == 0


def applied(data: bytes, *body: str) -> Applied:
    plan = parse_v4a("\n".join(["*** Begin Patch", "*** Update File: f.py", *body, "*** End Patch"]))
    return apply_hunks(plan.changes[0].edits, data, [], "f.py", tolerant=True, tab_width=lambda: None)


# The part of the file the hunks touched, (start, end before, end after): the diff and the line
# counts the user reads are taken between them (an edit's text, its context included).
@pytest.mark.parametrize(
    ("data", "body", "span", "replacements", "crlf"),
    [
        (b"a\nb\nc\nd\n", ("@@", " a", "-b", "+B"), (0, 4, 4), 1, []),
        (
            TWO_FUNCTIONS,
            ("@@ def b():", "     x = 1", "-    return x", "+    return x + 1"),
            (42, 65, 69),
            1,
            [],
        ),
        (b"import os\n\nx = 1\n", ("@@ import os", "+import sys"), (10, 10, 21), 1, []),
        (b"x = 1\n", ("@@", "+y = 2"), (6, 6, 12), 1, []),
        (b"x = 1", ("@@", "+y = 2"), (5, 5, 12), 1, []),
        (
            b"one\ntwo\nthree\nfour\nfive\n",
            ("@@", " four", "-five", "+FIVE", "@@", " one", "-two", "+TWO"),
            (0, 24, 24),
            2,
            [],
        ),
        (b"x = 1\ny = 2\nx = 1\n", ("@@", "-x = 1", "+x = 3", "*** End of File"), (12, 18, 18), 1, []),
        (b"a\nb\nlast", ("@@", " b", "-last", "+LAST", "*** End of File"), (2, 8, 8), 1, []),
        (b"a\r\nb\r\n", ("@@ a", "+z"), (3, 3, 6), 1, [1]),
        (b"a\r\nb\r\nc\r\n", ("@@", " a", "-b", "+B"), (0, 6, 6), 1, [1]),
        (b"a\nb\nc\nd\n", ("@@", "-b", "+B", "@@ c", "+c2"), (2, 6, 9), 2, []),
    ],
)
def test_the_span_the_diff_reads_is_the_part_the_hunks_touched(
    data: bytes, body: tuple[str, ...], span: tuple[int, int, int], replacements: int, crlf: list[int]
) -> None:
    out = applied(data, *body)
    assert out.span(data) == span
    assert out.replacements == replacements and out.to_crlf == crlf
    new = bytes(out.data)
    assert data[: span[0]] == new[: span[0]] and data[span[1] :] == new[span[2] :]
