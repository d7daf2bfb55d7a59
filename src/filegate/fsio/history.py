# size: one job, the write history store (pre-images linked or copied, log, ids, bounds):
# its steps share one lock and one crash-safety order
"""The write history (SPEC §8.4): every write's pre-image and one JSON line, so it can be undone.

Layout, owner-only (directories 0700, files 0600), in the state directory outside every
workspace::

    history/
      history.jsonl     one line per write (its record), then one per outcome ("done"/"failed")
      objects/ab/cd…    pre-images, named by their SHA-256 (identical ones are kept once)
      lock              the flock every process sharing the directory takes to append

A write calls :meth:`WriteHistory.begin` before its rename (while its temp file is written):
the pre-image's bytes are made durable, then the record line is appended and fsynced, then the
pre-image's name (its directory), and only then may the rename come, so a crash at any instant
leaves the old content recoverable (before the rename the file itself still holds it).
:meth:`WriteHistory.finish` appends the outcome after the rename (not fsynced: a record without
an outcome is "unconfirmed", and whether the write landed is told by the file's content against
the record's hashes). A sensitive file's record keeps no pre-image, no hash and no size: it says
"not kept".

Write ids (``w-`` and six hex digits) are drawn at random and checked, under the flock,
against every id the file holds, evicted ones included (their tombstones): unique across the
processes that share the directory.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import os
import secrets
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from filegate.errors import WriteError
from filegate.fsio import platform
from filegate.fsio.atomic import failure_reason
from filegate.fsio.pending import state_dir
from filegate.fsio.safeopen import read_whole
from filegate.fsio.snapshot import Snapshot, holds_snapshot
from filegate.fsio.spliced import Content, content_pieces, content_sha256, sha256_pair
from filegate.policy.escape import escape
from filegate.policy.workspace import ResolvedPath

log = logging.getLogger("filegate.history")

# The defaults of --history-max-bytes and --history-max-age (SPEC §8.4).
DEFAULT_MAX_BYTES = 1 << 30
DEFAULT_MAX_AGE_S = 14 * 86400.0
# Eviction frees down to this share of the byte bound, so a history at its bound is not
# rewritten on every write. Alike for age: once a write is past --history-max-age, the writes
# past this share of it go with it (and tombstones alike), so a history kept busy for longer
# than the age bound is rewritten once per tenth of it, not on every write (a rewrite of a
# history of 7,000 writes and 70,000 tombstones took ~0.5 s).
EVICT_TO = 0.9
# An evicted write's tombstone (its id, so the id is never reused and an undo of it says it was
# evicted) is kept this many times the age bound.
TOMBSTONE_AGE_FACTOR = 10
# Random draws before giving up on a free id (16.7 million ids; a draw collides with the
# history's ids rarely, ten in a row only when it is nearly full).
ID_DRAWS = 64

_NOFOLLOW = platform.NOFOLLOW
_CLOEXEC = platform.CLOEXEC

State = Literal["done", "failed", "unconfirmed"]


@dataclass(frozen=True, slots=True)
class Limits:
    max_bytes: int = DEFAULT_MAX_BYTES
    max_age_s: float = DEFAULT_MAX_AGE_S


@dataclass(frozen=True, slots=True)
class Entry:
    """One write as its history line says it. ``before``/``after``: SHA-256 of the content
    before and after ("" where the file did not exist before / was removed after); ``kept``:
    its pre-image is stored (False for a sensitive file, and for a pre-image past the bound)."""

    id: str
    time: float
    client: str
    tool: str
    path: str
    route: str
    kept: bool
    before: str = ""
    after: str = ""
    size_before: int | None = None
    size_after: int | None = None
    mode: int | None = None  # the permission bits before the write (None: created)
    created: bool = False  # the file did not exist before
    removed: bool = False  # the write removed the file (an undone creation)
    not_kept: str = ""  # why not: "sensitive file", "larger than --history-max-bytes"
    state: State = "unconfirmed"

    def line(self) -> dict[str, object]:
        # Empty fields are left out: a sensitive file's line has no hash, size or mode at all.
        record = {k: v for k, v in dataclasses.asdict(self).items() if k != "state"}
        return {k: v for k, v in record.items() if k in _REQUIRED or not (v is None or v == "" or v is False)}

    @classmethod
    def parse(cls, record: dict[str, object]) -> Entry:
        return cls(**{k: v for k, v in record.items() if k in _RECORD_FIELDS})  # type: ignore[arg-type]


# What a record line may set (an outcome comes on its own line).
_RECORD_FIELDS = frozenset(f.name for f in dataclasses.fields(Entry)) - {"state"}
# Every record line has these; the others are there only when they say something.
_REQUIRED = frozenset({"id", "time", "client", "tool", "path", "route", "kept"})


def history_dir() -> Path:
    return state_dir() / "history"


class HistoryError(Exception):
    """The history cannot keep this write; the write does not happen (a crash must never
    lose both versions, so no write goes on without its pre-image)."""


class WriteHistory:
    """The history of one state directory, shared by every process using it."""

    def __init__(self, root: Path | None = None, limits: Limits | None = None) -> None:
        self.root = root if root is not None else history_dir()
        self.limits = limits or Limits()
        self._entries: dict[str, Entry] = {}  # id -> entry, oldest first
        self._tombstones: dict[str, float] = {}  # evicted id -> when it was evicted
        self._seen: tuple[int, int] = (-1, 0)  # (inode, offset) of history.jsonl read so far
        self._blob_sizes: dict[str, int] = {}  # hash -> size, of the kept pre-images
        # Kept up to date so a write's look at the bounds costs the same for a history of ten
        # writes and of 50,000 (a scan of each took ~6 ms a write there): the bytes kept, the
        # oldest write's time and the oldest tombstone's (the scans run when one is past).
        self._kept_total = 0
        self._oldest = math.inf
        self._oldest_tombstone = math.inf
        # write id -> (hash, inode): a pre-image kept as a link, not yet made the history's alone
        self._linked: dict[str, tuple[str, int]] = {}

    # --- paths ------------------------------------------------------------------------------

    @property
    def log_path(self) -> Path:
        return self.root / "history.jsonl"

    def object_path(self, digest: str) -> Path:
        return self.root / "objects" / digest[:2] / digest[2:]

    # --- a write ----------------------------------------------------------------------------

    def begin(
        self,
        tool: str,
        rp: ResolvedPath,
        client: str,
        route: str,
        old: bytes | None,
        new: Content | None,
        expect: Snapshot | None = None,
    ) -> str:
        """Keep ``old`` (None: the file does not exist, or is sensitive) durably and append the
        write's record; return its id. ``new`` None: the write removes the file. ``expect``:
        the file as ``old`` was read from it, so its very inode can be kept (see
        :func:`_link`). Blocking (call in a thread, under the file's lock). WriteError when the
        history cannot keep it: then the write must not happen (a crash must never lose both
        versions)."""
        try:
            mode = None if old is None else stat.S_IMODE(os.lstat(rp.real).st_mode)
            source = _Source(rp.real, expect) if expect is not None and old is not None else None
            # Hashed before the lock: the passes over both contents hold no other write up.
            hashes = None if rp.sensitive else Hashes.of(old, new)
            return self._begin(tool, str(rp.real), client, route, old, mode, new, hashes, source)
        except (OSError, HistoryError) as exc:
            why = escape(failure_reason(exc)) if isinstance(exc, OSError) else str(exc)
            raise WriteError(
                f"Failed to keep the previous content of `{rp.shown}` in the write history ({why}). "
                "Nothing was written. `--history off` turns the history off.",
                "History failed",
            ) from None

    def _begin(
        self,
        tool: str,
        path: str,
        client: str,
        route: str,
        old: bytes | None,
        mode: int | None,
        new: Content | None,
        hashes: Hashes | None,
        source: _Source | None = None,
    ) -> str:
        """``hashes`` None: a sensitive file (nothing of its content is hashed or kept)."""
        with self._locked():
            self._refresh()
            write_id = self._new_id()
            entry = Entry(write_id, time.time(), client, tool, path, route, kept=hashes is not None)
            fresh = ""  # the hash of a pre-image kept by this write, not there before
            if hashes is None:
                entry = dataclasses.replace(entry, not_kept="sensitive file")
            else:
                entry, fresh = self._kept(entry, old, mode, new, hashes, source)
            try:
                self._evict(incoming=entry)
                self._append(entry.line(), durable=True)
                if fresh:  # after the record's fsync, which on a journaling file system
                    _fsync_dir(self.object_path(fresh).parent)  # committed it already
            except BaseException:  # no record: its pre-image goes too (nothing left behind)
                self._linked.pop(write_id, None)
                if fresh:
                    with contextlib.suppress(OSError):
                        os.unlink(self.object_path(fresh))
                raise
            self._add(entry)
            return write_id

    def finish(self, write_id: str, ok: bool) -> None:
        """The write's outcome, after its rename (or its failure); no-op for ``""``."""
        if not write_id:
            return
        outcome: State = "done" if ok else "failed"
        # Not fsynced, and a failure to append it is not the write's: a record without its
        # outcome reads as "unconfirmed" (the next look at the file reads it back in).
        with contextlib.suppress(OSError), self._locked():
            self._append({"id": write_id, "outcome": outcome}, durable=False)
            linked = self._linked.pop(write_id, None)
            if linked is not None:
                self._make_private(*linked, landed=ok)

    def _kept(
        self,
        entry: Entry,
        old: bytes | None,
        mode: int | None,
        new: Content | None,
        hashes: Hashes,
        source: _Source | None,
    ) -> tuple[Entry, str]:
        """``entry`` with its hashes and sizes, its pre-image kept; and that pre-image's hash
        if this write stored it ("" when there is none, or it was kept already)."""
        size_after = None if new is None else len(new)
        entry = dataclasses.replace(
            entry, after=hashes.after, size_after=size_after, removed=new is None, created=old is None
        )
        if old is None:
            return entry, ""
        before = hashes.before
        entry = dataclasses.replace(entry, before=before, size_before=len(old), mode=mode)
        if len(old) > self.limits.max_bytes:
            return dataclasses.replace(entry, kept=False, not_kept="larger than --history-max-bytes"), ""
        inode = self._store(before, old, source)
        if inode:
            self._linked[entry.id] = (before, inode)
        return entry, "" if inode is None else before

    def _store(self, digest: str, data: bytes, source: _Source | None = None) -> int | None:
        """The pre-image, its bytes durable before the record that names it (its name is made
        durable after the record, and both before the rename): the file's own inode linked in
        where it can be (its inode number), else a copy of ``data`` (0); None: kept already."""
        target = self.object_path(digest)
        if _kept_already(target, len(data)):
            return None  # content-addressed: already kept (renamed into place whole, once fsynced)
        _make_private_dir(target.parent)
        temp = target.parent / f"tmp-{os.getpid()}-{secrets.token_hex(6)}"
        inode = _link(source, data, temp) if source is not None else 0
        if not inode:
            _copy(data, temp)
        os.replace(temp, target)
        return inode

    def _make_private(self, digest: str, inode: int, *, landed: bool) -> None:
        """After the rename, the linked pre-image's inode has the history's name alone: made
        owner-only. Still named elsewhere (the write failed, or another name appeared), it is
        not the history's to keep: dropped when the write did not land (not needed), else
        replaced by a copy of its bytes while they are still the pre-image."""
        target = self.object_path(digest)
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
        if landed and content_sha256(data) == digest:
            temp = target.parent / f"tmp-{os.getpid()}-{secrets.token_hex(6)}"
            _copy(data, temp)
            os.replace(temp, target)
        else:
            os.unlink(target)

    # --- reading ----------------------------------------------------------------------------

    def entries(self) -> list[Entry]:
        """Every write still in the history, oldest first (outcomes merged in)."""
        if not os.path.lexists(self.root):  # nothing kept yet: a reader makes nothing, not even the lock
            self._reset((-1, 0))
            return []
        with self._locked():
            self._refresh()
        return list(self._entries.values())

    def find(self, write_id: str) -> Entry | None:
        self.entries()
        return self._entries.get(write_id)

    def evicted(self, write_id: str) -> bool:
        return write_id in self._tombstones

    def pre_image(self, entry: Entry) -> bytes:
        """The content before ``entry``'s write, checked against its hash (OSError/ValueError)."""
        with open(self.object_path(entry.before), "rb") as f:
            data = f.read()
        if content_sha256(data) != entry.before:
            raise ValueError(f"the kept copy of {entry.id} is damaged")
        return data

    def kept_bytes(self) -> int:
        return self._kept_total

    # --- the log ----------------------------------------------------------------------------

    def _refresh(self) -> None:
        """Read what other processes appended since the last look (the whole file again when
        it was rewritten by an eviction)."""
        try:
            fd = os.open(self.log_path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
        except FileNotFoundError:
            self._reset((-1, 0))
            return
        with os.fdopen(fd, "rb") as f:
            ino = os.fstat(fd).st_ino
            if ino != self._seen[0]:
                self._reset((ino, 0))
            f.seek(self._seen[1])
            chunk = f.read()
        end = chunk.rfind(b"\n") + 1  # a line being appended is read next time, whole
        for raw in chunk[:end].splitlines():
            self._apply(raw)
        self._seen = (ino, self._seen[1] + end)

    def _reset(self, seen: tuple[int, int]) -> None:
        self._entries.clear()
        self._tombstones.clear()
        self._blob_sizes.clear()
        self._kept_total, self._oldest, self._oldest_tombstone = 0, math.inf, math.inf
        self._seen = seen

    def _apply(self, raw: bytes) -> None:
        try:
            record = json.loads(raw)
            if "outcome" in record:
                entry = self._entries.get(record["id"])
                if entry is not None:
                    self._entries[entry.id] = dataclasses.replace(entry, state=record["outcome"])
            elif "evicted" in record:
                self._tombstone(record["id"], float(record["evicted"]))
            else:
                self._add(Entry.parse(record))
        except (ValueError, TypeError, KeyError):
            log.warning("history: skipped a damaged line in %s", self.log_path)

    def _add(self, entry: Entry) -> None:
        self._entries[entry.id] = entry
        self._oldest = min(self._oldest, entry.time)
        if entry.kept and entry.before and entry.size_before is not None:
            self._kept_total += entry.size_before - self._blob_sizes.get(entry.before, 0)
            self._blob_sizes[entry.before] = entry.size_before

    def _tombstone(self, write_id: str, when: float) -> None:
        self._tombstones[write_id] = when
        self._oldest_tombstone = min(self._oldest_tombstone, when)

    def _append(self, record: dict[str, object], *, durable: bool) -> None:
        line = _json_line(record)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC
        fd = os.open(self.log_path, flags, 0o600)
        try:
            end = os.fstat(fd).st_size  # under the lock: no other line comes between
            try:
                view = memoryview(line)
                while view:  # a short write (a file size limit, a full disk) writes the rest or fails
                    view = view[os.write(fd, view) :]
                if durable:
                    os.fsync(fd)
            except OSError:
                with contextlib.suppress(OSError):  # a part of a line would join the next one
                    os.ftruncate(fd, end)
                raise
        finally:
            os.close(fd)

    def _new_id(self) -> str:
        for _ in range(ID_DRAWS):
            write_id = f"w-{draw_id()}"
            if write_id not in self._entries and write_id not in self._tombstones:
                return write_id
        raise HistoryError("no free write id (the history is full)")

    # --- bounds -----------------------------------------------------------------------------

    def _evict(self, incoming: Entry) -> None:
        """Oldest first: writes older than the age bound (with those past EVICT_TO of it), then
        as many as the byte bound needs to make room for ``incoming``'s pre-image (down to
        EVICT_TO of it); said in the log."""
        now = time.time()
        adds = incoming.size_before if incoming.kept and incoming.before not in self._blob_sizes else 0
        budget = self.limits.max_bytes - (adds or 0)
        total = self.kept_bytes()
        if total <= budget and now - self._oldest <= self.limits.max_age_s:  # nothing to evict
            self._drop_old_tombstones(now, rewrite=False)
            return
        aged = [e for e in self._entries.values() if now - e.time > self.limits.max_age_s]
        reasons = []
        if aged:
            reasons.append("older than --history-max-age")
            aging = [e for e in self._entries.values() if now - e.time > self.limits.max_age_s * EVICT_TO]
            if len(aging) > len(aged):
                reasons[0] += " or within its last tenth"
            aged = aging
        gone = {e.id for e in aged}
        target = min(budget, int(self.limits.max_bytes * EVICT_TO))
        if total - self._freed(gone) > budget:
            reasons.append("over --history-max-bytes")
            for entry in self._entries.values():
                if total - self._freed(gone) <= target:
                    break
                gone.add(entry.id)
        self._remove(gone, now)
        log.warning("history: evicted %d write(s), oldest first (%s)", len(gone), ", ".join(reasons))

    def _freed(self, gone: set[str]) -> int:
        """The bytes removing ``gone`` frees: blobs no remaining entry names."""
        still = {e.before for e in self._entries.values() if e.id not in gone and e.kept}
        return sum(size for digest, size in self._blob_sizes.items() if digest not in still)

    def _remove(self, gone: set[str], now: float) -> None:
        """The log rewritten first, then the pre-images no write names go: the log never names
        a pre-image that is gone, and a rewrite that fails evicts nothing."""
        for write_id in gone:
            self._entries.pop(write_id)
            self._tombstone(write_id, now)
        self._oldest = min((e.time for e in self._entries.values()), default=math.inf)
        still = {e.before for e in self._entries.values() if e.kept}
        unnamed = [d for d in self._blob_sizes if d not in still]
        for digest in unnamed:
            self._kept_total -= self._blob_sizes.pop(digest)
        self._drop_old_tombstones(now, rewrite=True)
        for digest in unnamed:
            with contextlib.suppress(OSError):
                os.unlink(self.object_path(digest))

    def _drop_old_tombstones(self, now: float, *, rewrite: bool) -> None:
        keep_for = self.limits.max_age_s * TOMBSTONE_AGE_FACTOR
        past = now - self._oldest_tombstone > keep_for
        if not rewrite and not past:
            return
        keep_for *= EVICT_TO  # once one is past it, those about to pass go with it (see EVICT_TO)
        old = [i for i, t in self._tombstones.items() if now - t > keep_for] if past else []
        for write_id in old:
            del self._tombstones[write_id]
        self._oldest_tombstone = min(self._tombstones.values(), default=math.inf)
        if rewrite or old:
            self._rewrite()

    def _rewrite(self) -> None:
        """history.jsonl as the entries and tombstones now are, replaced atomically."""
        temp = self.root / f"history.jsonl.tmp-{os.getpid()}-{secrets.token_hex(6)}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                for write_id, when in self._tombstones.items():
                    f.write(_json_line({"id": write_id, "evicted": when}))
                for entry in self._entries.values():
                    f.write(_json_line(entry.line()))
                    if entry.state != "unconfirmed":
                        f.write(_json_line({"id": entry.id, "outcome": entry.state}))
                f.flush()
                os.fsync(f.fileno())
            os.replace(temp, self.log_path)
        except BaseException:  # the log stays as it was: read again, whole, at the next look
            self._reset((-1, 0))
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        _fsync_dir(self.root)
        st = os.stat(self.log_path)
        self._seen = (st.st_ino, st.st_size)

    # --- the lock ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Exclusive across processes (flock on ``lock``); the directory made owner-only."""
        _make_private_dir(self.root)
        fd = os.open(self.root / "lock", os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC, 0o600)
        try:
            if os.name != "nt":
                import fcntl  # POSIX only

                fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the flock


@dataclass(frozen=True, slots=True)
class Hashes:
    """SHA-256 of a write's content before and after ("" where there is none)."""

    before: str
    after: str

    @classmethod
    def of(cls, old: bytes | None, new: Content | None) -> Hashes:
        if old is not None and new is not None:
            return cls(*sha256_pair(old, new))
        return cls("" if old is None else content_sha256(old), "" if new is None else content_sha256(new))


@dataclass(frozen=True, slots=True)
class _Source:
    """The file a pre-image was read from, as it was read."""

    path: Path
    expect: Snapshot


def _link(source: _Source, data: bytes, temp: Path) -> int:
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


def draw_id() -> str:
    """Six random hex digits: a write id's body."""
    return secrets.token_hex(3)


def _json_line(record: dict[str, object]) -> bytes:
    return json.dumps(record, separators=(",", ":"), ensure_ascii=True).encode() + b"\n"


def _make_private_dir(path: Path) -> None:
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
            _fsync_dir(directory.parent)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or (hasattr(os, "geteuid") and st.st_uid != os.geteuid()):
        raise HistoryError(f"{path} is not a directory of this user")
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(path, 0o700)


def _fsync_dir(path: Path) -> None:
    if os.name == "nt":  # pragma: no cover - no directory fsync on Windows
        return
    fd = os.open(path, os.O_RDONLY | _CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
