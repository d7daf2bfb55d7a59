"""One combined text within a budget: a list of files, then each file's section (its diff), in
order; what does not fit is cut at a line and said, never dropped without a word."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from filegate.fsio.codec import FileCodec
from filegate.policy.filetype import SNIFF_BYTES
from filegate.tools.edit.diffing import binary_diff, diff_header, plural, unified_diff
from filegate.tools.outcome import lines_within
from filegate.tools.readguard.ledger import reader_of

# A section is cut only where at least this much of it can still be shown; with less room
# left, it is left out whole (a diff's header and a line or two say nothing).
MIN_SECTION_CHARS = 400
# The list of files takes at most this share of the budget; the sections get the rest.
LIST_SHARE = 0.5
# Files named in a note of what was left out, at most.
NAMED = 5
# Rows of one file's diff before it is cut (a question shows ~80; a review, more): the budget
# cuts the combined text further.
REVIEW_DIFF_LINES = 2000


@dataclass(frozen=True, slots=True)
class Section:
    shown: str  # the file as the answer names it (escaped)
    text: str  # its block: a diff with its header, or a line that stands for one ("": not
    # made, the budget being spent already: it is said as left out)


@dataclass(frozen=True, slots=True)
class Fitted:
    text: str
    listed_out: int  # files the list left out
    cut: str  # the file whose section was cut part way ("" none)
    left_out: list[str]  # files whose sections were left out whole

    def note(self, narrow: str) -> str:
        """What was cut, in a sentence ("" when nothing was); ``narrow`` says how to see more."""
        parts = []
        if self.listed_out:
            parts.append(f"{plural(self.listed_out, 'more file')} not listed")
        if self.cut:
            parts.append(f"`{self.cut}`'s diff in part")
        if self.left_out:
            named = ", ".join(f"`{s}`" for s in self.left_out[:NAMED])
            more = f" and {len(self.left_out) - NAMED} more" if len(self.left_out) > NAMED else ""
            parts.append(f"no diff shown for {named}{more}")
        if not parts:
            return ""
        return f"Cut to fit this client's budget: {'; '.join(parts)}. {narrow}"


def fit(rows: list[str], sections: list[Section], budget: int, *, unlisted: int = 0) -> Fitted:
    """``rows`` (the list) then ``sections``, within ``budget`` characters; ``unlisted``: files
    the caller left out of ``rows`` already (said at the list's end)."""
    listed = rows
    room = int(budget * LIST_SHARE)
    size = sum(len(r) + 1 for r in rows)
    listed_out = unlisted
    if size > room:
        listed, used = [], 0
        for row in rows:
            if used + len(row) + 1 > room - 60:  # the closing row's room
                break
            listed.append(row)
            used += len(row) + 1
        listed_out += len(rows) - len(listed)
    if listed_out:
        listed = [*listed, f"… and {plural(listed_out, 'more file')}"]
    out = ["\n".join(listed)]
    left = budget - len(out[0])
    cut = ""
    left_out: list[str] = []
    for section in sections:
        need = len(section.text) + 2
        if section.text and not left_out and not cut and need <= left:
            out.append(section.text)
            left -= need
            continue
        if section.text and not left_out and not cut and left >= MIN_SECTION_CHARS:
            out.append(_cut(section.text, left - 2))
            cut = section.shown
            left = 0
            continue
        left_out.append(section.shown)
    return Fitted("\n\n".join(part for part in out if part), listed_out, cut, left_out)


def _cut(text: str, room: int) -> str:
    """``text``'s first lines in ``room`` characters, with a line saying how many are not."""
    lines = text.split("\n")
    kept = lines_within(lines, room - 80)  # 80: the closing line's room
    kept.append(f"… {plural(len(lines) - len(kept), 'more line')} of this diff not shown")
    return "\n".join(kept)


def diff_block(
    name: str,
    real: Path,
    old: bytes | None,
    new: bytes | None,
    codec_of: Callable[[bytes, Path], FileCodec],
) -> tuple[str, str]:
    """(what changed, in words; its diff block) from ``old`` to ``new`` (None: absent). A file
    no tool shows as text (binary, an image) is told by its sizes, never shown (SPEC §4)."""
    a, b = old or b"", new or b""
    if any(reader_of(real.name, d[:SNIFF_BYTES]) != "ReadFile" for d in (a, b) if d):
        diff = binary_diff(len(a), len(b))
        return f"binary file, {len(a)} → {len(b)} bytes", "\n".join([*diff_header(name), diff.text])
    codec = codec_of(b if new is not None else a, real).codec
    diff = unified_diff(name, a, b, codec, max_lines=REVIEW_DIFF_LINES)
    if diff.added == 0 and diff.removed == 0:
        return "no change in its content", ""
    return f"+{diff.added} -{diff.removed} lines", diff.text
