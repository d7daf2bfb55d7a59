"""ReadFile: a numbered window of a text file, in bounded memory however large the file."""

from __future__ import annotations

import functools
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import anyio
from anyio.lowlevel import RunVar
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from filegate.errors import PathError
from filegate.fsio.codec import DETECT_BYTES, FileCodec, RefusedCodec, allowed_codec, decide
from filegate.fsio.lines import ReadCancelled, Scan, Source, line_codec
from filegate.fsio.platform import pread
from filegate.fsio.safeopen import open_regular
from filegate.fsio.window import (
    MAX_BYTES,
    MAX_LINE_LENGTH,
    MAX_LINES,
    Window,
    read_window,
    rows_window,
    truncate_line,
)
from filegate.media.pdf import MAX_TEXT_PAGES
from filegate.policy.filetype import SNIFF_BYTES, detect_file_type, document_kind
from filegate.policy.workspace import ResolvedPath, Workspace
from filegate.tools.describe import load_description, path_help
from filegate.tools.documents.notebook import NotANotebook, read_notebook
from filegate.tools.documents.pdf_view import pdf_view
from filegate.tools.outcome import BLOCK_FRAME_CHARS, Outcome, ToolEnv, ToolSpec
from filegate.tools.readguard.ledger import INDEX_MAX_BYTES, ReadLedger, identity_of


class ReadFileParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: Annotated[str, Field(description=path_help("read"))]
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
    column_offset: Annotated[
        int,
        Field(
            ge=0,
            description="The character of the first line to start at (0-based), to read a line "
            f"longer than {MAX_LINE_LENGTH} characters in pieces; needs a positive line_offset.",
        ),
    ] = 0
    encoding: Annotated[
        str | None,
        Field(
            description="Decode the file with this codec (e.g. cp1252, gb18030, shift_jis) instead "
            "of the one detected; later edits of the file in this session use it too.",
        ),
    ] = None

    @model_validator(mode="after")
    def _column_reads_forward(self) -> ReadFileParams:
        if self.column_offset and self.line_offset < 0:
            raise ValueError("column_offset needs a positive line_offset (the line to read from)")
        return self

    @field_validator("encoding")
    @classmethod
    def _codec(cls, v: str | None) -> str | None:
        try:  # UTF-16/32: the file's byte order mark is checked once it is open
            return v if v is None else allowed_codec(v, any_bom=True) and v
        except RefusedCodec as no:
            parameter = "ReadFile's encoding parameter"
            raise ValueError(
                f"{no.at(parameter).sentence()} Use e.g. cp1252, gb18030 or shift_jis."
            ) from None

    pages: Annotated[
        str | None,
        Field(
            pattern=r"^[1-9][0-9]{0,6}(-[1-9][0-9]{0,6})?$",
            description=f'For a PDF: the pages to read, e.g. "3" or "3-7" (at most {MAX_TEXT_PAGES} a call).',
        ),
    ] = None

    raw: Annotated[
        bool,
        Field(description="For a Jupyter notebook: its JSON as text instead of the cell view."),
    ] = False

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


# detect_file_type is a function of (name, first bytes) alone, and libmagic costs more over an
# 8 KiB text header than the rest of a small read: answers for the most recent headers are
# kept (256 x 8 KiB at most).
_detect_file_type = functools.lru_cache(maxsize=256)(detect_file_type)


