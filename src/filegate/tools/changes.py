"""Changes: what was written through filegate since a point, and one diff of it (SPEC §10 Review).

Read-only. The files inside the caller's workspace that any client sharing the state directory
wrote since ``since`` (a write id, an ISO 8601 time, an age), each added, modified or deleted,
with one combined diff within the client's budget: against what the file was before its first
write since then (the history's pre-image), or against git's ``HEAD`` (fsio/githead.py, the one
reader of git). A sensitive file is named, never diffed, and nothing about its content is said;
a file a client rule hides is counted, never named.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field

from filegate.errors import Refusal
from filegate.fsio import githead
from filegate.fsio.githead import GitUnreadable, HeadFile
from filegate.fsio.history import WriteHistory
from filegate.policy.escape import escape
from filegate.policy.workspace import Workspace
from filegate.tools.describe import load_description
from filegate.tools.edit.diffing import plural
from filegate.tools.outcome import Outcome, ToolEnv, ToolSpec
from filegate.tools.review.sections import LIST_SHARE, Section, diff_block, fit
from filegate.tools.review.since import (
    FileWrites,
    Now,
    as_last_left,
    by_file,
    moves,
    read_now,
    visibility,
    write_of,
    writes_count,
    writes_since,
)

# A file (now, or its pre-image) is read for a diff when at most this large; a larger one is
# listed with its change and no diff. The bound git's blobs have too.
READ_MAX_BYTES = githead.BLOB_MAX_BYTES
# Files diffed in one answer, at most, whatever the budget: past them the list goes on, each
# file by its kind (`path` narrows the answer). Typing a file for its diff (text or not, as
# ReadFile would judge it) asks libmagic, ~1-3 ms a side on a loaded machine: 40 files keep
# a long history's answer within a second (bench changes-10k).
MAX_FILES_DIFFED = 40
# The summary's room in the budget (it always fits: SPEC §9).
MESSAGE_ROOM = 1500
# Write ids named per file; past them, the first and the last.
IDS_NAMED = 3
CLIENTS_NAMED = 5
# A row's length besides its file's name, as the list's room is shared out before the rows
# are made ("modified `…` (+12 -3 lines; 2 writes: w-…, w-…)").
ROW_CHARS = 80


class ChangesParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    since: Annotated[str, Field(description="A write id (w-…), an ISO 8601 time, or an age (2h).")]
    path: Annotated[str | None, Field(description="Only this file or folder.")] = None
    against: Literal["history", "HEAD"] = "history"


async def changes(params: ChangesParams, env: ToolEnv) -> Outcome:
    history = env.history
    if history is None:
        raise Refusal(
            "The write history is off (`--history off`), so filegate kept no record of writes to "
            "show. Nothing to review.",
            "History off",
        )
    under = None
    if params.path is not None:
        under = env.workspace.resolve(params.path, "read").real
    else:
        env.workspace.check_client_rules()
    return await anyio.to_thread.run_sync(lambda: review(history, params, env, under), abandon_on_cancel=True)


def review(history: WriteHistory, params: ChangesParams, env: ToolEnv, under: Path | None) -> Outcome:
    """The whole answer (blocking: reads the history, the files, git)."""
    ws = env.workspace
    since = writes_since(history, params.since, ws, under=under)
    shown: list[tuple[FileWrites, bool]] = []  # (file, sensitive)
    hidden = 0
    for f in by_file(since.writes):
        seen = visibility(ws, f)
        if seen == "hidden":
            hidden += 1
        else:
            shown.append((f, seen == "sensitive"))
    hidden_said = (
        f" {plural(hidden, 'more file')} written since then {'is' if hidden == 1 else 'are'} hidden "
        "by client rules: counted, not named."
        if hidden
        else ""
    )
    if not shown:
        where = "" if under is None else f" under `{ws.display(under)}`"
        return Outcome(
            message=f"No file{where} inside this workspace was written through filegate since "
            f"{since.point}.{hidden_said}"
        )
    moved = moves([f for f, sensitive in shown if not sensitive])
    arrived = {d.real for d in moved.values()}
    shown = [(f, sensitive) for f, sensitive in shown if f.real not in arrived]  # with their source
    room = max(env.result_budget - MESSAGE_ROOM, 2000)
    listed = _listed(shown, ws, int(room * LIST_SHARE))
    examined = [(f, name) for f, sensitive, name in listed if not sensitive]
    head = _Head.of([f.real for f, _ in examined]) if params.against == "HEAD" else None
    rows: list[str] = []
    sections: list[Section] = []
    spent = diffed = 0
    for f, sensitive, name in listed:
        if sensitive:  # its existence only: nothing read, compared or counted
            kind = _kind(not f.first.created, os.path.lexists(f.real))
            rows.append(_row(kind, name, f, "sensitive: not diffed"))
            continue
        if spent >= room or diffed >= MAX_FILES_DIFFED:  # listed by its kind, nothing read
            existed = not f.first.created if head is None else head.existed(f.real)
            kind = _kind(existed, os.path.lexists(f.real))
            if f.real in moved:
                kind, name, _ = _moved(name, ws.display(moved[f.real].real), "")
            rows.append(_row(kind, name, f, ""))
            sections.append(Section(name, ""))
            continue
        diffed += 1
        there = moved.get(f.real)  # a move: the source's content before, the destination's now
        now = read_now(f.real if there is None else there.real, name, READ_MAX_BYTES)
        kind, detail, block = (
            _against_history(history, f, now, name, env)
            if head is None
            else _against_head(head, f, now, name, env)
        )
        if there is not None:
            kind, name, block = _moved(name, ws.display(there.real), block)
            f = FileWrites(f.real, [*f.writes, *there.writes])
        if as_last_left(f, now) is False and there is None:
            detail += f"; changed outside filegate after {write_of(f.last)}"
        rows.append(_row(kind, name, f, detail))
        if block:
            sections.append(Section(name, block))
            spent += len(block)
    fitted = fit(rows, sections, room, unlisted=len(shown) - len(listed))
    writes = writes_count(since.writes)
    clients = list(dict.fromkeys(escape(e.client) or "-" for e in since.writes))
    by = ", ".join(clients[:CLIENTS_NAMED]) + (
        f" and {len(clients) - CLIENTS_NAMED} more" if len(clients) > CLIENTS_NAMED else ""
    )
    against = "what each file was before its first write since then" if head is None else head.label()
    message = (
        f"{plural(len(shown), 'file')} inside this workspace written through filegate since "
        f"{since.point}: {plural(writes, 'write')}, by {by}; diffed against {against}.{hidden_said}"
    )
    if head is not None and head.missing:
        message += f" {head.missing}"
    note = fitted.note("`path` narrows the answer to one file or folder.")
    if note:
        message += f" {note}"
    return Outcome(output=fitted.text, message=message)


def _listed(
    shown: list[tuple[FileWrites, bool]], ws: Workspace, room: int
) -> list[tuple[FileWrites, bool, str]]:
    """The files the list has room for, with their names: only these are read and diffed (a
    history of thousands of files is answered in the time of the ones shown)."""
    listed: list[tuple[FileWrites, bool, str]] = []
    used = 0
    for f, sensitive in shown:
        name = ws.display(f.real)
        used += len(name) + ROW_CHARS
        if used > room and listed:
            break
        listed.append((f, sensitive, name))
    return listed


def _moved(name: str, to: str, block: str) -> tuple[str, str, str]:
    """A moved file's kind, its row's name and its diff block headed from one name to the other."""
    if block:
        lines = block.split("\n")
        if len(lines) >= 2 and lines[0].startswith("--- ") and lines[1].startswith("+++ "):
            lines[1] = "+++ " + (to if to.startswith("/") else f"b/{to}")
        block = "\n".join(lines)
    return "moved", f"{name}` → `{to}", block


def _kind(existed: bool, exists: bool, same: bool = False) -> str:
    if not existed:
        return "added" if exists else "added, then deleted"
    if not exists:
        return "deleted"
    return "modified, then put back" if same else "modified"


def _row(kind: str, name: str, f: FileWrites, detail: str) -> str:
    ids = list(dict.fromkeys(write_of(e) for e in f.writes))
    named = ", ".join(ids) if len(ids) <= IDS_NAMED else f"{ids[0]} … {ids[-1]}"
    detail = f"{detail}; " if detail else ""
    return f"{kind} `{name}` ({detail}{plural(len(ids), 'write')}: {named})"


def _against_history(
    history: WriteHistory, f: FileWrites, now: Now, name: str, env: ToolEnv
) -> tuple[str, str, str]:
    """(kind, detail, diff block) of the file against its content before its first write."""
    first = f.first
    if first.created:
        old: bytes | None = None
    elif not first.kept:
        why = f"no diff: the history kept nothing of it before {write_of(first)} ({first.not_kept})"
        return _kind(True, now.exists), why, ""
    else:
        try:
            old = history.pre_image(first)
        except (OSError, ValueError):
            why = f"no diff: the history no longer holds its content before {write_of(first)}"
            return _kind(True, now.exists), why, ""
    same = old is not None and now.data is not None and old == now.data
    kind = _kind(old is not None, now.exists, same)
    return kind, *_diff(name, f.real, old, now, env)


def _against_head(head: _Head, f: FileWrites, now: Now, name: str, env: ToolEnv) -> tuple[str, str, str]:
    found = head.files.get(f.real)
    if isinstance(found, str) or found is None:
        kind = _kind(not f.first.created, now.exists)
        return kind, f"no diff: {found or 'not looked up'}", ""
    existed = found.kind != "absent"
    same = found.data is not None and now.data is not None and found.data == now.data
    kind = _kind(existed, now.exists, same).replace("put back", "as in HEAD")
    if found.kind in ("link", "other"):
        what = "a symlink" if found.kind == "link" else "a folder or a submodule"
        return kind, f"no diff: HEAD holds {what} there", ""
    if existed and found.data is None:
        return kind, f"no diff: HEAD's copy is {plural(found.size, 'byte')}, larger than this reads", ""
    return kind, *_diff(name, f.real, found.data if existed else None, now, env)


def _diff(name: str, real: Path, old: bytes | None, now: Now, env: ToolEnv) -> tuple[str, str]:
    """(detail, diff block) between ``old`` (None: absent) and the file now."""
    if now.exists and now.data is None:
        return f"no diff: {now.why}", ""
    return diff_block(name, real, old, now.data, env.codec_of)


@dataclass(slots=True)
class _Head:
    """The files as git's HEAD holds them: a HeadFile, or why there is none (a sentence)."""

    files: dict[Path, HeadFile | str]
    commits: set[str]
    missing: str = ""  # said in the summary when no file could be compared

    @classmethod
    def of(cls, paths: Iterable[Path]) -> _Head:
        found: dict[Path, HeadFile | str] = {}
        commits: set[str] = set()
        tops: dict[Path | None, list[Path]] = {}
        for path in paths:
            tops.setdefault(githead.find_top(path.parent), []).append(path)
        git = githead.git_path()
        for top, members in tops.items():
            if top is None:
                found.update(dict.fromkeys(members, "not in a git repository"))
            elif git is None:
                found.update(dict.fromkeys(members, "git is not installed"))
            else:
                try:
                    repo = githead.open_repo(git, top)
                    found.update(githead.head_files(git, repo, members))
                    commits.add(repo.head[:12] or "no commit yet")
                except GitUnreadable as exc:
                    found.update(dict.fromkeys(members, f"git could not be read there ({escape(str(exc))})"))
        head = cls(found, commits)
        if found and not commits:
            head.missing = (
                "No git repository could be read for these files, so there is no HEAD to diff "
                'against (each row says why); `against: "history"` diffs them against what '
                "filegate kept."
            )
        return head

    def existed(self, path: Path) -> bool:
        found = self.files.get(path)
        return isinstance(found, HeadFile) and found.kind != "absent"

    def label(self) -> str:
        if not self.commits:
            return "git's HEAD"
        return f"git's HEAD ({', '.join(sorted(self.commits))})"


SPEC = ToolSpec(
    name="Changes",
    title="Changes since a point",
    description=load_description("changes"),
    params=ChangesParams,
    handler=changes,
    read_only=True,
)
