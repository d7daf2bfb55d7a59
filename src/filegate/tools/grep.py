"""Grep: ripgrep over the workspace, confined, secret-safe, paged (SPEC §4 Grep)."""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import shutil
import stat
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import anyio
from anyio.abc import Process
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from filegate.policy.secrets import skipped_secrets_warning
from filegate.policy.workspace import PathError, open_directory, open_regular
from filegate.tools.describe import load_description
from filegate.tools.outcome import Outcome, ToolEnv

# Kimi's grep_local.py: default page, output caps, rg buffer and timeout.
HEAD_LIMIT = 250
MAX_OUTPUT_CHARS = 50_000
MAX_LINE_CHARS = 2000
RG_MAX_BUFFER = 20_000_000
RG_TIMEOUT_S = 20.0
# Where a child can enter a directory by the fd its parent opened (Linux): the search runs in
# the very directory that was checked, even if a symlink is swapped into its path afterwards.
PROC_FD = "/proc/self/fd"
# rg's name for standard input, where a single file is searched from an fd opened here.
RG_STDIN = "<stdin>"
# Linux's MAX_ARG_STRLEN: the longest single command-line argument exec accepts (E2BIG beyond).
MAX_ARG_BYTES = 128 << 10
# rg's output is parsed while rg runs, in batches of about this many bytes.
PARSE_BATCH = 64 << 10
# rg writes one block per file, often a few hundred bytes: after a read shorter than
# SMALL_READ, wait COALESCE_S so the next read takes several (1,800 reads became ~300 on the
# bench's content search, saving ~80 ms of event-loop time).
SMALL_READ = 16 << 10
COALESCE_S = 0.002
# How often a long search tells a client that sent a progress token how far it got.
PROGRESS_EVERY_S = 1.0
VCS_DIRS = (".git", ".svn", ".hg", ".bzr", ".jj", ".sl")

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


class GrepFacts(BaseModel):
    """structuredContent of a successful Grep."""

    mode: OutputMode
    total_lines: int
    returned_lines: int
    next_offset: int | None
    total_matches: int | None = None
    files: int | None = None
    skipped_sensitive: int = 0
    timed_out: bool = False
    output_truncated: bool = False


@functools.cache
def find_rg() -> str | None:
    """The rg that the `ripgrep` wheel put beside this Python (not necessarily on PATH)."""
    dirs = [sysconfig.get_path("scripts"), str(Path(sys.executable).parent)]
    with contextlib.suppress(KeyError):  # a platform without a user scheme
        dirs.append(sysconfig.get_path("scripts", f"{os.name}_user"))
    for d in dirs:
        found = shutil.which("rg", path=d)
        if found:
            return found
    return shutil.which("rg")


@dataclass
class _Target:
    shown: str
    cwd: Path  # the searched directory (a single file: its parent); paths are shown relative to it
    arg: str  # what rg searches: "." in the pinned directory, or "-" for the file on stdin
    single_file: bool
    fd: int  # opened without following symlinks: the directory rg runs in, or the file it reads
    name: str = ""  # a single file's name, printed in place of rg's "<stdin>"

    def close(self) -> None:
        os.close(self.fd)


def _target(params: GrepParams, env: ToolEnv) -> _Target:
    """Resolve ``path`` and open it (no symlink followed), so rg searches what was checked."""
    rp = env.workspace.resolve(params.path or ".", "search")
    try:
        st = os.stat(rp.real)
    except FileNotFoundError:
        raise PathError(f"`{rp.shown}` does not exist.", "File not found") from None
    except OSError as exc:
        raise PathError(f"`{rp.shown}` cannot be searched: {exc.strerror}.") from None
    if stat.S_ISDIR(st.st_mode):
        return _Target(rp.shown, rp.real, ".", False, open_directory(rp))
    if stat.S_ISREG(st.st_mode):
        return _Target(rp.shown, rp.real.parent, "-", True, open_regular(rp), rp.real.name)
    raise PathError(f"`{rp.shown}` is not a file.")


def _rg_cwd(target: _Target) -> str:
    """rg's working directory: the pinned directory itself, through /proc where there is one."""
    if target.single_file:
        return "/"  # rg reads the file on stdin and needs no directory
    if os.path.isdir(PROC_FD):
        return f"{PROC_FD}/{target.fd}"
    return str(target.cwd)  # pragma: no cover - Linux always has /proc


