"""A set of files written all or nothing (SPEC §10): the atomic write of fsio/atomic.py grown to
a set, with the history's records as its intent record.

The commit, under every file's lock (the caller holds them, in one order):

1. the history keeps every file's pre-image and appends one record per file, made durable
   together (:meth:`~filegate.fsio.history.WriteHistory.begin_set`): the intent record, naming
   the set, its owner process and each file's hashes before and after;
2. each file's temp file is written beside it and fsynced, and the file checked unchanged
   since the set was planned — :func:`~filegate.fsio.atomic.replace_file` for each, nested
   through its ``before_rename``, so every temp is durable before the first rename;
3. every file (the deleted ones too) is checked once more (compare-and-swap), then the files
   are renamed, each folder fsynced;
4. the deleted files (a moved file's old name among them) are removed, each checked again;
5. the outcome is appended, durable.

Any failure restores every file already renamed or removed (its bytes and mode, from the
pre-images held in memory) and removes folders the set made; the error names the file that
failed and why. A process killed mid-commit leaves records with no outcome: at the next start
(:func:`recover_sets`) a set whose files are each as before or as after is rolled back (or, when
every file is as after, forward: it is marked done); one whose files someone changed since is
left as it is and said in the log.

"All or nothing" is as seen after the call returns or after a restart; a reader during the
commit may see some files new and others old (SPEC §10).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import os
import socket
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from filegate.errors import PathError, Refusal, WriteError
from filegate.fsio import platform
from filegate.fsio.atomic import check_unchanged, remove_file, replace_file
from filegate.fsio.history import Entry, SetFile, WriteHistory
from filegate.fsio.locks import PATH_LOCKS
from filegate.fsio.pending import state_dir
from filegate.fsio.safeopen import open_regular
from filegate.fsio.snapshot import Snapshot, read_all
from filegate.fsio.spliced import Content
from filegate.policy.escape import escape
from filegate.policy.workspace import ResolvedPath

log = logging.getLogger("filegate.writes")

# A file the recovery reads to tell its state: at most this large (the writes' own bound).
RECOVER_MAX_BYTES = 128 << 20


@dataclass(frozen=True, slots=True)
class SetWrite:
    """One file of a set: its content after (None: removed) over the file as planned."""

    rp: ResolvedPath
    expect: Snapshot  # as planned; absent: the set creates it
    new: Content | None  # None: the set removes it
    mode: int | None = None  # the permission bits to give it (a moved file keeps its own)
    old_mode: int | None = None  # its permission bits as planned (restored on a failure)
    create_dirs: bool = False


@dataclass(slots=True)
class _Done:
    """What the commit changed so far, to restore on a failure."""

    renamed: list[tuple[SetWrite, os.stat_result | None]] = field(default_factory=list)
    removed: list[SetWrite] = field(default_factory=list)
    made_dirs: list[Path] = field(default_factory=list)


def commit_set(writes: Sequence[SetWrite], history: WriteHistory, tool: str, client: str, route: str) -> str:
    """Write ``writes`` all or nothing (blocking: call in a thread, holding every file's lock);
    the set's write id. WriteError names the file that failed and says what was restored."""
    files = [SetFile(w.rp, w.expect.content if w.expect.exists else None, w.new, w.expect) for w in writes]
    done = _Done(made_dirs=_missing_dirs(writes))
    # A set that makes folders is marked before the first is made (the mark names them);
    # otherwise the mark is made beside its records.
    early = _mark(done.made_dirs) if done.made_dirs else None

    def keep() -> tuple[Path | None, list[str]]:
        mark = early if done.made_dirs else _mark([], durable=False)
        try:
            ids = history.begin_set(tool, files, client, route)
            if not done.made_dirs:
                with contextlib.suppress(OSError):  # best effort, as the mark itself
                    _settle_mark(mark)
            return mark, ids
        except BaseException:
            _unmark(mark)
            raise

    # The mark and the records are kept while the temp files are written (as a single write
    # keeps its pre-image: docs/ARCHITECTURE.md, speed devices); the first rename waits for them.
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="filegate-history") as pool:
        keeping = pool.submit(keep)
        try:
            _write_all(writes, done, keeping.result)
        except WriteError as exc:
            failed = _restore(done)
            try:
                marker, ids = keeping.result()
            except WriteError:  # the history kept nothing: no file was renamed either
                raise _told(exc, done, failed) from None
            if not failed:  # else the mark stays: the next start tries the restore again
                history.finish_set(ids, ok=False)
                _unmark(marker)
            raise _told(exc, done, failed) from None
        except BaseException:
            with contextlib.suppress(BaseException):
                keeping.result()
            raise
    marker, ids = keeping.result()
    history.finish_set(ids, ok=True)
    _unmark(marker)
    return ids[0]


