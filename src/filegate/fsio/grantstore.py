"""The grants' part of the state directory (SPEC §11): the key that seals grant handles, shared
by every filegate process of this user (replicas serving one workspace), and the record of the
grants given, which `filegate rules` lists::

    grants/
      key            32 random bytes, owner-only; made once, by whichever process comes first
      grants.jsonl   one line per grant given (who, what, where, until when)
      lock           taken while the record is appended to or compacted

The key is made in a temp file of its own (exclusive create, owner-only, fsynced) and linked to
its name, which fails when another process made it first: no process ever reads a key half
written, and every process ends up with the first one. A key file that is not an owner-only
regular file of this user of exactly 32 bytes is refused (:class:`GrantStoreError`): a key others
could read would let them forge grants.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from filegate.fsio import platform
from filegate.fsio.pending import private_dir, state_dir
from filegate.policy.escape import escape_log

KEY_BYTES = 32
# POSIX: owners, mode bits and directory fsync (Windows has none of them).
_POSIX = os.name != "nt"
# Every open of a name here: never through a link, never inherited, and never waiting (a FIFO
# planted as the key or the record would block the open until someone opened its other end).
_NEVER_WAITING = platform.NOFOLLOW | platform.CLOEXEC | platform.NONBLOCK
# The record is compacted (expired and ended grants dropped) once it grows past this.
MAX_RECORD_BYTES = 256 << 10


class GrantStoreError(Exception):
    """The grants' key cannot be made or used; ``str()`` says why, naming the file."""


def grants_dir() -> Path:
    return state_dir() / "grants"


def grant_key() -> bytes:
    """This user's grant key, made on first use (blocking: call it in a thread)."""
    path = grants_dir() / "key"
    try:
        root = private_dir("grants")  # owner-only, this user's own (or NotPrivate, an OSError)
        key = _read_key(path)
        if key is not None:
            return key
        temp = root / f"key.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | platform.NOFOLLOW | platform.CLOEXEC, 0o600)
        try:
            try:
                os.write(fd, os.urandom(KEY_BYTES))
                os.fsync(fd)
            finally:
                os.close(fd)
            with contextlib.suppress(FileExistsError):  # another process made it first: theirs
                os.link(temp, path)
                _fsync_dir(root)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temp)
        key = _read_key(path)
    except OSError as exc:
        raise GrantStoreError(f"{path}: {exc.strerror or exc}") from None
    if key is None:
        raise GrantStoreError(f"{path} vanished while it was made")
    return key


def _read_key(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | _NEVER_WAITING | platform.BINARY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        why = f"{path} cannot be opened ({exc.strerror}); remove it to make a new key"
        raise GrantStoreError(why) from None
    try:
        st = os.fstat(fd)
        mine = not hasattr(os, "geteuid") or st.st_uid == os.geteuid()
        private = not _POSIX or stat.S_IMODE(st.st_mode) & 0o077 == 0
        if not stat.S_ISREG(st.st_mode) or not mine or not private or st.st_size != KEY_BYTES:
            raise GrantStoreError(
                f"{path} is not an owner-only file of this user of {KEY_BYTES} bytes; remove it to "
                "make a new key (grants sealed with the old one then stop working)"
            )
        data = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    return data if len(data) == KEY_BYTES else None


# --- the record of grants given ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GrantRecord:
    """One grant as `filegate rules` lists it. ``expires`` None: it lasts as long as the
    session that holds it (``pid``'s process; an HTTP session also ends when it goes idle)."""

    id: str
    time: float
    kind: str  # "folder" or "file"
    target: str  # the folder or file as shown (`src/`), escaped as every shown name
    workspace: str  # the workdir, as the process serving it named it
    client: str  # the client's own name, escaped ("" when it gave none)
    held: str  # "stdio session", "HTTP session", "handle"
    expires: float | None
    pid: int

    def live(self, now: float) -> bool:
        """Not expired, and (a session's) not ended: its process still runs and no end was
        recorded (:func:`record_end`)."""
        if self.expires is not None:
            return now < self.expires
        return platform.process_alive(self.pid)


def record_grant(record: GrantRecord) -> None:
    """Append ``record`` (blocking: call it in a thread); the record compacted when large."""
    line = _line(record)
    with _locked() as root:
        path = root / "grants.jsonl"
        try:
            size = os.stat(path).st_size
        except FileNotFoundError:
            size = 0
        if size + len(line) > MAX_RECORD_BYTES:
            _compact(path)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NEVER_WAITING, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)


