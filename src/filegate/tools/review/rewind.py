"""A rewind's plan (SPEC §10 Rewind): every write from one write on, to files inside the caller's
workspace, undone newest first as one write.

Undoing a file's writes newest first ends where its first write in the rewind began, so the
plan gives each file that content (or its removal, when that write created it). What it checks
first, so the question (or the refusal) says everything before anything is written:

- a file changed outside filegate since (after its last write, or between two of its writes)
  is named with what changed: the whole rewind is refused unless ``force``;
- a file the history never kept (a sensitive one, one past --history-max-bytes) or no longer
  holds (a pre-image gone) is named and left as it is; one a client rule hides is counted;
- a file a set may not hold (a client rule file, a ``deny`` rule, a link on its way) is named
  and left as it is: UndoWrite by ``write_id`` asks about it alone;
- an ApplyPatch set is undone whole: one that also wrote outside the workspace refuses the
  rewind.
"""

from __future__ import annotations

import functools
import itertools
import stat
from dataclasses import dataclass, field

from filegate.errors import PathError, Refusal
from filegate.fsio.history import WRITE_ID, Entry, WriteHistory
from filegate.policy.changeset import gate_path
from filegate.policy.escape import escape
from filegate.policy.workspace import ResolvedPath, Workspace
from filegate.tools.edit.diffing import plural
from filegate.tools.review.since import (
    FileWrites,
    Now,
    as_last_left,
    by_file,
    matches,
    meets,
    read_now,
    visibility,
    when,
    write_of,
    writes_count,
    writes_since,
)

# A file a rewind reads (now, and its content to restore): a write's own bound.
MAX_FILE_BYTES = 128 << 20
# Everything one rewind holds at once, now and before, in all (ApplyPatch's bound on a set).
MAX_REWIND_BYTES = 256 << 20


@dataclass(frozen=True, slots=True)
class Restore:
    """One file the rewind puts back: as it was before ``writes[0]`` (``before`` None: it did
    not exist, so it is removed)."""

    rp: ResolvedPath
    writes: list[Entry]
    now: bytes | None  # as the plan found it (None: absent)
    before: bytes | None
    mode: int | None  # its permission bits then, setuid/setgid taken off
    changed: str  # why it is not as filegate's last write left it ("" when it is)
    asked: bool = False  # an ``ask`` rule covers it: the rewind is asked whatever --approval says


@dataclass(slots=True)
class Plan:
    start: Entry
    writes: list[Entry]  # every write undone, inside the workspace, log order
    restores: list[Restore] = field(default_factory=list)  # newest first
    already: list[str] = field(default_factory=list)  # files already as they were (shown)
    left: list[str] = field(default_factory=list)  # files left as they are, each with why
    hidden: int = 0  # files a client rule hides among those written: counted, never named

    @property
    def point(self) -> str:
        return f"{self.start.id} ({when(self.start.time)})"

    @property
    def count(self) -> int:
        """The writes it undoes (a set counts once)."""
        return writes_count(self.writes)

    @property
    def changed(self) -> list[Restore]:
        return [r for r in self.restores if r.changed]

    def notes(self) -> list[str]:
        """What the question says before the diffs: every file not restored, and why."""
        out = [f"Left as it is: {why}" for why in self.left]
        if self.hidden:
            out.append(
                f"Left as {'it is' if self.hidden == 1 else 'they are'}: {plural(self.hidden, 'file')} "
                "hidden from AI tools by client rules (counted, not named; the history kept nothing of it)."
            )
        if self.already:
            named = ", ".join(f"`{s}`" for s in self.already[:5])
            more = f" and {len(self.already) - 5} more" if len(self.already) > 5 else ""
            out.append(f"Already as before {self.start.id}: {named}{more}.")
        return out


