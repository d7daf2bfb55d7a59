"""A file's codec, decided once for every tool (SPEC §8.1): how its bytes become text and back.

The order: a byte order mark; valid UTF-8 (judged on the first ``DETECT_BYTES``, or the whole
file when smaller); a charset the file or its folder declares (the `.editorconfig` ``charset``
for its path, a PEP 263 coding line in a Python file, an XML declaration, an HTML ``<meta
charset>`` in the first ``DECLARED_BYTES``); the server's ``--legacy-encoding``; with
``--legacy-encoding auto``, a detector's confident guess. Otherwise UTF-8 with undecodable bytes
shown as U+FFFD, as before. A codec the caller chose (ReadFile's ``encoding``, remembered for the
session's edits of that file) wins over all of these.

Which codecs are allowed is SPEC §8.1's exact rule, in filegate/charsets.py (ASCII bytes read
as themselves, no shift states or escape sequences; UTF-16/32 only with their byte order
mark); a refused codec is never used, and the sentence saying so names who declared it
(``.editorconfig``, a coding line, an XML declaration, an HTML file's ``<meta charset>``,
``--legacy-encoding``, ReadFile's ``encoding``). In every codec allowed, a byte 0x0A or 0x0D
never sits inside a multi-byte character.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from filegate.charsets import WIDE, RefusedCodec, allowed_codec, usable_codec
from filegate.policy.escape import escape
from filegate.policy.filetype import BOMS

__all__ = ["RefusedCodec", "allowed_codec", "usable_codec"]  # the rule itself: filegate/charsets.py

# SPEC §8.1: "valid UTF-8" is judged on this much of the file at most.
DETECT_BYTES = 1 << 20
# SPEC §8.1: an HTML <meta charset> counts in this much of the file (as the HTML standard's
# prescan reads 1024 bytes).
DECLARED_BYTES = 1 << 10
# SPEC §8.1: an HTML <meta charset> counts only in an HTML file.
HTML_SUFFIXES = (".html", ".htm", ".xhtml", ".shtml")

_PEP263 = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.MULTILINE)
_XML = re.compile(rb"""^(?:\xef\xbb\xbf)?<\?xml[^>]*?\bencoding\s*=\s*["']([-\w.:]+)["']""")
_HTML = re.compile(rb"""<meta[^>]*?\bcharset\s*=\s*["']?([-\w.:]+)""", re.IGNORECASE)

Eol = Literal["lf", "crlf", "cr", "mixed", "none"]


class Unencodable(ValueError):
    """A character the file's codec cannot hold."""

    def __init__(self, char: str, codec: str) -> None:
        super().__init__(f"U+{ord(char):04X} cannot be written in {codec}")
        self.char = char
        self.codec = codec

    @property
    def code(self) -> str:
        return f"U+{ord(self.char):04X}"


@dataclass(frozen=True, slots=True)
class FileCodec:
    """How a file's text is stored: its codec, the BOM it starts with, where that came from."""

    name: str = "utf-8"  # a Python codec name, normalized (codecs.lookup(...).name)
    bom: bytes = b""
    source: str = ""  # "" (BOM or valid UTF-8) | ".editorconfig" | "--legacy-encoding" | ...
    label: str = ""  # the name as its source spelled it ("windows-1252"); "" = ``name``
    fallback: bool = False  # not UTF-8, nothing declared: undecodable bytes are shown as U+FFFD
    refused: str = ""  # the sentence about a declared or chosen codec not used (RefusedCodec)

    @property
    def utf8(self) -> bool:
        return self.name == "utf-8"

    @property
    def unit(self) -> int:
        return WIDE.get(self.name, 1)

    @property
    def codec(self) -> str:
        """The Python codec (the name writing.Encoding used)."""
        return self.name

    @property
    def shown(self) -> str:
        return escape(self.label or self.name)  # a declared name may hold any character

    def decode(self, body: bytes) -> str:
        """Text of ``body`` (the bytes after the BOM), losslessly: an undecodable byte becomes a
        lone surrogate that :meth:`encode` turns back into the same byte."""
        return body.decode(self.name, self._errors)

    def encode(self, text: str) -> bytes:
        """``text`` in this codec (no BOM). Raises Unencodable for a character it cannot hold
        (a lone surrogate from :meth:`decode` goes back to its byte)."""
        try:
            return text.encode(self.name, self._errors)
        except UnicodeEncodeError as exc:
            raise Unencodable(exc.object[exc.start], self.shown) from None

    @property
    def _errors(self) -> str:
        # UTF-16/32 pass lone surrogates through (their escape of a byte would misalign the
        # code units); every other codec escapes undecodable bytes one by one.
        return "surrogatepass" if self.unit > 1 or self.utf8 else "surrogateescape"

    def summary(self) -> str:
        """ReadFile's sentence about a codec that is not UTF-8 (SPEC §8.1) and where it came
        from: a BOM, a declaration, a flag, a parameter or a detector. "" for UTF-8."""
        source = self.source or ("its byte order mark" if self.bom else "")
        if self.utf8:
            return f" {self.refusal('read')}" if self.refused else ""
        refused = f" {self.refused}" if self.refused else ""
        return f" Encoding: {self.shown} (from {source}).{refused}" if source else refused

    def refusal(self, verb: str) -> str:
        """The sentence about a refused codec and what was used instead ("" when none was)."""
        if not self.refused:
            return ""
        return f"{self.refused} It is {verb} as UTF-8." if self.utf8 else self.refused

    def named(self) -> str:
        """The codec as the approval question's first line names it (SPEC §8.1): "" for UTF-8."""
        source = self.source or ("its byte order mark" if self.bom else "")
        if self.utf8:
            return ""
        return self.shown + (f" (from {source})" if source else "")


UTF8 = FileCodec()


# Each codec's byte order mark.
BOM_OF = {name: bom for bom, name in BOMS}


def bom_codec(head: bytes) -> FileCodec | None:
    for bom, name in BOMS:
        if head.startswith(bom):
            return FileCodec(name, bom)
    return None


def is_utf8(head: bytes, complete: bool) -> bool:
    """Whether ``head`` is valid UTF-8; not ``complete``: a character cut at its end counts."""
    if head.isascii():
        return True
    try:
        codecs.utf_8_decode(head, "strict", complete)  # not complete: a cut last character is fine
    except UnicodeDecodeError:
        return False
    return True


def declared(head: bytes, path: Path | None) -> tuple[str, str] | None:
    """(codec name as written, where) that the file or its `.editorconfig` declares."""
    if path is not None:
        charset = editorconfig_properties(path).get("charset")
        if charset:
            return charset, ".editorconfig"
    if path is not None and path.suffix in (".py", ".pyw"):
        first_two = b"\n".join(head.split(b"\n", 2)[:2])  # pragma: no mutate (any maxsplit >= 2)
        m = _PEP263.search(first_two)
        if m:
            return m.group(1).decode(), "coding line"
    m = _XML.match(head[:DECLARED_BYTES])
    if m:
        return m.group(1).decode(), "XML declaration"
    m = (
        _HTML.search(head[:DECLARED_BYTES])
        if path is not None and path.suffix.lower() in HTML_SUFFIXES
        else None
    )
    if m:
        return m.group(1).decode(), "HTML meta charset"
    return None


def editorconfig_properties(path: Path) -> dict[str, str]:
    """The `.editorconfig` properties for ``path`` (EditorConfig's own core library); {} when
    none apply or a file cannot be read."""
    import editorconfig

    try:
        return dict(editorconfig.get_properties(str(path)))
    except Exception:
        return {}


def decide(
    head: bytes,
    *,
    size: int,
    path: Path | None = None,
    legacy: str | None = None,
    chosen: tuple[str, str] | None = None,
) -> FileCodec:
    """The codec of a file whose first bytes (up to ``DETECT_BYTES``) are ``head``.

    ``chosen``: (codec, source) the caller picked; ``legacy``: the server's
    ``--legacy-encoding`` (a codec name or "auto")."""
    bom = bom_codec(head)
    refused = ""
    if chosen is not None:
        try:
            name = allowed_codec(chosen[0], bom=bom.name if bom is not None else None)
        except RefusedCodec as no:
            refused = no.at(chosen[1]).sentence()
        else:
            kept_bom = bom.bom if bom is not None and bom.name == name else b""
            return FileCodec(name, kept_bom, chosen[1], chosen[0].lower())
    if bom is not None:
        return _with(bom, refused)
    if is_utf8(head, complete=len(head) >= size):
        return _with(UTF8, refused)
    said = declared(head, path)
    if said is not None:
        try:
            name = allowed_codec(said[0])
        except RefusedCodec as no:
            refused = refused or no.at(said[1]).sentence()
        else:
            return FileCodec(name, b"", said[1], said[0].lower(), fallback=name == "utf-8", refused=refused)
    if legacy == "auto":
        guess = detected(head)
        if guess is not None:
            return FileCodec(guess, b"", "--legacy-encoding auto", refused=refused)
    elif legacy:
        usable = usable_codec(legacy)  # Settings refused any other at start-up
        if usable is not None:
            return FileCodec(usable, b"", "--legacy-encoding", legacy.lower(), refused=refused)
    return FileCodec(fallback=True, refused=refused)


def _with(fc: FileCodec, refused: str) -> FileCodec:
    if not refused:
        return fc
    return FileCodec(fc.name, fc.bom, fc.source, fc.label, fc.fallback, refused)


def decide_for_data(
    data: bytes, path: Path | None, legacy: str | None = None, chosen: tuple[str, str] | None = None
) -> FileCodec:
    """The codec of a file whose whole content is ``data``."""
    return decide(data[:DETECT_BYTES], size=len(data), path=path, legacy=legacy, chosen=chosen)


# charset-normalizer's "mess" of its best guess: above this the guess is not trusted (its own
# default threshold is 0.2; an agent's edit written in a wrong guess corrupts the file).
MAX_CHAOS = 0.1


def detected(head: bytes) -> str | None:
    """charset-normalizer's guess for ``head`` when it is confident and usable, else None.

    A guess other than cp1252 is taken only on strong evidence: cp1252 must not read the bytes
    as one Western language's text. On short Western text charset-normalizer often ranks
    cp1250, mac-latin2, Big5 or UTF-16 first with the same zero "mess" as cp1252 ("café" as
    UTF-16), and an edit written in such a guess would damage the file."""
    from charset_normalizer import from_bytes

    best = from_bytes(head).best()
    if best is None or best.chaos > MAX_CHAOS:  # pragma: no mutate (>= differs only at 0.1 itself)
        return None
    guess = usable_codec(best.encoding)
    if guess is None or guess == WESTERN:
        return guess
    return WESTERN if _reads_as_western(head, guess) else guess


# The code page of Western European text (a superset of Latin-1's printable characters).
WESTERN = "cp1252"
# The characters beyond ASCII each Western language writes (cp1252's). Text whose characters
# that tell the guess from cp1252 are, in cp1252, all of one of these is taken as Western: a
# Czech "Děkuji ... dobře" read in cp1252 gives ì and ø, which no one language here has.
WESTERN_LETTERS = tuple(
    frozenset(letters)
    for letters in (
        "àâæçèéêëîïôœùûüÿ«»",  # French
        "àèéìíîòóùú",  # Italian
        "áéíñóúü¿¡ªº",  # Spanish
        "àáâãçéêíóôõúªº",  # Portuguese
        "àçèéíïòóúü·",  # Catalan
        "äöüß",  # German
        "éèëïóáúö",  # Dutch
        "åæøéóôàü",  # Danish, Norwegian
        "åäöé",  # Swedish, Finnish
        "áéíóúýðþæö",  # Icelandic
    )
)


def _reads_as_western(head: bytes, codec: str) -> bool:
    """Whether cp1252 reads ``head`` as one Western language's text where it matters: for a
    single-byte ``codec``, the characters the two read differently; for another, every
    character beyond ASCII (letters only: a CJK text's bytes read as cp1252 punctuation)."""
    try:
        western = head.decode(WESTERN)
    except UnicodeDecodeError:
        return False  # a byte cp1252 leaves undefined (0x81, 0x8D, 0x8F, 0x90, 0x9D)
    other = head.decode(codec, "replace")
    if len(other) == len(head) == len(western):  # one character a byte in both
        telling = {w.lower() for w, o in zip(western, other, strict=True) if w != o}
    else:
        telling = {w.lower() for w in western if not w.isascii()}
        if not all(w.isalpha() for w in telling):
            return False
    return any(telling <= letters for letters in WESTERN_LETTERS)


def line_endings(text: str | bytes) -> Eol:
    """The line-ending style of ``text`` (or of bytes whose line breaks are single bytes)."""
    if isinstance(text, bytes):
        crlf, lf_all, cr_all = text.count(b"\r\n"), text.count(b"\n"), text.count(b"\r")
    else:
        crlf, lf_all, cr_all = text.count("\r\n"), text.count("\n"), text.count("\r")
    lf, cr = lf_all - crlf, cr_all - crlf
    kinds = (crlf > 0) + (lf > 0) + (cr > 0)
    if kinds > 1:
        return "mixed"
    return "crlf" if crlf else "lf" if lf else "cr" if cr else "none"


def with_line_endings(text: str, style: Eol) -> str:
    """``text`` with every line break written as ``style`` (CRLF or CR); other styles leave it."""
    if style not in ("crlf", "cr"):
        return text
    lf = text.replace("\r\n", "\n")
    return lf.replace("\n", "\r\n" if style == "crlf" else "\r")
