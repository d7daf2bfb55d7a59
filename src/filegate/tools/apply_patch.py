"""ApplyPatch: several files changed as one write, all or nothing, with one approval (SPEC §10).

The flow, one room each: the arguments compiled to a plan (tools/patch/plan.py, v4a.py); every
path gated before anything is read or shown (policy/changeset.py); each file prepared as the
single write tools prepare theirs — StrReplaceFile's edits (with the V4A hunks' narrowing,
tools/patch/hunks.py), WriteFile's content, a delete, a move (tools/writing.py's ``prepare``);
one question, one commit, one write id (tools/patch/run.py, fsio/changeset.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from filegate.errors import EditFailed, PathError
from filegate.fsio.spliced import Content
from filegate.policy.changeset import GatedPath, Role, gate_path
from filegate.policy.escape import escape_log
from filegate.policy.filetype import SNIFF_BYTES, document_kind
from filegate.tools.describe import GrantArg, load_description
from filegate.tools.edit.diffing import plural
from filegate.tools.edit.replacing import Applied, Edit
from filegate.tools.edit.text_change import edit_bytes
from filegate.tools.edit.whole_content import WholeContent, new_bytes
from filegate.tools.edit.writing import Change, WriteJob, detect_encoding
from filegate.tools.outcome import Outcome, ToolEnv, ToolSpec
from filegate.tools.patch.hunks import apply_hunks
from filegate.tools.patch.plan import ChangeItem, FileChange, Plan, PlanEdit, PlanError, plan_from_changes
from filegate.tools.patch.run import Committed, Member, run_set
from filegate.tools.patch.v4a import parse_v4a
from filegate.tools.readguard.ledger import reader_of

# The answer lists each file in at most this share of the client's result budget; the rest
# are counted (every one of them was written, and `filegate history` lists them).
ANSWER_SHARE = 0.8


class ApplyPatchParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    patch: str = ""
    changes: list[ChangeItem] = []
    dry_run: Annotated[bool, Field(description="Preview: return the diff, write nothing.")] = False
    grant: GrantArg = ""


async def apply_patch(params: ApplyPatchParams, env: ToolEnv) -> Outcome:
    plan = _plan(params)
    members = await anyio.to_thread.run_sync(lambda: _members(plan, env))
    done = await run_set("ApplyPatch", members, env, verb="change", dry_run=params.dry_run)
    if isinstance(done, Outcome):
        return done
    return _answer(done, plan, env)


def _plan(params: ApplyPatchParams) -> Plan:
    if bool(params.patch) == bool(params.changes):
        raise PlanError(
            "Give either `patch` (the `*** Begin Patch` envelope) or `changes` (a list of file "
            "changes): one of them, not both."
        )
    if params.patch:
        return parse_v4a(params.patch)
    return plan_from_changes(params.changes)


# --- the gate and the members ---------------------------------------------------------------


def _members(plan: Plan, env: ToolEnv) -> list[Member]:
    """Every path gated (the set refused whole, naming the first that may not be in it), then
    one member per file change (blocking: the gate looks at the files)."""
    gated: list[tuple[FileChange, GatedPath, GatedPath | None]] = []
    seen: dict[Path, str] = {}
    for change in plan.changes:
        role: Role = change.kind
        source = _gate(env, change.path, role, seen)
        target = None if change.move_to is None else _gate(env, change.move_to, "target", seen)
        gated.append((change, source, target))
    return [_member(change, g, t, env) for change, g, t in gated]


def _gate(env: ToolEnv, raw: str, role: Role, seen: dict[Path, str]) -> GatedPath:
    gated = gate_path(env.workspace, raw, role)
    real = gated.rp.real
    if real in seen:
        raise PathError(
            f"`{seen[real]}` and `{gated.rp.shown}` name the same file: give each file once in a "
            "set. Nothing was written.",
            "File named twice",
        )
    seen[real] = gated.rp.shown
    return gated


def _member(change: FileChange, g: GatedPath, target: GatedPath | None, env: ToolEnv) -> Member:
    rp = g.rp
    if change.kind == "edit":
        return Member("modified", _edit_job(rp, change.edits, env), g.asked)
    if change.kind == "delete":
        job = _job(rp, lambda data: Change(b"", detect_encoding(data or b""), None, remove=True), "delete")
        return Member("deleted", job, g.asked)
    if change.kind == "write":
        assert change.content is not None
        whole = WholeContent(change.path, change.content)
        job = _job(rp, lambda data: new_bytes(whole, data, rp, env), "overwrite", must_exist=False)
        return Member("overwritten" if g.exists else "added", job, g.asked)
    assert target is not None
    carried: list[Content] = []
    moved = _job(target.rp, lambda _: _carried(carried, rp.real.name), "overwrite", must_exist=False)
    source_job = _edit_job(rp, change.edits, env) if change.edits else None
    asked_source = g.asked and not target.asked  # the question names the file the rule covers
    return Member(
        "moved", moved, g.asked or target.asked, rp, source_job, carried=carried, asked_source=asked_source
    )


def _carried(carried: list[Content], name: str) -> Change[None]:
    """A move's content at its new path: the source's bytes (after its edits), as they are; a
    file no tool shows as text is described by its size only (SPEC §4), wherever it lands."""
    data = carried[0]
    head = bytes(data[:SNIFF_BYTES])
    return Change(data, detect_encoding(head), None, binary=reader_of(name, head) != "ReadFile")


def _job(
    rp: Any,
    transform: Callable[[bytes | None], Change[Any]],
    action: str,
    *,
    must_exist: bool = True,
    line_guard: bool = False,
) -> WriteJob[Any]:
    return WriteJob(
        tool="ApplyPatch",
        rp=rp,
        transform=transform,
        must_exist=must_exist,
        guarded=True,
        line_guard=line_guard,
        action=action,
    )


def _edit_job(rp: Any, planned: Sequence[PlanEdit], env: ToolEnv) -> WriteJob[Applied]:
    edits = [Edit(old=e.old, new=e.new, replace_all=e.replace_all, match=e.match) for e in planned]
    narrowed = any(e.anchors or e.at_end or not e.old for e in planned)

    def transform(data: bytes | None) -> Change[Applied]:
        data = data or b""
        if narrowed and document_kind(rp.real.name, data[:SNIFF_BYTES]) == "notebook":
            raise EditFailed(
                f"`{rp.shown}` is a notebook: its cells are edited with `changes` edits "
                "(old/new text from a cell), not with `@@` hunks. Nothing was written.",
                brief="Notebook hunk",
            )
        return edit_bytes(rp, data, edits, env, apply=partial(apply_hunks, planned), tool="ApplyPatch")

    return _job(rp, transform, "edit", line_guard=True)


# --- the answer ------------------------------------------------------------------------------


def _answer(done: Committed, plan: Plan, env: ToolEnv) -> Outcome:
    """Each file on its line (what happened, what the ladder tolerated, what was kept), then
    the summary and the write id, within the client's budget."""
    lines = [_line(m, change, env) for m, change in zip(done.members, plan.changes, strict=True)]
    room = int(env.result_budget * ANSWER_SHARE)
    shown: list[str] = []
    for line in lines:
        if sum(len(s) + 1 for s in shown) + len(line) > room:
            more = plural(len(lines) - len(shown), "more file")
            shown.append(f"… and {more}, written too (`filegate history` lists them).")
            break
        shown.append(line)
    written = sum(1 for m in done.members if not m.same or m.source is not None)
    message = f"Applied {plural(written, 'file change')} as one write."
    if not done.write_id:
        message += " Every file already held its content: nothing was written."
    # The write id on a line of its own after the summary, as every write's (render.py).
    return Outcome(output="\n".join(shown), message=message, write_id=done.write_id)