def _check_readable_text(rp: ResolvedPath, header: bytes) -> None:
    ft = _detect_file_type(rp.real.name, header)
    if ft.kind in ("image", "video"):
        article = "an" if ft.kind == "image" else "a"
        raise PathError(
            f"`{rp.shown}` is {article} {ft.kind} file ({ft.mime}). Use ReadMediaFile to read image or "
            "video files.",
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


# What a notebook's cell view adds to the summary: its line numbers are the view's, not the file's.
NOTEBOOK_NOTE = (
    " Notebook view of %d cells: lines are numbered in this view (cell headers and outputs"
    " included), not in the file; raw=true shows the JSON."
)

# Said after the summary when a parameter for another kind of document was passed (SPEC is
# silent; a note keeps the read, where a refusal would cost the model a round trip).
PAGES_IGNORED = " (pages applies to PDFs only: ignored for this file.)"
RAW_IGNORED = " (raw applies to Jupyter notebooks only: ignored for this file.)"


# --- the result, fitted to the client's budget ----------------------------------------------


# Kimi's numbered line: the number right-aligned in 6 columns, a tab, the line. %-formatting:
# cheaper than an f-string's format spec, and it runs for every line of every read.
ROW = "%6d\t%s"


def _row(number: int, text: str) -> str:
    return ROW % (number, text)


def _result_chars(o: Outcome) -> int:
    """What a client counts of a result: every text block's characters (Kimi CLI counts
    ``len(text)``, a block's closing line break included), plus the framing of each block."""
    return len(o.output) + len(o.message) + 2 * (BLOCK_FRAME_CHARS + 1)


def _format(
    params: ReadFileParams, w: Window, budget: int, fc: FileCodec | None = None, note: str = ""
) -> Outcome:
    """The result with as many whole lines as fit ``budget``; the summary (and ``note`` after
    it) is always there."""
    full = _outcome(params, w, w.lines, None, fc, note)
    if _result_chars(full) <= budget:
        return full
    rows = [len(_row(n, t)) for n, t in w.lines]
    if w.tail:
        rows.reverse()  # a tail keeps its newest lines, as Kimi's byte cap does
    overhead = _result_chars(full) - sum(rows) + 300  # the budget sentence, digits
    k, used = 0, 0
    while k < len(rows) and used + rows[k] <= budget - overhead:
        used += rows[k]
        k += 1
    while True:
        kept = _kept(w, k, budget - overhead)
        out = _outcome(params, w, kept, budget, fc, note)
        if _result_chars(out) <= budget or k == 0:
            return out
        k -= 1


def _kept(w: Window, k: int, room: int) -> list[tuple[int, str]]:
    if k > 0:
        return w.lines[-k:] if w.tail else w.lines[:k]
    # Not even one whole line fits (a tiny --result-budget): the first one, cut to fit.
    if not w.lines:
        return []
    number, text = w.lines[-1] if w.tail else w.lines[0]
    cut = truncate_line(text, max(room - 16, 8))
    if cut != text and number not in w.truncated:
        w.truncated.append(number)
    return [(number, cut)]


def _outcome(
    params: ReadFileParams,
    w: Window,
    lines: list[tuple[int, str]],
    budget: int | None,
    fc: FileCodec | None = None,
    note: str = "",
) -> Outcome:
    """Kimi's summary for ``lines`` (all of ``w.lines``, or the part that fits ``budget``)."""
    k = len(lines)
    dropped = len(w.lines) - k
    first, last = (lines[0][0], lines[-1][0]) if lines else (None, None)
    if dropped:
        shown = {n for n, _ in lines}
        truncated = [n for n in w.truncated if n in shown]
    else:
        truncated = w.truncated
    eof = w.eof and not (dropped and not w.tail)
    next_offset = None if eof else (last + 1 if last is not None else params.line_offset)
    if w.from_end and next_offset is not None and next_offset >= 0:
        next_offset = None
    msg = _opening(params, w, k, first) + _why_it_stopped(params, w, lines, budget, eof, next_offset)
    if truncated:
        msg += f" Lines {truncated} were truncated."
    msg += _columns_sentence(params, lines, truncated)
    if fc is not None:
        msg += _codec_sentence(fc, lines)
    msg += note
    output = "".join([ROW % line for line in lines])
    return Outcome(output=output, message=msg)


def _columns_sentence(params: ReadFileParams, lines: list[tuple[int, str]], truncated: list[int]) -> str:
    """SPEC §8.7: where a read by column started, and the column_offset that continues each
    cut line ("Continue line 4 at column_offset=1996.")."""
    first = params.line_offset
    msg = f" Line {first} is shown from column_offset={params.column_offset}." if params.column_offset else ""
    cut = set(truncated)
    goes_on: dict[int, list[int]] = {}
    for number, text in lines:
        if number in cut:
            base = params.column_offset if number == first else 0
            shown = len(text) - len("...") - (1 if text.endswith("\n") else 0)
            goes_on.setdefault(base + shown, []).append(number)
    if not goes_on:
        return msg
    parts = [
        (f"line {numbers[0]}" if len(numbers) == 1 else f"lines {numbers}") + f" at column_offset={column}"
        for column, numbers in goes_on.items()
    ]
    return msg + " Continue " + ", ".join(parts) + "."


def _codec_sentence(fc: FileCodec, lines: list[tuple[int, str]]) -> str:
    """SPEC §8.1: a codec that is not UTF-8, and where it came from; a file shown with U+FFFD
    says so and how to decode it. Nothing for a UTF-8 file (Kimi's texts stay)."""
    if fc.fallback and any("\ufffd" in text for _, text in lines):
        return (fc.summary() if fc.refused else "") + (
            " The file is not valid UTF-8: bytes that are not are shown as \ufffd (U+FFFD). Pass"
            " `encoding` (e.g. cp1252, gb18030, shift_jis) to decode it, or start filegate with"
            " --legacy-encoding NAME (or auto)."
        )
    return fc.summary()


def _opening(params: ReadFileParams, w: Window, k: int, first: int | None) -> str:
    """Kimi's first two sentences: what was read, and the total (or what is known of it)."""
    if not k:
        msg = "No lines read from file."
    elif w.from_end:
        msg = f"{k} lines read from the end of the file, numbered from the end (-1 is the last line)."
    else:
        msg = f"{k} lines read from file starting from line {first}."
    if w.complete:
        return msg + f" Total lines in file: {w.total}."
    return msg + f" Total lines in file: at least {w.total} (counting stopped at the time limit)."


def _why_it_stopped(
    params: ReadFileParams,
    w: Window,
    lines: list[tuple[int, str]],
    budget: int | None,
    eof: bool,
    next_offset: int | None,
) -> str:
    """Why there are no more lines: Kimi's sentence for the cap that stopped the read, and,
    when the client's budget cut further, ours too (SPEC §4: every reason is named, so no
    skipped line goes unmentioned)."""
    dropped = len(w.lines) - len(lines)
    if w.not_reached is not None:
        return (
            f" Line {params.line_offset} was not reached within the time limit"
            f" ({w.not_reached} lines were passed)."
        )
    cap = ""
    if w.reason == "max_lines":
        cap = f" Max {MAX_LINES} lines reached."
    elif w.reason == "max_bytes":
        cap = f" Max {MAX_BYTES} bytes reached."
    elif w.reason == "time":
        cap = " Reading stopped at the time limit."
    if dropped and w.tail:
        a, b = w.lines[0][0], lines[0][0] - 1 if lines else w.lines[-1][0]
        if w.cut_before:  # the byte cap left out lines before a: the way back starts there
            a -= w.cut_before
            cap = cap[:-1] + f" (lines {a} to {a + w.cut_before - 1} were left out)."
            what = f"Lines {a + w.cut_before} to {b} did not fit this client's result budget"
            return (
                f"{cap} {what} ({budget} characters): read lines {a} to {b} with"
                f" line_offset={a}, n_lines={b - a + 1}."
            )
        return (
            f"{cap} Lines {a} to {b} did not fit this client's result budget ({budget} characters):"
            f" read them with line_offset={a}, n_lines={b - a + 1}."
        )
    if dropped:
        return (
            f"{cap} Max {budget} characters reached (this client's result budget);"
            f" continue with line_offset={next_offset}."
        )
    if cap:
        return cap
    if eof and len(lines) < params.n_lines:
        return " End of file reached."
    return ""


# ReadFile's file work runs on at most this many worker threads at once (anyio's default is
# 40). Each system call in it (~25 for a small file: realpath's lstats, the open component by
# component, fstat, pread) hands the GIL to a waiting thread; with many reads in flight every
# hand-over costs a futex wait and a context switch, so a small read takes several times the
# CPU it takes alone (bench/percall.py at concurrency 10 compares thread counts). Two keep one
# thread in a system call while the other runs Python; a third would only wait for the GIL.
# A cancelled read gives its place back at once (abandon_on_cancel), whatever its thread is
# still doing. A file over SHARED_FROM_BYTES is read on anyio's shared threads instead: its
# read can take seconds (the line count of a 10 GiB log), and the two places are for the many
# small reads.
READ_WORKERS = 2
SHARED_FROM_BYTES = 1 << 20
_READERS: RunVar[anyio.CapacityLimiter] = RunVar("filegate_read_workers")


def _readers() -> anyio.CapacityLimiter:
    """The event loop's limiter of ReadFile's worker threads (one per loop, as anyio's own)."""
    try:
        return _READERS.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(READ_WORKERS)
        _READERS.set(limiter)
        return limiter


async def read_file(params: ReadFileParams, env: ToolEnv) -> Outcome:
    # Resolving (realpath: an lstat per component) is file work too: off the event loop, in
    # the same worker-thread round trip as the read. A call that is cancelled (or whose client
    # went away) sets ``cancel``: the abandoned thread sees it at its next chunk and stops.
    cancel = threading.Event()
    chosen = (params.encoding, "encoding") if params.encoding else None
    codecs = _CodecArgs(env.legacy_encoding, chosen, env)
    args = (params, env.workspace, env.text_budget, cancel, env.reads, codecs)
    try:
        try:
            return await anyio.to_thread.run_sync(
                _resolve_and_read, *args, True, abandon_on_cancel=True, limiter=_readers()
            )
        except _Large:  # opened and closed again: read from the start on the shared threads
            return await anyio.to_thread.run_sync(_resolve_and_read, *args, False, abandon_on_cancel=True)
    finally:
        cancel.set()


@dataclass(frozen=True, slots=True)
class _CodecArgs:
    """What decides a file's codec besides its bytes: the server's flag, the call's or the
    session's choice, and where to remember a choice."""

    legacy: str | None = None
    chosen: tuple[str, str] | None = None
    env: ToolEnv | None = None

    def for_file(self, real: Path) -> tuple[str, str] | None:
        if self.chosen is None and self.env is not None:
            return self.env.chosen_encoding(real)
        return self.chosen

    def remember(self, real: Path) -> None:
        if self.chosen is not None and self.env is not None and self.env.encodings is not None:
            self.env.encodings.choose(real, self.chosen[0])


class _Large(Exception):
    """The file is over SHARED_FROM_BYTES: not read on one of the READ_WORKERS threads."""


def _resolve_and_read(
    params: ReadFileParams,
    workspace: Workspace,
    budget: int,
    cancel: threading.Event,
    reads: ReadLedger | None = None,
    codecs: _CodecArgs | None = None,
    small_only: bool = False,
) -> Outcome:
    rp = workspace.resolve_for_read(params.path)
    return _read(params, rp, budget, cancel, reads, small_only, codecs or _CodecArgs())


def _read(
    params: ReadFileParams,
    rp: ResolvedPath,
    budget: int,
    cancel: threading.Event,
    reads: ReadLedger | None = None,
    small_only: bool = False,
    codecs: _CodecArgs | None = None,
) -> Outcome:
    codecs = codecs or _CodecArgs()
    fd = open_regular(rp)
    try:
        st = os.fstat(fd)
        if small_only and st.st_size > SHARED_FROM_BYTES:
            raise _Large
        header = pread(fd, SNIFF_BYTES, 0)
        document = document_kind(rp.real.name, header)
        if document == "pdf":
            if small_only:  # its worker may run for seconds: not on a READ_WORKERS thread
                raise _Large
            window, note = pdf_view(
                rp, fd, params.pages, params.line_offset, params.n_lines, params.column_offset
            )
            return _format(params, window, budget, note=note + (RAW_IGNORED if params.raw else ""))
        _check_readable_text(rp, header)
        note = PAGES_IGNORED if params.pages is not None else ""
        if params.raw and document != "notebook":
            note += RAW_IGNORED
        if not params.raw and document == "notebook":
            try:
                view = read_notebook(fd, st.st_size)
            except NotANotebook as why:
                note += f" Shown as text: this .ipynb file is not read as a notebook ({why})."
            else:
                if reads is not None:
                    reads.saw(rp.real, identity_of(st))
                window = rows_window(view.rows, params.line_offset, params.n_lines, params.column_offset)
                return _format(params, window, budget, note=NOTEBOOK_NOTE % view.cells + note)
        fc = _decide(fd, st, header, rp.real, codecs)
        src = Source(fd, st, line_codec(fc, header), Scan.start(cancel=cancel))
        try:
            window = read_window(src, params.line_offset, params.n_lines, params.column_offset)
        except ReadCancelled:
            return Outcome.error("The read was cancelled.")
        except OSError as exc:
            return Outcome.error(f"Failed to read {rp.shown}. Error: {exc.strerror or exc}")
        if reads is not None:  # any window counts: the file as it was when opened was read
            reads.saw(rp.real, identity_of(st), _whole_if_small(fd, st))
        codecs.remember(rp.real)
        return _format(params, window, budget, fc, note)
    finally:
        os.close(fd)


def _decide(fd: int, st: os.stat_result, header: bytes, real: Path, codecs: _CodecArgs) -> FileCodec:
    """The file's codec (fsio/codec.py); at most its first DETECT_BYTES are read for it, once."""
    head = header if st.st_size <= len(header) else pread(fd, DETECT_BYTES, 0)
    return decide(head, size=st.st_size, path=real, legacy=codecs.legacy, chosen=codecs.for_file(real))


def _whole_if_small(fd: int, st: os.stat_result) -> bytes | None:
    """The whole file, for the read's line index (SPEC §8.3), when it is small enough and did
    not change while it was read."""
    if st.st_size > INDEX_MAX_BYTES:
        return None
    data = pread(fd, st.st_size, 0)
    return data if identity_of(os.fstat(fd)) == identity_of(st) else None


SPEC = ToolSpec(
    name="ReadFile",
    title="Read file",
    description=load_description(
        "read_file",
        MAX_LINES=MAX_LINES,
        MAX_BYTES=MAX_BYTES,
        MAX_LINE_LENGTH=MAX_LINE_LENGTH,
        MAX_TEXT_PAGES=MAX_TEXT_PAGES,
    ),
    params=ReadFileParams,
    handler=read_file,
    read_only=True,
)
