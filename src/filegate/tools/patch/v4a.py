"""Codex's ``*** Begin Patch`` envelope (the V4A format), parsed into the plan (SPEC §10).

Written from the format's public description (Codex's apply_patch tool instructions)::

    *** Begin Patch
    *** Add File: docs/new.md          every following line starts with "+": the file's lines
    +first line
    *** Delete File: old.txt           nothing follows
    *** Update File: src/app.py        hunks follow; "*** Move to: path" may come first
    *** Move to: src/main.py
    @@ def greet():                    a hunk: "@@", optionally followed by a line of the file
     context line                      " " context, "-" removed, "+" added
    -removed line
    +added line
    *** End of File                    optional: the hunk ends at the file's end
    *** End Patch

Each hunk becomes one StrReplaceFile edit: ``old`` its context and removed lines, ``new`` its
context and added lines, each ending in a line break. Where that text is in the file once, that
is where it lands, whatever the hunks' order; where it is there more than once, the ``@@``
lines (several in a row narrow step by step: a class, then a method) and ``*** End of File``
narrow it, and otherwise it is refused with the places listed (.hunks). What else this parser
settles, each from the format's documented edge cases:

- trailing context: blank context lines at a hunk's end are dropped (a model often ends a hunk
  with an empty line that is the patch's, not the file's; dropping shared context only makes
  the text to find shorter, never changes what is written), unless the hunk ends the file;
- a hunk that only adds lines is inserted after its ``@@`` line, or at the file's end;
- the first hunk of a file may leave out its ``@@``; a unified diff's ``@@ -3,4 +3,5 @@``
  header is read as a bare ``@@`` (its line numbers are not used: hunks land by their text);
- a blank line inside a hunk is an empty context line; any other line without a " ", "-" or
  "+" is refused, naming the line;
- the envelope may come wrapped in a shell heredoc (``<<'EOF'`` ... ``EOF``), as models write
  it for a shell; CRLF line breaks throughout the patch are read as LF.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from filegate.policy.escape import escape
from filegate.tools.patch.plan import FileChange, Plan, PlanEdit, PlanError, checked

BEGIN = "*** Begin Patch"
END = "*** End Patch"
ADD = "*** Add File: "
DELETE = "*** Delete File: "
UPDATE = "*** Update File: "
MOVE = "*** Move to: "
END_OF_FILE = "*** End of File"

# A unified diff's hunk header: its numbers say nothing a V4A hunk uses.
_UNIFIED_HEADER = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")
_HEREDOC_OPEN = re.compile(r"^(?:\S+\s+)?<<\s*(['\"]?)(\w+)\1\s*$")
# A patch line quoted in an error is cut to this many characters.
_QUOTED_CHARS = 80


def parse_v4a(text: str) -> Plan:
    """``text`` (the ``patch`` argument) as a plan; PlanError says which line is wrong and why."""
    lines = _envelope(text)
    parser = _Parser(lines)
    return checked(Plan(tuple(parser.changes())))


def _envelope(text: str) -> list[tuple[int, str]]:
    """The lines between the markers, numbered as the model wrote them (1 = the first line)."""
    if "\r\n" in text and text.count("\r\n") == text.count("\n"):
        text = text.replace("\r\n", "\n")
    lines = list(enumerate(text.split("\n"), start=1))
    while lines and not lines[-1][1].strip():
        lines.pop()
    while lines and not lines[0][1].strip():
        lines.pop(0)
    if len(lines) >= 2:
        opened = _HEREDOC_OPEN.match(lines[0][1].strip())
        if opened and lines[-1][1].strip() == opened.group(2):
            lines = lines[1:-1]
    if not lines or lines[0][1].strip() != BEGIN:
        first = _quote(lines[0][1]) if lines else "nothing"
        raise PlanError(f"`patch` must start with the line `{BEGIN}`; it starts with {first}.")
    if len(lines) < 2 or lines[-1][1].strip() != END:
        raise PlanError(f"`patch` must end with the line `{END}`; it ends with {_quote(lines[-1][1])}.")
    return lines[1:-1]


def _quote(line: str) -> str:
    cut = line if len(line) <= _QUOTED_CHARS else line[:_QUOTED_CHARS] + "…"
    return f"`{escape(cut)}`" if cut else "an empty line"


@dataclass(slots=True)
class _Hunk:
    anchors: list[str] = field(default_factory=list)
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    changes: int = 0  # lines added or removed
    at_end: bool = False
    first_line: int = 0


class _Parser:
    def __init__(self, lines: list[tuple[int, str]]) -> None:
        self.lines = lines
        self.at = 0

    def _peek(self) -> tuple[int, str] | None:
        return self.lines[self.at] if self.at < len(self.lines) else None

    def changes(self) -> list[FileChange]:
        out: list[FileChange] = []
        while (line := self._peek()) is not None:
            number, text = line
            self.at += 1
            if text.startswith(ADD):
                out.append(self._add(_path(text, ADD, number)))
            elif text.startswith(DELETE):
                out.append(FileChange(_path(text, DELETE, number), delete=True))
            elif text.startswith(UPDATE):
                out.append(self._update(_path(text, UPDATE, number), number))
            elif not text.strip():
                continue  # blank lines between file sections
            else:
                raise PlanError(
                    f"`patch` line {number}: expected `{ADD}`, `{DELETE}` or `{UPDATE}` and a "
                    f"path, found {_quote(text)}."
                )
        if not out:
            raise PlanError("`patch` holds no file section: nothing to change.")
        return out

    def _add(self, path: str) -> FileChange:
        content: list[str] = []
        while (line := self._peek()) is not None and not _is_header(line[1]):
            number, text = line
            if not text.startswith("+"):
                raise PlanError(
                    f"`patch` line {number}: every line of `{ADD}{escape(path)}` starts with `+` "
                    f"(a new file's lines); found {_quote(text)}."
                )
            content.append(text[1:] + "\n")
            self.at += 1
        return FileChange(path, content="".join(content))

    def _update(self, path: str, header: int) -> FileChange:
        move_to = None
        line = self._peek()
        if line is not None and line[1].startswith(MOVE):
            move_to = _path(line[1], MOVE, line[0])
            self.at += 1
        hunks: list[_Hunk] = []
        while (line := self._peek()) is not None and not _is_header(line[1]):
            hunks.append(self._hunk(path, first=not hunks))
        if not hunks and move_to is None:
            raise PlanError(
                f"`patch` line {header}: `{UPDATE}{escape(path)}` has no hunk (`@@` and its lines) "
                "and no `*** Move to:`: it changes nothing."
            )
        edits = tuple(_edit(h) for h in hunks)
        return FileChange(path, edits, move_to=move_to)

    def _hunk(self, path: str, *, first: bool) -> _Hunk:
        hunk = _Hunk()
        number, text = self.lines[self.at]
        hunk.first_line = number
        if not first and not text.startswith("@@"):
            raise PlanError(
                f"`patch` line {number}: a hunk of `{escape(path)}` must start with `@@`; found "
                f"{_quote(text)}."
            )
        while text.startswith("@@"):  # one or more headers, each narrowing where it lands
            anchor = "" if _UNIFIED_HEADER.match(text) else text[2:].strip()
            if anchor:
                hunk.anchors.append(anchor)
            self.at += 1
            line = self._peek()
            if line is None:
                break
            number, text = line
        while (line := self._peek()) is not None:
            number, text = line
            if text.startswith("@@") or _is_header(text):
                break
            if text.strip() == END_OF_FILE:
                hunk.at_end = True
                self.at += 1
                break
            self.at += 1
            if text == "" or text[0] == " ":
                hunk.old.append(text[1:])
                hunk.new.append(text[1:])
            elif text[0] == "-":
                hunk.old.append(text[1:])
                hunk.changes += 1
            elif text[0] == "+":
                hunk.new.append(text[1:])
                hunk.changes += 1
            else:
                raise PlanError(
                    f"`patch` line {number}: in a hunk of `{escape(path)}` every line starts with "
                    f"` ` (context), `-` (removed) or `+` (added); found {_quote(text)}."
                )
        if not hunk.changes:
            raise PlanError(
                f"`patch` line {hunk.first_line}: a hunk of `{escape(path)}` adds and removes no line."
            )
        return hunk


def _is_header(text: str) -> bool:
    return text.startswith((ADD, DELETE, UPDATE, MOVE)) or text.strip() == END


def _path(text: str, marker: str, number: int) -> str:
    path = text[len(marker) :].strip()
    if not path:
        raise PlanError(f"`patch` line {number}: `{marker.strip()}` names no path.")
    return path


def _edit(hunk: _Hunk) -> PlanEdit:
    """A hunk as StrReplaceFile's edit; blank context lines at its end dropped (see above)."""
    old, new = list(hunk.old), list(hunk.new)
    while not hunk.at_end and old[-1:] == new[-1:] == [""] and old[:-1] and new[:-1]:
        old.pop()
        new.pop()
    return PlanEdit(
        old="".join(line + "\n" for line in old),
        new="".join(line + "\n" for line in new),
        anchors=tuple(hunk.anchors),
        at_end=hunk.at_end,
    )
