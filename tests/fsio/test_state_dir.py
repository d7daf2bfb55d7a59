"""The state directory is owner-only whatever the umask, and a write's wait for its path's lock
has a deadline (SPEC §8.4 "owner-only", issue 53 item 8).

Under umask 000 the state folder, `locks/` and `pending/` were made 0777 (only `history/` was
0700), and another local user who made and held a path's lock file there hung the owner's write
with no deadline. Real servers, real files, real processes holding real flocks; the other user
is a real second uid where the run is root (the CI's).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from filegate.errors import Busy
from filegate.fsio import history, locks, platform
from filegate.fsio import pending as records
from filegate.fsio.locks import PATH_LOCKS, lock_path
from filegate.fsio.pending import NotPrivate, private_dir, state_dir
from tests.conftest import call, connect, text, write_id_of
from tests.tooling import needs

NOBODY = 65534
# A hang guard, never a measurement: a wait with no deadline fails the test here, loudly.
HANG_S = 60.0


@pytest.fixture
def umask_000() -> Iterator[None]:
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def modes_under(top: Path) -> dict[str, int]:
    """Every folder and file from the state folder down, with its mode bits."""
    found = {".": stat.S_IMODE(os.lstat(top).st_mode)}
    for here, dirs, files in os.walk(top):
        for name in dirs + files:
            p = Path(here, name)
            found[str(p.relative_to(top))] = stat.S_IMODE(os.lstat(p).st_mode)
    return found


def open_to_others(top: Path) -> dict[str, str]:
    return {
        rel: oct(mode)
        for rel, mode in modes_under(top).items()
        if mode & 0o077 or (stat.S_ISDIR(os.lstat(top / rel).st_mode) and mode != 0o700)
    }


async def write_and_edit(ws: Path) -> None:
    """A creation, an edit (a pre-image kept), a pending record: every folder the state has."""
    async with connect(ws, read_guard=False) as c:
        r = await call(c, "WriteFile", path="a.txt", content="one\n")
        assert not r.is_error, text(r)
        r = await call(c, "StrReplaceFile", path="a.txt", edit={"old": "one", "new": "two"})
        assert not r.is_error, text(r)
    assert records.record_pending(None, "x" + records.TEMP_SUFFIX, str(ws)) is not None


@pytest.mark.usefixtures("umask_000")
async def test_every_state_folder_is_owner_only_under_umask_000(ws: Path) -> None:
    assert not state_dir().exists()
    await write_and_edit(ws)
    top = state_dir()
    assert {"locks", "pending", "history"} <= {p.name for p in top.iterdir()}
    assert open_to_others(top) == {}, modes_under(top)


@pytest.mark.usefixtures("umask_000")
async def test_a_state_folder_left_open_is_narrowed(ws: Path) -> None:
    """An existing state folder of this user that lets others in (made under umask 000 by an
    earlier filegate) is narrowed to 0700, each folder under it too."""
    top = state_dir()
    for sub in ("", "locks", "pending", "history"):
        (top / sub).mkdir(mode=0o777, parents=True, exist_ok=True)
        os.chmod(top / sub, 0o777)
    await write_and_edit(ws)
    assert open_to_others(top) == {}, modes_under(top)


def test_a_state_folder_that_is_not_ours_is_not_used(tmp_path: Path) -> None:
    top = state_dir()
    top.parent.mkdir(parents=True, exist_ok=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    top.mkdir()
    (top / "locks").symlink_to(elsewhere)  # a link below the state folder: never followed
    with pytest.raises(OSError):
        private_dir("locks")
    (top / "pending").write_text("a file")
    with pytest.raises(OSError):
        private_dir("pending")
    assert list(elsewhere.iterdir()) == []


def test_the_state_folder_may_be_the_users_own_link(tmp_path: Path) -> None:
    """A dotfile manager's link for the state folder itself is followed (the user's own)."""
    real = tmp_path / "real-state"
    real.mkdir(mode=0o755)
    os.chmod(real, 0o755)
    state_dir().parent.mkdir(parents=True, exist_ok=True)
    state_dir().symlink_to(real)
    private_dir("locks")
    assert stat.S_IMODE(os.stat(real).st_mode) == 0o700 and (real / "locks").is_dir()


def test_another_users_state_folder_is_refused(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        needs("root", "a folder of another user is made by chown")
    state_dir().mkdir(parents=True, mode=0o700)
    os.chown(state_dir(), NOBODY, NOBODY)
    with pytest.raises(NotPrivate, match="is not a folder of this user"):
        private_dir("locks")
    assert not (state_dir() / "locks").exists()


# --- the lock's deadline ------------------------------------------------------------------

HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
if len(sys.argv) > 2:  # another user: the file is theirs, and so is the process that holds it
    os.fchown(fd, int(sys.argv[2]), int(sys.argv[2]))
    os.setgid(int(sys.argv[2]))
    os.setuid(int(sys.argv[2]))
    assert os.geteuid() == int(sys.argv[2])
print("held", flush=True)
sys.stdin.read()
"""


