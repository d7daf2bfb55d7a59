"""A set's commit (fsio/changeset.py, SPEC §10) killed with SIGKILL at each of its steps, then
the next start's recovery: every file is all old or all new, and the history agrees.

Per step: a forked child commits a five-file set (three edits, a creation in a new folder, a
delete) and kills itself at that step — a hook around the very call that step makes (the
child's own functions wrapped: a mock, but only of *when* the process dies). The parent then
runs what a start runs (``recover_sets``, as ``serve()`` does) and checks the files, the
history's last word on each and the marks. The slow variant kills a real server at random
moments mid-ApplyPatch and restarts it.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import random
import signal
import socket
import stat
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import filegate.fsio.atomic as atomic
import filegate.fsio.changeset as changeset
from filegate.fsio import platform
from filegate.fsio.changeset import SetWrite, commit_set, interrupted_sets, recover_sets, sets_dir
from filegate.fsio.history import WriteHistory, history_dir
from filegate.fsio.pending import TEMP_SUFFIX, sweep_pending_temps
from filegate.fsio.snapshot import Snapshot, read_all
from filegate.policy.workspace import ResolvedPath
from tests.stress.procs import Zygote
from tests.stress.test_crash_kills import _wait_gone

OLD = {
    "a.txt": b"alpha old\n" * 500,
    "b.txt": b"bravo old\r\n" * 700,
    "c.txt": b"charlie old\n",
    "gone.txt": b"to be deleted\n" * 30,
}
NEW = {
    "a.txt": b"alpha NEW\n" * 400,
    "b.txt": b"bravo NEW\r\n" * 900,
    "c.txt": b"charlie NEW, longer\n",
    "sub/new.txt": b"created by the set\n",
}
MODES = {"a.txt": 0o640, "b.txt": 0o755, "c.txt": 0o600, "gone.txt": 0o644}


def setup(ws: Path) -> None:
    for name, data in OLD.items():
        (ws / name).write_bytes(data)
        (ws / name).chmod(MODES[name])


def files(ws: Path) -> dict[str, bytes]:
    return {str(p.relative_to(ws)): p.read_bytes() for p in sorted(ws.rglob("*")) if p.is_file()}


def writes(ws: Path) -> list[SetWrite]:
    out = []
    for name in ("a.txt", "b.txt", "c.txt", "sub/new.txt", "gone.txt"):
        real = ws / name
        rp = ResolvedPath(name, real, True, False)
        if real.exists():
            fd = os.open(real, os.O_RDONLY)
            try:
                _, snap = read_all(fd, 1 << 30, name)
            finally:
                os.close(fd)
        else:
            snap = Snapshot.absent()
        mode = MODES.get(name)
        new = NEW.get(name)
        out.append(SetWrite(rp, snap, new, old_mode=mode, create_dirs=name.startswith("sub/")))
    return out


def control(ws: Path) -> None:
    """The same set, not killed, in a folder beside ``ws`` with a history of its own: it lands
    whole. (mutmut maps a test to the functions it calls in its own process, and the killed
    commit runs in a forked child: this is what ties the commit's functions to these tests.)"""
    twin = ws.parent / "twin"
    twin.mkdir()
    setup(twin)
    commit_set(writes(twin), WriteHistory(ws.parent / "twin-history"), "ApplyPatch", "control", "auto")
    assert files(twin) == NEW
    assert list(sets_dir().iterdir()) == []  # a set that landed leaves no mark


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def hook(monkeypatch: pytest.MonkeyPatch, step: str, at: int) -> None:
    """In the child: die at ``step`` (the ``at``-th time it comes)."""
    seen = [0]

    def count() -> bool:
        seen[0] += 1
        return seen[0] == at

    def around(
        owner: Any, name: str, *, before: bool, when: Callable[..., bool] = lambda *a, **k: True
    ) -> None:
        real = getattr(owner, name)

        def wrapped(*args: Any, **kw: Any) -> Any:
            if when(*args, **kw) and before and count():
                die()
            result = real(*args, **kw)
            if when(*args, **kw) and not before and count():
                die()
            return result

        monkeypatch.setattr(owner, name, wrapped)

    renaming = lambda *a, **k: "src_dir_fd" in k  # noqa: E731 - a file's rename, not the history's
    unlinking = lambda *a, **k: "dir_fd" in k  # noqa: E731
    if step == "marked":
        around(changeset, "_mark", before=False)
    elif step == "recorded":
        around(WriteHistory, "begin_set", before=False)
    elif step == "temp":
        around(atomic, "_write_all", before=True)
    elif step == "before rename":
        around(atomic.os, "replace", before=True, when=renaming)
    elif step == "after rename":
        around(atomic.os, "replace", before=False, when=renaming)
    elif step == "after unlink":
        around(atomic.os, "unlink", before=False, when=unlinking)
    elif step == "finishing":
        around(WriteHistory, "finish_set", before=True)
    else:
        raise AssertionError(step)


STEPS = [
    ("marked", 1),
    ("recorded", 1),
    *[("temp", k) for k in (1, 2, 4)],
    *[("before rename", k) for k in (1, 2, 4)],
    *[("after rename", k) for k in (1, 3, 4)],
    ("after unlink", 1),
    ("finishing", 1),
]


@pytest.mark.parametrize(("step", "at"), STEPS, ids=[f"{s}-{k}" for s, k in STEPS])
@pytest.mark.parametrize("temps", ["tmpfile", pytest.param("named", marks=pytest.mark.slow)])
def test_a_set_killed_at_any_step_is_all_old_or_all_new_after_the_next_start(
    ws: Path, monkeypatch: pytest.MonkeyPatch, step: str, at: int, temps: str
) -> None:
    control(ws)
    setup(ws)
    pid = os.fork()
    if pid == 0:  # the child: commit, and die at the step
        try:
            if temps == "named":
                monkeypatch.setattr(atomic, "_TMPFILE", 0)
            hook(monkeypatch, step, at)
            commit_set(writes(ws), WriteHistory(history_dir()), "ApplyPatch", "kill test", "auto")
        finally:
            os._exit(3)  # it was meant to die before this
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (
        f"the child did not die at {step}"
    )
    landed = step in ("after unlink", "finishing")

    # Before the start: each file is whole, old or new, and the set is marked as in flight.
    for name, data in files(ws).items():
        if not name.endswith(TEMP_SUFFIX):
            assert data in (OLD.get(name), NEW.get(name)), f"torn {name}"
    assert list(sets_dir().iterdir())

    sweep_pending_temps()  # what serve() runs at a start, in its order
    said = asyncio.run(recover_sets(WriteHistory(history_dir())))
    assert files(ws) == (NEW if landed else OLD), said
    for name, mode in MODES.items():
        if (ws / name).exists():
            assert (ws / name).stat().st_mode & 0o7777 == mode, name
    assert not (ws / "sub").exists() or landed  # a folder the set made goes with it
    entries = WriteHistory(history_dir()).entries()
    # The records are kept while the temps are written: a kill at a temp may come before them.
    if step == "marked" or (step == "temp" and not entries):
        assert entries == [] and said == []
    else:
        assert len(entries) == 5
        assert {e.state for e in entries} == {"done" if landed else "failed"}, said
    assert list(sets_dir().iterdir()) == []  # settled: the next start has nothing to do
    assert asyncio.run(recover_sets(WriteHistory(history_dir()))) == []


def killed_at(ws: Path, monkeypatch: pytest.MonkeyPatch, step: str, at: int) -> None:
    """A forked child commits the set and dies at ``step``."""
    control(ws)
    setup(ws)
    pid = os.fork()
    if pid == 0:
        try:
            hook(monkeypatch, step, at)
            commit_set(writes(ws), WriteHistory(history_dir()), "ApplyPatch", "kill test", "auto")
        finally:
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status), f"the child did not die at {step}"
    # The mark is private, as the state directory's other files (it names the set's folders).
    assert stat.S_IMODE(sets_dir().stat().st_mode) == 0o700
    assert [stat.S_IMODE(m.stat().st_mode) for m in sets_dir().iterdir()] == [0o600]


