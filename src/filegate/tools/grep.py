"""Grep: ripgrep over the workspace, confined, secret-safe, paged (SPEC §4 Grep)."""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import anyio
from anyio._core._eventloop import get_async_backend
from anyio.abc import ByteReceiveStream, Process
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from filegate.errors import PathError
from filegate.fsio import platform
from filegate.fsio.safeopen import names_a_descriptor, open_directory, open_regular
from filegate.policy.escape import escape, escape_text, has_unsafe_text
from filegate.policy.secrets import skipped_secrets_warning
from filegate.tools import grep_fifo, grep_ignores, grep_sandbox
from filegate.tools.describe import load_description
from filegate.tools.grep_ignores import VCS_DIRS, IgnorePlan
from filegate.tools.outcome import Outcome, Reporter, ToolEnv, ToolSpec

# -A/-B/-C above this mean "the whole file" anyway; rg refuses what overflows its u64.
MAX_CONTEXT_LINES = 2**32

# Kimi's grep_local.py: default page, output caps, rg buffer and timeout.
HEAD_LIMIT = 250
MAX_OUTPUT_CHARS = 50_000
MAX_LINE_CHARS = 2000
RG_MAX_BUFFER = 20_000_000
RG_TIMEOUT_S = 20.0
# rg's address space: ample for a search of the kernel tree (~60 MiB), and an ignore file or a
# line without end runs into it instead of the machine's memory.
RG_MEMORY_LIMIT = 512 << 20
# rg's complaints are counted, never shown: this much is kept to count them.
MAX_STDERR_BYTES = 64_000
# rg's --context-separator (given as "\x00"): the row between two groups of context lines.
CONTEXT_SEP = b"\0"
# Where a child can enter a directory by the fd its parent opened (Linux): the search runs in
# the very directory that was checked, even if a symlink is swapped into its path afterwards.
PROC_FD = "/proc/self/fd"
# rg's name for standard input, where a single file is searched from an fd opened here.
RG_STDIN = b"<stdin>"
# Linux's MAX_ARG_STRLEN: the longest single command-line argument exec accepts (E2BIG beyond).
MAX_ARG_BYTES = 128 << 10
# rg's output is parsed while rg runs, in batches of about this many bytes.
PARSE_BATCH = 64 << 10
# rg writes one block per file, often a few hundred bytes: after a read shorter than
# SMALL_READ, wait so the next read takes several (1,800 reads became ~300 on the bench's
# content search, saving ~80 ms of event-loop time). The wait grows with the search's age
# (1/COALESCE_SHARE of it, from COALESCE_MIN_S up to COALESCE_MAX_S): a long search is read in
# a few dozen large reads (files_with_matches over the kernel: ~330 wake-ups became ~90, about
# 30 ms less event-loop CPU), and rg's end is seen at most 1 % of its run time late.
SMALL_READ = 16 << 10
PIPE_BYTES = 1 << 20  # the pipe's size (Linux's default pipe-max-size for a user)
PIPE_READ = PIPE_BYTES  # one read takes what the pipe holds
COALESCE_MIN_S = 0.002
COALESCE_MAX_S = 0.02
COALESCE_SHARE = 100
# How often a long search tells a client that sent a progress token how far it got.
PROGRESS_EVERY_S = 1.0

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
    """What rg searches, opened without following symlinks, and how its paths are printed."""

    shown: str
    cwd: Path  # the searched directory (a single file: its parent)
    arg: str  # what rg searches: "." in the pinned directory, or "-" for the file on stdin
    single_file: bool
    fd: int  # opened without following symlinks: the directory rg runs in, or the file it reads
    prefix: str  # printed before each path rg reports: the searched directory, workdir-relative
    name: str = ""  # a single file's printed path, in place of rg's "<stdin>"
    sensitive: bool = False  # a single file that may hold secrets: searched, never shown

    def close(self) -> None:
        os.close(self.fd)


def _target(params: GrepParams, env: ToolEnv) -> _Target:
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
        return _Target(rp.shown, rp.real, ".", False, open_directory(rp), prefix)
    if stat.S_ISREG(st.st_mode):
        fd = open_regular(rp)
        return _Target(rp.shown, rp.real.parent, "-", True, fd, "", ws.display(rp.real), rp.sensitive)
    raise PathError(f"`{rp.shown}` is not a file.")


def _rg_cwd(target: _Target) -> str:
    """rg's working directory: the pinned directory itself, through /proc where there is one."""
    if target.single_file:
        return "/"  # rg reads the file on stdin and needs no directory
    if os.name == "nt":  # pragma: no cover - Windows: the held handle keeps the path its own
        return str(target.cwd)
    if platform.has_proc():
        return f"{PROC_FD}/{target.fd}"
    return "/"  # no /proc (macOS): rg starts from the pinned fd itself (_from_pinned_directory)


