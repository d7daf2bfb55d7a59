"""The matching ladder (SPEC §8.2) alone: a pure module, so a corpus of real shapes, the rules
at every rung and properties, without a server. Mutation target: ``ladder``
(scripts/mutation_score.py). Through the server: test_str_replace_ladder.py."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from filegate.tools.edit.hits import LOOKALIKES, indent_width
from filegate.tools.edit.matching import (
    Ladder,
    find_tolerant,
    infer_tab_width,
    line_range,
)


def ladder(
    data: str | bytes, old: str, new: str = "NEW", *, tab_width: int = 4, replace_all: bool = False
) -> Ladder:
    raw = data.encode() if isinstance(data, str) else data
    return find_tolerant(raw, old, new, tab_width=tab_width, replace_all=replace_all)


def applied(data: str, found: Ladder) -> str:
    """The file after the ladder's spans were replaced (line breaks as each span says)."""
    raw, out, at = data.encode(), b"", 0
    for span in found.spans:
        new = span.new.replace("\n", "\r\n") if span.crlf else span.new
        out += raw[at : span.start] + new.encode()
        at = span.end
    return (out + raw[at:]).decode()


# --- a corpus of real shapes ----------------------------------------------------------------

GO = 'package main\n\nfunc main() {\n\tif ok {\n\t\tfmt.Println("hi")\n\t}\n}\n'


def test_go_indented_with_tabs_takes_an_edit_written_with_four_spaces() -> None:
    old = '    if ok {\n        fmt.Println("hi")\n    }\n'
    new = '    if ok {\n        fmt.Println("bye")\n        return\n    }\n'
    found = ladder(GO, old, new)
    assert found.rung == 2 and found.lines == "lines 4-6"
    assert found.detail == (
        "the file indents with tabs, the old text with 4 spaces; the new text was written with tabs"
    )
    assert applied(GO, found) == (
        'package main\n\nfunc main() {\n\tif ok {\n\t\tfmt.Println("bye")\n\t\treturn\n\t}\n}\n'
    )


def test_a_first_line_copied_without_its_indentation_starts_after_the_files() -> None:
    found = ladder(GO, 'if ok {\n        fmt.Println("hi")', 'if ok {\n        fmt.Println("yo")')
    assert found.rung == 2 and found.spans[0].first_line == 4
    assert applied(GO, found) == GO.replace('"hi"', '"yo"')


MAKEFILE = "all: build\n\nbuild:\n\tgo build ./...\n\tgo vet ./...\n\ntest:\n\tgo test ./...\n"


def test_a_makefile_recipe_written_with_spaces_keeps_its_tabs() -> None:
    found = ladder(
        MAKEFILE, "build:\n    go build ./...\n    go vet ./...\n", "build:\n    go build -v ./...\n"
    )
    assert found.rung == 2
    assert applied(MAKEFILE, found) == MAKEFILE.replace(
        "\tgo build ./...\n\tgo vet ./...\n", "\tgo build -v ./...\n"
    )


CSHARP = "namespace App\n{\n\tpublic class A\n\t{\n\t\tpublic int X() => 1;\n\t}\n}\n"


def test_csharp_with_tabs_and_crlf_matches_spaces_and_lf_and_writes_tabs_and_crlf() -> None:
    crlf = CSHARP.replace("\n", "\r\n")
    found = ladder(
        crlf, "    {\n        public int X() => 1;\n    }", "    {\n        public int X() => 2;\n    }"
    )
    assert found.rung == 2 and found.spans[0].crlf
    assert applied(crlf, found) == crlf.replace("=> 1", "=> 2")


PYTHON = "class Cart:\n    def total(self):\n        s = 0\n        for p in self.items:\n            s += p\n        return s\n"


def test_python_block_pasted_dedented_is_found_and_written_back_shifted() -> None:
    old = "def total(self):\n    s = 0\n    for p in self.items:\n        s += p\n"
    new = "def total(self):\n    s = 0\n    for p in self.items:\n        s += p.price\n"
    found = ladder(PYTHON, old, new)
    assert found.rung == 2 and found.lines == "lines 2-5"
    assert found.detail == (
        "the old text is indented 4 columns less than the file; the new text was written with spaces, "
        "shifted 4 columns right"
    )
    assert applied(PYTHON, found) == PYTHON.replace("s += p\n", "s += p.price\n")


def test_a_block_indented_more_than_the_file_shifts_left() -> None:
    old = "        def total(self):\n            s = 0\n"
    found = ladder(PYTHON, old, "        def total(self):\n            s = 1\n")
    assert found.rung == 2 and "indented 4 columns more than the file" in found.detail
    assert "shifted 4 columns left" in found.detail
    assert applied(PYTHON, found) == PYTHON.replace("s = 0", "s = 1")


YAML = "jobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n"


def test_yaml_with_two_space_steps_is_inferred_and_shifted() -> None:
    assert infer_tab_width(YAML.encode()) == 2
    old = "steps:\n  - uses: actions/checkout@v4\n"
    new = "steps:\n  - uses: actions/checkout@v5\n  - run: make\n"
    found = ladder(YAML, old, new, tab_width=2)
    assert found.rung == 2
    assert applied(YAML, found) == YAML.replace("checkout@v4\n", "checkout@v5\n      - run: make\n")


WEB = "Say \u201chello\u201d\u00a0\u2014 it\u2019s free.\nNext line.\n"


