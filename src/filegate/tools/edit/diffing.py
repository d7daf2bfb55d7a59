"""A unified diff of a write, cheap on large files and cut to a readable length (SPEC §6).

Only the region between the common prefix and the common suffix is diffed, so a one-line
edit in a 50 MB file costs a scan, not a 50 MB difflib run.

What the diff shows is escaped as SPEC §2.9 asks (``escape_text``: control, bidi and separator
characters as ``\\xNN``/``\\uNNNN``), and a long line is folded, never cut silently (§6).
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass

from filegate.fsio.spliced import Content
from filegate.policy.escape import escape_log, escape_text, has_unsafe_text
from filegate.tools.outcome import WriteRequest, lines_within

# SPEC §6: the diff in the approval message is "truncated to ~80 lines with a note".
MAX_DIFF_LINES = 80
# A diff line longer than this is folded onto continuation rows of this many characters ...
FOLD_CHARS = 200
# ... at most this many rows a line; past them the question says how many characters are
# hidden and shows the line's end (SPEC §6: a long line is never cut silently).
MAX_FOLDS = 10
# The end of a line shown after its hidden middle.
LINE_END_CHARS = 120
# A continuation row starts with this after the diff sign.
FOLD_MARK = "↪ "
# Kimi's build_diff_blocks summarises instead of diffing past 10,000 lines a side.
MAX_DIFFED_LINES = 10_000
# ... and so do we past this many bytes a side, to bound difflib's time and memory.
MAX_DIFFED_BYTES = 1 << 20
# Lines of context around each change (difflib's and git's default).
CONTEXT = 3
# Common prefix/suffix search compares blocks of this size before narrowing down.
_BLOCK = 1 << 16


@dataclass(frozen=True, slots=True)
class Diff:
    text: str  # the unified diff (or a one-line summary when too large), already cut
    added: int  # lines added in the whole change (not only the shown part)
    removed: int
    complete: bool  # False when the changed region was too large to diff line by line
    unsafe: bool = False  # the shown lines held characters that are shown escaped
    binary: bool = False  # a file no tool shows as text: its sizes only (binary_diff)


def binary_diff(old_size: int, new_size: int) -> Diff:
    """The diff of a file ReadFile and Grep withhold (image, video, binary): SPEC §4, a
    type-gated file's bytes never reach a diff, a preview or a question; its sizes do."""
    return Diff(f"binary file, {old_size} → {new_size} bytes", 0, 0, False, binary=True)


def unified_diff(
    shown: str,
    old: bytes,
    new: Content,
    encoding: str = "utf-8",
    *,
    span: tuple[int, int, int] | None = None,
    show: bool = True,
    max_lines: int = MAX_DIFF_LINES,
) -> Diff:
    """The diff old → new as a human reads it; ``encoding`` decodes lines for display.

    ``span`` (start, end in old, end in new), when the caller knows it, bounds the change:
    ``old`` and ``new`` are the same before ``start`` and after the ends, so the search for
    the changed region starts there instead of scanning both whole. ``show=False`` gives the
    line counts only (``text`` is empty): the number of the first changed line, which costs a
    count of every line before the change, is needed only for a diff that is shown.
    ``max_lines``: the rows shown before the cut (a question's ~80; Changes shows more).
    """
    if encoding.replace("-", "").lower() not in ("utf8", "utf8sig"):
        # UTF-16/32 files: diff their UTF-8 transcoding, so lines split on one byte.
        old = old.decode(encoding, "replace").encode("utf-8", "surrogatepass")
        new = bytes(new).decode(encoding, "replace").encode("utf-8", "surrogatepass")
        span = None  # its offsets were in the other encoding
    known = (0, 0) if span is None else (span[0], len(old) - span[1])
    if _same(old, new, span):
        return Diff("(no change)" if show else "", 0, 0, True)
    region = _changed_region(old, new, known)  # two scans of the whole file at most: done once
    diff = _diff(shown, old, new, region, show, max_lines)
    if not show:
        return diff
    start, a_end, b_end = region
    if _unsafe(old[start:a_end]) or _unsafe(new[start:b_end]):
        return dataclasses.replace(diff, unsafe=True)
    return diff


def _same(old: bytes, new: Content, span: tuple[int, int, int] | None) -> bool:
    if span is None:
        return old == new
    start, a_end, b_end = span
    return a_end - start == b_end - start and old[start:a_end] == new[start:b_end]


