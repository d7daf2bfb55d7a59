"""WriteFile: overwrite or append to a file, after the user approved the diff (SPEC §4, §6)."""

from __future__ import annotations

import os
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from filegate.errors import PathError
from filegate.policy.workspace import ResolvedPath
from filegate.tools.describe import GrantArg, load_description, path_help
from filegate.tools.edit.diffing import requested_change
from filegate.tools.edit.whole_content import Kept, WholeContent, new_bytes
from filegate.tools.edit.writing import (
    SENSITIVE_DONE,
    WriteJob,
    Written,
    lines_sentence,
    resolve_for_write,
    run_write,
)
from filegate.tools.outcome import Outcome, ToolEnv, ToolSpec


class WriteFileParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: Annotated[str, Field(description=path_help("write"))]
    content: Annotated[str, Field(description="The content to write to the file")]
    mode: Annotated[
        Literal["overwrite", "append"],
        Field(
            description="The mode to use to write to the file. Two modes are supported: "
            "`overwrite` for overwriting the whole file and `append` for appending to the end "
            "of an existing file."
        ),
    ] = "overwrite"
    create_dirs: Annotated[
        bool,
        Field(description="Create missing parent directories (after approval)."),
    ] = False
    dry_run: Annotated[bool, Field(description="Preview: return the diff, write nothing.")] = False
    allow_placeholders: Annotated[
        bool,
        Field(description='Overwrite even if `content` holds a "... rest of the code unchanged" comment.'),
    ] = False
    grant: GrantArg = ""


async def write_file(params: WriteFileParams, env: ToolEnv) -> Outcome:
    rp = resolve_for_write(env, params.path, "write")
    _check_parent(rp, params.create_dirs)
    # Shown instead of a diff in the question about a sensitive file (nothing else is).
    requested, unsafe = requested_change([(None, params.content)]) if rp.sensitive else ("", False)
    whole = WholeContent(params.path, params.content, params.mode, params.allow_placeholders)
    job = WriteJob(
        tool="WriteFile",
        rp=rp,
        transform=lambda data: new_bytes(whole, data, rp, env),
        requested=("Appends:\n" if params.mode == "append" else "Writes:\n") + requested,
        requested_unsafe=unsafe,
        arguments=params.model_dump(exclude={"grant"}),  # a grant handle is no part of the change
        create_dirs=params.create_dirs,
        notes=_notes(rp, params.create_dirs, env),
        done=lambda written: _success(params, rp, written),
        unchanged=lambda size: _unchanged(params, size),
        guarded=params.mode == "overwrite",
        dry_run=params.dry_run,
    )
    return await run_write(job, env)


def _check_parent(rp: ResolvedPath, create_dirs: bool) -> None:
    parent = rp.real.parent
    if os.path.isdir(parent):
        return
    if create_dirs and not os.path.lexists(parent):
        return
    if os.path.lexists(parent):
        raise PathError(f"`{rp.shown}` parent path is not a directory.", "Invalid path")
    raise PathError(
        f"`{rp.shown}` parent directory does not exist. Pass `create_dirs: true` to create it.",
        "Parent directory not found",
    )


def _notes(rp: ResolvedPath, create_dirs: bool, env: ToolEnv) -> tuple[str, ...]:
    """The question's note on the folders a write makes: named as messages name paths
    (relative to the workdir when inside it: SPEC §2.9, never the server's absolute workdir)."""
    if not create_dirs:
        return ()
    missing = []
    parent = rp.real.parent
    while not os.path.lexists(parent) and parent != parent.parent:
        missing.append(parent)
        parent = parent.parent
    if not missing:
        return ()
    return (f"Creates the missing directory `{env.workspace.display(missing[-1])}` (and any below it).",)


def _verb(params: WriteFileParams) -> str:
    return "overwritten" if params.mode == "overwrite" else "appended to"


def _unchanged(params: WriteFileParams, size: int) -> Outcome:
    return Outcome(
        message=f"File successfully {_verb(params)}. Current size: {size} bytes. "
        "The file already had this content; nothing changed.",
    )


def _success(params: WriteFileParams, rp: ResolvedPath, w: Written[Kept]) -> Outcome:
    if w.diff is None:  # a sensitive file: no size, no line counts (SPEC §2.6)
        return Outcome(
            message=f"File successfully {_verb(params)}." + SENSITIVE_DONE,
        )
    # A file that did not exist was created, not overwritten (Kimi says "overwritten" here too).
    done = f"Created `{rp.shown}`." if w.created else f"File successfully {_verb(params)}."
    message = f"{done} Current size: {w.size} bytes." + lines_sentence(w.diff)
    if w.facts.created and w.facts.rules:
        message += " Written as " + "; ".join(w.facts.rules) + " asked."
    elif w.facts.rules:
        message += " " + " ".join(w.facts.rules)
    message += f" {w.facts.refused}" if w.facts.refused else ""
    return Outcome(message=message)


SPEC = ToolSpec(
    name="WriteFile",
    title="Write file",
    description=load_description("write_file"),
    params=WriteFileParams,
    handler=write_file,
    read_only=False,
)