def test_typographic_quotes_nbsp_and_dashes_from_a_web_page_match_ascii() -> None:
    found = ladder(WEB, 'Say "hello" - it\'s free.\nNext', 'Say "hi" - it\'s free.\nNext')
    assert found.rung == 3 and found.lines == "lines 1-2"
    assert (
        "the file has left double quotation mark (U+201C) where the old text has quotation mark (U+0022)"
        in (found.detail)
    )
    assert "no-break space (U+00A0) where the old text has space (U+0020)" in found.detail
    assert found.detail.endswith("; unchanged lines kept the file's characters")
    assert applied(WEB, found) == 'Say "hi" - it\'s free.\nNext line.\n'


def test_a_lookalike_inside_a_line_matches_just_that_part() -> None:
    found = ladder("x = \u201ca\u201d + b\n", 'x = "a"', 'x = "z"')
    assert (found.rung, found.spans[0].start, found.spans[0].end) == (3, 0, len("x = \u201ca\u201d".encode()))


def test_trailing_whitespace_is_ignored_and_kept_on_lines_the_edit_keeps() -> None:
    data = "a = 1   \nb = 2\t\nc = 3\n"
    found = ladder(data, "a = 1\nb = 2\n", "a = 1\nb = 20\n")
    assert (found.rung, found.detail, found.lines) == (1, "", "lines 1-2")
    assert applied(data, found) == "a = 1   \nb = 20\nc = 3\n"


def test_trailing_whitespace_of_old_that_the_file_lacks_is_ignored() -> None:
    found = ladder("f(x)\ng(y)\n", "f(x)  \ng(y)", "f(x)\ng(z)")
    assert found.rung == 1 and applied("f(x)\ng(y)\n", found) == "f(x)\ng(z)\n"


def test_one_line_old_with_trailing_blanks_must_end_where_the_line_ends() -> None:
    assert ladder("value = 10\n", "value = 1  ").rung == 0
    found = ladder("value = 10\n", "value = 10  ", "value = 11")
    assert found.rung == 1 and applied("value = 10\n", found) == "value = 11\n"


def test_one_line_old_with_leading_blanks_must_start_at_the_line() -> None:
    assert ladder("  x = f(y)\n", "\tf(y)").rung == 0
    found = ladder("  x = f(y)\n", "\tx = f(y)", "\tx = g(y)")
    assert found.rung == 2 and applied("  x = f(y)\n", found) == "  x = g(y)\n"


def test_old_ending_in_a_line_break_needs_one_in_the_file() -> None:
    assert ladder("a\n  b", "a\nb\n").rung == 0
    assert ladder("a\n  b\n", "a\nb\n").rung == 2


def test_old_longer_than_the_rest_of_the_file_matches_nothing() -> None:
    assert ladder("x\n  y\n", "  y\nz\n").rung == 0
    assert ladder("x\n  y", "  y\n  z").rung == 0


# --- uniqueness at every rung ----------------------------------------------------------------


def test_two_near_identical_blocks_are_both_listed_and_neither_taken() -> None:
    data = "func a() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 1\n}\n"
    found = ladder(data, "    return 1\n}\n")
    assert found.rung == 2 and len(found.spans) == 2
    assert found.lines == "lines 2-3, lines 6-7"


def test_replace_all_takes_every_match_at_the_rung() -> None:
    data = "if a:\n\tx()\nif b:\n\tx()\n"
    found = ladder(data, "    x()\n", "    y()\n", replace_all=True)
    assert applied(data, found) == "if a:\n\ty()\nif b:\n\ty()\n"


def test_replace_all_skips_a_match_overlapping_the_one_before() -> None:
    data = "}  \n}  \n}  \n"
    found = ladder(data, "}\n}\n", "]\n", replace_all=True)
    assert found.rung == 1 and [s.first_line for s in found.spans] == [1]


def test_the_first_rung_that_finds_any_decides() -> None:
    # Rung 1 finds one (trailing blanks); rung 2 would find two: rung 1's one is taken.
    data = "    x = 1  \n    y\n\tx = 1\n\ty\n"
    found = ladder(data, "    x = 1\n    y\n", "    x = 2\n    y\n")
    assert (found.rung, found.lines) == (1, "lines 1-2")


@pytest.mark.parametrize(
    ("data", "old"),
    [
        (GO, '    if ok {\n        fmt.Println("hj")\n    }\n'),  # one letter
        (GO, '    if ok {\n        fmt.Println("hi");\n    }\n'),  # one added character
        (PYTHON, "def total(self):\n    s = 0\n    for p in self.item:\n"),  # one removed
        (WEB, 'Say "hello" - it\'s free!\nNext'),  # punctuation
        (WEB, "Say `hello` - it's free.\nNext"),  # a backtick is not a quote
        ("a b\n", "a  b"),  # whitespace inside a line is not indentation
        ("a_b\n", "a b"),
    ],
)
def test_one_non_whitespace_difference_never_matches(data: str, old: str) -> None:
    assert ladder(data, old).rung == 0


def test_nothing_to_anchor_on_matches_nothing() -> None:
    assert ladder("  \n\t\n", "   \n").rung == 0
    assert ladder("- - -\n", "\u2014 - -").rung == 0  # no anchor: not searched


# --- the pieces ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("indent", "width"), [("", 0), ("  ", 2), ("\t", 4), ("  \t", 4), ("\t  ", 6), ("\t\t", 8), ("    \t", 8)]
)
def test_indent_width_expands_tabs_to_the_next_stop(indent: str, width: int) -> None:
    assert indent_width(indent, 4) == width