def record_end(grant_id: str) -> None:
    """Note that a session's grant ended with its session (best effort, never raises). One
    append without the lock: this runs when the session is collected, which may happen on any
    thread at any allocation, the lock's holder's included."""
    line = json.dumps({"ended": grant_id, "time": time.time()}, separators=(",", ":")).encode() + b"\n"
    with contextlib.suppress(OSError):
        fd = os.open(grants_dir() / "grants.jsonl", os.O_WRONLY | os.O_APPEND | _NEVER_WAITING)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)


def live_grants(now: float | None = None) -> list[GrantRecord]:
    """The grants recorded that still hold, oldest first (blocking)."""
    now = time.time() if now is None else now
    return [r for r in _records(grants_dir() / "grants.jsonl") if r.live(now)]


def listing(workdir: str, now: float | None = None) -> str:
    """The grants in force for the workspace at ``workdir``, for `filegate rules`: edits under
    `src/`, its holder and time left, the client (names escaped when recorded, and again here
    without doubling: the file is read back)."""
    now = time.time() if now is None else now
    lines = []
    for r in live_grants(now):
        if r.workspace != workdir:
            continue
        if r.expires is None:
            held = f"while its {r.held} lasts (server process {r.pid})"
        else:
            left = max(1, round((r.expires - now) / 60))
            until = time.strftime("%H:%M UTC", time.gmtime(r.expires))
            held = f"{r.held}, {left} minute{'s' if left != 1 else ''} left (until {until})"
        scope = f"edits {'under' if r.kind == 'folder' else 'of'} `{escape_log(r.target)}`"
        lines.append(f"  {escape_log(r.id)}  {scope}  {held}; client: {escape_log(r.client) or '-'}")
    return "\n".join(lines) or "  (none)"


def _records(path: Path) -> list[GrantRecord]:
    try:
        fd = os.open(path, os.O_RDONLY | _NEVER_WAITING)
    except OSError:
        return []
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return []
        raw = f.read(4 * MAX_RECORD_BYTES)
    found = []
    ended = set()
    for line in raw.splitlines():
        try:
            fields = json.loads(line)
            if isinstance(fields, dict) and "ended" in fields:
                ended.add(fields["ended"])
            else:
                found.append(GrantRecord(**fields))
        except (ValueError, TypeError):
            continue  # a damaged or foreign line: not a grant
    return [r for r in found if r.id not in ended]


def _line(record: GrantRecord) -> bytes:
    return json.dumps(asdict(record), separators=(",", ":"), ensure_ascii=True).encode() + b"\n"


def _compact(path: Path) -> None:
    now = time.time()
    kept = b"".join(_line(r) for r in _records(path) if r.live(now))
    temp = path.with_name(f"grants.{secrets.token_hex(4)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | platform.NOFOLLOW | platform.CLOEXEC, 0o600)
    try:
        os.write(fd, kept)
    finally:
        os.close(fd)
    os.replace(temp, path)


@contextlib.contextmanager
def _locked() -> Iterator[Path]:
    root = private_dir("grants")
    fd = os.open(root / "lock", os.O_RDWR | os.O_CREAT | platform.NOFOLLOW | platform.CLOEXEC, 0o600)
    try:
        if os.name != "nt":
            import fcntl  # POSIX only

            fcntl.flock(fd, fcntl.LOCK_EX)
        yield root
    finally:
        os.close(fd)  # releases the flock


def _fsync_dir(path: Path) -> None:
    if not _POSIX:  # pragma: no cover - no directory fsync on Windows
        return
    fd = os.open(path, os.O_RDONLY | platform.CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
