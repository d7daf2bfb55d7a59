"""A file's planned edits applied to its text (SPEC §10 with §8.2): StrReplaceFile's own
:func:`~filegate.tools.str_replace.apply_edits` — exact, then the ladder, CRLF kept, exactly one
match — for each edit, in order. A V4A hunk adds three things, each used only where the hunk's
text alone does not decide:

- its text is in the file more than once: the ``@@`` lines narrow it to the part of the file
  from the (last) ``@@`` line on, and ``*** End of File`` to the file's last lines; exactly one
  match there, or the edit is refused as StrReplaceFile would, with every place listed;
- it ends the file (``*** End of File``, or it is not found elsewhere) and the file has no final
  line break: its text matches without one, and the new text is written without one (the file
  stays as it was there, byte for byte);
- it only adds lines: they are inserted after its ``@@`` line, else at the file's end.

Pure: UTF-8 bytes in (str_replace's codec handling decodes and encodes around it), an
:class:`~filegate.tools.str_replace.Applied` out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from filegate.errors import EditFailed
from filegate.policy.escape import escape
from filegate.tools.edit.hits import LOOKALIKES
from filegate.tools.edit.matching import line_range
from filegate.tools.edit.replacing import Applied, Edit, apply_edits
from filegate.tools.patch.plan import PlanEdit

# An edit's failure that narrowing may still resolve.
_AMBIGUOUS = "Ambiguous edit"
_NOT_FOUND = ("No replacements made", "Already applied")


def apply_hunks(
    planned: Sequence[PlanEdit],
    data: bytes,
    edits: list[Edit],
    shown: str,
    *,
    tolerant: bool,
    tab_width: Callable[[], int | None],
    check: Callable[[], None] = lambda: None,
) -> Applied:
    """``planned`` applied in order to UTF-8 ``data`` (``edits`` are the same edits as
    StrReplaceFile's objects; the narrowing comes from ``planned``). EditFailed names the edit."""
    out = Applied(data, kept_head=len(data), kept_tail=len(data))
    total = len(planned)
    for number, edit in enumerate(planned, start=1):
        current = out.data if isinstance(out.data, bytes) else bytes(out.data)
        if edit.old == "":
            _insert(out, current, edit, number, shown)
            continue
        one = Edit(old=edit.old, new=edit.new, replace_all=edit.replace_all, match=edit.match)
        try:
            sub = apply_edits(
                current,
                [one],
                shown,
                tolerant=tolerant,
                tab_width=tab_width,
                first=number,
                total=total,
                check=check,
            )
            start = 0
        except EditFailed as exc:
            start, sub = _narrowed(current, edit, one, exc, shown, tolerant, tab_width, number, total, check)
        _merge(out, current, sub, start)
    out.matched = None  # judged as one stretch against changes since the read (SPEC §8.3)
    return out


def _narrowed(
    data: bytes,
    edit: PlanEdit,
    one: Edit,
    exc: EditFailed,
    shown: str,
    tolerant: bool,
    tab_width: Callable[[], int | None],
    number: int,
    total: int,
    check: Callable[[], None],
) -> tuple[int, Applied]:
    """The edit applied within the part of the file its V4A hunk narrows it to: (where that
    part starts, the result there); the original refusal when nothing narrows it to one."""
    tries: list[tuple[int, Edit, str]] = []
    if exc.brief == _AMBIGUOUS and edit.anchors:
        start = after_anchors(data, edit.anchors)
        if start is None:
            raise _with(exc, f"Its `@@` line `{escape(edit.anchors[-1])}` is not in the file either.")
        tries.append((start, one, "after its `@@` lines"))
    ends_bare = bool(data) and not data.endswith(b"\n") and edit.old.endswith("\n")
    bare: Edit | None = None
    if (edit.at_end and exc.brief == _AMBIGUOUS) or (exc.brief in _NOT_FOUND and (edit.at_end or ends_bare)):
        start = last_lines(data, edit.old.count("\n") or 1)
        tries.append((start, one, "at the file's end"))
        if ends_bare:  # the file's last line has no line break: nor has the text that ends it
            new = edit.new.removesuffix("\n")
            bare = Edit(old=edit.old[:-1], new=new, replace_all=edit.replace_all, match=edit.match)
            tries.append((start, bare, "at the file's end, which has no final line break"))
    for start, attempt, where in tries:
        try:
            sub = apply_edits(
                data[start:],
                [attempt],
                shown,
                tolerant=tolerant,
                tab_width=tab_width,
                first=number,
                total=total,
                check=check,
            )
        except EditFailed:
            continue
        if attempt is bare and sub.kept_tail:  # its text without the line break must end the file
            continue
        line = _line_of(data, start)
        sub.reports = [f"{r[:-1]} (lines counted from line {line})." for r in sub.reports]
        sub.reports.append(f"Edit {number} matched {where} ({line_range(line, line)} on).")
        return start, sub
    if exc.brief == _AMBIGUOUS and (edit.anchors or edit.at_end):
        raise _with(
            exc,
            "Narrowed by its `@@` lines and `*** End of File`, it still matches more than once or nowhere.",
        )
    raise exc


def _with(exc: EditFailed, sentence: str) -> EditFailed:
    return EditFailed(f"{exc.message} {sentence}", exc.output, exc.brief)


def _merge(out: Applied, current: bytes, sub: Applied, start: int) -> None:
    """``sub`` (the edit applied to ``current[start:]``) taken into ``out``."""
    out.data = sub.data if start == 0 else current[:start] + bytes(sub.data)
    out.replacements += sub.replacements
    out.to_crlf += sub.to_crlf
    out.to_lf += sub.to_lf
    out.reports += sub.reports
    out.kept_head = min(out.kept_head, start + sub.kept_head)
    out.kept_tail = min(out.kept_tail, sub.kept_tail)


def _insert(out: Applied, data: bytes, edit: PlanEdit, number: int, shown: str) -> None:
    """A hunk that only adds lines: after its (last) ``@@`` line, else at the file's end."""
    crlf = b"\r\n" in data and data.count(b"\n") == data.count(b"\r\n")
    new = edit.new.encode("utf-8", "surrogatepass")
    if crlf:
        new = new.replace(b"\n", b"\r\n")
        out.to_crlf.append(number)
    if edit.anchors:
        after = after_anchors(data, edit.anchors)
        if after is None:
            raise EditFailed(
                f"No replacements were made: edit {number} adds lines after its `@@` line "
                f"`{escape(edit.anchors[-1])}`, which is not in `{shown}`. Nothing was written.",
                brief="No replacements made",
            )
        end = data.find(b"\n", after)
        at = len(data) if end < 0 else end + 1
        if end < 0 and data:
            new = (b"\r\n" if crlf else b"\n") + new
        where = f"after its `@@` line (line {_line_of(data, after)})"
    else:
        at = len(data)
        if data and not data.endswith(b"\n"):
            new = (b"\r\n" if crlf else b"\n") + new
        where = "at the file's end"
    out.data = data[:at] + new + data[at:]
    out.replacements += 1
    out.kept_head = min(out.kept_head, at)
    out.kept_tail = min(out.kept_tail, len(data) - at)
    out.reports.append(f"Edit {number} only adds lines: inserted {where}.")


def after_anchors(data: bytes, anchors: Sequence[str]) -> int | None:
    """Where the line of the last of ``anchors`` starts, each found after the one before
    (a line equal to it, or starting with it, ignoring surrounding blanks and lookalike
    characters); None when one is not there."""
    at = 0
    start = None
    for anchor in anchors:
        start = _find_line(data, anchor, at)
        if start is None:
            return None
        end = data.find(b"\n", start)
        at = len(data) if end < 0 else end + 1
    return start


def _find_line(data: bytes, anchor: str, at: int) -> int | None:
    wanted = _plain(anchor)
    if not wanted:
        return None
    prefix_hit = None
    pos = at
    while pos <= len(data):
        end = data.find(b"\n", pos)
        stop = len(data) if end < 0 else end
        line = _plain(data[pos:stop].decode("utf-8", "surrogateescape"))
        if line == wanted:
            return pos
        if prefix_hit is None and line.startswith(wanted):
            prefix_hit = pos
        if end < 0:
            break
        pos = end + 1
    return prefix_hit


def _line_of(data: bytes, at: int) -> int:
    return data.count(b"\n", 0, at) + 1


def _plain(line: str) -> str:
    return line.translate(LOOKALIKES).strip()


def last_lines(data: bytes, count: int) -> int:
    """Where the file's last ``count`` lines start."""
    pos = len(data) - (1 if data.endswith(b"\n") else 0)
    for _ in range(count):
        pos = data.rfind(b"\n", 0, pos)
        if pos < 0:
            return 0
    return pos + 1
