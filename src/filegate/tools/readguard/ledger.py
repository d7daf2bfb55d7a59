"""Read before you change it (SPEC §4 StrReplaceFile): which files a session has read, and in
what state.

StrReplaceFile, and WriteFile overwriting an existing file, go ahead only when the file was read
through this server (ReadFile, any window: a partial read counts, or a 10 GiB file could never
be edited; ReadMediaFile for an image or video) and has not changed since. A file written
through this server counts as read in its new state, so edits can follow edits. A file no tool
can show (binary, of unknown type) needs no read: its overwrite is judged by approval alone.

"Unchanged" is the file's identity as ``stat`` gives it: device, inode, size, mtime and ctime
(in ns). An atomic replace by another program makes a new inode; an in-place write moves mtime
and ctime, and ctime cannot be set back, so restoring the mtime does not hide a change. What
it cannot see is a same-size change within the file system's timestamp granularity of the read
(a few ms at most on Linux): the stale check at write time (fsio/atomic.py) still protects what
was shown for approval.

Sensitive files are outside the guard: ReadFile refuses them, so a guard would make writing
them impossible, and its refusal ("changed since it was read") would be a fact about a secret
before approval (SPEC §2.6). Approval, which is always asked for them, covers them instead.

Memory is bounded: a ledger keeps at most ``capacity`` files (the least recently seen go
first), each as a 16-byte digest of its real path, the path itself (for a change notice) and
its identity.

A read guard that does not loop (SPEC §8.3): a file up to INDEX_MAX_BYTES also keeps a line
index, one 8-byte hash per line (never the content), so that an edit of a file a formatter
changed since the read can go ahead away from the lines that changed (tools/readguard/changed_lines.py).
The indexes of one ledger hold at most ``index_budget`` lines in all; past it the least
recently seen lose theirs (their file keeps the plain refusal).

Change notices (SPEC §8.3, handshake era): :meth:`ReadLedger.changes_untold` stats the
``NOTICE_CHECKED`` most recently seen files the session read (not those it wrote since) and
gives those whose identity moved since, each change once; :func:`change_notice` names them.
A stat per file, a bounded number of files, at most once per NOTICE_INTERVAL_S per ledger: the
cost of a tool call does not grow with the ledger, nor with how fast calls come.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from array import array
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

from filegate.errors import PathError
from filegate.fsio.platform import pread
from filegate.fsio.safeopen import open_regular
from filegate.policy.filetype import SNIFF_BYTES, detect_file_type
from filegate.policy.workspace import ResolvedPath, Workspace

Identity = tuple[int, int, int, int, int]  # device, inode, size, mtime_ns, ctime_ns
Verdict = Literal["read", "unread", "changed"]

# Files remembered per handshake-era session (HTTP holds up to --max-sessions of them), and by
# the one ledger of a stdio process or of every 2026-07-28 client of an HTTP server.
SESSION_CAPACITY = 1024
PROCESS_CAPACITY = 4096
# A file larger than this keeps no line index: a change to it is refused plainly.
INDEX_MAX_BYTES = 2 << 20
# Lines indexed per ledger in all (8 bytes each): 2 MiB for a session, 8 MiB for a process.
SESSION_INDEX_LINES = 256 << 10
PROCESS_INDEX_LINES = 1 << 20

# Files a change notice checks per call (one stat each), the most recently seen first; and
# how many it names (SPEC §8.3: at most five).
NOTICE_CHECKED = 64
NOTICE_NAMES = 5
# A ledger checks at most once in this many seconds: a model's calls come seconds apart, and
# calls that come faster (a client in a loop, calls in parallel) do not pay a check each.
NOTICE_INTERVAL_S = 0.5
# The identity of a file that is gone (no stat): a change a notice tells too.
GONE: Identity = (0, 0, -1, 0, 0)

LineIndex: TypeAlias = "array[int]"  # of "q": one hash per line of the file as read (or written)


def line_index(data: bytes) -> LineIndex:
    """One hash per line (split at LF, so a CR stays in its line): what the ledger keeps of a
    file's content. Python's hash of bytes: 64 bits, fast, and no use outside this process."""
    return array("q", map(hash, data.split(b"\n")))


def indexable(size: int, data: bytes) -> bool:
    """Small enough, and lines that split at the byte LF (not UTF-16/32, which a BOM marks)."""
    return size <= INDEX_MAX_BYTES and not data.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff"))


def identity_of(st: os.stat_result) -> Identity:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _key(real: Path) -> bytes:
    return hashlib.blake2b(os.fsencode(str(real)), digest_size=16).digest()


@dataclass(slots=True)
class _Seen:
    identity: Identity
    real: Path
    written: bool  # by this session, since its last read: never in a change notice
    told: Identity | None = None  # the identity a notice (or a refusal) last told of


def current_identity(real: Path) -> Identity:
    """The file's identity now (not following a link: a link in its place is a change); GONE
    when it cannot be stat'ed."""
    try:
        return identity_of(os.stat(real, follow_symlinks=False))
    except (OSError, ValueError):
        return GONE


