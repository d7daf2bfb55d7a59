"""How a file-system string or a file's text is shown to a model, a user or a log (SPEC §2.9).

A file name chooses its own characters: a newline, a CR, an escape sequence, a bidi override
or a backtick in a shown name could forge a line of a message, an approval question or a log
record, or make it read in another order than it is written; an invisible character (a
zero-width space, a Hangul filler, a tag character) or a stack of combining marks could hide
what a name or a line really holds. And a name need not be valid UTF-8: Python hands its
undecodable bytes over as lone surrogates (``surrogateescape``), which no JSON encoder or
terminal should ever see.

So every such string leaves the server through :func:`escape`:

- C0 controls, DEL and the backtick become ``\\xNN``;
- an undecodable byte (a surrogate U+DC80–U+DCFF) becomes ``\\xNN`` of that byte (so ``\\xNN``
  with NN ≥ 80 always means a byte, never the character U+00NN);
- C1 controls, bidi controls, U+2028/U+2029, default-ignorable (invisible) code points, the
  marks of a run of more than two combining marks, and any other lone surrogate become
  ``\\uNNNN`` (``\\UNNNNNNNN`` above U+FFFF);
- a literal backslash becomes ``\\\\``, so a name that holds the text ``\\xff`` can never be
  confused with the escape of the byte 0xFF.

:func:`unescape` is its exact inverse: the shown spelling of a name, passed back to a tool,
names the same file. A file's text (:func:`escape_text`) keeps its layout (tab, LF), its
backticks and its backslashes (source code is full of them); the diff says up front when it
holds anything escaped.
"""

from __future__ import annotations

import re
import unicodedata

# Unicode bidirectional controls and the two line/paragraph separators (SPEC §2.9).
_BIDI_AND_SEPARATORS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029"

# Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt): characters a renderer
# draws as nothing — soft hyphen, CGJ, Hangul fillers, Mongolian and other variation
# selectors, zero-width space/joiners, word joiner and invisible operators, BOM, tag
# characters — as regex class ranges.
_INVISIBLE = (
    "\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)

_C0_DEL_BACKTICK = "".join(chr(c) for c in range(0x20)) + "\x7f`"
_C1 = "".join(chr(c) for c in range(0x80, 0xA0))

# One class with every character that is never shown as itself.
_UNSAFE = re.compile(
    "["
    + re.escape(_C0_DEL_BACKTICK + _C1 + _BIDI_AND_SEPARATORS + "\\")
    + _INVISIBLE
    + "\ud800-\udfff"  # lone surrogates: undecodable bytes (DC80–DCFF) and anything else
    + "]"
)
# The same, less what a file's text keeps as itself: its layout (tab, LF), the backtick and
# the backslash, ordinary in source code. CR is shown escaped so a line cannot overwrite itself.
_UNSAFE_IN_TEXT = re.compile(
    "["
    + re.escape("".join(ch for ch in _C0_DEL_BACKTICK if ch not in "\t\n`") + _C1 + _BIDI_AND_SEPARATORS)
    + _INVISIBLE
    + "\ud800-\udfff"
    + "]"
)

# Three or more characters outside ASCII in a row: where a run of combining marks can be
# (checked character by character only there, so ASCII text costs one failed search).
_NON_ASCII_RUN = re.compile("[^\x00-\x7f]{3,}")
_MARKS = frozenset(("Mn", "Me"))  # non-spacing: the ones that stack on one glyph


def _escape_char(m: re.Match[str]) -> str:
    return _escaped(m.group())


def _escaped(ch: str) -> str:
    c = ord(ch)
    if c == 0x5C:
        return "\\\\"
    if 0xDC80 <= c <= 0xDCFF:  # surrogateescape's spelling of the undecodable byte c - 0xDC00
        return f"\\x{c - 0xDC00:02x}"
    if c < 0x80:
        return f"\\x{c:02x}"
    if c <= 0xFFFF:  # C1 controls too: \\x80–\\xff mean undecodable bytes, never U+0080–U+00FF
        return f"\\u{c:04x}"
    return f"\\U{c:08x}"


def _stacked_marks(s: str) -> str:
    """Runs of more than two combining marks escaped, mark by mark (SPEC §2.9)."""

    def fix(m: re.Match[str]) -> str:
        run = m.group()
        out: list[str] = []
        i = 0
        while i < len(run):
            j = i
            while j < len(run) and unicodedata.category(run[j]) in _MARKS:
                j += 1
            if j - i > 2:
                out.extend(_escaped(ch) for ch in run[i:j])
                i = j
            elif j > i:
                out.append(run[i:j])
                i = j
            else:
                out.append(run[i])
                i += 1
        return "".join(out)

    return _NON_ASCII_RUN.sub(fix, s)


def _has_stacked_marks(s: str) -> bool:
    for m in _NON_ASCII_RUN.finditer(s):
        n = 0
        for ch in m.group():
            n = n + 1 if unicodedata.category(ch) in _MARKS else 0
            if n > 2:
                return True
    return False


def escape(s: str, *, separator: bool = False) -> str:
    """``s`` (a path, a name, a link target, a log field) with every unsafe character escaped.
    ``separator``: a backslash is the path separator (Windows paths), which no name can hold:
    it is shown as itself."""
    s = (_UNSAFE_IN_LOG if separator else _UNSAFE).sub(_escape_char, s)
    return s if s.isascii() else _stacked_marks(s)


_UNSAFE_IN_LOG = re.compile(_UNSAFE.pattern.replace(re.escape("\\"), "", 1))


def escape_log(s: str) -> str:
    """A whole log record, or a string escaped before: like :func:`escape`, but a backslash
    stays one, so escaping an escaped string again changes nothing. The fields a caller names
    in a record are escaped already (their backslashes doubled); the record is escaped once
    more only for what a library put in it, without doubling those again."""
    s = _UNSAFE_IN_LOG.sub(_escape_char, s)
    return s if s.isascii() else _stacked_marks(s)


# A whole record keeps its backticks too: they quote names in filegate's own sentences, and a
# name in a record was escaped (its backticks included) as a field before.
_UNSAFE_IN_RECORD = re.compile(_UNSAFE_IN_LOG.pattern.replace("`", "", 1))


def escape_record(s: str) -> str:
    """A whole log line as the log handler writes it: :func:`escape_log` less the backtick, so
    a record reads as its sentence (`a.txt`, not \\x60a.txt\\x60)."""
    s = _UNSAFE_IN_RECORD.sub(_escape_char, s)
    return s if s.isascii() else _stacked_marks(s)


def escape_text(s: str) -> str:
    """A file's text as shown in a question or diff: layout (tab, LF), backticks and backslashes
    kept, every other control, bidi, separator or invisible character escaped, and stacked
    combining marks."""
    s = _UNSAFE_IN_TEXT.sub(_escape_char, s)
    return s if s.isascii() else _stacked_marks(s)


def has_unsafe_text(s: str) -> bool:
    """Whether :func:`escape_text` would change ``s`` (the question says so up front)."""
    return _UNSAFE_IN_TEXT.search(s) is not None or (not s.isascii() and _has_stacked_marks(s))


_ESCAPED = re.compile(r"\\(?:(\\)|x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8}))")


_ESCAPED_SEPARATED = re.compile(r"\\(?:(?!)(\\)|x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8}))")


def _unescape_match(m: re.Match[str]) -> str:
    if m.group(1) is not None:
        return "\\"
    if m.group(2) is not None:
        b = int(m.group(2), 16)
        return chr(b) if b < 0x80 else chr(0xDC00 + b)  # a byte ≥ 0x80: undecodable, as the OS gives it
    code = int(m.group(3) or m.group(4), 16)
    return chr(code) if code <= 0x10FFFF else m.group()


def unescape(s: str, *, separator: bool = False) -> str:
    """The inverse of :func:`escape` for a caller's path: ``\\\\`` back to one backslash,
    ``\\xNN``, ``\\uNNNN`` and ``\\UNNNNNNNN`` back to what they stand for (bytes ≥ 0x80 as
    surrogateescape characters, so ``os.fsencode`` gives the original byte). A backslash that
    starts none of these is kept as it is (no escape the server writes looks like it).
    ``separator``: a backslash is the path separator (Windows), so ``\\\\`` stays two."""
    if "\\" not in s:
        return s
    return (_ESCAPED_SEPARATED if separator else _ESCAPED).sub(_unescape_match, s)
