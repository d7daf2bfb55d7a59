"""Every file ``filegate install`` reads or writes goes through here (SPEC §5).

``install --project`` runs inside checkouts nobody vetted, and ``--config`` may name a file in
a folder someone else controls. So each file it touches (the client's file, the temp it is
written through, its backup, a sibling such as Kimi Code's ``config.toml``) is:

- found without following a symlink it did not expect (:func:`locate`): below a project, no
  link at all, neither the file nor a folder on the way; a ``--config`` file that is a link is
  refused. Only the user's own client file in its usual place may be a link (dotfiles kept in
  a repository): the user made it, so it is written where it points;
- read through the server's no-follow, non-blocking open (``fsio/safeopen.py``);
- written by the server's atomic replace (``fsio/atomic.py``): a temp created exclusively in
  the file's folder (unnamed, or a random name with ``O_EXCL|O_NOFOLLOW``), every folder on
  the way opened without following, stale-checked against what was read, renamed into place;
- owner-only when it holds a token, as a new file, and as a backup (a copy only its owner
  needs, which may hold an older token).

The rules themselves live in fsio; this module only says which of them each file gets.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from filegate.errors import WriteError
from filegate.fsio import platform
from filegate.fsio.atomic import replace_file
from filegate.fsio.safeopen import open_components
from filegate.fsio.snapshot import Snapshot, read_all
from filegate.policy.escape import escape

# Where a file's path came from, which decides the symlinks it may go through:
# "user": the client's own file under the user's HOME (a link is the user's dotfiles: followed);
# "given": --config, a file the user named, maybe in a folder someone else controls;
# "project": --project, a file inside a checkout (no link anywhere below the project).
Trust = Literal["user", "given", "project"]

# ~/.claude.json keeps every project's history: megabytes, never near this.
CONFIG_LIMIT = 64 << 20
OWNER_ONLY = 0o600


class InstallError(Exception):
    """A configuration that cannot be written as asked; the message is the whole story."""


@dataclass(frozen=True)
class Loaded:
    """A client's file as read: its real path, its text ("" when absent), what it was."""

    path: Path
    text: str
    snapshot: Snapshot


def shown(path: Path) -> str:
    return escape(str(path))


def locate(path: Path, trust: Trust, project: Path | None = None) -> Path:
    """The real path to read and write for ``path``, no symlink on it; InstallError where
    ``trust`` allows none (see the module docstring). ``project`` is the resolved project
    folder, for ``trust="project"``."""
    path = Path(os.path.abspath(path))
    try:
        return _locate(path, trust, project)
    except OSError as exc:  # a name too long, a folder that cannot be listed, …
        raise InstallError(_failure(path, exc)) from None


def _locate(path: Path, trust: Trust, project: Path | None) -> Path:
    if trust == "user":
        real = Path(os.path.realpath(path))
    elif trust == "given":
        real = Path(os.path.realpath(path.parent)) / path.name
        if real.is_symlink():
            raise InstallError(
                f"{shown(path)} is a symbolic link; filegate install does not write through a link "
                "it did not make. Give the file it points to as --config if that is the one you mean"
            )
    else:
        assert project is not None
        real = path
        parts = path.relative_to(project).parts
        for step in (project.joinpath(*parts[:i]) for i in range(1, len(parts) + 1)):
            if step.is_symlink():
                raise InstallError(
                    f"{shown(step)} is a symbolic link inside the project; filegate install "
                    "does not follow links in a checkout (one could point at any file of yours). "
                    "Nothing was changed; remove the link or use --config FILE"
                )
    _check_folders(real)
    return real


def _check_folders(real: Path) -> None:
    """The nearest existing folder on the way is a folder: the one-line reason where a file
    stands in for one, before anything is made."""
    for ancestor in real.parents:
        if os.path.lexists(ancestor):
            if not ancestor.is_dir():
                raise InstallError(
                    f"{shown(ancestor)} is a file where a folder should be; nothing was changed"
                )
            return