class ReadLedger:
    """The files read (or written) through this server by one session, with their identity
    when it happened. Thread-safe: ReadFile records from a worker thread."""

    def __init__(
        self, scope: str, capacity: int = SESSION_CAPACITY, index_budget: int = SESSION_INDEX_LINES
    ) -> None:
        self.scope = scope  # how a refusal names who read: "in this session", …
        self.capacity = capacity
        self.index_budget = index_budget
        self._seen: OrderedDict[bytes, _Seen] = OrderedDict()
        self._indexes: OrderedDict[bytes, LineIndex] = OrderedDict()
        self._indexed_lines = 0
        self._checked_at = float("-inf")  # when changes_untold last stat'ed (monotonic)
        self._lock = threading.Lock()

    def saw(
        self, real: Path, identity: Identity, data: bytes | None = None, *, written: bool = False
    ) -> None:
        """``real`` was read (or ``written`` by this session) and looked like ``identity`` then;
        with ``data`` (its whole content then), a line index is kept when it is small enough."""
        key = _key(real)
        index = line_index(data) if data is not None and indexable(identity[2], data) else None
        with self._lock:
            self._seen[key] = _Seen(identity, real, written)
            self._seen.move_to_end(key)
            self._drop_index(key)
            if index is not None and len(index) <= self.index_budget:
                self._indexes[key] = index
                self._indexed_lines += len(index)
            while len(self._seen) > self.capacity:
                self._drop_index(self._seen.popitem(last=False)[0])
            while self._indexed_lines > self.index_budget:
                self._drop_index(next(iter(self._indexes)))

    def _drop_index(self, key: bytes) -> None:
        old = self._indexes.pop(key, None)
        if old is not None:
            self._indexed_lines -= len(old)

    def verdict(self, real: Path, identity: Identity) -> Verdict:
        with self._lock:
            seen = self._seen.get(_key(real))
        if seen is None:
            return "unread"
        return "read" if seen.identity == identity else "changed"

    def index_since(self, real: Path, identity: Identity) -> LineIndex | None:
        """The line index of the version read, when ``identity`` is the same file changed in
        place (same device and inode; a replaced or recreated file has none to compare)."""
        key = _key(real)
        with self._lock:
            seen = self._seen.get(key)
            index = self._indexes.get(key)
        return index if seen is not None and seen.identity[:2] == identity[:2] else None

    def wrote(self, real: Path) -> None:
        """This session wrote ``real`` without it counting as read (the model had not seen the
        file it replaced): still, no change notice names it."""
        with self._lock:
            seen = self._seen.get(_key(real))
            if seen is not None:
                seen.written = True

    def told(self, real: Path, identity: Identity) -> None:
        """A result told the model that ``real`` is now ``identity`` (a refusal naming the
        change): no change notice repeats it."""
        with self._lock:
            seen = self._seen.get(_key(real))
            if seen is not None:
                seen.told = identity

    def changes_untold(self, checked: int = NOTICE_CHECKED) -> list[tuple[Path, Identity]]:
        """The files among the ``checked`` most recently seen that this session read (and did
        not write since) and that changed on disk since, each change not told before:
        (real path, identity now), the most recently seen first. Nothing is marked told. At most
        one check per NOTICE_INTERVAL_S: a call sooner finds nothing (a later one tells it)."""
        with self._lock:
            now_s = time.monotonic()
            if now_s - self._checked_at < NOTICE_INTERVAL_S:
                return []
            self._checked_at = now_s
            recent = [s for _, s in zip(range(checked), reversed(self._seen.values()), strict=False)]
        found = []
        for seen in recent:
            if seen.written:
                continue
            now = current_identity(seen.real)
            if now != seen.identity and now != seen.told:
                found.append((seen.real, now))
        return found

    def mark_told(self, changes: list[tuple[Path, Identity]]) -> list[Path]:
        """Mark ``changes`` told; those no other call told meanwhile (each change once, even
        with calls in parallel)."""
        claimed = []
        with self._lock:
            for real, now in changes:
                seen = self._seen.get(_key(real))
                if seen is not None and not seen.written and seen.told != now and seen.identity != now:
                    seen.told = now
                    claimed.append(real)
        return claimed

    @property
    def indexed_lines(self) -> int:
        return self._indexed_lines

    def __len__(self) -> int:
        return len(self._seen)


