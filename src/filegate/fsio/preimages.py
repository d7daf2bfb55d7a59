"""The write history's pre-images (SPEC §8.4): content-addressed files under ``objects/``.

A pre-image is named by the hash of its bytes (``objects/ab/cd…``): BLAKE3 for every write
since issue 56, SHA-256 for the records written before (their record says which, see
fsio/historylog.py's ``Entry.hash``), so identical contents are kept once. Where it can, a
write's pre-image is the replaced file's own inode, linked in before the rename (:func:`store`
with a :class:`Source`), not a copy of its bytes. Every function here runs under the
history's lock (fsio/history.py), which is what makes a name's check and its use one step.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from filegate.fsio import platform
from filegate.fsio.safeopen import read_whole
from filegate.fsio.snapshot import Snapshot, holds_snapshot
from filegate.fsio.spliced import Content, content_hash, content_pieces

# The algorithm new records name for their hashes (a record without one is SHA-256).
HASH = "blake3"

_NOFOLLOW = platform.NOFOLLOW
_CLOEXEC = platform.CLOEXEC


class HistoryError(Exception):
    """The history cannot keep this write; the write does not happen (a crash must never
    lose both versions, so no write goes on without its pre-image)."""


def object_path(root: Path, digest: str) -> Path:
    return root / "objects" / digest[:2] / digest[2:]


@dataclass(frozen=True, slots=True)
class Source:
    """The file a pre-image was read from, as it was read."""

    path: Path
    expect: Snapshot


def store(root: Path, digest: str, data: bytes, source: Source | None = None) -> int | None:
    """The pre-image, its bytes durable before the record that names it (its name is made
    durable after the record, and both before the rename): the file's own inode linked in
    where it can be (its inode number), else a copy of ``data`` (0); None: kept already."""
    target = object_path(root, digest)
    if _kept_already(target, len(data)):
        return None  # content-addressed: already kept (renamed into place whole, once fsynced)
    make_private_dir(target.parent)
    temp = target.parent / f"tmp-{os.getpid()}-{secrets.token_hex(6)}"
    inode = _link(source, data, temp) if source is not None else 0
    if not inode:
        _copy(data, temp)
    os.replace(temp, target)
    return inode


def make_private(root: Path, digest: str, inode: int, algorithm: str, *, landed: bool) -> None:
    """After the rename, the linked pre-image's inode has the history's name alone: made
    owner-only. Still named elsewhere (the write failed, or another name appeared), it is
    not the history's to keep: dropped when the write did not land (not needed), else
    replaced by a copy of its bytes while they are still the pre-image."""
    target = object_path(root, digest)
    fd = os.open(target, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
    try:
        st = os.fstat(fd)
        if st.st_ino != inode:
            return  # kept anew meanwhile by another write of the same content
        if st.st_nlink == 1:
            os.fchmod(fd, 0o600)
            platform.drop_cached(fd)  # read again only by an undo: see _copy
            return
        data = read_whole(fd, st.st_size) if landed else b""
    finally:
        os.close(fd)
    if landed and content_hash(data, algorithm) == digest:
        temp = target.parent / f"tmp-{os.getpid()}-{secrets.token_hex(6)}"
        _copy(data, temp)
        os.replace(temp, target)
    else:
        os.unlink(target)


def _link(source: Source, data: bytes, temp: Path) -> int:
    """Keep the file's inode itself under ``temp`` instead of copying its bytes: the write
    replaces the file by a rename, so the old inode keeps the old bytes, and after the
    rename the history holds its only name. Only an inode that is provably ``data`` (the
    snapshot's status or its bytes), owned by this user and with no other name (nothing
    else can write it through a name later). Its inode number, or 0: copy instead (another
    file system, no /proc, a changed or shared file)."""
    if not platform.has_proc():
        return 0
    try:
        fd = os.open(source.path, os.O_RDONLY | platform.NONBLOCK | _NOFOLLOW | _CLOEXEC)
    except OSError:
        return 0
    try:
        st = os.fstat(fd)
        mine = not hasattr(os, "geteuid") or st.st_uid == os.geteuid()
        expect = source.expect
        if not (stat.S_ISREG(st.st_mode) and mine and st.st_size == len(data)):
            return 0
        if (st.st_dev, st.st_ino) != (expect.dev, expect.ino) or not holds_snapshot(fd, expect):
            return 0
        try:
            dfd = os.open(temp.parent, os.O_RDONLY | platform.DIRECTORY | _CLOEXEC)
            try:
                os.link(platform.proc_fd(fd), temp.name, dst_dir_fd=dfd)  # linkat, following /proc
            finally:
                os.close(dfd)
        except OSError:  # EXDEV (another file system), EPERM (protected_hardlinks)
            return 0
        if os.fstat(fd).st_nlink != 2:  # named elsewhere too (before, or meanwhile): not ours alone
            os.unlink(temp)
            return 0
        os.fdatasync(fd)  # its bytes on disk; its new name is made durable with its directory
        return st.st_ino
    finally:
        os.close(fd)


def _kept_already(target: Path, size: int) -> bool:
    """A pre-image kept whole under this name: a file of its size that is the history's alone
    (a link left by a crash before its write's rename may still be the workspace's file)."""
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and st.st_size == size


def _copy(data: Content, temp: Path) -> None:
    """``data`` into a new owner-only file, fsynced; removed again if it cannot be written whole."""
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
    try:
        for piece in content_pieces(data):
            view = piece
            while view:
                view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    # A pre-image is read again only by an undo: its pages leave the page cache (they are on
    # disk), for the user's files and the next write, which would otherwise take memory never
    # used before (slow on a VM that maps a guest's memory on first touch).
    platform.drop_cached(fd)
    os.close(fd)


def make_private_dir(path: Path) -> None:
    """``path`` and its missing parents made owner-only (0700), whatever the umask, each new
    one's name durable in its parent (a pre-image's folder, made by its write, must survive a
    crash as the pre-image does); an existing history directory that is a symlink or not ours
    is refused."""
    missing = []
    here = path
    while not here.exists():
        missing.append(here)
        here = here.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile by another process
            os.mkdir(directory, 0o700)  # a umask only narrows it
            fsync_dir(directory.parent)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or (hasattr(os, "geteuid") and st.st_uid != os.geteuid()):
        raise HistoryError(f"{path} is not a directory of this user")
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(path, 0o700)


def fsync_dir(path: Path) -> None:
    if os.name == "nt":  # pragma: no cover - no directory fsync on Windows
        return
    fd = os.open(path, os.O_RDONLY | _CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
