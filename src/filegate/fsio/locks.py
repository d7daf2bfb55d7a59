"""One writer per path: an asyncio lock per resolved path within the process, and a flock on a
lock file in the state directory across filegate processes (replicas, issue 13)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

from filegate.fsio import platform
from filegate.fsio.pending import state_dir

# --- one writer per path ------------------------------------------------------------------

# Waiting for another process's lock on a file polls (never blocks the event loop, and a
# cancelled call stops waiting at once), backing off from the first to the last interval.
_LOCK_POLL_FIRST_S = 0.001
_LOCK_POLL_LAST_S = 0.02


class PathLocks:
    """One writer per resolved path: an asyncio lock per path within the process, and an
    advisory ``flock`` on a lock file per path across processes (replicas serving one
    workspace, issue 13). The lock files live in the state directory, outside any workspace,
    named by a hash of the path; without a writable state directory only the process lock is
    taken (best effort, like the pending-temp records)."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, path: Path) -> AsyncIterator[None]:
        key = str(path)
        lock, users = self._locks.get(key, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                fd = await _lock_file(key)
                try:
                    yield
                finally:
                    if fd >= 0:
                        _release_lock_file(key, fd)
        finally:
            lock, users = self._locks[key]
            if users <= 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)

    def __len__(self) -> int:
        return len(self._locks)


def lock_dir() -> Path:
    """Where the per-path lock files of all filegate processes of this user live."""
    return state_dir() / "locks"


def _lock_path(key: str) -> Path:
    return lock_dir() / hashlib.sha256(os.fsencode(key)).hexdigest()[:32]


async def _lock_file(key: str) -> int:
    """The descriptor holding an exclusive flock for ``key``, or -1 when none can be had.

    The holder removes the lock file when it is done (:func:`_release_lock_file`), so the
    state directory does not keep one file per path ever written. A process that opened the
    file before it was removed then holds a lock on a name that is gone: after taking the
    flock it checks that the path still names the very file it locked, and starts over if not.
    """
    if os.name == "nt":  # no flock (and no fcntl module): the process lock only
        return -1
    import fcntl  # POSIX only: imported here so that this module imports on Windows

    path = _lock_path(key)
    delay = _LOCK_POLL_FIRST_S
    while True:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | platform.NOFOLLOW | platform.CLOEXEC, 0o600)
        except OSError:
            return -1
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, _LOCK_POLL_LAST_S)
                except OSError:  # a file system without flock: the process lock only
                    os.close(fd)
                    return -1
            if _names(path, fd):
                return fd
            os.close(fd)  # the previous holder removed it: lock the file now at that path
        except BaseException:
            os.close(fd)
            raise


def _names(path: Path, fd: int) -> bool:
    try:
        return os.path.samestat(os.stat(path, follow_symlinks=False), os.fstat(fd))
    except OSError:
        return False


def _release_lock_file(key: str, fd: int) -> None:
    """Remove the lock file while its flock is still held (a waiter then sees the name gone
    and starts over), then close it, which releases the flock."""
    with contextlib.suppress(OSError):
        os.unlink(_lock_path(key))
    os.close(fd)


# Process-wide: two servers in one process writing one file still take turns.
PATH_LOCKS = PathLocks()