def recover() -> list[str]:
    sweep_pending_temps()
    return asyncio.run(recover_sets(WriteHistory(history_dir())))


@pytest.mark.parametrize("change", ["edited", "deleted", "made a folder", "two edited"])
def test_a_set_whose_file_was_changed_after_the_crash_is_left_as_it_is_and_said(
    ws: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """Someone edited (or deleted, or put a folder in the place of) one of the set's files
    between the crash and the start: nothing of the set is rolled back (their change and the
    set's landed files stay), the log line names each such file, its records stay unconfirmed
    (`filegate history` lists them) and the mark goes."""
    killed_at(ws, monkeypatch, "after rename", 3)
    changed = ["b.txt", "c.txt"] if change == "two edited" else ["c.txt"]
    for name in changed:
        if change == "deleted":
            (ws / name).unlink()
        elif change == "made a folder":
            (ws / name).unlink()
            (ws / name).mkdir()
        else:
            (ws / name).write_bytes(b"someone's edit after the crash\n")
    left = {name: data for name, data in files(ws).items() if not name.endswith(TEMP_SUFFIX)}
    (entry,) = {e.group for e in WriteHistory(history_dir()).entries()}
    said = recover()
    names = ", ".join(str(ws / name) for name in changed)
    assert said == [
        f"set {entry}: interrupted by a crash and left as it is: changed since ({names}); "
        "`filegate history` lists it"
    ]
    assert files(ws) == left
    assert {e.state for e in WriteHistory(history_dir()).entries()} == {"unconfirmed"}
    assert list(sets_dir().iterdir()) == []
    assert recover() == []


@pytest.mark.parametrize(("step", "at"), [("before rename", 1), ("after rename", 4), ("after unlink", 1)])
def test_the_log_says_what_the_start_did_with_the_set(
    ws: Path, monkeypatch: pytest.MonkeyPatch, step: str, at: int
) -> None:
    killed_at(ws, monkeypatch, step, at)
    (group,) = {e.group for e in WriteHistory(history_dir()).entries()}
    said = recover()
    if step == "after unlink":
        assert said == [f"set {group}: every file was written before the crash; marked done"]
    else:
        assert said == [
            f"set {group}: interrupted by a crash; its files were restored as they were before it"
        ]


def snapshot(real: Path) -> Snapshot:
    fd = os.open(real, os.O_RDONLY)
    try:
        return read_all(fd, 1 << 30, real.name)[1]
    finally:
        os.close(fd)


def killed_with(writes: list[SetWrite], monkeypatch: pytest.MonkeyPatch, step: str, at: int) -> None:
    control(writes[0].rp.real.parent)
    pid = os.fork()
    if pid == 0:
        try:
            hook(monkeypatch, step, at)
            commit_set(writes, WriteHistory(history_dir()), "ApplyPatch", "kill test", "auto")
        finally:
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status), f"the child did not die at {step}"


