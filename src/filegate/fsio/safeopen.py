"""Opening what policy resolved, without following a symlink and without blocking (SPEC §2.5, §2.7).

Policy decides (``filegate.policy.workspace`` resolves and contains a caller's path); this
module opens the result: component by component with ``O_NOFOLLOW`` from ``/``, so a symlink
swapped in after the check fails the open instead of redirecting it; ``O_NONBLOCK`` for the
final open, so a FIFO or a device is refused at once instead of hanging the call. And
:func:`read_whole` is the one loop that reads a whole regular file into memory.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from filegate.errors import PathError
from filegate.fsio import platform
from filegate.policy.workspace import ResolvedPath

# A read asks for the expected size plus this much, so a file that grew is read to its end in
# few calls and a file of the expected size in one call and an empty one.
_EXTRA_READ = 1 << 20


def open_components(real: Path, final_flags: int, mode: int = 0o666) -> int:
    """Open ``real`` one component at a time with O_NOFOLLOW; the fd of its last part.

    ``real`` came from realpath, so no component is a symlink; if one became a symlink since
    (a swap between check and use), this fails with ELOOP/ENOTDIR instead of following it.
    """
    if not platform.has_dir_fd():
        return open_then_verify(real, final_flags, mode)
    parts = real.parts
    fd = os.open("/", os.O_RDONLY | platform.DIRECTORY | platform.CLOEXEC)
    try:
        for part in parts[1:-1]:
            nfd = os.open(
                part, os.O_RDONLY | platform.DIRECTORY | platform.NOFOLLOW | platform.CLOEXEC, dir_fd=fd
            )
            os.close(fd)
            fd = nfd
        name = parts[-1] if len(parts) > 1 else "."
        return os.open(
            name, final_flags | platform.NOFOLLOW | platform.CLOEXEC | platform.BINARY, mode, dir_fd=fd
        )
    finally:
        os.close(fd)


def open_then_verify(real: Path, flags: int, mode: int = 0o666) -> int:
    """Where ``dir_fd`` is unsupported (Windows): open ``real`` by its path, then check that the
    opened file is the one that was checked — its final path (the OS's name for the handle,
    symlinks and junctions resolved) is ``real`` where the OS can say, and the path still
    resolves to itself and to the very file the handle holds. A swap between the check and the
    open fails with ELOOP, as in :func:`open_components`; one that is undone again before the
    re-check is not seen (the race window the README names)."""
    fd = os.open(str(real), flags | platform.NOFOLLOW | platform.CLOEXEC | platform.BINARY, mode)
    try:
        held = platform.fd_path(fd)
        checked = os.path.normcase(str(real))
        # Without a name for the handle: the path resolves to itself around the identity check
        # (a swap must flip back and forth between all three to pass unseen).
        same = (held is None or os.path.normcase(held) == checked) and (
            os.path.normcase(os.path.realpath(real)) == checked
            and os.path.samestat(os.fstat(fd), os.stat(real, follow_symlinks=False))
            and os.path.normcase(os.path.realpath(real)) == checked
        )
        if not same:
            raise OSError(errno.ELOOP, "the opened file is not the checked path")
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_regular(rp: ResolvedPath) -> int:
    """Open a regular file for reading, or raise PathError. Never blocks on a FIFO or device."""
    try:
        fd = open_components(rp.real, os.O_RDONLY | platform.NONBLOCK)
    except FileNotFoundError:
        if names_a_descriptor(rp):
            raise PathError(f"`{rp.shown}` is not a file.") from None
        raise PathError(f"`{rp.shown}` does not exist.", "File not found") from None
    except OSError as exc:
        raise _os_error(rp.shown, exc) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise PathError(f"`{rp.shown}` is not a file.")
        if platform.NONBLOCK:  # Windows has neither the flag nor FIFOs to guard against (nor set_blocking)
            os.set_blocking(fd, True)
        return fd
    except BaseException:
        os.close(fd)
        raise


def names_a_descriptor(rp: ResolvedPath) -> bool:
    """A path into /proc's descriptors (`/dev/stdin` resolves to `/proc/self/fd/0`): where /proc
    is not mounted that path does not exist, yet what was named is a stream, not a missing file
    (SPEC §2.7: "is not a file")."""
    parts = rp.real.parts
    return len(parts) > 3 and parts[:2] == ("/", "proc") and parts[3] in ("fd", "fdinfo")


def open_directory(rp: ResolvedPath) -> int:
    """Open a directory without following any symlink on its path, or raise PathError.

    The fd pins the directory: a symlink swapped in after the check cannot redirect a search
    that runs in it (``/proc/self/fd/<fd>`` as a child's working directory).
    """
    try:
        if os.name == "nt":  # pragma: no cover - Windows only (CI's Windows job)
            return _open_directory_by_handle(rp.real)
        return open_components(rp.real, os.O_RDONLY | platform.DIRECTORY)
    except FileNotFoundError:
        raise PathError(f"`{rp.shown}` does not exist.", "File not found") from None
    except OSError as exc:
        raise _os_error(rp.shown, exc) from None


def _open_directory_by_handle(real: Path) -> int:  # pragma: no cover - Windows only
    """Windows' os.open cannot open a folder: CreateFileW can (FILE_FLAG_BACKUP_SEMANTICS), a
    link or junction at its last part opened itself (FILE_FLAG_OPEN_REPARSE_POINT), made a
    descriptor. Shared for reading and writing but not for deletion, so while it is held the
    folder cannot be deleted or renamed and its path keeps naming it (rg runs in it by path);
    its final path must be ``real`` (no link or junction anywhere on the way)."""
    import ctypes
    import msvcrt
    from ctypes import wintypes

    create = ctypes.windll.kernel32.CreateFileW  # type: ignore[attr-defined,unused-ignore]
    create.restype = wintypes.HANDLE
    create.argtypes = [wintypes.LPCWSTR, wintypes.DWORD, wintypes.DWORD, wintypes.LPVOID,
                       wintypes.DWORD, wintypes.DWORD, wintypes.HANDLE]  # fmt: skip
    list_and_attributes, share_read_write, open_existing = 0x0001 | 0x0080, 0x1 | 0x2, 3
    backup_semantics, open_reparse_point = 0x02000000, 0x00200000
    handle = create(str(real), list_and_attributes, share_read_write, None, open_existing,
                    backup_semantics | open_reparse_point, None)  # fmt: skip
    if handle in (None, wintypes.HANDLE(-1).value):
        raise ctypes.WinError()  # type: ignore[attr-defined,unused-ignore]
    fd = int(msvcrt.open_osfhandle(handle, os.O_RDONLY))  # type: ignore[attr-defined,unused-ignore]
    held = platform.fd_path(fd)
    if held is None or os.path.normcase(held) != os.path.normcase(str(real)):
        os.close(fd)
        raise OSError(errno.ELOOP, "the opened folder is not the checked path")
    return fd


def stat_target(rp: ResolvedPath) -> os.stat_result | None:
    """lstat the resolved path: None when it does not exist, PathError on other failures."""
    try:
        return os.lstat(rp.real)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _os_error(rp.shown, exc) from None


def _os_error(shown: str, exc: OSError) -> PathError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return PathError(
            f"`{shown}` changed while being opened (a symlink appeared in its path) or goes "
            "through a symlink loop."
        )
    if exc.errno == errno.ENXIO:  # open(2) of a Unix socket (or a device with no driver)
        return PathError(f"`{shown}` is not a file.")
    if exc.errno == errno.EACCES:
        return PathError(f"`{shown}` is not readable: permission denied.", "Permission denied")
    if exc.errno == errno.ENAMETOOLONG:
        return PathError(f"`{shown[:200]}…` is too long for a file path.")
    return PathError(f"Failed to open `{shown}`: {exc.strerror or exc}.")


def read_whole(fd: int, limit: int) -> bytes:
    """The regular file behind ``fd`` from its start to its end, but never more than
    ``limit + 1`` bytes: a caller tells "larger than ``limit``" from the length, and a file
    that grows while it is read cannot keep the loop going. One read in the usual case (the
    file is as large as fstat says)."""
    size = os.fstat(fd).st_size
    chunks: list[bytes] = []
    total = 0
    while total <= limit:
        chunk = platform.pread(fd, min(max(size - total, 0) + _EXTRA_READ, limit + 1 - total), total)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
