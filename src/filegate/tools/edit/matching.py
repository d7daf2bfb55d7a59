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

Bounded (issue 53): at most ``MAX_CANDIDATES`` places are looked at for one edit — past them
the edit is refused as ambiguous, naming the first few — and each is compared lazily, a line
at a time from the file's bytes, stopping at the first line that differs (an ASCII line as
bytes; no list of lines is built for a place until rung 3 accepts all of it). The work checks
its call (``check``: the deadline, a client that gave up) as it goes. A file made of copies of
one line and an ``old`` of 200 such lines took minutes and gigabytes before.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from filegate.tools.edit.hits import (
    BLANKS,
    DASHES,
    DOUBLE_QUOTES,
    LOOKALIKES,
    SINGLE_QUOTES,
    SPACES,
    FileLine,
    Hit,
    OldText,
    Shape,
    Span,
    detail,
    indent_width,
    shape_of,
    span_of,
    to_span,
    utf8,
)

# What separates anchors: every character a rung may read as another, and what it reads them as.
_BETWEEN_ANCHORS = re.compile("[\\s'\"\\-" + SPACES + SINGLE_QUOTES + DOUBLE_QUOTES + DASHES + "]+")
# Anchors counted, longest first, to find a rare one to look around (a miss shows at the
# first anchor not in the file).
ANCHORS_COUNTED = 16
# Places (runs of lines around the anchor's lines) the ladder looks at for one edit, at most:
# past them the edit is refused as ambiguous (Ladder.crowded). A distinctive ``old`` has a few;
# one made of lines the file repeats has as many as the file has lines.
MAX_CANDIDATES = 1000
# An anchor is counted up to this many places: one found this often could not be looked around.
COMMON = MAX_CANDIDATES + 1
# Matches an ambiguous rung keeps to list (its count goes on), and places a crowded one names.
MAX_LISTED = 20
CROWDED_LISTED = 5
# Lines compared between two looks at the call's deadline and cancellation.
CHECK_EVERY = 2048
# Lines compared for one edit, at most (many places, each as long as a long ``old``): past
# them, as past MAX_CANDIDATES, the edit is refused as ambiguous.
MAX_COMPARED_LINES = 250_000
# Decoded non-ASCII lines kept for comparing again (places overlap): at most this many.
MEMO_LINES = 1 << 15
DEFAULT_TAB_WIDTH = 4

RUNG_NAMES = {
    1: "ignoring trailing whitespace",
    2: "ignoring indentation",
    3: "reading lookalike characters as plain ones",
}


@dataclass(frozen=True, slots=True)
class Ladder:
    """What the ladder found: ``rung`` 0 means nothing; more than one match without
    ``replace_all`` means ambiguous (the caller refuses and lists the first ``spans``, of
    ``count``); ``crowded``: more than MAX_CANDIDATES places to look at, the first few's line
    numbers (the caller refuses it as ambiguous too)."""

    rung: int
    spans: tuple[Span, ...] = ()
    detail: str = ""  # what was tolerated, for the report ("the file indents with tabs, …")
    count: int = -1  # matches at the rung (-1: as many as ``spans``)
    crowded: tuple[int, ...] = ()

    @property
    def matches(self) -> int:
        return len(self.spans) if self.count < 0 else self.count

    @property
    def lines(self) -> str:
        return ", ".join(line_range(s.first_line, s.last_line) for s in self.spans)


def line_range(first: int, last: int) -> str:
    return f"line {first}" if first == last else f"lines {first}-{last}"


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


def _line_end(data: bytes, start: int) -> tuple[int, int]:
    """(where the content of the line starting at ``start`` ends, where the next line starts)."""
    newline = data.find(b"\n", start)
    if newline < 0:
        end = len(data)
        return (end - 1 if end > start and data[end - 1] == 13 else end), end
    return (newline - 1 if newline > start and data[newline - 1] == 13 else newline), newline + 1


def _window_starts(data: bytes, anchor: str, index: int, fits: Callable[[int, int], bool]) -> Iterator[int]:
    """Where every run of file lines starts whose line ``index`` holds ``anchor`` and ``fits``
    (its content's byte range; a line no rung could match is not looked around), each once."""
    needle = utf8(anchor)
    pos = data.find(needle)
    while pos >= 0:
        start = data.rfind(b"\n", 0, pos) + 1
        end, after = _line_end(data, pos)
        if fits(start, end):
            for _ in range(index):
                if start == 0:
                    break
                start = data.rfind(b"\n", 0, start - 1) + 1
            else:
                yield start
        if after >= len(data):
            return
        pos = data.find(needle, after)


