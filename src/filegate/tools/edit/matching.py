"""The matching ladder of StrReplaceFile (SPEC §8.2): where an edit's ``old`` is when it is not
in the file exactly, and its ``new`` as the file would have written it.

Pure: the file's UTF-8 bytes and the edit's strings in, byte spans and a report out; no I/O.
Three rungs, each also allowing what the ones before it allow, taken in order; the first rung
that finds any match decides, and only with exactly one match there (``replace_all``: every
match at that rung):

1. trailing whitespace of each line ignored;
2. indentation equivalent: tabs for spaces at the file's tab width, or every line shifted by
   the same number of columns;
3. lookalikes: Unicode spaces as a space, typographic quotes as ASCII quotes, dashes as a
   hyphen.

Nothing else may differ: no edit distance, no other character. Candidates are found from the
longest run of ``old`` that no rung can change (an "anchor", which must then be in the file
verbatim), so a miss costs a few substring searches, not a pass per line of a large file.
"""

from __future__ import annotations

import difflib
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

# Horizontal whitespace: what "trailing whitespace" and "indentation" are made of.
BLANKS = " \t"
# Rung 3: each lookalike becomes one ASCII character (one for one, so positions keep).
_SPACES = "\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"
_SINGLE_QUOTES = "\u2018\u2019\u201a\u201b"
_DOUBLE_QUOTES = "\u201c\u201d\u201e\u201f"
_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"
LOOKALIKES = str.maketrans(
    {
        **dict.fromkeys(_SPACES, " "),
        **dict.fromkeys(_SINGLE_QUOTES, "'"),
        **dict.fromkeys(_DOUBLE_QUOTES, '"'),
        **dict.fromkeys(_DASHES, "-"),
    }
)
# What separates anchors: every character a rung may read as another, and what it reads them as.
_BETWEEN_ANCHORS = re.compile("[\\s'\"\\-" + _SPACES + _SINGLE_QUOTES + _DOUBLE_QUOTES + _DASHES + "]+")
# Anchors counted, longest first, to find a rare one to look around (a miss shows at the
# first anchor not in the file).
ANCHORS_COUNTED = 16
# An anchor found this often is common: its count stops there (the search is not worth it).
COMMON = 64
DEFAULT_TAB_WIDTH = 4

RUNG_NAMES = {
    1: "ignoring trailing whitespace",
    2: "ignoring indentation",
    3: "reading lookalike characters as plain ones",
}


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
class Ladder:
    """What the ladder found: ``rung`` 0 means nothing; more than one span without
    ``replace_all`` means ambiguous (the caller refuses and lists them)."""

    rung: int
    spans: tuple[Span, ...] = ()
    detail: str = ""  # what was tolerated, for the report ("the file indents with tabs, …")

    @property
    def lines(self) -> str:
        return ", ".join(line_range(s.first_line, s.last_line) for s in self.spans)


def line_range(first: int, last: int) -> str:
    return f"line {first}" if first == last else f"lines {first}-{last}"


@dataclass(frozen=True, slots=True)
class _FileLine:
    start: int  # byte offset of the line
    end: int  # byte offset where its content ends (before "\r\n" or "\n")
    stop: int  # byte offset after its line break
    text: str  # its content, decoded (undecodable bytes kept as surrogates)


@dataclass(frozen=True, slots=True)
class _Shape:
    """A line as a rung sees it: ``text[lead:lead + len(core)]`` is compared."""

    text: str
    lead: int
    core: str

    @property
    def trailing(self) -> bool:
        return len(self.text) > self.lead + len(self.core)


def _shape(line: str, rung: int) -> _Shape:
    seen = line.translate(LOOKALIKES) if rung == 3 and not line.isascii() else line
    kept = seen.rstrip(BLANKS)
    core = kept.lstrip(BLANKS) if rung >= 2 else kept
    return _Shape(seen, len(kept) - len(core), core)


