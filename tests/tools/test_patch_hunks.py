"""A V4A patch's hunks applied to a file's text (tools/patch/hunks.py): StrReplaceFile's edits,
narrowed by ``@@`` lines and ``*** End of File`` only where the text alone is found more than
once. Scenarios from the format's documented edge cases: hunks out of order, ambiguous
context, trailing context, the end of the file."""

from __future__ import annotations

import pytest

from filegate.errors import EditFailed, Stopped
from filegate.tools.edit.replacing import Applied
from filegate.tools.patch.hunks import after_anchors, apply_hunks, last_lines
from filegate.tools.patch.plan import PlanEdit
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


# --- mutation-found gaps (docs/mutation-results.json, "patchparse") ----------------------------


def test_an_addition_whose_anchor_is_missing_is_refused_whole() -> None:
    with pytest.raises(EditFailed) as info:
        patched(b"x\n", "@@ nowhere", "+y")
    assert info.value.message == (
        "No replacements were made: edit 1 adds lines after its `@@` line `nowhere`, which is not in "
        "`f.py`. Nothing was written."
    )
    assert info.value.brief == "No replacements made"


def test_hunks_after_an_addition_still_apply() -> None:
    out, reports = patched(b"a\nb\nc\n", "@@ a", "+a2", "@@", "-c", "+C")
    assert out == b"a\na2\nb\nC\n"
    assert reports == ["Edit 1 only adds lines: inserted after its `@@` line (line 1)."]
    out, reports = patched(b"a\nb\n", "@@ a", "+x", "@@ b", "+y")
    assert out == b"a\nx\nb\ny\n"
    assert reports[1] == "Edit 2 only adds lines: inserted after its `@@` line (line 3)."


def test_a_later_missing_hunk_is_named_by_its_number() -> None:
    with pytest.raises(EditFailed) as info:
        patched(b"a\nb\n", "@@", " a", "-b", "+B", "@@", "-zzz", "+y")
    assert info.value.message.startswith(
        "No replacements were made: the old string of edit 2 (of 2) was not found in `f.py`. Edits apply "
        "in order, so it must match the text as edit 1 left it."
    )


# Ambiguous as written (twice before the anchor); after `def c():` only the ladder finds it.
TABBED_AFTER_ANCHOR = b"    return x\n    return x\ndef c():\n\treturn x\n"


def test_the_ladder_works_inside_the_part_an_anchor_narrows_to() -> None:
    out, reports = patched(
        b"z\n" + TABBED_AFTER_ANCHOR, "@@", "-z", "+Z", "@@ def c():", "-    return x", "+    return 0"
    )
    assert out == b"Z\n" + TABBED_AFTER_ANCHOR.replace(b"\treturn x", b"\treturn 0")
    assert reports == [
        "Edit 2 matched ignoring indentation at line 2: the file indents with tabs, the old text with 4 "
        "spaces; the new text was written with tabs (lines counted from line 4).",
        "Edit 2 matched after its `@@` lines (line 4 on).",
    ]


def test_without_tolerance_the_narrowed_part_matches_exactly_or_is_refused() -> None:
    plan = parse_v4a(
        "\n".join(
            ["*** Begin Patch", "*** Update File: f.py", "@@ def c():", "-    return x", "+    return 0"]
        )
        + "\n*** End Patch"
    )
    with pytest.raises(EditFailed) as info:
        apply_hunks(
            plan.changes[0].edits, TABBED_AFTER_ANCHOR, [], "f.py", tolerant=False, tab_width=lambda: None
        )
    assert info.value.message.endswith(
        "Nothing was written. Narrowed by its `@@` lines and `*** End of File`, it still matches more than "
        "once or nowhere."
    )
    assert (info.value.brief, info.value.output) == ("Ambiguous edit", "")
    plan = parse_v4a("*** Begin Patch\n*** Update File: f.py\n@@\n-    go()\n+    stop()\n*** End Patch")
    with pytest.raises(EditFailed, match="was not found"):
        apply_hunks(
            plan.changes[0].edits, b"if x:\n\tgo()\n", [], "f.py", tolerant=False, tab_width=lambda: None
        )


