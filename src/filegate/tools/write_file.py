"""WriteFile: overwrite or append to a file, after the user approved the diff (SPEC §4, §6)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from filegate.errors import PathError, WriteError
from filegate.fsio.codec import Eol, Unencodable, line_endings, with_line_endings
from filegate.fsio.spliced import Spliced
from filegate.policy.escape import escape
from filegate.policy.workspace import ResolvedPath
from filegate.tools.describe import load_description, path_help
from filegate.tools.edit.diffing import requested_change
from filegate.tools.edit.placeholders import find_placeholder
from filegate.tools.edit.textstyle import new_file_style
from filegate.tools.edit.writing import (
    MAX_FILE_BYTES,
    SENSITIVE_DONE,
    Change,
    Encoding,
    WriteJob,
    Written,
    lines_sentence,
    resolve_for_write,
    run_write,
)
from filegate.tools.outcome import Outcome, ToolEnv, ToolSpec


class WriteFileParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: Annotated[str, Field(description=path_help("write", "writing"))]
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


async def write_file(params: WriteFileParams, env: ToolEnv) -> Outcome:
    rp = resolve_for_write(env, params.path, "write")
    _check_parent(rp, params.create_dirs)
    # Shown instead of a diff in the question about a sensitive file (nothing else is).
    requested, unsafe = requested_change([(None, params.content)]) if rp.sensitive else ("", False)
    job = WriteJob(
        tool="WriteFile",
        rp=rp,
        transform=lambda data: _new_bytes(params, data, rp, env),
        requested=("Appends:\n" if params.mode == "append" else "Writes:\n") + requested,
        requested_unsafe=unsafe,
        arguments=params.model_dump(),
        create_dirs=params.create_dirs,
        notes=_notes(rp, params.create_dirs),
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


def _new_bytes(params: WriteFileParams, data: bytes | None, rp: ResolvedPath, env: ToolEnv) -> Change[Kept]:
    """The pure transformation: the file's bytes (None: absent) → the bytes to write, in the
    file's codec and line-ending style (SPEC §8.1); a new file in the style its folder asks."""
    if data is None:
        style = new_file_style(rp.real, env.workspace.workdir)
        text, codec = style.apply(params.content), style.codec
        new = codec.bom + _encoded(params, codec, text)
        said = ("Written as " + "; ".join(style.rules) + " asked.",) if style.rules else ()
        return Change(new, codec, Kept(style.rules, created=True), said)
    codec = env.codec_of(data, rp.real)
    eol = _eol_of(data, codec)
    text = with_line_endings(params.content, eol)
    kept = Kept(_kept(codec, eol, converted=text != params.content))
    if params.mode == "overwrite":
        if not params.allow_placeholders:
            _check_placeholders(params, data[len(codec.bom) :].decode(codec.name, "replace"))
        new = codec.bom + _encoded(params, codec, text.removeprefix("\ufeff") if codec.bom else text)
        return Change(new, codec, kept, kept.rules)
    # The old bytes and the appended ones as pieces: the file is not held twice (a copy of
    # 128 MiB per preview), and the diff looks only at the end.
    grown = Spliced(data, len(data), len(data), _encoded(params, codec, text))
    if len(grown) > MAX_FILE_BYTES:
        raise WriteError(
            f"`{escape(params.path)}` would grow to {len(grown)} bytes; filegate writes files of at "
            f"most {MAX_FILE_BYTES} bytes.",
            "File too large",
        )
    return Change(grown, codec, kept, kept.rules, span=(len(data), len(data), len(grown)))


@dataclass(frozen=True, slots=True)
class Kept:
    """What the write kept of the file's style, or which rules styled a new file."""

    rules: tuple[str, ...] = ()
    created: bool = False


def _eol_of(data: bytes, codec: Encoding) -> Eol:
    """The file's line-ending style: on its bytes when its line breaks are single bytes."""
    if codec.unit == 1:
        return line_endings(data)
    return line_endings(codec.decode(data[len(codec.bom) :]))


def _kept(codec: Encoding, eol: Eol, converted: bool) -> tuple[str, ...]:
    """The sentence saying what was kept; none for a plain UTF-8 file (Kimi's message stays)."""
    kept = []
    if not codec.utf8:
        kept.append(f"its encoding {codec.shown}" + (f" (from {codec.source})" if codec.source else ""))
    if codec.bom:
        kept.append("its byte order mark")
    if converted:
        kept.append(
            f"its {eol.upper()} line endings (the content's line breaks were written as {eol.upper()})"
        )
    if not kept:
        return ()
    return ("Kept the file's " + ", ".join(kept).replace("its ", "", 1) + ".",)


def _encoded(params: WriteFileParams, codec: Encoding, text: str) -> bytes:
    try:
        return codec.encode(text)
    except Unencodable as exc:
        line = text[: text.find(exc.char)].count("\n") + 1
        raise WriteError(
            f"`content` holds {exc.code} ({exc.char!r}, line {line}), which the file's encoding "
            f"{codec.shown} cannot store. Nothing was written.",
            "Character not in the file's encoding",
        ) from None


def _check_placeholders(params: WriteFileParams, old: str) -> None:
    """SPEC §8.4: an overwrite whose content stands a comment in for code it left out
    ("// ... rest of the code unchanged") would destroy that code; refused."""
    found = find_placeholder(params.content, old)
    if found is None:
        return
    number, line = found
    raise WriteError(
        f"The content stands a placeholder in for left-out text (line {number}: `{escape(line)}`), "
        f"which `{escape(params.path)}` does not hold: overwriting would replace that text with "
        "the placeholder. Nothing was written. Write the whole content, or change only a part "
        "with StrReplaceFile; pass `allow_placeholders: true` if the line belongs in the file.",
        "Placeholder in content",
    )


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
    return (f"Creates the missing directory `{escape(str(missing[-1]))}` (and any below it).",)


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
    message = f"File successfully {_verb(params)}. Current size: {w.size} bytes."
    message += " Created a new file." if w.created else ""
    message += lines_sentence(w.diff)
    if w.facts.created and w.facts.rules:
        message += " Written as " + "; ".join(w.facts.rules) + " asked."
    elif w.facts.rules:
        message += " " + " ".join(w.facts.rules)
    return Outcome(message=message)


SPEC = ToolSpec(
    name="WriteFile",
    title="Write file",
    description=load_description("write_file"),
    params=WriteFileParams,
    handler=write_file,
    read_only=False,
)
