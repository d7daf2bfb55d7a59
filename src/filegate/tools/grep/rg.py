"""Grep's ripgrep: its command line, started in its sandbox and under its memory cap in the
directory that was checked (pinned by its fd), its output read by a worker thread and fed to
the parser while it runs, stopped at its timeout (which also bounds a wait on a FIFO swapped
into the tree after rg listed it: rg skips a FIFO its walk sees, but cannot refuse one at open).
Also what rg's refusals say (worded from the caller's own arguments, never rg's text about a
file), and which sensitive files the caller's glob and type filters would have searched."""

from __future__ import annotations

import contextlib
import functools
import os
import select
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream, Process

from filegate.fsio import platform
from filegate.policy.escape import escape
from filegate.tools.grep import sandbox as landlock
from filegate.tools.grep.params import MAX_LINE_CHARS, GrepParams, Target
from filegate.tools.grep.parse import Parser
from filegate.tools.outcome import Outcome, Reporter, ToolEnv
from filegate.tools.search.ignores import VCS_DIRS

# -A/-B/-C above this mean "the whole file" anyway; rg refuses what overflows its u64.
MAX_CONTEXT_LINES = 2**32

# Kimi's grep_local.py: rg's output buffer and timeout.
RG_MAX_BUFFER = 20_000_000
RG_TIMEOUT_S = 20.0
# rg's address space: ample for a search of the kernel tree (~60 MiB), and an ignore file or a
# line without end runs into it instead of the machine's memory.
RG_MEMORY_LIMIT = 512 << 20
# rg's complaints are counted, never shown: this much is kept to count them.
MAX_STDERR_BYTES = 64_000
# rg writes one block per file, often a few hundred bytes: after a read shorter than
# SMALL_READ, wait so the next read takes several (each wake-up costs the event loop a pass).
# The wait grows with the search's age (1/COALESCE_SHARE of it, from COALESCE_MIN_S up to
# COALESCE_MAX_S), so a long search is read in a few dozen large reads; rg's exit cuts the wait
# short (its pidfd, where there is one). Gains: docs/ARCHITECTURE.md, "Speed devices".
SMALL_READ = 16 << 10
PIPE_BYTES = 1 << 20  # the pipe's size (Linux's default pipe-max-size for a user)
PIPE_READ = PIPE_BYTES  # one read takes what the pipe holds
COALESCE_MIN_S = 0.002
COALESCE_MAX_S = 0.02
COALESCE_SHARE = 100
# How often a long search tells a client that sent a progress token how far it got.
PROGRESS_EVERY_S = 1.0


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


def rg_cwd(target: Target) -> str:
    """rg's working directory: the pinned directory itself, through /proc where there is one."""
    if target.single_file:
        return "/"  # rg reads the file on stdin and needs no directory
    if os.name == "nt":  # pragma: no cover - Windows: the held handle keeps the path its own
        return str(target.cwd)
    if platform.has_proc():
        # The very directory that was checked, even if a symlink is swapped into its path since.
        return platform.proc_fd(target.fd)
    return "/"  # no /proc (macOS): rg starts from the pinned fd itself (from_pinned_directory)


def _pinned_by_cwd(target: Target) -> bool:
    """rg's working directory (rg_cwd) is already the pinned directory, or none is needed."""
    return target.single_file or platform.has_proc() or os.name == "nt"


def from_pinned_directory(cmd: list[str], target: Target) -> tuple[list[str], list[int]]:
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


def filter_args(params: GrepParams) -> list[str]:
    """rg's flags for which files a search looks at: the caller's glob and type, and the VCS
    folders left out. One list for the search and for the sensitive files said to be in its
    scope (grep._in_scope), so the two cannot drift apart."""
    args = ["--glob", params.glob] if params.glob else []
    # After the caller's glob: a later glob wins in rg, so `glob: "*"` cannot whitelist `.git/`.
    for vcs in VCS_DIRS:
        args += ["--glob", f"!{vcs}"]
    if params.type:
        args += ["--type", params.type]
    return args