def sets_dir() -> Path:
    """Where a set being committed is marked ("host-pid-[life.]token", before its records are), so a
    start finds a set its killed process left without reading the whole history."""
    return state_dir() / "sets"


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _mark(made: list[Path], *, durable: bool = True) -> Path | None:
    """The set's mark: it names the folders the set will make (a rollback after a crash
    removes them, as records made after them could not say). ``durable``: its name fsynced in
    its folder now (else by :func:`_settle_mark`, after the records). None: no state
    directory to mark it in."""
    folder = sets_dir()
    mark = folder / f"{_owner().replace(':', '-')}-{platform.life_token()}"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_EXCL | platform.NOFOLLOW | platform.CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        try:
            if made:
                os.write(fd, b"\n".join(os.fsencode(str(p)) for p in made))
                os.fsync(fd)
        finally:
            os.close(fd)
        if durable:
            _settle_mark(mark)
    except OSError:  # made but not kept: it goes (the set is then not marked, as above)
        _unmark(mark)
        return None
    return mark


def _settle_mark(mark: Path | None) -> None:
    """The mark's name made durable in its folder. Done after the records' fsync for a set that
    makes no folder: on a journaling file system that fsync committed the mark already (the
    state directory is one file system), so this costs little; it still comes before any
    rename."""
    if mark is None or os.name == "nt":
        return
    dfd = os.open(mark.parent, os.O_RDONLY | platform.CLOEXEC)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def _unmark(mark: Path | None) -> None:
    if mark is not None:
        with contextlib.suppress(OSError):
            os.unlink(mark)


def _write_all(writes: Sequence[SetWrite], done: _Done, kept: Callable[[], object]) -> None:
    """Every temp written; ``kept`` waited for (the intent record); every file checked again;
    the renames; the removes."""
    replaced = [w for w in writes if w.new is not None]
    _write_from(0, replaced, writes, done, kept)
    for w in writes:
        if w.new is None:
            remove_file(w.rp.real, expect=w.expect, shown=w.rp.shown, removed=_noting(done.removed, w))


def _write_from(
    i: int, replaced: list[SetWrite], writes: Sequence[SetWrite], done: _Done, kept: Callable[[], object]
) -> None:
    """``replaced[i]``'s temp written, then (its ``before_rename``) the rest's, each nesting
    the next; the innermost checks every file once more and waits for the records, and the
    renames come back out. A module function, not a nested one: a closure that calls itself is
    a reference cycle, which kept a set's contents alive until the collector ran (a 50 MB
    edit's peak RSS +85 MiB on the next call)."""
    if i == len(replaced):
        for w in writes:  # every temp is durable: each file once more, then the renames
            check_unchanged(w.rp.real, w.expect, w.rp.shown)
        # Then the records (keeping a pre-image may link the file's inode, which moves its
        # ctime: checked after that, a file would be read whole to be found unchanged).
        kept()
        return
    w = replaced[i]
    assert w.new is not None
    replace_file(
        w.rp.real,
        w.new,
        expect=w.expect,
        shown=w.rp.shown,
        create_dirs=w.create_dirs,
        mode=w.mode,
        before_rename=lambda: _write_from(i + 1, replaced, writes, done, kept),
        after_rename=lambda: done.renamed.append((w, _lstat(w.rp.real))),
    )


def _noting(into: list[SetWrite], w: SetWrite) -> Callable[[], None]:
    return lambda: into.append(w)


def _lstat(real: Path) -> os.stat_result | None:
    try:
        return os.lstat(real)
    except OSError:
        return None


