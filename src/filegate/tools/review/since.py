"""The writes since a point (SPEC §10): ``since`` read as a write id, an ISO 8601 time or an
age, the history's writes from that point on to files inside the caller's workspace, grouped
by file, and each file as it is now.

A write id is looked up among the writes to files inside the caller's workspace only: one from
another workspace is answered exactly as an unknown one. A write that failed wrote nothing and
is left out.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal

from filegate.errors import PathError, Refusal
from filegate.fsio.history import WRITE_ID, Entry, WriteHistory
from filegate.fsio.safeopen import open_regular, read_whole
from filegate.policy.escape import escape
from filegate.policy.workspace import ResolvedPath, Workspace

# An age: a number and its unit (90m, 2h, 3d, 1w).
AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}

SINCE_HELP = "a write id (w-…), an ISO 8601 time (2026-11-28T14:00) or an age (90m, 2h, 3d)"


def parse_time(text: str, now: float | None = None) -> float:
    """A time: ISO 8601 ("2026-11-27", "2026-11-27T14:00", local time unless it says) or an age
    ("90m", "2h", "3d": that long ago). ValueError otherwise."""
    now = time.time() if now is None else now
    text = text.strip()
    unit = text[-1:].lower()
    if unit in AGE_UNITS and text[:-1].replace(".", "", 1).isdigit():
        return now - float(text[:-1]) * AGE_UNITS[unit]
    return datetime.fromisoformat(text).timestamp()


def when(t: float) -> str:
    """A write's time as every answer says it."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


def write_of(entry: Entry) -> str:
    """The write id ``entry`` belongs to, as its message said it: a set's (ApplyPatch, a rewind)
    for each of its files."""
    return entry.group or entry.id


def writes_count(entries: Iterable[Entry]) -> int:
    """How many writes (a set counts once) ``entries`` hold."""
    return len({write_of(e) for e in entries})


def matches(entry: Entry, digest: str, data: bytes) -> bool:
    """Whether ``data`` is the content one of ``entry``'s hashes (``digest``) names: hashed in
    that record's own algorithm (BLAKE3; SHA-256 for a record written before it)."""
    return bool(digest) and entry.digest(data) == digest


def meets(a: Entry, left: str, b: Entry, found: str, between: Callable[[], bytes | None]) -> bool | None:
    """Whether the content ``a`` left (its hash ``left``, "" for none: absent) is the content
    ``b`` found (``found``). Two records hashed alike compare their hashes; hashed in two
    algorithms (a record written before BLAKE3 beside one after), the content ``b`` found
    (``between()``: its pre-image, None when the history holds none) is hashed in ``a``'s.
    None when that cannot be told: two different hashes never mean equal or different."""
    if not left or not found or a.hash == b.hash:
        return left == found
    data = between()
    return None if data is None else a.digest(data) == left


@dataclass(frozen=True, slots=True)
class Since:
    """The writes from a point on, to files inside the workspace (log order, failed ones left
    out), and how answers name that point."""

    writes: list[Entry]
    point: str
    start: Entry | None = None  # the write ``since`` named (its set's first, when in a set)
    # Sets (ApplyPatch, an undone set) among the writes that also wrote files outside the
    # workspace: their ids (a rewind undoes a set whole, so it cannot undo these).
    partial_sets: list[str] = field(default_factory=list)


def writes_since(
    history: WriteHistory,
    since: str,
    workspace: Workspace,
    *,
    under: Path | None = None,
    now: float | None = None,
) -> Since:
    """The writes ``since`` names the start of (blocking: reads the history). ``under``: only
    that file's, or those under that folder. Refusal for a ``since`` that names nothing here."""
    entries = history.entries()
    inside = _Inside(workspace)
    start: Entry | None
    text = since.strip()
    if not text:  # the terminal's default: all the history holds
        start, point, chosen = None, "the oldest write the history holds", entries
    elif text.startswith("w-"):
        at = _position(entries, text, inside)
        if entries[at].group:  # a set is one write: from its first file on
            at = next(i for i, e in enumerate(entries) if e.group == entries[at].group)
        start = entries[at]
        point = f"{text} ({when(entries[at].time)})"
        chosen = entries[at:]
    else:
        try:
            t = parse_time(text, now)
        except ValueError:
            raise Refusal(
                f"`since` must be {SINCE_HELP}; `{escape(text[:80])}` is none of these.", "Bad since"
            ) from None
        start, point = None, when(t)
        chosen = [e for e in entries if e.time >= t]
    kept = [e for e in chosen if e.state != "failed" and inside(e.path) and _under(e.path, under)]
    sets = {e.group for e in kept if e.group}
    partial = list(dict.fromkeys(e.group for e in chosen if e.group in sets and not inside(e.path)))
    return Since(kept, point, start, partial)


def _position(entries: list[Entry], write_id: str, inside: _Inside) -> int:
    """Where write ``write_id`` stands in the log; Refusal when it is not a write to a file
    inside the workspace (said as for an id never seen) or was evicted."""
    shown = escape(write_id[:40])
    if WRITE_ID.fullmatch(write_id) is None:
        raise Refusal(
            f"`{shown}` is not a write id: give the id a write's message ended with (w- and 16 hex "
            "digits), or a time (2026-11-28T14:00) or an age (2h).",
            "Bad since",
        )
    for at, entry in enumerate(entries):
        if entry.id == write_id and inside(entry.path):
            return at
    raise Refusal(unknown_write(write_id), "Unknown write id")


