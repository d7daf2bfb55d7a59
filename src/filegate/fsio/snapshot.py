"""What a file looked like when it was read (:class:`Snapshot`), and whether it still is.

:func:`read_all` reads a whole file and makes its snapshot; :func:`holds_snapshot` is the proof
the stale-write check (fsio/atomic.py) and the history's linked pre-image (fsio/preimages.py)
ask for: the file's status, where it can prove the content unchanged, else its bytes.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass, field

from filegate.errors import WriteError
from filegate.fsio.safeopen import read_whole

# The check reads the file in blocks of this size to compare them.
_HASH_BLOCK = 1 << 20

# A file's status (device, inode, size, mtime, ctime) identifies its content only when its
# last change is older than this at the time it is read: timestamps come from a clock that
# ticks coarsely (a kernel tick, ~1-10 ms; whole seconds on some file systems), so a change
# made in the same tick as the previous one could otherwise leave every field as it was.
SETTLED_NS = 50_000_000
# Whole-second timestamps (ext4 with small inodes, FAT, some network file systems): a change
# within the same second is invisible in the status, so it must be two seconds old.
SETTLED_COARSE_NS = 2_000_000_000
# POSIX ctime is the last status change, which every write moves and no call can set back; on
# Windows st_ctime is the creation time, so there the content is always compared.
_CTIME_IS_CHANGE_TIME = os.name == "posix"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What a file looked like when it was read: the stale-write check compares against it.

    When the snapshot is ``settled`` — the file did not change while it was read and its last
    change was older than the timestamp granularity — an unchanged status at write time
    (device, inode, size, mtime and ctime; ctime cannot be set back, so restoring an mtime does
    not hide a change) proves an unchanged file, and the content is not read again. Otherwise
    the check reads the file and compares it byte for byte with the bytes that were read
    (``content``). Their SHA-256 (:meth:`digest`) is computed only when a question binds its
    answer to it.
    """

    exists: bool
    size: int = 0
    mtime_ns: int = 0
    dev: int = 0
    ino: int = 0
    ctime_ns: int = 0
    settled: bool = False
    content: bytes | None = field(default=None, repr=False, compare=False)

    @classmethod
    def absent(cls) -> Snapshot:
        return cls(exists=False)

    @classmethod
    def of(cls, data: bytes, st: os.stat_result) -> Snapshot:
        """``data`` as read with status ``st``; not settled: the write-time check compares."""
        return cls(True, st.st_size, st.st_mtime_ns, st.st_dev, st.st_ino, st.st_ctime_ns, content=data)

    def digest(self) -> str:
        """The SHA-256 of the content as read ("" for an absent file)."""
        return "" if self.content is None else sha256_hex(self.content)

    def same_status(self, st: os.stat_result) -> bool:
        """``st`` proves the content unchanged (see the class docstring)."""
        return self.settled and _status(st) == (self.dev, self.ino, self.size, self.mtime_ns, self.ctime_ns)


def _status(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_all(fd: int, limit: int, shown: str, *, now_ns: int | None = None) -> tuple[bytes, Snapshot]:
    """The whole regular file behind ``fd`` (at most ``limit`` bytes) and its snapshot.

    ``now_ns`` is the wall clock the file's last change is compared with (tests move it)."""
    started = time.time_ns() if now_ns is None else now_ns
    before = os.fstat(fd)
    if before.st_size > limit:
        raise _too_large(shown, before.st_size, limit)
    data = read_whole(fd, limit)
    st = os.fstat(fd)
    if len(data) > limit:  # it grew past the limit while being read
        raise _too_large(shown, max(st.st_size, len(data)), limit)
    settled = (
        _CTIME_IS_CHANGE_TIME
        and _status(st) == _status(before)
        and len(data) == st.st_size
        and max(st.st_ctime_ns, st.st_mtime_ns) < started - _settle_time(st)
    )
    # Not hashed: the write-time check compares with ``data`` itself when the status cannot
    # prove the file unchanged, and only a question needs the digest.
    snap = Snapshot(True, len(data), st.st_mtime_ns, st.st_dev, st.st_ino, st.st_ctime_ns, settled, data)
    return data, snap


def _settle_time(st: os.stat_result) -> int:
    whole_seconds = st.st_mtime_ns % 1_000_000_000 == 0 and st.st_ctime_ns % 1_000_000_000 == 0
    return SETTLED_COARSE_NS if whole_seconds else SETTLED_NS


def _too_large(shown: str, size: int, limit: int) -> WriteError:
    return WriteError(
        f"`{shown}` is {size} bytes; filegate changes files of at most {limit} bytes. "
        "Use shell tools for a file this large.",
        "File too large",
    )


def holds_snapshot(fd: int, expect: Snapshot) -> bool:
    """The file behind ``fd`` (at its start) is as ``expect`` was read: its status proves it
    (a settled snapshot), or its bytes do (compared with those read)."""
    if expect.settled and expect.same_status(os.fstat(fd)):
        return True
    return expect.content is not None and _holds(fd, expect.content)


def _holds(fd: int, content: bytes) -> bool:
    """The file behind ``fd`` holds exactly ``content``, compared block by block in place: a
    memcmp per block where hashing 50 MB costs ~30 ms (and hashing what was read, as much)."""
    at = 0
    while chunk := os.read(fd, _HASH_BLOCK):
        if not content.startswith(chunk, at):
            return False
        at += len(chunk)
    return at == len(content)