def _rg_args(rg: str, params: GrepParams, target: _Target) -> list[str]:
    mode = params.output_mode
    args = [rg, "--no-config", "--hidden", "--null", "--with-filename", "--no-heading",
            "--color", "never"]  # fmt: skip
    if params.include_ignored:
        args.append("--no-ignore")
    for vcs in VCS_DIRS:
        args += ["--glob", f"!{vcs}"]
    if params.ignore_case:
        args.append("--ignore-case")
    if params.multiline:
        args += ["--multiline", "--multiline-dotall"]
    if mode == "content":
        # Line numbers always come from rg: they tell a match (':') from context ('-').
        args += ["--line-number", "--max-columns", str(MAX_LINE_CHARS), "--max-columns-preview"]
        for flag, value in (("--before-context", params.before_context),
                            ("--after-context", params.after_context),
                            ("--context", params.context)):  # fmt: skip
            if value is not None:
                args += [flag, str(value)]
    else:
        args += ["--max-columns", "500"]
    if params.glob:
        args += ["--glob", params.glob]
    if params.type:
        args += ["--type", params.type]
    if mode == "files_with_matches":
        args.append("--files-with-matches")
    elif mode == "count_matches":
        args.append("--count-matches")
    args += ["--", params.pattern, target.arg]
    return args


@dataclass
class _RgRun:
    stdout: bytes = b""  # non-empty when rg wrote anything (the bytes themselves go to the parser)
    stderr: bytes = b""
    returncode: int | None = None
    timed_out: bool = False
    overflow: bool = False
    chunks: list[bytes] = field(default_factory=list)