@pytest.mark.parametrize(
    ("data", "width"),
    [
        (b"a:\n  b:\n    c\n", 2),
        (b"def f():\n    pass\n", 4),
        (b"x\n\ty\n\t\tz\n", 4),  # tabs: the default
        (b"x\n" + b" " * 9 + b"y\n", 4),  # a step past 8 is alignment, not indentation
        (b"x\n y\n", 4),  # so is one column
        (b"a\n   b\n      c\n  \n      d\n", 3),  # a blank line does not count
        (b"a\n        b\n\n  c\n", 8),
    ],
)
def test_tab_width_is_the_most_common_indentation_step(data: bytes, width: int) -> None:
    assert infer_tab_width(data) == width


def test_a_file_with_undecodable_bytes_keeps_them() -> None:
    data = b"\xff\xfe x\n\tif a {\n\t\tb()\n\t}\n"
    found = find_tolerant(data, "if a {\n    b()\n}", "if a {\n    c()\n}", tab_width=4, replace_all=False)
    assert found.rung == 2
    span = found.spans[0]
    assert data[: span.start] + span.new.encode("utf-8", "surrogateescape") + data[span.end :] == (
        b"\xff\xfe x\n\tif a {\n\t\tc()\n\t}\n"
    )


def test_line_range_says_one_line_once() -> None:
    assert (line_range(3, 3), line_range(3, 5)) == ("line 3", "lines 3-5")


def test_lookalikes_map_one_character_to_one() -> None:
    assert all(len(v) == 1 for v in LOOKALIKES.values())
    assert "\u00a0\u2003\u2018\u2019\u201c\u201d\u2013\u2014".translate(LOOKALIKES) == "  ''\"\"--"


# --- properties ------------------------------------------------------------------------------

