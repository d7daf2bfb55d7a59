"""The write history (SPEC §8.4): every write's pre-image and one JSON line, so it can be undone.

Layout, owner-only (directories 0700, files 0600), in the state directory outside every
workspace::

    history/
      history.jsonl     the log: records, outcomes, tombstones (fsio/historylog.py)
      objects/ab/cd…    pre-images, named by their hash (fsio/preimages.py; kept once each)
      lock              the flock every process sharing the directory takes to append

The API a write uses: :meth:`WriteHistory.begin` before its rename (while its temp file is
written): the pre-image's bytes are made durable, then the record line is appended and
fsynced, then the pre-image's name (its directory), and only then may the rename come, so a
crash at any instant leaves the old content recoverable (before the rename the file itself
still holds it). :meth:`WriteHistory.finish` appends the outcome after the rename (not
fsynced: a record without an outcome is "unconfirmed", and whether the write landed is told by
the file's content against the record's hashes). A sensitive file's record keeps no
pre-image, no hash and no size: it says "not kept". An undo reads :meth:`WriteHistory.find`,
:meth:`WriteHistory.entries` (``after=`` an id: the writes since it, in order) and
:meth:`WriteHistory.pre_image`.

A set of files written as one (ApplyPatch, an undone set; fsio/changeset.py) calls
:meth:`WriteHistory.begin_set`: one record per file, each naming the set's id (its first
file's) and the process committing it, appended under one lock with one fsync; they are the
set's intent record, and ``filegate history`` and UndoWrite treat the set as one write. A
bound evicts a set whole.

Write ids (``w-`` and 16 hex digits: 64 random bits, so an id cannot be guessed, SPEC §8.4;
ids written before keep their six digits and still resolve) are drawn at random
(:func:`draw_id`) and checked, under the flock, against every id the log holds, evicted ones
included (their tombstones): unique across the processes that share the directory. The
bounds (``--history-max-bytes``, ``--history-max-age``) evict oldest first, by tombstones
appended with the record that needs the room.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import logging
import os
import re
import secrets
import socket
import stat
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from filegate.errors import Busy, WriteError
from filegate.fsio import platform
from filegate.fsio.atomic import failure_reason
from filegate.fsio.historylog import Entry, HistoryLog, State
from filegate.fsio.pending import shown_home_relative, state_dir
from filegate.fsio.preimages import (
    HASH,
    HistoryError,
    Source,
    fsync_dir,
    make_private,
    make_private_dir,
    object_path,
    store,
)
from filegate.fsio.snapshot import Snapshot
from filegate.fsio.spliced import Content, content_hash
from filegate.policy.escape import escape
from filegate.policy.workspace import ResolvedPath

log = logging.getLogger("filegate.history")

__all__ = [
    "Entry",
    "HistoryError",
    "Limits",
    "SetFile",
    "State",
    "WriteHistory",
    "draw_id",
    "history_dir",
    "is_write_id",
]

# The defaults of --history-max-bytes and --history-max-age (SPEC §8.4).
DEFAULT_MAX_BYTES = 1 << 30
DEFAULT_MAX_AGE_S = 14 * 86400.0
# Eviction frees down to this share of the byte bound, so a history at its bound does not
# evict on every write. Alike for age: once a write is past --history-max-age, the writes
# past this share of it go with it, so the scan for them (every record's time) runs once per
# tenth of the bound, not on every write.
EVICT_TO = 0.9
# An evicted write's tombstone (its id, so the id is never reused and an undo of it says it was
# evicted) is kept at least this many times the age bound (dropped by the next compaction).
TOMBSTONE_AGE_FACTOR = 10
# Random draws before giving up on a free id (a draw of 64 bits collides with the history's
# ids practically never; a test's fixed draws do).
ID_DRAWS = 64

_NOFOLLOW = platform.NOFOLLOW
_CLOEXEC = platform.CLOEXEC
# How long a write, UndoWrite or Changes waits for another filegate process of this user to let
# go of the history's lock (held for one record's append, milliseconds) before answering busy:
# as a file's own lock waits (fsio/locks.py), so a stuck process makes a call busy, never hung.
LOCK_WAIT_S = 30.0
_LOCK_POLL_LAST_S = 0.05


@dataclass(frozen=True, slots=True)
class Limits:
    max_bytes: int = DEFAULT_MAX_BYTES
    max_age_s: float = DEFAULT_MAX_AGE_S


def history_dir() -> Path:
    return state_dir() / "history"


def draw_id() -> str:
    """16 random hex digits (64 bits): a write id's body."""
    return secrets.token_hex(8)