def _unsafe(data: bytes) -> bool:
    """Characters the diff shows escaped, a CRLF line end aside (it is layout, not content)."""
    return has_unsafe_text(_decode(data).replace("\r\n", "\n"))


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _split(text: str) -> list[str]:
    """Lines ending at LF only (str.splitlines also breaks at U+2028, FF, VT, …, which a
    file does not count as line ends and which the diff shows escaped instead)."""
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def diff_header(shown: str) -> list[str]:
    """git's header: ``a/`` and ``b/`` before a relative path, an absolute one as it is."""
    name = escape_log(shown)  # escaped once already: made safe again, backslashes not doubled
    if name.startswith("/"):
        return [f"--- {name}", f"+++ {name}"]
    return [f"--- a/{name}", f"+++ b/{name}"]


def _diff(shown: str, a: bytes, b: Content, region: tuple[int, int, int], show: bool, max_lines: int) -> Diff:
    """Slices stay small: a change to a large file is counted in place, never copied for the diff."""
    diff = _diff_text(shown, a, b, region, _first_line(a, region[0]) if show else 1, max_lines)
    return diff if show else dataclasses.replace(diff, text="")


def _first_line(a: bytes, start: int) -> int:
    return a.count(b"\n", 0, start) + 1


def _diff_text(
    shown: str, a: bytes, b: Content, region: tuple[int, int, int], first_line: int, max_lines: int
) -> Diff:
    nl = b"\n"
    start, a_end, b_end = region
    header = diff_header(shown)
    a_len, b_len = a_end - start, b_end - start
    # Text only added (a new file, an append) or only removed after a few context lines: no
    # difflib, and only the lines that will be shown are decoded, however large the change.
    if a_len < b_len and a_len <= MAX_DIFFED_BYTES:
        context = a[start:a_end]
        if _whole_lines(context) and b.startswith(context, start):
            return _one_sided("+", header, first_line, context, b, start + a_len, b_end, max_lines)
    if b_len < a_len and b_len <= MAX_DIFFED_BYTES:
        context = b[start:b_end]
        if _whole_lines(context) and a.startswith(context, start):
            return _one_sided("-", header, first_line, context, a, start + b_len, a_end, max_lines)
    if a_len > MAX_DIFFED_BYTES or b_len > MAX_DIFFED_BYTES:
        return _summary(first_line, a.count(nl, start, a_end), b.count(nl, start, b_end))
    a_lines = _split(_decode(a[start:a_end]))
    b_lines = _split(_decode(b[start:b_end]))
    if len(a_lines) > MAX_DIFFED_LINES or len(b_lines) > MAX_DIFFED_LINES:
        return _summary(first_line, len(a_lines), len(b_lines))
    lines, added, removed = _hunks(a_lines, b_lines, first_line, a_end == len(a), b_end == len(b))
    return Diff(_cut([*header, *lines], added, removed, max_lines=max_lines), added, removed, True)


def _whole_lines(data: bytes) -> bool:
    return not data or data.endswith(b"\n")


def _changed_region(a: bytes, b: Content, known: tuple[int, int] = (0, 0)) -> tuple[int, int, int]:
    """(start, end in a, end in b) of the differing lines plus CONTEXT lines each side.

    ``known``: lengths of a head and a tail that ``a`` and ``b`` are known to share; the
    search for the first and the last difference starts from them."""
    nl = b"\n"
    p = common_prefix(a, b, known[0])
    p = a.rfind(nl, 0, p) + 1  # back to a line start
    limit = min(len(a), len(b)) - p
    s = common_suffix(a, b, limit, min(known[1], limit))
    if s:
        k = a.find(nl, len(a) - s)  # the suffix starts after a line break it contains
        s = len(a) - (k + 1) if k >= 0 else 0
    for _ in range(CONTEXT):
        if p > 0:
            p = a.rfind(nl, 0, p - 1) + 1
        if s > 0:
            k = a.find(nl, len(a) - s)
            s = len(a) - (k + 1) if k >= 0 else 0
    return p, len(a) - s, len(b) - s


def common_prefix(a: bytes, b: Content, lo: int = 0) -> int:
    """The length of the head ``a`` and ``b`` share, searched from ``lo`` (shared up to it)."""
    n = min(len(a), len(b))
    while lo < n:
        hi = min(lo + _BLOCK, n)
        x, y = a[lo:hi], b[lo:hi]
        if x != y:
            return lo + _first_difference(x, y)
        lo = hi
    return n


