"""One writer per path: an asyncio lock per resolved path within the process, and a flock on a
lock file in the state directory across filegate processes (replicas, issue 13); a wait for
either has a deadline, past which the write answers "busy" (issue 53)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import stat
import time
from collections.abc import AsyncIterator
from pathlib import Path

from filegate.errors import Busy
from filegate.fsio import platform
from filegate.fsio.pending import private_dir, state_dir

# --- one writer per path ------------------------------------------------------------------

# Waiting for another process's lock on a file polls (never blocks the event loop, and a
# cancelled call stops waiting at once), backing off from the first to the last interval.
_LOCK_POLL_FIRST_S = 0.001
_LOCK_POLL_LAST_S = 0.02
# How long a write waits for another's hold on its file (in this process or in another filegate
# process of this user) before it is refused as busy: far longer than the largest write's load,
# transform and write take (a 128 MiB file, a few seconds), so only a holder that does not let
# go (a stuck process) makes a write answer "busy" instead of waiting for ever.
LOCK_WAIT_S = 30.0
# A lock file at a path's name that is not this user's (left from when the state directory was
# open to others, issue 53) is never waited on nor removed: the lock is taken at the next name
# of the path's chain (`<hash>.1`, `<hash>.2`, …), the same for every process, since no other
# user can add or remove a name once the folder is owner-only. This many names, then "busy".
MAX_LOCK_NAMES = 8


def _busy(seconds: float) -> Busy:
    return Busy(
        "Another write to this file (in this server or in another filegate process of this user) "
        f"held it for longer than {seconds:g} s; nothing was done, try again."
    )


class PathLocks:
    """One writer per resolved path: an asyncio lock per path within the process, and an
    advisory ``flock`` on a lock file per path across processes (replicas serving one
    workspace, issue 13). The lock files live in the state directory (owner-only), outside any
    workspace, named by a hash of the path; without a usable state directory only the process
    lock is taken (best effort, like the pending-temp records). Both waits share one deadline,
    :data:`LOCK_WAIT_S`: past it the write is refused as :class:`Busy`."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, path: Path) -> AsyncIterator[None]:
        key = str(path)
        wait_s = LOCK_WAIT_S
        deadline = time.monotonic() + wait_s
        lock, users = self._locks.get(key, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._locks[key] = (lock, users + 1)
        try:
            try:
                async with asyncio.timeout(wait_s):
                    await lock.acquire()
            except TimeoutError:
                raise _busy(wait_s) from None
            try:
                held = await _lock_file(key, deadline, wait_s)
                try:
                    yield
                finally:
                    if held is not None:
                        _release_lock_file(*held)
            finally:
                lock.release()
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


def lock_path(key: str) -> Path:
    """The first name of ``key``'s lock file (see :data:`MAX_LOCK_NAMES` for the others)."""
    return lock_dir() / _lock_name(key)


def _lock_name(key: str) -> str:
    return hashlib.sha256(os.fsencode(key)).hexdigest()[:32]


async def _lock_file(key: str, deadline: float, wait_s: float) -> tuple[Path, int] | None:
    """The lock file's name and the descriptor holding an exclusive flock on it for ``key``,
    or None when none can be had (no usable state directory, no flock). Busy past ``deadline``.

    The holder removes the lock file when it is done (:func:`_release_lock_file`), so the
    state directory does not keep one file per path ever written. A process that opened the
    file before it was removed then holds a lock on a name that is gone: after taking the
    flock it checks that the path still names the very file it locked, and starts over if not.
    """
    if os.name == "nt":  # no flock (and no fcntl module): the process lock only
        return None
    try:
        first = private_dir("locks") / _lock_name(key)
    except OSError:
        return None
    for step in range(MAX_LOCK_NAMES):
        name = first if step == 0 else first.with_name(f"{first.name}.{step}")
        fd = await _lock_at(name, deadline, wait_s)
        if fd is None:
            return None
        if fd >= 0:
            return name, fd
    raise Busy(
        "The lock files of this file in filegate's state directory belong to another user (left "
        "from when the folder was open to others); nothing was done. Removing the `locks` folder "
        "of the state directory clears them."
    )


_FOREIGN = -1


async def _lock_at(name: Path, deadline: float, wait_s: float) -> int | None:
    """The flocked descriptor of the lock file ``name``, :data:`_FOREIGN` when the name is
    another user's, None when no lock can be had here."""
    while True:
        try:
            fd = os.open(name, os.O_RDWR | os.O_CREAT | platform.NOFOLLOW | platform.CLOEXEC, 0o600)
        except OSError:
            return _FOREIGN if _foreign(name) else None
        try:
            foreign = os.fstat(fd).st_uid != os.geteuid()
            locked = not foreign and await _flock(fd, deadline, wait_s)
        except BaseException:
            os.close(fd)
            raise
        if locked and _names(name, fd):
            return fd
        os.close(fd)
        if foreign:
            return _FOREIGN
        if not locked:
            return None
        # the previous holder removed it: lock the file now at that path


async def _flock(fd: int, deadline: float, wait_s: float) -> bool:
    """Wait for an exclusive flock on ``fd`` until ``deadline`` (then Busy); False: the file
    system has no flock (the process lock only)."""
    import fcntl  # POSIX only: imported here so that this module imports on Windows

    delay = _LOCK_POLL_FIRST_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _busy(wait_s) from None
            await asyncio.sleep(min(delay, left))
            delay = min(delay * 2, _LOCK_POLL_LAST_S)
        except OSError:
            return False


def _foreign(name: Path) -> bool:
    """Whether ``name`` is there and not this user's regular file (a link, another user's)."""
    try:
        st = os.lstat(name)
    except OSError:
        return False
    return not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid()


def _names(path: Path, fd: int) -> bool:
    try:
        return os.path.samestat(os.stat(path, follow_symlinks=False), os.fstat(fd))
    except OSError:
        return False


def _release_lock_file(name: Path, fd: int) -> None:
    """Remove the lock file while its flock is still held (a waiter then sees the name gone
    and starts over), then close it, which releases the flock."""
    with contextlib.suppress(OSError):
        os.unlink(name)
    os.close(fd)


# Process-wide: two servers in one process writing one file still take turns.
PATH_LOCKS = PathLocks()
