"""Atomic, durable replacement of one file (SPEC §2.5, §2.10, §4); the per-path write lock is
fsio/locks.py, the record of named temps a killed write may leave fsio/pending.py, the file as
it was read (the stale check's proof) fsio/snapshot.py.

``replace_file`` writes the new bytes to an unnamed temp file in the target's directory
(``O_TMPFILE``; a hidden named temp where that is unsupported), fsyncs it, checks that the
target still is what the caller saw, renames over it and fsyncs the directory. A process
killed at any instant leaves the old file or the new one. Every directory on the way is
opened component-wise with ``O_NOFOLLOW``, so a symlink swapped in after the path was
resolved makes the write fail instead of landing elsewhere.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

from filegate.errors import WriteError
from filegate.fsio import platform
from filegate.fsio.bypath import check_landed, check_parent_by_path, check_placed
from filegate.fsio.pending import TEMP_SUFFIX, clear_pending, record_pending
from filegate.fsio.safeopen import open_components, open_then_verify
from filegate.fsio.snapshot import Snapshot, holds_snapshot
from filegate.fsio.spliced import Content, content_pieces

# Linux NAME_MAX is 255 bytes; the temp name adds a dot, a dot and 16 hex digits, and the suffix.
_TEMP_NAME_KEEP = 200
_TMPFILE = getattr(os, "O_TMPFILE", 0)


def replace_file(
    real: Path,
    data: Content,
    *,
    expect: Snapshot,
    shown: str,
    create_dirs: bool = False,
    mode: int | None = None,
    before_rename: Callable[[], object] | None = None,
    after_rename: Callable[[], object] | None = None,
) -> int:
    """Atomically make ``real`` hold ``data`` (bytes, or spliced pieces written as they are);
    return the bytes written.

    ``before_rename`` runs once the temp file is durable and the target found unchanged, just
    before the rename; what it raises stops the write (the temp file is removed).
    ``after_rename`` runs right after the rename, before the directory is made durable: the
    file holds its new content even if that then fails (it must not raise).

    ``expect`` is the target as the caller read it: if it changed since, nothing is written.
    An existing target keeps its mode bits but setuid/setgid (and owner, where permitted);
    ``mode`` sets them instead (``filegate install``: a file holding a token is owner-only),
    on a temp that is owner-only from its creation, so the bytes are never readable by others.
    """
    # Without dir_fd (Windows) every name below is a full path and ``dfd`` is None.
    name = real.name
    try:
        if platform.has_dir_fd():
            dfd: int | None = _open_parent(real.parent, create_dirs)
        else:
            check_parent_by_path(real.parent, create_dirs)
            dfd, name = None, str(real)
    except FileNotFoundError:
        raise WriteError(
            f"`{shown}` parent directory does not exist.", "Parent directory not found"
        ) from None
    except OSError as exc:
        raise _failure(shown, exc) from None
    try:
        return _replace_in(
            dfd, name, data, expect, shown, str(real.parent), mode, before_rename, after_rename
        )
    finally:
        if dfd is not None:
            os.close(dfd)


def _open_parent(parent: Path, create: bool) -> int:
    if not create:
        return open_components(parent, os.O_RDONLY | platform.DIRECTORY)
    fd = os.open("/", os.O_RDONLY | platform.DIRECTORY | platform.CLOEXEC)
    try:
        for part in parent.parts[1:]:
            try:
                os.mkdir(part, 0o777, dir_fd=fd)
                os.fsync(fd)  # the new entry is durable before anything is put in it
            except FileExistsError:
                pass
            nfd = os.open(
                part, os.O_RDONLY | platform.DIRECTORY | platform.NOFOLLOW | platform.CLOEXEC, dir_fd=fd
            )
            os.close(fd)
            fd = nfd
        return fd
    except BaseException:
        os.close(fd)
        raise


def _replace_in(
    dfd: int | None,
    name: str,
    data: Content,
    expect: Snapshot,
    shown: str,
    directory: str | None = None,
    mode: int | None = None,
    before_rename: Callable[[], object] | None = None,
    after_rename: Callable[[], object] | None = None,
) -> int:
    temp_name: str | None = None
    record: Path | None = None
    tfd = held = -1
    renamed = False
    try:
        # Inside the try: its lstat fails too (a name over NAME_MAX), and that is a WriteError.
        current = _lstat_at(dfd, name)
        _check_target(current, shown, dfd, name)
        # Owner-only from creation where a mode is set on it later (an existing file's, or ``mode``).
        private = current is not None or mode is not None
        tfd, temp_name, record = _create_temp(dfd, name, existing=private, directory=directory)
        if dfd is None:
            check_placed(tfd, temp_name, shown)
        _write_all(tfd, data)
        if current is not None:
            _copy_metadata(tfd, current)
        if mode is not None and hasattr(os, "fchmod"):
            os.fchmod(tfd, mode)
        os.fsync(tfd)
        held = _check_unchanged(dfd, name, expect, shown)
        if temp_name is None:
            temp_name = _temp_name(name)
            record = record_pending(dfd, temp_name, directory)
            os.link(platform.proc_fd(tfd), temp_name, src_dir_fd=dfd, dst_dir_fd=dfd)
        if before_rename is not None:
            before_rename()
        # os.replace: rename(2) here; on Windows it replaces an existing target (rename fails).
        os.replace(temp_name, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        temp_name, renamed = None, True
        if after_rename is not None:
            after_rename()
        if dfd is not None:
            os.fsync(dfd)
        else:
            check_landed(tfd, name, shown)
        return len(data)
    except WriteError:
        raise
    except OSError as exc:
        raise (_not_durable(shown, exc) if renamed else _failure(shown, exc)) from None
    finally:
        if temp_name is not None:
            _remove_temp(dfd, temp_name, tfd)
        if tfd >= 0:
            os.close(tfd)
        _release(held, expect.size)
        clear_pending(record)


def remove_file(
    real: Path, *, expect: Snapshot, shown: str, removed: Callable[[], object] | None = None
) -> int:
    """Remove ``real`` if it is still as the caller read it (``expect``), and make the removal
    durable (an undone creation); 0, the bytes left. WriteError when it changed or cannot be
    removed. ``removed`` runs right after the unlink (like ``after_rename``)."""
    try:
        flags = os.O_RDONLY | platform.DIRECTORY
        dfd = open_components(real.parent, flags) if platform.has_dir_fd() else None
    except OSError as exc:
        raise _failure(shown, exc, "delete") from None
    name = real.name if dfd is not None else str(real)
    held = -1
    unlinked = False
    try:
        _check_target(_lstat_at(dfd, name), shown, dfd, name)
        held = _check_unchanged(dfd, name, expect, shown)
        os.unlink(name, dir_fd=dfd)
        unlinked = True
        if removed is not None:
            removed()
        if dfd is not None:
            os.fsync(dfd)
        return 0
    except WriteError:
        raise
    except OSError as exc:
        raise (_not_durable(shown, exc, "deleted") if unlinked else _failure(shown, exc, "delete")) from None
    finally:
        _release(held, expect.size)
        if dfd is not None:
            os.close(dfd)


def check_unchanged(real: Path, expect: Snapshot, shown: str) -> None:
    """The stale-write check alone: WriteError unless ``real`` is still as ``expect`` (absent
    where it was). A set checks each of its files again with it just before its first rename
    (fsio/changeset.py)."""
    try:
        flags = os.O_RDONLY | platform.DIRECTORY
        dfd = open_components(real.parent, flags) if platform.has_dir_fd() else None
    except FileNotFoundError:
        if not expect.exists:
            return  # its folder is made by the write: nothing is there yet
        raise _stale(shown, "it was deleted") from None
    except OSError as exc:
        raise _failure(shown, exc) from None
    name = real.name if dfd is not None else str(real)
    held = -1
    try:
        held = _check_unchanged(dfd, name, expect, shown)
    except OSError as exc:
        raise _failure(shown, exc) from None
    finally:
        _release(held, 0)
        if dfd is not None:
            os.close(dfd)


def _remove_temp(dfd: int | None, temp_name: str, tfd: int) -> None:
    """Remove a named temp that was not renamed. Without dir_fd its path may lead elsewhere by
    now (a swapped directory): remove the file where the handle says it is, if that is the
    temp itself, so neither the workspace nor any other directory keeps it. Only under the
    temp's own name: a rename that landed before an interruption (the handle is the target's
    now) is not undone by deleting the target."""
    if dfd is None and tfd >= 0:
        held = platform.fd_path(tfd)
        with contextlib.suppress(OSError):
            if (
                held is not None
                and os.path.basename(held) == os.path.basename(temp_name)
                and os.path.samestat(os.lstat(held), os.fstat(tfd))
            ):
                os.unlink(held)
                return
    with contextlib.suppress(OSError):
        os.unlink(temp_name, dir_fd=dfd)


def _lstat_at(dfd: int | None, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _check_target(st: os.stat_result | None, shown: str, dfd: int | None, name: str) -> None:
    if st is None:
        return
    if stat.S_ISLNK(st.st_mode):
        # The path was resolved through its symlinks before; a link here now is a swap.
        raise WriteError(
            f"`{shown}` was replaced by a symlink after its path was checked. Nothing was written."
        )
    if not stat.S_ISREG(st.st_mode):
        raise WriteError(f"`{shown}` is not a file.", "Invalid path")
    # Root passes access(2) on any file; the write bits still say what the owner wants.
    if not (st.st_mode & 0o222) or not os.access(name, os.W_OK, dir_fd=dfd):
        raise WriteError(
            f"`{shown}` is read-only (no write permission). Nothing was written. Make it writable "
            "first if it should change.",
            "Permission denied",
        )


def _temp_name(name: str) -> str:
    """A temp's name beside ``name`` (a full path stays one: no dir_fd)."""
    directory, name = os.path.split(name)
    return os.path.join(directory, _temp_base(name))