def unknown_write(write_id: str) -> str:
    """The one answer for an id no write had, an evicted one and one of another workspace's:
    they take the same steps and get the same words, which name nothing (SPEC §8.4, §10; a
    tombstone keeps no path, so "evicted" would tell an id that was)."""
    return (
        f"No write {escape(write_id)} in this workspace's history: no write had that id, or it was "
        "evicted (older than --history-max-age, or beyond --history-max-bytes). Use the whole id "
        "a write's message ended with."
    )


class _Inside:
    """Whether a written path is inside the workspace, each path judged once per call."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.seen: dict[str, bool] = {}

    def __call__(self, path: str) -> bool:
        known = self.seen.get(path)
        if known is None:
            known = self.seen[path] = self.workspace.contains(path)
        return known


def _under(path: str, top: Path | None) -> bool:
    if top is None:
        return True
    root = str(top)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


@dataclass(slots=True)
class FileWrites:
    """One file's writes since the point, in the log's order."""

    real: Path
    writes: list[Entry] = field(default_factory=list)

    @property
    def first(self) -> Entry:
        return self.writes[0]

    @property
    def last(self) -> Entry:
        return self.writes[-1]


def by_file(writes: Iterable[Entry]) -> list[FileWrites]:
    """The writes grouped by file, files in the order of their first write."""
    files: dict[str, list[Entry]] = {}
    for entry in writes:
        files.setdefault(entry.path, []).append(entry)
    return [FileWrites(Path(path), entries) for path, entries in files.items()]


def moves(files: list[FileWrites]) -> dict[Path, FileWrites]:
    """The files a set moved (ApplyPatch's ``move_to``) and are still moved: source → the
    destination's writes. A pair: one set's write removed the source, which existed before,
    and created the destination, each its first write since the point; the source is gone and
    the destination there now. Where a set removed and created several, the pairs are those
    whose content went along unchanged, and a set's single pair whatever its content."""
    removed: dict[str, list[FileWrites]] = {}
    created: dict[str, list[FileWrites]] = {}
    for f in files:
        first = f.first
        if first.group and first.removed and not first.created and not os.path.lexists(f.real):
            removed.setdefault(first.group, []).append(f)
        elif first.group and first.created and os.path.lexists(f.real):
            created.setdefault(first.group, []).append(f)
    pairs: dict[Path, FileWrites] = {}
    for group, sources in removed.items():
        targets = created.get(group, [])
        if len(sources) == 1 and len(targets) == 1:
            pairs[sources[0].real] = targets[0]
            continue
        for source in sources:
            # A set's records are written in one append, in one algorithm: a pair hashed apart
            # is never taken for the same content.
            same = [
                t
                for t in targets
                if t.first.hash == source.first.hash and t.first.after == source.first.before
            ]
            if len(same) == 1:
                pairs[source.real] = same[0]
                targets.remove(same[0])
    return pairs


Visibility = Literal["shown", "sensitive", "hidden"]


def visibility(workspace: Workspace, f: FileWrites) -> Visibility:
    """ "hidden": a client rule hides it (counted, never named); "sensitive": named, never
    diffed (a secret now, or one when it was written: the history kept nothing of it)."""
    key = workspace.rules.secret_key(str(f.real))
    if workspace.secrets.hidden_by(key) is not None:
        return "hidden"
    if workspace.secrets.is_sensitive(key) or any(e.not_kept == "sensitive file" for e in f.writes):
        return "sensitive"
    return "shown"


@dataclass(frozen=True, slots=True)
class Now:
    """A file as it is now: ``data`` None when it is absent (``exists`` False) or was not read
    (``why`` says why: too large, not a regular file, unreadable)."""

    exists: bool
    data: bytes | None = None
    size: int = 0
    why: str = ""


def read_now(real: Path, shown: str, limit: int) -> Now:
    """The file at ``real`` now, read whole when at most ``limit`` bytes (blocking)."""
    rp = ResolvedPath(shown, real, True, False)
    try:
        fd = open_regular(rp)  # never follows a link, never blocks on a FIFO
    except PathError as exc:
        if exc.brief == "File not found":
            return Now(False)
        return Now(os.path.lexists(real), why="it is not a regular file now, or cannot be opened")
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            return Now(True, None, size, f"it is larger than {limit >> 20} MiB")
        data = read_whole(fd, limit)
    except OSError as exc:
        return Now(True, why=f"it cannot be read ({exc.strerror})")
    finally:
        os.close(fd)
    if len(data) > limit:
        return Now(True, None, len(data), f"it is larger than {limit >> 20} MiB")
    return Now(True, data, len(data))


def as_last_left(f: FileWrites, now: Now) -> bool | None:
    """Whether the file is as its last write through filegate left it (None: not known, it
    was not read or that write kept no hash)."""
    last = f.last
    if last.removed:
        return not now.exists
    if not now.exists:
        return False
    if now.data is None or not last.after:
        return None
    return matches(last, last.after, now.data)
