"""A Landlock sandbox for rg: it may read only beneath the directory it searches (plus its own
binary and the shared libraries it maps), and write nothing.

Why: rg lists a directory, then opens each regular file by name. A local process that swaps
such a file for a symlink between the two made rg follow it out of the workspace
(tests/security/test_races.py). Under Landlock the open of the link's target outside the
searched directory fails (EACCES): rg reports it unreadable and prints nothing of it.

The ruleset is built in the parent (a few syscalls). rg is started from a new thread that has
entered the sandbox itself (``no_new_privs``, ``landlock_restrict_self``: both bind the calling
thread only), so the child inherits it with a plain vfork (a ``preexec_fn`` would fork this
whole process for every search). Where Landlock is missing (kernel < 5.13, not Linux, disabled,
or refused, e.g. under seccomp) rg runs as before; that is logged once at debug level, and a
search never fails because of it.

A garbage collection that happens to run in the sandboxed thread runs other objects'
finalizers there: one that opens, makes or removes a path would be refused. filegate has no
such finalizer (its temporary files are removed by explicit calls); closing descriptors and
writing to open ones are not governed by Landlock.
"""

from __future__ import annotations

import ctypes
import logging
import os
import platform
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from filegate.fsio.platform import proc_fd

log = logging.getLogger("filegate")

# Generic syscall numbers (x86_64, arm64, riscv64 and the other asm-generic ports alike).
_SYS_CREATE_RULESET = 444
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

EXECUTE = 1 << 0
READ_FILE = 1 << 2
READ_DIR = 1 << 3
_ABI1_ALL = (1 << 13) - 1  # execute, write, read, readdir, remove, make_* (ABI 1)
_REFER = 1 << 13  # ABI 2

# Where the dynamic loader finds the libraries rg maps (read and mapped executable).
_LIBRARY_DIRS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/lib32", "/usr/lib32")
_LOADER_FILES = ("/etc/ld.so.cache",)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_state: dict[str, object] = {}

T = TypeVar("T")


class Refused(OSError):
    """The kernel refused to enter the sandbox (e.g. under seccomp): nothing was started."""


def _libc() -> ctypes.CDLL:
    lib = _state.get("libc")
    if lib is None:
        lib = ctypes.CDLL(None, use_errno=True)
        _state["libc"] = lib
    assert isinstance(lib, ctypes.CDLL)
    return lib


def _syscall(*args: int | ctypes._Pointer[ctypes.Structure] | None) -> int:
    res = int(_libc().syscall(*args))
    if res < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return res


def abi_version() -> int:
    """Landlock's ABI version on this kernel; 0 where there is none."""
    cached = _state.get("abi")
    if isinstance(cached, int):
        return cached
    abi = 0
    if sys.platform == "linux" and platform.machine() in ("x86_64", "aarch64", "riscv64"):
        try:
            abi = _syscall(_SYS_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION)
        except OSError as exc:  # ENOSYS: too old; EOPNOTSUPP: built but disabled
            log.debug("rg runs without a Landlock sandbox: %s", exc.strerror)
    else:
        log.debug("rg runs without a Landlock sandbox: not Linux on a known architecture")
    _state["abi"] = abi
    return abi


def _handled(abi: int) -> int:
    """The rights the sandbox governs: those of ABI 1 (read, execute, write, create, remove) and
    REFER. Not TRUNCATE nor IOCTL_DEV (ABI 3 and 5): Landlock checks those optional rights at
    every open, walking up to the root unless granted, which made rg's opens ~15 % slower on
    20,000 files; rg opens read-only, and writing stays refused by WRITE_FILE."""
    return _ABI1_ALL | (_REFER if abi >= 2 else 0)


def disable(reason: str) -> None:
    """Stop sandboxing for this process's life (the child refused it); logged once."""
    if _state.get("abi") != 0:
        log.debug("rg runs without a Landlock sandbox: %s", reason)
    _state["abi"] = 0


@dataclass
class Sandbox:
    """A built ruleset (an fd the caller closes after the child started)."""

    ruleset_fd: int

    def close(self) -> None:
        if self.ruleset_fd >= 0:
            os.close(self.ruleset_fd)
            self.ruleset_fd = -1

    def run_inside(self, fn: Callable[[], T]) -> T:
        """``fn()`` in a new thread that has entered the sandbox first, so that a process it
        starts inherits the sandbox (with a vfork, not a fork of this whole process). Landlock
        and ``no_new_privs`` bind that thread alone, and it ends with ``fn``: no other thread is
        touched. Raises :class:`Refused` if the kernel refuses the sandbox."""
        libc = _libc()
        prctl, syscall, get_errno = libc.prctl, libc.syscall, ctypes.get_errno
        fd = self.ruleset_fd
        done: list[tuple[bool, object]] = []

        def inside() -> None:
            try:
                if prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or syscall(_SYS_RESTRICT_SELF, fd, 0) != 0:
                    err = get_errno()
                    raise Refused(err, f"landlock_restrict_self: {os.strerror(err)}")
                done.append((True, fn()))
            except BaseException as exc:  # handed to the caller's thread
                done.append((False, exc))

        thread = threading.Thread(target=inside, name="filegate-rg-spawn", daemon=True)
        thread.start()
        thread.join()
        ok, value = done[0]
        if not ok:
            assert isinstance(value, BaseException)
            raise value
        return value  # type: ignore[return-value]


def _add_rule(ruleset_fd: int, path_fd: int, access: int) -> None:
    attr = _PathBeneathAttr(access, path_fd)
    _syscall(_SYS_ADD_RULE, ruleset_fd, _RULE_PATH_BENEATH, ctypes.pointer(attr), 0)


