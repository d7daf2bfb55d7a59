"""ReadFile: a numbered window of a text file, in bounded memory however large the file."""

from __future__ import annotations

import functools
import os
from typing import Annotated, Any

import anyio
from pydantic import BaseModel, ConfigDict, Field, field_validator

from filegate.fsio.lines import (
    PendingCount,
    RawLine,
    checkpoints,
    decode_line,
    iter_lines_from,
    offset_of_line,
    tail_lines,
    tail_starts,
)
from filegate.policy.filetype import SNIFF_BYTES, detect_file_type
from filegate.policy.workspace import PathError, ResolvedPath, Workspace, open_regular
from filegate.tools.describe import load_description
from filegate.tools.outcome import Outcome, ToolEnv

# Kimi's limits (read.py): lines per call, bytes of emitted text per call, characters a line.
MAX_LINES = 1000
MAX_BYTES = 100 << 10
MAX_LINE_LENGTH = 2000

PATH_HELP = (
    "The path to the file to read. Absolute paths are required when reading files outside "
    "the working directory."
)


class ReadFileParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: Annotated[str, Field(description=PATH_HELP)]
    line_offset: Annotated[
        int,
        Field(
            description="The line number to start reading from (1-based). Negative values read "
            f"from the end of the file (e.g. -100 = the last 100 lines); at least -{MAX_LINES}.",
        ),
    ] = 1
    n_lines: Annotated[
        int,
        Field(ge=1, description=f"The number of lines to read. At most {MAX_LINES} are returned."),
    ] = MAX_LINES

    @field_validator("line_offset")
    @classmethod
    def _offset(cls, v: int) -> int:
        if v == 0:
            raise ValueError("line_offset cannot be 0; use 1 for the first line or -1 for the last line")
        if v < -MAX_LINES:
            raise ValueError(
                f"line_offset cannot be less than -{MAX_LINES}. Use a positive line_offset with "
                "the total line count to read from a specific position."
            )
        return v


def truncate_line(line: str, max_length: int = MAX_LINE_LENGTH, marker: str = "...") -> str:
    """Kimi's truncate_line: the line break counts toward the limit."""
    if len(line) <= max_length:
        return line
    stripped = line.rstrip("\r\n")
    linebreak = line[len(stripped) :]
    return line[: max_length - len(marker + linebreak)] + marker + linebreak


# detect_file_type is a function of (name, first bytes) alone, and libmagic takes 1-6 ms over
# an 8 KiB text header (bench/README.md), more than the rest of a small read: answers for the
# most recent headers are kept (256 x 8 KiB at most).
_detect_file_type = functools.lru_cache(maxsize=256)(detect_file_type)


def _check_readable_text(rp: ResolvedPath, fd: int) -> None:
    header = os.pread(fd, SNIFF_BYTES, 0)
    ft = _detect_file_type(rp.real.name, header)
    if ft.kind in ("image", "video"):
        raise PathError(
            f"`{rp.shown}` is an {ft.kind} file ({ft.mime}). Use ReadMediaFile to read image or video files.",
            "Unsupported file type",
        )
    if ft.kind == "unknown":
        raise PathError(
            f"`{rp.shown}` seems not readable ({ft.mime}). You may need to read it with proper "
            "shell commands, Python tools or MCP tools if available. If you read/operate it with "
            "Python, you MUST ensure that any third-party packages are installed in a virtual "
            "environment (venv).",
            "File not readable",
        )


def _window(fd: int, start: int, n_lines: int) -> dict[str, Any]:
    st = os.fstat(fd)
    # The count (wc -l on a big file) runs while this thread finds and reads the lines.
    counting = PendingCount(fd, st)
    try:
        lines: list[tuple[int, str]] = []
        truncated: list[int] = []
        max_lines = max_bytes = False
        if start > 0:
            max_lines, max_bytes = _read_forward(fd, st, start, n_lines, lines, truncated)
            count = counting.result()
        else:
            starts = tail_starts(fd, st.st_size, -start)
            count = counting.result()
            first = count.total - len(starts) + 1
            window = tail_lines(fd, st.st_size, starts, first, min(n_lines, MAX_LINES))
            max_bytes = _keep_tail(window, lines, truncated)
    finally:
        counting.close()
    return {
        "lines": lines,
        "truncated": truncated,
        "total": count.total,
        "complete": count.complete,
        "max_lines": max_lines,
        "max_bytes": max_bytes,
    }