# A whole write id as the tools take it: today's 16 digits, or the 6 of a history written before.
WRITE_ID = re.compile(r"w-(?:[0-9a-f]{16}|[0-9a-f]{6})")


def is_write_id(text: str) -> bool:
    """Whether ``text`` is a whole write id (lower case, as ids are written)."""
    return WRITE_ID.fullmatch(text) is not None


class WriteHistory:
    """The history of one state directory, shared by every process using it."""

    def __init__(self, root: Path | None = None, limits: Limits | None = None) -> None:
        self.root = root if root is not None else history_dir()
        self.limits = limits or Limits()
        self.log = HistoryLog(self.root / "history.jsonl")
        # write id -> (hash, inode): a pre-image kept as a link, not yet made the history's alone
        self._linked: dict[str, tuple[str, int]] = {}

    @property
    def log_path(self) -> Path:
        return self.log.path

    def object_path(self, digest: str) -> Path:
        return object_path(self.root, digest)

    # --- a write ----------------------------------------------------------------------------

    def begin(self, tool: str, rp: ResolvedPath, client: str, route: str, old: bytes | None,
              new: Content | None, expect: Snapshot | None = None) -> str:  # fmt: skip
        """Keep ``old`` (None: the file does not exist, or is sensitive) durably and append the
        write's record; return its id. ``new`` None: the write removes the file. ``expect``:
        the file as ``old`` was read from it, so its very inode can be kept (see
        fsio/preimages.py). Blocking (call in a thread, under the file's lock). WriteError when
        the history cannot keep it: then the write must not happen (a crash must never lose
        both versions)."""
        try:
            mode = None if old is None else stat.S_IMODE(os.lstat(rp.real).st_mode)
            source = Source(rp.real, expect) if expect is not None and old is not None else None
            # Hashed before the lock: the passes over both contents hold no other write up.
            hashes = None if rp.secret else _hashes(old, new)  # None: nothing of it is kept
            with self._locked():
                return self._begin(tool, str(rp.real), client, route, old, mode, new, hashes, source)
        except (OSError, HistoryError) as exc:
            why = escape(failure_reason(exc)) if isinstance(exc, OSError) else str(exc)
            fix = "`--history off` turns the history off."
            if isinstance(exc, PermissionError):
                fix = "Set XDG_STATE_HOME to a folder this user can write, or " + fix
            raise WriteError(
                f"Failed to keep the previous content of `{rp.shown}` in the write history at "
                f"{shown_home_relative(self.root)} ({why}). Nothing was written. {fix}",
                "History failed",
            ) from None

    def _begin(self, tool: str, path: str, client: str, route: str, old: bytes | None,
               mode: int | None, new: Content | None, hashes: tuple[str, str] | None,
               source: Source | None) -> str:  # fmt: skip
        self.log.refresh()
        write_id = self._new_id()
        entry = Entry(write_id, time.time(), client, tool, path, route, kept=hashes is not None)
        fresh = ""  # the hash of a pre-image kept by this write, not there before
        if hashes is None:
            entry = dataclasses.replace(entry, not_kept="sensitive file")
        else:
            entry, fresh = self._kept(entry, old, mode, new, hashes, source)
        self._record([entry], [fresh] if fresh else [])
        return write_id

    def _record(self, entries: list[Entry], fresh: list[str]) -> None:
        """``entries`` appended (after the tombstones of what they evict) and made durable with
        one fsync, then the folders of the pre-images they stored anew (``fresh``); then the
        pre-images no record keeps any more removed. On failure nothing is recorded and the
        fresh pre-images go too."""
        new = {e.before: e.size_before or 0 for e in entries if e.kept and e.before}
        adds = sum(size for digest, size in new.items() if not self.log.keeps(digest))
        gone = self._evict(entries[0].time, adds, set(new))
        released = {self.log.records[i].kept for i in gone} - {""}
        try:
            evicted = [{"id": i, "evicted": entries[0].time} for i in gone]
            self.log.append([*evicted, *(e.line() for e in entries)], durable=True)
            for digest in dict.fromkeys(fresh):  # after the record's fsync, which on a journaling
                fsync_dir(self.object_path(digest).parent)  # file system committed them already
        except BaseException:  # no record: its pre-images go too (nothing left behind)
            for entry in entries:
                self._linked.pop(entry.id, None)
            for digest in fresh:
                with contextlib.suppress(OSError):
                    os.unlink(self.object_path(digest))
            raise
        self.log.refresh()  # the lines just appended: the index is what the file says
        for digest in released:  # the log names them no more (the tombstones are durable)
            if not self.log.keeps(digest):
                with contextlib.suppress(OSError):
                    os.unlink(self.object_path(digest))

    def begin_set(self, tool: str, files: Sequence[SetFile], client: str, route: str) -> list[str]:
        """:meth:`begin` for every file of a set under one lock: each pre-image kept, then one
        record per file appended and made durable with one fsync; they share the set's id (the
        first's) and this process as their owner. Those records are the set's intent record
        (fsio/changeset.py). WriteError when any pre-image cannot be kept: a set that could not
        be restored after a failure is not written at all."""
        shown = ""
        try:
            prepared = []
            for f in files:
                shown = f.rp.shown
                mode = None if f.old is None else stat.S_IMODE(os.lstat(f.rp.real).st_mode)
                source = Source(f.rp.real, f.expect) if f.expect is not None and f.old is not None else None
                prepared.append((f, mode, source, _hashes(f.old, f.new)))
            shown = ""
            with self._locked():
                return self._begin_set(tool, client, route, prepared)
        except (OSError, HistoryError) as exc:
            why = escape(failure_reason(exc)) if isinstance(exc, OSError) else str(exc)
            about = f"of `{shown}` " if shown else ""
            raise WriteError(
                f"Failed to keep the previous content {about}in the write history ({why}). Nothing "
                "was written.",
                "History failed",
            ) from None

    def _begin_set(self, tool: str, client: str, route: str, prepared: list[_Prepared]) -> list[str]:
        self.log.refresh()
        ids: list[str] = []
        for _ in prepared:
            write_id = self._new_id()
            while write_id in ids:
                write_id = self._new_id()
            ids.append(write_id)
        owner, now = f"{socket.gethostname()}:{os.getpid()}", time.time()
        entries: list[Entry] = []
        fresh: list[str] = []
        try:
            for write_id, (f, mode, source, hashes) in zip(ids, prepared, strict=True):
                path = str(f.rp.real)
                entry = Entry(write_id, now, client, tool, path, route, True, group=ids[0], owner=owner)
                entry, kept = self._kept(entry, f.old, mode, f.new, hashes, source)
                if not entry.kept:
                    raise HistoryError(f"the previous content of `{f.rp.shown}` is {entry.not_kept}")
                entries.append(entry)
                if kept:
                    fresh.append(kept)
        except BaseException:  # the pre-images kept for the files before the one that failed go
            for write_id in ids:
                self._linked.pop(write_id, None)
            for digest in fresh:
                with contextlib.suppress(OSError):
                    os.unlink(self.object_path(digest))
            raise
        self._record(entries, fresh)
        return ids

    def finish_set(self, write_ids: Sequence[str], ok: bool) -> None:
        """A set's outcome, one line per file (not fsynced: a set whose outcome a crash lost is
        looked at again at the next start, which finds its files as it left them: done)."""
        self._finish(list(write_ids), ok)

    def finish(self, write_id: str, ok: bool) -> None:
        """The write's outcome, after its rename (or its failure); no-op for ``""``. The log is
        compacted here when it is due: after the rename, which it never holds up."""
        if write_id:
            self._finish([write_id], ok)

    def _finish(self, write_ids: list[str], ok: bool) -> None:
        outcome: State = "done" if ok else "failed"
        # Not fsynced, and a failure to append it is not the write's: a record without its
        # outcome reads as "unconfirmed" (the next look at the file reads it back in).
        with contextlib.suppress(OSError, Busy), self._locked():
            self.log.append([{"id": i, "outcome": outcome} for i in write_ids], durable=False)
            for write_id in write_ids:
                linked = self._linked.pop(write_id, None)
                if linked is not None:
                    make_private(self.root, *linked, HASH, landed=ok)
            self.log.refresh()
            if self.log.wants_compaction():
                self._compact()

    def _compact(self) -> None:
        try:
            self.log.compact(time.time(), self.limits.max_age_s * TOMBSTONE_AGE_FACTOR)
        except OSError as exc:  # the log stays as it was; the next due write tries again
            log.warning("history: could not compact %s (%s)", self.log.path, escape(failure_reason(exc)))

    def _kept(self, entry: Entry, old: bytes | None, mode: int | None, new: Content | None,
              hashes: tuple[str, str], source: Source | None) -> tuple[Entry, str]:  # fmt: skip
        """``entry`` with its hashes and sizes, its pre-image kept; and that pre-image's hash
        if this write stored it ("" when there is none, or it was kept already)."""
        before, after = hashes
        size_after = None if new is None else len(new)
        entry = dataclasses.replace(
            entry, after=after, size_after=size_after, removed=new is None, created=old is None, hash=HASH
        )
        if old is None:
            return entry, ""
        entry = dataclasses.replace(entry, before=before, size_before=len(old), mode=mode)
        if len(old) > self.limits.max_bytes:
            return dataclasses.replace(entry, kept=False, not_kept="larger than --history-max-bytes"), ""
        inode = store(self.root, before, old, source)
        if inode:
            self._linked[entry.id] = (before, inode)
        return entry, "" if inode is None else before

    # --- reading ----------------------------------------------------------------------------

    def entries(self, after: str | None = None) -> list[Entry]:
        """Every write still in the history, oldest first (outcomes merged in); with ``after``,
        those recorded after that write (none when it is not in the history)."""
        with self._reading() as log:
            return [] if log is None else log.entries(after)

    def ids(self) -> list[str]:
        """The ids of the writes still in the history, oldest first (no record parsed)."""
        with self._reading() as log:
            return [] if log is None else list(log.records)

    def find(self, write_id: str) -> Entry | None:
        with self._reading() as log:
            return None if log is None else log.entry(write_id)

    def evicted(self, write_id: str) -> bool:
        return write_id in self.log.tombstones

    def pre_image(self, entry: Entry) -> bytes:
        """The content before ``entry``'s write, checked against its hash (OSError/ValueError)."""
        with open(self.object_path(entry.before), "rb") as f:
            data = f.read()
        if entry.digest(data) != entry.before:
            raise ValueError(f"the kept copy of {entry.id} is damaged")
        return data

    def kept_bytes(self) -> int:
        return self.log.kept_bytes()

    @contextlib.contextmanager
    def _reading(self) -> Iterator[HistoryLog | None]:
        """The log read up to date, under the lock; None when nothing was ever kept (a reader
        makes nothing, not even the lock)."""
        if not os.path.lexists(self.root):
            self.log.reset()
            yield None
            return
        with self._locked():
            self.log.refresh()
            yield self.log

    def _new_id(self) -> str:
        for _ in range(ID_DRAWS):
            write_id = f"w-{draw_id()}"
            if write_id not in self.log.records and write_id not in self.log.tombstones:
                return write_id
        raise HistoryError("no free write id (the history is full)")

    # --- bounds -----------------------------------------------------------------------------

    def _evict(self, now: float, adds: int, kept: set[str]) -> list[str]:
        """The writes to evict, oldest first, to let in records that add ``adds`` bytes of new
        pre-images and keep ``kept``: those older than the age bound (with those past EVICT_TO
        of it), then as many as the byte bound needs (down to EVICT_TO of it); a set goes
        whole. Said in the server's log."""
        records, limits = self.log.records, self.limits
        budget = limits.max_bytes - adds
        total = self.log.kept_bytes()
        if total <= budget and now - self.log.oldest() <= limits.max_age_s:  # nothing to evict
            return []
        gone = [i for i, r in records.items() if now - r.time > limits.max_age_s]
        reasons = []
        if gone:
            reasons.append("older than --history-max-age")
            aging = [i for i, r in records.items() if now - r.time > limits.max_age_s * EVICT_TO]
            if len(aging) > len(gone):
                reasons[0] += " or within its last tenth"
            gone = aging
        # The bytes evicting ``gone`` frees: the pre-images no record left (nor one coming) keeps.
        released: collections.Counter[str] = collections.Counter()

        def freed_by(write_id: str) -> int:
            digest, size = records[write_id].kept, records[write_id].size
            released[digest] += 1
            return size if digest and digest not in kept and released[digest] == self.log.refs(digest) else 0

        freed = sum(freed_by(i) for i in gone)
        if total - freed > budget:
            reasons.append("over --history-max-bytes")
            target, chosen = min(budget, int(limits.max_bytes * EVICT_TO)), set(gone)
            for write_id in records:
                if total - freed <= target:
                    break
                if write_id not in chosen:
                    gone.append(write_id)
                    freed += freed_by(write_id)
        sets = {records[i].group for i in gone} - {""}
        chosen = set(gone)
        gone += [i for i, r in records.items() if r.group in sets and i not in chosen]  # a set goes whole
        log.warning("history: evicted %d write(s), oldest first (%s)", len(gone), ", ".join(reasons))
        return gone

    # --- the lock ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Exclusive across processes (flock on ``lock``); the directory made owner-only."""
        make_private_dir(self.root)
        fd = os.open(self.root / "lock", os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC, 0o600)
        try:
            if os.name != "nt":
                _flock(fd, time.monotonic() + LOCK_WAIT_S)
            yield
        finally:
            os.close(fd)  # releases the flock


def _flock(fd: int, deadline: float) -> None:
    """An exclusive flock on ``fd`` (blocking: called in a thread), or Busy past ``deadline``."""
    import fcntl  # POSIX only

    delay = 0.001
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Busy(
                    "The write history is held by another filegate process of this user for "
                    f"longer than {LOCK_WAIT_S:g} s; nothing was done, try again."
                ) from None
            time.sleep(min(delay, left))
            delay = min(delay * 2, _LOCK_POLL_LAST_S)


# A set's file ready to keep: it, its mode before, where it was read from, its two hashes.
_Prepared = tuple["SetFile", "int | None", "Source | None", tuple[str, str]]


@dataclass(frozen=True, slots=True)
class SetFile:
    """One file of a set as :meth:`WriteHistory.begin_set` keeps it: its content before (None:
    it did not exist) and after (None: removed), and the file as ``old`` was read from it."""

    rp: ResolvedPath
    old: bytes | None
    new: Content | None
    expect: Snapshot | None = None


def _hashes(old: bytes | None, new: Content | None) -> tuple[str, str]:
    """The content before and after ("" where there is none), in HASH."""
    return ("" if old is None else content_hash(old, HASH), "" if new is None else content_hash(new, HASH))
