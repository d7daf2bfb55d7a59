"""Temps a killed write may leave behind: each named temp is recorded in the state directory
while it exists, and swept at the next start (server/app.py calls sweep_pending_temps)."""

from __future__ import annotations

import contextlib
import os
import secrets
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
        record = pending_dir() / f"{os.getpid()}-{secrets.token_hex(8)}"
        record.parent.mkdir(parents=True, exist_ok=True)
        # As bytes: a name need not be valid UTF-8 (its undecodable bytes are surrogates here).
        record.write_bytes(os.fsencode(os.path.join(directory, temp_name)))
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
    try:
        records = list(pending_dir().iterdir())
    except OSError:
        return 0
    for record in records:
        pid = record.name.split("-", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
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


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
