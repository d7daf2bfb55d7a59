"""A set of files changed as one write (SPEC §10): ApplyPatch's route, and UndoWrite's for a set.

Each file is prepared exactly as a single write prepares it (tools/writing.py's ``prepare``:
its read guard, its codec and line endings, the ladder, the diff); then the set is asked about
once, or settled without a question when no file of it would be asked alone; then committed
all or nothing by fsio/changeset.py, under every file's lock, taken in one order (the real
paths sorted: two sets that share files never wait for each other in a circle). As with a
single write, no lock is held while the question is open: the commit's compare-and-swap
refuses a file that changed meanwhile.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import stat
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import anyio

from filegate.errors import Refusal, WriteError
from filegate.fsio.changeset import SetWrite, commit_set
from filegate.fsio.loads import in_thread, load_ticket
from filegate.fsio.locks import PATH_LOCKS
from filegate.fsio.safeopen import stat_target
from filegate.fsio.spliced import Content, content_hash
from filegate.media.bounds import Ticket
from filegate.policy.escape import escape, escape_log, escape_text, has_unsafe_text
from filegate.policy.workspace import ResolvedPath
from filegate.tools.edit.diffing import diff_header, fold, plural
from filegate.tools.edit.writing import Current, Prepared, WriteJob, described, load_current, prepare
from filegate.tools.outcome import Decision, Outcome, Route, ToolEnv, WriteRequest
from filegate.tools.readguard.ledger import INDEX_MAX_BYTES, identity_of

audit = logging.getLogger("filegate.writes")

# The question shows at most this many diff lines for the whole set (a single write's shows
# ~80, SPEC §6), each file at least FILE_DIFF_LINES of them; a cut file's block says so.
SET_DIFF_LINES = 240
FILE_DIFF_LINES = 8
# A deleted file is shown by its size and its first lines, at most this many.
DELETE_HEAD_LINES = 10
# The old contents a set holds at once, in all (each file's own bound is a write's).
MAX_SET_BYTES = 128 << 20

Label = Literal["added", "modified", "overwritten", "deleted", "moved", "restored", "removed"]


@dataclass(slots=True)
class Member:
    """One file of a set. ``job`` prepares the file as the set leaves it (a move: at its new
    path); a move's ``source`` is read first (through ``source_job`` when it carries edits),
    its bytes handed to ``job``'s transform through :attr:`carried`, and removed by the commit."""

    label: Label
    job: WriteJob[Any]
    asked: bool = False
    source: ResolvedPath | None = None
    source_job: WriteJob[Any] | None = None
    asked_source: bool = False  # a move asked about for its source's ask rule, not its target's
    # Filled in as the set is prepared.
    prepared: Prepared[Any] | None = None
    source_prepared: Prepared[Any] | None = None
    source_current: Current | None = None
    carried: list[Content] = field(default_factory=list)
    mode: int | None = None  # the file's permission bits as prepared (None: it does not exist)
    source_mode: int | None = None
    same: bool = False  # a whole content the file already holds: left out of the commit

    @property
    def rp(self) -> ResolvedPath:
        return self.job.rp

    @property
    def removes(self) -> bool:
        return self.prepared is not None and self.prepared.change.remove


@dataclass(frozen=True, slots=True)
class Committed:
    write_id: str
    route: Route
    members: list[Member]


async def run_set(
    tool: str,
    members: list[Member],
    env: ToolEnv,
    *,
    verb: str,
    dry_run: bool = False,
    notes: Sequence[str] = (),
) -> Committed | Outcome:
    """Prepare, ask once, commit: the set's write id, or the Outcome that ends the call (a
    preview, a refusal by the user). A Refusal from any file refuses the set. ``notes``: lines
    the question (and a preview) shows before the files (a rewind's files left as they are)."""
    history = env.history
    if history is None:
        raise WriteError(
            f"{tool} needs the write history (`--history off` turns it off): a set is restored "
            "from it after a failure or a crash. Nothing was written.",
            "History off",
        )
    async with _locked(members):
        tickets = [(load_ticket(), load_ticket()) for _ in members]  # a move's source has its own
        try:
            held = [ticket for pair in tickets for ticket in pair]
            # The set's room goes back when this thread ends, not before (fsio/loads.py).
            await in_thread(lambda: _prepare_all(members, env, tickets), env.work, *held)
            request = set_request(tool, members, verb, env, notes)
            if dry_run:
                request = await in_thread(lambda: described_set(request, members), env.work, *held)
                return _preview(tool, request, members)
            decision = env.approver.settle(request)
            if decision is not None:
                return await _commit(tool, members, env, decision)
            request = await in_thread(lambda: described_set(request, members), env.work, *held)
        finally:
            for pair in tickets:
                for ticket in pair:
                    ticket.close()
    decision = await env.approver.ask(request)  # no lock held while the user looks (SPEC §6)
    async with _locked(members):
        return await _commit(tool, members, env, decision)