def _pinned_by_cwd(target: _Target) -> bool:
    """rg's working directory (_rg_cwd) is already the pinned directory, or none is needed."""
    return target.single_file or platform.has_proc() or os.name == "nt"


def _from_pinned_directory(cmd: list[str], target: _Target) -> tuple[list[str], list[int]]:
    """Without /proc (macOS) a directory fd cannot be named as a working directory, and the
    checked path could be swapped for a symlink before rg starts: a short Python trampoline
    fchdir()s to the inherited fd, then execs the command, so rg searches the pinned directory."""
    if _pinned_by_cwd(target):
        return cmd, []
    # Exit 2 (rg's "error") if it cannot: never 1, which would read as "no matches".
    code = (
        "import os,sys\n"
        "try: os.fchdir(int(sys.argv[1])); os.execvp(sys.argv[2], sys.argv[2:])\n"
        "except BaseException: os._exit(2)"
    )
    return [sys.executable, "-c", code, str(target.fd), *cmd], [target.fd]


def _rg_args(rg: str, params: GrepParams, target: _Target, ignore_args: Sequence[str] = ()) -> list[str]:
    mode = params.output_mode
    args = [rg, "--no-config", "--hidden", "--null", "--with-filename", "--no-heading",
            "--color", "never"]  # fmt: skip
    args += ignore_args
    if params.include_ignored or target.single_file:
        args.append("--no-ignore")  # the rules file of ignore_args (secrets left out) still holds
    if params.ignore_case:
        args.append("--ignore-case")
    if params.multiline:
        args += ["--multiline", "--multiline-dotall"]
    if mode == "content":
        # Line numbers always come from rg: they tell a match (':') from context ('-'). The
        # context separator is a lone NUL: no record of a file can be that (names are never
        # empty), so a file named "--" cannot pass for a separator.
        args += ["--line-number", "--max-columns", str(MAX_LINE_CHARS), "--max-columns-preview",
                 "--context-separator", "\\x00"]  # fmt: skip
        for flag, value in (("--before-context", params.before_context),
                            ("--after-context", params.after_context),
                            ("--context", params.context)):  # fmt: skip
            if value is not None:  # rg parses a u64: more lines than any file has is the same
                args += [flag, str(min(value, MAX_CONTEXT_LINES))]
    else:
        args += ["--max-columns", "500"]
    if params.glob:
        args += ["--glob", params.glob]
    # After the caller's glob: a later glob wins in rg, so `glob: "*"` cannot whitelist `.git/`.
    for vcs in VCS_DIRS:
        args += ["--glob", f"!{vcs}"]
    if params.type:
        args += ["--type", params.type]
    if mode == "files_with_matches":
        args.append("--files-with-matches")
    elif mode == "count_matches":
        args.append("--count-matches")
    args += ["--", params.pattern, target.arg]
    return args


class _RgOutput:
    """rg's stdout while rg runs, read and parsed by one worker thread from a pipe of our own
    (blocking reads, no event-loop wake-up per write of rg's: files_with_matches over the
    kernel cost ~80 ms of event-loop CPU for ~900 loop turns). Kept in chunks (at most
    RG_MAX_BUFFER bytes) that the parser takes in batches while rg still writes (rg's own wall
    time hides the parsing: 11,000 matching files take ~60 ms to check and date)."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.size = 0
        self.overflow = False  # rg wrote more than RG_MAX_BUFFER: the rest was dropped
        self.ended = threading.Event()  # the pump has stopped: the parser is ours again

    @property
    def empty(self) -> bool:
        return self.size == 0

    def pump(self, fd: int, parser: _Parser) -> None:
        """Read ``fd`` to its end (closing it) and parse as it comes (a worker thread). A
        killed rg ends it: its write end closes."""
        start = time.monotonic()
        try:
            while chunk := os.read(fd, PIPE_READ):
                take = chunk[: max(RG_MAX_BUFFER - self.size, 0)]
                if take:
                    self.chunks.append(take)
                    self.size += len(take)
                if len(take) < len(chunk):
                    self.overflow = True
                # rg writes a block per file (a few hundred bytes): parse in batches.
                if self.size - parser.fed_bytes >= PARSE_BATCH:
                    parser.feed_from(self.chunks)
                if len(chunk) < SMALL_READ:  # let rg's small writes pile up: fewer reads
                    age = time.monotonic() - start
                    time.sleep(min(max(age / COALESCE_SHARE, COALESCE_MIN_S), COALESCE_MAX_S))
        finally:
            os.close(fd)
            self.ended.set()

    def start(self, fd: int, parser: _Parser) -> None:
        """The pump in a thread of its own, started now: from here on it owns ``fd``."""
        threading.Thread(target=self.pump, args=(fd, parser), name="filegate-rg-output", daemon=True).start()

    async def wait(self, reporter: Reporter) -> None:
        """Until the pump ends; progress said meanwhile. Cancelled, it returns at once (rg is
        killed then, which ends the pump; _run_rg waits for that)."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._report, reporter)
            await anyio.to_thread.run_sync(self.ended.wait, abandon_on_cancel=True)
            tg.cancel_scope.cancel()

    async def _report(self, reporter: Reporter) -> None:
        while True:
            await anyio.sleep(PROGRESS_EVERY_S)
            await reporter.progress(self.size, None, f"{self.size} bytes of results so far")