def load(real: Path) -> Loaded:
    """``real`` (from :func:`locate`) opened without following a link and read whole."""
    try:
        fd = open_components(real, os.O_RDONLY | platform.NONBLOCK)
    except FileNotFoundError:
        return Loaded(real, "", Snapshot.absent())
    except OSError as exc:
        raise InstallError(_failure(real, exc)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InstallError(f"{shown(real)} is not a regular file; nothing was changed")
        if st.st_size > CONFIG_LIMIT:
            raise InstallError(
                f"{shown(real)} is {st.st_size} bytes, more than a client's file holds "
                f"({CONFIG_LIMIT} at most); nothing was changed"
            )
        data, snapshot = read_all(fd, CONFIG_LIMIT, shown(real))
    except WriteError as exc:  # it grew past the limit while being read
        raise InstallError(exc.message.replace("`", "")) from None
    finally:
        os.close(fd)
    try:
        return Loaded(real, data.decode("utf-8"), snapshot)
    except UnicodeDecodeError:
        raise InstallError(f"{shown(real)} is not UTF-8 text; nothing was changed") from None


def save(loaded: Loaded, text: str, *, private: bool) -> Path | None:
    """Replace ``loaded``'s file with ``text``, backing up the old one first; the backup's path.

    ``private``: the text holds a token, so the file becomes owner-only whatever its mode was.
    A new file is owner-only too (a client's file gathers tokens); otherwise its mode stays."""
    backup = None
    if loaded.snapshot.exists:
        backup = _write_backup(loaded)
    mode = OWNER_ONLY if private or not loaded.snapshot.exists else None
    _replace(loaded.path, text.encode("utf-8"), loaded.snapshot, mode)
    return backup


def make_private(loaded: Loaded) -> bool:
    """Make ``loaded``'s file owner-only where others could read it (a token written by an
    earlier install, when files kept their mode); True when its mode changed. Through a
    descriptor opened without following, so a link swapped in is not chmod-ed through."""
    if not loaded.snapshot.exists or not hasattr(os, "fchmod"):
        return False
    try:
        fd = open_components(loaded.path, os.O_RDONLY | platform.NONBLOCK)
    except OSError as exc:
        raise InstallError(_failure(loaded.path, exc)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not stat.S_IMODE(st.st_mode) & ~OWNER_ONLY:
            return False
        os.fchmod(fd, OWNER_ONLY)
        return True
    finally:
        os.close(fd)


def _write_backup(loaded: Loaded) -> Path:
    """The old bytes as ``<file>.<time>.bak`` (``-2``, ``-3``… within one second), created
    where no file or link of that name is (a planted one is passed over, never written)."""
    real = loaded.path
    stamp = time.strftime("%Y%m%d-%H%M%S")
    backup = real.with_name(f"{real.name}.{stamp}.bak")
    n = 1
    while os.path.lexists(backup):
        n += 1
        backup = real.with_name(f"{real.name}.{stamp}-{n}.bak")
    assert loaded.snapshot.content is not None  # read_all keeps what it read
    _replace(backup, loaded.snapshot.content, Snapshot.absent(), OWNER_ONLY)
    return backup


def _replace(real: Path, data: bytes, expect: Snapshot, mode: int | None) -> None:
    try:
        replace_file(real, data, expect=expect, shown=shown(real), create_dirs=True, mode=mode)
    except WriteError as exc:
        if exc.brief == "File changed":
            raise InstallError(
                f"{shown(real)} changed while filegate install was merging it; nothing was changed. "
                "Run the command again"
            ) from None
        raise InstallError(exc.message.replace("`", "")) from None


def _failure(real: Path, exc: OSError) -> str:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return f"{shown(real)} is a symbolic link now, or one appeared on its way; nothing was changed"
    return f"{shown(real)}: {exc.strerror or exc}; nothing was changed"