@contextlib.asynccontextmanager
async def _locked(members: Sequence[Member]) -> AsyncIterator[None]:
    """Every file's lock, in the order of their real paths (deadlock-free between sets)."""
    paths = {m.rp.real for m in members} | {m.source.real for m in members if m.source is not None}
    async with contextlib.AsyncExitStack() as stack:
        for path in sorted(paths, key=str):
            await stack.enter_async_context(PATH_LOCKS.hold(path))
        yield


def _prepare_all(members: list[Member], env: ToolEnv, tickets: list[tuple[Ticket, Ticket]]) -> None:
    """Each file loaded, guarded, transformed and diffed as a single write (blocking)."""
    total = 0
    for member in members:
        for rp in (member.rp, member.source):
            st = None if rp is None else stat_target(rp)
            total += 0 if st is None else st.st_size
    if total > MAX_SET_BYTES:
        raise WriteError(
            f"The set's files hold {total} bytes; one set changes at most {MAX_SET_BYTES} bytes "
            "of files. Split it into several calls. Nothing was written.",
            "Set too large",
        )
    for member, (ticket, target_ticket) in zip(members, tickets, strict=True):
        if member.source is not None:
            member.source_mode = _mode(member.source)
            if member.source_job is not None:
                source = prepare(member.source_job, env, ticket)
                assert not isinstance(source, Outcome)  # edits: never "already so"
                member.source_prepared, member.source_current = source, source.current
                member.carried.append(source.change.new)
            else:
                member.source_current = load_current(member.source, must_exist=True, ticket=ticket)
                member.carried.append(member.source_current.data or b"")
        member.mode = _mode(member.rp)
        prepared = prepare(member.job, env, target_ticket)
        assert not isinstance(prepared, Outcome)  # a set's jobs never end early (no ``unchanged``)
        change = prepared.change
        member.same = (
            not change.remove and prepared.current.data is not None and change.new == prepared.current.data
        )
        member.prepared = prepared


def _mode(rp: ResolvedPath) -> int | None:
    st = stat_target(rp)
    return None if st is None else stat.S_IMODE(st.st_mode)


def _prepared(member: Member) -> Prepared[Any]:
    assert member.prepared is not None
    return member.prepared


# --- the question ----------------------------------------------------------------------------


def set_request(
    tool: str, members: list[Member], verb: str, env: ToolEnv, notes: Sequence[str] = ()
) -> WriteRequest:
    """The set as the approver settles it: asked when any file would be asked alone (outside
    the workspace, an ``ask`` rule). Its diff and hashes come with :func:`described_set`."""
    sources = [m.source for m in members if m.source is not None]
    # The file a refusal without a question names (and the question is keyed on): the first
    # outside the workspace, when one is.
    outside = [rp for m in members for rp in (m.rp, m.source) if rp is not None and not rp.inside]
    named = outside[0] if outside else members[0].rp
    asked = next((m for m in members if m.asked), None)
    counts, codecs = _counts(members), _codecs(members, env)
    return WriteRequest(
        tool=tool,
        shown=_shown(named, env),
        real=named.real,
        inside=not outside,
        sensitive=False,
        old_hash="",
        new_hash="",
        old_size=0,
        new_size=0,
        old_lines=0,
        new_lines=0,
        diff="",
        notes=(*notes, *(_listed(m, env) for m in members)),
        title=f"{tool} wants to {verb} {plural(len(members), 'file')} as one write ({counts}){codecs}.",
        paths=tuple(dict.fromkeys([*(m.rp.real for m in members), *(s.real for s in sources)])),
        always_ask=asked is not None,
        guarded_as=f"ASKED about always: `{_shown(_asked_path(asked), env)}` is under an `ask` rule"
        if asked
        else "",
    )


def _asked_path(m: Member) -> ResolvedPath:
    """The file of ``m`` an ``ask`` rule covers."""
    return m.source if m.asked_source and m.source is not None else m.rp


def _codecs(members: list[Member], env: ToolEnv) -> str:
    """SPEC §8.1: the files written in a codec that is not UTF-8, named in the first line."""
    named = [
        f"`{escape_log(_shown(m.rp, env))}` encoded in {escape_log(p.request.codec)}"
        for m in members
        if m.prepared is not None and (p := m.prepared).request.codec
    ]
    return "; " + ", ".join(named) if named else ""