def _add_path(ruleset_fd: int, path: str, dir_access: int, file_access: int) -> None:
    """A rule for ``path`` (a directory gets ``dir_access``, a file ``file_access``); a path
    that is not there is left out."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    try:
        is_dir = os.path.isdir(proc_fd(fd))
        _add_rule(ruleset_fd, fd, dir_access if is_dir else file_access)
    finally:
        os.close(fd)


def build(
    program: str,
    read_dir_fds: Iterable[int] = (),
    read_files: Iterable[str] = (),
    also_run: Iterable[str] = (),
) -> Sandbox | None:
    """A ruleset that lets a child exec ``program`` and the programs ``also_run`` (and map
    their libraries) and read only beneath the open directories ``read_dir_fds`` and the files
    ``read_files``; None where Landlock is unavailable (then the child runs unsandboxed)."""
    abi = abi_version()
    if abi < 1:
        return None
    attr = _RulesetAttr(_handled(abi))
    try:
        ruleset = _syscall(_SYS_CREATE_RULESET, ctypes.pointer(attr), ctypes.sizeof(attr), 0)
    except OSError as exc:
        disable(f"landlock_create_ruleset: {exc.strerror}")
        return None
    os.set_inheritable(ruleset, False)
    try:
        exe_rights = EXECUTE | READ_FILE
        for lib in _LIBRARY_DIRS:
            _add_path(ruleset, lib, exe_rights, exe_rights)
        for f in _LOADER_FILES:
            _add_path(ruleset, f, READ_FILE, READ_FILE)
        for exe in (program, *also_run):
            _add_path(ruleset, os.path.realpath(exe), exe_rights, exe_rights)
        for fd in read_dir_fds:
            _add_rule(ruleset, fd, READ_FILE | READ_DIR)
        for f in read_files:
            _add_path(ruleset, f, READ_FILE | READ_DIR, READ_FILE)
    except OSError as exc:
        os.close(ruleset)
        disable(f"landlock_add_rule: {exc.strerror}")
        return None
    return Sandbox(ruleset)


# --- rg started from a thread inside the sandbox, as an anyio Process ---------------------
# asyncio starts children from the event loop's thread only, so this one is a subprocess.Popen
# awaited by its pidfd, with its pipes read without a thread.


class _PipeStream(ByteReceiveStream):
    """The read end of a child's pipe, non-blocking, read when the loop sees data."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self.fd = fd

    async def receive(self, max_bytes: int = 65536) -> bytes:
        while True:
            try:
                data = os.read(self.fd, max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(self.fd)
                continue
            if not data:
                raise anyio.EndOfStream
            return data

    async def aclose(self) -> None:
        if self.fd >= 0:
            anyio.notify_closing(self.fd)
            os.close(self.fd)
            self.fd = -1


class Confined(Process):
    """A child started by :func:`start`; waited for through its pidfd, never by a thread."""

    def __init__(self, popen: subprocess.Popen[bytes], stdout: int | None, stderr: int | None) -> None:
        self.popen = popen
        self.pidfd = os.pidfd_open(popen.pid)
        self._stdout = _PipeStream(stdout) if stdout is not None else None
        self._stderr = _PipeStream(stderr) if stderr is not None else None

    async def wait(self) -> int:
        while self.popen.poll() is None:
            await anyio.wait_readable(self.pidfd)  # readable once the child has exited
        return self.popen.returncode

    def terminate(self) -> None:
        self.popen.terminate()

    def kill(self) -> None:
        self.popen.kill()  # Popen checks first that the child is not reaped (no reused pid)

    def send_signal(self, sig: signal.Signals) -> None:
        self.popen.send_signal(sig)

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    @property
    def stdin(self) -> ByteSendStream | None:
        return None

    @property
    def stdout(self) -> ByteReceiveStream | None:
        return self._stdout

    @property
    def stderr(self) -> ByteReceiveStream | None:
        return self._stderr

    async def aclose(self) -> None:
        """The pipes closed, the child waited for (the caller kills it first if it must)."""
        for stream in (self._stdout, self._stderr):
            if stream is not None:
                await stream.aclose()
        try:
            await self.wait()
        finally:
            if self.pidfd >= 0:
                anyio.notify_closing(self.pidfd)
                os.close(self.pidfd)
                self.pidfd = -1


def start(
    sandbox: Sandbox,
    cmd: Sequence[str],
    cwd: str,
    stdin: int | None,
    stdout: int,
    pass_fds: Sequence[int],
) -> Confined:
    """``cmd`` started inside ``sandbox`` (stdout: an fd, or ``subprocess.PIPE``; stderr a pipe
    of its own). OSError if it cannot start; Refused if the kernel refuses the
    sandbox (nothing started then)."""
    err_r, err_w = os.pipe()
    out_r, out_w = os.pipe() if stdout == subprocess.PIPE else (None, stdout)
    try:

        def spawn() -> subprocess.Popen[bytes]:
            return subprocess.Popen(
                list(cmd),
                cwd=cwd,
                stdin=stdin,
                stdout=out_w,
                stderr=err_w,
                start_new_session=True,
                pass_fds=tuple(pass_fds),
            )

        popen = sandbox.run_inside(spawn)
    except BaseException:
        os.close(err_r)
        if out_r is not None:
            os.close(out_r)
        raise
    finally:
        os.close(err_w)
        if out_r is not None:
            os.close(out_w)
    return Confined(popen, out_r, err_r)
