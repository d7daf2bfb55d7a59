"""filegate/charsets.py: SPEC §8.1's exact rule, over every codec Python knows.

A codec is allowed only if any string of ASCII bytes, in any order, decodes to the same ASCII
text (and that text encodes back to the same bytes): no shift states, no escape sequences.
The rule is checked here against an oracle that knows nothing of how charsets.py decides: each
codec is run on the whole ASCII alphabet both ways, on every byte alone, and on each stateful
codec's own shift and escape sequences (HZ's ``~{``, ISO-2022's ESC and SO, UTF-7's ``+...-``,
the escape codecs' backslashes, IDNA's ``xn--``); ISO-2022-JP passes ``bytes(range(128))``,
so the alphabet alone is not enough.
"""

from __future__ import annotations

import codecs
import encodings
import encodings.aliases
import pkgutil
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from filegate.charsets import WIDE, RefusedCodec, allowed_codec, ascii_faithful, usable_codec

# Every name Python's codec registry answers to: the encodings package's modules and every alias.
NAMES = sorted(
    {m.name for m in pkgutil.iter_modules(encodings.__path__)} - {"aliases"}
    | set(encodings.aliases.aliases)
    | set(encodings.aliases.aliases.values())
)

# Each stateful codec's own ways in: shift and escape sequences, with some text after them.
SHIFTS = [
    b"~{;>PWNED;~}",  # HZ: GB2312 between ~{ and ~}
    b"~~",  # HZ: an escaped tilde
    b"\x1b$B%H\x1b(B",  # ISO-2022-JP: JIS X 0208 and back to ASCII
    b"\x1b$(D!!\x1b(B",  # ISO-2022-JP-1/2
    b"\x1b$)C\x0e!!\x0f",  # ISO-2022-KR: designation, shift out, shift in
    b"\x1b.A\x1bNa",  # ISO-2022-JP-2: G2 single shift
    b"+AAo-",  # UTF-7: a line break
    b"+-",  # UTF-7: a plus
    b"\\u0041\\x41\\101\\N{LATIN SMALL LETTER A}",  # unicode_escape, raw_unicode_escape
    b"xn--ls8h",  # idna, punycode
    b"a.xn--ls8h.",
]


def oracle(name: str) -> bytes | None:
    """An ASCII string that does not read as itself in ``name`` (or b"" when the codec is not
    text at all), else None. Independent of charsets.py: whole strings, no decoder state."""
    try:
        "".encode(name)
        b"".decode(name)
    except (LookupError, UnicodeError):
        return b""
    alphabet = bytes(range(128))
    for data in [alphabet, alphabet[::-1], *(bytes([b]) for b in range(128)), *SHIFTS]:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # unicode_escape's "\]"
                if data.decode(name) != data.decode("ascii") or data.decode("ascii").encode(name) != data:
                    return data
        except (UnicodeError, ValueError):
            return data
    return None


def known(name: str) -> bool:
    try:
        codecs.lookup(name)
    except LookupError:
        return False  # a platform's own codec (mbcs, oem on Windows only)
    return True


@pytest.mark.parametrize("name", NAMES)
def test_every_codec_python_knows_is_allowed_exactly_when_ascii_reads_as_itself(name: str) -> None:
    if not known(name):
        assert usable_codec(name) is None
        return
    witness = oracle(name)
    normal = codecs.lookup(name).name
    if normal == "utf-8-sig":  # its encoder writes the mark, which decide() keeps apart: UTF-8
        assert usable_codec(name) == "utf-8"
        return
    if normal in WIDE or normal in ("utf-16", "utf-32"):  # not ASCII-faithful: with their BOM only
        assert witness is not None and usable_codec(name) is None
        bom = normal if normal in WIDE else f"{normal}-le"
        assert usable_codec(name, bom=bom) == bom
        return
    if witness is None:
        assert usable_codec(name) is not None, name
    else:
        with pytest.raises(RefusedCodec) as no:
            allowed_codec(name)
        assert no.value.sentence().startswith(f"The codec {name} is refused: "), no.value.sentence()


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("hz", "the byte 0x7E ('~') starts a shift or escape sequence"),
        ("iso-2022-jp", "the byte 0x1B starts a shift or escape sequence"),
        ("iso2022_jp_2", "the byte 0x1B starts a shift or escape sequence"),
        ("iso-2022-kr", "the byte 0x0E starts a shift or escape sequence"),
        ("utf-7", "the byte 0x2B ('+') starts a shift or escape sequence"),
        ("unicode_escape", "the byte 0x5C ('\\\\') starts a shift or escape sequence"),
        ("raw_unicode_escape", "the byte 0x5C ('\\\\') starts a shift or escape sequence"),
        ("idna", "the byte 0x00 starts a shift or escape sequence"),  # buffered until a dot
        ("punycode", "the byte 0x00 does not decode alone"),
        ("cp037", "the byte 0x04 reads as '\\x9c'"),  # EBCDIC
        ("shift_jis_2004", "the byte 0x5C ('\\\\') reads as '¥'"),
        ("mac_arabic", "the ASCII character ' ' is not written as the byte 0x20"),
        ("rot13", "it is not a text codec"),
        ("base64_codec", "it is not a text codec"),
        ("zlib_codec", "it is not a text codec"),
        ("no-such-codec", "Python knows no codec by that name"),
        ("utf-16le", "it is used only for a file that starts with its byte order mark"),
    ],
)
def test_each_refusal_names_the_codec_and_why(name: str, why: str) -> None:
    with pytest.raises(RefusedCodec) as no:
        allowed_codec(name)
    assert why in no.value.reason
    assert (
        no.value.at(".editorconfig")
        .sentence()
        .startswith(f"The codec {name} (from .editorconfig) is refused: ")
    )


def test_iso_2022_jp_passes_the_plain_alphabet_yet_is_refused() -> None:
    """Why the alphabet is not the test: every ASCII byte but ESC reads as itself in it."""
    plain = bytes(b for b in range(128) if b != 0x1B)
    assert plain.decode("iso2022_jp") == plain.decode("ascii")
    assert b"\x1b$B%H\x1b(B".decode("iso2022_jp") == "ト"
    assert usable_codec("iso-2022-jp") is None


def test_a_refused_name_is_shown_escaped() -> None:
    no = RefusedCodec("hz\x1b[31m\u202e", "it is not a text codec", ".editorconfig")
    assert (
        no.sentence()
        == "The codec hz\\x1b[31m\\u202e (from .editorconfig) is refused: it is not a text codec."
    )


ALLOWED = sorted({str(usable_codec(n)) for n in NAMES if known(n) and usable_codec(n) is not None})


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(ALLOWED), data=st.binary(max_size=64).map(lambda b: bytes(x & 0x7F for x in b)))
def test_any_ascii_string_reads_as_itself_in_every_allowed_codec(name: str, data: bytes) -> None:
    assert data.decode(name) == data.decode("ascii")
    assert data.decode("ascii").encode(name) == data
    for shift in SHIFTS:
        assert (data + shift).decode(name) == (data + shift).decode("ascii")


def test_the_allowed_set_holds_what_spec_names_and_the_check_is_cached() -> None:
    for name in (
        "utf-8",
        "cp1252",
        "latin-1",
        "gb18030",
        "gbk",
        "big5",
        "shift_jis",
        "cp932",
        "euc-jp",
        "euc-kr",
    ):
        assert usable_codec(name) is not None, name
    assert len(ALLOWED) > 70
    ascii_faithful.cache_clear()
    for _ in range(3):
        usable_codec("cp1252")
    assert ascii_faithful.cache_info().hits == 2