def _widen(pipe_fd: int) -> None:
    """Room for PIPE_BYTES of rg's output (Linux; else the default 64 KiB): rg must not wait
    for the pump, which sleeps between small reads (with 64 KiB, rg blocked on a full pipe
    and the content search of the bench ran ~1.5x raw rg instead of ~1.1x)."""
    with contextlib.suppress(OSError, AttributeError, ImportError):
        import fcntl  # POSIX only

        fcntl.fcntl(pipe_fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)


async def _read_stderr(stream: ByteReceiveStream, into: bytearray) -> None:
    """rg's complaints, kept (bounded) to be counted and classified, never shown as they are:
    they can quote the lines of any file rg opened."""
    async for chunk in stream:
        if len(into) < MAX_STDERR_BYTES:
            into.extend(chunk[: MAX_STDERR_BYTES - len(into)])


@dataclass
class _RgRun:
    output: _RgOutput
    stderr: bytes = b""
    returncode: int | None = None
    timed_out: bool = False
    fifo: str | None = None  # rg was stopped waiting on this FIFO ("" when unnamed)


@functools.cache
def _shell() -> str | None:
    return shutil.which("sh", path="/bin:/usr/bin")


def _under_memory_limit(args: list[str]) -> list[str]:
    """rg's command line, started through `sh -c 'ulimit -v …; exec rg …'` so the cap holds from
    rg's first instruction (a preexec hook would cost a fork of this whole process): an ignore
    file or a line without end runs into the cap, not into the machine's memory."""
    sh = _shell()
    if sh is None:  # pragma: no cover - every POSIX system has /bin/sh
        return args
    return [sh, "-c", f'ulimit -v {RG_MEMORY_LIMIT // 1024}; exec "$@"', "rg", *args]


def _limit_memory(pid: int) -> None:
    """The same cap once more on the running process (rg itself, after exec; or where no shell
    set it)."""
    with contextlib.suppress(OSError, ValueError, AttributeError, ImportError):
        import resource  # POSIX only: on Windows there is no such cap to set

        resource.prlimit(pid, resource.RLIMIT_AS, (RG_MEMORY_LIMIT, RG_MEMORY_LIMIT))


async def _start_rg(
    args: list[str],
    target: _Target,
    pass_fds: Sequence[int],
    read_files: Sequence[str],
    sandboxed: bool = True,
    stdout: int = subprocess.PIPE,
) -> Process:
    """rg started in its sandbox (grep_sandbox: it reads nothing outside the searched
    directory), or as before where there is none."""
    sandbox = None
    if sandboxed:
        dirs = [] if target.single_file else [target.fd]
        sandbox = grep_sandbox.build(args[0], dirs, read_files)
    if sandbox is None:
        cmd, pinned = _from_pinned_directory(_under_memory_limit(args), target)
        proc = await anyio.open_process(
            cmd,
            cwd=_rg_cwd(target),
            stdin=target.fd if target.single_file else None,
            stdout=stdout,
            stderr=-1,
            start_new_session=True,
            pass_fds=[*pass_fds, *pinned],
        )
        if not pinned:  # else the trampoline is this pid until it execs: the shell's ulimit caps rg
            _limit_memory(proc.pid)
        return proc
    try:
        # anyio.open_process takes no preexec_fn; its backend passes it on to Popen.
        return await get_async_backend().open_process(
            args,
            cwd=_rg_cwd(target),
            stdin=target.fd if target.single_file else None,
            stdout=stdout,
            stderr=-1,
            start_new_session=True,
            pass_fds=pass_fds,
            # Without /proc the child fchdir()s to the pinned directory itself (no trampoline).
            preexec_fn=sandbox.child_setup(RG_MEMORY_LIMIT, None if _pinned_by_cwd(target) else target.fd),
        )
    except subprocess.SubprocessError as exc:  # the child could not enter it (e.g. seccomp)
        grep_sandbox.disable(f"the child refused it ({exc})")
        return await _start_rg(args, target, pass_fds, read_files, sandboxed=False, stdout=stdout)
    finally:
        sandbox.close()