def _temp_base(name: str) -> str:
    # Unique per write: two processes writing one file never touch each other's temp. Cut by
    # bytes, not characters: NAME_MAX counts bytes (120 "é" are 240 of them).
    kept = os.fsdecode(os.fsencode(name)[:_TEMP_NAME_KEEP])
    return f".{kept}.{secrets.token_hex(8)}{TEMP_SUFFIX}"


def _create_temp(
    dfd: int | None, name: str, *, existing: bool, directory: str | None = None
) -> tuple[int, str | None, Path | None]:
    """An unnamed temp file in the directory, or a named one; (fd, name or None, its record)."""
    # A new file gets 0o666 minus the umask, as open(2) would give it; an existing file's mode
    # (or the caller's) is set on a temp that was owner-only until then, before it is visible.
    mode = 0o600 if existing else 0o666
    if dfd is not None and platform.has_tmpfile():
        try:
            fd = os.open(".", _TMPFILE | os.O_WRONLY | platform.CLOEXEC, mode, dir_fd=dfd)
            return fd, None, None
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
                raise
    temp = _temp_name(name)
    record = record_pending(dfd, temp, directory)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | platform.NOFOLLOW | platform.CLOEXEC | platform.BINARY
    try:
        return os.open(temp, flags, mode, dir_fd=dfd), temp, record
    except BaseException:
        clear_pending(record)
        raise


