"""The write history's log (SPEC §8.4): ``history.jsonl`` and what it says, indexed.

One JSON line per event, appended under the history's lock (fsio/history.py):

- a write's **record** (:class:`Entry`), fsynced before its rename;
- its **outcome**, ``{"id": …, "outcome": "done" | "failed"}``, after it (not fsynced: a record
  without one is "unconfirmed");
- a **tombstone**, ``{"id": …, "evicted": time}``, when a bound evicts the write: its record
  and outcome stay in the file until the next compaction, and a reader that meets the
  tombstone drops them. An evicted id is never drawn again, and an undo of it says so.

Appends never rewrite the file, so a process sharing the state directory (a replica) reads
only what was appended since its last look. :meth:`HistoryLog.compact` rewrites it atomically
once the lines of evicted writes outnumber the live ones: rarely.

The index keeps per record only what the bounds need (its time, the pre-image it keeps and
that one's size), which a record line puts first so that one regular expression over the whole
file finds them (a line it does not fit, as a record of the key order before, is parsed as
JSON); a whole record is read from the file when it is asked for.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal, NamedTuple

from filegate.fsio import platform
from filegate.fsio.preimages import fsync_dir
from filegate.fsio.spliced import Content, content_hash

log = logging.getLogger("filegate.history")

State = Literal["done", "failed", "unconfirmed"]

_NOFOLLOW = platform.NOFOLLOW
_CLOEXEC = platform.CLOEXEC


@dataclass(frozen=True, slots=True)
class Entry:
    """One write as its history line says it. ``before``/``after``: the hash (``hash``: its
    algorithm, SHA-256 in records written before BLAKE3) of the content before and after (""
    where the file did not exist before / was removed after); ``kept``: its pre-image is
    stored (False for a sensitive file, and for a pre-image past the bound)."""

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
    hash: str = "sha256"
    # A write of a set (ApplyPatch, SPEC §10): the set's id (its first write's), shared by each
    # of its files' records, and "host:pid" of the process committing it (fsio/changeset.py
    # rolls a set back at the next start from these, when that process died mid-commit).
    group: str = ""
    owner: str = ""
    state: State = "unconfirmed"

    def line(self) -> dict[str, object]:
        """The record line's fields, the index's first (``_LEAD``). Empty fields are left out: a
        sensitive file's line has no hash, size or mode at all."""
        record = {}
        for name in _ORDER:
            value = getattr(self, name)
            if name in _REQUIRED or not (value is None or value == "" or value is False):
                record[name] = value
        if not (self.before or self.after):
            record.pop("hash", None)
        return record

    @classmethod
    def parse(cls, record: dict[str, object], state: State = "unconfirmed") -> Entry:
        return cls(**{k: v for k, v in record.items() if k in _RECORD_FIELDS}, state=state)  # type: ignore[arg-type]

    def digest(self, data: Content) -> str:
        """``data``'s hash as this record's ``before``/``after`` are written."""
        return content_hash(data, self.hash)


# What a record line may set (an outcome comes on its own line).
_RECORD_FIELDS = frozenset(f.name for f in dataclasses.fields(Entry)) - {"state"}
# Every record line has these; the others are there only when they say something.
_REQUIRED = frozenset({"id", "time", "client", "tool", "path", "route", "kept"})
# A record line's first fields: what the index needs, where _LINE finds it.
_LEAD = ("id", "time", "kept", "before", "size_before", "group")
_ORDER = _LEAD + tuple(f.name for f in dataclasses.fields(Entry) if f.name not in (*_LEAD, "state"))

# What the index reads of each line, in one pass over the whole text (a JSON string holds
# `"` only escaped, so `{"id":"` starts a line): an outcome, a tombstone, or a record's first
# fields. Groups: the id, the outcome, the eviction time, the record's time, kept, its
# pre-image's hash and size, its set. A chunk with a line it does not fit (a record in the key
# order before issue 56, a damaged line) is read line by line, each such line as JSON.
_NUMBER = r"(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)"  # as JSON writes one
_RECORD_LEAD = (
    r',"kept":(true|false)(?:,"before":"([0-9a-f]+)","size_before":([0-9]+))?(?:,"group":"(w-[0-9a-f]+)")?'
)
_LINE = re.compile(
    r'\{"id":"(w-[0-9a-f]+)",(?:"outcome":"(done|failed)"\}\n|"evicted":' + _NUMBER + r"\}\n|"
    r'"time":' + _NUMBER + _RECORD_LEAD + r"[,}])"
)


class Record(NamedTuple):
    """What the index keeps of a record line (the whole line is read when asked for)."""

    time: float
    kept: str  # the hash of the pre-image it keeps ("" when none)
    size: int  # that pre-image's size
    group: str  # the set it is a write of ("" when none)


