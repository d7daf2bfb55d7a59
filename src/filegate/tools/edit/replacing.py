# size: one job, an edit list applied to bytes (exact, CRLF, ladder, codec) and what a miss is told
"""StrReplaceFile's edits on UTF-8 bytes (SPEC §4, §8.2): each ``old`` matched exactly, across
LF/CRLF, else down the matching ladder (tolerant_edit.py); the replacements spliced in and
tracked back to the original's spans (SPEC §8.3); and what an edit that missed or matched more
than once is told (the closest region, the lines of the matches). Pure: bytes in, bytes out;
a file in another codec is matched in its decoded text and written back in it (SPEC §8.1).
"""

from __future__ import annotations

import difflib
import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Annotated, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from filegate.errors import EditFailed
from filegate.fsio.codec import Unencodable
from filegate.fsio.loads import Check, unchecked
from filegate.fsio.spliced import Content, Spliced
from filegate.policy.workspace import ResolvedPath
from filegate.tools.edit.textstyle import declared_tab_width
from filegate.tools.edit.tolerant_edit import already_applied, apply_tolerant
from filegate.tools.edit.writing import Encoding

# A "found N times" error lists the line numbers of at most this many matches.
MAX_LISTED_MATCHES = 20
# The "closest region" shown for an old string that matches nothing: at most this many lines,
CLOSEST_MAX_LINES = 30
# ... each cut to this many characters (ReadFile cuts at 2000; this is a hint, not a read),
CLOSEST_LINE_CHARS = 400
# ... and at most this many characters in all: the error stays under ERROR_CHARS (SPEC §9).
CLOSEST_MAX_CHARS = 8_000
# ... and the fuzzy line search runs only on files up to this size (it is O(lines)).
FUZZY_MAX_BYTES = 4 << 20
# A line counts as "close" from this difflib ratio up.
FUZZY_MIN_RATIO = 0.6
# ... within this much work (both lines' lengths multiplied, summed: shuffles of ``old``'s line
# took minutes), checking its call every FUZZY_CHECK_EVERY lines; then the best so far it is.
FUZZY_MAX_WORK, FUZZY_CHECK_EVERY = 10_000_000, 1024


Widths = Callable[[], int | None]  # the tab width an edit's file declares, asked only if needed


class Edit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    old: Annotated[str, Field(description="The old string to replace. Can be multi-line.")]
    new: Annotated[str, Field(description="The new string to replace with. Can be multi-line.")]
    replace_all: Annotated[bool, Field(description="Whether to replace all occurrences.")] = False
    match: Annotated[
        Literal["tolerant", "exact"],
        Field(description='"exact": no whitespace or lookalike tolerance for this edit.'),
    ] = "tolerant"


# --- applying edits to bytes --------------------------------------------------------------


@dataclass(slots=True)
class Applied:
    # The edited bytes; the last edit, when it replaced one occurrence, is spliced in, not
    # copied into a new object the size of the file.
    data: Content
    replacements: int = 0
    to_crlf: list[int] = field(default_factory=list)  # edits written with CRLF
    to_lf: list[int] = field(default_factory=list)  # edits whose CRLF text matched as LF
    # Lengths of the head and the tail of the original that every edit left in place (only
    # they are known to be unchanged: the diff looks between them).
    kept_head: int = 0
    kept_tail: int = 0
    codec_notes: tuple[str, ...] = ()  # the codec it was written in, when not UTF-8
    # What the matching ladder tolerated, per edit that used it (SPEC §8.2).
    reports: list[str] = field(default_factory=list)

    def span(self, original: bytes) -> tuple[int, int, int]:
        """(start, end in ``original``, end in ``data``) of the part the edits touched."""
        return self.kept_head, len(original) - self.kept_tail, len(self.data) - self.kept_tail

    # Each edit's matched spans in the original bytes (SPEC §8.3 judges each by its own), as
    # long as there are at most MAX_TRACKED_REPLACEMENTS replacements; None past that.
    matched: list[tuple[int, int]] | None = field(default_factory=list)
    # The replacements so far, one after another: (at, old length, new length) in the bytes as
    # the replacements before it left them.
    replaced: list[tuple[int, int, int]] = field(default_factory=list)

    def track(self, spans: list[tuple[int, int, int]] | None) -> None:
        """One edit's replacements, (start, end, new length) in the bytes before it, left to
        right; None: too many to track."""
        if (
            spans is None
            or self.matched is None
            or len(self.replaced) + len(spans) > MAX_TRACKED_REPLACEMENTS
        ):
            self.matched = None
            return
        self.matched += [_in_original(start, end, self.replaced) for start, end, _ in spans]
        grown = 0  # what this edit's earlier replacements added: positions after them move
        for start, end, new_len in spans:
            self.replaced.append((start + grown, end - start, new_len))
            grown += new_len - (end - start)