class Holder:
    """Another process holding an flock on a lock file until the test lets go."""

    def __init__(self, path: Path, uid: int | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        args = [sys.executable, "-c", HOLDER, str(path)] + ([str(uid)] if uid is not None else [])
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdout is not None and self.proc.stdout.readline() == b"held\n"

    def release(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(10)
        self.proc.stdout.close()


async def test_a_lock_held_by_another_process_answers_busy_past_the_deadline(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another filegate process of this user that does not let go of a file (stuck): the write
    waits LOCK_WAIT_S, then answers busy; nothing written. Then it goes through."""
    monkeypatch.setattr(locks, "LOCK_WAIT_S", 0.5)
    target = ws / "a.txt"
    target.write_text("before\n")
    holder = Holder(lock_path(str(target)))
    try:
        async with connect(ws, read_guard=False) as c:
            began = time.monotonic()
            with anyio.fail_after(HANG_S):
                r = await call(c, "WriteFile", path="a.txt", content="after\n")
            took = time.monotonic() - began
            assert r.is_error and "held it for longer than 0.5 s; nothing was done, try again" in text(r), (
                text(r)
            )
            assert took >= 0.5, took
            assert target.read_text() == "before\n"
            holder.release()
            r = await call(c, "WriteFile", path="a.txt", content="after\n")
            assert not r.is_error, text(r)
    finally:
        holder.proc.kill()
        holder.release()
    assert target.read_text() == "after\n"


async def test_the_in_process_wait_has_the_same_deadline(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(locks, "LOCK_WAIT_S", 0.3)
    target = ws / "a.txt"
    target.write_text("before\n")
    async with connect(ws, read_guard=False) as c:
        async with PATH_LOCKS.hold(target):  # another call of this process, stuck inside
            with anyio.fail_after(HANG_S):
                r = await call(c, "WriteFile", path="a.txt", content="after\n")
        assert r.is_error and "held it for longer than 0.3 s" in text(r), text(r)
        assert target.read_text() == "before\n"
        assert len(PATH_LOCKS) == 0  # the waiter that gave up is not counted
        r = await call(c, "WriteFile", path="a.txt", content="after\n")
        assert not r.is_error, text(r)


@pytest.mark.usefixtures("umask_000")
async def test_another_users_lock_file_never_holds_the_owners_write(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The red team's case: the state folder open to others (umask 000), another local user
    makes the lock file of a path and holds it. The folder is narrowed; the other user's file
    is neither waited on nor removed: the lock is taken at the path's next name, the same for
    every process of the owner. The write goes through at once."""
    if os.geteuid() != 0:
        needs("root", "a second uid holding a lock file needs setuid")
    target = ws / "a.txt"
    target.write_text("before\n")
    first = lock_path(str(target))
    for folder in (state_dir(), first.parent):
        folder.mkdir(mode=0o777, exist_ok=True)
        os.chmod(folder, 0o777)
    holder = Holder(first, uid=NOBODY)
    try:
        assert os.stat(first).st_uid == NOBODY
        async with connect(ws, read_guard=False) as c:
            with anyio.fail_after(HANG_S):
                r = await call(c, "WriteFile", path="a.txt", content="after\n")
            assert not r.is_error, text(r)
            # Two of the owner's servers still take turns, on the next name.
            monkeypatch.setattr(locks, "LOCK_WAIT_S", 0.2)
            mine, replica = locks.PathLocks(), locks.PathLocks()
            async with mine.hold(target):
                assert first.with_name(first.name + ".1").exists()
                with pytest.raises(Busy, match="held it for longer than"):
                    async with replica.hold(target):
                        pass
        assert os.stat(first).st_uid == NOBODY  # theirs is left alone
    finally:
        holder.release()
    assert target.read_text() == "after\n"
    assert stat.S_IMODE(os.stat(first.parent).st_mode) == 0o700


async def test_lock_names_all_taken_by_others_answer_busy_at_once(ws: Path) -> None:
    """Links at every name of a path's chain (not this user's regular files: a link is never
    followed): refused at once, saying why and what clears it."""
    target = ws / "a.txt"
    target.write_text("before\n")
    first = lock_path(str(target))
    private_dir("locks")
    (ws / "decoy").write_text("x")
    for step in range(locks.MAX_LOCK_NAMES):
        name = first if step == 0 else first.with_name(f"{first.name}.{step}")
        name.symlink_to(ws / "decoy")
    async with connect(ws, read_guard=False) as c:
        with anyio.fail_after(HANG_S):
            r = await call(c, "WriteFile", path="a.txt", content="after\n")
    assert r.is_error and "belong to another user" in text(r) and "`locks` folder" in text(r), text(r)
    assert target.read_text() == "before\n" and (ws / "decoy").read_text() == "x"
    os.unlink(first.with_name(f"{first.name}.{locks.MAX_LOCK_NAMES - 1}"))
    async with connect(ws, read_guard=False) as c:
        r = await call(c, "WriteFile", path="a.txt", content="after\n")
    assert not r.is_error and target.read_text() == "after\n", text(r)


# --- the pending records: a sweep follows only this user's own --------------------------------


def dead_pid() -> int:
    proc = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True
    )
    return int(proc.stdout)


@pytest.mark.usefixtures("umask_000")
def test_a_sweep_narrows_the_folder_and_follows_no_planted_record(ws: Path) -> None:
    """A record is a path to remove: one that is not this user's regular file (a link planted
    while the folder was open to others; another user's, where the run is root) is not followed."""
    pending = records.pending_dir()
    pending.mkdir(parents=True, mode=0o777)
    os.chmod(pending, 0o777)
    victim = ws / f".v.0123456789abcdef{records.TEMP_SUFFIX}"
    victim.write_text("the user's")
    naming = ws / "naming-the-victim"
    naming.write_bytes(os.fsencode(victim))
    pid = dead_pid()
    (pending / f"{pid}-link").symlink_to(naming)
    if os.geteuid() == 0:
        theirs = pending / f"{pid}-theirs"
        theirs.write_bytes(os.fsencode(victim))
        os.chown(theirs, NOBODY, NOBODY)
    assert records.sweep_pending_temps() == 0
    assert victim.read_text() == "the user's"
    assert stat.S_IMODE(os.stat(pending).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(state_dir()).st_mode) == 0o700


def test_a_sweep_off_posix_asks_no_process_whether_it_runs(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On Windows ``os.kill(pid, 0)`` ends the process named instead of probing it (a replica in
    mid-write, or whatever took a dead writer's pid): there the sweep keeps every record."""
    pending = records.pending_dir()
    pending.mkdir(parents=True)
    temp = ws / f".w.0123456789abcdef{records.TEMP_SUFFIX}"
    temp.write_text("in flight")
    (pending / f"{dead_pid()}-ww").write_bytes(os.fsencode(temp))
    signalled: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: signalled.append((pid, sig)))
    monkeypatch.setattr(platform, "WINDOWS", True)
    assert records.sweep_pending_temps() == 0
    assert signalled == [] and temp.exists()


def test_a_sweep_with_no_records_makes_no_state_folder() -> None:
    assert records.sweep_pending_temps() == 0
    assert not state_dir().exists()


async def test_a_history_held_by_another_process_answers_busy_past_the_deadline(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another filegate process of this user stuck inside the write history's lock (it is held
    for one record's append): a write waits history.LOCK_WAIT_S, then answers busy with nothing
    written, and so does UndoWrite's reading of the history; neither hangs. Then both go through."""
    monkeypatch.setattr(history, "LOCK_WAIT_S", 0.5)  # shortened (30 s in use) so the test is quick
    target = ws / "a.txt"
    target.write_text("before\n")
    async with connect(ws, read_guard=False) as c:
        r = await call(c, "WriteFile", path="a.txt", content="first\n")  # the history exists
        assert not r.is_error, text(r)
        write_id = write_id_of(text(r))
        holder = Holder(history.history_dir() / "lock")
        try:
            began = time.monotonic()
            with anyio.fail_after(HANG_S):
                r = await call(c, "WriteFile", path="a.txt", content="after\n")
            took = time.monotonic() - began
            assert r.is_error, text(r)
            assert (
                "The write history is held by another filegate process of this user for longer than 0.5 s; nothing was done, try again."
                in text(r)
            )
            assert took >= 0.5, took
            assert target.read_text() == "first\n"
            with anyio.fail_after(HANG_S):
                r = await call(c, "UndoWrite", write_id=write_id)
            assert r.is_error and "held by another filegate process" in text(r), text(r)
            assert target.read_text() == "first\n"
            holder.release()
            r = await call(c, "WriteFile", path="a.txt", content="after\n")
            assert not r.is_error, text(r)
        finally:
            holder.proc.kill()
            holder.release()
    assert target.read_text() == "after\n"