# What one write(2) asks for: a whole large file in one write can stall in the kernel's copy
# into the page cache (copy_folio_from_iter_atomic); 1 MiB writes keep each call short.
_WRITE_CHUNK = 1 << 20


def _write_all(fd: int, data: Content) -> None:
    for view in content_pieces(data):
        while view:
            n = os.write(fd, view[:_WRITE_CHUNK])
            view = view[n:]


def _copy_metadata(fd: int, st: os.stat_result) -> None:
    if not hasattr(os, "fchmod"):  # pragma: no cover - Windows: no owners, no mode bits to keep
        return
    if st.st_uid != os.geteuid() or st.st_gid != os.getegid():
        with contextlib.suppress(OSError):  # only root (or the group's member) may do this
            os.fchown(fd, st.st_uid, st.st_gid)
    # Minus setuid/setgid: the new content is the model's, and a program that ran with its
    # owner's rights must not keep them (the kernel clears them too when it is written).
    os.fchmod(fd, stat.S_IMODE(st.st_mode) & ~(stat.S_ISUID | stat.S_ISGID))


def _check_unchanged(dfd: int | None, name: str, expect: Snapshot, shown: str) -> int:
    """The stale-write check: size and mtime, then the status or, failing that, the content
    as the caller read it (compared, or hashed where the snapshot holds only its hash).

    Returns the target, open (-1 when there is none, or where an open file cannot be renamed
    over): the caller holds it across the rename and lets :func:`_release` close it."""
    st = _lstat_at(dfd, name)
    if st is None:
        if expect.exists:
            raise _stale(shown, "it was deleted")
        return -1
    if not expect.exists:
        raise _stale(shown, "it was created by someone else")
    if st.st_size != expect.size or st.st_mtime_ns != expect.mtime_ns:
        raise _stale(shown, "its size or modification time changed")
    # Its status through an open descriptor: on NFS an open revalidates the cached attributes
    # (close-to-open consistency), which a plain stat may serve from its cache.
    fd = _open_target(dfd, name)
    try:
        if not holds_snapshot(fd, expect):
            raise _stale(shown, "its content changed")
        if _HOLD_ACROSS_RENAME:
            return fd
    except BaseException:
        os.close(fd)
        raise
    os.close(fd)
    return -1