@pytest.mark.parametrize(
    ("data", "body"),
    [
        (b"\tif a:\n\t\tb()\n", ("@@", " if a:", "-    b()", "+    c()")),  # the ladder at once
        (TABBED_AFTER_ANCHOR, ("@@ def c():", "-    return x", "+    return 0")),  # after narrowing
    ],
)
def test_the_files_declared_tab_width_is_the_one_the_ladder_uses(data: bytes, body: tuple[str, ...]) -> None:
    plan = parse_v4a("\n".join(["*** Begin Patch", "*** Update File: f.py", *body, "*** End Patch"]))

    def reports(width: int | None) -> list[str]:
        out = apply_hunks(plan.changes[0].edits, data, [], "f.py", tolerant=True, tab_width=lambda: width)
        return out.reports

    assert reports(None) != reports(8)  # inferred 4 from the file, or declared 8 (.editorconfig)


def test_a_deadline_stops_a_hunks_search_in_a_long_file() -> None:
    long = b"".join(b"line %d of the file\n" % i for i in range(3000))

    def deadline() -> None:
        raise Stopped("The call's deadline passed.")

    edits = (
        parse_v4a("*** Begin Patch\n*** Update File: f.py\n@@\n-zzz qqq\n+y\n*** End Patch").changes[0].edits
    )
    with pytest.raises(Stopped):  # not found: the closest region is searched, checking the call
        apply_hunks(edits, long, [], "f.py", tolerant=True, tab_width=lambda: None, check=deadline)
    body = "@@ def c():\n-x = 1\n+x = 2"
    edits = parse_v4a(f"*** Begin Patch\n*** Update File: f.py\n{body}\n*** End Patch").changes[0].edits
    with pytest.raises(Stopped):  # ambiguous: searched again after the anchor, checking the call
        apply_hunks(
            edits,
            b"x = 1\nx = 1\ndef c():\n" + long,
            [],
            "f.py",
            tolerant=True,
            tab_width=lambda: None,
            check=deadline,
        )


def test_a_missing_hunk_with_an_anchor_gets_the_plain_refusal() -> None:
    with pytest.raises(EditFailed) as info:
        patched(b"x\ny\nx\n", "@@ y", "-q", "+z")
    assert info.value.message == (
        "No replacements were made: the old string was not found in `f.py`. Nothing was written. No similar "
        "text was found either; read the file again before editing it."
    )


def test_an_anchor_missing_from_an_ambiguous_hunk_keeps_its_brief_and_output() -> None:
    with pytest.raises(EditFailed) as info:
        patched(b"    return x\n    return x\n", "@@ def c():", "-    return x", "+    return 0")
    assert info.value.message.endswith(
        "Nothing was written. Its `@@` line `def c():` is not in the file either."
    )
    assert (info.value.brief, info.value.output) == ("Ambiguous edit", "")


def test_a_line_that_only_starts_with_the_hunks_line_is_not_it() -> None:
    # A V4A line is a whole line: `-c` is not the start of `cd`, with or without a final line break.
    for data in (b"a\ncd\n", b"a\ncd", b"a\nx = 1; y"):
        with pytest.raises(EditFailed, match="was not found"):
            patched(data, "@@", "-c" if b"cd" in data else "-x = 1", "+C")
    # ... while the end of the file's last line still matches a hunk that ends the file.
    out, reports = patched(b"a\nax", "@@", "-x", "+X")
    assert out == b"a\naX"
    assert reports == ["Edit 1 matched at the file's end, which has no final line break (line 2 on)."]


def test_an_ambiguous_hunk_is_not_settled_by_the_last_line_without_a_break() -> None:
    with pytest.raises(EditFailed) as info:
        patched(b"x\ny\nx\nx", "@@", "-x", "+z")
    assert "occurs 2 times in `f.py` (at lines 1, 3)" in info.value.message


def test_a_file_that_starts_with_a_blank_line() -> None:
    out, reports = patched(b"\nlast", "@@", "-last", "+LAST")
    assert out == b"\nLAST"
    assert reports == ["Edit 1 matched at the file's end, which has no final line break (line 2 on)."]
    out, reports = patched(b"\nimport os\n", "@@ import os", "+import sys")
    assert out == b"\nimport os\nimport sys\n"
    assert reports == ["Edit 1 only adds lines: inserted after its `@@` line (line 2)."]
    assert after_anchors(b"\ndef f():\n", ["def f():"]) == 1
    assert last_lines(b"\nx\n", 1) == 1