async def _run_rg(args: list[str], target: _Target, env: ToolEnv, parser: _Parser) -> _RgRun:
    """Run rg; its output is parsed in worker threads while it still runs (rg's own wall time
    hides the parsing: 11,000 matching files take ~0.3 s to check and date)."""
    run = _RgRun()
    size = 0
    err = bytearray()
    more = anyio.Event()
    done = False
    proc: Process = await anyio.open_process(
        args,
        cwd=_rg_cwd(target),
        stdin=target.fd if target.single_file else None,
        stdout=-1,
        stderr=-1,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        stdout, stderr = proc.stdout, proc.stderr

        async def drain_stderr() -> None:
            async for chunk in stderr:
                if len(err) < 64_000:
                    err.extend(chunk)

        async def pump() -> None:
            nonlocal size, more, done
            last = anyio.current_time()
            async for chunk in stdout:
                take = chunk[: max(RG_MAX_BUFFER - size, 0)]
                if take:
                    run.chunks.append(take)
                    size += len(take)
                    more.set()
                if len(take) < len(chunk):
                    run.overflow = True
                now = anyio.current_time()
                if now - last >= PROGRESS_EVERY_S:
                    last = now
                    await env.reporter.progress(size, None, f"{size} bytes of results so far")
                if len(chunk) < SMALL_READ:
                    await anyio.sleep(COALESCE_S)  # let rg's small writes pile up: fewer wake-ups
            done = True
            more.set()

        async def parse_meanwhile() -> None:
            nonlocal more
            while not (done and parser.fed == len(run.chunks)):
                # rg writes a block per file (a few hundred bytes): parse in batches, or the
                # thread round trips cost more than the parsing.
                if parser.fed == len(run.chunks) or (not done and size - parser.fed_bytes < PARSE_BATCH):
                    await more.wait()
                    more = anyio.Event()
                    continue
                await anyio.to_thread.run_sync(parser.feed_from, run.chunks)

        with anyio.move_on_after(RG_TIMEOUT_S) as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(drain_stderr)
                tg.start_soon(parse_meanwhile)
                await pump()
            run.returncode = await proc.wait()
        run.timed_out = scope.cancelled_caught
    finally:
        with anyio.CancelScope(shield=True):
            if proc.returncode is None:
                proc.kill()
            await proc.aclose()  # reaped and its pipes closed now, not by the GC later
    run.stdout = b"x" if size else b""
    run.stderr = bytes(err)
    return run


def _cut_line(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "[...truncated]"


@dataclass
class _Parsed:
    lines: list[str]
    skipped: list[str]
    total_matches: int | None = None
    files: int | None = None


def _clean_path(raw: bytes, target: _Target) -> str:
    p = raw.decode("utf-8", errors="replace")
    if target.single_file and p == RG_STDIN:
        return target.name
    return p[2:] if p.startswith("./") else p


# Stands for a content line that lies past the requested page: counted, never shown.
_UNSHOWN = ""


class _Parser:
    """rg's output → result lines, fed in order as it arrives (Kimi's formats, SPEC §4 Grep).

    Records are cut where rg ends them (NUL after a file name in files_with_matches mode,
    a line break otherwise); what follows the last complete record waits for the next chunk.
    """

    def __init__(self, params: GrepParams, target: _Target, env: ToolEnv) -> None:
        self.params, self.target = params, target
        self.mode = params.output_mode
        self.sep = b"\0" if self.mode == "files_with_matches" else b"\n"
        self.fed = 0  # chunks consumed so far
        self.fed_bytes = 0
        self.rest = bytearray()
        self.lines: list[str] = []
        self.dated: list[tuple[float, str]] = []  # files_with_matches: (mtime, path)
        self.skipped: set[str] = set()
        self.total = 0
        base = str(target.cwd)
        secrets = env.workspace.secrets

        @functools.lru_cache(maxsize=4096)
        def hidden(rel: str) -> bool:
            return secrets.is_sensitive(f"{base}/{rel}")

        @functools.lru_cache(maxsize=4096)
        def path_of(raw: bytes) -> tuple[str, bool]:
            """A path as rg printed it → (shown path, sensitive); content rows repeat it."""
            p = _clean_path(raw, target)
            return p, hidden(p)

        self.hidden = hidden
        self.path_of = path_of
        # Content lines past offset + head_limit are counted, never shown: not formatted.
        self.window_end = params.offset + params.head_limit if params.head_limit else None

    def feed_from(self, chunks: list[bytes]) -> None:
        """Parse the chunks not parsed yet (a worker thread; never two at once)."""
        end = len(chunks)
        if self.fed == end:
            return
        self.rest += b"".join(chunks[self.fed : end])
        for i in range(self.fed, end):
            self.fed_bytes += len(chunks[i])
            chunks[i] = b""  # parsed: no need to hold it twice
        self.fed = end
        cut = self.rest.rfind(self.sep)
        if cut >= 0:
            block = bytes(self.rest[: cut + 1])
            del self.rest[: cut + 1]
            self._records(block.split(self.sep)[:-1], cr=b"\r" in block)

    def finish(self, chunks: list[bytes], overflow: bool) -> _Parsed:
        self.feed_from(chunks)
        if self.rest and not overflow:  # no last separator; cut off on overflow
            self._records([bytes(self.rest)], last=True)
        self.rest.clear()
        skipped = sorted(self.skipped)
        if self.mode == "files_with_matches":
            self.dated.sort(key=lambda d: d[0], reverse=True)
            return _Parsed([p for _, p in self.dated], skipped)
        if self.mode == "count_matches":
            return _Parsed(self.lines, skipped, self.total, len(self.lines))
        lines = self.lines
        while lines and lines[-1] == "--":
            lines.pop()
        while lines and lines[0] == "--":
            lines.pop(0)
        return _Parsed(lines, skipped)

    def _records(self, records: list[bytes], last: bool = False, cr: bool = True) -> None:
        if self.mode == "files_with_matches":
            self._paths(records)
            return
        # The rows of bytes.splitlines() over the whole output, record by record (without a
        # CR anywhere, those are the records themselves).
        if last or cr:
            rows: list[bytes] = []
            for r in records:
                rows.extend(r.splitlines() or ([] if last else [b""]))
        else:
            rows = records
        if self.mode == "count_matches":
            self._counts(rows)
        else:
            self._content(rows)

    def _skip(self, p: str) -> bool:
        if self.hidden(p):
            self.skipped.add(p.rsplit("/", 1)[-1])
            return True
        return False

    def _paths(self, records: list[bytes]) -> None:
        target = self.target
        for raw in records:
            if not raw.strip(b"\n"):
                continue
            p = _clean_path(raw, target)
            if not self._skip(p):
                self.dated.append((_mtime(target, p), p))

    def _counts(self, rows: list[bytes]) -> None:
        for row in rows:
            path_b, _, count_b = row.partition(b"\0")
            p = _clean_path(path_b, self.target)
            if self._skip(p):
                continue
            n = int(count_b or b"0")
            self.total += n
            self.lines.append(f"{p}:{n}")

    def _content(self, rows: list[bytes]) -> None:
        lines = self.lines
        numbered = self.params.line_number
        end = self.window_end
        for row in rows:
            path_b, nul, rest = row.partition(b"\0")
            if not nul:  # a group separator "--"
                if lines and lines[-1] != "--":
                    lines.append("--")
                continue
            p, sensitive = self.path_of(path_b)
            if sensitive:
                self.skipped.add(p.rsplit("/", 1)[-1])
                continue
            # Past the page: a placeholder. (A path of 4 bytes or fewer, such as "./-", could
            # make a line that reads "--", which the end trims: those are always formatted.)
            if end is not None and len(lines) >= end and len(path_b) > 4:
                lines.append(_UNSHOWN)
                continue
            text = rest.decode("utf-8", errors="replace")
            digits = len(text) - len(text.lstrip("0123456789"))
            number, sep, body = text[:digits], text[digits : digits + 1], text[digits + 1 :]
            if numbered and number:
                lines.append(f"{p}{sep}{number}{sep}{body}")
            else:
                lines.append(f"{p}{sep}{body}")


def _mtime(target: _Target, rel: str) -> float:
    try:
        if target.single_file:
            return os.stat(os.path.join(target.cwd, rel)).st_mtime
        return os.stat(rel, dir_fd=target.fd).st_mtime  # in the pinned directory rg searched
    except OSError:
        return 0.0


def _page(parsed: _Parsed, params: GrepParams) -> tuple[list[str], list[str], int | None]:
    """Kimi's pagination: offset, then head_limit; returns (lines, messages, next_offset)."""
    rest = parsed.lines[params.offset :]
    total = len(parsed.lines)
    messages: list[str] = []
    next_offset = None
    if params.head_limit and len(rest) > params.head_limit:
        rest = rest[: params.head_limit]
        next_offset = params.offset + params.head_limit
        messages.append(
            f"Results truncated to {params.head_limit} lines (total: {total}). "
            f"Use offset={next_offset} to see more."
        )
    return rest, messages, next_offset


def _fit_output(lines: list[str]) -> tuple[str, bool]:
    """Kimi's ToolResultBuilder: lines cut at 2000 characters, 50,000 characters in all."""
    out: list[str] = []
    used = 0
    for line in lines:
        line = _cut_line(line)
        if used + len(line) + 1 > MAX_OUTPUT_CHARS:
            return "\n".join(out), True
        out.append(line)
        used += len(line) + 1
    return "\n".join(out), False


async def grep_tool(params: GrepParams, env: ToolEnv) -> Outcome:
    rg = find_rg()
    if rg is None:
        return Outcome.error(
            "Failed to grep. Error: ripgrep (rg) is not installed beside filegate; reinstall "
            "filegate (it depends on the `ripgrep` wheel).",
            "Failed to grep",
        )
    try:
        target = _target(params, env)
    except PathError as exc:
        return Outcome.from_path_error(exc)
    try:
        parser = _Parser(params, target, env)
        try:
            run = await _run_rg(_rg_args(rg, params, target), target, env, parser)
        except OSError as exc:  # rg could not be started
            return Outcome.error(_spawn_failure(exc), "Failed to grep")
        if run.returncode not in (0, 1, None) and not run.stdout:
            err = run.stderr.decode("utf-8", errors="replace").strip() or f"rg exited {run.returncode}"
            return Outcome.error(f"Failed to grep. Error: {err}", "Failed to grep")
        if run.timed_out and not run.stdout:
            return Outcome.error(
                f"Grep timed out after {RG_TIMEOUT_S:g}s. Try a more specific path or pattern.",
                "Grep timed out",
            )
        parsed = await anyio.to_thread.run_sync(parser.finish, run.chunks, run.overflow)
    finally:
        target.close()
    lines, messages, next_offset = _page(parsed, params)
    if params.output_mode == "count_matches":
        messages.insert(0, f"Found {parsed.total_matches} total occurrences across {parsed.files} files.")
    if parsed.skipped:
        messages.append(skipped_secrets_warning(parsed.skipped))
    if run.overflow:
        messages.append("Output exceeded buffer limit. Some results omitted.")
    if run.timed_out:
        messages.append(f"Grep timed out after {RG_TIMEOUT_S:g}s. Partial results returned.")
    if run.returncode == 2 and run.stdout:
        first = run.stderr.decode("utf-8", errors="replace").strip().splitlines()[:1]
        messages.append("Some files could not be searched" + (f": {first[0]}" if first else "."))
    output, cut = _fit_output(lines)
    if cut:
        messages.append("Output is truncated to fit in the message.")
    if not parsed.lines:
        messages.insert(0, "No matches found")
    message = _join(messages)
    facts = GrepFacts(
        mode=params.output_mode,
        total_lines=len(parsed.lines),
        returned_lines=len(lines),
        next_offset=next_offset,
        total_matches=parsed.total_matches,
        files=parsed.files if params.output_mode == "count_matches" else None,
        skipped_sensitive=len(parsed.skipped),
        timed_out=run.timed_out,
        output_truncated=cut or run.overflow,
    )
    return Outcome(output=output, message=message, structured=facts.model_dump())


def _spawn_failure(exc: OSError) -> str:
    if exc.errno == errno.E2BIG:
        return (
            "Failed to grep. Error: the pattern or glob is too long to pass to ripgrep (Linux takes "
            f"at most {MAX_ARG_BYTES // 1024} KiB per argument). Use a shorter pattern."
        )
    return f"Failed to grep. Error: ripgrep could not be started ({exc.strerror or exc})."


def _join(messages: list[str]) -> str:
    parts = [m if m.endswith(".") else m + "." for m in messages]
    return " ".join(parts)


DESCRIPTION = load_description("grep", HEAD_LIMIT=HEAD_LIMIT)
