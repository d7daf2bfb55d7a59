"""A match of the ladder (:mod:`filegate.tools.edit.matching`, SPEC §8.2) and what it writes:
the characters each rung reads alike, a line as a rung sees it, a hit's lines and byte span, and
``new`` as the file would have written it, with the words that say what the ladder tolerated.

Pure: strings and the file's lines in, a span and words out; no I/O.
"""

from __future__ import annotations

import difflib
import math
import unicodedata
from dataclasses import dataclass

# Horizontal whitespace: what "trailing whitespace" and "indentation" are made of.
BLANKS = " \t"
# Rung 3: each lookalike becomes one ASCII character (one for one, so positions keep).
SPACES = "\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"
SINGLE_QUOTES = "\u2018\u2019\u201a\u201b"
DOUBLE_QUOTES = "\u201c\u201d\u201e\u201f"
DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"
LOOKALIKES = str.maketrans(
    {
        **dict.fromkeys(SPACES, " "),
        **dict.fromkeys(SINGLE_QUOTES, "'"),
        **dict.fromkeys(DOUBLE_QUOTES, '"'),
        **dict.fromkeys(DASHES, "-"),
    }
)


@dataclass(frozen=True, slots=True)
class Span:
    """One match: ``data[start:end]`` becomes ``new`` (in the file's style)."""

    start: int
    end: int
    first_line: int
    last_line: int
    new: str
    crlf: bool  # the matched lines end in CRLF: ``new``'s line breaks are to be written so


@dataclass(frozen=True, slots=True)
class FileLine:
    start: int  # byte offset of the line
    end: int  # byte offset where its content ends (before "\r\n" or "\n")
    stop: int  # byte offset after its line break
    text: str  # its content, decoded (undecodable bytes kept as surrogates)


@dataclass(frozen=True, slots=True)
class Shape:
    """A line as a rung sees it: ``text[lead:lead + len(core)]`` is compared."""

    text: str
    lead: int
    core: str

    @property
    def trailing(self) -> bool:
        return len(self.text) > self.lead + len(self.core)


def shape_of(line: str, rung: int) -> Shape:
    seen = line.translate(LOOKALIKES) if rung == 3 and not line.isascii() else line
    kept = seen.rstrip(BLANKS)
    core = kept.lstrip(BLANKS) if rung >= 2 else kept
    return Shape(seen, len(kept) - len(core), core)