def test_lines_added_after_a_last_line_without_a_break_get_the_files_break() -> None:
    assert patched(b"x = 1", "@@ x = 1", "+y") == (
        b"x = 1\ny\n",
        ["Edit 1 only adds lines: inserted after its `@@` line (line 1)."],
    )
    assert patched(b"a\r\nb", "@@ b", "+z") == (
        b"a\r\nb\r\nz\r\n",
        ["Edit 1 only adds lines: inserted after its `@@` line (line 2)."],
    )
    assert patched(b"a\r\nb", "@@", "+z") == (
        b"a\r\nb\r\nz\r\n",
        ["Edit 1 only adds lines: inserted at the file's end."],
    )
    assert patched(b"a\n", "@@", "+z") == (b"a\nz\n", ["Edit 1 only adds lines: inserted at the file's end."])


def test_each_edits_line_ending_notes_and_reports_are_kept() -> None:
    out = applied(b"a\r\nb\n", "@@", "-a", "+A", "@@", "-b", "+B")  # a mixed file: edit 1 meets CRLF
    assert (bytes(out.data), out.to_crlf) == (b"A\r\nB\n", [1])
    out = apply_hunks(
        [PlanEdit("a\r\n", "A\r\n"), PlanEdit("b\r\n", "B\r\n")],
        b"a\nb\r\n",
        [],
        "f.py",
        tolerant=True,
        tab_width=lambda: None,
    )
    assert (bytes(out.data), out.to_lf) == (b"A\nB\r\n", [1])
    out = applied(b"if x:\n\tgo()\nz\n", "@@", "-    go()", "+    stop()", "@@", "-z", "+Z")
    assert bytes(out.data) == b"if x:\n\tstop()\nZ\n"
    assert out.reports == [
        "Edit 1 matched ignoring indentation at line 2: the file indents with tabs, the old text with 4 "
        "spaces; the new text was written with tabs."
    ]


def test_the_changes_forms_replace_all_and_match_reach_the_edit() -> None:
    def apply(data: bytes, edit: PlanEdit) -> bytes:
        return bytes(apply_hunks([edit], data, [], "f.py", tolerant=True, tab_width=lambda: None).data)

    assert apply(b"a\nx\nx\n", PlanEdit("x\n", "y\n", replace_all=True)) == b"a\ny\ny\n"
    for data in (b"if x:\n\tgo()\n", b"a\n\tgo()"):  # with and without the final line break
        with pytest.raises(EditFailed, match="was not found"):
            apply(data, PlanEdit("    go()\n", "    stop()\n", match="exact"))


def test_an_added_lines_undecodable_byte_is_carried_as_a_replaced_lines_is() -> None:
    # str_replace's codec handling hands a non-UTF-8 byte over as a lone surrogate (utf8()).
    assert patched(b"a\nb\n", "@@ a", "+\udcff") == (
        b"a\n\xed\xb3\xbf\nb\n",
        ["Edit 1 only adds lines: inserted after its `@@` line (line 1)."],
    )
    assert after_anchors(b"caf\xed\xb3\xbf\ndef f():\n", ["def f():"]) == 7
    assert after_anchors(b"caf\xff\ndef f():\n", ["def f():"]) == 5


def test_anchors_in_order_each_after_the_line_before() -> None:
    assert after_anchors(b"x\nx\n", ["x", "x"]) == 2
    assert after_anchors(b"x\ny\n", ["x", "y"]) == 2
    assert after_anchors(b"x\nlast", ["last", "x"]) is None
    assert after_anchors(b"a\nlast", ["last"]) == 2


def test_the_last_lines_of_a_file_ending_in_a_blank_line() -> None:
    assert last_lines(b"a\n\n", 1) == 2


def test_a_blank_line_the_file_does_not_end_with_is_not_matched_as_its_final_break() -> None:
    # `c` then a blank line, removed: the file ends with `c` and its line break, no blank line.
    for data in (b"a\nc\n", b"a\nc"):
        with pytest.raises(EditFailed, match="was not found"):
            patched(data, "@@", "-c", "-")
    with pytest.raises(EditFailed, match="already"):
        patched(b"a\nc\n", "@@", " a", "-c", "-")