def rg_args(rg: str, params: GrepParams, target: Target, ignore_args: Sequence[str] = ()) -> list[str]:
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
    args += filter_args(params)
    if mode == "files_with_matches":
        args.append("--files-with-matches")
    elif mode == "count_matches":
        args.append("--count-matches")
    args += ["--", params.pattern, target.arg]
    return args


class RgOutput:
    """rg's stdout while rg runs, read and parsed by one worker thread from a pipe of our own
    (blocking reads, no event-loop wake-up per write of rg's: files_with_matches over the
    kernel cost ~80 ms of event-loop CPU for ~900 loop turns). Kept in chunks (at most
    RG_MAX_BUFFER bytes) that the parser takes read by read while rg still writes (rg's own
    wall time hides the parsing: 11,000 matching files take ~60 ms to check and date)."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.size = 0
        self.overflow = False  # rg wrote more than RG_MAX_BUFFER: the rest was dropped
        self.ended = threading.Event()  # the pump has stopped: the parser is ours again

    @property
    def empty(self) -> bool:
        return self.size == 0

    def pump(self, fd: int, parser: Parser, exited: int | None = None) -> None:
        """Read ``fd`` to its end (closing it) and parse as it comes (a worker thread). A
        killed rg ends it: its write end closes. ``exited``: rg's pidfd (closed here too), which
        cuts the wait between two reads short when rg ends (its last output is read at once,
        not up to COALESCE_MAX_S later)."""
        start = time.monotonic()
        wait: Callable[[float], object] = time.sleep
        if exited is not None:
            # poll(), not select(): a busy server's descriptors go past FD_SETSIZE (1024),
            # which select() refuses ("filedescriptor out of range").
            poller = select.poll()
            poller.register(exited, select.POLLIN)

            def wait(seconds: float) -> object:
                return poller.poll(seconds * 1000.0)

        try:
            while chunk := os.read(fd, PIPE_READ):
                take = chunk[: max(RG_MAX_BUFFER - self.size, 0)]
                if take:
                    self.chunks.append(take)
                    self.size += len(take)
                if len(take) < len(chunk):
                    self.overflow = True
                # Each read parsed as it comes (the reads are coalesced below): at rg's end only
                # its last read is left to check and date, not a backlog of names.
                parser.feed_from(self.chunks)
                if len(chunk) < SMALL_READ:  # let rg's small writes pile up: fewer reads
                    age = time.monotonic() - start
                    wait(min(max(age / COALESCE_SHARE, COALESCE_MIN_S), COALESCE_MAX_S))
        finally:
            os.close(fd)
            if exited is not None:
                os.close(exited)
            self.ended.set()

    def start(self, fd: int, parser: Parser, pid: int | None = None) -> None:
        """The pump in a thread of its own, started now: from here on it owns ``fd``. ``pid``:
        rg's, to see its end through a pidfd where there is one (Linux)."""
        exited = None
        if pid is not None and hasattr(os, "pidfd_open"):
            with contextlib.suppress(OSError):
                exited = os.pidfd_open(pid)
        try:
            thread = threading.Thread(
                target=self.pump, args=(fd, parser, exited), name="filegate-rg-output", daemon=True
            )
            thread.start()
        except BaseException:
            if exited is not None:
                os.close(exited)
            raise

    async def wait(self, reporter: Reporter) -> None:
        """Until the pump ends; progress said meanwhile. Cancelled, it returns at once (rg is
        killed then, which ends the pump; run_rg waits for that)."""
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
class RgRun:
    output: RgOutput
    stderr: bytes = b""
    returncode: int | None = None
    timed_out: bool = False


@functools.cache
def _shell() -> str | None:
    return shutil.which("sh", path="/bin:/usr/bin")


def _under_memory_limit(args: list[str]) -> list[str]:
    """rg's command line, started through `sh -c 'ulimit -v …; exec rg …'`: the one place rg's
    memory cap is set, from its first instruction (a preexec hook would cost a fork of this
    whole process). An ignore file or a line without end runs into the cap, not into the
    machine's memory. Where there is no shell (Windows) there is no such cap to set."""
    sh = _shell()
    if sh is None:  # pragma: no cover - every POSIX system has /bin/sh
        return args
    return [sh, "-c", f'ulimit -v {RG_MEMORY_LIMIT // 1024}; exec "$@"', "rg", *args]


