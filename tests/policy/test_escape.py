"""SPEC §2.9: what a shown string may hold, and the way back."""

from __future__ import annotations

import os

import pytest

from filegate.policy.escape import escape, escape_text, has_unsafe_text, unescape


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("plain/name.py", "plain/name.py"),
        ("a\nb", "a\\x0ab"),
        ("a\rb", "a\\x0db"),
        ("\x1b[2Kx", "\\x1b[2Kx"),
        ("tab\there", "tab\\x09here"),
        ("del\x7f", "del\\x7f"),
        ("c1\x9b", "c1\\u009b"),  # \xNN >= 80 is kept for undecodable bytes
        ("tick`s", "tick\\x60s"),
        ("rtl\u202eexe.txt", "rtl\\u202eexe.txt"),
        ("iso\u2066x\u2069", "iso\\u2066x\\u2069"),
        ("ls\u2028ps\u2029", "ls\\u2028ps\\u2029"),
        ("alm\u061c", "alm\\u061c"),
        ("lrm\u200e\u200f", "lrm\\u200e\\u200f"),
        (os.fsdecode(b"caf\xe9.py"), "caf\\xe9.py"),
        ("lone\ud800", "lone\\ud800"),
        ("caf\u00e9 ünïcode ok", "caf\u00e9 ünïcode ok"),
        # Issue 22: invisible characters, stacked marks, and the backslash itself.
        ("cfg\\xff.py", "cfg\\\\xff.py"),
        ("a\\b", "a\\\\b"),
        ("hangul\u3164filler\u115f\u1160\uffa0", "hangul\\u3164filler\\u115f\\u1160\\uffa0"),
        ("zw\u200b\u200c\u200d\u2060\u2064", "zw\\u200b\\u200c\\u200d\\u2060\\u2064"),
        ("vs\ufe0f\U000e0100", "vs\\ufe0f\\U000e0100"),
        ("tag\U000e0041\U000e007f", "tag\\U000e0041\\U000e007f"),
        ("shy\u00ad cgj\u034f mvs\u180b\u180f", "shy\\u00ad cgj\\u034f mvs\\u180b\\u180f"),
        ("bom\ufeff", "bom\\ufeff"),
        ("zalgo z\u0301\u0302\u0303!", "zalgo z\\u0301\\u0302\\u0303!"),
        ("two marks \u1ec7 e\u0323\u0302", "two marks \u1ec7 e\u0323\u0302"),  # Vietnamese: kept
    ],
)
def test_escape_leaves_no_unsafe_character(raw: str, shown: str) -> None:
    assert escape(raw) == shown
    assert "\n" not in escape(raw) and "\r" not in escape(raw) and "`" not in escape(raw)
    escape(raw).encode("utf-8")  # never a lone surrogate: every transport can carry it


@pytest.mark.parametrize(
    "raw",
    [
        "a\nb",
        "\x1b]52;c;AAAA\x07",
        "tick`",
        os.fsdecode(b"\xff\xfe name"),
        "rtl\u202e",
        "x\u2028y",
        "cfg\\xff.py",
        "c1\x9b",
        "\\\\",
        "a\\\u3164",
        "t\U000e0041",
        "z\u0301\u0302\u0303",
        "\\x41\\u0041",
    ],
)
def test_unescape_gives_back_the_same_name(raw: str) -> None:
    assert unescape(escape(raw)) == raw
    assert os.fsencode(unescape(escape(raw))) == os.fsencode(raw)


def test_unescape_leaves_plain_names_alone() -> None:
    assert unescape("src/main.py") == "src/main.py"
    assert unescape("C:\\not-an-escape") == "C:\\not-an-escape"


def test_escape_text_keeps_layout_and_backticks_but_not_control_sequences() -> None:
    text = "def f():\n\treturn `x`\r\n\x1b[2K\u202e"
    assert escape_text(text) == "def f():\n\treturn `x`\\x0d\n\\x1b[2K\\u202e"
    assert has_unsafe_text(text)
    assert not has_unsafe_text("plain\ttext\n")


def test_more_than_two_stacked_combining_marks_are_escaped_and_two_are_kept() -> None:
    two, four = "e\u0301\u0302.txt", "z\u0301\u0302\u0303\u0304.txt"
    assert escape(two) == two  # Vietnamese and the like keep their two marks
    assert escape(four) == "z\\u0301\\u0302\\u0303\\u0304.txt"
    assert unescape(escape(four)) == four
    # a run of three after a letter that already has its own (precomposed) accent
    assert escape("é\u0301\u0302\u0303x") == "é\\u0301\\u0302\\u0303x"


def test_escape_log_escapes_again_without_doubling_backslashes() -> None:
    from filegate.policy.escape import escape_log

    once = escape("cfg\\x\nline\u202e.py")
    assert escape_log(once) == once  # escaping an escaped field again changes nothing
    assert escape_log("a\nb\\c") == "a\\x0ab\\c"  # a library's raw line break, its backslash kept
    assert escape_log("z\u0301\u0302\u0303") == "z\\u0301\\u0302\\u0303"


def test_a_log_record_keeps_the_backticks_that_quote_its_names() -> None:
    """A record reads as its sentence (`a.txt`, not \\x60a.txt\\x60); a backtick inside a name
    was escaped with the name, as a field, before the record was made."""
    from filegate.policy.escape import escape_record as escape_log

    record = f"Failed to keep the previous content of `{escape('we`ird.txt')}` in the write history"
    assert escape_log(record) == (
        "Failed to keep the previous content of `we\\x60ird.txt` in the write history"
    )
    assert escape_log("`a`\n") == "`a`\\x0a"
