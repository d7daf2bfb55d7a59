"""Which of the OS facilities filegate's safety rests on are there, and the portable ways
around the missing ones (issue 15).

Linux has them all: ``dir_fd`` on ``os.open``, ``/proc/self/fd``, ``O_TMPFILE``, a ``wc``,
signal handlers on the event loop.
macOS has ``dir_fd`` but no ``/proc`` (``fcntl(F_GETPATH)`` names an open file) and no
``O_TMPFILE``; Windows has none of them (``GetFinalPathNameByHandle`` names an open file; its
event loop takes no signal handlers: Ctrl+C is a KeyboardInterrupt, a client closes stdin).

``FILEGATE_SIMULATE`` (a comma-separated subset of :data:`FACILITIES`) takes facilities away
on a machine that has them, so the fallbacks run for real in the Linux test suite::

    FILEGATE_SIMULATE=no-dirfd,no-proc,no-tmpfile,no-wc pytest tests/fsio tests/policy tests/tools

``no-dirfd`` is taken away from the whole process, as Windows has it: at import every ``os``
call that takes ``dir_fd`` raises NotImplementedError when given one, and
``os.supports_dir_fd`` is empty, so code that does not ask :func:`has_dir_fd` fails here as it
would there (issue 29).
"""

from __future__ import annotations

import contextlib
import os
import secrets

SIMULATE_ENV = "FILEGATE_SIMULATE"
FACILITIES = ("no-dirfd", "no-proc", "no-tmpfile", "no-wc", "no-signals", "no-pread")
PROC_FD = "/proc/self/fd"

