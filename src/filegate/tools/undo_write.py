"""UndoWrite: put a file back as it was before one write, from the write history (SPEC §8.4);
with ``since``, every write from one on, as one write (SPEC §10 Rewind: tools/review/rewind.py
plans it, tools/patch/run.py asks once and commits it all or nothing).

It is a write like the others: the same route (tools/edit/writing.py), the same path rules and
approval (the question shows the diff), logged, kept in the history (so an undo can be undone)
and given its own write id. It needs no earlier ReadFile: the check that the file is still as
that write left it (its hash in the history) is stronger than a read.
"""

from __future__ import annotations

import dataclasses
import stat
import time
from typing import Annotated

import anyio
from pydantic import BaseModel, ConfigDict, Field, model_validator

from filegate.errors import WriteError
from filegate.fsio.history import Entry, WriteHistory, is_write_id
from filegate.policy.budget import ERROR_CHARS
from filegate.policy.changeset import gate_path
from filegate.policy.escape import escape
from filegate.policy.filetype import SNIFF_BYTES
from filegate.policy.workspace import ResolvedPath
from filegate.tools.describe import GrantArg, load_description
from filegate.tools.edit.diffing import binary_diff, fit_lines_to, plural, unified_diff
from filegate.tools.edit.writing import (
    SENSITIVE_DONE,
    Change,
    WriteJob,
    Written,
    detect_encoding,
    lines_sentence,
    load_current,
    resolve_for_write,
    run_write,
)
from filegate.tools.outcome import Outcome, ToolEnv, ToolSpec
from filegate.tools.patch.run import Label, Member, run_set
from filegate.tools.readguard.ledger import reader_of
from filegate.tools.review.rewind import Plan, Restore, plan_rewind
from filegate.tools.review.sections import Section, diff_block, fit
from filegate.tools.review.since import matches, unknown_write

# Later writes to the same file named in a refusal, at most.
MAX_LATER_NAMED = 5


class UndoWriteParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    write_id: Annotated[
        str | None,
        Field(description='The whole id a write\'s message ended with ("Write id: w-3f9a2c1d8e07b654.").'),
    ] = None
    since: Annotated[
        str | None,
        Field(
            description="Instead: undo every write from this id on (this workspace's files), as one write."
        ),
    ] = None
    dry_run: Annotated[bool, Field(description="Preview: return the diff, write nothing.")] = False
    force: Annotated[
        bool,
        Field(description="Restore even if the file changed since that write (its later changes are lost)."),
    ] = False
    grant: GrantArg = ""

    @model_validator(mode="after")
    def _one_of(self) -> UndoWriteParams:
        if (self.write_id is None) == (self.since is None):
            raise ValueError("give `write_id` (one write) or `since` (every write from that one on)")
        return self


async def undo_write(params: UndoWriteParams, env: ToolEnv) -> Outcome:
    history = history_of(env)
    if params.since is not None:
        return await _rewind(history, params.since, params, env)
    write_id = (params.write_id or "").strip()
    if not is_write_id(write_id):
        shown = escape(write_id[:40]) + ("…" if len(write_id) > 40 else "")
        raise WriteError(
            f"`{shown}` is not a write id. Give the whole id a write's message ended with "
            "(w- and 16 hex digits, as in `Write id: w-3f9a2c1d8e07b654.`).",
            "Not a write id",
        )
    entry = await anyio.to_thread.run_sync(lambda: _in_workspace(history, write_id, env))
    if entry is None:
        raise WriteError(unknown_write(write_id), "Unknown write id")
    return await undo_entry(entry, env, dry_run=params.dry_run, force=params.force)


def history_of(env: ToolEnv) -> WriteHistory:
    if env.history is None:
        raise WriteError(
            "The write history is off (`--history off`), so no write can be undone.", "History off"
        )
    return env.history


def _in_workspace(history: WriteHistory, write_id: str, env: ToolEnv) -> Entry | None:
    """The write ``write_id`` when its file is inside the caller's workspace, else None: an id
    no write has, an evicted one and one of another workspace's (replicas and other projects
    share the state directory) take the same steps and get the same answer, which names
    nothing (SPEC §8.4; a tombstone keeps no path, so "evicted" would tell an id that was)."""
    entry = history.find(write_id)
    inside = entry is not None and env.workspace.contains(entry.path)
    return entry if inside else None