def _sandbox(rg: str, target: Target, read_files: Sequence[str]) -> landlock.Sandbox | None:
    """rg's Landlock sandbox (grep/sandbox.py), where rg can be started inside it: Linux with
    Landlock, rg pinned to the searched directory by its working directory (/proc), a shell
    for the memory cap and pidfds to await it (grep/sandbox.py). None elsewhere."""
    sh = _shell()
    if sh is None or not _pinned_by_cwd(target) or not hasattr(os, "pidfd_open"):
        return None
    return landlock.build(rg, [] if target.single_file else [target.fd], read_files, [sh])


async def start_rg(
    args: list[str],
    target: Target,
    pass_fds: Sequence[int],
    read_files: Sequence[str],
    stdout: int = subprocess.PIPE,
) -> Process:
    """rg started in its own session in the searched directory, under its memory cap. One way
    where Landlock exists: from a thread inside the sandbox (grep/sandbox.py; rg reads nothing
    outside the searched directory). One way elsewhere: a plain start, pinned to the directory
    by a trampoline where there is no /proc (from_pinned_directory)."""
    cmd = _under_memory_limit(args)
    stdin = target.fd if target.single_file else None
    sandbox = _sandbox(args[0], target, read_files)
    if sandbox is not None:
        try:
            return landlock.start(sandbox, cmd, rg_cwd(target), stdin, stdout, pass_fds)
        except landlock.Refused as exc:  # e.g. seccomp: nothing was started
            landlock.disable(f"the kernel refused it ({exc.strerror})")
        finally:
            sandbox.close()
    cmd, pinned = from_pinned_directory(cmd, target)
    return await anyio.open_process(
        cmd,
        cwd=rg_cwd(target),
        stdin=stdin,
        stdout=stdout,
        stderr=subprocess.PIPE,
        start_new_session=True,
        pass_fds=[*pass_fds, *pinned],
    )


async def run_rg(
    args: list[str],
    target: Target,
    env: ToolEnv,
    parser: Parser,
    pass_fds: Sequence[int],
    read_files: Sequence[str] = (),
) -> RgRun:
    run = RgRun(RgOutput())
    err = bytearray()
    out_r, out_w = os.pipe()  # rg's stdout, read by a worker thread (RgOutput.pump)
    _widen(out_w)
    try:
        proc = await start_rg(args, target, pass_fds, read_files, stdout=out_w)
    except BaseException:
        os.close(out_r)
        raise
    finally:
        os.close(out_w)
    try:
        run.output.start(out_r, parser, proc.pid)
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
                await run.output.wait(env.reporter)
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


async def sensitive_in_scope(exe: str, params: GrepParams, sensitive: Sequence[str]) -> list[str]:
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
        args = [exe, "--no-config", "--files", "--hidden", "--no-ignore", "--null", *filter_args(params)]
        try:
            done = await anyio.run_process([*args, "--", "."], cwd=scratch, check=False)
        except OSError:
            return list(sensitive)  # rg could not start: say every one rather than none
        if done.returncode not in (0, 1):
            return list(sensitive)
    found = {os.fsdecode(name).removeprefix("./") for name in done.stdout.split(b"\0") if name}
    return [rel for rel in sensitive if rel in found]


# --- what rg's refusals say ------------------------------------------------------------


def refusal(run: RgRun, params: GrepParams) -> Outcome | None:
    """The error of a run that gave no output: rg refused to search, or timed out."""
    if run.returncode not in (0, 1, None):
        return Outcome.error(_failure(run.stderr, params, run.returncode))
    if run.timed_out:
        return Outcome.error(f"Grep timed out after {RG_TIMEOUT_S:g}s. Try a more specific path or pattern.")
    return None


def unreadable(stderr: bytes) -> int:
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
    n = unreadable(stderr)
    said = f" ({unreadable_sentence(n)})" if n else ""
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


def unreadable_sentence(n: int) -> str:
    return f"{n} file{'s' if n != 1 else ''} or folder{'s' if n != 1 else ''} could not be read"
