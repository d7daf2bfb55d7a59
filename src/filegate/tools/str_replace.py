"""StrReplaceFile: exact, byte-faithful string replacement, after approval (SPEC §4, §6).

The file is edited as bytes: line endings, a BOM and undecodable bytes outside the replaced
spans come out exactly as they went in. A file in another codec (UTF-16/32 with a BOM, or a
legacy codepage fsio/codec.py decided) is transcoded to UTF-8 for the edit and back, which is
lossless (checked: a file that does not read back byte for byte is refused).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from filegate.errors import EditFailed
from filegate.policy.filetype import SNIFF_BYTES, detect_file_type, document_kind
from filegate.policy.workspace import ResolvedPath
from filegate.tools.describe import load_description, path_help
from filegate.tools.documents.notebook import NotANotebook, render_notebook
from filegate.tools.edit.diffing import requested_change
from filegate.tools.edit.notebook_edit import View, edit_cells
from filegate.tools.edit.replacing import Applied, Edit, apply_in_codec
from filegate.tools.edit.writing import (
    SENSITIVE_DONE,
    Change,
    WriteJob,
    Written,
    detect_encoding,
    lines_sentence,
    resolve_for_write,
    run_write,
)
from filegate.tools.outcome import Outcome, ToolEnv, ToolSpec


class StrReplaceFileParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: Annotated[str, Field(description=path_help("edit", "editing"))]
    edit: Annotated[
        Edit | list[Edit],
        Field(
            description="The edit(s) to apply to the file. You can provide a single edit or a "
            "list of edits here."
        ),
    ]

    dry_run: Annotated[bool, Field(description="Preview: return the diff, write nothing.")] = False

    @property
    def edits(self) -> list[Edit]:
        return self.edit if isinstance(self.edit, list) else [self.edit]


def _check_edits(edits: list[Edit]) -> None:
    if not edits:
        raise EditFailed("No edits were given: `edit` is an empty list.", brief="No edits")
    total = len(edits)
    for number, edit in enumerate(edits, start=1):
        which = "`old`" if total == 1 else f"`old` of edit {number} (of {total})"
        if edit.old == "":
            raise EditFailed(
                f"{which} is empty. Give the exact text to replace; to write a whole file, "
                "use WriteFile. Nothing was written.",
                brief="Empty old string",
            )
        if edit.old == edit.new:
            raise EditFailed(
                f"{which} is the same as its `new`, so the edit would change nothing. Nothing was written.",
                brief="No change",
            )


def _check_text(rp: ResolvedPath, data: bytes) -> None:
    ft = detect_file_type(rp.real.name, data[:SNIFF_BYTES])
    if ft.kind != "text":
        raise EditFailed(
            f"`{rp.shown}` is not a text file ({ft.mime}); StrReplaceFile only edits text files. "
            "Nothing was written.",
            brief="Not a text file",
        )


def cell_view(notebook: dict[str, Any]) -> View | None:
    """ReadFile's cell view of a notebook, as its edits speak (SPEC §8.6); None: it has none."""
    try:
        view = render_notebook(notebook)
    except NotANotebook:
        return None
    return View(view.rows, tuple((c.first, c.source_end, c.end) for c in view.layout))


def _edit_bytes(
    rp: ResolvedPath, data: bytes, edits: list[Edit], env: ToolEnv | None = None
) -> Change[Applied]:
    """The pure transformation: the file's bytes → the edited bytes, in its own encoding."""
    _check_text(rp, data)
    encoding = env.codec_of(data, rp.real) if env is not None else detect_encoding(data)
    if document_kind(rp.real.name, data[:SNIFF_BYTES]) == "notebook":
        by_cell = edit_cells(data, [(e.old, e.new, e.replace_all) for e in edits], rp.shown, cell_view)
        if by_cell is not None:
            applied = Applied(
                by_cell.data, by_cell.replacements, kept_head=by_cell.kept_head, kept_tail=by_cell.kept_tail
            )
            return Change(applied.data, encoding, applied, (), applied.span(data), view=by_cell.view)
    tolerant = env is None or env.edit_match == "tolerant"
    applied = apply_in_codec(rp, data, edits, encoding, tolerant)
    if applied.data == data:
        raise EditFailed(
            "The edits leave the file exactly as it was (a later edit undid an earlier "
            "one). Nothing was written.",
            brief="No change",
        )
    span = applied.span(data) if encoding.utf8 else None  # offsets of the UTF-8 transcoding
    spans = tuple(applied.matched) if span is not None and applied.matched else None
    notes = _notes(applied) + applied.codec_notes
    return Change(applied.data, encoding, applied, notes, span, spans)


async def str_replace_file(params: StrReplaceFileParams, env: ToolEnv) -> Outcome:
    edits = params.edits
    _check_edits(edits)
    rp = resolve_for_write(env, params.path, "edit")
    # Shown instead of a diff in the question about a sensitive file (nothing else is).
    pairs: list[tuple[str | None, str]] = [(e.old, e.new) for e in edits]
    requested, unsafe = requested_change(pairs) if rp.sensitive else ("", False)
    job = WriteJob(
        tool="StrReplaceFile",
        rp=rp,
        transform=lambda data: _edit_bytes(rp, data or b"", edits, env),
        requested=requested,
        requested_unsafe=unsafe,
        arguments=params.model_dump(),
        done=lambda written: _success(params, rp, written),
        must_exist=True,
        guarded=True,
        line_guard=True,
        dry_run=params.dry_run,
        would=lambda applied: (
            f"Would apply {len(edits)} edit(s) with {applied.replacements} total replacement(s)."
        ),
    )
    return await run_write(job, env)


def _numbers(numbers: list[int]) -> str:
    return ("edit " if len(numbers) == 1 else "edits ") + ", ".join(map(str, numbers))


def _notes(applied: Applied) -> tuple[str, ...]:
    """What the result, the question and a preview say about how the edits matched."""
    notes = list(applied.reports)
    if applied.to_crlf:
        notes.append(
            f"Line endings: the file uses CRLF (\\r\\n); {_numbers(applied.to_crlf)} "
            "matched and written with CRLF."
        )
    if applied.to_lf:
        notes.append(
            f"Line endings: {_numbers(applied.to_lf)} gave CRLF (\\r\\n) text that the file has "
            "with LF (\\n); matched and written with LF."
        )
    return tuple(notes)


def _success(params: StrReplaceFileParams, rp: ResolvedPath, w: Written[Applied]) -> Outcome:
    n = len(params.edits)
    applied = w.facts
    if w.diff is None:  # a sensitive file: no size, no counts (SPEC §2.6)
        return Outcome(
            message=f"File successfully edited. Applied {n} edit(s)." + SENSITIVE_DONE,
        )
    message = (
        f"File successfully edited. Applied {n} edit(s) with {applied.replacements} total replacement(s)."
    )
    for note in _notes(applied) + applied.codec_notes:
        message += " " + note
    message += lines_sentence(w.diff)
    return Outcome(message=message)


SPEC = ToolSpec(
    name="StrReplaceFile",
    title="Edit file (replace strings)",
    description=load_description("str_replace"),
    params=StrReplaceFileParams,
    handler=str_replace_file,
    read_only=False,
)