def test_a_set_killed_between_two_deletes_gets_the_deleted_file_back_with_its_mode(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first delete landed, the second did not: the start puts the deleted file back, byte
    for byte and with its own mode, and the edited one as it was."""
    setup(ws)
    before = files(ws)
    rp = {name: ResolvedPath(name, ws / name, True, False) for name in ("a.txt", "c.txt", "gone.txt")}
    set_writes = [
        SetWrite(rp["c.txt"], snapshot(ws / "c.txt"), b"edited\n", old_mode=0o600),
        SetWrite(rp["a.txt"], snapshot(ws / "a.txt"), None, old_mode=0o640),
        SetWrite(rp["gone.txt"], snapshot(ws / "gone.txt"), None, old_mode=0o644),
    ]
    killed_with(set_writes, monkeypatch, "after unlink", 1)
    assert not (ws / "a.txt").exists() and (ws / "gone.txt").exists()
    said = recover()
    assert files(ws) == before, said
    assert {n: (ws / n).stat().st_mode & 0o7777 for n in MODES} == MODES


def test_a_move_onto_a_file_killed_after_its_rename_gives_the_file_back_its_own_mode(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The moved file (0o755) landed over a.txt (0o640); the start puts a.txt back with 0o640."""
    setup(ws)
    before = files(ws)
    a, b = (ResolvedPath(n, ws / n, True, False) for n in ("a.txt", "b.txt"))
    set_writes = [
        SetWrite(a, snapshot(ws / "a.txt"), OLD["b.txt"], mode=0o755, old_mode=0o640),
        SetWrite(b, snapshot(ws / "b.txt"), None, old_mode=0o755),
    ]
    killed_with(set_writes, monkeypatch, "after rename", 1)
    assert (ws / "a.txt").read_bytes() == OLD["b.txt"]
    recover()
    assert files(ws) == before
    assert (ws / "a.txt").stat().st_mode & 0o7777 == 0o640


def test_a_rollback_that_fails_at_the_start_is_said_and_tried_again_at_the_next(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault injection (a mock) at the start: the restore's rename and unlink fail. The log
    names each file and why; the set keeps its mark and its records (unconfirmed); the next
    start restores it."""
    killed_at(ws, monkeypatch, "after rename", 4)
    (group,) = {e.group for e in WriteHistory(history_dir()).entries()}
    real_replace, real_unlink = os.replace, os.unlink

    def no_rename(src: Any, dst: Any, *args: Any, **kw: Any) -> None:
        if "src_dir_fd" in kw:
            raise OSError(errno.EIO, "Input/output error")
        real_replace(src, dst, *args, **kw)

    def no_unlink(path: Any, *args: Any, **kw: Any) -> None:
        if "dir_fd" in kw and not str(path).endswith(TEMP_SUFFIX):  # a failed rename's temp goes
            raise OSError(errno.EIO, "Input/output error")
        real_unlink(path, *args, **kw)

    with monkeypatch.context() as faults:
        faults.setattr(atomic.os, "replace", no_rename)
        faults.setattr(atomic.os, "unlink", no_unlink)
        said = recover()
    # One line naming each file and why, in the set's order; the log escapes the reasons'
    # backticks (\\x60). The created file's rollback is a delete, and says so.
    new = ws / "sub" / "new.txt"
    why = [
        *(f"{ws / n} (Failed to write \\x60{ws / n}\\x60: Input/output error. Nothing was written.)"
          for n in ("a.txt", "b.txt", "c.txt")),
        f"{new} (Failed to delete \\x60{new}\\x60: Input/output error. Nothing was written.)",
    ]  # fmt: skip
    assert said == [f"set {group}: interrupted by a crash; could not restore {', '.join(why)}"]
    assert len(list(sets_dir().iterdir())) == 1
    assert {e.state for e in WriteHistory(history_dir()).entries()} == {"unconfirmed"}
    assert recover() == [
        f"set {group}: interrupted by a crash; its files were restored as they were before it"
    ]
    assert files(ws) == OLD
    assert list(sets_dir().iterdir()) == []


@pytest.mark.parametrize("kind", ["creates", "edits"])
def test_a_set_that_only_creates_or_only_edits_killed_before_its_renames_is_rolled_back(
    ws: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """Every file is as before (a creation: not there): the start marks the set failed, never
    done, and says its files were restored."""
    setup(ws)
    before = files(ws)
    names = ("new1.txt", "new2.txt") if kind == "creates" else ("a.txt", "c.txt")
    set_writes = [
        SetWrite(
            ResolvedPath(n, ws / n, True, False),
            snapshot(ws / n) if (ws / n).exists() else Snapshot.absent(),
            b"the set's\n",
            old_mode=MODES.get(n),
        )
        for n in names
    ]
    killed_with(set_writes, monkeypatch, "before rename", 1)
    (group,) = {e.group for e in WriteHistory(history_dir()).entries()}
    assert recover() == [
        f"set {group}: interrupted by a crash; its files were restored as they were before it"
    ]
    assert files(ws) == before
    assert {e.state for e in WriteHistory(history_dir()).entries()} == {"failed"}


def _dead_pid() -> int:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


def test_only_marks_of_dead_processes_of_this_machine_are_settled(ws: Path) -> None:
    """A mark names its host and process: another machine's (a shared state directory), a
    live process's and a malformed one are left alone; a dead process's with no records is
    settled: the empty folders it names go, a folder someone put a file in stays."""
    host = socket.gethostname()
    live = subprocess.Popen(["sleep", "30"])  # a live process (not this one: see below)
    (ws / "made" / "deeper").mkdir(parents=True)
    (ws / "kept").mkdir()
    (ws / "kept" / "theirs.txt").write_bytes(b"theirs\n")
    folder = sets_dir()
    folder.mkdir(parents=True)
    others = [
        f"other-{host}-{_dead_pid()}-00aa",
        f"{host}-{live.pid}-00bb",
        f"{host}-pid-00cc",
        f"{host}-{_dead_pid()}-",
    ]
    for name in others:
        (folder / name).write_bytes(b"")
    dead = folder / f"{host}-{_dead_pid()}-00dd"
    dead.write_bytes(
        b"\n".join(os.fsencode(str(p)) for p in (ws / "made" / "deeper", ws / "made", ws / "kept"))
    )
    try:
        assert [mark for _, mark in interrupted_sets()] == [dead]
        assert recover() == []
    finally:
        live.kill()
        live.wait()
    assert sorted(p.name for p in folder.iterdir()) == sorted(others)
    assert not (ws / "made").exists()
    assert (ws / "kept" / "theirs.txt").read_bytes() == b"theirs\n"


def test_a_set_that_made_nested_folders_is_rolled_back_with_every_level(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed after its new file landed in two folders it made (one with a space in its name):
    the start removes the file and both folders, as the set's mark names them."""
    setup(ws)
    before = files(ws)
    new = ws / "new docs" / "deeper" / "n.txt"
    set_writes = [
        SetWrite(
            ResolvedPath("a.txt", ws / "a.txt", True, False),
            snapshot(ws / "a.txt"),
            b"edited\n",
            old_mode=0o640,
        ),
        SetWrite(
            ResolvedPath("new docs/deeper/n.txt", new, True, False),
            Snapshot.absent(),
            b"made\n",
            create_dirs=True,
        ),
    ]
    killed_with(set_writes, monkeypatch, "after rename", 1)  # n.txt's: the last file's comes first
    assert new.exists()
    said = recover()
    assert files(ws) == before, said
    assert not (ws / "new docs").exists()


def test_a_one_file_set_killed_after_its_rename_is_marked_done(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    setup(ws)
    rp = ResolvedPath("c.txt", ws / "c.txt", True, False)
    killed_with(
        [SetWrite(rp, snapshot(ws / "c.txt"), b"edited\n", old_mode=0o600)], monkeypatch, "after rename", 1
    )
    (group,) = {e.group for e in WriteHistory(history_dir()).entries()}
    assert recover() == [f"set {group}: every file was written before the crash; marked done"]
    assert files(ws) == {**OLD, "c.txt": b"edited\n"}
    assert list(sets_dir().iterdir()) == []


def test_a_damaged_kept_copy_is_said_and_the_set_tried_again_at_the_next_start(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file's content before the set, as the history kept it, no longer matches its hash: the
    start does not put it back (nor anything else of the set), says why, and keeps the mark."""
    killed_at(ws, monkeypatch, "after rename", 4)
    history = WriteHistory(history_dir())
    entries = history.entries()
    (group,) = {e.group for e in entries}
    (a,) = [e for e in entries if e.path == str(ws / "a.txt")]
    kept = history.object_path(a.before)
    kept.chmod(0o600)
    kept.write_bytes(b"damaged\n")
    said = recover()
    assert said == [
        f"set {group}: interrupted by a crash; could not restore {ws / 'a.txt'} (the kept copy of {a.id} is damaged)"
    ]
    assert (ws / "a.txt").read_bytes() == NEW["a.txt"]
    assert len(list(sets_dir().iterdir())) == 1


def test_a_start_recovers_only_the_set_its_killed_process_left_unfinished(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The killed process had landed a set before: the start leaves that one (and its files)
    as they are, and rolls back only the set in flight."""
    setup(ws)
    (ws / "x.txt").write_bytes(b"x old\n")
    control(ws)
    pid = os.fork()
    if pid == 0:
        try:
            x = ResolvedPath("x.txt", ws / "x.txt", True, False)
            history = WriteHistory(history_dir())
            commit_set(
                [SetWrite(x, snapshot(ws / "x.txt"), b"x NEW\n")], history, "ApplyPatch", "kill test", "auto"
            )
            hook(monkeypatch, "after rename", 2)
            commit_set(writes(ws), history, "ApplyPatch", "kill test", "auto")
        finally:
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status)
    groups = {e.group: e.state for e in WriteHistory(history_dir()).entries()}
    (killed,) = [g for g, state in groups.items() if state == "unconfirmed"]
    assert recover() == [
        f"set {killed}: interrupted by a crash; its files were restored as they were before it"
    ]
    assert files(ws) == {**OLD, "x.txt": b"x NEW\n"}


class Stop(BaseException):
    """Stops a commit where it stands, as a kill would, without ending the process."""


def test_a_killed_process_with_two_sets_in_flight_keeps_their_marks_until_both_are_settled(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process left two sets mid-commit; the first cannot be rolled back at this start
    (fault injection: its file's rename fails), the second can: the process's marks stay, and
    the next start rolls the first back."""
    setup(ws)
    for name in ("x.txt", "y.txt"):
        (ws / name).write_bytes(b"old\n")
    control(ws)
    pid = os.fork()
    if pid == 0:
        try:
            x, y = (ResolvedPath(n, ws / n, True, False) for n in ("x.txt", "y.txt"))
            first_set = [SetWrite(f, snapshot(f.real), b"NEW\n") for f in (y, x)]  # x.txt's rename first
            history = WriteHistory(history_dir())
            with monkeypatch.context() as first:
                real = os.replace

                def stop(src: Any, dst: Any, *args: Any, **kw: Any) -> None:
                    real(src, dst, *args, **kw)
                    if os.path.basename(os.fspath(dst)) in ("x.txt", "y.txt"):
                        raise Stop

                first.setattr(atomic.os, "replace", stop)
                with contextlib.suppress(Stop):
                    commit_set(first_set, history, "ApplyPatch", "kill test", "auto")
            hook(monkeypatch, "after rename", 1)
            commit_set(writes(ws), history, "ApplyPatch", "kill test", "auto")
        finally:
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status)
    assert len(list(sets_dir().iterdir())) == 2
    real_replace = os.replace

    def no_rename_onto_x(src: Any, dst: Any, *args: Any, **kw: Any) -> None:
        if os.path.basename(os.fspath(dst)) == "x.txt":
            raise OSError(errno.EIO, "Input/output error")
        real_replace(src, dst, *args, **kw)

    with monkeypatch.context() as faults:
        faults.setattr(atomic.os, "replace", no_rename_onto_x)
        said = recover()
    assert len(said) == 2 and "could not restore" in said[0] and said[1].endswith("as they were before it")
    assert len(list(sets_dir().iterdir())) == 2
    (again,) = recover()
    assert again.endswith("its files were restored as they were before it")
    assert files(ws) == {**OLD, "x.txt": b"old\n", "y.txt": b"old\n"}
    assert list(sets_dir().iterdir()) == []


def test_a_mark_of_a_live_process_is_left_alone_and_the_process_untouched(ws: Path) -> None:
    """A start only asks whether a mark's process is alive: it sends it no signal. (A child,
    not this process: a signal sent to the test's own process would end the run, which
    mutation testing counts as neither a pass nor a failure.)"""
    live = subprocess.Popen(["sleep", "30"])
    try:
        folder = sets_dir()
        folder.mkdir(parents=True)
        (folder / f"{socket.gethostname()}-{live.pid}-00ee").write_bytes(b"")
        assert interrupted_sets() == []
        with pytest.raises(subprocess.TimeoutExpired):
            live.wait(timeout=0.3)
    finally:
        live.kill()
        live.wait()


def test_a_mark_of_another_users_process_is_left_alone(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Root may signal any process, so another user's is simulated (a mock of os.kill: EPERM,
    as a user gets for a process not theirs): it is alive, its mark is not the start's."""
    folder = sets_dir()
    folder.mkdir(parents=True)
    pid = _dead_pid()
    (folder / f"{socket.gethostname()}-{pid}-00ef").write_bytes(b"")
    real_kill = os.kill

    def not_yours(target: int, sig: int) -> None:
        if target == pid:
            raise PermissionError(errno.EPERM, "Operation not permitted")
        real_kill(target, sig)

    monkeypatch.setattr(os, "kill", not_yours)
    assert interrupted_sets() == []


def test_a_dashed_host_name_still_finds_its_killed_sets(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A mark is named host-pid-token; a host name with dashes in it (most are) is still this
    machine's (a mock of the host name, the machine's own having none)."""
    monkeypatch.setattr(socket, "gethostname", lambda: "build-box-7")
    folder = sets_dir()
    folder.mkdir(parents=True)
    dead = folder / f"build-box-7-{_dead_pid()}-00ab"
    dead.write_bytes(b"")
    assert interrupted_sets() == [(f"build-box-7:{dead.name.split('-')[3]}", dead)]
    assert recover() == [] and list(folder.iterdir()) == []


def test_something_other_than_a_mark_in_the_marks_folder_does_not_stop_a_start(ws: Path) -> None:
    """A folder where a dead process's mark would be (named like one): the start goes on."""
    folder = sets_dir()
    (folder / f"{socket.gethostname()}-{_dead_pid()}-00fe").mkdir(parents=True)
    assert recover() == []


# --- a real server, killed at random moments ------------------------------------------------

KILLS = 30


def _patch(old: dict[str, bytes], new: dict[str, bytes]) -> str:
    lines = ["*** Begin Patch"]
    for name in ("a.txt", "b.txt", "c.txt"):
        lines += [f"*** Update File: {name}", "@@"]
        lines += ["-" + x for x in old[name].decode().splitlines()[:1]]
        lines += ["+" + x for x in new[name].decode().splitlines()[:1]]
    return "\n".join([*lines, "*** End Patch"])


def _ok(reply: dict[str, Any]) -> bool:
    return "result" in reply and not reply["result"].get("isError")


@pytest.mark.slow
def test_a_server_killed_mid_set_is_all_old_or_all_new_after_a_restart(zygote: Zygote, ws: Path) -> None:
    """Two states of three files, the set flipping them; SIGKILL at random; the next server's
    start recovers: the files are one state or the other, never a mix, and the history agrees."""
    rng = random.Random(50)
    env = {"XDG_STATE_HOME": os.environ["XDG_STATE_HOME"]}
    one = {
        "a.txt": b"state one\n" + b"filler a\n" * 20_000,
        "b.txt": b"state one\n" + b"b\n" * 9_000,
        "c.txt": b"state one\n",
    }
    two = {k: v.replace(b"state one", b"state two!") for k, v in one.items()}
    for name, data in one.items():
        (ws / name).write_bytes(data)
    states = {"one": one, "two": two}
    seen = {"one": 0, "two": 0}
    # KILLS kills, then more (up to four times as many) until one has landed mid-commit: a kill
    # at a random moment lands there 0-4 times in 30 here, and the test is about recovering it.
    for n in range(4 * KILLS):
        if n >= KILLS and any(e.state == "failed" for e in WriteHistory(history_dir()).entries()):
            break
        server = zygote.spawn(ws, "--approval", "auto", "--read-guard", "off", env=env)
        now = "one" if (ws / "c.txt").read_bytes() == one["c.txt"] else "two"
        for _ in range(rng.randint(0, 2)):  # a few sets that land, one at a time
            other = "two" if now == "one" else "one"
            reply = server.reply(server.call("ApplyPatch", {"patch": _patch(states[now], states[other])}))
            assert _ok(reply), reply
            now = other
        other = "two" if now == "one" else "one"
        server.call("ApplyPatch", {"patch": _patch(states[now], states[other])})  # killed in flight
        time.sleep(rng.uniform(0, 0.06))
        os.kill(server.pid, signal.SIGKILL)
        server.close_pipes()
        _wait_gone(server.pid)
        # The next start recovers whatever was in flight.
        server = zygote.spawn(ws, "--approval", "auto", "--read-guard", "off", env=env)
        got = {name: (ws / name).read_bytes() for name in one}
        assert got in (one, two), "a mix of the set's old and new files after a restart"
        seen["one" if got == one else "two"] += 1
        server.close_pipes()
        _wait_gone(server.pid)
    entries = WriteHistory(history_dir()).entries()
    assert all(e.state in ("done", "failed") for e in entries), [
        e for e in entries if e.state == "unconfirmed"
    ]
    rolled = {e.group for e in entries if e.state == "failed"}
    print(f"\nset kills: {seen}; sets rolled back at a restart: {len(rolled)}")
    assert rolled, "no kill landed mid-commit: the test did not test the recovery"


def test_a_set_left_by_this_process_numbers_former_life_is_recovered(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restarted container's filegate often gets its predecessor's process number (and a
    rebooted machine may give that number to any process): the set its predecessor left
    mid-commit is still recovered, as the mark names the life of the process (boot and start),
    not the number alone. A set of this very life is left alone: it is in flight."""
    if not platform.process_life():
        pytest.skip("no /proc here to tell one life of a process number from another")
    setup(ws)
    control(ws)
    history = WriteHistory(history_dir())
    with monkeypatch.context() as m:
        real = os.replace

        def stop(src: Any, dst: Any, *args: Any, **kw: Any) -> None:
            real(src, dst, *args, **kw)
            if os.path.basename(os.fspath(dst)) == "a.txt":
                raise Stop  # this process "dies" after the set's first rename

        m.setattr(atomic.os, "replace", stop)
        with contextlib.suppress(Stop):
            commit_set(writes(ws), history, "ApplyPatch", "kill test", "auto")
    (mark,) = sets_dir().iterdir()
    host, pid, token = socket.gethostname(), os.getpid(), mark.name.rpartition("-")[2]
    assert mark.name == f"{host}-{pid}-{token}" and token.count(".") == 2, mark.name  # a life
    assert recover() == [] and files(ws)["a.txt"] == NEW["a.txt"]  # this life's: in flight
    boot, ticks, rand = token.split(".")
    mark.rename(mark.with_name(f"{host}-{pid}-{boot}.{int(ticks) - 1}.{rand}"))  # a former life
    (said,) = recover()
    assert said.endswith("its files were restored as they were before it"), said
    assert files(ws) == OLD and list(sets_dir().iterdir()) == []