WORD = st.text(alphabet="abcdefgxyz_()=:.0123", min_size=1, max_size=8)
LINE = st.lists(WORD, min_size=1, max_size=4).map(" ".join)
LEVEL = st.integers(min_value=0, max_value=3)
PROPERTY = settings(max_examples=40, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def indented_file(draw: st.DrawFn) -> tuple[list[int], list[str]]:
    bodies = draw(st.lists(LINE, min_size=3, max_size=12, unique=True))
    return [draw(LEVEL) for _ in bodies], bodies


def render(levels: list[int], bodies: list[str], unit: str, trailing: str = "") -> str:
    return "".join(unit * lvl + body + trailing + "\n" for lvl, body in zip(levels, bodies, strict=True))


@PROPERTY
@given(indented_file(), st.data())
def test_any_block_rewritten_with_other_indentation_is_found_where_it_is(
    shape: tuple[list[int], list[str]], data: st.DataObject
) -> None:
    levels, bodies = shape
    text = render(levels, bodies, "\t")
    first = data.draw(st.integers(0, len(bodies) - 2))
    last = data.draw(st.integers(first + 1, len(bodies) - 1))
    shift = data.draw(st.integers(0, 2))
    old = render([lvl + shift for lvl in levels[first : last + 1]], bodies[first : last + 1], "    ", " ")
    old_lines = old.split("\n")
    new = "\n".join([old_lines[0].rstrip() + "!", *old_lines[1:]])
    found = ladder(text, old, new)
    assume(old not in text)
    assert found.rung in (1, 2) and found.lines == f"lines {first + 1}-{last + 1}"
    bodies[first] += "!"
    assert applied(text, found) == render(levels, bodies, "\t")


@PROPERTY
@given(indented_file(), st.data())
def test_a_changed_character_outside_whitespace_never_matches(
    shape: tuple[list[int], list[str]], data: st.DataObject
) -> None:
    levels, bodies = shape
    text = render(levels, bodies, "\t")
    first = data.draw(st.integers(0, len(bodies) - 2))
    block = bodies[first : first + 2]
    which = data.draw(st.integers(0, 1))
    at = data.draw(st.integers(0, len(block[which]) - 1))
    assume(block[which][at] != " ")
    block[which] = block[which][:at] + "#" + block[which][at + 1 :]
    old = render(levels[first : first + 2], block, "  ")
    assert ladder(text, old).rung == 0


# --- edges that pin each rule (found by mutation testing) --------------------------------------


def test_a_lookalike_match_may_start_mid_line_and_be_found_twice_on_one_line() -> None:
    found = ladder("f(x, \u201ca\u201d + b)\n", '"a" + b', '"z" + b')
    assert found.rung == 3 and found.spans[0].start == len(b"f(x, ")
    twice = ladder("f(\u201ca\u201d, \u201ca\u201d)\n", '"a"', '"z"')
    assert [(s.start, s.end) for s in twice.spans] == [(2, 9), (11, 18)]
    every = ladder("f(\u201ca\u201d, \u201ca\u201d)\n", '"a"', '"z"', replace_all=True)
    assert applied("f(\u201ca\u201d, \u201ca\u201d)\n", every) == 'f("z", "z")\n'


def test_one_line_old_with_trailing_blanks_may_start_mid_line() -> None:
    found = ladder("total value = 10\n", "value = 10  ", "value = 11")
    assert found.rung == 1 and applied("total value = 10\n", found) == "total value = 11\n"


def test_a_first_line_indented_by_one_column_is_part_of_the_shift() -> None:
    data = "  x = 1\n    y = 2\n"
    found = ladder(data, " x = 1\n   y = 2\n", " x = 9\n   y = 2\n")
    assert found.rung == 2 and found.spans[0].start == 0
    assert applied(data, found) == "  x = 9\n    y = 2\n"


def test_a_window_may_start_with_an_empty_first_line() -> None:
    found = ladder("\n\ta\n", "\n    a\n", "\n    b\n")
    assert found.rung == 2 and applied("\n\ta\n", found) == "\n\tb\n"


def test_new_text_with_crlf_is_split_into_its_lines() -> None:
    found = ladder("\ta\n", "    a\n", "    b\r\n    c\r\n")
    assert found.spans[0].new == "\tb\n\tc\n" and not found.spans[0].crlf


@pytest.mark.parametrize(
    ("data", "old", "new", "detail", "after"),
    [
        (
            "if a:\n    b()\n",
            "if a:\n\tb()\n",
            "if a:\n\tc()\n",
            "the file indents with spaces, the old text with tabs; the new text was written with spaces",
            "if a:\n    c()\n",
        ),
        (
            "\tif a {\n\t\tb()\n\t}\n",
            "if a {\n    b()\n}",
            "if a {\n    c()\n}",
            "the file indents with tabs, the old text with 4 spaces, the old text is indented 4 columns "
            "less than the file; the new text was written with tabs, shifted 4 columns right",
            "\tif a {\n\t\tc()\n\t}\n",
        ),
        (
            "\tif a {\n\t\tb()\n\t}\n",
            "  if a {\n    b()\n  }",
            "  if a {\n    c()\n  }",
            "the file indents with tabs, the old text with 2 spaces; the new text was written with tabs",
            "\tif a {\n\t\tc()\n\t}\n",
        ),
    ],
)
def test_the_indentation_report_names_both_styles_and_the_shift(
    data: str, old: str, new: str, detail: str, after: str
) -> None:
    found = ladder(data, old, new, tab_width=4 if "2 spaces" not in detail else 2)
    assert (found.rung, found.detail) == (2, detail)
    assert applied(data, found) == after


def test_the_lookalike_report_names_each_pair_once_and_at_most_three() -> None:
    found = ladder("it\u2019s \u2013 ok\u2019\n", "it's - ok'", "it is - ok")
    assert found.detail == (
        "the file has right single quotation mark (U+2019) where the old text has apostrophe (U+0027), "
        "the file has en dash (U+2013) where the old text has hyphen-minus (U+002D); unchanged lines kept "
        "the file's characters"
    )
    many = ladder("a\u2018b\u2019c\u201cd\u201de\n", "a'b'c\"d\"e", "x")
    assert many.detail.count("the file has") == 3 and "right double" not in many.detail


def test_the_lookalike_report_reads_a_mid_line_start_from_where_the_match_starts() -> None:
    found = ladder("x = \u201ca\u201d\ny = 1\n", '"a"\ny = 1', '"b"\ny = 1')
    assert found.rung == 3 and found.detail.startswith(
        "the file has left double quotation mark (U+201C) where the old text has quotation mark (U+0022), "
        "the file has right double quotation mark (U+201D)"
    )


@pytest.mark.parametrize(
    ("data", "width"),
    [
        (b"a:\n  b:\n    c: 1\n  d: 2\ne: 3\n", 2),  # dedents count as steps too
        (b"x\n\t\ty\n    z\n", 4),  # a tab-indented line is not a space step
        (b"a\n   b\n\n   c\n      d\n", 3),
        (b"a\n  b\n  c\n      d\n      e\n          f\n", 4),
    ],
)
def test_tab_width_counts_steps_between_neighbouring_lines(data: bytes, width: int) -> None:
    assert infer_tab_width(data) == width


# --- the candidate search (its filters change only the speed, so they are tested directly) ---

from filegate.tools.edit.hits import FileLine, OldText  # noqa: E402
from filegate.tools.edit.matching import (  # noqa: E402
    COMMON,
    _Loose,
    _rarest,
    _window_starts,
)


def _lines_from(data: bytes, start: int, count: int) -> list[FileLine] | None:
    """``count`` lines from the line starting at ``start``; None if the file ends first (the
    oracle's way to cut lines: the ladder's own reads them lazily, _Loose.line)."""
    lines: list[FileLine] = []
    while len(lines) < count:
        if start >= len(data):
            return None
        newline = data.find(b"\n", start)
        if newline < 0:
            end = stop = len(data)
        else:
            stop = newline + 1
            end = newline - 1 if newline > start and data[newline - 1] == 13 else newline
        lines.append(FileLine(start, end, stop, data[start:end].decode("utf-8", "surrogateescape")))
        start = stop
    return lines


def test_the_rarest_anchor_is_looked_around_and_a_missing_one_is_a_miss() -> None:
    data = b"aaa bbb aaa ccc aaa bbb\n"
    assert _rarest(data, [("aaa", 0), ("bbb", 1), ("ccc", 2)]) == ("ccc", 2)
    assert _rarest(data, [("aaa", 0), ("bbb", 1)]) == ("bbb", 1)
    assert _rarest(data, [("aaa", 0), ("zzz", 1)]) is None
    assert _rarest(data, [("ccc", 0), ("zzz", 1)]) == ("ccc", 0)  # one place: no need to count on
    assert _rarest(data, [("bbb", 0), ("bb", 1)]) == ("bbb", 0)  # a tie keeps the longer
    assert _rarest(b"", []) is None


def test_a_common_anchor_is_counted_only_up_to_a_cap() -> None:
    data = b"x " * (COMMON + 10) + b"y " * (COMMON + 5) + b"z z\n"
    assert _rarest(data, [("x", 0), ("y", 1)]) == ("x", 0)  # both capped: the first
    assert _rarest(data, [("x", 0), ("y", 1), ("z", 2)]) == ("z", 2)


def _windows(
    data: bytes, anchor: str, index: int, count: int, fits: Callable[[str], bool]
) -> list[list[str]]:
    """The lines of each run of ``count`` lines the search looks at (a line that fits: ``fits``
    of its text)."""

    def fits_at(start: int, end: int) -> bool:
        return fits(data[start:end].decode("utf-8", "surrogateescape"))

    found = (_lines_from(data, start, count) for start in _window_starts(data, anchor, index, fits_at))
    return [[line.text for line in w] for w in found if w is not None]


def test_windows_are_the_runs_of_lines_around_each_line_holding_the_anchor() -> None:
    data = b"a\nkey key\nb\nkey\nc"
    always = lambda line: True  # noqa: E731
    assert _windows(data, "key", 1, 2, always) == [["a", "key key"], ["b", "key"]]
    assert _windows(data, "key", 0, 2, always) == [["key key", "b"], ["key", "c"]]
    assert _windows(data, "key", 2, 3, always) == [["key key", "b", "key"]]  # none before line 1
    assert _windows(data, "c", 0, 1, always) == [["c"]]  # the last line, no line break
    assert _windows(data, "key", 0, 1, lambda line: line == "key") == [["key"]]
    assert _windows(b"x\r\nkey\r\n", "key", 1, 2, lambda line: line == "key") == [["x", "key"]]
    assert _windows(b"\xffkey\n", "key", 0, 1, lambda line: True) == [["\udcffkey"]]
    assert _windows(b"key", "key", 0, 1, lambda line: line == "key") != []
    assert _windows(b"key\r", "key", 0, 1, lambda line: line == "key") == [["key\r"]]  # a bare CR at the end


def _fits(old: str, index: int) -> Callable[[str], bool]:
    def fits(line: str) -> bool:
        loose = _Loose(line.encode(), OldText(old), lambda: None)
        return loose.fits(index)(0, len(loose.data))

    return fits


def test_the_anchor_line_test_follows_where_the_line_is_in_old() -> None:
    one = _fits('say "hi"', 0)
    assert one("x = say \u201chi\u201d + y") and not one("say hi")
    first = _fits('say "hi"\nnext', 0)
    assert first("x = say \u201chi\u201d") and not first("say \u201chi\u201d x")
    last = _fits('before\nsay "hi"', 1)
    assert last("  say \u201chi\u201d + x") and not last("x say \u201chi\u201d")
    whole = _fits('before\nsay "hi"\n', 1)
    assert whole("\tsay \u201chi\u201d  ") and not whole("say \u201chi\u201d + x")
    middle = _fits('a\nsay "hi"\nb', 1)
    assert (
        middle("  say \u201chi\u201d")
        and not middle("say \u201chi\u201d x")
        and not middle("x say \u201chi\u201d")
    )
    ascii_only = _fits("a\nsay hi\nb", 1)  # an ASCII line is compared as bytes
    assert ascii_only(" say hi\t") and not ascii_only("say hi!") and ascii_only("say\u00a0hi")


def _may_match(lines: list[str], old: str) -> bool:
    loose = _Loose("\n".join(lines).encode(), OldText(old), lambda: None)
    return loose.window(0)


def test_may_match_compares_every_line_as_rung_3_would() -> None:
    old = 'b "c"\nd\ne'
    assert _may_match(["a b \u201cc\u201d", "\td", "e f"], old)
    assert not _may_match(["a b \u201cc\u201d x", "d", "e"], old)  # first: must end the line
    assert not _may_match(["b \u201cc\u201d", "d x", "e"], old)  # middle: the whole line
    assert not _may_match(["b \u201cc\u201d", "d", "x e"], old)  # last: must start it
    assert not _may_match(["b \u201cc\u201d", "d"], old)  # the file ends first
    assert _may_match(["x \u2018y\u2019 z"], "'y'")
    assert not _may_match(["x y z"], "'y'")


def test_more_edges_of_the_rungs() -> None:
    # A one-line old with a line break may start mid-line.
    found = ladder("x = value  \n", "value\n", "v2\n")
    assert found.rung == 1 and applied("x = value  \n", found) == "x = v2\n"
    # A last line with trailing blanks ends the match at the line's end, before its break.
    found = ladder("a\nb\nc\n", "a\nb  ", "X")
    assert found.rung == 1 and applied("a\nb\nc\n", found) == "X\nc\n"
    # Both leading and trailing blanks: the whole line, and only the whole line.
    found = ladder("  x = f(y)\n", "\tx = f(y)  ", "\tx = g(y)")
    assert found.rung == 2 and applied("  x = f(y)\n", found) == "  x = g(y)\n"
    assert ladder("  x = f(y) + 1\n", "\tx = f(y)  ").rung == 0
    # Line numbers count the lines before, from the first byte.
    assert ladder("\nx\n\ta\n", "    a\n").lines == "line 3"
    # An old whose last line is blanks does not match past the end of the file.
    assert ladder("\ta\n", "  a\n  ").rung == 0
    # Undecodable bytes in any line of a window are kept as they are.
    raw = b"a\xff\n\tx = 1\n"
    found = find_tolerant(raw, "\n    x = 1\n", "\n    x = 2\n", tab_width=4, replace_all=False)
    assert found.rung == 2 and found.spans[0].new == "\n\tx = 2\n"


def test_overlapping_and_adjacent_candidates() -> None:
    # Without replace_all every candidate counts, overlapping ones too.
    assert len(ladder("}  \n}  \n}  \n", "}\n}\n").spans) == 2
    # Side by side, both are replaced.
    found = ladder("x  \nx  \n", "x\n", "y\n", replace_all=True)
    assert applied("x  \nx  \n", found) == "y\ny\n"
    # Overlapping and repeated matches inside one line are each a candidate.
    assert len(ladder("\u2018a\u2019 \u2018a\u2019 \u2018a\u2019\n", "'a'", "x").spans) == 3


def test_a_rung_3_match_keeps_the_new_texts_indentation_as_given() -> None:
    data = "if a:\n    say(\u201chi\u201d)\n"
    found = ladder(data, 'if a:\n    say("hi")\n', 'if a:\n\tsay("bye")\n')
    assert found.rung == 3 and applied(data, found) == 'if a:\n\tsay("bye")\n'


def test_an_old_text_without_indentation_is_named_so() -> None:
    found = ladder("\tx = 1\n\ty = 2\n", "x = 1\ny = 2\n", "x = 1\ny = 3\n")
    assert found.rung == 2 and found.detail.startswith(
        "the file indents with tabs, the old text with no indentation, the old text is indented 4 columns less"
    )


def test_reports_and_rules_at_their_last_edges() -> None:
    # Both tolerances in one report, joined as two clauses.
    found = ladder("\tsay(\u201chi\u201d)\n", '    say("hi")\n', '    say("yo")\n')
    assert found.rung == 3 and found.detail.startswith(
        "the file indents with tabs, the old text with 4 spaces; the new text was written with tabs; "
        "the file has left double quotation mark"
    )
    # A one-column shift is named, and its direction.
    shifted = ladder("  x = 1\n    y = 2\n", " x = 1\n   y = 2\n", " x = 9\n   y = 2\n")
    assert "indented 1 columns less than the file" in shifted.detail
    assert shifted.detail.endswith("shifted 1 columns right")
    # An old text written with CRLF is matched line by line.
    assert ladder("\ta\n\tb\n", "    a\r\n    b\r\n").rung == 2
    # Form feeds and vertical tabs are not blanks: neither trailing whitespace nor indentation.
    assert ladder("x = 1\x0c\ny\n", "x = 1\ny").rung == 0
    assert ladder("a\n\x0bb\n", "a\nb").rung == 0
    # A no-break space in the indentation is not reported as a lookalike of the text, but as
    # the indentation's.
    nbsp = ladder("\u00a0say \u201chi\u201d\n", ' say "hi"', ' say "yo"')
    assert nbsp.rung == 3 and nbsp.detail == (
        "the file has left double quotation mark (U+201C) where the old text has quotation mark (U+0022), "
        "the file has right double quotation mark (U+201D) where the old text has quotation mark (U+0022), "
        "the file indents with no-break space (U+00A0); unchanged lines kept the file's characters"
    )
    # Each line's lookalikes are read from that line's own start.
    two = ladder("x = \u201ca\u201d\n\u2018b\u2019\n", "\"a\"\n'b'", "z")
    assert "left single quotation mark (U+2018)" in two.detail


@pytest.mark.parametrize(
    ("data", "width"),
    [
        (b"a\n\n  b\n    c\n", 2),  # a blank line is skipped, not the end
        (b"  a\n", 2),  # the first line steps from column 0
        (b"a\n  b\n      \n  c\n", 2),  # a line of blanks has no indentation to count
    ],
)
def test_tab_width_skips_blank_lines(data: bytes, width: int) -> None:
    assert infer_tab_width(data) == width


def test_lookalikes_in_the_old_text_and_uneven_shifts() -> None:
    # The model's typographic quotes match the file's ASCII ones.
    assert ladder('say "hi" now\n', "say \u201chi\u201d now", "x").rung == 3
    # Two different shifts are not one indentation.
    assert ladder("a\n    b\n    c\n", "a\n  b\n    c").rung == 0
    # A match ending at the start of a blank last line stops before its line break.
    found = ladder("a  \n\nb\n", "a\n  ", "X")
    assert found.rung == 1 and applied("a  \n\nb\n", found) == "X\nb\n"


# --- the last survivors: kept lines, odd first characters, mid-line matches, alignment ----------


def test_a_kept_line_after_a_changed_one_is_the_files_and_the_lines_after_it_are_the_new_texts() -> None:
    data = "x = 1  \ny = 2  \nz = 3  \n"
    found = ladder(data, "x = 1\ny = 2\nz = 3\n", "x = 10\ny = 2\nz = 30\n")
    assert found.rung == 1 and applied(data, found) == "x = 10\ny = 2  \nz = 30\n"


def test_a_new_line_starting_with_a_form_feed_has_no_indentation_to_convert() -> None:
    # A form feed is not a blank (test_reports_and_rules_at_their_last_edges): a page break
    # opening a line is the line's text, kept where the new text put it.
    found = ladder("\tx = 1\n", "    x = 1\n", "    x = 1\n\x0cy = 2\n")
    assert found.rung == 2 and found.spans[0].new == "\tx = 1\n\x0cy = 2\n"


def test_a_mid_line_lookalike_match_on_an_indented_line_is_not_an_indentation_match() -> None:
    # The match starts inside the line: the line's indentation was not compared, so nothing is
    # reported about it and a multi-line new text is written as given.
    data = "\tx = say(\u201chi\u201d)\n"
    found = ladder(data, 'say("hi")', 'say("hi",\n    loud=True)')
    assert found.rung == 3 and found.detail.startswith("the file has left double quotation mark")
    assert "indent" not in found.detail
    assert applied(data, found) == '\tx = say("hi",\n    loud=True)\n'


def test_a_no_break_space_in_the_old_texts_indentation_is_not_reported_as_a_lookalike_of_the_text() -> None:
    found = ladder(" say \u201chi\u201d\n", '\u00a0say "hi"', '\u00a0say "yo"')
    assert found.rung == 3 and found.detail == (
        "the file has left double quotation mark (U+201C) where the old text has quotation mark (U+0022), "
        "the file has right double quotation mark (U+201D) where the old text has quotation mark (U+0022), "
        "the old text indents with no-break space (U+00A0); unchanged lines kept the file's characters"
    )
    assert found.spans[0].new == ' say "yo"'


@pytest.mark.parametrize(
    ("data", "width"),
    [
        # Lines opening with a tab are left out, not read as column 0: 2, not 6.
        (b"a\n  b\n    c\n      d\n\te\n      f\n\tg\n      h\n", 2),
        # Only spaces are indentation: a line starting with X is at column 0.
        (b"X = 1\n    y\nX = 2\n    z\n", 4),
    ],
)
def test_tab_width_reads_only_spaces_as_indentation(data: bytes, width: int) -> None:
    assert infer_tab_width(data) == width


def test_a_width_between_tab_stops_is_tabs_then_spaces() -> None:
    # An aligned continuation line: two tabs of indentation, then two spaces of alignment.
    data = "\tif a {\n\t\tb()\n\t}\n"
    found = ladder(data, "    if a {\n        b()\n    }", "    if a {\n        c(1,\n          2)\n    }")
    assert found.rung == 2 and applied(data, found) == "\tif a {\n\t\tc(1,\n\t\t  2)\n\t}\n"


def test_a_one_line_old_with_its_line_break_keeps_the_files_line_where_new_keeps_it() -> None:
    found = ladder("a = 1  \n", "a = 1\n", "a = 1\nb = 2\n")
    assert found.rung == 1 and found.spans[0].new == "a = 1  \nb = 2\n"


def test_a_kept_line_repeated_in_new_takes_the_files_text_where_it_lines_up_with_old() -> None:
    # Which of two equal new lines is "the" old line: an old text ending in a line break lines
    # up with the copy the new text ends on; one without, with the first copy.
    repeated = ladder("x = 1  \n", "x = 1\n", "x = 1\ny = 2\nx = 1\n")
    assert repeated.spans[0].new == "x = 1\ny = 2\nx = 1  \n"
    unbroken = ladder("a = 1  \nb = 2  \n", "a = 1\nb = 2", "a = 1\nb = 2\nc = 3\na = 1\nb = 2\n")
    assert unbroken.spans[0].new == "a = 1  \nb = 2\nc = 3\na = 1\nb = 2\n"


def test_a_file_ending_in_a_bare_carriage_return_keeps_it() -> None:
    found = ladder(b"\n\tkey\r", "\n    key", "\n    k2")
    assert found.rung == 2 and (found.spans[0].start, found.spans[0].end) == (0, 5)
    assert found.spans[0].new == "\n\tk2"


def test_windows_walk_back_only_from_a_line_that_fits_and_stop_at_the_first_line() -> None:
    always = lambda line: True  # noqa: E731
    # The anchor on the file's first line cannot have a line before it: one window, not two.
    assert _windows(b"key\nkey\n", "key", 1, 2, always) == [["key", "key"]]
    # A line that does not fit is not walked back from (not even from the file's end).
    assert _windows(b"zz key\na\nb", "key", 1, 2, lambda line: line == "key") == []
    # Walking back reaches an empty first line.
    assert _windows(b"\nx\nkey\n", "key", 2, 3, always) == [["", "x", "key"]]


def test_an_old_text_indented_with_no_break_spaces_is_named_and_new_is_indented_with_spaces() -> None:
    # Copied from a rendered page: the indentation became no-break spaces. Rung 3 read them as
    # spaces, so the new text's are written as spaces too (U+00A0 in indentation breaks Python).
    nbsp = "\u00a0" * 4
    data = "def f(x):\n    return x\n"
    found = ladder(data, f"def f(x):\n{nbsp}return x\n", f"def f(x):\n{nbsp}return x + 1\n")
    assert found.rung == 3 and applied(data, found) == "def f(x):\n    return x + 1\n"
    assert found.detail == (
        "the old text indents with no-break space (U+00A0); unchanged lines kept the file's characters"
    )
    # Only indentation: a lookalike space inside a line, or on a line continued mid-line, stays.
    one = "\u00a0"
    inside = ladder("x= 1\n", f"={one}1", f"{one}={one}2\n{nbsp}y")
    assert inside.spans[0].start == 1 and inside.spans[0].new == f"{one}={one}2\n    y"
    # Indentation ends at a form feed (not a blank): a no-break space after it is text.
    paged = ladder("x= 1\n", f"={one}1", f"={one}2\n{one}\x0c{one}y")
    assert paged.spans[0].new == f"={one}2\n \x0c{one}y"
    # A match starting mid-line did not compare that line's indentation: nothing said of it.
    mid = ladder(f"{one}x = \u201ca\u201d\n", '"a"', '"b"')
    assert mid.rung == 3 and "indents" not in mid.detail


# --- the bounds (issue 53): places looked at lazily, at most MAX_CANDIDATES, within a budget ----

from filegate.tools.edit.hits import span_of  # noqa: E402
from filegate.tools.edit.matching import (  # noqa: E402
    CROWDED_LISTED,
    MAX_CANDIDATES,
    MAX_LISTED,
    _anchors,
    _match_window,
    _without_overlaps,
)


def brute_force(
    data: bytes, old: str, tab_width: int, replace_all: bool
) -> tuple[int, list[tuple[int, int]]]:
    """SPEC §8.2 by definition: every run of lines from every line start compared at each rung,
    no anchor, no filter, no bound (the ladder's search may only be faster than this)."""
    shape = OldText(old)
    if not _anchors(old):
        return 0, []  # nothing to anchor on: nothing matches (test_nothing_to_anchor_on_matches_nothing)
    starts = [0, *(i + 1 for i, b in enumerate(data) if b == 10 and i + 1 < len(data))] if data else []
    for rung in (1, 2, 3):
        olds = shape.shapes(rung)
        hits = []
        for start in starts:
            window = _lines_from(data, start, len(shape.lines))
            if window is not None:
                hits += _match_window(window, olds, rung, shape.ends_with_newline, tab_width)
        if hits:
            chosen = _without_overlaps(hits) if replace_all else hits
            return rung, sorted(span_of(h) for h in chosen)
    return 0, []


PIECES = [
    "x = 1",
    "  x = 1",
    "\tx = 1",
    "x = 1  ",
    "y()",
    "\ty()",
    "    y()",
    'say "hi"',
    "say \u201chi\u201d",
    "a\u00a0b",
    "a b",
    "}",
    "",
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=14),
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=4),
    st.sampled_from(["\n", "\r\n"]),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_the_bounded_lazy_search_finds_what_every_place_compared_finds(
    lines: list[str], old_lines: list[str], eol: str, final: bool, old_final: bool, replace_all: bool
) -> None:
    """The lazy search (anchors, rung-3 filter, kept lines) against the definition: the same
    rung and, within what an ambiguity lists, the same places."""
    data = (eol.join(lines) + (eol if final else "")).encode()
    old = "\n".join(old_lines) + ("\n" if old_final else "")
    assume(old.encode() not in data and old.replace("\n", "\r\n").encode() not in data)
    found = find_tolerant(data, old, "NEW", tab_width=4, replace_all=replace_all)
    rung, spans = brute_force(data, old, 4, replace_all)
    assert not found.crowded and found.rung == rung
    got = [(s.start, s.end) for s in found.spans]
    if replace_all or len(spans) <= MAX_LISTED:
        assert got == spans and found.matches == len(spans)
    else:
        assert got == spans[:MAX_LISTED] and found.matches > MAX_LISTED