def _counts(members: list[Member]) -> str:
    seen: dict[str, int] = {}
    for m in members:
        seen[m.label] = seen.get(m.label, 0) + 1
    return ", ".join(f"{n} {label}" for label, n in seen.items())


def _shown(rp: ResolvedPath, env: ToolEnv) -> str:
    return env.workspace.display(rp.real) if rp.inside else escape(str(rp.real))


def _listed(m: Member, env: ToolEnv) -> str:
    """One file as the question's list shows it."""
    p = _prepared(m)
    shown = escape_log(_shown(m.rp, env))
    if m.label == "moved" and m.source is not None:
        line = f"- moved `{escape_log(_shown(m.source, env))}` → `{shown}`"
        if m.source_prepared is not None:
            d = m.source_prepared.diff
            line += f", edited (+{d.added} -{d.removed} lines)"
        if p.current.data is not None:
            line += f", over the existing `{shown}`"
        return line
    if m.label in ("deleted", "removed"):
        return f"- {m.label} `{shown}` ({plural(p.request.old_size, 'byte')})"
    if m.same:
        return f"- unchanged `{shown}` (it already holds this content)"
    if p.request.binary:
        return f"- {m.label} `{shown}` (binary file, {p.request.old_size} → {p.request.new_size} bytes)"
    if p.request.created:
        folder = "" if os.path.lexists(m.rp.real.parent) else ", in a folder it makes"
        return f"- {m.label} `{shown}` ({plural(p.request.new_size, 'byte')}, +{p.diff.added} lines{folder})"
    return f"- {m.label} `{shown}` (+{p.diff.added} -{p.diff.removed} lines)"


