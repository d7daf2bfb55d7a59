"""StrReplaceFile: exact, byte-faithful string replacement, after approval (SPEC §4, §6).

The file is edited as bytes: line endings, a BOM and undecodable bytes outside the replaced
spans come out exactly as they went in. A file in another codec (UTF-16/32 with a BOM, or a
legacy codepage fsio/codec.py decided) is transcoded to UTF-8 for the edit and back, which is
lossless (checked: a file that does not read back byte for byte is refused).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from filegate.errors import EditFailed
from filegate.policy.workspace import ResolvedPath
from filegate.tools.describe import GrantArg, load_description, path_help
from filegate.tools.edit.diffing import requested_change
from filegate.tools.edit.replacing import Applied, Edit
from filegate.tools.edit.text_change import edit_bytes, notes_of
from filegate.tools.edit.writing import (
    SENSITIVE_DONE,
    WriteJob,
    Written,
    lines_sentence,
    resolve_for_write,
    run_write,
)
from filegate.tools.outcome import Outcome, ToolEnv, ToolSpec


class StrReplaceFileParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: Annotated[str, Field(description=path_help("edit"))]
    edit: Annotated[
        Edit | list[Edit],
        Field(
            description="The edit(s) to apply to the file. You can provide a single edit or a "
            "list of edits here."
        ),
    ]

    dry_run: Annotated[bool, Field(description="Preview: return the diff, write nothing.")] = False
    grant: GrantArg = ""

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
        transform=lambda data: edit_bytes(rp, data or b"", edits, env),
        requested=requested,
        requested_unsafe=unsafe,
        arguments=params.model_dump(exclude={"grant"}),  # a grant handle is no part of the change
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
    for note in notes_of(applied) + applied.codec_notes:
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
