"""escape/unescape at the edges of each range (SPEC §2.9): the last safe and first unsafe code
point of every class, the surrogate range that stands for bytes, and what unescape leaves."""

from __future__ import annotations

import pytest

from filegate.policy.escape import escape, escape_text, has_unsafe_text, unescape


@pytest.mark.parametrize(
    ("ch", "shown"),
    [
        ("\x00", "\\x00"),
        ("\x1f", "\\x1f"),
        ("\x7f", "\\x7f"),
        ("\x80", "\\u0080"),
        ("\x9f", "\\u009f"),
        ("\u061c", "\\u061c"),
        ("\u202a", "\\u202a"),
        ("\u2069", "\\u2069"),
        ("\ud7ff", "\ud7ff"),  # the last code point before the surrogates is an ordinary one
        ("\ud800", "\\ud800"),
        ("\udc7f", "\\udc7f"),  # a surrogate, but not surrogateescape's spelling of a byte
        ("\udc80", "\\x80"),  # surrogateescape's byte 0x80
        ("\udcff", "\\xff"),
        ("\udd00", "\\udd00"),
        ("\udfff", "\\udfff"),
        (" ", " "),
        ("~", "~"),
        ("\xa0", "\xa0"),
        ("\u00ff", "\u00ff"),
        ("\u2027", "\u2027"),
        ("\u202f", "\u202f"),
    ],
)
def test_escape_at_each_range_edge(ch: str, shown: str) -> None:
    assert escape(f"a{ch}b") == f"a{shown}b"


@pytest.mark.parametrize(
    ("text", "shown", "unsafe"),
    [
        ("tab\tand\nnewline and `tick`", "tab\tand\nnewline and `tick`", False),
        ("cr\rhere", "cr\\x0dhere", True),
        ("esc\x1b", "esc\\x1b", True),
        ("nul\x00", "nul\\x00", True),
        ("del\x7f", "del\\x7f", True),
        ("bidi\u202e", "bidi\\u202e", True),
        ("sep\u2029", "sep\\u2029", True),
        ("lone\ud800", "lone\\ud800", True),
        ("byte\udcfe", "byte\\xfe", True),
        ("caf\u00e9", "caf\u00e9", False),
        ("he\u0301\u0302 two marks", "he\u0301\u0302 two marks", False),
        ("he\u0301\u0302\u0303 three", "he\\u0301\\u0302\\u0303 three", True),
    ],
)
def test_escape_text_keeps_layout_and_flags_the_rest(text: str, shown: str, unsafe: bool) -> None:
    assert escape_text(text) == shown
    assert has_unsafe_text(text) is unsafe


@pytest.mark.parametrize(
    ("shown", "name"),
    [
        ("a\\x41b", "aAb"),
        ("a\\x7f", "a\x7f"),
        ("a\\x80", "a\udc80"),
        ("a\\xFF", "a\udcff"),
        ("a\\u202E", "a\u202e"),
        ("a\\u00e9", "a\u00e9"),
        ("a\\x4", "a\\x4"),  # too short: not an escape
        ("a\\u12", "a\\u12"),
        ("a\\xzz", "a\\xzz"),
        ("a\\\\x41", "a\\x41"),  # a doubled backslash is one backslash; what follows is text
        ("a\\U000e0041", "a\U000e0041"),
        ("a\\U00110000", "a\\U00110000"),  # past Unicode: not an escape
        ("no backslash", "no backslash"),
    ],
)
def test_unescape_reads_exactly_two_or_four_hex_digits(shown: str, name: str) -> None:
    assert unescape(shown) == name