async def undo_entry(entry: Entry, env: ToolEnv, *, dry_run: bool = False, force: bool = False) -> Outcome:
    """Undo the write ``entry`` (found by the caller: UndoWrite in its workspace, the terminal
    by id or prefix) through the write route."""
    history = history_of(env)
    if entry.group:  # one file of a set (ApplyPatch): the set is undone as one (SPEC §10)
        return await _undo_set(history, entry.group, env, dry_run=dry_run, force=force)
    _check_undoable(entry)
    rp = resolve_for_write(env, entry.path, "write")
    rp = dataclasses.replace(rp, shown=env.workspace.display(rp.real))  # as the write showed it
    later = [
        e
        for e in await anyio.to_thread.run_sync(lambda: history.entries(after=entry.id))
        if e.path == entry.path and e.time > entry.time
    ]
    before = None if entry.created else await anyio.to_thread.run_sync(lambda: _pre_image(history, entry, rp))
    job = WriteJob(
        tool="UndoWrite",
        rp=rp,
        transform=lambda data: _restore(entry, before, data, rp, force, later),
        requested=f"Restores the content it had before write {entry.id} ({_when(entry)}).",
        requested_unsafe=False,
        arguments={"write_id": entry.id, "dry_run": dry_run, "force": force},
        done=lambda written: _success(entry, rp, written),
        unchanged=lambda size: Outcome(
            message=f"`{rp.shown}` is already as it was before {entry.id}; nothing changed."
        ),
        dry_run=dry_run,
        would=lambda _: f"Would undo {entry.id} ({entry.tool}, {_when(entry)}).",
    )
    return await run_write(job, env)


async def _undo_set(
    history: WriteHistory, set_id: str, env: ToolEnv, *, dry_run: bool, force: bool
) -> Outcome:
    """Every file of set ``set_id`` put back as it was before it, as one write: one question
    with the combined diff, all or nothing, refused (naming each file) when any changed since."""
    first = await anyio.to_thread.run_sync(lambda: history.find(set_id))
    entries = [first, *await anyio.to_thread.run_sync(lambda: history.entries(after=set_id))] if first else []
    members = [e for e in entries if e.group == set_id]
    for entry in members:
        _check_undoable(entry)
    mine = {e.id for e in members}
    prepared = await anyio.to_thread.run_sync(
        lambda: [_set_member(history, e, entries, mine, env) for e in members]
    )
    changed = [f"`{rp.shown}` ({why})" for rp, why, _ in prepared if why]
    if changed and not force:
        raise WriteError(
            f"Set {set_id} cannot be undone as it is: {'; '.join(changed)}. Nothing was written. "
            "`force: true` restores every file of the set anyway (their later changes are lost).",
            "File changed since",
        )
    first = members[0]
    restoring = [m for _, _, m in prepared if m is not None]
    if not restoring:
        return Outcome(message=f"Every file of {set_id} is already as it was before it; nothing changed.")
    verb = f"undo {set_id} ({first.tool}, {_when(first)}), restoring"
    done = await run_set("UndoWrite", restoring, env, verb=verb, dry_run=dry_run)
    if isinstance(done, Outcome):
        return done
    lines = [f"- {m.label} `{m.rp.shown}`" for m in done.members]
    message = f"Undid {set_id}: {as_before(len(lines))}."
    return Outcome(output="\n".join(lines), message=message, write_id=done.write_id)


def _set_member(
    history: WriteHistory, entry: Entry, entries: list[Entry], mine: set[str], env: ToolEnv
) -> tuple[ResolvedPath, str, Member | None]:
    """One file of a set to undo: its path (gated as a set's), why it is no longer as the set
    left it ("" when it is), and the member that restores it (None: it is as before already)."""
    gated = gate_path(env.workspace, entry.path, "write")
    rp = dataclasses.replace(gated.rp, shown=env.workspace.display(gated.rp.real))
    later = [e for e in entries if e.path == entry.path and e.time > entry.time and e.id not in mine]
    before = None if entry.created else _pre_image(history, entry, rp)
    current = load_current(rp, must_exist=False)
    why = _what_changed(entry, current.data, later)
    if _as_before(entry, current.data):  # nothing to restore (a forced undo of a set)
        return rp, why, None
    job: WriteJob[None] = WriteJob(
        tool="UndoWrite",
        rp=rp,
        transform=lambda data: _restore(entry, before, data, rp, True, later),
    )
    label: Label = "removed" if entry.created else "restored"
    return rp, why, Member(label, job, gated.asked)


def _as_before(entry: Entry, data: bytes | None) -> bool:
    if entry.created:
        return data is None
    return data is not None and entry.digest(data) == entry.before


# --- since: the rewind (SPEC §10) -------------------------------------------------------------