async def _run_rg(
    args: list[str],
    target: _Target,
    env: ToolEnv,
    parser: _Parser,
    pass_fds: Sequence[int],
    read_files: Sequence[str] = (),
) -> _RgRun:
    run = _RgRun(_RgOutput())
    err = bytearray()
    out_r, out_w = os.pipe()  # rg's stdout, read by a worker thread (_RgOutput.pump)
    _widen(out_w)
    try:
        proc = await _start_rg(args, target, pass_fds, read_files, stdout=out_w)
    except BaseException:
        os.close(out_r)
        raise
    finally:
        os.close(out_w)
    try:
        run.output.start(out_r, parser)
    except BaseException:
        os.close(out_r)
        proc.kill()
        with anyio.CancelScope(shield=True):
            await proc.aclose()
        raise
    try:
        assert proc.stderr is not None
        with anyio.move_on_after(RG_TIMEOUT_S) as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_read_stderr, proc.stderr, err)
                watching = anyio.CancelScope()
                if platform.has_proc():
                    tg.start_soon(_watch_fifo, proc, run, watching)
                await run.output.wait(env.reporter)
                watching.cancel()
            run.returncode = await proc.wait()
        run.timed_out = scope.cancelled_caught
    finally:
        with anyio.CancelScope(shield=True):
            if proc.returncode is None:
                proc.kill()
            await proc.aclose()  # reaped and its pipes closed now, not by the GC later
            if not run.output.ended.is_set():  # cancelled: the pump sees rg's end, then stops
                await anyio.to_thread.run_sync(run.output.ended.wait)
    run.stderr = bytes(err)
    return run


async def _watch_fifo(proc: Process, run: _RgRun, scope: anyio.CancelScope) -> None:
    """Stop rg the moment it waits on a FIFO swapped in after its walk (grep_fifo)."""
    with scope:
        await anyio.sleep(grep_fifo.WATCH_FROM_S)
        while proc.returncode is None:
            found = grep_fifo.fifo_waiter(proc.pid)  # a few small /proc reads
            if found is not None:
                run.fifo = found
                proc.kill()
                return
            await anyio.sleep(grep_fifo.WATCH_EVERY_S)


TRUNCATED = "[...truncated]"


def _cut_line(line: str) -> str:
    """A line over MAX_LINE_CHARS cut so that it is MAX_LINE_CHARS long, marker included
    (Kimi's ToolResultBuilder cuts so)."""
    if len(line) <= MAX_LINE_CHARS:
        return line
    return line[: MAX_LINE_CHARS - len(TRUNCATED)] + TRUNCATED


# A content row that stands between two groups of context lines ("--" when shown).
_GROUP_BREAK = None
# (shown path, rg's "LINE:text" / "LINE-text"), a line said whole, or a group break.
_Row = tuple[str, bytes] | str | None


@dataclass
class _Parsed:
    """The search's results in their final, stable order; content rows formatted only when shown."""

    rows: list[_Row] | None = None  # content mode
    lines: list[str] = field(default_factory=list)  # the other modes
    skipped: list[str] = field(default_factory=list)  # names of the files that may hold secrets
    total_matches: int | None = None
    files: int | None = None

    @property
    def total(self) -> int:
        return len(self.rows) if self.rows is not None else len(self.lines)