def _missing_dirs(writes: Sequence[SetWrite]) -> list[Path]:
    """The folders the set will make (its new files' missing parents), deepest first."""
    missing: dict[Path, None] = {}
    for w in writes:
        if not w.create_dirs:
            continue
        parent = w.rp.real.parent
        while not os.path.lexists(parent) and parent != parent.parent:
            missing[parent] = None
            parent = parent.parent
    return sorted(missing, key=lambda p: len(p.parts), reverse=True)


def _restore(done: _Done) -> list[str]:
    """Every file the failed commit changed put back; the ones that could not be (shown, why)."""
    failed: list[str] = []
    for w in reversed(done.removed):
        try:
            old = w.expect.content or b""
            replace_file(w.rp.real, old, expect=Snapshot.absent(), shown=w.rp.shown, mode=w.old_mode)
        except WriteError as exc:
            failed.append(f"`{w.rp.shown}` ({exc.message})")
    for w, now in reversed(done.renamed):
        try:
            if now is None:  # gone right after its rename: no status to check it against
                raise WriteError(f"`{w.rp.shown}` cannot be examined.")
            assert w.new is not None  # a renamed file was written
            # The file as the set just wrote it: what the restore checks it still is.
            current = Snapshot.of(bytes(w.new), now)
            if w.expect.exists:
                old = w.expect.content or b""
                replace_file(w.rp.real, old, expect=current, shown=w.rp.shown, mode=w.old_mode)
            else:
                remove_file(w.rp.real, expect=current, shown=w.rp.shown)
        except WriteError as exc:
            failed.append(f"`{w.rp.shown}` ({exc.message})")
    for folder in done.made_dirs:
        with contextlib.suppress(OSError):
            os.rmdir(folder)  # only if empty: a file someone else put there stays
    return failed


def _told(exc: WriteError, done: _Done, failed: list[str]) -> WriteError:
    """The failure of the set: which file and why (the write's own sentence), and what was put
    back."""
    message = exc.message.replace(" Nothing was written.", "")
    changed = len(done.renamed) + len(done.removed)
    if failed:
        left = len(failed)
        if left == changed:  # every one of them: there are no others to speak of
            lost = (
                "the file it had already changed could not be restored"
                if changed == 1
                else f"none of the {changed} files it had already changed could be restored"
            )
            message += f" The set was not written whole, and {lost}: {'; '.join(failed)}."
        else:
            others = "The other was." if changed - left == 1 else "The others were."
            message += (
                f" The set was not written whole, and {left} of the {changed} files it had "
                f"already changed could not be restored: {'; '.join(failed)}. {others}"
            )
        return WriteError(message, "Set partly written", exc.output)
    if changed:
        files = (
            "file it had already changed was restored as it was"
            if changed == 1
            else f"{changed} files it had already changed were restored as they were"
        )
        message += f" Nothing in the set was written: the {files}."
    else:
        message += " Nothing in the set was written."
    return WriteError(message, exc.brief, exc.output)


# --- after a crash ---------------------------------------------------------------------------


def _dead(host: str, pid: str, life: str) -> bool:
    """Whether the process that marked a set is gone: on this machine only (a shared state
    directory's other machines recover their own sets at their start). A process of that
    number in another life (``host-pid-life.token``) is another: this one, in a restarted
    container. Never a signal: on Windows ``os.kill`` ends the process."""
    if host != socket.gethostname() or not pid.isdigit():
        return False
    return not platform.process_alive(int(pid), life)


def interrupted_sets() -> list[tuple[str, Path]]:
    """(owner "host:pid", its mark) of each set a process of this machine left mid-commit
    when it died."""
    try:
        marks = list(sets_dir().iterdir())
    except OSError:
        return []
    found = []
    for mark in marks:
        owner, _, token = mark.name.rpartition("-")
        host, _, pid = owner.rpartition("-")
        if token and _dead(host, pid, platform.life_of(token)):
            found.append((f"{host}:{pid}", mark))
    return found


