"""StrReplaceFile on a notebook (SPEC §8.6): an ``old`` found in a cell's source is replaced
there, and the JSON is written back in the file's own layout, every byte outside that source
as it was.

The layout is found, not assumed: the parsed file is written back with the candidate layouts
(nbformat's own is ``indent=1``, non-ASCII kept) and one must reproduce the file byte for byte,
or the cell edit is not made and the edit applies to the JSON text as before. Parsing holds
about three times the file, so only notebooks up to ``MAX_EDIT_BYTES`` are edited by cell.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from filegate.errors import EditFailed

# The largest notebook edited by cell. Its bytes are already held by the write route (and
# charged to the load budget there); the parse and the rewritten copy come on top of them.
MAX_EDIT_BYTES = 16 << 20


@dataclass(frozen=True, slots=True)
class Layout:
    indent: int | None
    ensure_ascii: bool
    separators: tuple[str, str] | None
    final_newline: bool

    def dump(self, notebook: Any) -> bytes:
        text = json.dumps(
            notebook, indent=self.indent, ensure_ascii=self.ensure_ascii, separators=self.separators
        )
        return (text + ("\n" if self.final_newline else "")).encode("utf-8")


def _layouts(data: bytes) -> list[Layout]:
    """The layouts the file may be in: its indentation as its second line shows it."""
    final = data.endswith(b"\n")
    first_break = data.find(b"\n")
    if first_break < 0 or first_break == len(data) - 1:  # one line: compact JSON
        return [Layout(None, a, s, final) for a in (False, True) for s in ((",", ":"), (", ", ": "))]
    second = data[first_break + 1 :]
    indent = len(second) - len(second.lstrip(b" "))
    # With an indent, json's separators are nbformat's (",", ": ") already.
    return [Layout(indent, a, None, final) for a in (False, True)]


@dataclass(slots=True)
class CellEdit:
    data: bytes  # the rewritten file
    replacements: int
    kept_head: int  # bytes at the start and the end the edit left as they were
    kept_tail: int


def notebook_of(data: bytes) -> tuple[dict[str, Any], Layout] | None:
    """The parsed notebook and the layout that writes it back byte for byte; None when the
    file is not nbformat 4 JSON filegate can rewrite exactly (its edits then go to the text)."""
    if len(data) > MAX_EDIT_BYTES:
        return None
    try:
        notebook = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if (
        not isinstance(notebook, dict)
        or notebook.get("nbformat") != 4
        or not isinstance(notebook.get("cells"), list)
    ):
        return None
    for layout in _layouts(data):
        if layout.dump(notebook) == data:
            return notebook, layout
    return None


def _source(cell: dict[str, Any]) -> str:
    """A cell's source as one string: "" when it has none, or one that is not nbformat's string
    or list of strings (an ``old`` is never found there, so that cell is never rewritten)."""
    value = cell.get("source")
    if isinstance(value, list) and all(isinstance(line, str) for line in value):
        return "".join(value)
    return value if isinstance(value, str) else ""


def _set_source(cell: dict[str, Any], text: str) -> None:
    # nbformat writes a list of lines (each with its break); keep the form the cell had.
    cell["source"] = text.splitlines(keepends=True) if isinstance(cell.get("source"), list) else text


def edit_cells(data: bytes, edits: list[tuple[str, str, bool]], shown: str) -> CellEdit | None:
    """The edits (old, new, replace_all) applied to cell sources; None when the file is not a
    notebook edited by cell, or when no edit's ``old`` is in a cell (they go to the text)."""
    parsed = notebook_of(data)
    if parsed is None:
        return None
    notebook, layout = parsed
    cells = [c for c in notebook["cells"] if isinstance(c, dict)]
    sources = [_source(c) for c in cells]
    if not any(old in s for old, _, _ in edits for s in sources):
        joined = "\n".join(sources)
        for number, (old, _, _) in enumerate(edits, 1):
            if old in joined and old.encode() not in data:
                raise EditFailed(
                    f"{_which(number, len(edits))} spans two cells of `{shown}`: edit each cell on its "
                    "own. Nothing was written."
                )
        return None  # not about the cells: the edits go to the JSON text, as before
    total = 0
    for number, (old, new, replace_all) in enumerate(edits, 1):
        total += _apply(cells, sources, old, new, replace_all, _which(number, len(edits)), shown)
    edited = layout.dump(notebook)
    head = _common_head(data, edited)
    tail = _common_head(data[head:][::-1], edited[head:][::-1])
    return CellEdit(edited, total, head, tail)


def _common_head(a: bytes, b: bytes, step: int = 1 << 16) -> int:
    """How many leading bytes ``a`` and ``b`` share (compared a block at a time)."""
    n = 0
    limit = min(len(a), len(b))
    while n < limit and a[n : n + step] == b[n : n + step]:
        n += step
    n = min(n, limit)  # every block before n is equal; find the first difference in the next
    while n < limit and a[n] == b[n]:
        n += 1
    return n


def _which(number: int, total: int) -> str:
    return "`old`" if total == 1 else f"`old` of edit {number} (of {total})"


def _apply(
    cells: list[dict[str, Any]],
    sources: list[str],
    old: str,
    new: str,
    replace_all: bool,
    which: str,
    shown: str,
) -> int:
    found = [i for i, s in enumerate(sources) if old in s]
    count = sum(sources[i].count(old) for i in found)
    if not found:
        joined = "\n".join(sources)
        why = " It spans two cells: edit each cell on its own." if old in joined else ""
        raise EditFailed(f"{which} was not found in any cell of `{shown}`.{why} Nothing was written.")
    if count > 1 and not replace_all:
        raise EditFailed(
            f"{which} is found {count} times in the cells of `{shown}` (cells "
            f"{', '.join(str(i + 1) for i in found)}); make it unique or set replace_all. "
            "Nothing was written."
        )
    for i in found:
        sources[i] = sources[i].replace(old, new)
        _set_source(cells[i], sources[i])
    return count
