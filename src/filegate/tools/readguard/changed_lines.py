"""A read guard that does not loop (SPEC §8.3): which lines of a file changed since the model
read it (from the ledger's line hashes), whether an edit touches them, and the refusal that
shows them as they are now.

The line arithmetic is pure; :func:`settle` is the one step that tells the ledger (a refusal
shown whole counts as a read).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TypeVar

from filegate.errors import EditFailed, Refusal
from filegate.tools.readguard.ledger import Identity, LineIndex, ReadLedger, line_index

# Each changed line shown in a refusal is cut to this many characters (ReadFile's cut).
SHOWN_LINE_CHARS = 2000
# What the refusal's sentence and numbering take beyond the lines themselves.
REFUSAL_OVERHEAD = 1000
# "lines 3, 7-9, …": at most this many ranges named in one sentence.
MAX_NAMED_RANGES = 10


def changed_lines(before: LineIndex, now: bytes) -> list[int]:
    """The lines of ``now`` (1-based) that are not as they were in the version indexed; a
    deletion marks the line that now follows it (or the last line)."""
    after = line_index(now)
    matcher = difflib.SequenceMatcher(None, before.tolist(), after.tolist(), autojunk=False)
    changed: set[int] = set()
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        changed.update(range(j1 + 1, j2 + 1) if j2 > j1 else (min(j1 + 1, len(after)),))
    return sorted(n for n in changed if n >= 1)


def touched_lines(data: bytes, start: int, end: int) -> range:
    """The lines (1-based) of ``data`` that bytes ``start``..``end`` of it overlap; an empty
    span touches the line it is on."""
    first = data.count(b"\n", 0, start) + 1
    return range(first, first + data.count(b"\n", start, max(start, end - 1)) + 1)


def ranges(lines: list[int]) -> str:
    """ "line 3" / "lines 3, 7-9" (at most MAX_NAMED_RANGES ranges, then "…")."""
    spans: list[tuple[int, int]] = []
    for n in lines:
        if spans and n == spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], n)
        else:
            spans.append((n, n))
    said = [f"{a}" if a == b else f"{a}-{b}" for a, b in spans[:MAX_NAMED_RANGES]]
    more = ", …" if len(spans) > MAX_NAMED_RANGES else ""
    return ("line " if len(lines) == 1 else "lines ") + ", ".join(said) + more


def applied_notice(shown: str, changed: list[int]) -> str:
    return (
        f"`{shown}` changed on disk since it was read (now different: {ranges(changed)}); the "
        "edits did not touch those lines, so they were applied."
    )


def refusal(
    shown: str, data: bytes, changed: list[int], why: str, budget: int, codec: str
) -> tuple[EditFailed, bool]:
    """The refusal of an edit touching changed lines, with those lines as they are now (in the
    file's ``codec``, as ReadFile shows them), numbered, within ``budget`` characters; and
    whether all of them were shown (then it counts as a read of this version)."""
    lines = data.split(b"\n")
    shown_lines: list[str] = []
    used = REFUSAL_OVERHEAD
    whole = True  # every changed line shown, none of them cut
    for n in changed:
        text = lines[n - 1].rstrip(b"\r").decode(codec, "replace")
        # Judged in the characters the cut counts (not bytes: a CR, a two-byte character).
        fits = len(text) <= SHOWN_LINE_CHARS
        cut = text if fits else text[:SHOWN_LINE_CHARS] + "..."
        row = f"{n:6d}\t{cut}"
        if used + len(row) + 1 > budget:
            whole = False
            break
        whole = whole and fits
        shown_lines.append(row)
        used += len(row) + 1
    message = (
        f"`{shown}` changed on disk since it was read (now different: {ranges(changed)}), and the "
        f"edit does not apply away from those lines ({why}). Nothing was written."
    )
    if whole:
        message += " The changed lines are shown below as they are now; this counts as reading them."
        then = "Write the edit against the changed lines above."
    else:
        message += " Only some of the changed lines fit below."
        then = f'Read it again with ReadFile(path="{shown}") before you edit it.'
    return EditFailed(message, "\n".join(shown_lines), "File changed since read", then), whole


def since_read(
    reads: ReadLedger | None, real: Path, identity: Identity, data: bytes | None
) -> list[int] | None:
    """The lines changed since the read, when the file changed in place and its read kept a
    line index; None otherwise (the plain guard decides)."""
    if reads is None or data is None or reads.verdict(real, identity) != "changed":
        return None
    index = reads.index_since(real, identity)
    return None if index is None else changed_lines(index, data)


class _Spanned(Protocol):
    @property
    def span(self) -> tuple[int, int, int] | None: ...

    @property
    def spans(self) -> tuple[tuple[int, int], ...] | None: ...


def lines_touched(data: bytes, change: _Spanned) -> set[int] | range:
    """The lines of ``data`` the change touches: each matched span's own when they are known
    (SPEC §8.3: "no matched span touches a line that changed"), else its one stretch, else
    every line."""
    if change.spans:
        return set().union(*(touched_lines(data, start, end) for start, end in change.spans))
    span = change.span
    return touched_lines(data, span[0], span[1]) if span else range(1, data.count(b"\n") + 2)


C = TypeVar("C", bound=_Spanned)


def settle(
    reads: ReadLedger,
    real: Path,
    identity: Identity,
    shown: str,
    data: bytes,
    changed: list[int],
    budget: int,
    codec: str,
    transform: Callable[[bytes], C],
) -> tuple[C, str]:
    """``transform`` of a file changed since its read, when it matched and left the changed
    lines alone: the change and its notice. Otherwise EditFailed with the changed lines as they
    are now (when all of them are shown, the ledger counts that as a read)."""
    try:
        change = transform(data)
    except Refusal:
        if not changed:
            raise
        why = "its old text does not match the file as it is now"
    else:
        if not changed:
            return change, ""
        touched = lines_touched(data, change)
        hit = [n for n in changed if n in touched]
        if not hit:
            return change, applied_notice(shown, changed)
        why = f"it touches {ranges(hit)}"
    error, whole = refusal(shown, data, changed, why, budget, codec)
    if whole:
        reads.saw(real, identity, data)
    else:  # the refusal told the change: no notice repeats it (§8.3)
        reads.told(real, identity)
    raise error