class _Crowded(Exception):
    """More lines to compare than MAX_COMPARED_LINES: the places are too many to look at."""


def _compare(core: str, want: str, how: str) -> bool:
    if how == "eq":
        return core == want
    if how == "in":
        return want in core
    if how == "end":
        return core.endswith(want)
    return core.startswith(want)


def _core_of(text: str, rung: int) -> str:
    """What a rung compares of a line (``shape_of(text, rung).core``, without the rest)."""
    seen = text.translate(LOOKALIKES) if rung == 3 and not text.isascii() else text
    kept = seen.rstrip(BLANKS)
    return kept.lstrip(BLANKS) if rung >= 2 else kept


class _Loose:
    """The places' lines read lazily from the file's bytes, each once while places that overlap
    compare it again (at most MEMO_LINES kept), and compared with ``old``'s line by line until
    one differs: at rung 3, the most tolerant (what it refuses, every rung refuses), to find
    the places worth a closer look; at rungs 1 and 2, to skip a place before its lines are
    gathered for :func:`_match_window`. Every line compared or gathered is counted: past
    MAX_COMPARED_LINES the places are too many (_Crowded)."""

    def __init__(self, data: bytes, shape: OldText, check: Callable[[], None]) -> None:
        self.data = data
        self.wants = {rung: [o.core for o in shape.shapes(rung)] for rung in (1, 2, 3)}
        self.last = last = len(shape.lines) - 1
        self.hows = ["in"] if last == 0 else ["end", *(["eq"] * (last - 1)), "start"]
        self.ends_with_newline = shape.ends_with_newline
        self.lines: dict[int, FileLine] = {}
        self.cores: dict[int, dict[int, tuple[int, str]]] = {1: {}, 2: {}, 3: {}}
        self.compared = 0
        self.check = check

    def _counted(self) -> None:
        self.compared += 1
        if self.compared % CHECK_EVERY == 0:
            self.check()
            if self.compared >= MAX_COMPARED_LINES:
                raise _Crowded

    def line(self, start: int) -> FileLine:
        got = self.lines.get(start)
        if got is None:
            if len(self.lines) >= MEMO_LINES:
                self.lines.clear()
                for memo in self.cores.values():
                    memo.clear()
            end, after = _line_end(self.data, start)
            text = self.data[start:end].decode("utf-8", "surrogateescape")
            got = self.lines[start] = FileLine(start, end, after, text)
        return got

    def _core(self, start: int, rung: int) -> tuple[int, str]:
        """(where the next line starts, what ``rung`` compares) of the line at ``start``."""
        memo = self.cores[rung]
        got = memo.get(start)
        if got is None:
            line = self.line(start)
            got = memo[start] = (line.stop, _core_of(line.text, rung))
        return got

    def fits(self, index: int) -> Callable[[int, int], bool]:
        """What the file line holding the anchor (``old``'s line ``index``) must be for any rung
        to match there (given the line's start and end)."""
        last = self.last
        if last == 0 and not self.ends_with_newline:
            how = "in"
        elif index == 0:
            how = "end"
        elif index == last and not self.ends_with_newline:
            how = "start"
        else:
            how = "eq"
        want = self.wants[3][index]

        def fits(start: int, end: int) -> bool:
            self._counted()
            return _compare(self._core(start, 3)[1], want, how)

        return fits

    def window(self, start: int, rung: int = 3) -> bool:
        """Whether ``rung`` could match the lines from ``start``, compared until one differs
        (what :func:`_match_window` asks of each line's core, or less)."""
        size = len(self.data)
        for want, how in zip(self.wants[rung], self.hows, strict=True):
            if start >= size:
                return False
            self._counted()
            start, core = self._core(start, rung)
            if not (core == want if how == "eq" else _compare(core, want, how)):
                return False
        return True

    def gathered(self, start: int) -> list[FileLine]:
        """The place's lines (all there: :meth:`window` read them)."""
        out = []
        for _ in range(self.last + 1):
            self._counted()
            line = self.line(start)
            out.append(line)
            start = line.stop
        return out


def _match_window(
    window: list[FileLine], olds: list[Shape], rung: int, ends_nl: bool, tab_width: int
) -> list[Hit]:
    files = [shape_of(line.text, rung) for line in window]
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