# A refusal's diffs (what `force` would change) leave this much of an error's room (SPEC §9:
# under ERROR_CHARS) to its sentences: the files named, what is left as it is.
REFUSAL_WORDS_CHARS = 3000


async def _rewind(history: WriteHistory, since: str, params: UndoWriteParams, env: ToolEnv) -> Outcome:
    """Every write from ``since`` on to this workspace's files undone, newest first, as one write:
    one question over the combined diff; all or nothing; refused, naming them, when files changed
    outside filegate since (unless ``force``); the files it cannot restore named before it."""
    plan = await anyio.to_thread.run_sync(lambda: plan_rewind(history, since, env.workspace))
    notes = plan.notes()
    if plan.changed and not params.force:
        output = await anyio.to_thread.run_sync(lambda: _force_diff(plan, env))
        raise WriteError(
            _changed_refusal(plan, notes),
            "File changed since",
            output=output,
            next_step="Call UndoWrite again with `force: true` to rewind anyway (those changes are lost).",
        )
    if not plan.restores:
        return Outcome(
            message=" ".join([f"Nothing to rewind from {plan.point}: no file needs restoring.", *notes])
        )
    members = [_rewind_member(r, params.force) for r in plan.restores]
    verb = f"rewind {plural(plan.count, 'write')} from {plan.point}, restoring"
    done = await run_set("UndoWrite", members, env, verb=verb, dry_run=params.dry_run, notes=notes)
    if isinstance(done, Outcome):
        return done
    lines = [f"- {m.label} `{m.rp.shown}`" for m in done.members]
    message = (
        f"Rewound {plural(plan.count, 'write')} from {plan.point}: {as_before(len(lines))}, as one write."
    )
    return Outcome(output="\n".join([*lines, *notes]), message=message, write_id=done.write_id)


def _changed_refusal(plan: Plan, notes: list[str]) -> str:
    named = "; ".join(f"`{r.rp.shown}` ({r.changed})" for r in plan.changed)
    return " ".join(
        [
            f"The rewind from {plan.point} is refused: {plural(len(plan.changed), 'file')} changed "
            f"outside filegate since: {named}. Nothing was written. Below is what `force: true` "
            "would change in them.",
            *notes,
        ]
    )


def _force_diff(plan: Plan, env: ToolEnv) -> str:
    """What ``force`` would change in each changed file: now → as before, cut to fit."""
    sections = []
    for r in plan.changed:
        _, block = diff_block(r.rp.shown, r.rp.real, r.now, r.before, env.codec_of)
        sections.append(Section(r.rp.shown, block or f"`{r.rp.shown}`: no change in its content"))
    fitted = fit([], sections, min(env.result_budget, ERROR_CHARS - REFUSAL_WORDS_CHARS))
    note = fitted.note("Changes with `path` shows one file's whole diff.")
    return fitted.text + (f"\n{note}" if note else "")


def _rewind_member(r: Restore, force: bool) -> Member:
    """One file of the rewind as a set's member: its content before, or its removal."""

    def restore(data: bytes | None) -> Change[None]:
        if data != r.now and not force:  # changed since the plan saw it
            raise WriteError(
                f"`{r.rp.shown}` changed while the rewind was prepared. Nothing was written.",
                "File changed since",
                next_step="Call UndoWrite with `since` again to see what changed.",
            )
        if r.before is None:
            if data is None:
                raise WriteError(f"`{r.rp.shown}` is gone already. Nothing was written.", "Nothing to undo")
            return Change(b"", detect_encoding(data), None, remove=True)
        return Change(r.before, detect_encoding(r.before), None, mode=r.mode)

    job: WriteJob[None] = WriteJob(
        tool="UndoWrite",
        rp=r.rp,
        transform=restore,
    )
    label: Label = "removed" if r.before is None else "restored"
    return Member(label, job, r.asked)


def as_before(files: int) -> str:
    """The files a restore put back, in number: "1 file as it was before it"."""
    return f"{plural(files, 'file')} {'as it was' if files == 1 else 'as they were'} before it"


def _check_undoable(entry: Entry) -> None:
    if entry.state == "failed":
        raise WriteError(
            f"Write {entry.id} failed and wrote nothing; there is nothing to undo.", "Nothing to undo"
        )
    if not entry.kept:
        why = entry.not_kept
        raise WriteError(
            f"Write {entry.id} cannot be undone: its previous content was not kept ({why}).",
            "Not kept",
        )


def _pre_image(history: WriteHistory, entry: Entry, rp: ResolvedPath) -> bytes:
    try:
        return history.pre_image(entry)
    except (OSError, ValueError):
        raise WriteError(
            f"The kept copy of `{rp.shown}` before {entry.id} is missing or damaged, so it cannot "
            "be restored.",
            "Copy missing",
        ) from None


