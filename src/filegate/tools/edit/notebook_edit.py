"""StrReplaceFile on a notebook (SPEC §8.6): an ``old`` found in a cell's source is replaced
there, and the JSON is written back in the file's own layout, every byte outside that source
as it was.

The layout is found, not assumed: the parsed file is written back with the candidate layouts
(nbformat's own is ``indent=1``, non-ASCII kept) and one must reproduce the file byte for byte,
or the cell edit is not made and the edit applies to the JSON text as before. Parsing holds
about three times the file, so only notebooks up to ``MAX_EDIT_BYTES`` are edited by cell.

Every refusal, closest match and diff speaks in the cell view the model read (ReadFile's, its
lines and numbers: documents/notebook.py), never in raw JSON: an ``old`` copied from the view across
two cells, or into a cell's header or outputs, is refused saying so; one found nowhere is shown
its closest match among the view's lines. Only an ``old`` the JSON text itself holds (read with
``raw: true``) edits the JSON, and speaks JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from filegate.errors import EditFailed
from filegate.tools.documents.notebook import NotANotebook, NotebookView, render_notebook
from filegate.tools.edit.diffing import common_prefix, common_suffix
from filegate.tools.edit.replacing import closest_region
from filegate.tools.edit.tolerant_edit import already_applied

# The largest notebook edited by cell. Its bytes are already held by the write route (and
# charged to the load budget there); the parse and the rewritten copy come on top of them.
MAX_EDIT_BYTES = 16 << 20


def _cell_view(notebook: dict[str, Any]) -> NotebookView | None:
    """ReadFile's cell view of parsed notebook JSON, as its edits speak (SPEC §8.6); None when it
    has none (ReadFile then shows the JSON text)."""
    try:
        return render_notebook(notebook)
    except NotANotebook:
        return None


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
    view: tuple[bytes, bytes]  # the cell view before and after: what a diff of the edit shows


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
    notebook edited by cell, or when the edits are about its JSON text (no ``old`` is in a
    cell and one is in the JSON: the model read it with ``raw: true``)."""
    parsed = notebook_of(data)
    if parsed is None:
        return None
    notebook, layout = parsed
    before = _cell_view(notebook)
    if before is None:  # ReadFile shows it as JSON text: its edits speak JSON
        return None
    cells = notebook["cells"]  # every one a dict: the view was rendered
    sources = [_source(c) for c in cells]
    if not any(old in s for old, _, _ in edits for s in sources) and any(
        old.encode() in data for old, _, _ in edits
    ):
        return None  # not about the cells: the edits go to the JSON text, as before
    total = 0
    for number, (old, new, replace_all) in enumerate(edits, 1):
        which = _which(number, len(edits))
        total += _apply(notebook, sources, old, new, replace_all, which, shown)
    edited = layout.dump(notebook)
    head = common_prefix(data, edited)
    tail = common_suffix(data, edited, min(len(data), len(edited)) - head)
    after = _cell_view(notebook)
    assert after is not None  # the same cells, sources edited
    return CellEdit(edited, total, head, tail, (_text(before), _text(after)))


def _text(view: NotebookView) -> bytes:
    return "".join(view.rows).encode("utf-8", "surrogatepass")


def _which(number: int, total: int) -> str:
    return "`old`" if total == 1 else f"`old` of edit {number} (of {total})"


def _apply(
    notebook: dict[str, Any],
    sources: list[str],
    old: str,
    new: str,
    replace_all: bool,
    which: str,
    shown: str,
) -> int:
    cells = notebook["cells"]
    found = [i for i, s in enumerate(sources) if old in s]
    count = sum(sources[i].count(old) for i in found)
    if not found:
        view = _cell_view(notebook)
        assert view is not None  # the same cells, sources edited
        raise _not_in_a_cell(view, sources, old, new, which, shown)
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


def _not_in_a_cell(
    view: NotebookView, sources: list[str], old: str, new: str, which: str, shown: str
) -> EditFailed:
    """Why ``old`` (in no cell's source) cannot be edited, in the view's terms (as the notebook
    is after the edits before it)."""
    cells = _cells_in_view(view, old) or _cells_in_sources(sources, old)
    if cells is not None and cells[0] != cells[1]:
        first, last = cells
        span = "two cells" if last == first + 1 else "several cells"
        to = "and" if last == first + 1 else "to"
        return EditFailed(
            f"{which} spans {span} of `{shown}` (cells {first} {to} {last}): edit each cell on its "
            "own. Nothing was written."
        )
    if cells is not None:
        return EditFailed(
            f"{which} takes in lines of cell {cells[0]} that are not its source (its header or "
            "outputs, as the notebook view shows them): only a cell's source can be edited. "
            "Nothing was written."
        )
    message = f"{which} was not found in any cell of `{shown}`. Nothing was written."
    text = _text(view)
    applied = already_applied(text, new)  # in the view's lines, numbered as the model read them
    if applied is not None:
        return EditFailed(message + applied)
    region = closest_region(text, old)
    if region is None:
        return EditFailed(
            message + " No similar text was found either; read the notebook again before editing it."
        )
    first, last, lines = region
    return EditFailed(
        message + f" The closest match is at lines {first}-{last} of the notebook view (shown below).", lines
    )


def _cells_in_view(view: NotebookView, old: str) -> tuple[int, int] | None:
    """The first and last cell (numbered from 1) whose view rows ``old`` covers, where it is
    in the view's text but not in one cell's source rows; None when it is not in the view."""
    text = "".join(view.rows)
    pos = text.find(old)
    if pos < 0 or not old:
        return None
    first_row = text.count("\n", 0, pos)
    last_row = first_row + old.count("\n", 0, max(len(old) - 1, 0))
    touched = [n for n, c in enumerate(view.layout, 1) if c.first <= last_row and first_row < c.end]
    if len(touched) == 1:
        cell = view.layout[touched[0] - 1]
        if cell.first < first_row and last_row < cell.source_end:
            return None  # within its source rows (spelled otherwise in the file): not found
    return (touched[0], touched[-1]) if touched else None


def _cells_in_sources(sources: list[str], old: str) -> tuple[int, int] | None:
    """The first and last cell ``old`` covers in the sources joined by line breaks (the view's
    source lines without the headers and outputs between them)."""
    joined = "\n".join(sources)
    pos = joined.find(old)
    if pos < 0:
        return None
    starts, at = [], 0
    for s in sources:
        starts.append(at)
        at += len(s) + 1
    end = pos + max(len(old) - 1, 0)
    first = max(i for i, start in enumerate(starts) if start <= pos)
    last = max(i for i, start in enumerate(starts) if start <= end)
    return first + 1, last + 1