def _match_inside(window: list[FileLine], f: Shape, o: Shape, rung: int, tab_width: int) -> list[Hit]:
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
    window: list[FileLine],
    begin: int,
    finish: int,
    compared: list[tuple[Shape, Shape]],
    tab_width: int,
) -> list[Hit]:
    """The hit, when every compared line is shifted by the same number of columns."""
    indents = tuple((f.text[: f.lead], o.text[: o.lead]) for f, o in compared)
    shifts = {indent_width(fi, tab_width) - indent_width(oi, tab_width) for fi, oi in indents}
    if len(shifts) > 1:
        return []
    return [Hit(window, begin, finish, shifts.pop() if shifts else 0, indents)]


def _rarest(data: bytes, anchors: list[tuple[str, int]]) -> tuple[str, int] | None:
    """The least frequent of the longest anchors (its first when tied); None when one is not
    in the file at all: then no rung can match. Each is counted only as far as the rarest so
    far (it cannot be rarer past that), and never past COMMON."""
    best: tuple[int, str, int] | None = None
    for anchor, index in anchors[:ANCHORS_COUNTED]:
        needle = utf8(anchor)
        count, pos = 0, data.find(needle)
        while pos >= 0 and count < (COMMON if best is None else best[0]):
            count += 1
            pos = data.find(needle, pos + len(needle))
        if count == 0:
            return None
        if best is None or count < best[0]:
            best = (count, anchor, index)
        if count == 1:
            break
    return None if best is None else (best[1], best[2])


def _never() -> None:
    return None


def find_tolerant(
    data: bytes,
    old: str,
    new: str,
    *,
    tab_width: int,
    replace_all: bool,
    check: Callable[[], None] = _never,
) -> Ladder:
    """Where ``old`` matches ``data`` (UTF-8) at the first rung that finds it; ``Ladder(0)``
    when no rung does. Call only when ``old`` is not in ``data`` exactly. ``check`` is called
    as the work goes (it raises to stop it: the call's deadline, its client gone)."""
    shape = OldText(old)
    found = _rarest(data, _anchors(old))
    if found is None:
        return Ladder(0)
    anchor, index = found
    loose = _Loose(data, shape, check)
    starts: list[int] = []  # the places rung 3 accepts whole
    looked: list[int] = []  # the first places looked at, to name when there are too many
    try:
        for n, start in enumerate(_window_starts(data, anchor, index, loose.fits(index))):
            if n == MAX_CANDIDATES:
                raise _Crowded
            if n < CROWDED_LISTED:
                looked.append(start)
            if loose.window(start):
                starts.append(start)
        return _rungs(data, loose, starts, shape, new, tab_width, replace_all)
    except _Crowded:
        return Ladder(0, crowded=tuple(_numbered(data, looked)))


def _rungs(
    data: bytes, loose: _Loose, starts: list[int], shape: OldText, new: str, tab_width: int, replace_all: bool
) -> Ladder:
    """The first rung that matches at any of the places rung 3 accepts (``starts``)."""
    for rung in (1, 2, 3):
        olds = shape.shapes(rung)
        hits: list[Hit] = []
        for start in starts:
            if rung < 3 and not loose.window(start, rung):
                continue
            window = loose.gathered(start)
            hits.extend(_match_window(window, olds, rung, shape.ends_with_newline, tab_width))
            if len(hits) > MAX_LISTED and not replace_all:
                break  # ambiguous: more than it lists
        if not hits:
            continue
        if len(hits) > 1 and not replace_all:
            listed = hits[:MAX_LISTED]
            firsts = _numbered(data, [span_of(h)[0] for h in listed])
            places = tuple(
                Span(*span_of(h), n, n + len(h.lines) - 1, "", False)
                for h, n in zip(listed, firsts, strict=True)
            )
            return Ladder(rung, places, count=len(hits))
        chosen = _without_overlaps(hits) if replace_all else hits
        firsts = _numbered(data, [span_of(h)[0] for h in chosen])
        spans = tuple(to_span(h, n, shape, new, rung, tab_width) for h, n in zip(chosen, firsts, strict=True))
        return Ladder(rung, spans, detail(rung, chosen, shape))
    return Ladder(0)


def _numbered(data: bytes, offsets: list[int]) -> list[int]:
    """The line number of each byte offset (in order), counted on from one to the next."""
    numbers, line, at = [], 1, 0
    for offset in offsets:
        line += data.count(b"\n", at, offset)
        at = offset
        numbers.append(line)
    return numbers


def _without_overlaps(hits: list[Hit]) -> list[Hit]:
    """The hits replace_all replaces: from the first, each one that starts after the last."""
    kept: list[Hit] = []
    end = -1
    for hit in sorted(hits, key=span_of):
        start, stop = span_of(hit)
        if start >= end:
            kept.append(hit)
            end = stop
    return kept