class _Parser:
    """rg's output → results (Kimi's formats, SPEC §4 Grep), fed in order as it arrives.

    Every record starts with a file name that ends at the first NUL: a name is never split at a
    line break, so a name holding "\\n" cannot attribute text to another file. A name goes
    through :func:`escape` (undecodable bytes as ``\\xNN``, which the resolver takes back).
    """

    def __init__(self, params: GrepParams, target: _Target, env: ToolEnv) -> None:
        self.params, self.target = params, target
        self.mode = params.output_mode
        self.sep = b"\0" if self.mode == "files_with_matches" else b"\n"
        self.fed = 0  # chunks consumed so far
        self.fed_bytes = 0
        self.rest = bytearray()
        self.pending = b""  # the first part of a name that holds a line break
        self.dated: list[tuple[int, str]] = []  # files_with_matches: (-mtime_ns, shown path)
        self.counts: list[tuple[str, int]] = []
        self.blocks: dict[str, list[bytes | str | None]] = {}  # content: shown path → its rows
        self.block: list[bytes | str | None] | None = None  # the rows of the file being read
        self.block_path: bytes | None = None
        base = str(target.cwd)
        secrets = env.workspace.secrets
        prefix = target.prefix

        # os.fsdecode's own steps, bound once: it runs for every file rg names.
        encoding, errors = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
        is_sensitive = secrets.is_sensitive

        # Not cached: each name comes once (content rows ask once per file, see _rows).
        def path_of(raw: bytes) -> tuple[str, bool]:
            """A name as rg printed it → (shown path, sensitive)."""
            if target.single_file and raw == RG_STDIN:
                return target.name, target.sensitive  # shown by the workspace: escaped once
            rel = (raw[2:] if raw.startswith(b"./") else raw).decode(encoding, errors)
            return prefix + escape(rel), is_sensitive(f"{base}/{rel}")  # the prefix is escaped

        self.path_of = path_of

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
            self._records(block.split(self.sep)[:-1])

    def finish(self, chunks: list[bytes], overflow: bool) -> _Parsed:
        self.feed_from(chunks)
        if self.rest and not overflow:  # no last separator; cut off on overflow
            self._records([bytes(self.rest)])
        self.rest.clear()
        if self.pending:
            self._said_whole(self.pending)
        if self.mode == "files_with_matches":
            self.dated.sort()  # newest first, ties by path
            return _Parsed(lines=[p for _, p in self.dated])
        if self.mode == "count_matches":
            self.counts.sort()
            total = sum(n for _, n in self.counts)
            return _Parsed(
                lines=[f"{p}:{n}" for p, n in self.counts], total_matches=total, files=len(self.counts)
            )
        return _Parsed(rows=self._ordered_rows())

    def _said_whole(self, row: bytes) -> None:
        """A row without a NUL at the end of the output: rg's "binary file matches" note on a
        file searched alone (a directory search skips binary files without a word)."""
        if not (self.target.single_file and row.startswith(RG_STDIN + b": ")):
            return
        # Below, a file that may hold secrets and that rg printed all the same (a tree's `!`
        # rule took it back in, or the walk ran out of time) is dropped and not counted, since
        # counting it would tell that it matched; the files left out are counted from the walk.
        shown, sensitive = self.path_of(RG_STDIN)
        if not sensitive and self.mode == "content":
            note = escape_text(row[len(RG_STDIN) + 2 :].decode("utf-8", errors="replace"))
            self.blocks.setdefault(shown, []).append(f"{shown}: {note}")

    def _ordered_rows(self) -> list[_Row]:
        """Files by path, lines in file order; with context, "--" between files as rg does."""
        rows: list[_Row] = []
        between = any(v is not None for v in (self.params.before_context, self.params.after_context,
                                              self.params.context))  # fmt: skip
        for path in sorted(self.blocks):
            block = self.blocks[path]
            while block and block[-1] is None:
                block.pop()
            start = 0
            while start < len(block) and block[start] is None:
                start += 1
            if start == len(block):
                continue
            if rows and between:
                rows.append(_GROUP_BREAK)
            rows.extend(r if r is None or isinstance(r, str) else (path, r) for r in block[start:])
        return rows

    def _records(self, records: list[bytes]) -> None:
        if self.mode == "files_with_matches":
            self._paths(records)
        else:
            self._rows(records)

    def _paths(self, records: list[bytes]) -> None:
        target, path_of, dated = self.target, self.path_of, self.dated.append
        if target.single_file:
            for raw in records:
                if raw:
                    shown, sensitive = path_of(raw)
                    if not sensitive:  # dropped, not counted (see _said_whole)
                        dated((-_mtime_ns(target, raw), shown))
            return
        # _mtime_ns inlined: this loop runs for every matching file (11,063 on the kernel).
        fd: int | None = target.fd
        lstat = os.stat
        if not platform.has_dir_fd():  # Windows: by path (the pinned directory cannot move there)
            fd, lstat = None, functools.partial(_stat_in, os.fsencode(target.cwd))
        for raw in records:
            if not raw:
                continue
            shown, sensitive = path_of(raw)
            if sensitive:
                continue
            try:
                mtime = lstat(raw, dir_fd=fd).st_mtime_ns  # in the pinned directory rg searched
            except OSError:
                mtime = 0
            dated((-mtime, shown))

    def _rows(self, rows: list[bytes]) -> None:
        counting = self.mode == "count_matches"
        for row in rows:
            if self.pending:  # the rest of a name that holds a line break
                row = self.pending + b"\n" + row
                self.pending = b""
            if row == CONTEXT_SEP:
                if self.block and self.block[-1] is not None:
                    self.block.append(None)
                continue
            raw, nul, rest = row.partition(b"\0")
            if not nul:
                self.pending = row  # a name cut by its own line break: the record goes on
                continue
            if counting:
                shown, sensitive = self.path_of(raw)
                if not sensitive:
                    self.counts.append((shown, int(rest or b"0")))
                continue
            if raw != self.block_path:
                self.block_path = raw
                shown, sensitive = self.path_of(raw)
                if sensitive:
                    self.block = None
                else:
                    self.block = self.blocks.setdefault(shown, [])
                    if self.block and self.block[-1] is not None:
                        self.block.append(None)  # the same file again (never seen from rg)
            if self.block is not None:
                self.block.append(rest)