# rename(2) over a file frees its blocks in the call when no one holds it open (a large file's
# blocks take a noticeable part of the edit: docs/ARCHITECTURE.md, "Speed devices"). The write
# holds the replaced file open across the rename and closes it in a background thread, after
# the call's answer; small files are closed at once. On Windows an open file cannot be renamed
# over, so it is not held there.
_HOLD_ACROSS_RENAME = os.name == "posix"
_RELEASE_IN_BACKGROUND_BYTES = 1 << 20
_RELEASER = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="filegate-release")


def _release(fd: int, size: int) -> None:
    """Close the replaced file ``fd`` (-1: none), off the caller's path when it is large."""
    if fd < 0:
        return
    if size < _RELEASE_IN_BACKGROUND_BYTES:
        os.close(fd)
        return
    try:
        _RELEASER.submit(os.close, fd)
    except RuntimeError:  # the interpreter is shutting down: no new threads
        os.close(fd)


def _open_target(dfd: int | None, name: str) -> int:
    """The target, opened to check it is unchanged: in the pinned directory, or (no dir_fd)
    by its full path and then verified to be the file at that path, so a swapped directory
    cannot make the check read a file outside."""
    flags = os.O_RDONLY | platform.NONBLOCK
    if dfd is None:
        return open_then_verify(Path(name), flags)
    return os.open(name, flags | platform.NOFOLLOW | platform.CLOEXEC | platform.BINARY, dir_fd=dfd)


def _stale(shown: str, why: str) -> WriteError:
    return WriteError(
        f"`{shown}` changed on disk after the change was prepared ({why}). Nothing was written. "
        "Read the file again and redo the change.",
        "File changed",
    )


_REASONS = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EFBIG: "file too large for the file system or the process's file size limit",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENAMETOOLONG: "file name too long",
    errno.EISDIR: "it is a directory",
}


def failure_reason(exc: OSError) -> str:
    """Why a write failed, in words a user can act on (the file size limit named)."""
    return _REASONS.get(exc.errno or 0, exc.strerror or str(exc))


def _not_durable(shown: str, exc: OSError, done: str = "written") -> WriteError:
    """The file holds its new content (or is removed: ``done`` "deleted"), but its folder's
    fsync failed."""
    return WriteError(
        f"`{shown}` was {done}, but making the change durable failed: {failure_reason(exc)}. "
        "It may not survive a crash of the machine.",
        f"{done.capitalize()}, not durable",
    )


def _failure(shown: str, exc: OSError, verb: str = "write") -> WriteError:
    """The write (or, ``verb`` "delete", the removal) did not happen: why, in the user's words."""
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return WriteError(
            f"`{shown}` changed while being written (a symlink or file appeared in its path). "
            "Nothing was written."
        )
    reason = failure_reason(exc)
    brief = "Permission denied" if exc.errno in (errno.EACCES, errno.EPERM) else f"Failed to {verb} file"
    return WriteError(f"Failed to {verb} `{shown}`: {reason}. Nothing was written.", brief)