def _restore(
    entry: Entry, before: bytes | None, data: bytes | None, rp: ResolvedPath, force: bool, later: list[Entry]
) -> Change[None]:
    """The file's bytes now → the bytes before ``entry`` (or its removal, for a creation)."""
    if _is_undone(entry, data):
        raise WriteError(
            f"Write {entry.id} is already undone: `{rp.shown}` is as it was before it"
            f"{_undone_by(entry, later, data)}. Nothing was written.",
            "Already undone",
        )
    if not force:
        changed = _what_changed(entry, data, later)
        if changed:
            target = b"" if before is None else before
            if shown_as_text(rp, data) and shown_as_text(rp, before):
                diff = unified_diff(rp.shown, data or b"", target, detect_encoding(target).codec).text
            else:  # the type gate of every preview: a file no tool shows is told by its sizes
                diff = binary_diff(len(data or b""), len(target)).text
            raise WriteError(
                f"`{rp.shown}` is no longer as {entry.id} left it: {changed}. Nothing was written. "
                "Below is what `force: true` would change.",
                "File changed since",
                output=fit_lines_to(diff, ERROR_CHARS - 1000),
                next_step="Call UndoWrite again with `force: true` to restore it anyway.",
            )
    if before is None:  # the write created the file: undoing it removes it
        if data is None:
            raise WriteError(f"`{rp.shown}` does not exist: there is nothing to remove.", "Nothing to undo")
        note = f"Removes `{rp.shown}`: {entry.id} created it."
        return Change(b"", detect_encoding(data), None, notes=(note,), remove=True)
    # The permission bits it had, but setuid/setgid (a restore never hands out an owner's rights).
    mode = None if entry.mode is None else entry.mode & ~(stat.S_ISUID | stat.S_ISGID)
    binary = not shown_as_text(rp, before)
    return Change(before, detect_encoding(before), None, mode=mode, binary=binary)


def shown_as_text(rp: ResolvedPath, data: bytes | None) -> bool:
    """Whether ReadFile would show these bytes of this file (no content: nothing to hide)."""
    return data is None or reader_of(rp.real.name, data[:SNIFF_BYTES]) == "ReadFile"


def _is_undone(entry: Entry, data: bytes | None) -> bool:
    """Whether the file is back as it was before ``entry`` (and was not so after it)."""
    if entry.created:
        return data is None
    if data is None or entry.removed or not entry.before or entry.before == entry.after:
        return False
    return entry.digest(data) == entry.before


def _undone_by(entry: Entry, later: list[Entry], data: bytes | None) -> str:
    """ " (undone by w-… at …)" when the last later write is an UndoWrite that left it so (the
    file, ``data``, as before ``entry``), checked in that write's own hash."""
    last = later[-1] if later else None
    if last is None or last.tool != "UndoWrite":
        return ""
    left = last.removed if entry.created else data is not None and matches(last, last.after, data)
    return f" (undone by {last.id}, {_when(last)})" if left else ""


def _what_changed(entry: Entry, data: bytes | None, later: list[Entry]) -> str:
    """Why the file is not as ``entry`` left it ("" when it is)."""
    if entry.removed:
        return "" if data is None else "it exists again"
    if data is None:
        return "it was deleted"
    if entry.digest(data) == entry.after:
        return ""
    left = plural(entry.size_after or 0, "byte")
    why = f"it changed since (now {plural(len(data), 'byte')}; that write left {left})"
    if later:
        names = ", ".join(f"{e.id} ({e.tool})" for e in later[-MAX_LATER_NAMED:])
        why += f"; later writes through filegate: {names} — undo those first, newest first"
    return why


def _when(entry: Entry) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(entry.time))


def _success(entry: Entry, rp: ResolvedPath, w: Written[None]) -> Outcome:
    if w.diff is None:  # a sensitive file (a name that became sensitive since): nothing told
        return Outcome(message=f"Undid {entry.id}." + SENSITIVE_DONE)
    if entry.created:
        return Outcome(message=f"Undid {entry.id}: removed `{rp.shown}`, which it had created.")
    message = f"Undid {entry.id}: `{rp.shown}` restored as it was before it. Current size: {w.size} bytes."
    return Outcome(message=message + lines_sentence(w.diff))


SPEC = ToolSpec(
    name="UndoWrite",
    title="Undo a write",
    description=load_description("undo_write"),
    params=UndoWriteParams,
    handler=undo_write,
    read_only=False,
)