def described_set(request: WriteRequest, members: list[Member]) -> WriteRequest:
    """The request with every file's diff, cut to the set's budget, and the hashes its answer
    is bound to (blocking: each costs a pass over the files, so only a question pays)."""
    blocks = [_block(m) for m in members]
    share = max(FILE_DIFF_LINES, SET_DIFF_LINES // max(1, len(members)))
    text = "\n".join(_cut(rows, share) for rows, _ in blocks)
    # Any file's shown lines holding characters shown escaped: the question says so first, as
    # a single write's does (SPEC §2.9).
    unsafe = any(flagged for _, flagged in blocks)
    old, new = hashlib.sha256(), hashlib.sha256()
    for m in members:
        p = _prepared(m)
        paths = [m.rp.real] + ([m.source.real] if m.source is not None else [])
        for path in paths:
            old.update(os.fsencode(str(path)) + b"\0")
            new.update(os.fsencode(str(path)) + b"\0")
        old.update(p.current.snapshot.digest().encode() + b"\0")
        if m.source_current is not None:
            old.update(m.source_current.snapshot.digest().encode() + b"\0")
        new.update(b"-" if p.change.remove else content_hash(p.change.new, "sha256").encode())
    return replace(request, diff=text, old_hash=old.hexdigest(), new_hash=new.hexdigest(), unsafe=unsafe)


def _block(m: Member) -> tuple[list[str], bool]:
    """A file's part of the question: its diff, or what stands for one; and whether its shown
    lines hold characters shown escaped."""
    p = _prepared(m)
    if m.label == "moved" and m.source is not None:
        rows = [f"moves `{escape_log(m.source.shown)}` → `{escape_log(m.rp.shown)}`"]
        unsafe = False
        if m.source_prepared is not None:
            source = described(m.source_prepared)
            rows += source.diff.split("\n")
            unsafe = source.unsafe
        if p.current.data is not None:
            rows.append(f"over the existing `{escape_log(m.rp.shown)}`, which it replaces:")
            replaced, replaced_unsafe = _diff_rows(p)
            rows += replaced
            unsafe = unsafe or replaced_unsafe
        return rows, unsafe
    if p.change.remove:
        return _deleted_rows(m.rp.shown, p)
    if m.same:
        return [f"`{escape_log(m.rp.shown)}` already holds this content: it is not written."], False
    return _diff_rows(p)


def _diff_rows(p: Prepared[Any]) -> tuple[list[str], bool]:
    if p.request.binary:
        return [*diff_header(p.request.shown), p.diff.text], False
    request = described(p)
    return request.diff.split("\n"), request.unsafe


def _deleted_rows(shown: str, p: Prepared[Any]) -> tuple[list[str], bool]:
    """A delete: the file's size and first lines (a binary file's size alone, SPEC §4)."""
    data = p.current.data or b""
    header = [f"--- a/{escape_log(shown)}", "+++ /dev/null"]
    if p.request.binary:
        return [*header, f"deletes a binary file of {plural(len(data), 'byte')} (not shown)"], False
    encoding = p.change.encoding  # a BOM is no part of the first line (nor an invisible character in it)
    lines = data[len(encoding.bom) :].decode(encoding.codec, "replace").split("\n")
    count = len(lines) - (1 if lines[-1] == "" else 0)
    rows = [*header, f"deletes {plural(len(data), 'byte')}, {plural(count, 'line')}; its first lines:"]
    head = [line.removesuffix("\r") for line in lines[: min(count, DELETE_HEAD_LINES)]]
    rows += [fold("-", escape_text(line)) for line in head]
    if count > DELETE_HEAD_LINES:
        rows.append(f"… {plural(count - DELETE_HEAD_LINES, 'more line')}")
    return rows, any(has_unsafe_text(line) for line in head)


def _cut(rows: list[str], share: int) -> str:
    if len(rows) <= share + 2:  # a diff's two header lines are free
        return "\n".join(rows)
    kept = rows[: share + 2]
    return "\n".join(
        [*kept, f"… {plural(len(rows) - len(kept), 'more line')} of this file's change not shown"]
    )


def _preview(tool: str, request: WriteRequest, members: list[Member]) -> Outcome:
    head = "Preview (dry_run): nothing was written and nothing was asked."
    title = request.title.replace(" wants to ", " would ", 1)
    return Outcome(output=request.diff, message="\n".join([f"{head} {title}", *request.notes]))


# --- the commit ------------------------------------------------------------------------------


async def _commit(tool: str, members: list[Member], env: ToolEnv, decision: Decision) -> Committed | Outcome:
    if not decision.approved:
        audit.info("%s did not write a set of %d files (approval: %s)", tool, len(members), decision.route)
        return Outcome.error(decision.message)
    history = env.history
    assert history is not None
    writes = [w for m in members for w in _writes(m)]
    if not writes:
        return Committed("", decision.route, members)

    def commit() -> str:
        write_id = commit_set(writes, history, tool, env.client, decision.route)
        _count_as_read(members, env)
        return write_id

    try:
        # Not abandoned on cancel: a commit that started finishes (or restores) under its locks.
        write_id = await anyio.to_thread.run_sync(commit)
    except Refusal as exc:
        audit.info("%s failed to write a set of %d files: %s", tool, len(members), escape(exc.message))
        raise
    for w in writes:
        what = "removed" if w.new is None else f"wrote {plural(len(w.new), 'byte')} to"
        audit.info(
            "%s %s %s (set %s; %s workspace, approval: %s); client: %s",
            tool,
            what,
            escape(str(w.rp.real)),
            write_id,
            "inside" if w.rp.inside else "outside",
            decision.route,
            escape(env.client) or "-",
        )
    return Committed(write_id, decision.route, members)


def _writes(m: Member) -> list[SetWrite]:
    p = _prepared(m)
    out = []
    if not m.same:  # a content the file holds already is not written (a move's source still goes)
        out.append(
            SetWrite(
                m.rp,
                p.current.snapshot,
                None if p.change.remove else p.change.new,
                mode=p.change.mode if p.change.mode is not None else _kept_mode(m),
                old_mode=m.mode,
                create_dirs=not os.path.lexists(m.rp.real.parent),
            )
        )
    if m.source is not None and m.source_current is not None:
        out.append(SetWrite(m.source, m.source_current.snapshot, None, old_mode=m.source_mode))
    return out


def _kept_mode(m: Member) -> int | None:
    """A moved file keeps its own permission bits (never setuid/setgid); others keep theirs."""
    if m.source is None or m.source_mode is None:
        return None
    return m.source_mode & ~(stat.S_ISUID | stat.S_ISGID)


def _count_as_read(members: list[Member], env: ToolEnv) -> None:
    """Each written file counts as read where the model knew what it replaced (as a single
    write's does), under the files' locks: no write of ours comes between."""
    reads = env.reads
    if reads is None:
        return
    for m in members:
        p = _prepared(m)
        # A file the set removed (deleted, or a move's source) changed through this session:
        # no change notice names it (the model asked for it).
        for gone in ([m.rp.real] if p.change.remove else []) + ([m.source.real] if m.source else []):
            reads.wrote(gone)
        if p.change.remove or m.same:
            continue
        known = p.known and (m.source is None or (m.source_prepared is not None and m.source_prepared.known))
        if not known:
            reads.wrote(m.rp.real)
            continue
        with contextlib.suppress(OSError):
            new = p.change.new
            small = len(new) <= INDEX_MAX_BYTES
            reads.saw(
                m.rp.real, identity_of(os.lstat(m.rp.real)), bytes(new) if small else None, written=True
            )
