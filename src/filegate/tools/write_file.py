"""WriteFile: overwrite or append to a file, after the user approved the diff (SPEC §4, §6)."""

from __future__ import annotations

import os
from typing import Annotated, Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field

from filegate.fsio.atomic import PATH_LOCKS, WriteError
from filegate.policy.workspace import PathError, ResolvedPath
from filegate.tools.describe import load_description
from filegate.tools.outcome import Outcome, ToolEnv
from filegate.tools.writing import (
    MAX_FILE_BYTES,
    Current,
    Encoding,
    Written,
    approve_and_replace,
    detect_encoding,
    failure,
    lines_sentence,
    load_current,
)

PATH_HELP = (
    "The path to the file to write. Absolute paths are required when writing files outside "
    "the working directory."
)


class WriteFileParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: Annotated[str, Field(description=PATH_HELP)]
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


class WriteFileFacts(BaseModel):
    """structuredContent of a successful WriteFile."""

    path: str
    mode: Literal["overwrite", "append"]
    size: int
    created: bool
    lines_added: int
    lines_removed: int


async def write_file(params: WriteFileParams, env: ToolEnv) -> Outcome:
    try:
        rp = env.workspace.resolve(params.path, "write")
        _check_parent(rp, params.create_dirs)
        async with env.approver.turn(rp.real), PATH_LOCKS.hold(rp.real):
            current = await anyio.to_thread.run_sync(
                lambda: load_current(rp, must_exist=False), abandon_on_cancel=True
            )
            new, encoding = _new_bytes(params, current)
            if new == current.data:
                return _unchanged(params, len(new))
            notes = _notes(rp, params.create_dirs)
            result = await approve_and_replace(
                "WriteFile", rp, env, current, new,
                encoding=encoding, create_dirs=params.create_dirs, notes=notes,
            )  # fmt: skip
    except (PathError, WriteError) as exc:
        return failure(exc)
    except UnicodeEncodeError as exc:
        return Outcome.error(
            f"`content` holds a character that cannot be stored as text ({exc.reason} at "
            f"position {exc.start}). Nothing was written.",
            "Invalid content",
        )
    if isinstance(result, Outcome):
        return result
    return _success(params, rp, result)


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


def _new_bytes(params: WriteFileParams, current: Current) -> tuple[bytes, Encoding]:
    if params.mode == "overwrite" or current.data is None:
        encoding = Encoding()
        return encoding.encode(params.content), encoding
    # Appending to a UTF-16/32 file (BOM) appends in its encoding, not UTF-8 bytes.
    encoding = detect_encoding(current.data)
    new = current.data + encoding.encode(params.content)
    if len(new) > MAX_FILE_BYTES:
        raise WriteError(
            f"`{params.path}` would grow to {len(new)} bytes; filegate writes files of at most "
            f"{MAX_FILE_BYTES} bytes.",
            "File too large",
        )
    return new, encoding


def _notes(rp: ResolvedPath, create_dirs: bool) -> tuple[str, ...]:
    if not create_dirs:
        return ()
    missing = []
    parent = rp.real.parent
    while not os.path.lexists(parent) and parent != parent.parent:
        missing.append(parent)
        parent = parent.parent
    if not missing:
        return ()
    return (f"Creates the missing directory `{missing[-1]}` (and any below it).",)


def _verb(params: WriteFileParams) -> str:
    return "overwritten" if params.mode == "overwrite" else "appended to"


def _unchanged(params: WriteFileParams, size: int) -> Outcome:
    return Outcome(
        message=f"File successfully {_verb(params)}. Current size: {size} bytes. "
        "The file already had this content; nothing changed.",
        structured=WriteFileFacts(
            path=params.path, mode=params.mode, size=size, created=False,
            lines_added=0, lines_removed=0,
        ).model_dump(),
    )  # fmt: skip


def _success(params: WriteFileParams, rp: ResolvedPath, w: Written) -> Outcome:
    message = f"File successfully {_verb(params)}. Current size: {w.size} bytes."
    message += " Created a new file." if w.created else ""
    message += lines_sentence(w.diff)
    facts = WriteFileFacts(
        path=rp.shown, mode=params.mode, size=w.size, created=w.created,
        lines_added=w.diff.added, lines_removed=w.diff.removed,
    )  # fmt: skip
    return Outcome(message=message, structured=facts.model_dump())


DESCRIPTION = load_description("write_file")