# Per-edit spans are kept for at most this many replacements in all (each later edit is mapped
# back through every earlier one); past it the edits are judged as one stretch.
MAX_TRACKED_REPLACEMENTS = 1000


def _in_original(start: int, end: int, replaced: list[tuple[int, int, int]]) -> tuple[int, int]:
    """``start``..``end`` of the bytes after ``replaced`` as a span of the original: a position
    inside an earlier replacement's new text stands for that replacement's whole old span."""
    for at, old_len, new_len in reversed(replaced):
        if start >= at + new_len:
            start += old_len - new_len
        elif start > at:
            start = at
        if end >= at + new_len and end > at:
            end += old_len - new_len
        elif end > at:
            end = at + old_len
    return start, end


def utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _to_crlf(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


class _Eols:
    """The original file's line endings, looked at only when a matching rule needs them."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    @cached_property
    def crlf(self) -> bool:
        """At least one CRLF. Found from the first CR on: a one-byte search runs as memchr,
        many times faster over LF text than a search for the two bytes."""
        first_cr = self._data.find(b"\r")
        return first_cr >= 0 and self._data.find(b"\r\n", first_cr) >= 0

    @cached_property
    def bare_lf(self) -> bool:
        """At least one LF without a CR before it."""
        return self._data.count(b"\n") > self._data.count(b"\r\n")

    @property
    def pure_crlf(self) -> bool:
        return self.crlf and not self.bare_lf


def _occurrences(data: bytes, old: bytes, replace_all: bool) -> tuple[int, int]:
    """(how many times ``old`` occurs, without overlaps, in ``data``; where it first does).

    One pass over the file for the usual edit: the first match, then the search for a second
    goes on from its end; the full count only when there is one (an error message or
    ``replace_all`` needs it)."""
    pos = data.find(old)
    if pos < 0:
        return 0, -1
    if not replace_all and data.find(old, pos + len(old)) < 0:
        return 1, pos
    return data.count(old, pos), pos  # nothing before pos: the same count as from 0


def _match(data: bytes, old: bytes, eols: _Eols, replace_all: bool) -> tuple[int, int, bytes, str]:
    """(count, first position, the bytes that match, "" | "crlf" | "lf"): exact first, then
    the other EOL."""
    count, pos = _occurrences(data, old, replace_all)
    if count:
        return count, pos, old, ""
    if eols.crlf and b"\n" in old and _to_crlf(old) != old:
        alt = _to_crlf(old)
        count, pos = _occurrences(data, alt, replace_all)
        if count:
            return count, pos, alt, "crlf"
    if eols.bare_lf and b"\r\n" in old:
        alt = old.replace(b"\r\n", b"\n")
        count, pos = _occurrences(data, alt, replace_all)
        if count:
            return count, pos, alt, "lf"
    return 0, -1, old, ""


def apply_edits(
    data: bytes,
    edits: list[Edit],
    shown: str,
    *,
    tolerant: bool = True,
    tab_width: Callable[[], int | None] = lambda: None,
    first: int = 1,
    total: int | None = None,
    check: Check = unchecked,
) -> Applied:
    """Apply ``edits`` in order to UTF-8 ``data``; EditFailed names the edit that failed
    (numbered from ``first`` of ``total``: ApplyPatch applies a file's edits one at a time).
    ``check`` is called as the slow parts go (the ladder, the closest match): it raises to stop
    them (the call's deadline, a client that gave up: fsio/loads.py Work).

    An ``old`` written with LF matches the file's CRLF (and the reverse); its ``new`` is then
    written with the file's line ending. In a pure-CRLF file every ``new`` gets CRLF. An
    ``old`` found nowhere exactly goes down the matching ladder (unless ``tolerant`` is off),
    at the tab width ``tab_width()`` declares (asked only then), else the one it infers.
    """
    eols = _Eols(data)
    out = Applied(data, kept_head=len(data), kept_tail=len(data))
    total = len(edits) if total is None else total
    for number, edit in enumerate(edits, start=first):
        current = out.data if isinstance(out.data, bytes) else bytes(out.data)
        count, pos, old, eol = _match(current, utf8(edit.old), eols, edit.replace_all)
        if count == 0:
            if (
                tolerant
                and edit.match == "tolerant"
                and _tolerated(out, current, edit, number, total, tab_width, check)
            ):
                continue
            raise _not_found(current, edit, number, total, shown, check)
        if count > 1 and not edit.replace_all:
            raise _ambiguous(current, old, count, number, total, shown)
        new = utf8(edit.new)
        if eol == "crlf" or (b"\n" in new and eols.pure_crlf and _to_crlf(new) != new):
            new = _to_crlf(new)
            out.to_crlf.append(number)
        elif eol == "lf":
            new = new.replace(b"\r\n", b"\n")
            out.to_lf.append(number)
        if edit.replace_all:
            out.data = current.replace(old, new)
            # The last replaced occurrence ends at or before the last match's end (rfind may
            # see one that overlaps a replaced one): the tail after it is kept either way.
            end = current.rfind(old) + len(old)
            out.track(_occurrence_spans(current, old, len(new), count))
        else:
            out.data = Spliced(current, pos, pos + len(old), new)
            end = pos + len(old)
            out.track([(pos, end, len(new))])
        out.kept_head = min(out.kept_head, pos)
        out.kept_tail = min(out.kept_tail, len(current) - end)
        out.replacements += count if edit.replace_all else 1
    return out


def _occurrence_spans(data: bytes, old: bytes, new_len: int, count: int) -> list[tuple[int, int, int]] | None:
    """Where ``data.replace(old, …)`` replaces (left to right, never overlapping); None past
    MAX_TRACKED_REPLACEMENTS (then the edits are judged as one stretch)."""
    if count > MAX_TRACKED_REPLACEMENTS:
        return None
    spans, pos = [], data.find(old)
    while pos >= 0:
        spans.append((pos, pos + len(old), new_len))
        pos = data.find(old, pos + max(1, len(old)))
    return spans


def _tolerated(
    out: Applied, current: bytes, edit: Edit, number: int, total: int, tab_width: Widths, check: Check
) -> bool:
    """The edit applied by the matching ladder (SPEC §8.2), or False when no rung matches."""
    which = _which(number, total)
    done = apply_tolerant(current, edit.old, edit.new, edit.replace_all, number, which, tab_width(), check)
    if done is None:
        return False
    out.data = done.data
    out.kept_head = min(out.kept_head, done.head)
    out.kept_tail = min(out.kept_tail, done.tail)
    out.replacements += done.replacements
    out.track(list(done.spans))
    out.reports.append(done.report)
    if done.crlf:
        out.to_crlf.append(number)
    return True


def _which(number: int, total: int) -> str:
    return "the old string" if total == 1 else f"the old string of edit {number} (of {total})"


def _after(number: int) -> str:
    if number == 1:
        return ""
    earlier = "edit 1" if number == 2 else f"edits 1-{number - 1}"
    return f" Edits apply in order, so it must match the text as {earlier} left it."


def _not_found(data: bytes, edit: Edit, number: int, total: int, shown: str, check: Check) -> EditFailed:
    message = (
        f"No replacements were made: {_which(number, total)} was not found in `{shown}`."
        f"{_after(number)} Nothing was written."
    )
    applied = already_applied(data, edit.new)
    if applied is not None:
        return EditFailed(message + applied, brief="Already applied")
    region = closest_region(data, edit.old, check)
    if region is None:
        message += " No similar text was found either; read the file again before editing it."
        return EditFailed(message, brief="No replacements made")
    first, last, text = region
    message += f" The closest match is at lines {first}-{last} (shown below)."
    then = "Copy `old` exactly from the lines above (or ReadFile the file again), then retry the edit."
    return EditFailed(message, text, "No replacements made", then)


def _ambiguous(data: bytes, old: bytes, count: int, number: int, total: int, shown: str) -> EditFailed:
    lines: list[int] = []
    pos, line, scanned = data.find(old), 1, 0
    while pos >= 0 and len(lines) < MAX_LISTED_MATCHES:
        line += data.count(b"\n", scanned, pos)
        scanned = pos
        lines.append(line)
        pos = data.find(old, pos + len(old))
    return EditFailed(
        f"No replacements were made: {_which(number, total)} occurs {count} times in `{shown}` "
        f"({_where(lines, count)}). Include more surrounding lines in `old` so that it matches exactly "
        "once, or set `replace_all` to true to replace every occurrence. Nothing was written.",
        brief="Ambiguous edit",
    )


def _where(lines: list[int], count: int) -> str:
    """Where the matches are: "at lines 1, 3, 5"; when several share a line, how many each
    ("3 times on line 1, once on line 4"), so no line number is repeated."""
    more = ", …" if count > len(lines) else ""
    if len(set(lines)) == len(lines):
        return "at lines " + ", ".join(map(str, lines)) + more
    groups = [(line, len(list(same))) for line, same in itertools.groupby(lines)]
    said = (f"once on line {line}" if n == 1 else f"{n} times on line {line}" for line, n in groups)
    return ", ".join(said) + more


def closest_region(data: bytes, old: str, check: Check = unchecked) -> tuple[int, int, str] | None:
    """(first line, last line, numbered text) of the part of ``data`` most like ``old``."""
    old_lines = old.splitlines() or [old]
    ranked = sorted(((len(s.strip()), i) for i, s in enumerate(old_lines) if s.strip()), reverse=True)
    if not ranked:
        return None
    anchor = _exact_anchor(data, old_lines, ranked[:3]) or _fuzzy_anchor(data, old_lines, ranked[0][1], check)
    if anchor is None:
        return None
    file_line, old_index, pos = anchor
    first = max(1, file_line - old_index - 1)
    count = min(len(old_lines) + 2, CLOSEST_MAX_LINES)
    start = None
    if pos >= 0:  # the start of line ``first``, walked back to from the anchor's byte
        start = data.rfind(b"\n", 0, pos) + 1
        for _ in range(file_line - first):
            start = data.rfind(b"\n", 0, start - 1) + 1
    return _numbered(data, first, count, start)


def _exact_anchor(
    data: bytes, old_lines: list[str], ranked: list[tuple[int, int]]
) -> tuple[int, int, int] | None:
    """A file line containing one of the longest lines of ``old`` (stripped), verbatim: (its
    number, the line of ``old``, the byte where it was found)."""
    for _, i in ranked:
        pos = data.find(utf8(old_lines[i].strip()))
        if pos >= 0:
            return data.count(b"\n", 0, pos) + 1, i, pos
    return None


def _fuzzy_anchor(data: bytes, old_lines: list[str], i: int, check: Check) -> tuple[int, int, int] | None:
    """The file line most like the longest line of ``old`` (difflib ratio), small files only,
    within FUZZY_MAX_WORK."""
    if len(data) > FUZZY_MAX_BYTES:
        return None
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    wanted = old_lines[i].strip()
    matcher.set_seq2(wanted)
    best, best_line, work = FUZZY_MIN_RATIO, 0, 0
    for n, line in enumerate(data.decode("utf-8", "replace").split("\n"), start=1):
        if n % FUZZY_CHECK_EVERY == 0:
            check()
        matcher.set_seq1(line.strip())
        if matcher.real_quick_ratio() > best and matcher.quick_ratio() > best:
            work += len(line) * len(wanted)
            if work > FUZZY_MAX_WORK:
                break
            ratio = matcher.ratio()
            if ratio > best:
                best, best_line = ratio, n
    return (best_line, i, -1) if best_line else None


def _numbered(data: bytes, first: int, count: int, start: int | None = None) -> tuple[int, int, str] | None:
    """``count`` numbered lines from line ``first`` (which starts at byte ``start`` if known)."""
    if start is None:
        start = 0
        for _ in range(first - 1):
            start = data.find(b"\n", start) + 1
            if start == 0:
                return None
    out: list[str] = []
    used = 0
    for n in range(first, first + count):
        if start >= len(data):
            break
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        text = data[start:end].decode("utf-8", "replace").rstrip("\r")
        if len(text) > CLOSEST_LINE_CHARS:
            text = text[:CLOSEST_LINE_CHARS] + "..."
        row = f"{n:6d}\t{text}"
        used += len(row) + 1
        if out and used > CLOSEST_MAX_CHARS:
            break
        out.append(row)
        start = end + 1
    if not out:
        return None
    return first, first + len(out) - 1, "\n".join(out)


# --- in the file's codec ---------------------------------------------------------------


class Applier(Protocol):
    """What applies a file's edits to its UTF-8 text: :func:`apply_edits`, or ApplyPatch's
    hunks (tools/patch/hunks.py), which narrow a V4A hunk by its ``@@`` lines."""

    def __call__(
        self,
        data: bytes,
        edits: list[Edit],
        shown: str,
        *,
        tolerant: bool,
        tab_width: Callable[[], int | None],
        check: Check = ...,
    ) -> Applied: ...


UNDECODED_HINT = (
    " The file is not valid UTF-8: its bytes that are not were shown as \ufffd (U+FFFD) and match"
    " nothing. Read it with ReadFile's `encoding` (e.g. cp1252, gb18030, shift_jis), which this"
    " session's edits of it then use, or start filegate with --legacy-encoding NAME (or auto)."
)


def apply_in_codec(
    rp: ResolvedPath,
    data: bytes,
    edits: list[Edit],
    encoding: Encoding,
    tolerant: bool,
    apply: Applier = apply_edits,
    check: Check = unchecked,
) -> Applied:
    """The edits applied in the file's codec (SPEC §8.1): matched in its decoded text, ``new``
    written in the codec, every byte outside the replaced spans as it was."""
    declared = functools.partial(declared_tab_width, rp.real)
    if encoding.utf8:
        try:
            return apply(data, edits, rp.shown, tolerant=tolerant, tab_width=declared, check=check)
        except EditFailed as exc:
            # The read showed U+FFFD for the bytes that are not UTF-8, and said how to decode
            # them; an edit of such text fails where they are, so the hint is said again.
            if encoding.fallback and not rp.sensitive and exc.brief == "No replacements made":
                raise EditFailed(exc.message + UNDECODED_HINT, exc.output, exc.brief) from None
            raise
    _check_encodable(edits, encoding)
    body = data[len(encoding.bom) :]
    try:
        text = encoding.decode(body)
    except UnicodeDecodeError:
        raise EditFailed(
            f"`{rp.shown}` starts with a {encoding.codec} byte order mark but is not valid "
            f"{encoding.codec}, so it cannot be edited without damage. Nothing was written.",
            brief="Undecodable file",
        ) from None
    if encoding.encode(text) != body:  # a codec with two spellings of one character
        raise EditFailed(
            f"`{rp.shown}` does not read back byte for byte in {encoding.shown}, so an edit would "
            "change bytes outside it. Nothing was written.",
            brief="Undecodable file",
        )
    applied = apply(utf8(text), edits, rp.shown, tolerant=tolerant, tab_width=declared, check=check)
    edited = bytes(applied.data).decode("utf-8", "surrogatepass")
    applied.data = encoding.bom + encoding.encode(edited)
    if encoding.source:
        applied.codec_notes = (f"Encoding: {encoding.shown} (from {encoding.source}); written in it.",)
    return applied


def _check_encodable(edits: list[Edit], encoding: Encoding) -> None:
    """Refuse an edit whose ``new`` holds a character the file's codec cannot store: the file
    would then hold two encodings (SPEC §8.1)."""
    total = len(edits)
    for number, edit in enumerate(edits, start=1):
        try:
            encoding.encode(edit.new)
        except Unencodable as exc:
            which = "`new`" if total == 1 else f"`new` of edit {number} (of {total})"
            raise EditFailed(
                f"{which} holds {exc.code} ({exc.char!r}), which the file's encoding "
                f"{encoding.shown} cannot store. Nothing was written. Write it as the file "
                "would (an escape or entity), or convert the file first.",
                brief="Character not in the file's encoding",
            ) from None