def common_suffix(a: bytes, b: Content, limit: int, lo: int = 0) -> int:
    """The length of the tail ``a`` and ``b`` share (at most ``limit``), searched from ``lo``."""
    la, lb = len(a), len(b)
    while lo < limit:
        hi = min(lo + _BLOCK, limit)
        x, y = a[la - hi : la - lo], b[lb - hi : lb - lo]
        if x != y:
            return lo + _first_difference(x[::-1], y[::-1])
        lo = hi
    return limit


def _first_difference(x: bytes, y: bytes) -> int:
    """The first index where two different blocks of one length differ (bisection: a few
    slice comparisons instead of a Python loop over up to _BLOCK bytes)."""
    lo, hi = 0, len(x)  # x[:lo] == y[:lo]; they differ somewhere before hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if x[lo:mid] == y[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def _hunks(
    a: list[str], b: list[str], first: int, a_at_end: bool, b_at_end: bool
) -> tuple[list[str], int, int]:
    out: list[str] = []
    added = removed = 0
    matcher = difflib.SequenceMatcher(None, a, b)
    for group in matcher.get_grouped_opcodes(CONTEXT):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{_range(first + i1, i2 - i1)} +{_range(first + j1, j2 - j1)} @@")
        for tag, x1, x2, y1, y2 in group:
            if tag == "equal":
                out.extend(_show(" ", a, x1, x2, a_at_end))
                continue
            if tag in ("replace", "delete"):
                removed += x2 - x1
                out.extend(_show("-", a, x1, x2, a_at_end))
            if tag in ("replace", "insert"):
                added += y2 - y1
                out.extend(_show("+", b, y1, y2, b_at_end))
    return out, added, removed


def _one_sided(
    sign: str,
    header: list[str],
    first: int,
    context: bytes,
    buf: Content,
    start: int,
    end: int,
    max_lines: int = MAX_DIFF_LINES,
) -> Diff:
    """Lines ``buf[start:end]`` added (``sign`` "+") or removed ("-") after ``context``."""
    nl = b"\n"
    shown_context = _split(_decode(context))
    n = buf.count(nl, start, end) + (0 if buf.endswith(nl, start, end) else 1)
    head_end = start - 1
    for _ in range(max_lines):
        head_end = buf.find(nl, head_end + 1, end)
        if head_end < 0:
            head_end = end - 1
            break
    lines = _split(_decode(buf[start : head_end + 1]))[:max_lines]
    c = len(shown_context)
    old_n, new_n = (c, c + n) if sign == "+" else (c + n, c)
    old_start = first if old_n else first - 1
    new_start = first if new_n else first - 1
    hunk = f"@@ -{_range(old_start, old_n)} +{_range(new_start, new_n)} @@"
    body = [
        *_show(" ", shown_context, 0, c, False),
        *_show(sign, lines, 0, len(lines), end == len(buf) and len(lines) == n),
    ]
    added, removed = (n, 0) if sign == "+" else (0, n)
    total = len(header) + 1 + c + n
    return Diff(_cut([*header, hunk, *body], added, removed, total, max_lines), added, removed, True)