# POSIX open flags are 0 where the OS has none (Windows: the callers' checks stand in for them);
# O_BINARY is Windows' own: without it a descriptor is in text mode, which turns CRLF into LF
# and stops at Ctrl+Z when read, and LF into CRLF when written.
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
DIRECTORY = getattr(os, "O_DIRECTORY", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
NONBLOCK = getattr(os, "O_NONBLOCK", 0)
BINARY = getattr(os, "O_BINARY", 0)
WINDOWS = os.name == "nt"


def drop_cached(fd: int) -> None:
    """Ask the kernel to drop the page cache of ``fd``'s file (its bytes must be on disk already:
    dirty pages are not dropped). Best effort; a no-op where ``posix_fadvise`` does not exist."""
    if hasattr(os, "posix_fadvise"):
        with contextlib.suppress(OSError):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def process_alive(pid: int, life: str = "") -> bool:
    """Whether process ``pid`` runs (another user's included) and, given ``life`` (its
    :func:`process_life` when it left a mark, a record), is still the process that ran then: one
    that took the number over later (after a reboot, or in a restarted container, where this
    process's own number is often its predecessor's) is not. Where /proc cannot say, the
    number alone answers. Always True off POSIX: there ``os.kill(pid, 0)`` does not probe a
    process, it ends it (TerminateProcess)."""
    if WINDOWS:
        return True
    if pid != os.getpid():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
    now = process_life(pid) if life else ""
    return not now or now == life


def process_life(pid: int | None = None) -> str:
    """Which life of process number ``pid`` (this process's) runs: its boot and its start,
    ``boot.ticks`` with no dash (a part of a file name); "" where /proc cannot say."""
    if not has_proc():
        return ""
    try:
        with open(f"/proc/{os.getpid() if pid is None else pid}/stat", "rb") as f:
            ticks = int(f.read().rpartition(b")")[2].split()[19])  # field 22, after the name
        with open("/proc/sys/kernel/random/boot_id", "rb") as f:
            boot = f.read().strip().replace(b"-", b"")[:12].decode("ascii")
    except (OSError, ValueError, IndexError, UnicodeDecodeError):
        return ""
    return f"{boot}.{ticks}"


def life_token() -> str:
    """A random token for a mark's or a record's name, led by this process's life
    (``boot.ticks.``) where /proc says it; :func:`life_of` reads the life back."""
    life = process_life()
    return f"{life}.{secrets.token_hex(8)}" if life else secrets.token_hex(8)


def life_of(token: str) -> str:
    """The life a :func:`life_token` names: "" for one made without /proc (or before lives)."""
    return token.rpartition(".")[0]


def proc_fd(fd: int) -> str:
    """The /proc path that names this process's open ``fd`` (Linux)."""
    return f"{PROC_FD}/{fd}"


def simulated() -> frozenset[str]:
    """The facilities taken away by ``FILEGATE_SIMULATE`` (read at each use: cheap, and a test
    can set it); an unknown word is an error, so a typo cannot silently test nothing."""
    words = frozenset(w.strip() for w in os.environ.get(SIMULATE_ENV, "").split(",") if w.strip())
    unknown = words - set(FACILITIES)
    if unknown:
        raise ValueError(f"{SIMULATE_ENV}: unknown {sorted(unknown)}; known: {', '.join(FACILITIES)}")
    return words


def _take_dir_fd_away() -> None:
    """``no-dirfd`` for every caller in this process (the Python level, as on Windows): each
    ``os`` function that takes ``dir_fd`` refuses one the way Windows' does, and
    ``os.supports_dir_fd`` is empty. Installed once, at import, before any tool runs."""
    import functools

    for fn in list(os.supports_dir_fd):
        name = fn.__name__
        if getattr(os, name, None) is not fn:
            continue

        def refusing(*args: object, __fn: object = fn, __name: str = name, **kwargs: object) -> object:
            if kwargs.get("dir_fd") is not None:
                raise NotImplementedError(f"{__name}: dir_fd unavailable on this platform")
            return __fn(*args, **kwargs)  # type: ignore[operator]

        setattr(os, name, functools.wraps(fn)(refusing))
    os.supports_dir_fd.clear()
    import shutil  # chose its descriptor-based rmtree at its own import: now it cannot

    shutil._use_fd_functions = False  # type: ignore[attr-defined]


if "no-dirfd" in simulated() and os.supports_dir_fd:
    _take_dir_fd_away()


def has_dir_fd() -> bool:
    """``os.open``/``os.stat``/``os.rename`` take ``dir_fd`` (not on Windows)."""
    return "no-dirfd" not in simulated() and os.open in os.supports_dir_fd  # a typo raises first


def has_proc() -> bool:
    """``/proc/self/fd`` names and reopens open files (Linux)."""
    return "no-proc" not in simulated() and os.path.isdir(PROC_FD)


def has_tmpfile() -> bool:
    """``O_TMPFILE`` (Linux), which also needs /proc to give the temp a name."""
    return hasattr(os, "O_TMPFILE") and "no-tmpfile" not in simulated() and has_proc()


def has_wc() -> bool:
    return "no-wc" not in simulated()


def _read_at(fd: int, n: int, offset: int) -> bytes:
    """``os.pread`` where there is none (Windows): a seek and a read, the descriptor's own
    position put back after, so a caller that reads on from it sees no difference."""
    here = os.lseek(fd, 0, os.SEEK_CUR)
    try:
        os.lseek(fd, offset, os.SEEK_SET)
        return os.read(fd, n)
    finally:
        os.lseek(fd, here, os.SEEK_SET)


# Up to ``n`` bytes of ``fd`` at ``offset``, its position untouched. Chosen once, at import: it
# is on every read's path (``FILEGATE_SIMULATE=no-pread`` must be set before filegate starts).
pread = os.pread if hasattr(os, "pread") and "no-pread" not in simulated() else _read_at


def has_loop_signals() -> bool:
    """The event loop can watch SIGTERM/SIGINT (``loop.add_signal_handler``: POSIX only)."""
    return os.name == "posix" and "no-signals" not in simulated()


def fd_path(fd: int) -> str | None:
    """The path the open file ``fd`` has now (its final path: symlinks and junctions resolved),
    or None where the OS cannot say. Linux: /proc; macOS: F_GETPATH; Windows:
    GetFinalPathNameByHandleW."""
    if has_proc():
        try:
            return os.readlink(f"{PROC_FD}/{fd}")
        except OSError:
            return None
    if os.name == "nt":  # pragma: no cover - Windows only (CI's Windows job)
        return _final_path_by_handle(fd)
    if hasattr(__import__("fcntl"), "F_GETPATH"):  # pragma: no cover - macOS
        return _f_getpath(fd)
    # Linux with /proc taken away by FILEGATE_SIMULATE: /proc's readlink stands in for the
    # handle-naming call every real system has (F_GETPATH, GetFinalPathNameByHandle), so the
    # simulation is not weaker than macOS or Windows. A real system without /proc: None.
    if os.path.isdir(PROC_FD):
        try:
            return os.readlink(f"{PROC_FD}/{fd}")
        except OSError:
            return None
    return None


def _f_getpath(fd: int) -> str | None:
    import fcntl

    request = getattr(fcntl, "F_GETPATH", None)
    if request is None:  # not macOS/BSD
        return None
    try:  # pragma: no cover - macOS only (CI's macOS job)
        raw = fcntl.fcntl(fd, request, bytes(1024))
        return os.fsdecode(raw.split(b"\0", 1)[0])
    except OSError:  # pragma: no cover
        return None


def _final_path_by_handle(fd: int) -> str | None:  # pragma: no cover - Windows only
    import ctypes
    import msvcrt

    handle = msvcrt.get_osfhandle(fd)  # type: ignore[attr-defined,unused-ignore]
    buf = ctypes.create_unicode_buffer(32768)
    n = ctypes.windll.kernel32.GetFinalPathNameByHandleW(handle, buf, len(buf), 0)  # type: ignore[attr-defined,unused-ignore]
    if not n or n >= len(buf):
        return None
    return _from_final_path(buf.value)


def _from_final_path(path: str) -> str:
    """GetFinalPathNameByHandle's answer in the form a Windows path is compared in: its
    ``\\\\?\\`` prefix taken off (``\\\\?\\UNC\\server\\share`` is ``\\\\server\\share``). Pure
    string work, tested on every OS."""
    if path.startswith("\\\\?\\UNC\\"):
        return "\\" + path[7:]
    return path[4:] if path.startswith("\\\\?\\") else path


def reopen(fd: int, flags: int) -> int | None:
    """A new open file description of the file behind ``fd`` (its own offset), or None: by
    /proc where there is one, else by its final path, checked to be the same file."""
    path = proc_fd(fd) if has_proc() else fd_path(fd)
    if path is None:
        return None
    try:
        own = os.open(path, flags | CLOEXEC)
    except OSError:
        return None
    if not os.path.samestat(os.fstat(own), os.fstat(fd)):
        os.close(own)
        return None
    return own
