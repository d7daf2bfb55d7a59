"""Which codecs a file's text may be read and written in (SPEC §8.1's exact rule), a leaf that
both the server's flags (settings.py) and every codec decision (fsio/codec.py) ask.

A codec is allowed when any string of ASCII bytes, in any order, reads in it as the same ASCII
text, and that text is written back as the same bytes — no shift states, no escape sequences.
Otherwise a file of plain ASCII bytes could show the user one text while a program reads
another (HZ's ``~{`` turns ``;>PWNED;`` into Chinese; ISO-2022's ESC sequences, UTF-7's
``+AAo-`` a line break). It is decided by a property check (:func:`ascii_faithful`), not a
list: each ASCII byte, fed to a fresh incremental decoder, must come out as itself and leave
the decoder in its starting state (so, by induction, any sequence does), and each ASCII
character must encode to its own byte. cp1252, gb18030, shift_jis, euc-kr, ... pass; HZ, every
ISO-2022 form, UTF-7, EBCDIC, ``idna``, ``punycode``, ``raw_unicode_escape``,
``unicode_escape`` fail it, and codecs that are not text (``rot13``, the ``*_codec`` byte
transforms) are refused before it. UTF-16/32 are allowed only for a file that starts with
their byte order mark. A refused codec is never used; :class:`RefusedCodec` says why, and the
caller adds who declared it.
"""

from __future__ import annotations

import codecs
import functools

# Codecs whose code unit is wider than a byte: allowed only for a file that starts with their
# byte order mark, each with its own code unit.
WIDE = {"utf-16-le": 2, "utf-16-be": 2, "utf-32-le": 4, "utf-32-be": 4}
WIDE_NEEDS_BOM = "it is used only for a file that starts with its byte order mark"
# EditorConfig's `charset` values that are not Python codec names.
_EDITORCONFIG_NAMES = {
    "latin1": "latin-1",
    "utf-8-bom": "utf-8",
    "utf-16be": "utf-16-be",
    "utf-16le": "utf-16-le",
}
# A codec name that is one of ours once the byte order mark is set apart (the caller keeps it).
_SAME = {"utf-8-sig": "utf-8"}


class RefusedCodec(ValueError):
    """A codec SPEC §8.1 does not allow: its name as written, why, and who declared it."""

    def __init__(self, name: str, reason: str, where: str = "") -> None:
        self.name, self.reason, self.where = name, reason, where
        super().__init__(self.sentence())

    def at(self, where: str) -> RefusedCodec:
        return RefusedCodec(self.name, self.reason, where)

    def sentence(self) -> str:
        where = f" (from {self.where})" if self.where else ""
        return f"The codec {ascii(self.name)[1:-1]}{where} is refused: {self.reason}."


def allowed_codec(name: str, *, bom: str | None = None, any_bom: bool = False) -> str:
    """The normalized Python codec for ``name`` when SPEC §8.1 allows it, else RefusedCodec.

    ``bom``: the codec the file's byte order mark names, if any (UTF-16/32 need theirs);
    ``any_bom``: the file is not known yet (a parameter checked before it is opened)."""
    spelled = name.strip()
    try:
        info = codecs.lookup(_EDITORCONFIG_NAMES.get(spelled.lower(), spelled))
    except (LookupError, ValueError):
        raise RefusedCodec(name, "Python knows no codec by that name") from None
    normal = _SAME.get(info.name, info.name)
    if any_bom and (normal in WIDE or normal in ("utf-16", "utf-32")):
        return normal
    if normal in ("utf-16", "utf-32"):  # either byte order: the file's mark says which
        if bom is None or not bom.startswith(normal):
            raise RefusedCodec(name, WIDE_NEEDS_BOM)
        return bom
    if normal in WIDE:
        if bom != normal:
            raise RefusedCodec(name, WIDE_NEEDS_BOM)
        return normal
    why = ascii_faithful(normal)
    if why:
        raise RefusedCodec(name, why)
    return normal


def usable_codec(name: str, *, bom: str | None = None) -> str | None:
    """:func:`allowed_codec`, None when refused."""
    try:
        return allowed_codec(name, bom=bom)
    except RefusedCodec:
        return None


def _byte(b: int) -> str:
    return f"0x{b:02X}" + (f" ({chr(b)!r})" if 0x20 < b < 0x7F else "")


@functools.lru_cache(maxsize=64)
def ascii_faithful(name: str) -> str:
    """ "" when any string of ASCII bytes, in any order, reads in codec ``name`` as the same
    ASCII text and that text is written back as the same bytes; else why not.

    A fresh incremental decoder is fed each ASCII byte alone: it must give that character and
    be left in the state it started in (its own ``getstate()``: buffered bytes and flags), so a
    sequence of such bytes is read one byte at a time from the same state, each as itself —
    a byte that opens a shift or escape sequence (HZ's ``~``, ISO-2022's ESC or SO, UTF-7's
    ``+``, ``\\`` in the escape codecs) leaves state behind and is named."""
    try:
        b"".decode(name)
        "".encode(name)
        factory = codecs.getincrementaldecoder(name)
    except LookupError:  # codecs.lookup knows it, str/bytes do not: rot13, base64_codec, ...
        return "it is not a text codec"
    except (UnicodeError, TypeError):  # e.g. "undefined"
        return "it cannot read or write text"
    text = "in it, ASCII bytes do not always read as the same ASCII text"
    for b in range(128):
        decoder = factory("strict")
        start = decoder.getstate()
        try:
            out = decoder.decode(bytes([b]))
        except (UnicodeError, ValueError):
            return f"{text} (the byte {_byte(b)} does not decode alone)"
        if decoder.getstate() != start:
            return f"{text} (the byte {_byte(b)} starts a shift or escape sequence)"
        if out != chr(b):
            return f"{text} (the byte {_byte(b)} reads as {out!r})"
    for b in range(128):
        try:
            back = chr(b).encode(name)
        except UnicodeError:
            back = b""
        if back != bytes([b]):
            return f"in it, the ASCII character {chr(b)!r} is not written as the byte {_byte(b)}"
    every = bytes(range(128))
    for data in (every, every[::-1]):  # the whole alphabet at once, both ways, as a cross-check
        try:
            same = data.decode(name) == data.decode("ascii") and data.decode("ascii").encode(name) == data
        except (UnicodeError, ValueError):
            same = False
        if not same:  # pragma: no cover - no codec Python ships passes the byte-by-byte check and fails here
            return text
    return ""
