"""StrReplaceFile's side of the matching ladder (SPEC §8.2): an edit whose ``old`` is not in
the file exactly, applied at the ladder's rung, refused as ambiguous, or told it is already
applied. The ladder itself is :mod:`filegate.tools.edit.matching` (pure, tested alone).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from filegate.errors import EditFailed
from filegate.tools.edit.matching import (
    MAX_CANDIDATES,
    MAX_LISTED,
    RUNG_NAMES,
    Ladder,
    find_tolerant,
    infer_tab_width,
    line_range,
)

# The candidates an ambiguity lists: at most this many (and how many there were).
MAX_LISTED_CANDIDATES = MAX_LISTED
# The tab width is inferred from this much of the file: indentation shows early.
TAB_SAMPLE_BYTES = 64 << 10


@dataclass(frozen=True, slots=True)
class Tolerated:
    """An edit applied by the ladder: the new bytes, how many replacements, the report."""

    data: bytes
    replacements: int
    head: int  # bytes before the first replaced span
    tail: int  # bytes after the last one
    crlf: bool  # the new text was written with CRLF
    report: str
    spans: tuple[tuple[int, int, int], ...] = ()  # (start, end, new length) of each replacement


def apply_tolerant(
    data: bytes,
    old: str,
    new: str,
    replace_all: bool,
    number: int,
    which: str,
    declared: int | None = None,
    check: Callable[[], None] = lambda: None,
) -> Tolerated | None:
    """The edit applied at the first rung of the ladder that matches, None when none does;
    EditFailed when a rung matches more than once (without ``replace_all``) or there are too
    many places to look at. The tab width: ``declared`` (the file's `.editorconfig`), else
    inferred from the file. ``check`` stops the work (the call's deadline, its client gone)."""
    tab_width = declared or infer_tab_width(data[:TAB_SAMPLE_BYTES])
    ladder = find_tolerant(data, old, new, tab_width=tab_width, replace_all=replace_all, check=check)
    if ladder.crowded:
        raise _crowded(ladder, which)
    if not ladder.rung:
        return None
    if ladder.matches > 1 and not replace_all:
        raise _ambiguous(ladder, which)
    pieces: list[bytes] = []
    replaced: list[tuple[int, int, int]] = []
    at = 0
    crlf = False
    for span in ladder.spans:
        text = span.new.replace("\n", "\r\n") if span.crlf else span.new
        crlf = crlf or (span.crlf and "\n" in span.new)
        encoded = text.encode("utf-8", "surrogateescape")
        pieces += [data[at : span.start], encoded]
        replaced.append((span.start, span.end, len(encoded)))
        at = span.end
    pieces.append(data[at:])
    first, last = ladder.spans[0], ladder.spans[-1]
    report = f"Edit {number} matched {RUNG_NAMES[ladder.rung]} at {ladder.lines}"
    report += f": {ladder.detail}." if ladder.detail else "."
    head, tail = first.start, len(data) - last.end
    return Tolerated(b"".join(pieces), len(ladder.spans), head, tail, crlf, report, tuple(replaced))


def _crowded(ladder: Ladder, which: str) -> EditFailed:
    listed = ", ".join(map(str, ladder.crowded))
    return EditFailed(
        f"No replacements were made: {which} is not in the file exactly, and it looks like more than "
        f"{MAX_CANDIDATES} places in the file (starting at lines {listed}, …) to compare ignoring "
        "whitespace and lookalike characters, so it is ambiguous. Include more distinctive lines "
        "in `old` so that it matches once, exactly. Nothing was written.",
        brief="Ambiguous edit",
    )


def _ambiguous(ladder: Ladder, which: str) -> EditFailed:
    listed = Ladder(ladder.rung, ladder.spans[:MAX_LISTED_CANDIDATES]).lines
    more = ladder.matches > MAX_LISTED_CANDIDATES  # the ladder stops counting past what it lists
    count = f"more than {MAX_LISTED_CANDIDATES}" if more else str(ladder.matches)
    return EditFailed(
        f"No replacements were made: {which} is not in the file exactly, and {RUNG_NAMES[ladder.rung]} "
        f"it matches {count} places ({listed}{', …' if more else ''}). Include more surrounding lines "
        "in `old` so that it matches once, or set `replace_all` to true to replace every one. "
        "Nothing was written.",
        brief="Ambiguous edit",
    )


def already_applied(data: bytes, new: str) -> str | None:
    """When ``new`` is in ``data`` exactly once (with either line ending): the sentence saying
    the edit looks applied, so a model does not retry it forever."""
    lf = new.replace("\r\n", "\n")
    for text in dict.fromkeys((new, lf, lf.replace("\n", "\r\n"))):
        needle = text.encode("utf-8", "surrogatepass")
        pos = data.find(needle) if needle.strip() else -1
        if pos >= 0 and data.find(needle, pos + 1) < 0:
            first = data.count(b"\n", 0, pos) + 1
            last = first + needle.count(b"\n", 0, max(0, len(needle) - 1))
            return (
                f" Its `new` text is already there ({line_range(first, last)}): the edit looks applied "
                "already; read the file if you are not sure."
            )
    return None