def plural(n: int, word: str) -> str:
    """``1 line``, ``2 lines``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def change_summary(request: WriteRequest) -> str:
    """The size and line counts of a change, as the approval question and a dry_run preview
    both say them (not for a sensitive file: nothing about it is told, SPEC §2.6)."""
    if request.created:
        return f"New file: {plural(request.new_size, 'byte')}, {plural(request.new_lines, 'line')}."
    if request.binary:
        return (
            f"Size: {request.old_size} → {request.new_size} bytes "
            f"({request.new_size - request.old_size:+d}); a binary file, so its content is not shown."
        )
    return (
        f"Size: {request.old_size} → {request.new_size} bytes "
        f"({request.new_size - request.old_size:+d}); lines: {request.old_lines} → "
        f"{request.new_lines} ({request.new_lines - request.old_lines:+d})."
    )


def _summary(first: int, old_lines: int, new_lines: int) -> Diff:
    text = (
        f"(the change from line {first} on is too large to show as a diff: "
        f"{plural(old_lines, 'line')} become {plural(new_lines, 'line')})"
    )
    return Diff(text, new_lines, old_lines, False)


def _range(start: int, length: int) -> str:
    return f"{start}" if length == 1 else f"{start},{length}"


def _show(sign: str, lines: list[str], i: int, j: int, at_end: bool) -> list[str]:
    """Diff rows for ``lines[i:j]``: one entry per source line (a folded line's rows joined by
    LF), its text escaped."""
    out = []
    for k in range(i, j):
        line = lines[k]
        body = line[:-1] if line.endswith("\n") else line
        body = body[:-1] if body.endswith("\r") else body  # CRLF: the CR is the line end
        out.append(fold(sign, escape_text(body)))
        if at_end and k == len(lines) - 1 and not line.endswith("\n"):
            out.append("\\ No newline at end of file")
    return out


def fold(sign: str, body: str) -> str:
    """``sign + body`` on rows of FOLD_CHARS; past MAX_FOLDS rows, the hidden count and the end."""
    if len(body) <= FOLD_CHARS:
        return sign + body
    rows = [sign + body[:FOLD_CHARS]]
    shown_up_to = FOLD_CHARS * MAX_FOLDS
    if len(body) > shown_up_to + LINE_END_CHARS:
        middle_end = len(body) - LINE_END_CHARS
        for at in range(FOLD_CHARS, shown_up_to, FOLD_CHARS):
            rows.append(sign + FOLD_MARK + body[at : at + FOLD_CHARS])
        hidden = middle_end - shown_up_to
        rows.append(f"{sign}{FOLD_MARK}… {hidden} characters of this line not shown; it ends with:")
        rows.append(sign + FOLD_MARK + body[middle_end:])
        return "\n".join(rows)
    for at in range(FOLD_CHARS, len(body), FOLD_CHARS):
        rows.append(sign + FOLD_MARK + body[at : at + FOLD_CHARS])
    return "\n".join(rows)


def _cut(
    lines: list[str], added: int, removed: int, total: int | None = None, max_lines: int = MAX_DIFF_LINES
) -> str:
    """At most ``max_lines`` source lines (a folded line counts once) after the header."""
    total = len(lines) if total is None else total
    if total <= max_lines + 2:  # the two header lines are free
        return "\n".join(lines)
    kept = lines[: max_lines + 2]
    kept.append(
        f"… diff cut: {plural(total - len(kept), 'more line')} not shown "
        f"(+{added} -{removed} lines in the whole change)"
    )
    return "\n".join(kept)


def _cut_plain(rows: list[str]) -> str:
    if len(rows) <= MAX_DIFF_LINES:
        return "\n".join(rows)
    kept = rows[:MAX_DIFF_LINES]
    return "\n".join([*kept, f"… cut: {plural(len(rows) - len(kept), 'more line')} not shown"])


_PREVIEW_CHARS = MAX_DIFF_LINES * FOLD_CHARS * MAX_FOLDS


def requested_change(pairs: list[tuple[str | None, str]]) -> tuple[str, bool]:
    """The change as the model asked for it — ``(old or None, new)`` per edit — for a question
    that may not show the file (a sensitive one): (text, whether it holds escaped characters).
    """
    rows: list[str] = []
    unsafe = False
    for number, (old, new) in enumerate(pairs, start=1):
        if len(pairs) > 1:
            rows.append(f"@@ edit {number} of {len(pairs)} @@")
        for sign, text in (("-", old), ("+", new)):
            if text is None:
                continue
            unsafe = unsafe or has_unsafe_text(text.replace("\r\n", "\n"))
            # Only the head can be shown (MAX_DIFF_LINES rows): split no more than that.
            lines = _split(text[:_PREVIEW_CHARS]) or [""]
            if len(text) > _PREVIEW_CHARS:
                lines.append(f"… ({len(text) - _PREVIEW_CHARS} more characters)")
            rows.extend(_show(sign, lines, 0, len(lines), False))
    return _cut_plain(rows), unsafe


def fit_lines_to(text: str, chars: int) -> str:
    """``text``'s whole lines while they fit in ``chars``, then one line saying how many more
    there are (an error stays under ERROR_CHARS, SPEC §9)."""
    if len(text) <= chars:
        return text
    lines = text.split("\n")
    kept = lines_within(lines, chars)
    more = len(lines) - len(kept)
    return "\n".join([*kept, f"[{more} more line{'s' if more != 1 else ''} not shown]"])