def _line(m: Member, change: FileChange, env: ToolEnv) -> str:
    p = m.prepared
    assert p is not None
    shown = escape_log(p.request.shown)
    notes = " ".join(p.request.notes)
    if m.label == "moved" and m.source is not None:
        source = env.workspace.display(m.source.real) if m.source.inside else m.source.shown
        line = f"- moved `{escape_log(source)}` → `{shown}`"
        if m.source_prepared is not None:
            line += ": " + _edited(m.source_prepared.change.facts, len(change.edits), m.source_prepared.diff)
            notes = " ".join(m.source_prepared.request.notes)
        if p.current.data is not None:
            line += f" (it replaced the existing `{shown}`)"
        return f"{line}. {notes}".rstrip() if notes else line + "."
    if m.label == "deleted":
        return f"- deleted `{shown}`."
    if m.same:
        return f"- `{shown}` already held this content: not written."
    if m.label == "modified":
        line = f"- modified `{shown}`: {_edited(p.change.facts, len(change.edits), p.diff)}"
    elif p.request.binary:
        line = f"- {m.label} `{shown}`: binary file, {p.request.old_size} → {p.request.new_size} bytes"
    else:
        size = plural(len(p.change.new), "byte")
        line = f"- {m.label} `{shown}`: {size}, lines +{p.diff.added} -{p.diff.removed}"
    return f"{line}. {notes}".rstrip() if notes else line + "."


def _edited(applied: Applied, edits: int, diff: Any) -> str:
    return (
        f"{plural(edits, 'edit')}, {plural(applied.replacements, 'replacement')}, "
        f"lines +{diff.added} -{diff.removed}"
    )


SPEC = ToolSpec(
    name="ApplyPatch",
    title="Apply a patch (several files)",
    description=load_description("apply_patch"),
    params=ApplyPatchParams,
    handler=apply_patch,
    read_only=False,
)