def indent_width(indent: str, tab_width: int) -> int:
    """Columns taken by leading whitespace, a tab reaching the next multiple of ``tab_width``."""
    column = 0
    for ch in indent:
        column = (column // tab_width + 1) * tab_width if ch == "\t" else column + 1
    return column


def infer_tab_width(data: bytes) -> int:
    """The file's indentation step when it indents with spaces (the most common difference
    between the indentation of consecutive lines, 2 to 8), else DEFAULT_TAB_WIDTH."""
    steps: Counter[int] = Counter()
    previous = 0
    for raw in data.split(b"\n"):
        stripped = raw.lstrip(b" ")
        if not stripped.strip() or stripped.startswith(b"\t"):
            continue
        width = len(raw) - len(stripped)
        if 2 <= abs(width - previous) <= 8:
            steps[abs(width - previous)] += 1
        previous = width
    return steps.most_common(1)[0][0] if steps else DEFAULT_TAB_WIDTH


def _anchors(old: str) -> list[tuple[str, int]]:
    """(anchor, index of the line of ``old`` it is on), longest first."""
    found = {}
    for index, line in enumerate(old.split("\n")):
        for anchor in _BETWEEN_ANCHORS.split(line):
            if anchor and anchor not in found:
                found[anchor] = index
    return sorted(found.items(), key=lambda item: -len(item[0]))


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _lines_from(data: bytes, start: int, count: int) -> list[_FileLine] | None:
    """``count`` lines from the line starting at ``start``; None if the file ends first."""
    lines: list[_FileLine] = []
    while len(lines) < count:
        if start >= len(data):
            return None
        newline = data.find(b"\n", start)
        if newline < 0:
            end = stop = len(data)
        else:
            stop = newline + 1
            end = newline - 1 if newline > start and data[newline - 1] == 13 else newline
        lines.append(_FileLine(start, end, stop, data[start:end].decode("utf-8", "surrogateescape")))
        start = stop
    return lines


def _windows(
    data: bytes, anchor: str, index: int, count: int, fits: Callable[[str], bool]
) -> Iterator[list[_FileLine]]:
    """Every run of ``count`` file lines whose line ``index`` holds ``anchor`` and ``fits``
    (a line no rung could match is not looked around), each once."""
    needle = _utf8(anchor)
    pos = data.find(needle)
    while pos >= 0:
        start = data.rfind(b"\n", 0, pos) + 1
        line_end = data.find(b"\n", pos)
        line = data[start : len(data) if line_end < 0 else line_end].removesuffix(b"\r")
        if not fits(line.decode("utf-8", "surrogateescape")):
            start = -1
        for _ in range(index if start >= 0 else 0):
            if start == 0:
                break
            start = data.rfind(b"\n", 0, start - 1) + 1
        else:
            lines = _lines_from(data, start, count) if start >= 0 else None
            if lines is not None:
                yield lines
        if line_end < 0:
            return
        pos = data.find(needle, line_end + 1)


@dataclass(frozen=True, slots=True)
class _Hit:
    lines: list[_FileLine]
    begin: int  # character offset in the first line
    finish: int  # character offset in the last line; -1: through its line break
    shift: int
    indents: tuple[tuple[str, str], ...]  # (the file's, the old text's) for compared lines


class _Old:
    """``old`` split into lines, as each rung sees them."""

    def __init__(self, old: str) -> None:
        text = old.replace("\r\n", "\n")
        self.ends_with_newline = text.endswith("\n")
        self.lines = (text[:-1] if self.ends_with_newline else text).split("\n")

    def shapes(self, rung: int) -> list[_Shape]:
        return [_shape(line, rung) for line in self.lines]


def _match_window(
    window: list[_FileLine], olds: list[_Shape], rung: int, ends_nl: bool, tab_width: int
) -> list[_Hit]:
    files = [_shape(line.text, rung) for line in window]
    last = len(olds) - 1
    if last == 0 and not ends_nl:
        return _match_inside(window, files[0], olds[0], rung, tab_width)
    first_f, first_o = files[0], olds[0]
    first_starts_line = rung >= 2 and first_o.lead > 0
    if first_starts_line:
        if first_f.core != first_o.core:
            return []
        begin = 0
    else:
        if not first_f.core.endswith(first_o.core) or not (first_o.core or last):
            return []
        begin = first_f.lead + len(first_f.core) - len(first_o.core)
    for f, o in zip(files[1:last], olds[1:last], strict=True):
        if f.core != o.core:
            return []
    finish = -1
    if last > 0:
        f, o = files[last], olds[last]
        if ends_nl or o.trailing:
            if f.core != o.core:
                return []
            finish = -1 if ends_nl else len(f.text)
        else:
            if not f.core.startswith(o.core):
                return []
            finish = f.lead + len(o.core)
    if ends_nl and window[-1].stop == window[-1].end:
        return []  # the old text ends with a line break the file's last line does not have
    pairs = enumerate(zip(files, olds, strict=True))
    compared = [(f, o) for j, (f, o) in pairs if o.core and (j or first_starts_line)]
    return _with_indents(window, begin, finish, compared, tab_width)


def _match_inside(window: list[_FileLine], f: _Shape, o: _Shape, rung: int, tab_width: int) -> list[_Hit]:
    """A one-line ``old`` without a line break: within one line, maybe several times."""
    if not o.core:
        return []
    at_start = rung >= 2 and o.lead > 0
    content_end = f.lead + len(f.core)
    if at_start and o.trailing:
        spans = [(0, len(f.text))] if f.core == o.core else []
    elif at_start:
        spans = [(0, f.lead + len(o.core))] if f.core.startswith(o.core) else []
    elif o.trailing:
        spans = [(content_end - len(o.core), len(f.text))] if f.core.endswith(o.core) else []
    else:
        spans = []
        pos = f.text.find(o.core, f.lead, content_end)
        while pos >= 0:
            spans.append((pos, pos + len(o.core)))
            pos = f.text.find(o.core, pos + 1, content_end)
    compared = [(f, o)] if at_start else []
    hits = (_with_indents(window, begin, finish, compared, tab_width) for begin, finish in spans)
    return [hit for found in hits for hit in found]


def _with_indents(
    window: list[_FileLine],
    begin: int,
    finish: int,
    compared: list[tuple[_Shape, _Shape]],
    tab_width: int,
) -> list[_Hit]:
    """The hit, when every compared line is shifted by the same number of columns."""
    indents = tuple((f.text[: f.lead], o.text[: o.lead]) for f, o in compared)
    shifts = {indent_width(fi, tab_width) - indent_width(oi, tab_width) for fi, oi in indents}
    if len(shifts) > 1:
        return []
    return [_Hit(window, begin, finish, shifts.pop() if shifts else 0, indents)]


def _span_of(hit: _Hit) -> tuple[int, int]:
    first, last = hit.lines[0], hit.lines[-1]
    start = first.start + len(_utf8(first.text[: hit.begin]))
    end = last.stop if hit.finish < 0 else last.start + len(_utf8(last.text[: hit.finish]))
    return start, end


def _rarest(data: bytes, anchors: list[tuple[str, int]]) -> tuple[str, int] | None:
    """The least frequent of the longest anchors (its first when tied); None when one is not
    in the file at all: then no rung can match."""
    best: tuple[int, str, int] | None = None
    for anchor, index in anchors[:ANCHORS_COUNTED]:
        needle = _utf8(anchor)
        count, pos = 0, data.find(needle)
        while pos >= 0 and count < COMMON:
            count += 1
            pos = data.find(needle, pos + len(needle))
        if count == 0:
            return None
        if best is None or count < best[0]:
            best = (count, anchor, index)
        if count == 1:
            break
    return None if best is None else (best[1], best[2])


def find_tolerant(data: bytes, old: str, new: str, *, tab_width: int, replace_all: bool) -> Ladder:
    """Where ``old`` matches ``data`` (UTF-8) at the first rung that finds it; ``Ladder(0)``
    when no rung does. Call only when ``old`` is not in ``data`` exactly."""
    shape = _Old(old)
    found = _rarest(data, _anchors(old))
    if found is None:
        return Ladder(0)
    anchor, index = found
    fits = _anchor_line_test(shape, index)
    loosest = shape.shapes(3)
    windows = [w for w in _windows(data, anchor, index, len(shape.lines), fits) if _may_match(w, loosest)]
    for rung in (1, 2, 3):
        olds = shape.shapes(rung)
        hits = [h for w in windows for h in _match_window(w, olds, rung, shape.ends_with_newline, tab_width)]
        if hits:
            chosen = _without_overlaps(hits) if replace_all else hits
            spans = tuple(_to_span(data, h, shape, new, rung, tab_width) for h in chosen)
            return Ladder(rung, spans, _detail(rung, chosen, shape))
    return Ladder(0)


def _may_match(window: list[_FileLine], olds: list[_Shape]) -> bool:
    """Whether rung 3, the most tolerant, could match ``window`` (lines compared until one
    differs; what rung 3 refuses, every rung refuses)."""
    last = len(olds) - 1
    for j, (line, old) in enumerate(zip(window, olds, strict=True)):
        core = _shape(line.text, 3).core
        if last == 0:
            return old.core in core
        if not (
            core.endswith(old.core)
            if j == 0
            else core.startswith(old.core)
            if j == last
            else core == old.core
        ):
            return False
    return True


def _anchor_line_test(shape: _Old, index: int) -> Callable[[str], bool]:
    """What the file line holding the anchor must be for any rung to match there (rung 3 is
    the most tolerant: what no rung-3 comparison accepts, none accepts)."""
    core = _shape(shape.lines[index], 3).core
    last = len(shape.lines) - 1
    if last == 0 and not shape.ends_with_newline:
        return lambda line: core in _shape(line, 3).core
    if index == 0:
        return lambda line: _shape(line, 3).core.endswith(core)
    if index == last and not shape.ends_with_newline:
        return lambda line: _shape(line, 3).core.startswith(core)
    return lambda line: _shape(line, 3).core == core


def _without_overlaps(hits: list[_Hit]) -> list[_Hit]:
    """The hits replace_all replaces: from the first, each one that starts after the last."""
    kept: list[_Hit] = []
    end = -1
    for hit in sorted(hits, key=_span_of):
        start, stop = _span_of(hit)
        if start >= end:
            kept.append(hit)
            end = stop
    return kept


def _to_span(data: bytes, hit: _Hit, shape: _Old, new: str, rung: int, tab_width: int) -> Span:
    start, end = _span_of(hit)
    first_line = data.count(b"\n", 0, start) + 1
    last_line = first_line + len(hit.lines) - 1
    crlf = any(line.stop - line.end == 2 for line in hit.lines)
    return Span(start, end, first_line, last_line, _rewritten(hit, shape, new, rung, tab_width), crlf)


def _file_style_tabs(hit: _Hit) -> bool:
    return any("\t" in f for f, _ in hit.indents)


def _reindents(hit: _Hit) -> bool:
    return any(f != o for f, o in hit.indents)


def _rewritten(hit: _Hit, shape: _Old, new: str, rung: int, tab_width: int) -> str:
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
    body = line.lstrip(BLANKS + _SPACES)
    return line[: len(line) - len(body)].translate(LOOKALIKES) + body


def _indent(width: int, tabs: bool, tab_width: int) -> str:
    return "\t" * (width // tab_width) + " " * (width % tab_width) if tabs else " " * width


def _detail(rung: int, hits: list[_Hit], shape: _Old) -> str:
    hit = hits[0]
    parts: list[str] = []
    if rung >= 2 and _reindents(hit):
        parts.append(_indent_detail(hit))
    if rung == 3:
        parts.append(_lookalike_detail(hit, shape))
    return "; ".join(parts)


def _indent_detail(hit: _Hit) -> str:
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


def _lookalike_detail(hit: _Hit, shape: _Old) -> str:
    """Which lookalikes differed: "the file has no-break space (U+00A0) where the old text
    has space (U+0020)", at most three pairs; then the lookalike spaces either side indents
    with, on the lines whose indentation was compared."""
    pairs: dict[tuple[str, str], None] = {}
    indents: dict[str, None] = {}
    for j, (line, old) in enumerate(zip(hit.lines, shape.lines, strict=True)):
        f, o = _shape(line.text, 3), _shape(old, 3)
        if j or hit.begin == 0:  # the line's indentation was compared
            for side, indent in (("the file", line.text[: f.lead]), ("the old text", old[: o.lead])):
                for ch in indent:
                    if ch in _SPACES:
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