def _read_forward(fd: int, st: os.stat_result, start: int, n_lines: int, lines: list[tuple[int, str]],
                  truncated: list[int]) -> tuple[bool, bool]:  # fmt: skip
    """Lines from ``start`` on into ``lines``; returns (max_lines, max_bytes) reached."""
    n_bytes = 0
    pos = offset_of_line(fd, start, checkpoints(st))
    raws = iter_lines_from(fd, pos, start) if pos is not None else iter(())
    for raw in raws:
        text = decode_line(raw)
        cut = truncate_line(text)
        if cut != text or raw.long:
            truncated.append(raw.number)
        lines.append((raw.number, cut))
        n_bytes += len(cut.encode("utf-8"))
        if len(lines) >= n_lines:
            break
        if len(lines) >= MAX_LINES:
            return True, False
        if n_bytes >= MAX_BYTES:
            return False, True
    return False, False


def _keep_tail(window: list[RawLine], lines: list[tuple[int, str]], truncated: list[int]) -> bool:
    """Keep the newest lines of ``window`` that fit the byte cap (Kimi's tail rule)."""
    decoded = []
    for r in window:
        text = decode_line(r)
        cut = truncate_line(text)
        decoded.append((r.number, cut, cut != text or r.long))
    total_bytes = 0
    max_bytes = False
    kept: list[tuple[int, str, bool]] = []
    for item in reversed(decoded):
        size = len(item[1].encode("utf-8"))
        if kept and total_bytes + size > MAX_BYTES:
            max_bytes = True
            break
        total_bytes += size
        kept.append(item)
    kept.reverse()
    for number, text, was_cut in kept:
        lines.append((number, text))
        if was_cut:
            truncated.append(number)
    return max_bytes


def _format(params: ReadFileParams, w: dict[str, Any]) -> Outcome:
    lines: list[tuple[int, str]] = w["lines"]
    total: int = w["total"]
    n_lines = params.n_lines
    output = "".join(f"{n:6d}\t{text}" for n, text in lines)
    k = len(lines)
    start = lines[0][0] if lines else max(params.line_offset, 1)
    msg = f"{k} lines read from file starting from line {start}." if k else "No lines read from file."
    total_text = f"{total}" if w["complete"] else f"at least {total} (counting stopped early)"
    msg += f" Total lines in file: {total_text}."
    last = lines[-1][0] if lines else start - 1
    eof = w["complete"] and last >= total
    if w["max_lines"]:
        msg += f" Max {MAX_LINES} lines reached."
    elif w["max_bytes"]:
        msg += f" Max {MAX_BYTES} bytes reached."
    elif k < n_lines:
        msg += " End of file reached."
    if w["truncated"]:
        msg += f" Lines {w['truncated']} were truncated."
    structured = {
        "start_line": start,
        "lines_read": k,
        "total_lines": total,
        "end_of_file": eof,
        "truncated_lines": w["truncated"],
        "next_line_offset": None if eof else last + 1,
    }
    return Outcome(output=output, message=msg, structured=structured)


async def read_file(params: ReadFileParams, env: ToolEnv) -> Outcome:
    # Resolving (realpath: an lstat per component) is file work too: off the event loop, in
    # the same worker-thread round trip as the read.
    return await anyio.to_thread.run_sync(_resolve_and_read, params, env.workspace, abandon_on_cancel=True)


def _resolve_and_read(params: ReadFileParams, workspace: Workspace) -> Outcome:
    try:
        return _read(params, workspace.resolve_for_read(params.path))
    except PathError as exc:
        return Outcome.from_path_error(exc)


def _read(params: ReadFileParams, rp: ResolvedPath) -> Outcome:
    fd = open_regular(rp)
    try:
        _check_readable_text(rp, fd)
        try:
            window = _window(fd, params.line_offset, params.n_lines)
        except OSError as exc:
            return Outcome.error(
                f"Failed to read {rp.shown}. Error: {exc.strerror or exc}", "Failed to read file"
            )
        return _format(params, window)
    finally:
        os.close(fd)


class ReadFileFacts(BaseModel):
    """structuredContent of a successful ReadFile."""

    start_line: int
    lines_read: int
    total_lines: int
    end_of_file: bool
    truncated_lines: list[int]
    next_line_offset: int | None


DESCRIPTION = load_description(
    "read_file", MAX_LINES=MAX_LINES, MAX_BYTES=MAX_BYTES, MAX_LINE_LENGTH=MAX_LINE_LENGTH
)
