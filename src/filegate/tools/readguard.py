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
first), each as a 16-byte digest of its real path and five integers.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Literal

from filegate.errors import PathError
from filegate.fsio.platform import pread
from filegate.fsio.safeopen import open_regular
from filegate.policy.filetype import SNIFF_BYTES, detect_file_type
from filegate.policy.workspace import ResolvedPath

Identity = tuple[int, int, int, int, int]  # device, inode, size, mtime_ns, ctime_ns
Verdict = Literal["read", "unread", "changed"]

# Files remembered per handshake-era session (HTTP holds up to --max-sessions of them), and by
# the one ledger of a stdio process or of every 2026-07-28 client of an HTTP server.
SESSION_CAPACITY = 1024
PROCESS_CAPACITY = 4096


def identity_of(st: os.stat_result) -> Identity:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _key(real: Path) -> bytes:
    return hashlib.blake2b(os.fsencode(str(real)), digest_size=16).digest()


class ReadLedger:
    """The files read (or written) through this server by one session, with their identity
    when it happened. Thread-safe: ReadFile records from a worker thread."""

    def __init__(self, scope: str, capacity: int = SESSION_CAPACITY) -> None:
        self.scope = scope  # how a refusal names who read: "in this session", …
        self.capacity = capacity
        self._seen: OrderedDict[bytes, Identity] = OrderedDict()
        self._lock = threading.Lock()

    def saw(self, real: Path, identity: Identity) -> None:
        """``real`` was read (or written) and looked like ``identity`` then."""
        key = _key(real)
        with self._lock:
            self._seen[key] = identity
            self._seen.move_to_end(key)
            while len(self._seen) > self.capacity:
                self._seen.popitem(last=False)

    def verdict(self, real: Path, identity: Identity) -> Verdict:
        with self._lock:
            seen = self._seen.get(_key(real))
        if seen is None:
            return "unread"
        return "read" if seen == identity else "changed"

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