class HistoryLog:
    """``history.jsonl`` as the last look found it. Every method runs under the history's lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.records: dict[str, Record] = {}  # write id -> record, in the log's order
        self.states: dict[str, State] = {}  # write id -> its outcome, for the records above
        self.tombstones: dict[str, float] = {}  # evicted id -> when it was evicted
        self._blobs: dict[str, list[int]] = {}  # kept pre-image's hash -> [size, records keeping it]
        self._kept_total = 0
        self._oldest: float | None = math.inf  # None: to be found again (its record went)
        self._seen: tuple[int, int] = (-1, 0)  # (inode, offset) of the file read so far
        self._lines = 0  # whole lines in the file read so far

    # --- what it says ---------------------------------------------------------------------

    def kept_bytes(self) -> int:
        """The bytes of the pre-images the records keep, each counted once."""
        return self._kept_total

    def keeps(self, digest: str) -> bool:
        return digest in self._blobs

    def refs(self, digest: str) -> int:
        """How many records keep the pre-image ``digest``."""
        return self._blobs[digest][1] if digest in self._blobs else 0

    def oldest(self) -> float:
        """The time of the oldest record (inf: none)."""
        if self._oldest is None:
            self._oldest = min((r.time for r in self.records.values()), default=math.inf)
        return self._oldest

    def entry(self, write_id: str) -> Entry | None:
        """The record of ``write_id`` as its line says it (read from the file)."""
        if write_id not in self.records:
            return None
        data = self._bytes()
        at = data.find(_start(write_id))
        return self._as_entry(data[at : data.find(b"\n", at)].decode("latin-1")) if at >= 0 else None

    def entries(self, after: str | None = None) -> list[Entry]:
        """The records in the log's order (those after ``after``'s, when given), read from the file."""
        data, at = self._bytes(), 0
        if after is not None:
            at = data.find(_start(after)) if after in self.records else -1
            if at < 0:
                return []
            at = data.find(b"\n", at) + 1
        found = []
        for line in data[at:].decode("latin-1").splitlines(keepends=True):
            fits = _LINE.match(line)
            if fits is not None and not fits[4]:
                continue  # an outcome or a tombstone
            entry = self._as_entry(line)
            if entry is not None and entry.id in self.records:
                found.append(entry)
        return found

    def _as_entry(self, line: str) -> Entry | None:
        """The entry a record line says; None for another line (a damaged one was said so when
        the index read it)."""
        with contextlib.suppress(ValueError, TypeError, KeyError, AttributeError):
            record = json.loads(line)
            if "time" in record:
                return Entry.parse(record, self.states.get(record["id"], "unconfirmed"))
        return None

    # --- reading ----------------------------------------------------------------------------

    def refresh(self) -> None:
        """Read what was appended since the last look (the whole file when it was replaced)."""
        try:
            f = self._open()
        except FileNotFoundError:
            self.reset()
            return
        with f:
            ino = os.fstat(f.fileno()).st_ino
            if ino != self._seen[0]:
                self.reset((ino, 0))
            f.seek(self._seen[1])
            text = f.read().decode("latin-1")  # every byte read; the log is ASCII
        end = text.rfind("\n") + 1  # a line being appended is read next time, whole
        self._ingest(text[:end] if end < len(text) else text)
        self._seen = (ino, self._seen[1] + end)

    def _open(self) -> BinaryIO:
        return os.fdopen(os.open(self.path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC), "rb")

    def _bytes(self) -> bytes:
        try:
            with self._open() as f:
                return f.read()
        except FileNotFoundError:  # nothing recorded yet (its folder made, a crash before a line)
            return b""

    def reset(self, seen: tuple[int, int] = (-1, 0)) -> None:
        self.records.clear()
        self.states.clear()
        self.tombstones.clear()
        self._blobs.clear()
        self._kept_total, self._oldest, self._lines = 0, math.inf, 0
        self._seen = seen

    def _ingest(self, text: str) -> None:
        lines = text.count("\n")
        self._lines += lines
        rows = _LINE.findall(text)
        if len(rows) != lines:  # a line of another form among them
            rows = []
            for line in text.splitlines(keepends=True):
                match = _LINE.match(line)
                if match is not None:
                    rows.append(match.groups())
                else:  # in the log's order: after the rows before it
                    self._index(rows)
                    rows = []
                    self._parse(line)
        self._index(rows)

    def _index(self, rows: list[tuple[str, ...]]) -> None:
        """_LINE's rows into the index, in order (50,000 records and their outcomes on a
        first look: the loop keeps to locals)."""
        records, states, blobs, new = self.records, self.states, self._blobs, tuple.__new__
        oldest, total = self._oldest, self._kept_total
        for write_id, outcome, evicted, when, kept, digest, size, group in rows:
            if outcome:
                if write_id in records:
                    states[write_id] = outcome  # type: ignore[assignment]  # done or failed
                continue
            if write_id in records or evicted:  # a tombstone, or a record written twice (the later stands)
                self._oldest, self._kept_total = oldest, total
                self._drop(write_id)
                if evicted:
                    self.tombstones[write_id] = float(evicted)
                oldest, total = self._oldest, self._kept_total
                if evicted:
                    continue
            at = float(when)
            records[write_id] = new(Record, (at, digest if kept == "true" else "", int(size or 0), group))
            if oldest is not None and at < oldest:
                oldest = at
            if kept == "true" and digest:
                blob = blobs.get(digest)
                if blob is None:
                    blobs[digest] = [int(size), 1]
                    total += int(size)
                else:
                    blob[1] += 1
        self._oldest, self._kept_total = oldest, total

    def _parse(self, line: str) -> None:
        """A line _LINE does not fit: a record in the key order before issue 56, or a
        damaged line (skipped)."""
        try:
            record = json.loads(line)
            if "outcome" in record:
                if record["id"] in self.records and record["outcome"] in ("done", "failed"):
                    self.states[record["id"]] = record["outcome"]
            elif "evicted" in record:
                self._tombstone(record["id"], float(record["evicted"]))
            else:
                e = Entry.parse(record)
                kept = "true" if e.kept and e.before and e.size_before is not None else "false"
                self._index(
                    [(e.id, "", "", str(float(e.time)), kept, e.before, str(e.size_before or 0), e.group)]
                )
        except (ValueError, TypeError, KeyError, AttributeError):
            self._damaged()

    def _damaged(self) -> None:
        log.warning("history: skipped a damaged line in %s", self.path)

    def _tombstone(self, write_id: str, when: float) -> None:
        self._drop(write_id)
        self.tombstones[write_id] = when

    def _drop(self, write_id: str) -> None:
        record = self.records.pop(write_id, None)
        if record is None:
            return
        self.states.pop(write_id, None)
        if record.time == self._oldest:
            self._oldest = None
        if record.kept:
            blob = self._blobs[record.kept]
            blob[1] -= 1
            if not blob[1]:
                del self._blobs[record.kept]
                self._kept_total -= blob[0]

    # --- writing ----------------------------------------------------------------------------

    def append(self, records: list[dict[str, object]], *, durable: bool) -> None:
        """``records`` as lines at the end, whole or not at all (then OSError); fsynced if
        ``durable``. Read back at the next :meth:`refresh`."""
        data = b"".join(_json_line(r) for r in records)
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC
        fd = os.open(self.path, flags, 0o600)
        try:
            end = os.fstat(fd).st_size  # under the lock: no other line comes between
            if end and platform.pread(fd, 1, end - 1) != b"\n":
                data = b"\n" + data  # a line a crash cut short stays one damaged line, alone
            try:
                view = memoryview(data)
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

    def wants_compaction(self) -> bool:
        """The lines of evicted writes (and of outcomes no record needs) outnumber the live ones."""
        live = len(self.records) + len(self.states) + len(self.tombstones)
        return self._lines - live > live

    def compact(self, now: float, keep_tombstones_s: float) -> None:
        """The log rewritten as the index is (its records' lines as the file has them, in
        today's key order), tombstones older than ``keep_tombstones_s`` left out, and replaced
        atomically: a crash leaves the old log or the new one."""
        self.refresh()
        tombstones = {i: t for i, t in self.tombstones.items() if now - t <= keep_tombstones_s}
        lines = [_json_line({"id": i, "evicted": t}) for i, t in tombstones.items()]
        for line in self._bytes().decode("latin-1").splitlines(keepends=True):
            fits = _LINE.match(line)
            if fits is not None and not fits[4]:
                continue  # an outcome or a tombstone: written from the index
            entry = None if fits is not None else self._as_entry(line)  # another form: today's
            write_id = fits[1] if fits is not None else entry.id if entry is not None else ""
            if write_id not in self.records:
                continue
            lines.append(line.encode("latin-1") if entry is None else _json_line(entry.line()))
            state = self.states.get(write_id)
            if state is not None:
                lines.append(_json_line({"id": write_id, "outcome": state}))
        for left in self.path.parent.glob(f"{self.path.name}.tmp-*"):  # a killed compaction's
            left.unlink()
        temp = self.path.with_name(f"{self.path.name}.tmp-{os.getpid()}-{secrets.token_hex(6)}")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.writelines(lines)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        fsync_dir(self.path.parent)
        self.reset()  # read back as every other process will read it
        self.refresh()


def _start(write_id: str) -> bytes:
    """How the record line of ``write_id`` starts, as filegate writes it (either key order)."""
    return b'{"id":"%s","time":' % write_id.encode("latin-1", "replace")


def _json_line(record: dict[str, object]) -> bytes:
    return json.dumps(record, separators=(",", ":"), ensure_ascii=True).encode() + b"\n"