def _format_row(row: _Row, numbered: bool) -> str:
    if row is None:
        return "--"
    if isinstance(row, str):
        return row
    path, raw = row
    text = raw.decode("utf-8", errors="replace")
    digits = len(text) - len(text.lstrip("0123456789"))
    number, sep, body = text[:digits], text[digits : digits + 1], text[digits + 1 :]
    if body.endswith("\r"):  # a CRLF file's line end
        body = body[:-1]
    if has_unsafe_text(body):  # a CR, an escape sequence, a bidi override: shown escaped
        body = escape_text(body)
    if numbered and number:
        return f"{path}{sep}{number}{sep}{body}"
    return f"{path}{sep}{body}"


def _mtime_ns(target: _Target, raw: bytes) -> int:
    try:
        if target.single_file:
            return os.fstat(target.fd).st_mtime_ns
        if not platform.has_dir_fd():
            return _stat_in(os.fsencode(target.cwd), raw).st_mtime_ns
        return os.stat(raw, dir_fd=target.fd).st_mtime_ns  # in the pinned directory rg searched
    except OSError:
        return 0


def _stat_in(top: bytes, raw: bytes, dir_fd: None = None) -> os.stat_result:
    """``os.stat(raw, dir_fd=…)`` where there is no ``dir_fd`` (Windows): by the path of the
    searched directory, which its open handle keeps from being moved or replaced there."""
    return os.stat(os.path.join(top, raw))


def _page_lines(parsed: _Parsed, params: GrepParams) -> tuple[Iterator[str], int]:
    """The page asked for (offset, then head_limit): its lines, formatted as they are taken
    (a page of all 500,000 rows is formatted only as far as the output has room), and its length."""
    # Clamped to the results first: a JSON integer has no bound, islice's indices do
    # (offset=2**63-1 with a head_limit raised ValueError).
    total = parsed.total
    start = min(params.offset, total)
    end = min(params.offset + params.head_limit, total) if params.head_limit else total
    if parsed.rows is None:
        page = parsed.lines[start:end]
        return iter(page), len(page)
    rows = itertools.islice(parsed.rows, start, end)
    length = end - start
    return (_format_row(r, params.line_number) for r in rows), length


def _fit_lines(lines: Iterable[str], room: int) -> tuple[list[str], bool]:
    """Whole lines (each cut to 2000 characters, marker included) while they fit in ``room``
    characters, and whether any of them was cut."""
    out: list[str] = []
    used = -1  # n lines take n - 1 line breaks
    cut_any = False
    for whole in lines:
        line = _cut_line(whole)
        if used + len(line) + 1 > room:
            break
        cut_any = cut_any or line is not whole
        out.append(line)
        used += len(line) + 1
    return out, cut_any


def _unreadable(stderr: bytes) -> int:
    """How many entries rg could not read (one complaint per line, each starting with "rg: ")."""
    return sum(1 for line in stderr.splitlines() if line.startswith(b"rg: "))


def _failure(stderr: bytes, params: GrepParams, returncode: int | None) -> str:
    """Why rg refused to search: said from the caller's own arguments, never rg's text about a
    file (which can quote the file's lines)."""
    text = stderr.decode("utf-8", errors="replace")
    if text.startswith("rg: regex parse error:"):
        return "Failed to grep. Error: " + _regex_error(text)
    if text.startswith("rg: compiled regex exceeds size limit"):
        # About the caller's pattern only (rg says it before it opens any file).
        limit = text.strip().splitlines()[0].rsplit(" ", 1)[-1]
        return (
            f"Failed to grep. Error: the pattern is too large: its compiled regex exceeds size limit of "
            f"{limit} bytes. Use a simpler pattern (fewer or smaller repetitions)."
        )
    if text.startswith("rg: unrecognized file type:") and params.type:
        return (
            f"Failed to grep. Error: unknown file type `{escape(params.type)}` "
            "(rg --type-list names them: py, rust, js, ts, go, c, …)."
        )
    if text.startswith("rg: error parsing glob") and params.glob and params.glob in text:
        reason = text.strip().splitlines()[0].rsplit(": ", 1)[-1]
        return f"Failed to grep. Error: invalid glob `{escape(params.glob)}`: {reason}."
    n = _unreadable(stderr)
    said = f" ({_unreadable_sentence(n)})" if n else ""
    return f"Failed to grep. Error: ripgrep failed with exit status {returncode}{said}."


