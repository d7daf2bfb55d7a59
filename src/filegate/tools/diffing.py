"""A unified diff of a write, cheap on large files and cut to a readable length (SPEC §6).

Only the region between the common prefix and the common suffix is diffed, so a one-line
edit in a 50 MB file costs a scan, not a 50 MB difflib run.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

# SPEC §6: the diff in the approval message is "truncated to ~80 lines with a note".
MAX_DIFF_LINES = 80
# A diff line longer than this is cut: the message is for a human glancing at a change.
MAX_DIFF_LINE_CHARS = 240
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


def unified_diff(shown: str, old: bytes, new: bytes, encoding: str = "utf-8") -> Diff:
    """The diff old → new as a human reads it; ``encoding`` decodes lines for display."""
    if old == new:
        return Diff("(no change)", 0, 0, True)
    if encoding.replace("-", "").lower() not in ("utf8", "utf8sig"):
        # UTF-16/32 files: diff their UTF-8 transcoding, so lines split on one byte.
        old = old.decode(encoding, "replace").encode("utf-8", "surrogatepass")
        new = new.decode(encoding, "replace").encode("utf-8", "surrogatepass")
    return _diff(shown, old, new)


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _diff(shown: str, a: bytes, b: bytes) -> Diff:
    """Slices stay small: a 50 MB change is counted in place, never copied for the diff."""
    nl = b"\n"
    start, a_end, b_end = _changed_region(a, b)
    first_line = a.count(nl, 0, start) + 1
    header = [f"--- a/{shown}", f"+++ b/{shown}"]
    a_len, b_len = a_end - start, b_end - start
    # Text only added (a new file, an append) or only removed after a few context lines: no
    # difflib, and only the lines that will be shown are decoded, however large the change.
    if a_len < b_len and a_len <= MAX_DIFFED_BYTES:
        context = a[start:a_end]
        if _whole_lines(context) and b.startswith(context, start):
            return _one_sided("+", header, first_line, context, b, start + a_len, b_end)
    if b_len < a_len and b_len <= MAX_DIFFED_BYTES:
        context = b[start:b_end]
        if _whole_lines(context) and a.startswith(context, start):
            return _one_sided("-", header, first_line, context, a, start + b_len, a_end)
    if a_len > MAX_DIFFED_BYTES or b_len > MAX_DIFFED_BYTES:
        return _summary(first_line, a.count(nl, start, a_end), b.count(nl, start, b_end))
    a_lines = _decode(a[start:a_end]).splitlines(keepends=True)
    b_lines = _decode(b[start:b_end]).splitlines(keepends=True)
    if len(a_lines) > MAX_DIFFED_LINES or len(b_lines) > MAX_DIFFED_LINES:
        return _summary(first_line, len(a_lines), len(b_lines))
    lines, added, removed = _hunks(a_lines, b_lines, first_line, a_end == len(a), b_end == len(b))
    return Diff(_cut([*header, *lines], added, removed), added, removed, True)


def _whole_lines(data: bytes) -> bool:
    return not data or data.endswith(b"\n")


def _changed_region(a: bytes, b: bytes) -> tuple[int, int, int]:
    """(start, end in a, end in b) of the differing lines plus CONTEXT lines each side."""
    nl = b"\n"
    p = _common_prefix(a, b)
    p = a.rfind(nl, 0, p) + 1  # back to a line start
    s = _common_suffix(a, b, limit=min(len(a), len(b)) - p)
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


def _common_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    lo = 0
    while lo < n:
        hi = min(lo + _BLOCK, n)
        if a[lo:hi] != b[lo:hi]:
            while a[lo] == b[lo]:
                lo += 1
            return lo
        lo = hi
    return n


def _common_suffix(a: bytes, b: bytes, limit: int) -> int:
    la, lb = len(a), len(b)
    lo = 0
    while lo < limit:
        hi = min(lo + _BLOCK, limit)
        if a[la - hi : la - lo] != b[lb - hi : lb - lo]:
            while a[la - lo - 1] == b[lb - lo - 1]:
                lo += 1
            return lo
        lo = hi
    return limit


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
    sign: str, header: list[str], first: int, context: bytes, buf: bytes, start: int, end: int
) -> Diff:
    """Lines ``buf[start:end]`` added (``sign`` "+") or removed ("-") after ``context``."""
    nl = b"\n"
    shown_context = _decode(context).splitlines(keepends=True)
    n = buf.count(nl, start, end) + (0 if buf.endswith(nl, start, end) else 1)
    head_end = start - 1
    for _ in range(MAX_DIFF_LINES):
        head_end = buf.find(nl, head_end + 1, end)
        if head_end < 0:
            head_end = end - 1
            break
    lines = _decode(buf[start : head_end + 1]).splitlines(keepends=True)[:MAX_DIFF_LINES]
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
    return Diff(_cut([*header, hunk, *body], added, removed, total), added, removed, True)


def _summary(first: int, old_lines: int, new_lines: int) -> Diff:
    text = (
        f"(the change from line {first} on is too large to show as a diff: "
        f"{old_lines} lines become {new_lines} lines)"
    )
    return Diff(text, new_lines, old_lines, False)


def _range(start: int, length: int) -> str:
    return f"{start}" if length == 1 else f"{start},{length}"


def _show(sign: str, lines: list[str], i: int, j: int, at_end: bool) -> list[str]:
    out = []
    for k in range(i, j):
        line = lines[k]
        body = line.rstrip("\r\n")
        if len(body) > MAX_DIFF_LINE_CHARS:
            body = body[:MAX_DIFF_LINE_CHARS] + "…"
        out.append(sign + body)
        if at_end and k == len(lines) - 1 and not line.endswith("\n"):
            out.append("\\ No newline at end of file")
    return out


def _cut(lines: list[str], added: int, removed: int, total: int | None = None) -> str:
    total = len(lines) if total is None else total
    if total <= MAX_DIFF_LINES + 2:  # the two header lines are free
        return "\n".join(lines)
    kept = lines[: MAX_DIFF_LINES + 2]
    kept.append(
        f"… diff cut: {total - len(kept)} more lines not shown "
        f"(+{added} -{removed} lines in the whole change)"
    )
    return "\n".join(kept)
