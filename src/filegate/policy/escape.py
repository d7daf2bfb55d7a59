"""How a file-system string or a file's text is shown to a model, a user or a log (SPEC §2.9).

A file name chooses its own characters: a newline, a CR, an escape sequence, a bidi override
or a backtick in a shown name could forge a line of a message, an approval question or a log
record, or make it read in another order than it is written. And a name need not be valid
UTF-8: Python hands its undecodable bytes over as lone surrogates (``surrogateescape``), which
no JSON encoder or terminal should ever see.

So every such string leaves the server through :func:`escape`:

- C0 controls, DEL, C1 controls and the backtick become ``\\xNN``;
- an undecodable byte (a surrogate U+DC80–U+DCFF) becomes ``\\xNN`` of that byte;
- bidi controls, U+2028/U+2029 and any other lone surrogate become ``\\uNNNN``.

:func:`unescape` is the way back: the shown spelling of a name, passed back to a tool, names
the same file (the resolver tries the literal spelling first, so a file whose name really
holds ``\\x41`` is still found by it).
"""

from __future__ import annotations

import re

# Unicode bidirectional controls and the two line/paragraph separators (SPEC §2.9).
_BIDI_AND_SEPARATORS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029"

_C0_C1_DEL_BACKTICK = (
    "".join(chr(c) for c in range(0x20)) + "\x7f" + "".join(chr(c) for c in range(0x80, 0xA0)) + "`"
)

# One class with every character that is never shown as itself.
_UNSAFE = re.compile(
    "["
    + re.escape(_C0_C1_DEL_BACKTICK)
    + re.escape(_BIDI_AND_SEPARATORS)
    + "\ud800-\udfff"  # lone surrogates: undecodable bytes (DC80–DCFF) and anything else
    + "]"
)
# The same, less the characters a file's text keeps as its layout (tab, LF) and the backtick,
# which is ordinary in source code; CR is shown escaped so a line cannot overwrite itself.
_UNSAFE_IN_TEXT = re.compile(
    "["
    + re.escape("".join(ch for ch in _C0_C1_DEL_BACKTICK if ch not in "\t\n`"))
    + re.escape(_BIDI_AND_SEPARATORS)
    + "\ud800-\udfff"
    + "]"
)


def _escape_char(m: re.Match[str]) -> str:
    c = ord(m.group())
    if 0xDC80 <= c <= 0xDCFF:  # surrogateescape's spelling of the undecodable byte c - 0xDC00
        return f"\\x{c - 0xDC00:02x}"
    if c < 0x100:
        return f"\\x{c:02x}"
    return f"\\u{c:04x}"


def escape(s: str) -> str:
    """``s`` (a path, a name, a link target, a log field) with every unsafe character escaped."""
    return _UNSAFE.sub(_escape_char, s)


def escape_text(s: str) -> str:
    """A file's text as shown in a question or diff: layout (tab, LF) and backticks kept,
    every other control, bidi or separator character escaped."""
    return _UNSAFE_IN_TEXT.sub(_escape_char, s)


def has_unsafe_text(s: str) -> bool:
    """Whether :func:`escape_text` would change ``s`` (the question says so up front)."""
    return _UNSAFE_IN_TEXT.search(s) is not None


_ESCAPED = re.compile(r"\\x([0-9a-fA-F]{2})|\\u([0-9a-fA-F]{4})")


def _unescape_match(m: re.Match[str]) -> str:
    if m.group(1) is not None:
        b = int(m.group(1), 16)
        return chr(b) if b < 0x80 else chr(0xDC00 + b)  # a byte ≥ 0x80: undecodable, as the OS gives it
    return chr(int(m.group(2), 16))


def unescape(s: str) -> str:
    """The inverse of :func:`escape` for a caller's path: ``\\xNN`` and ``\\uNNNN`` back to what
    they stand for (bytes ≥ 0x80 as surrogateescape characters, so ``os.fsencode`` gives the
    original byte)."""
    if "\\" not in s:
        return s
    return _ESCAPED.sub(_unescape_match, s)