def _regex_error(text: str) -> str:
    """rg's regex error without the `(?:…)` it wraps every pattern in, caret moved to match."""
    lines = text.rstrip("\n").split("\n")[1:]
    out = ["regex parse error:"]
    echo = True
    for i, line in enumerate(lines):
        if line.startswith("error:"):
            out.append(line)
            echo = False
            continue
        if echo and i == 0 and line.startswith("    (?:"):
            line = "    " + line[7:]
        elif line.startswith("       ") and set(line.strip()) <= {"^"}:
            line = "    " + line[7:]  # the caret line, moved with the pattern
        out.append(line)
    # The wrapper's closing parenthesis ends the last line of the echoed pattern.
    for j in range(len(out) - 1, 0, -1):
        if out[j].startswith("    ") and not set(out[j].strip()) <= {"^"} and out[j].endswith(")"):
            out[j] = out[j][:-1]
            break
    return "\n".join(out)


def _fifo_sentence(fifo: str, env: ToolEnv) -> str:
    """What the caller is told when rg was stopped at a FIFO (its name only if inside)."""
    named = ""
    if fifo and env.workspace.contains(fifo):
        named = f" (`{env.workspace.display(Path(fifo))}`)"
    return (
        f"The search stopped early: a file was replaced by a FIFO while it ran{named}, and "
        "filegate never reads one. Partial results returned; search again for the rest."
    )


def _unreadable_sentence(n: int) -> str:
    return f"{n} file{'s' if n != 1 else ''} or folder{'s' if n != 1 else ''} could not be read"


async def grep(params: GrepParams, env: ToolEnv) -> Outcome:
    rg = find_rg()
    if rg is None:
        return Outcome.error(
            "Failed to grep. Error: ripgrep (rg) is not installed beside filegate; reinstall "
            "filegate (it depends on the `ripgrep` wheel).",
            "Failed to grep",
        )
    target = _target(params, env)
    ignores: IgnorePlan | None = None
    try:
        if target.single_file and target.sensitive:  # not searched: nothing said depends on it
            parsed = _Parsed(rows=None if params.output_mode != "content" else [])
            if params.output_mode == "count_matches":
                parsed.total_matches, parsed.files = 0, 0
            parsed.skipped = [target.name.rsplit("/", 1)[-1]]  # escaped once already
            return _result(parsed, params, env, _RgRun(_RgOutput(), returncode=1), 0)
        if not target.single_file:
            matcher = env.workspace.secrets
            secrets = grep_ignores.Secrets(
                str(target.cwd), matcher.is_sensitive, hash(matcher.patterns), matcher.patterns
            )
            walk = functools.partial(
                grep_ignores.plan,
                os.dup(target.fd),
                target.cwd,
                env.workspace.dirs,
                secrets,
                params.include_ignored,
            )
            ignores = await anyio.to_thread.run_sync(walk, abandon_on_cancel=True)
        parser = _Parser(params, target, env)
        args = _rg_args(rg, params, target, ignores.args if ignores else ())
        pass_fds = [ignores.fd] if ignores and ignores.fd is not None else []
        try:
            temp = [ignores.temp] if ignores and ignores.temp else []
            run = await _run_rg(args, target, env, parser, pass_fds, temp)
        except OSError as exc:  # rg could not be started
            return Outcome.error(_spawn_failure(exc), "Failed to grep")
        if run.returncode not in (0, 1, None) and run.output.empty:
            return Outcome.error(_failure(run.stderr, params, run.returncode), "Failed to grep")
        if run.timed_out and run.output.empty:
            return Outcome.error(
                f"Grep timed out after {RG_TIMEOUT_S:g}s. Try a more specific path or pattern.",
                "Grep timed out",
            )
        parsed = await anyio.to_thread.run_sync(parser.finish, run.output.chunks, run.output.overflow)
        in_scope = await _in_scope(rg, params, ignores.sensitive) if ignores else []
        parsed.skipped = [escape(rel.rsplit("/", 1)[-1]) for rel in in_scope]
    finally:
        target.close()
        if ignores is not None:
            ignores.close()
    return _result(parsed, params, env, run, ignores.unsafe if ignores else 0)


