"""A text file's edits as a write's transformation (SPEC §4, §8.1, §8.2): the file checked to be
text, its codec decided, a notebook edited in its cells, the edits applied in the codec, and
what the result, the question and a preview say about how they matched. StrReplaceFile's, and
ApplyPatch's for each file it edits (with its own applier: tools/patch/hunks.py).
"""

from __future__ import annotations

from filegate.errors import EditFailed
from filegate.fsio.loads import unchecked
from filegate.policy.filetype import SNIFF_BYTES, detect_file_type, document_kind
from filegate.policy.workspace import ResolvedPath
from filegate.tools.edit.notebook_edit import edit_cells
from filegate.tools.edit.replacing import Applied, Applier, Edit, apply_edits, apply_in_codec
from filegate.tools.edit.writing import Change, detect_encoding
from filegate.tools.outcome import ToolEnv


def check_text(rp: ResolvedPath, data: bytes, tool: str = "StrReplaceFile") -> None:
    ft = detect_file_type(rp.real.name, data[:SNIFF_BYTES])
    if ft.kind != "text":
        raise EditFailed(
            f"`{rp.shown}` is not a text file ({ft.mime}); {tool} only edits text files. "
            "Nothing was written.",
            brief="Not a text file",
        )


def edit_bytes(
    rp: ResolvedPath,
    data: bytes,
    edits: list[Edit],
    env: ToolEnv | None = None,
    apply: Applier = apply_edits,
    tool: str = "StrReplaceFile",
) -> Change[Applied]:
    """The pure transformation: the file's bytes → the edited bytes, in its own encoding. A
    notebook's edits speak in ReadFile's cell view."""
    check_text(rp, data, tool)
    encoding = env.codec_of(data, rp.real) if env is not None else detect_encoding(data)
    if document_kind(rp.real.name, data[:SNIFF_BYTES]) == "notebook":
        by_cell = edit_cells(data, [(e.old, e.new, e.replace_all) for e in edits], rp.shown)
        if by_cell is not None:
            applied = Applied(
                by_cell.data, by_cell.replacements, kept_head=by_cell.kept_head, kept_tail=by_cell.kept_tail
            )
            return Change(applied.data, encoding, applied, (), applied.span(data), view=by_cell.view)
    tolerant = env is None or env.edit_match == "tolerant"
    check = env.work.check if env is not None else unchecked
    applied = apply_in_codec(rp, data, edits, encoding, tolerant, apply, check)
    if applied.data == data:
        raise EditFailed(
            "The edits leave the file exactly as it was (a later edit undid an earlier "
            "one). Nothing was written.",
            brief="No change",
        )
    span = applied.span(data) if encoding.utf8 else None  # offsets of the UTF-8 transcoding
    spans = tuple(applied.matched) if span is not None and applied.matched else None
    if encoding.refused:  # SPEC §8.1: a declared codec not used, said in the question and the result
        applied.codec_notes += (encoding.refusal("written"),)
    notes = notes_of(applied) + applied.codec_notes
    return Change(applied.data, encoding, applied, notes, span, spans)


def _numbers(numbers: list[int]) -> str:
    return ("edit " if len(numbers) == 1 else "edits ") + ", ".join(map(str, numbers))


def notes_of(applied: Applied) -> tuple[str, ...]:
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