def test_more_places_than_it_may_look_at_is_refused_naming_the_first_few() -> None:
    """A file the model wrote of one line repeated and an ``old`` of 200 such lines that
    differs at its end: every line is a place to look at. It took minutes and gigabytes."""
    data = b"a\n" * (64 << 10)
    found = ladder(data, "a\n" * 199 + "a-a")
    assert found.rung == 0 and found.crowded == tuple(range(1, CROWDED_LISTED + 1))
    assert ladder(data, "a \n" * 200).crowded  # would match everywhere at rung 1
    # Just within the bound: every place looked at, the ambiguity counted past what is listed.
    within = b"a\n" * (MAX_CANDIDATES - 1) + b"b\n"
    ambiguous = ladder(within, "a \na \n")
    assert ambiguous.rung == 1 and not ambiguous.crowded and ambiguous.matches > MAX_LISTED
    assert [s.first_line for s in ambiguous.spans] == list(range(1, MAX_LISTED + 1))
    # The one place that matches among many that look like it is still found.
    many = b"    item(1)\n" * (MAX_CANDIDATES // 2) + b"    item(2)\n\tend\n"
    one = ladder(many, "item(2)\n  end\n", "item(3)\n  end\n")
    assert one.rung == 2 and one.lines == f"lines {MAX_CANDIDATES // 2 + 1}-{MAX_CANDIDATES // 2 + 2}"


def test_a_long_old_over_many_near_copies_stops_at_the_line_budget() -> None:
    data = b"a\n" * (1 << 19)  # 1 MiB
    found = ladder(data, "a\n" * 1999 + "a-a")  # 2,000 lines compared at each place
    assert found.crowded == tuple(range(1, CROWDED_LISTED + 1))


def test_the_search_keeps_no_list_of_lines_per_place() -> None:
    """Memory: 256 KiB of one line and a 200-line old matching it everywhere loosely took the
    server to 3.7 GB; the search now holds a bounded set of lines (tracemalloc's peak)."""
    import tracemalloc

    data = b"a\n" * (128 << 10)
    tracemalloc.start()
    try:
        found = ladder(data, "a \n" * 200)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert found.crowded and peak < 16 << 20, peak


def test_the_search_checks_its_call_and_stops_when_told() -> None:
    calls = []

    def check() -> None:
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("stopped")

    with pytest.raises(RuntimeError, match="stopped"):
        find_tolerant(
            b"a\n" * (1 << 16), "a\n" * 199 + "a-a", "b", tab_width=4, replace_all=False, check=check
        )
    assert len(calls) == 3
