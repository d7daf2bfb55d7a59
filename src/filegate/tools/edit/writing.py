# size: one job, the route of every write in SPEC §6's order (guard, load, transform, ask, keep, write, log)
"""The route of every write (SPEC §4, §6): load, transform, ask, write atomically, log.

WriteFile and StrReplaceFile each give a pure transformation (the file's bytes → the bytes to
write, or a refusal); :func:`run_write` does the rest, in this order:

- an ordinary file: under the file's lock, load it and transform it in a worker thread; if no
  question is needed (auto, approved for the session, a client that cannot be asked), decide
  and write under the same lock. Otherwise the lock is given back *before* the question (no
  call ever waits on a question another call asked), and taken again for the write, whose
  stale check (size, mtime, content) refuses a file that changed while the user looked.
- a sensitive file (SPEC §2.6): nothing about its content is said before the user approved a
  write to it. So it is asked about first, with the change as the model asked for it and no
  diff; only then loaded and transformed, and a transformation that fails says only that it
  did not apply. Its success messages carry no size or count either.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

import anyio

from filegate.errors import Busy, Refusal, WriteError
from filegate.fsio.atomic import remove_file, replace_file
from filegate.fsio.codec import UTF8, FileCodec, bom_codec
from filegate.fsio.loads import in_thread, take, ticket_held
from filegate.fsio.locks import PATH_LOCKS
from filegate.fsio.safeopen import open_regular, stat_target
from filegate.fsio.snapshot import Snapshot, read_all
from filegate.fsio.spliced import Content, Spliced, content_hash
from filegate.media.bounds import Ticket
from filegate.policy.budget import ERROR_CHARS
from filegate.policy.escape import escape, escape_record
from filegate.policy.filetype import SNIFF_BYTES
from filegate.policy.workspace import ResolvedPath
from filegate.tools.edit.diffing import Diff, binary_diff, change_summary, plural, unified_diff
from filegate.tools.outcome import Decision, Outcome, Route, ToolEnv, WriteRequest
from filegate.tools.readguard.changed_lines import settle, since_read
from filegate.tools.readguard.ledger import (
    INDEX_MAX_BYTES,
    Identity,
    ReadLedger,
    header_of,
    identity_of,
    reader_of,
    refusal,
)

# An edit holds the old and the new bytes at once (plus the diff's slices); this bounds it.
MAX_FILE_BYTES = 128 << 20

# Every write is logged here (SPEC §6), whatever --log-level says: it is the audit trail.
audit = logging.getLogger("filegate.writes")
audit.setLevel(logging.INFO)

T = TypeVar("T")

# How a file's text is stored (fsio/codec.py decides it): the codec, its BOM, where it came from.
Encoding = FileCodec


def detect_encoding(data: bytes) -> Encoding:
    """The codec a BOM names, else UTF-8 (what a write needs when nothing else is known)."""
    return bom_codec(data) or UTF8


@dataclass(frozen=True, slots=True)
class Current:
    """The target as it is now: its bytes (None when it does not exist) and its snapshot."""

    data: bytes | None
    snapshot: Snapshot


def resolve_for_write(env: ToolEnv, raw: str, action: Literal["write", "edit"]) -> ResolvedPath:
    """The path rules for a write; the path as shown in every later message escaped (SPEC §2.9:
    a name cannot forge a line of a result, a question or the log)."""
    return env.workspace.resolve_for_write(raw, action)  # rp.shown is escaped once, by the resolver


def load_current(rp: ResolvedPath, *, must_exist: bool, ticket: Ticket | None = None) -> Current:
    """Read the whole target (blocking: call in a thread). PathError/WriteError on failure.
    With ``ticket``, room for its bytes is taken there first (the process's load budget)."""
    if stat_target(rp) is None and not must_exist:
        return Current(None, Snapshot.absent())
    fd = open_regular(rp)  # "does not exist" / "is not a file" / no symlink swap
    try:
        size = os.fstat(fd).st_size
        if size <= MAX_FILE_BYTES:  # a larger one is refused by read_all without a read
            take(ticket, size)
        data, snap = read_all(fd, MAX_FILE_BYTES, rp.shown)
    finally:
        os.close(fd)
    return Current(data, snap)


def line_counts(
    old: bytes, new: Content, encoding: Encoding, span: tuple[int, int, int] | None
) -> tuple[int, int]:
    """(lines in ``old``, lines in ``new``). With the change's span, ``new``'s count is
    ``old``'s adjusted by the changed part: one pass over the file instead of two."""
    nl = encoding.encode("\n")
    if span is None or len(nl) != 1:
        return count_lines(old, encoding), count_lines(new, encoding)
    start, old_end, new_end = span
    old_breaks = old.count(nl)
    new_breaks = old_breaks - old.count(nl, start, old_end) + new.count(nl, start, new_end)
    return _lines(old_breaks, old, nl), _lines(new_breaks, new, nl)


def _lines(breaks: int, data: Content, nl: bytes) -> int:
    return 0 if not data else breaks + (0 if data.endswith(nl) else 1)


def count_lines(data: Content, encoding: Encoding) -> int:
    if not data:
        return 0
    nl = encoding.encode("\n")
    if isinstance(data, Spliced) and len(nl) > 1:  # a Spliced counts single bytes only
        data = bytes(data)
    return data.count(nl) + (0 if data.endswith(nl) else 1)


@dataclass(frozen=True, slots=True)
class Change(Generic[T]):
    """A transformation's result: the bytes to write, and what the tool reports about them."""

    new: Content
    encoding: Encoding
    facts: T
    notes: tuple[str, ...] = ()  # lines for the user's question (line endings adapted, …)
    # (start, end in the old bytes, end in ``new``) when the transformation knows where it
    # changed the file: before start and after the ends both are the same, so the diff looks
    # only in between. None: the diff compares the whole of both.
    span: tuple[int, int, int] | None = None
    # Each edit's own matched span (start, end) in the old bytes, when known: a change since
    # the read is judged against these (SPEC §8.3), else against ``span``.
    spans: tuple[tuple[int, int], ...] | None = None
    mode: int | None = None  # permission bits to set (an undo); None: the file's own are kept
    remove: bool = False  # remove the file instead (an undone creation); ``new`` is then b""
    # ``new`` is not the model's and no tool would show it (an undo's binary pre-image): the
    # question, preview and result give its sizes only, as for a binary file being replaced.
    binary: bool = False
    # The texts a diff compares instead of the bytes, as the model read the file: a notebook's
    # cell view before and after (SPEC §8.6: never its raw JSON). UTF-8, a line break per line.
    view: tuple[bytes, bytes] | None = None


@dataclass(frozen=True, slots=True)
class WriteJob(Generic[T]):
    """One write as a tool describes it to :func:`run_write`."""

    tool: str
    rp: ResolvedPath
    # The file's bytes (None: it does not exist) → the change; pure, runs in a worker thread,
    # raises a Refusal (EditFailed, WriteError, PathError) to refuse.
    transform: Callable[[bytes | None], Change[T]]
    # The change as the model asked for it, escaped: what a question about a sensitive file
    # shows instead of a diff (a set's member has none: the set's question is patch/run.py's).
    requested: str = ""
    requested_unsafe: bool = False
    # The arguments, canonically: what the approval of a sensitive file is bound to.
    arguments: dict[str, object] = field(default_factory=dict)
    # The tool's result for a write that happened (a set's member has none of its own).
    done: Callable[[Written[T]], Outcome] = lambda _: Outcome()
    must_exist: bool = False
    create_dirs: bool = False
    notes: tuple[str, ...] = ()  # lines for the question known before loading
    # When the change leaves the file as it was: the result, without a question (not for
    # a sensitive file, whose equality is not told). None: write anyway.
    unchanged: Callable[[int], Outcome] | None = None
    # The change replaces what the model must have seen (an edit, an overwrite): an existing
    # file must have been read since it last changed (tools/readguard/ledger.py).
    guarded: bool = False
    # A file changed in place since its read may still be changed away from the lines that
    # changed (SPEC §8.3: StrReplaceFile; an overwrite needs a fresh read).
    line_guard: bool = False
    # A preview (dry_run): the diff and counts a question would show; nothing written or asked.
    dry_run: bool = False
    # What the tool's own result would count, said in a preview ("Would apply 2 edit(s) ...").
    would: Callable[[T], str] | None = None
    # The verb a read guard's refusal uses ("edit", "delete"); "" for the tool's own.
    action: str = ""


@dataclass(frozen=True, slots=True)
class Written(Generic[T]):
    size: int
    created: bool
    diff: Diff | None  # None for a sensitive file: nothing about it is told
    route: Route
    facts: T
    sensitive: bool = False
    write_id: str = ""  # its id in the write history ("" with --history off)
    notice: str = ""  # what the result adds (the lines a formatter changed, left alone)


@dataclass(slots=True)
class Prepared(Generic[T]):
    current: Current
    change: Change[T]
    diff: Diff
    request: WriteRequest
    extra: list[str] = field(default_factory=list)
    # The model knows the file's content before the change (it read it, or there was none),
    # so it knows it after: the written file then counts as read.
    known: bool = False
    notice: str = ""


async def run_write(job: WriteJob[T], env: ToolEnv) -> Outcome:
    """The whole route of a write, to the tool's result (``job.done``); a refusal is logged and
    raised on, for the tool boundary (:func:`filegate.tools.outcome.answer`) to answer."""
    try:
        if job.dry_run:
            return await _preview(job, env)
        written = await (_write_sensitive(job, env) if job.rp.sensitive else _write_ordinary(job, env))
        if isinstance(written, Outcome):
            return written
        outcome = job.done(written)
        if written.notice:
            outcome.message += " " + written.notice
        # SPEC §8.4: every write's result ends with its id (on its own line, SPEC §9)
        outcome.write_id = written.write_id
        return outcome
    except Refusal as exc:
        _log_failure(job, env, exc.message)
        raise
    except UnicodeEncodeError as exc:
        return Outcome.error(
            f"The new text holds a character that cannot be stored as text ({exc.reason} at "
            f"position {exc.start}). Nothing was written."
        )


async def _write_ordinary(job: WriteJob[T], env: ToolEnv) -> Written[T] | Outcome:
    rp = job.rp
    async with ticket_held() as ticket:  # the old content's room in the process's load budget
        async with PATH_LOCKS.hold(rp.real):
            # Loading, transforming and diffing a big file take a while: off the loop.
            prepared = await in_thread(lambda: prepare(job, env, ticket), env.work, ticket)
            if isinstance(prepared, Outcome):
                return prepared
            decision = env.approver.settle(prepared.request)
            if decision is not None:
                return await _finish(job, env, prepared, decision)
        # A question: it shows the line counts and binds the answer to both contents' hashes,
        # which cost a pass over each (so only a question pays for them).
        request = await in_thread(lambda: described(prepared), env.work, ticket)
    # The room is given back before the question: an answer may take minutes, and one open
    # question must not stall every other call's load (at most the clients' open questions
    # hold their files uncharged; nothing is loaded again for the write).
    # No lock is held while the question is open (SPEC §6); the stale check guards the write.
    decision = await env.approver.ask(request)
    async with PATH_LOCKS.hold(rp.real):
        return await _finish(job, env, prepared, decision)


PREVIEW = "Preview (dry_run): nothing was written and nothing was asked."


async def _preview(job: WriteJob[T], env: ToolEnv) -> Outcome:
    """dry_run: the diff and the counts the approval question would show, and nothing else
    happens. A sensitive file is not even opened: the preview says what its question would,
    the change as the model asked for it, and nothing about the file (SPEC §2.6)."""
    rp = job.rp
    if rp.sensitive:
        return Outcome(
            output=job.requested,
            message=f"{PREVIEW} `{rp.shown}` is sensitive, so nothing about its content, size or "
            "lines is shown before a write to it is approved; above is the change as requested.",
        )
    async with ticket_held() as ticket, PATH_LOCKS.hold(rp.real):
        prepared = await in_thread(lambda: prepare(job, env, ticket), env.work, ticket)
        if isinstance(prepared, Outcome):  # the file already has this content
            same = f"`{rp.shown}` already has this content: the write would change nothing."
            return Outcome(message=f"{PREVIEW} {same}")
        request = await in_thread(lambda: described(prepared), env.work, ticket)
    action = "create" if request.created else "change"
    parts = [PREVIEW, f"{job.tool} would {action} `{request.shown}`.", change_summary(request)]
    if job.would is not None:
        parts.append(job.would(prepared.change.facts))
    parts += request.notes
    return Outcome(output=request.diff, message=" ".join(parts))


def prepare(job: WriteJob[T], env: ToolEnv, ticket: Ticket) -> Prepared[T] | Outcome:
    """Load, transform and diff (blocking: runs in a worker thread). The request it gives is
    enough to settle the write without a question; :func:`described` completes it for one.
    ApplyPatch prepares each file of its set with it (tools/apply_patch.py)."""
    rp = job.rp
    if job.guarded and env.reads is not None:  # before the load: a 10 GiB file is not read for it
        st = stat_target(rp)
        if st is not None and stat.S_ISREG(st.st_mode):  # not a file: load_current says so
            reader = reader_of(rp.real.name, header_of(rp))
            identity = identity_of(st)
            lines_kept = job.line_guard and env.reads.index_since(rp.real, identity) is not None
            if reader is not None and not lines_kept:
                _guard(job, env.reads, identity, reader)
    current = load_current(rp, must_exist=job.must_exist, ticket=ticket)
    env.work.arm()  # the call's deadline runs from here: it holds the file now
    reader = None if current.data is None else reader_of(rp.real.name, current.data[:SNIFF_BYTES])
    s = current.snapshot
    identity = (s.dev, s.ino, s.size, s.mtime_ns, s.ctime_ns)
    changed = since_read(env.reads, rp.real, identity, current.data) if job.line_guard else None
    known = (
        current.data is None
        or changed is not None
        or (reader is not None and _guard(job, env.reads, identity, reader))
    )
    notice = ""
    if changed is None or env.reads is None or current.data is None:
        change = job.transform(current.data)
    else:  # SPEC §8.3: a change in place since the read, away from the edit, lets it through
        codec = env.codec_of(current.data, rp.real).codec  # the changed lines shown as ReadFile would
        budget = min(env.text_budget, ERROR_CHARS)  # SPEC §9: an error fits, its lines included
        args = (rp.real, identity, rp.shown, current.data, changed, budget, codec, job.transform)
        change, notice = settle(env.reads, *args)
    if job.unchanged is not None and change.new == current.data:  # a whole file compared only if needed
        return job.unchanged(len(change.new))
    old = current.data or b""
    shown = _shown(rp, env)
    binary = (current.data is not None and reader != "ReadFile") or change.binary
    # The line counts of the result only; the text a question shows is made by described.
    if binary:
        diff = binary_diff(len(old), len(change.new))
    elif change.view is not None:
        diff = unified_diff(shown, *change.view, "utf-8", show=False)
    else:
        diff = unified_diff(shown, old, change.new, change.encoding.codec, span=change.span, show=False)
    request = WriteRequest(
        tool=job.tool,
        shown=shown,
        real=rp.real,
        inside=rp.inside,
        sensitive=False,
        old_hash="",  # filled in by described, for a question
        new_hash="",
        old_size=len(old),
        new_size=len(change.new),
        old_lines=0,
        new_lines=0,
        diff="",  # filled in by described, for a question
        created=current.data is None,
        notes=(*job.notes, *change.notes, *((notice,) if notice else ())),
        binary=binary,
        codec="" if binary else change.encoding.named(),
    )
    return Prepared(current, change, diff, request, known=known, notice=notice)


def _guard(job: WriteJob[T], reads: ReadLedger | None, identity: Identity, reader: str = "ReadFile") -> bool:
    """Read before you change it: refuse a guarded change of an existing file this session has
    not read as it is now (WriteError). Whether the model has seen the file as it is."""
    if reads is None:
        return False
    verdict = reads.verdict(job.rp.real, identity)
    if job.guarded and verdict != "read":
        action = job.action or ("edit" if job.tool == "StrReplaceFile" else "overwrite")
        brief = "File changed since read" if verdict == "changed" else "File not read"
        if verdict == "changed":  # this refusal tells the change: no notice repeats it (§8.3)
            reads.told(job.rp.real, identity)
        raise WriteError(refusal(verdict, job.rp.shown, reads.scope, action, reader), brief)
    return verdict == "read"


def described(prepared: Prepared[T]) -> WriteRequest:
    """The request as a question shows it and binds its answer to (blocking: a thread): the
    diff's text, the line counts and both hashes each cost a pass, so only a question pays."""
    old = prepared.current.data or b""
    change = prepared.change
    new, encoding = change.new, change.encoding
    if prepared.request.binary:  # its bytes never reach a question: sizes only
        diff, (old_lines, new_lines) = prepared.diff, (0, 0)
    elif change.view is not None:  # the lines the model read, numbered as it read them
        diff = unified_diff(prepared.request.shown, *change.view, "utf-8")
        old_lines, new_lines = change.view[0].count(b"\n"), change.view[1].count(b"\n")
    else:
        diff = unified_diff(prepared.request.shown, old, new, encoding.codec, span=change.span)
        old_lines, new_lines = line_counts(old, new, encoding, change.span)
    return dataclasses.replace(
        prepared.request,
        old_hash=prepared.current.snapshot.digest(),
        new_hash=content_hash(new, "sha256"),
        old_lines=old_lines,
        new_lines=new_lines,
        diff=diff.text,
        unsafe=diff.unsafe,
    )


async def _finish(
    job: WriteJob[T], env: ToolEnv, prepared: Prepared[T], decision: Decision
) -> Written[T] | Outcome:
    if not decision.approved:
        _log_refusal(job, env, decision)
        return Outcome.error(decision.message)
    known = env.reads if prepared.known else None
    size, write_id = await _replace(job, env, prepared.change, prepared.current.snapshot, decision, known)
    if known is None and env.reads is not None:  # not a read, but a file this session wrote
        env.reads.wrote(job.rp.real)
    created, facts = prepared.current.data is None, prepared.change.facts
    return Written(
        size, created, prepared.diff, decision.route, facts, write_id=write_id, notice=prepared.notice
    )


async def _write_sensitive(job: WriteJob[T], env: ToolEnv) -> Written[T] | Outcome:
    rp = job.rp
    request = WriteRequest(
        tool=job.tool,
        shown=_shown(rp, env),
        real=rp.real,
        inside=rp.inside,
        sensitive=True,
        guarded_as=rp.guarded_as,
        old_hash="",
        new_hash=_digest(job.tool, job.arguments),
        old_size=0,
        new_size=0,
        old_lines=0,
        new_lines=0,
        diff=job.requested,
        notes=job.notes,
        unsafe=job.requested_unsafe,
    )
    decision = env.approver.settle(request) or await env.approver.ask(request)
    if not decision.approved:
        _log_refusal(job, env, decision)
        return Outcome.error(decision.message)
    async with ticket_held() as ticket, PATH_LOCKS.hold(rp.real):
        try:
            current, change = await in_thread(lambda: _load_and_transform(job, env, ticket), env.work, ticket)
        except Busy:  # the server's load budget, not the file: it may be tried again
            raise
        except (Refusal, UnicodeEncodeError):
            # Why it failed (not found, found twice, too large, not text…) is a fact about the
            # content: the model hears only that it did not apply.
            _log_failure(job, env, "the change did not apply")
            return Outcome.error(
                f"The change did not apply to `{rp.shown}`, so nothing was written. "
                "The file is sensitive, so filegate does not say why."
            )
        size, write_id = await _replace(job, env, change, current.snapshot, decision)
    created = current.data is None
    return Written(size, created, None, decision.route, change.facts, sensitive=True, write_id=write_id)


def _load_and_transform(job: WriteJob[T], env: ToolEnv, ticket: Ticket) -> tuple[Current, Change[T]]:
    current = load_current(job.rp, must_exist=job.must_exist, ticket=ticket)
    env.work.arm()  # the call's deadline runs from here: it holds the file now
    return current, job.transform(current.data)


def _digest(tool: str, arguments: dict[str, object]) -> str:
    """What an approval of a sensitive file's write is bound to: the tool and its arguments."""
    canonical = json.dumps([tool, arguments], sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


async def _replace(
    job: WriteJob[T],
    env: ToolEnv,
    change: Change[T],
    expect: Snapshot,
    decision: Decision,
    reads: ReadLedger | None = None,
) -> tuple[int, str]:
    """Write ``change`` over ``expect``, kept in the history before the rename; with ``reads``,
    the written file counts as read there. Returns the bytes written and the write's id."""
    rp, new = job.rp, change.new

    def write() -> tuple[int, str]:
        # SPEC §8.4: the pre-image and the record are durable before the rename. They are kept
        # while the temp file is written (a speed device, docs/ARCHITECTURE.md), and the rename
        # waits for them.
        old = expect.content if expect.exists and not rp.secret else None
        kept = None if change.remove else new
        history = env.history
        if history is None:
            size, write_id = _renamed(job, change, expect, None), ""
        else:
            with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="filegate-history") as pool:
                args = (job.tool, rp, env.client, decision.route, old, kept, expect)
                keeping = pool.submit(history.begin, *args)
                done: list[bool] = []  # the rename happened: "done", even if its fsync then failed

                try:
                    size = _renamed(job, change, expect, keeping.result, lambda: done.append(True))
                finally:  # the outcome line: "failed" when the rename did not happen
                    # Waits for the record; "" (nothing to finish) when it failed, which then
                    # failed the write too: no rename without its record.
                    write_id = "" if keeping.exception() is not None else keeping.result()
                    history.finish(write_id, ok=bool(done))
        if reads is not None and change.remove:  # removed by this session: no change notice names it
            reads.wrote(rp.real)
        elif reads is not None:  # under the file's lock: no write of ours comes between
            # Gone or swapped already (a race): then it simply does not count as read.
            with contextlib.suppress(OSError):
                small = len(new) <= INDEX_MAX_BYTES  # its line index (SPEC §8.3)
                identity = identity_of(os.lstat(rp.real))
                reads.saw(rp.real, identity, bytes(new) if small else None, written=True)
        return size, write_id

    # Not abandoned on cancel: a write that started finishes (or fails) before the lock goes.
    # A WriteError is logged by run_write.
    size, write_id = await anyio.to_thread.run_sync(write)
    audit.info(
        "%s wrote %s to %s (%s workspace, approval: %s); client: %s",
        job.tool,
        "a sensitive file" if rp.sensitive else plural(size, "byte"),
        escape(str(rp.real)),
        "inside" if rp.inside else "outside",
        decision.route,
        escape(env.client) or "-",
    )
    return size, write_id


def _renamed(
    job: WriteJob[T],
    change: Change[T],
    expect: Snapshot,
    before: Callable[[], object] | None,
    after: Callable[[], object] | None = None,
) -> int:
    """``change`` written over ``expect`` (or the file removed), ``before`` done first and
    ``after`` once the file holds it: the bytes written."""
    rp = job.rp
    if change.remove:
        if before is not None:
            before()
        return remove_file(rp.real, expect=expect, shown=rp.shown, removed=after)
    return replace_file(
        rp.real,
        change.new,
        expect=expect,
        shown=rp.shown,
        create_dirs=job.create_dirs,
        mode=change.mode,
        before_rename=before,
        after_rename=after,
    )


def _log_refusal(job: WriteJob[T], env: ToolEnv, decision: Decision) -> None:
    audit.info(
        "%s did not write %s (approval: %s); client: %s",
        job.tool,
        escape(str(job.rp.real)),
        decision.route,
        escape(env.client) or "-",
    )


def _log_failure(job: WriteJob[T], env: ToolEnv, error: str) -> None:
    audit.info(
        "%s failed to write %s; client: %s; error: %s",
        job.tool,
        escape(str(job.rp.real)),
        escape(env.client) or "-",
        escape_record(error),  # filegate's own sentence: its names escaped in it, its quotes kept
    )


def _shown(rp: ResolvedPath, env: ToolEnv) -> str:
    """The path as the user is shown it: workdir-relative inside, absolute outside."""
    return env.workspace.display(rp.real) if rp.inside else escape(str(rp.real))  # escaped once


def lines_sentence(diff: Diff) -> str:
    """The short diff stat at the end of a success message (none for a binary file)."""
    return "" if diff.binary else f" Lines: +{diff.added} -{diff.removed}."


SENSITIVE_DONE = " The file is sensitive, so its size and the change's line counts are not shown."