def plan_rewind(history: WriteHistory, since: str, workspace: Workspace) -> Plan:
    """The plan of ``UndoWrite(since=…)`` (blocking: reads the history and the files).
    Refusal when ``since`` names no write of this workspace, or a set in it also wrote
    outside the workspace."""
    since = since.strip()
    if WRITE_ID.fullmatch(since) is None:
        raise Refusal(
            f"`since` takes a write id (w- and 16 hex digits), the first write to undo; "
            f"`{escape(since[:40])}` is not one. Changes lists the writes since a time, with their ids.",
            "Bad since",
        )
    found = writes_since(history, since, workspace)
    assert found.start is not None
    if found.partial_sets:
        sets = ", ".join(found.partial_sets)
        raise Refusal(
            f"The rewind from {since} would undo part of a set only: {sets} also wrote files outside "
            "this workspace, and a set is undone whole. Nothing was written. Rewind from a write "
            "after it, or undo the set by its id from a workspace that holds all its files.",
            "Set outside workspace",
        )
    plan = Plan(found.start, found.writes)
    held = 0
    for f in by_file(found.writes):
        seen = visibility(workspace, f)
        shown = workspace.display(f.real)
        if seen == "hidden":
            plan.hidden += 1
            continue
        if seen == "sensitive":
            plan.left.append(f"`{shown}` is sensitive, so the history kept nothing of it ({_ids(f)}).")
            continue
        restore = _restore(history, workspace, f, shown, plan)
        if restore is not None:
            held += len(restore.now or b"") + len(restore.before or b"")
            if held > MAX_REWIND_BYTES:
                raise Refusal(
                    f"The rewind from {since} would hold more than {MAX_REWIND_BYTES >> 20} MiB of "
                    "files at once. Nothing was written. Rewind from a later write first.",
                    "Rewind too large",
                )
            plan.restores.append(restore)
    order = {e.id: at for at, e in enumerate(found.writes)}
    plan.restores.sort(key=lambda r: order[r.writes[-1].id], reverse=True)  # newest first
    return plan


def _restore(
    history: WriteHistory, workspace: Workspace, f: FileWrites, shown: str, plan: Plan
) -> Restore | None:
    """``f``'s restore, or None when it is left as it is (said in ``plan``) or is as before."""
    first = f.first
    if not first.created and not first.kept:
        plan.left.append(f"`{shown}`: its content before {write_of(first)} was not kept ({first.not_kept}).")
        return None
    before: bytes | None = None
    if not first.created:
        try:
            before = history.pre_image(first)
        except (OSError, ValueError):
            plan.left.append(f"`{shown}`: the history no longer holds its content before {write_of(first)}.")
            return None
    now = read_now(f.real, shown, MAX_FILE_BYTES)
    if now.exists and now.data is None:
        plan.left.append(f"`{shown}` cannot be restored: {now.why}.")
        return None
    if (before is None and not now.exists) or (before is not None and now.data == before):
        plan.already.append(shown)
        return None
    try:
        gated = gate_path(workspace, str(f.real), "write")
    except PathError as exc:
        plan.left.append(f"`{shown}` cannot be restored with the others ({_why(exc)}); {_alone(f)}")
        return None
    mode = None if first.mode is None else first.mode & ~(stat.S_ISUID | stat.S_ISGID)
    rp = ResolvedPath(shown, gated.rp.real, gated.rp.inside, False)
    return Restore(rp, f.writes, now.data, before, mode, _changed(history, f, now), gated.asked)


def _why(exc: PathError) -> str:
    return (exc.brief or "refused").lower()


def _alone(f: FileWrites) -> str:
    ids = list(dict.fromkeys(write_of(e) for e in reversed(f.writes)))
    return f"UndoWrite with `write_id` undoes its writes one at a time, newest first ({', '.join(ids[:5])})."


def _changed(history: WriteHistory, f: FileWrites, now: Now) -> str:
    """Why the file is not as filegate's writes left it: changed after the last, or between two."""
    for a, b in itertools.pairwise(f.writes):
        between = functools.cache(functools.partial(_held, history, b))  # loaded once, if asked
        found_by_b = "" if b.created else b.before
        same = meets(a, "" if a.removed else a.after, b, found_by_b, between)
        if not same and a.state == "unconfirmed":  # a never landed: b found what a did
            landed = meets(a, a.before or "", b, found_by_b, between)
            same = True if landed else None if None in (same, landed) else False
        if same is None:
            return (
                f"whether it was changed outside filegate between {write_of(a)} and {write_of(b)} "
                "cannot be told: their records hash content differently and the history holds no "
                "copy of it"
            )
        if not same:
            return f"it was changed outside filegate between {write_of(a)} and {write_of(b)}"
    as_left = as_last_left(f, now)
    if as_left:
        return ""
    last = f.last
    if not now.exists:
        return f"it was deleted after {write_of(last)}"
    if last.removed:
        return f"it exists again after {write_of(last)} removed it"
    if now.data is not None and last.state == "unconfirmed" and matches(last, last.before, now.data):
        return ""  # the last write never landed: the file is as the one before left it
    return f"it changed after {write_of(last)}"


def _held(history: WriteHistory, entry: Entry) -> bytes | None:
    """The content ``entry``'s write found, as the history holds it (None: it holds none)."""
    if entry.created or not entry.kept:
        return None
    try:
        return history.pre_image(entry)
    except (OSError, ValueError):
        return None


def _ids(f: FileWrites) -> str:
    ids = list(dict.fromkeys(write_of(e) for e in f.writes))
    return ", ".join(ids) if len(ids) <= 3 else f"{ids[0]} … {ids[-1]}, {plural(len(ids), 'write')}"