async def _in_scope(rg: str, params: GrepParams, sensitive: Sequence[str]) -> list[str]:
    """The sensitive files the search would have looked at: those the caller's own ``glob`` and
    ``type`` let through (issue 24.5), all of them whether they match or not (what is said of
    them never depends on their content, SPEC §2.6). rg itself decides, with the same filters,
    over empty stand-ins of the same names in a scratch directory: explicit paths bypass rg's
    filters, and rg's glob and type rules are rg's alone."""
    if not sensitive or not (params.glob or params.type):
        return list(sensitive)
    with tempfile.TemporaryDirectory(prefix="filegate-scope-") as scratch:
        for rel in sensitive:
            stand_in = os.path.join(scratch, rel)
            os.makedirs(os.path.dirname(stand_in), exist_ok=True)
            with open(stand_in, "wb"):
                pass
        args = [rg, "--no-config", "--files", "--hidden", "--no-ignore", "--null"]
        if params.glob:
            args += ["--glob", params.glob]
        for vcs in VCS_DIRS:
            args += ["--glob", f"!{vcs}"]
        if params.type:
            args += ["--type", params.type]
        try:
            done = await anyio.run_process([*args, "--", "."], cwd=scratch, check=False)
        except OSError:
            return list(sensitive)  # rg could not start: say every one rather than none
        if done.returncode not in (0, 1):
            return list(sensitive)
    found = {os.fsdecode(name).removeprefix("./") for name in done.stdout.split(b"\0") if name}
    return [rel for rel in sensitive if rel in found]


def _result(parsed: _Parsed, params: GrepParams, env: ToolEnv, run: _RgRun, unsafe_ignores: int) -> Outcome:
    total = parsed.total
    page, page_length = _page_lines(parsed, params)
    notes: list[str] = []  # after the paging sentence
    if parsed.skipped:
        notes.append(skipped_secrets_warning(parsed.skipped))
    if unsafe_ignores:
        notes.append(
            f"{unsafe_ignores} .gitignore file(s) were not used: they are symlinks, not regular files "
            "or larger than 1 MiB"
        )
    if run.output.overflow:
        notes.append("Output exceeded buffer limit. Some results omitted.")
    if run.timed_out:
        notes.append(f"Grep timed out after {RG_TIMEOUT_S:g}s. Partial results returned.")
    if run.fifo is not None:
        notes.append(_fifo_sentence(run.fifo, env))
    unreadable = _unreadable(run.stderr) if run.returncode == 2 else 0
    if unreadable:
        notes.append(_unreadable_sentence(unreadable))
    lead: list[str] = []
    if params.output_mode == "count_matches":
        lead.append(f"Found {parsed.total_matches} total occurrences across {parsed.files} files.")
    if total == 0:
        lead.insert(0, "No matches found")
    elif params.offset >= total:
        lead.insert(
            0,
            f"No results at offset {params.offset}: the search has {total} result line(s) in all, "
            f"at offsets 0 to {total - 1}",
        )
    # The output, then the summary, fit the client's budget (Kimi cuts at 100,000 characters):
    # fewer whole lines, and the summary with where to continue always whole.
    reserve = len(_join(lead + notes)) + 200  # room for the sentences still to come
    room = min(MAX_OUTPUT_CHARS, env.result_budget - reserve)
    shown, line_cut = _fit_lines(page, max(room, 0))
    # Kimi's builder says so when it cut anything, a long line included (issue 24.3).
    cut = len(shown) < page_length or line_cut
    next_offset = None
    paging: list[str] = []
    if shown and params.offset + len(shown) < total:
        next_offset = params.offset + len(shown)
        paging.append(
            f"Results truncated to {len(shown)} lines (total: {total}). Use offset={next_offset} to see more."
        )
    if cut:
        paging.append("Output is truncated to fit in the message.")
    message = _join(lead + paging + notes)
    return Outcome(
        output="\n".join(shown),
        message=message,
        skipped_sensitive=len(set(parsed.skipped)),  # as the sentence counts them: by name
        timed_out=run.timed_out,
        partial=cut or run.output.overflow,
    )


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


SPEC = ToolSpec(
    name="Grep",
    title="Search file contents",
    description=load_description("grep", HEAD_LIMIT=HEAD_LIMIT),
    params=GrepParams,
    handler=grep,
    read_only=True,
)