def indent_width(indent: str, tab_width: int) -> int:
    """Columns taken by leading whitespace, a tab reaching the next multiple of ``tab_width``."""
    column = 0
    for ch in indent:
        column = (column // tab_width + 1) * tab_width if ch == "\t" else column + 1
    return column


def utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


@dataclass(frozen=True, slots=True)
class Hit:
    lines: list[FileLine]
    begin: int  # character offset in the first line
    finish: int  # character offset in the last line; -1: through its line break
    shift: int
    indents: tuple[tuple[str, str], ...]  # (the file's, the old text's) for compared lines


class OldText:
    """``old`` split into lines, as each rung sees them."""

    def __init__(self, old: str) -> None:
        text = old.replace("\r\n", "\n")
        self.ends_with_newline = text.endswith("\n")
        self.lines = (text[:-1] if self.ends_with_newline else text).split("\n")

    def shapes(self, rung: int) -> list[Shape]:
        return [shape_of(line, rung) for line in self.lines]


def span_of(hit: Hit) -> tuple[int, int]:
    first, last = hit.lines[0], hit.lines[-1]
    start = first.start + len(utf8(first.text[: hit.begin]))
    end = last.stop if hit.finish < 0 else last.start + len(utf8(last.text[: hit.finish]))
    return start, end


def to_span(hit: Hit, first_line: int, shape: OldText, new: str, rung: int, tab_width: int) -> Span:
    start, end = span_of(hit)
    last_line = first_line + len(hit.lines) - 1
    crlf = any(line.stop - line.end == 2 for line in hit.lines)
    return Span(start, end, first_line, last_line, _rewritten(hit, shape, new, rung, tab_width), crlf)


def _file_style_tabs(hit: Hit) -> bool:
    return any("\t" in f for f, _ in hit.indents)


def _reindents(hit: Hit) -> bool:
    return any(f != o for f, o in hit.indents)


def _rewritten(hit: Hit, shape: OldText, new: str, rung: int, tab_width: int) -> str:
    """``new`` as the file would have it: the lines it keeps from ``old`` as the file has them,
    the others re-indented as the match was (rung 2 and up)."""
    text = new.replace("\r\n", "\n")
    new_lines = text.split("\n")
    old_lines = shape.lines + ([""] if shape.ends_with_newline else [])
    last = len(hit.lines) - 1
    ends = (-1, len(hit.lines[last].text))
    whole = {j for j in range(last + 1) if (j or hit.begin == 0) and (j < last or hit.finish in ends)}
    out = list(new_lines)
    if rung == 3:  # the old text's lookalike spaces were read as spaces: so are the new text's
        out = [line if i == 0 and hit.begin > 0 else _plain_indentation(line) for i, line in enumerate(out)]
    convert = rung >= 2 and _reindents(hit)
    if convert:
        tabs = _file_style_tabs(hit)
        for i, line in enumerate(out):
            if i == 0 and hit.begin > 0:
                continue  # continues a line of the file: no indentation of its own
            body = line.lstrip(BLANKS)
            if body:
                width = max(0, indent_width(line[: len(line) - len(body)], tab_width) + hit.shift)
                out[i] = _indent(width, tabs, tab_width) + body
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, o1, o2, n1, _ in matcher.get_opcodes():
        if tag == "equal":
            for k in range(o2 - o1):
                if o1 + k in whole:
                    out[n1 + k] = hit.lines[o1 + k].text
    return "\n".join(out)


def _plain_indentation(line: str) -> str:
    """``line`` with the lookalike spaces of its indentation written as spaces."""
    body = line.lstrip(BLANKS + SPACES)
    return line[: len(line) - len(body)].translate(LOOKALIKES) + body


def _indent(width: int, tabs: bool, tab_width: int) -> str:
    return "\t" * (width // tab_width) + " " * (width % tab_width) if tabs else " " * width


def detail(rung: int, hits: list[Hit], shape: OldText) -> str:
    hit = hits[0]
    parts: list[str] = []
    if rung >= 2 and _reindents(hit):
        parts.append(_indent_detail(hit))
    if rung == 3:
        parts.append(_lookalike_detail(hit, shape))
    return "; ".join(parts)


def _indent_detail(hit: Hit) -> str:
    file_tabs = _file_style_tabs(hit)
    old_tabs = any("\t" in o for _, o in hit.indents)
    said = []
    if file_tabs != old_tabs:
        old_unit = math.gcd(*(len(o) for _, o in hit.indents)) if not old_tabs else 0
        old_says = "tabs" if old_tabs else f"{old_unit} spaces" if old_unit else "no indentation"
        file_says = "tabs" if file_tabs else "spaces"
        said.append(f"the file indents with {file_says}, the old text with {old_says}")
    if hit.shift:
        direction = "less" if hit.shift > 0 else "more"
        said.append(f"the old text is indented {abs(hit.shift)} columns {direction} than the file")
    written = "tabs" if file_tabs else "spaces"
    moved = f", shifted {abs(hit.shift)} columns {'right' if hit.shift > 0 else 'left'}" if hit.shift else ""
    return ", ".join(said) + f"; the new text was written with {written}{moved}"


def _lookalike_detail(hit: Hit, shape: OldText) -> str:
    """Which lookalikes differed: "the file has no-break space (U+00A0) where the old text
    has space (U+0020)", at most three pairs; then the lookalike spaces either side indents
    with, on the lines whose indentation was compared."""
    pairs: dict[tuple[str, str], None] = {}
    indents: dict[str, None] = {}
    for j, (line, old) in enumerate(zip(hit.lines, shape.lines, strict=True)):
        f, o = shape_of(line.text, 3), shape_of(old, 3)
        if j or hit.begin == 0:  # the line's indentation was compared
            for side, indent in (("the file", line.text[: f.lead]), ("the old text", old[: o.lead])):
                for ch in indent:
                    if ch in SPACES:
                        indents.setdefault(f"{side} indents with {_name(ch)}", None)
        start = max(hit.begin, f.lead) if j == 0 else f.lead
        seen = line.text[start : start + len(o.core)]
        for f_ch, o_ch in zip(seen, old[o.lead : o.lead + len(o.core)], strict=False):
            if f_ch != o_ch:
                pairs.setdefault((f_ch, o_ch), None)
    said = [f"the file has {_name(f)} where the old text has {_name(o)}" for f, o in list(pairs)[:3]]
    return ", ".join(said + list(indents)) + "; unchanged lines kept the file's characters"


def _name(ch: str) -> str:
    return f"{unicodedata.name(ch, 'character').lower()} (U+{ord(ch):04X})"
