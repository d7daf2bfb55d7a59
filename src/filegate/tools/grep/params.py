"""Grep's parameters: what a caller may ask (GrepParams, checked as they arrive) and the path
it names, resolved and opened without following symlinks (Target)."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from filegate.errors import PathError
from filegate.fsio.safeopen import names_a_descriptor, open_directory, open_regular
from filegate.tools.outcome import ToolEnv

# Kimi's grep_local.py: default page and the longest line shown.
HEAD_LIMIT = 250
MAX_LINE_CHARS = 2000

OutputMode = Literal["content", "files_with_matches", "count_matches"]


class GrepParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pattern: Annotated[str, Field(description="The regular expression to search for (ripgrep syntax).")]
    path: Annotated[
        str,
        Field(
            description="File or directory to search in; relative paths start at the working "
            "directory. Defaults to the working directory."
        ),
    ] = "."
    glob: Annotated[
        str | None,
        Field(description="Only search files matching this glob, e.g. `*.js`, `*.{ts,tsx}`."),
    ] = None
    output_mode: Annotated[
        OutputMode,
        Field(
            description="`content` shows matching lines, `files_with_matches` the files, "
            "`count_matches` the number of matches per file."
        ),
    ] = "files_with_matches"
    before_context: Annotated[
        int | None, Field(alias="-B", ge=0, description="Lines before each match (content mode).")
    ] = None
    after_context: Annotated[
        int | None, Field(alias="-A", ge=0, description="Lines after each match (content mode).")
    ] = None
    context: Annotated[
        int | None,
        Field(alias="-C", ge=0, description="Lines before and after each match (content mode)."),
    ] = None
    line_number: Annotated[bool, Field(alias="-n", description="Show line numbers (content mode).")] = True
    ignore_case: Annotated[bool, Field(alias="-i", description="Case-insensitive search.")] = False
    type: Annotated[str | None, Field(description="File type to search (rg --type), e.g. py, rust, js.")] = (
        None
    )
    head_limit: Annotated[
        int | None, Field(ge=0, description="Return at most this many lines/entries; 0 = no limit.")
    ] = HEAD_LIMIT
    offset: Annotated[int, Field(ge=0, description="Skip this many lines/entries first.")] = 0
    multiline: Annotated[bool, Field(description="Let `.` match newlines and patterns span lines.")] = False
    include_ignored: Annotated[
        bool, Field(description="Also search files ignored by .gitignore and similar.")
    ] = False

    @field_validator("pattern", "glob", "type")
    @classmethod
    def _fits_argv(cls, v: str | None, info: ValidationInfo) -> str | None:
        # rg takes these as command-line arguments: no NUL byte, nothing UTF-8 cannot encode.
        if v is not None and "\0" in v:
            tip = " (to match a NUL byte, write \\x00 in the regex)" if info.field_name == "pattern" else ""
            raise ValueError(f"cannot contain a NUL byte{tip}")
        if v is not None:
            try:
                os.fsencode(v)
            except UnicodeEncodeError:
                raise ValueError("cannot contain a lone UTF-16 surrogate") from None
        return v


@dataclass
class Target:
    """What rg searches, opened without following symlinks, and how its paths are printed."""

    shown: str
    cwd: Path  # the searched directory (a single file: its parent)
    arg: str  # what rg searches: "." in the pinned directory, or "-" for the file on stdin
    single_file: bool
    fd: int  # opened without following symlinks: the directory rg runs in, or the file it reads
    prefix: str  # printed before each path rg reports: the searched directory, workdir-relative
    name: str = ""  # a single file's printed path, in place of rg's "<stdin>"
    sensitive: bool = False  # a single file that may hold secrets: searched, never shown
    real: Path | None = None  # a single file's resolved path

    def close(self) -> None:
        os.close(self.fd)


def resolve_target(params: GrepParams, env: ToolEnv) -> Target:
    """Resolve ``path`` and open it (no symlink followed), so rg searches what was checked."""
    ws = env.workspace
    rp = ws.resolve(params.path or ".", "search")
    try:
        st = os.stat(rp.real)
    except FileNotFoundError:
        if names_a_descriptor(rp):  # /dev/stdin where /proc is not mounted
            raise PathError(f"`{rp.shown}` is not a file.") from None
        raise PathError(f"`{rp.shown}` does not exist.", "File not found") from None
    except OSError as exc:
        raise PathError(f"`{rp.shown}` cannot be searched: {exc.strerror}.") from None
    if stat.S_ISDIR(st.st_mode):
        # Printed relative to the workdir (absolute outside it), so ReadFile takes each as is.
        shown_dir = ws.display(rp.real)
        prefix = "" if shown_dir == "." else shown_dir.rstrip("/") + "/"
        return Target(rp.shown, rp.real, ".", False, open_directory(rp), prefix)
    if stat.S_ISREG(st.st_mode):
        fd = open_regular(rp)
        return Target(rp.shown, rp.real.parent, "-", True, fd, "", ws.display(rp.real), rp.sensitive, rp.real)
    raise PathError(f"`{rp.shown}` is not a file.")
