"""fsio/codec.py: the codec decision of SPEC §8.1, and edits that keep every byte outside them.

Each codec is driven through the same pure transformation StrReplaceFile and WriteFile use
(tools/str_replace.py, tools/write_file.py), and the results are compared as bytes.
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from filegate.fsio.codec import (
    DECLARED_BYTES,
    DETECT_BYTES,
    UTF8,
    FileCodec,
    Unencodable,
    decide,
    decide_for_data,
    declared,
    detected,
    is_utf8,
    line_endings,
    usable_codec,
    with_line_endings,
)

# (codec, BOM, a line of its script): every codec the issue names.
CODECS = [
    ("cp1252", b"", "café crème – “quoted” €"),
    ("latin-1", b"", "façade déjà vu ÿ"),
    ("gb18030", b"", "北京欢迎你 𠀀"),
    ("shift_jis", b"", "東京の天気は晴れ"),
    ("euc-kr", b"", "서울 날씨"),
    ("utf-8", b"", "plain ✓"),
    ("utf-8", codecs.BOM_UTF8, "with a mark ✓"),
    ("utf-16-le", codecs.BOM_UTF16_LE, "little ✓ 𝄞"),
    ("utf-16-be", codecs.BOM_UTF16_BE, "big ✓ 𝄞"),
]


def codec_for(name: str, bom: bytes) -> FileCodec:
    return FileCodec(name, bom, "" if bom or name == "utf-8" else "--legacy-encoding")


@pytest.mark.parametrize("eol", ["\n", "\r\n", "mixed"])
@pytest.mark.parametrize(("name", "bom", "sample"), CODECS)
def test_an_edit_changes_only_its_span_in_every_codec(name: str, bom: bytes, sample: str, eol: str) -> None:
    breaks = ["\r\n", "\n", "\r\n"] if eol == "mixed" else [eol] * 3
    text = f"first {sample}{breaks[0]}middle OLD{breaks[1]}last {sample}{breaks[2]}"
    data = bom + text.encode(name)
    fc = codec_for(name, bom)
    edited = fc.bom + fc.encode(fc.decode(data[len(bom) :]).replace("OLD", sample))
    expected = bom + text.replace("OLD", sample).encode(name)
    assert edited == expected
    head, tail = data.split("OLD".encode(name))
    assert edited.startswith(head) and edited.endswith(tail)


def test_the_latin1_example_of_the_issue() -> None:
    data = b"caf\xe9 au lait\r\n"
    fc = decide_for_data(data, None, "latin-1")
    assert (fc.name, fc.source, fc.summary()) == (
        "iso8859-1",
        "--legacy-encoding",
        " Encoding: latin-1 (from --legacy-encoding).",
    )
    assert fc.encode(fc.decode(data).replace("au lait", "crème")) == b"caf\xe9 cr\xe8me\r\n"


def test_undecodable_bytes_survive_a_round_trip() -> None:
    data = b"a\x81b\x8dc\r\n"  # 0x81 and 0x8D have no character in cp1252
    fc = FileCodec("cp1252", source="x")
    text = fc.decode(data)
    assert fc.encode(text) == data and fc.encode(text.replace("a", "é")) == b"\xe9\x81b\x8dc\r\n"


def test_a_character_the_codec_cannot_hold_is_named() -> None:
    with pytest.raises(Unencodable) as err:
        FileCodec("shift_jis", source="x").encode("晴れ ☕")
    assert err.value.code == "U+2615" and err.value.codec == "shift_jis"
    with pytest.raises(Unencodable, match=re.escape("U+20AC cannot be written in latin-1")):
        FileCodec("iso8859-1", label="latin-1").encode("€")


def test_the_order_bom_utf8_declared_flag_detector_fallback(tmp_path: Path) -> None:
    latin = "café".encode("latin-1")
    assert decide(codecs.BOM_UTF16_LE + "é".encode("utf-16-le"), size=4, legacy="cp1252").name == "utf-16-le"
    assert decide("café".encode(), size=5, legacy="cp1252") is UTF8
    assert decide(latin, size=4, legacy="cp1252").name == "cp1252"
    assert decide(latin, size=4) == FileCodec(fallback=True)
    (tmp_path / ".editorconfig").write_text("root = true\n[*.txt]\ncharset = latin1\n")
    by_config = decide(latin, size=4, path=tmp_path / "a.txt", legacy="cp1252")
    assert (by_config.name, by_config.source, by_config.shown) == ("iso8859-1", ".editorconfig", "latin1")
    assert decide(latin, size=4, path=tmp_path / "a.md", legacy="cp1252").source == "--legacy-encoding"
    chosen = decide(latin, size=4, path=tmp_path / "a.txt", chosen=("cp1250", "encoding"))
    assert (chosen.name, chosen.source) == ("cp1250", "encoding")
    # A chosen codec wins over a BOM; the BOM is kept when it is the chosen codec's own.
    assert decide(codecs.BOM_UTF8 + b"x", size=4, chosen=("utf-8", "encoding")).bom == codecs.BOM_UTF8
    assert decide(codecs.BOM_UTF8 + b"x", size=4, chosen=("cp1252", "encoding")).bom == b""


def test_utf8_is_judged_on_the_first_mebibyte_and_a_cut_character_counts() -> None:
    cut = ("a" * (DETECT_BYTES - 1) + "é").encode()[:DETECT_BYTES]  # é's first byte at the end
    assert is_utf8(cut, complete=False) and not is_utf8(cut, complete=True)
    assert decide(cut, size=DETECT_BYTES + 10, legacy="cp1252") is UTF8
    assert decide(cut, size=DETECT_BYTES, legacy="cp1252").name == "cp1252"


@pytest.mark.parametrize(
    ("head", "name", "expected"),
    [
        (b"#!/usr/bin/env python\n# -*- coding: cp1252 -*-\n", "a.py", ("cp1252", "coding line")),
        (b"# vim: set fileencoding=latin-1 :\n", "a.py", ("latin-1", "coding line")),
        (b"\n\n# coding: cp1252\n", "a.py", None),  # only the first two lines count
        (b"# coding: cp1252\n", "a.txt", None),  # only in a Python file
        (b'<?xml version="1.0" encoding="Shift_JIS"?>\n<a/>', "a.svg", ("Shift_JIS", "XML declaration")),
        (b"<html><head><meta charset=gb2312>", "a.htm", ("gb2312", "HTML meta charset")),
        (
            b'<meta http-equiv="Content-Type" content="text/html; charset=euc-kr">',
            "x.HTML",
            ("euc-kr", "HTML meta charset"),
        ),
        (b"<meta charset=gb2312>", "x", None),  # SPEC §8.1: only in an HTML file
        (b"<meta charset=gb2312>", "notes.txt", None),
        (b" " * DECLARED_BYTES + b"<meta charset=gb2312>", "a.html", None),  # past the first KiB
    ],
)
def test_declared_charsets(tmp_path: Path, head: bytes, name: str, expected: tuple[str, str] | None) -> None:
    assert declared(head, tmp_path / name) == expected


@pytest.mark.parametrize(
    ("name", "usable"),
    [("cp1252", "cp1252"), ("windows-1252", "cp1252"), ("latin1", "iso8859-1"), ("GBK", "gbk"),
     ("utf-16", None), ("utf-16be", None), ("utf-8-bom", "utf-8"), ("utf-8-sig", "utf-8"), ("cp037", None),
     ("utf-7", None), ("hz", None), ("iso-2022-jp", None), ("idna", None), ("rot13", None),
     ("base64", None), ("no-such-codec", None)],
)  # fmt: skip
def test_usable_codecs_read_ascii_bytes_as_themselves(name: str, usable: str | None) -> None:
    assert usable_codec(name) == usable


def test_utf16_and_utf32_only_with_their_byte_order_mark() -> None:
    assert usable_codec("utf-16", bom="utf-16-be") == "utf-16-be"
    assert usable_codec("utf-16be", bom="utf-16-be") == "utf-16-be"
    assert usable_codec("utf-16le", bom="utf-16-be") is None  # another byte order's mark
    assert usable_codec("utf-32", bom="utf-16-le") is None
    assert usable_codec("utf-16", bom="utf-8") is None


def test_line_ending_styles() -> None:
    assert [line_endings(t) for t in ("a\r\nb\r\n", "a\nb", "a\rb\r", "a\r\nb\n", "ab", b"a\r\n", b"a\rb\n")] == [
        "crlf", "lf", "cr", "mixed", "none", "crlf", "mixed"
    ]  # fmt: skip
    assert with_line_endings("a\nb\r\nc", "crlf") == "a\r\nb\r\nc"
    assert with_line_endings("a\nb", "cr") == "a\rb" and with_line_endings("a\nb", "mixed") == "a\nb"


def test_auto_detection_takes_a_confident_guess_only() -> None:
    text = "Привет, как дела? Это обычный русский текст о погоде и новостях дня.\n" * 20
    guess = decide(text.encode("cp1251"), size=10_000, legacy="auto")
    assert guess.source == "--legacy-encoding auto" and guess.bom == b""
    assert guess.decode(text.encode("cp1251")) == text
    assert decide(bytes(range(128, 256)) * 4, size=512, legacy="auto").fallback


SUPPORTED = [
    "cp1252",
    "latin-1",
    "gb18030",
    "shift_jis",
    "euc-kr",
    "utf-8",
    "utf-16-le",
    "utf-16-be",
    "cp1251",
]


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(SUPPORTED), text=st.text(max_size=200), old=st.text(min_size=1, max_size=5))
def test_random_content_round_trips_through_every_supported_codec(name: str, text: str, old: str) -> None:
    """What a codec can hold comes back byte for byte, through decode and encode, and an edit
    of one span leaves the bytes on each side of it as they were."""
    fc = FileCodec(usable_codec(name) or name, source="test")
    held = "".join(ch for ch in text if _holds(name, ch))
    data = held.encode(name)
    assert fc.encode(fc.decode(data)) == data
    if old in held:
        i = held.index(old)
        edited = fc.encode(held[:i] + "x" + held[i + len(old) :])
        assert edited.startswith(held[:i].encode(name)) and edited.endswith(held[i + len(old) :].encode(name))


def _holds(name: str, ch: str) -> bool:
    try:
        return ch.encode(name).decode(name) == ch
    except UnicodeError:
        return False


def test_each_source_is_named_and_a_decided_legacy_codec_has_no_bom(tmp_path: Path) -> None:
    latin = "café".encode("latin-1")
    assert decide(b"plain ascii", size=11, legacy="cp1252") is UTF8  # ASCII is UTF-8
    assert decide(latin, size=4, legacy="cp1252") == FileCodec("cp1252", b"", "--legacy-encoding", "cp1252")
    chosen = decide(latin, size=4, chosen=("Windows-1252", "encoding"))
    assert chosen == FileCodec("cp1252", b"", "encoding", "windows-1252")
    assert chosen.summary() == " Encoding: windows-1252 (from encoding)."
    (tmp_path / ".editorconfig").write_text(
        "root = true\n[*.txt]\ncharset = utf-8\n[*.ini]\ncharset = cp1252\n"
    )
    said_utf8 = decide(latin, size=4, path=tmp_path / "a.txt")
    assert said_utf8 == FileCodec("utf-8", b"", ".editorconfig", "utf-8", fallback=True)
    assert said_utf8.summary() == ""  # UTF-8 is never named; its U+FFFD are (tools/read_file.py)
    assert decide(latin, size=4, path=tmp_path / "a.ini") == FileCodec(
        "cp1252", b"", ".editorconfig", "cp1252"
    )
    assert decide_for_data(latin, tmp_path / "a.ini").source == ".editorconfig"
    assert decide_for_data(latin, None, chosen=("latin-1", "encoding")).source == "encoding"
    assert decide_for_data(latin * (DETECT_BYTES // 4 + 1), None, "cp1252").name == "cp1252"
    pyw = decide(b"# coding: cp1252\n" + latin, size=21, path=tmp_path / "gui.pyw")
    assert pyw == FileCodec("cp1252", b"", "coding line", "cp1252")


def test_summaries_name_every_codec_but_utf8_and_where_it_came_from() -> None:
    assert UTF8.summary() == "" and FileCodec("utf-8", codecs.BOM_UTF8).summary() == ""
    assert (
        FileCodec("utf-16-le", codecs.BOM_UTF16_LE).summary()
        == " Encoding: utf-16-le (from its byte order mark)."
    )
    assert (
        FileCodec("cp1251", source="--legacy-encoding auto").summary()
        == " Encoding: cp1251 (from --legacy-encoding auto)."
    )
    assert usable_codec("utf-32", bom="utf-32-le") == "utf-32-le"
    assert usable_codec("UTF-32BE", bom="utf-32-be") == "utf-32-be"
    assert (
        FileCodec("utf-16-be").unit == 2
        and FileCodec("utf-32-le").unit == 4
        and FileCodec("gb18030").unit == 1
    )


# --- `--legacy-encoding auto` on Western text: a corpus ------------------------------------

# Short everyday sentences of the languages cp1252 (and Latin-1) serve, as files hold them.
WESTERN_CORPUS = {
    "French": [
        "Très bien, à côté de la gare.",
        "Le garçon était fâché à cause du dîner.",
        "Où est la bibliothèque ? Là-bas, près du théâtre.",
        "café",
        "Noël à Besançon",
    ],
    "Italian": ["Però è così, perché là c'è un caffè.", "Più tardi andrò in città.", "Sì, è vero."],
    "Spanish": ["El niño comió piña el año pasado.", "¿Dónde está la estación?", "mañana"],
    "Portuguese": ["Não há nada à frente, só ações e cães.", "Coração, razão e emoção.", "São Paulo"],
    "German": ["Grüße aus München, schöne Straße.", "Äpfel und Öl für die Küche.", "Maß"],
    "Danish": ["Rødgrød med fløde.", "Vi ses på søndag i Århus.", "Tromsø"],
    "Swedish": ["Hej på dig, hur mår du? Bra, tack.", "Räksmörgås åt två."],
    "Dutch": ["Een geïnteresseerde café-eigenaar.", "Zij gaat naar Curaçao."],
    "Catalan": ["L'àvia va menjar préssec a la plaça.", "Què fas demà?"],
    "Icelandic": ["Það er gott að vera í Reykjavík.", "Þórður"],
}


@pytest.mark.parametrize("codec", ["cp1252", "latin-1"])
@pytest.mark.parametrize("language", sorted(WESTERN_CORPUS))
def test_auto_never_takes_a_central_european_page_for_western_text(language: str, codec: str) -> None:
    """charset-normalizer ranks cp1250 (or cp1006) first for most of these, with the same
    zero mess as cp1252; an edit written in that guess would damage the file."""
    for sentence in WESTERN_CORPUS[language]:
        for text in (sentence, sentence + "\n", (sentence + "\n") * 20):
            guess = detected(text.encode(codec))
            assert guess in ("cp1252", None), f"{sentence!r} ({codec}) guessed as {guess}"
            if guess is not None:
                assert text.encode(codec).decode(guess) == text


# Central European text with letters cp1252 reads as no Western language has them.
CENTRAL_EUROPEAN = {
    "Polish": "Zażółć gęślą jaźń. Litwo, ojczyzno moja, ty jesteś jak zdrowie.",
    "Czech": "Dobrý den, jak se máte? Děkuji, mám se dobře.",
    "Hungarian": "Árvíztűrő tükörfúrógép. Öt szép szűz lány őrült írót nyúz.",
    "Slovak": "Ďakujem, mám sa dobre. Kôň a ľad.",
}


@pytest.mark.parametrize("language", sorted(CENTRAL_EUROPEAN))
def test_auto_takes_a_central_european_page_on_strong_evidence(language: str) -> None:
    text = CENTRAL_EUROPEAN[language] + "\n"
    assert detected(text.encode("cp1250")) == "cp1250"


def test_auto_leaves_cyrillic_and_other_scripts_to_the_detector() -> None:
    text = "Привет, как дела? Всё хорошо, спасибо.\n"
    assert detected(text.encode("cp1251")) == "cp1251"
    japanese = "日本語のテキストです。今日は晴れです。\n"
    assert detected(japanese.encode("shift_jis")) == "cp932"
    assert detected("한국어 텍스트입니다.\n".encode("euc_kr")) == "cp949"