async def recover_sets(history: WriteHistory) -> list[str]:
    """Roll back (or forward) each set a killed process left mid-commit; what was done, one
    sentence a set (for the log). Each set's files are locked as a write would lock them."""
    said = []
    marks: dict[str, list[Path]] = {}
    for owner, mark in interrupted_sets():
        marks.setdefault(owner, []).append(mark)
    settled_all = {owner: True for owner in marks}
    entries = history.entries() if marks else []
    sets: dict[str, list[Entry]] = {}
    for entry in entries:
        if entry.group and entry.state == "unconfirmed" and entry.owner in marks:
            sets.setdefault(entry.group, []).append(entry)
    for set_id, members in sets.items():
        async with contextlib.AsyncExitStack() as stack:
            for path in sorted({m.path for m in members}):
                await stack.enter_async_context(PATH_LOCKS.hold(Path(path)))
            told, settled = _recover(history, set_id, members)
        said.append(told)
        settled_all[members[0].owner] &= settled
    for owner, owned in marks.items():
        if settled_all[owner]:  # else kept: the next start tries again
            for mark in owned:
                _remove_made(mark)
                _unmark(mark)
    return said


def _recover(history: WriteHistory, set_id: str, members: list[Entry]) -> tuple[str, bool]:
    """What was done (one sentence), and whether the set is settled (its mark may go)."""
    states = [_state_of(m) for m in members]
    ids = [m.id for m in members]
    if all(s == "after" for s in states):
        history.finish_set(ids, ok=True)
        return f"set {set_id}: every file was written before the crash; marked done", True
    if "other" in states:
        names = ", ".join(escape(m.path) for m, s in zip(members, states, strict=True) if s == "other")
        told = (
            f"set {set_id}: interrupted by a crash and left as it is: changed since ({names}); "
            "`filegate history` lists it"
        )
        return told, True
    problems = []
    for member, state in zip(members, states, strict=True):
        if state == "after":
            try:
                _roll_back(history, member)
            except (OSError, ValueError, Refusal) as exc:
                why = exc.message if isinstance(exc, Refusal) else str(exc)
                problems.append(f"{escape(member.path)} ({escape(why)})")
    if problems:
        return f"set {set_id}: interrupted by a crash; could not restore {', '.join(problems)}", False
    history.finish_set(ids, ok=False)
    return f"set {set_id}: interrupted by a crash; its files were restored as they were before it", True


def _remove_made(mark: Path) -> None:
    """The folders a mark names, where empty (a file put there stays), deepest first."""
    with contextlib.suppress(OSError):
        for name in mark.read_bytes().split(b"\n"):
            if name:
                with contextlib.suppress(OSError):
                    os.rmdir(os.fsdecode(name))


def _state_of(entry: Entry) -> str:
    """'before', 'after' or 'other': the file now against the record's hashes."""
    try:
        data = _read(Path(entry.path))
    except Refusal:
        return "other"  # not a file, too large, unreadable: not the set's to touch
    if data is None:
        return "after" if entry.removed else "before" if entry.created else "other"
    digest = entry.digest(data)
    if not entry.removed and digest == entry.after:
        return "after"
    if not entry.created and digest == entry.before:
        return "before"
    return "other"


def _read(real: Path) -> bytes | None:
    """The file's content, None when it is not there (PathError for anything else)."""
    found = _load(real)
    return None if found is None else found[0]


def _load(real: Path) -> tuple[bytes, Snapshot] | None:
    rp = ResolvedPath(escape(str(real)), real, True, False)
    try:
        fd = open_regular(rp)
    except PathError as exc:
        if exc.brief == "File not found":
            return None
        raise
    try:
        return read_all(fd, RECOVER_MAX_BYTES, rp.shown)
    finally:
        os.close(fd)


def _roll_back(history: WriteHistory, entry: Entry) -> None:
    """``entry``'s file put back as it was before the set (it is as the set left it)."""
    real = Path(entry.path)
    shown = escape(entry.path)
    found = _load(real)
    if entry.created:  # it was not there: it goes again
        if found is not None:
            remove_file(real, expect=found[1], shown=shown)
        return
    old = history.pre_image(entry)
    mode = None if entry.mode is None else stat.S_IMODE(entry.mode)
    expect = Snapshot.absent() if found is None else found[1]
    replace_file(real, old, expect=expect, shown=shown, mode=mode)