class ChosenEncodings:
    """The codec a session's ReadFile named for a file (its ``encoding``), for that session's
    later edits of it (SPEC §8.1). Kept whether or not the read guard is on; bounded as a
    ledger is."""

    def __init__(self, capacity: int = SESSION_CAPACITY) -> None:
        self.capacity = capacity
        self._chosen: OrderedDict[bytes, str] = OrderedDict()
        self._lock = threading.Lock()

    def choose(self, real: Path, codec: str) -> None:
        key = _key(real)
        with self._lock:
            self._chosen[key] = codec
            self._chosen.move_to_end(key)
            while len(self._chosen) > self.capacity:
                self._chosen.popitem(last=False)

    def chosen(self, real: Path) -> str | None:
        with self._lock:
            return self._chosen.get(_key(real))


def refusal(verdict: Verdict, shown: str, scope: str, action: str, reader: str = "ReadFile") -> str:
    """The sentence of a refused write, naming the read that would let it through (``reader``:
    ReadFile for text, ReadMediaFile for an image or video)."""
    read = f'{reader}(path="{shown}")'
    if verdict == "changed":
        return (
            f"`{shown}` changed since it was read: read it again with {read} before you {action} "
            "it. Nothing was written."
        )
    window = " (any window of it counts)" if reader == "ReadFile" else ""
    return (
        f"`{shown}` has not been read {scope}: read it first with {read}{window}, then {action} "
        "it. Nothing was written."
    )


def reader_of(name: str, header: bytes) -> str | None:
    """The tool that shows a file with this ``header``, whose read the guard asks for:
    ReadFile for text, ReadMediaFile for an image or video; None for a file no tool can show
    (binary, of unknown type), which needs no read (SPEC §4) and never reaches a diff."""
    kind = detect_file_type(name, header).kind
    return {"text": "ReadFile", "image": "ReadMediaFile", "video": "ReadMediaFile"}.get(kind)


def header_of(rp: ResolvedPath) -> bytes:
    """The target's first bytes, for its type; b"" (text: the guard applies) when it cannot be
    opened, which load_current then reports."""
    try:
        fd = open_regular(rp)
    except PathError:
        return b""
    try:
        return pread(fd, SNIFF_BYTES, 0)
    except OSError:
        return b""
    finally:
        os.close(fd)


def change_notice(reads: ReadLedger, workspace: Workspace) -> str:
    """SPEC §8.3, handshake era: the line a tool's result ends with, naming the files this
    session read (and did not write since) that changed on disk since, each change once, at
    most NOTICE_NAMES of them; "" when there are none. A sensitive file (a secret pattern, a
    client rule that hides it now) is never named, and never counted either: what is said of
    the others is the same whether it changed or not."""
    changes = reads.changes_untold()
    if not changes:
        return ""
    shown = [(real, now) for real, now in changes if not workspace.is_sensitive(str(real))]
    told = reads.mark_told(shown[:NOTICE_NAMES])
    if not told:
        return ""
    names = ", ".join(workspace.display(real) for real in told)
    more = len(shown[NOTICE_NAMES:])
    rest = f" (and {more} more, named in the next result)" if more > 0 else ""
    return f"Changed on disk since you read them: {names}{rest}."
