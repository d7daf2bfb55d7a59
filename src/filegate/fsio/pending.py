"""The state directory, owner-only (:func:`private_dir`), and the temps a killed write may leave
behind: each named temp is recorded in the state directory while it exists, and swept at the
next start (server/app.py calls sweep_pending_temps)."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from filegate.fsio import platform

# Named temps (the fallback when O_TMPFILE is unsupported) end with this; a SIGKILL between
# creating and renaming one can leave it behind, hidden (leading dot).
TEMP_SUFFIX = ".filegate.tmp"

# --- temps a killed process may leave: recorded while they exist, swept at the next start ---


def state_dir() -> Path:
    """filegate's state directory of this user (outside any workspace): $XDG_STATE_HOME/filegate."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "filegate"


def shown_home_relative(path: Path | str) -> str:
    """A path as filegate names it to its user: under the home folder as ``~/…``, escaped (the
    state folder's place, without the user's name)."""
    from filegate.policy.escape import escape

    home = os.path.expanduser("~").rstrip(os.sep)
    text = str(path)
    if home and (text == home or text.startswith(home + os.sep)):
        text = "~" + text[len(home) :]
    return escape(text)


def pending_dir() -> Path:
    """Where in-flight named temps are recorded."""
    return state_dir() / "pending"


class NotPrivate(PermissionError):
    """A folder of the state directory that is not this user's own folder (another user's, not
    a folder, a link below the state directory): it is not used."""


def private_dir(*parts: str) -> Path:
    """The folder ``parts`` of the state directory (none: the state directory itself) made
    owner-only, whatever the umask, with each folder from the state directory down to it: a
    missing one is made 0700 (as are missing parents above the state directory, XDG's rule),
    and an existing one of this user whose mode lets others in (made under umask 000, or by an
    older filegate) is narrowed to 0700 — the state directory is filegate's own, and another
    user who can list or add to it can hold a path's lock file or plant records. One that is
    another user's, not a folder, or a link below the state directory raises
    :class:`NotPrivate` (an OSError: the callers' best effort). When all is well it costs one
    lstat a folder (every write takes a lock here)."""
    top = str(state_dir())
    here = top
    for name in ("", *parts):
        here = os.path.join(here, name) if name else here
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            _make(here)
        else:  # one lstat when all is well (every write takes a lock here): nothing to change
            if stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700 and _ours(st):
                continue
        _owner_only(here, here == top)
    return Path(here)


def _make(folder: str) -> None:
    try:
        os.mkdir(folder, 0o700)  # a umask only narrows it
    except FileExistsError:
        pass  # made meanwhile by another process: judged as any existing one
    except FileNotFoundError:  # the state directory's parents (XDG_STATE_HOME): made 0700 too
        os.makedirs(os.path.dirname(folder), mode=0o700, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)


def _ours(st: os.stat_result) -> bool:
    return not hasattr(os, "geteuid") or st.st_uid == os.geteuid()


def _owner_only(folder: str, top: bool) -> None:
    if os.name == "nt":  # pragma: no cover - no owners or mode bits: the profile's ACL decides
        return
    # Opened without following, then judged and narrowed on the descriptor: a name swapped
    # meanwhile for a link cannot turn the chmod onto another folder. The state directory itself
    # may be the user's own link (a dotfile manager's) to a folder of theirs.
    follow = top and os.path.islink(folder)
    if follow and os.lstat(folder).st_uid != os.geteuid():
        raise NotPrivate(f"{folder} is not a folder of this user")
    flags = os.O_RDONLY | platform.DIRECTORY | platform.CLOEXEC | (0 if follow else platform.NOFOLLOW)
    fd = os.open(folder, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            raise NotPrivate(f"{folder} is not a folder of this user")
        if stat.S_IMODE(st.st_mode) != 0o700:
            os.fchmod(fd, 0o700)
    finally:
        os.close(fd)


def record_pending(dfd: int | None, temp_name: str, directory: str | None = None) -> Path | None:
    """Note a named temp before it exists, so a restart can remove it if this process dies
    before renaming it. Best effort: without a writable state dir nothing is recorded."""
    try:
        # The directory's path as resolved (it was opened from it component by component), or
        # the open directory's own name where the caller did not say (/proc, F_GETPATH).
        if directory is None:
            directory = "" if dfd is None else platform.fd_path(dfd)
        if directory is None:
            return None
        record = private_dir("pending") / f"{os.getpid()}-{platform.life_token()}"
        # As bytes: a name need not be valid UTF-8 (its undecodable bytes are surrogates here).
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | platform.NOFOLLOW | platform.CLOEXEC | platform.BINARY
        fd = os.open(record, flags, 0o600)
        try:
            os.write(fd, os.fsencode(os.path.join(directory, temp_name)))
        finally:
            os.close(fd)
        return record
    except OSError:
        return None


def clear_pending(record: Path | None) -> None:
    if record is not None:
        with contextlib.suppress(OSError):
            record.unlink()


def sweep_pending_temps() -> int:
    """Remove the temps that killed filegate processes left behind; return how many."""
    removed = 0
    if not os.path.lexists(pending_dir()):
        return 0  # nothing recorded (a read-only server never makes the state directory)
    try:
        # Made owner-only first: a record another user planted names a file to remove.
        records = list(private_dir("pending").iterdir())
    except OSError:
        return 0
    for record in records:
        pid, _, token = record.name.partition("-")
        if (
            not pid.isdigit()
            or platform.process_alive(int(pid), platform.life_of(token))
            or not _mine(record)
        ):
            continue
        with contextlib.suppress(OSError):
            temp = os.fsdecode(record.read_bytes())
            st = os.lstat(temp)
            if temp.endswith(TEMP_SUFFIX) and stat.S_ISREG(st.st_mode):
                os.unlink(temp)
                removed += 1
        with contextlib.suppress(OSError):
            record.unlink()
    return removed


def _mine(record: Path) -> bool:
    """A record this user wrote (one left from when the folder was open to others is not)."""
    try:
        st = os.lstat(record)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and (not hasattr(os, "geteuid") or st.st_uid == os.geteuid())
