"""A write by path where the OS cannot pin a directory (no dir_fd: Windows, or
FILEGATE_SIMULATE=no-dirfd): the checks fsio/atomic.py makes instead, so that a symlink
swapped into the path since it was resolved makes the write fail, not land elsewhere (the
README's race window names what is left)."""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from filegate.errors import WriteError
from filegate.fsio import platform
from filegate.fsio.safeopen import open_then_verify


def check_parent_by_path(parent: Path, create: bool) -> None:
    """The parent directory exists (made if ``create``) and its path has no symlink swapped in
    since it was resolved (no dir_fd to pin it: the rename's race window, see the README)."""
    if create:
        _make_dirs_by_path(parent)
    os.close(open_then_verify(parent, os.O_RDONLY | platform.DIRECTORY))


def _make_dirs_by_path(parent: Path) -> None:
    """Make the missing directories of ``parent`` one at a time by path (no dir_fd), each
    checked to be where its path says once made: one made through a symlink swapped into the
    chain since the path was resolved (``os.makedirs`` would follow it and leave directories
    outside the workspace) is removed where it really is, and the write fails with ELOOP."""
    missing: list[Path] = []
    here = parent
    while not os.path.lexists(here) and here != here.parent:
        missing.append(here)
        here = here.parent
    for directory in reversed(missing):
        made = False
        try:
            os.mkdir(directory, 0o777)
            made = True
        except FileExistsError:
            pass  # made meanwhile by someone else, or a file: the open below tells
        fd = os.open(directory, os.O_RDONLY | platform.DIRECTORY | platform.NOFOLLOW | platform.CLOEXEC)
        try:
            held = platform.fd_path(fd)
            if held is None:
                placed = os.path.normcase(os.path.realpath(directory)) == os.path.normcase(str(directory))
            else:
                placed = os.path.normcase(held) == os.path.normcase(str(directory))
            if not placed:
                if made and held is not None:
                    with contextlib.suppress(OSError):
                        if os.path.samestat(os.lstat(held), os.fstat(fd)):
                            os.rmdir(held)
                elif made:
                    with contextlib.suppress(OSError):
                        os.rmdir(directory)  # by the same path that made it
                raise OSError(errno.ELOOP, "a directory was made through a swapped-in symlink")
        finally:
            os.close(fd)


def check_placed(tfd: int, temp: str | None, shown: str) -> None:
    """Without dir_fd the temp was created by a path, which a symlink swapped into it since
    the check can redirect out of the workspace: before a byte is written, the temp's final
    path (the OS's name for the handle) must be the path it was created by. A temp that landed
    elsewhere is removed where it is, and nothing is written. The rename that follows goes by
    the same path: a swap after this check makes the temp's name resolve elsewhere, so the
    rename fails (ENOENT) instead of moving it out. Where the OS cannot name a handle, the
    temp's directory must still resolve to itself and its path lead to the very file held (a
    swap undone again between these checks is not seen: the README's race window)."""
    assert temp is not None  # without dir_fd the temp is always a named one
    held = platform.fd_path(tfd)
    if held is not None:
        placed = os.path.normcase(held) == os.path.normcase(temp)
    else:
        directory = os.path.dirname(temp)
        placed = os.path.normcase(os.path.realpath(directory)) == os.path.normcase(
            directory
        ) and os.path.samestat(os.lstat(temp), os.fstat(tfd))
    if not placed:
        raise WriteError(
            f"`{shown}` changed while being written (a symlink appeared in its path). Nothing was written."
        )


def check_landed(tfd: int, target: str, shown: str) -> None:
    """Without dir_fd the rename goes by two paths, which the OS looks up one after the other:
    a directory on them swapped for a link in between moves the file into the directory the
    link leads to (replacing a file of that name there). That cannot be undone, but it is not
    passed over: where the OS names the handle, the file must now be at the target's path, or
    the write is reported as having landed elsewhere (the README's race window on Windows)."""
    held = platform.fd_path(tfd)
    if held is not None and os.path.normcase(held) != os.path.normcase(target):
        raise WriteError(
            f"`{shown}` changed while being written: a link swapped into its path moved the "
            "written file elsewhere as it was put in place (possibly outside the workspace). "
            f"Check `{shown}` and its folder, then retry."
        )
