"""fsio.atomic's write at its edges, without a server: the exact sentence and brief of every
refusal and failure, what is left behind (no temp, no record) whichever way a write ends,
directories created on the way, owner and mode kept, the hash read in blocks, the record of
in-flight temps and the per-path lock."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import errno
import hashlib
import os
import stat
import threading
import time
from pathlib import Path

import pytest

from filegate.errors import WriteError
from filegate.fsio import atomic, locks
from filegate.fsio import pending as records
from filegate.fsio import snapshot as snapshots
from filegate.fsio.atomic import replace_file
from filegate.fsio.locks import PathLocks
from filegate.fsio.pending import TEMP_SUFFIX
from filegate.fsio.snapshot import Snapshot, read_all
from tests.tooling import needs


def snapshot(path: Path) -> Snapshot:
    return Snapshot.of(path.read_bytes(), os.stat(path))


@pytest.fixture(params=["tmpfile", "named"])
def temps(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both temp strategies: O_TMPFILE, and named temps (a system without O_TMPFILE)."""
    if request.param == "named":
        monkeypatch.setattr(atomic, "_TMPFILE", 0)
    return str(request.param)


def check_nothing_left(d: Path) -> None:
    assert [p.name for p in d.iterdir() if p.name.endswith(TEMP_SUFFIX)] == []
    pending = records.pending_dir()
    assert not pending.exists() or list(pending.iterdir()) == []


def write_error(call: object) -> WriteError:
    assert callable(call)
    with pytest.raises(WriteError) as err:
        call()
    return err.value


STALE = "changed on disk after the change was prepared ({}). Nothing was written. Read the file again and redo the change."


@pytest.mark.parametrize(
    ("case", "why"),
    [
        ("deleted", "it was deleted"),
        ("created", "it was created by someone else"),
        ("size", "its size or modification time changed"),
        ("mtime", "its size or modification time changed"),
        ("content", "its content changed"),
    ],
)
def test_each_stale_reason_has_its_sentence_and_leaves_nothing(
    ws: Path, temps: str, case: str, why: str
) -> None:
    f = ws / "f.txt"
    f.write_bytes(b"AAAA")
    st = os.stat(f)
    expect = {
        "deleted": snapshot(f),
        "created": Snapshot.absent(),
        "size": Snapshot(True, 5, st.st_mtime_ns, content=b"AAAAA"),
        "mtime": Snapshot(True, 4, st.st_mtime_ns + 1, content=b"AAAA"),
        "content": Snapshot(True, 4, st.st_mtime_ns, content=b"BBBB"),
    }[case]
    if case == "deleted":
        f.unlink()
    err = write_error(lambda: replace_file(f, b"mine", expect=expect, shown="f.txt"))
    assert (err.message, err.brief) == ("`f.txt` " + STALE.format(why), "File changed")
    check_nothing_left(ws)
    assert not f.exists() if case == "deleted" else f.read_bytes() == b"AAAA"


def test_the_file_is_read_in_blocks_to_the_end(ws: Path, temps: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshots, "_HASH_BLOCK", 3)
    f = ws / "f.txt"
    f.write_bytes(b"0123456789")
    seen = snapshot(f)
    st = os.stat(f)
    f.write_bytes(b"012345678X")  # the last byte, in the last block, differs
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    err = write_error(lambda: replace_file(f, b"mine", expect=seen, shown="f.txt"))
    assert "its content changed" in err.message
    assert replace_file(f, b"mine", expect=snapshot(f), shown="f.txt") == 4


def test_the_bytes_read_are_compared_in_blocks_to_the_end(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 13.3: the stale check compares the file with the bytes read instead of hashing it;
    a difference in the last block, a file cut short or grown since its size was checked are
    each a change."""
    monkeypatch.setattr(snapshots, "_HASH_BLOCK", 3)
    f = ws / "f.txt"
    read = b"0123456789"
    for on_disk, same in [(read, True), (b"012345678X", False), (read[:-1], False), (read + b"!", False)]:
        f.write_bytes(on_disk)
        fd = os.open(f, os.O_RDONLY)
        try:
            assert snapshots._holds(fd, read) is same, on_disk
        finally:
            os.close(fd)


def _open_deleted(name: str) -> list[str]:
    """This process's descriptors on a removed file called ``name``."""
    links = []
    for entry in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            links.append(os.readlink(f"/proc/self/fd/{entry}"))
    return [link for link in links if link.endswith(f"/{name} (deleted)")]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd") or os.name != "posix", reason="reads /proc/self/fd")
@pytest.mark.parametrize("stale", [False, True], ids=["written", "stale"])
def test_a_large_replaced_file_is_closed_after_the_call_and_never_leaked(
    ws: Path, temps: str, stale: bool
) -> None:
    """Issue 13.3: rename(2) over a 50 MB file frees its blocks in the call (~12 ms); the write
    holds the old file across the rename and a background thread closes it after the answer.
    Held back here (the releaser is kept busy), then let go: nothing stays open either way."""
    f = ws / "f.bin"
    f.write_bytes(b"o" * atomic._RELEASE_IN_BACKGROUND_BYTES)
    expect = snapshot(f)
    if stale:
        f.write_bytes(b"O" * atomic._RELEASE_IN_BACKGROUND_BYTES)  # same size, mtime moved
    busy = threading.Event()
    atomic._RELEASER.submit(busy.wait, 10)
    try:
        if stale:
            assert (
                "changed on disk"
                in write_error(lambda: replace_file(f, b"new", expect=expect, shown="f")).message
            )
        else:
            assert replace_file(f, b"new", expect=expect, shown="f") == 3
            assert _open_deleted("f.bin") != []  # the old file: not yet freed
    finally:
        busy.set()
    atomic._RELEASER.submit(lambda: None).result(timeout=10)
    assert _open_deleted("f.bin") == []
    assert f.read_bytes() == (b"O" * atomic._RELEASE_IN_BACKGROUND_BYTES if stale else b"new")
    check_nothing_left(ws)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd") or os.name != "posix", reason="reads /proc/self/fd")
@pytest.mark.parametrize("why", ["not held", "shutting down"])
def test_a_replaced_file_is_closed_in_the_call_where_it_cannot_be_held_or_handed_on(
    ws: Path, monkeypatch: pytest.MonkeyPatch, why: str
) -> None:
    """Windows (an open file cannot be renamed over: it is closed before the rename), and an
    interpreter shutting down (the releaser takes no more work: closed at once)."""
    if why == "not held":
        monkeypatch.setattr(atomic, "_HOLD_ACROSS_RENAME", False)
    else:
        stopped = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        stopped.shutdown()
        monkeypatch.setattr(atomic, "_RELEASER", stopped)
    f = ws / "f.bin"
    f.write_bytes(b"o" * atomic._RELEASE_IN_BACKGROUND_BYTES)
    assert replace_file(f, b"new", expect=snapshot(f), shown="f") == 3
    assert _open_deleted("f.bin") == [] and f.read_bytes() == b"new"


def test_a_symlink_at_the_target_and_a_socket_are_refused_with_their_sentences(
    ws: Path, outside: Path
) -> None:
    (ws / "l").symlink_to(outside / "secret.txt")
    err = write_error(lambda: replace_file(ws / "l", b"x", expect=Snapshot.absent(), shown="l"))
    assert (err.message, err.brief) == (
        "`l` was replaced by a symlink after its path was checked. Nothing was written.",
        "Failed to write file",
    )
    assert (outside / "secret.txt").read_text() == "OUTSIDE-CONTENT\n"
    os.mkfifo(ws / "p")
    err = write_error(lambda: replace_file(ws / "p", b"x", expect=Snapshot.absent(), shown="p"))
    assert (err.message, err.brief) == ("`p` is not a file.", "Invalid path")


@pytest.mark.parametrize("mode", [0o444, 0o400, 0o555])
def test_a_target_without_write_bits_is_read_only(ws: Path, mode: int) -> None:
    f = ws / "ro"
    f.write_text("x")
    f.chmod(mode)
    err = write_error(lambda: replace_file(f, b"y", expect=snapshot(f), shown="ro"))
    assert (err.message, err.brief) == (
        "`ro` is read-only (no write permission). Nothing was written. Make it writable first if it should change.",
        "Permission denied",
    )


@pytest.mark.parametrize("mode", [0o200, 0o020, 0o002, 0o644])
def test_any_write_bit_lets_root_write(ws: Path, mode: int) -> None:
    if os.geteuid() != 0:
        needs("root", "only root may write a file without the owner's write bit")
    f = ws / "rw"
    f.write_text("x")
    f.chmod(mode)
    assert replace_file(f, b"yy", expect=snapshot(f), shown="rw") == 2
    assert stat.S_IMODE(os.stat(f).st_mode) == mode


def test_a_missing_parent_is_named_and_created_on_request(ws: Path, temps: str) -> None:
    target = ws / "a" / "b" / "c.txt"
    err = write_error(lambda: replace_file(target, b"x", expect=Snapshot.absent(), shown="a/b/c.txt"))
    assert (err.message, err.brief) == (
        "`a/b/c.txt` parent directory does not exist.",
        "Parent directory not found",
    )
    assert not (ws / "a").exists()
    (ws / "a").mkdir()  # one level exists already
    assert replace_file(target, b"xyz", expect=Snapshot.absent(), shown="a/b/c.txt", create_dirs=True) == 3
    assert target.read_bytes() == b"xyz"
    check_nothing_left(ws / "a" / "b")


@pytest.mark.parametrize("taken_away", ["", "no-dirfd,no-proc,no-tmpfile,no-wc"])
def test_a_file_on_the_way_is_a_failure_not_a_crash(
    ws: Path, monkeypatch: pytest.MonkeyPatch, taken_away: str
) -> None:
    monkeypatch.setenv("FILEGATE_SIMULATE", taken_away)  # with dir_fd, and without (os.makedirs)
    (ws / "file").write_text("x")
    for create in (False, True):
        err = write_error(
            lambda c=create: replace_file(
                ws / "file" / "x.txt", b"x", expect=Snapshot.absent(), shown="file/x.txt", create_dirs=c
            )
        )
        assert err.message == (
            "`file/x.txt` changed while being written (a symlink or file appeared in its path). Nothing was written."
        )


def test_a_new_file_gets_the_umask_mode(ws: Path, temps: str) -> None:
    old = os.umask(0o027)
    try:
        replace_file(ws / "new.txt", b"n", expect=Snapshot.absent(), shown="new.txt")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(ws / "new.txt").st_mode) == 0o640
    check_nothing_left(ws)


def test_an_existing_file_keeps_its_owner_and_mode(ws: Path, temps: str) -> None:
    if os.geteuid() != 0:
        needs("root", "giving a file to another owner needs root")
    f = ws / "owned"
    f.write_text("x")
    os.chown(f, 4321, 4321)
    f.chmod(0o604)
    replace_file(f, b"new", expect=snapshot(f), shown="owned")
    st = os.stat(f)
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (4321, 4321, 0o604)
    check_nothing_left(ws)


def test_a_large_write_is_written_whole(ws: Path, temps: str) -> None:
    data = os.urandom(3 << 20)
    assert replace_file(ws / "big", data, expect=Snapshot.absent(), shown="big") == len(data)
    assert (ws / "big").read_bytes() == data


@pytest.mark.parametrize(
    ("err", "reason", "brief"),
    [
        (errno.ENOSPC, "no space left on device", "Failed to write file"),
        (errno.EDQUOT, "disk quota exceeded", "Failed to write file"),
        (
            errno.EFBIG,
            "file too large for the file system or the process's file size limit",
            "Failed to write file",
        ),
        (errno.EROFS, "read-only file system", "Failed to write file"),
        (errno.EACCES, "permission denied", "Permission denied"),
        (errno.EPERM, "operation not permitted", "Permission denied"),
        (errno.ENAMETOOLONG, "file name too long", "Failed to write file"),
        (errno.EISDIR, "it is a directory", "Failed to write file"),
        (errno.EIO, os.strerror(errno.EIO), "Failed to write file"),
    ],
)
def test_each_failure_has_its_reason_and_brief(err: int, reason: str, brief: str) -> None:
    got = atomic._failure("f.txt", OSError(err, os.strerror(err)))
    assert (got.message, got.brief) == (f"Failed to write `f.txt`: {reason}. Nothing was written.", brief)


def test_a_failure_without_an_errno_says_what_it_is() -> None:
    got = atomic._failure("f", OSError("odd"))
    assert got.message == "Failed to write `f`: odd. Nothing was written."
    for e in (errno.ELOOP, errno.ENOTDIR):
        assert "changed while being written" in atomic._failure("f", OSError(e, "x")).message


def test_too_long_a_name_is_a_failure(ws: Path, temps: str) -> None:
    err = write_error(lambda: replace_file(ws / ("n" * 256), b"x", expect=Snapshot.absent(), shown="n…"))
    assert err.message == "Failed to write `n…`: file name too long. Nothing was written."


def test_read_all_refuses_a_file_over_the_limit_with_its_size(ws: Path) -> None:
    f = ws / "f"
    f.write_bytes(b"abc")
    fd = os.open(f, os.O_RDONLY)
    try:
        err = write_error(lambda: read_all(fd, 2, "f"))
        assert (err.message, err.brief) == (
            "`f` is 3 bytes; filegate changes files of at most 2 bytes. Use shell tools for a file this large.",
            "File too large",
        )
        data, snap = read_all(fd, 3, "f")
        st = os.fstat(fd)
        assert data == b"abc"
        assert (snap.exists, snap.size, snap.mtime_ns, snap.digest()) == (
            True, 3, st.st_mtime_ns, hashlib.sha256(b"abc").hexdigest(),
        )  # fmt: skip
    finally:
        os.close(fd)


def test_snapshots() -> None:
    assert Snapshot.absent() == Snapshot(False, 0, 0) and Snapshot.absent().digest() == ""
    assert snapshots.sha256_hex(b"") == hashlib.sha256(b"").hexdigest()


def test_in_flight_temps_are_recorded_under_the_state_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert records.pending_dir() == tmp_path / "state" / "filegate" / "pending"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert records.pending_dir() == tmp_path / "home" / ".local" / "state" / "filegate" / "pending"
    monkeypatch.setenv("XDG_STATE_HOME", "")
    assert records.pending_dir() == tmp_path / "home" / ".local" / "state" / "filegate" / "pending"


def test_a_named_temp_is_recorded_while_it_exists(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if (
        not os.supports_dir_fd
    ):  # taken away at start-up (FILEGATE_SIMULATE=no-dirfd): these call the dir_fd path directly
        pytest.skip("dir_fd was taken away from this process at start-up and cannot come back")
    monkeypatch.setattr(atomic, "_TMPFILE", 0)
    dfd = os.open(ws, os.O_RDONLY)
    try:
        fd, name, record = atomic._create_temp(dfd, "f.txt", existing=True, directory=str(ws))
        os.close(fd)
        assert name is not None and name.startswith(".f.txt.") and name.endswith(TEMP_SUFFIX)
        assert record is not None and record.parent == records.pending_dir()
        assert record.name.startswith(f"{os.getpid()}-")
        assert record.read_bytes() == os.fsencode(ws / name)
        assert stat.S_IMODE(os.stat(ws / name).st_mode) == 0o600
        records.clear_pending(record)
        assert not record.exists()
    finally:
        os.close(dfd)


def test_without_a_writable_state_dir_a_write_still_happens(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(atomic, "_TMPFILE", 0)
    (ws / "state-file").write_text("not a directory")
    monkeypatch.setenv("XDG_STATE_HOME", str(ws / "state-file"))
    assert replace_file(ws / "f", b"ok", expect=Snapshot.absent(), shown="f") == 2
    assert (ws / "f").read_bytes() == b"ok"
    assert sorted(p.name for p in ws.iterdir()) == ["f", "state-file"]


def test_the_sweep_without_records_removes_nothing() -> None:
    assert not records.pending_dir().exists()
    assert records.sweep_pending_temps() == 0


def test_this_process_is_alive() -> None:
    from filegate.fsio.platform import process_alive

    assert process_alive(os.getpid())
    assert process_alive(1)  # pid 1 is there (as another user's: EPERM still means alive)


async def test_one_writer_per_path_and_the_lock_is_dropped_after() -> None:
    locks = PathLocks()
    order: list[str] = []
    entered = asyncio.Event()
    release = asyncio.Event()

    async def first() -> None:
        async with locks.hold(Path("/a")):
            order.append("first in")
            entered.set()
            await release.wait()
            order.append("first out")

    async def second() -> None:
        await entered.wait()
        async with locks.hold(Path("/a")):
            order.append("second in")

    async def other() -> None:
        await entered.wait()
        async with locks.hold(Path("/b")):
            order.append("other path")

    t1 = asyncio.create_task(first())
    t2 = asyncio.create_task(second())
    t3 = asyncio.create_task(other())
    await t3  # another path does not wait
    assert order == ["first in", "other path"]
    for _ in range(5):
        await asyncio.sleep(0)
    assert len(locks) == 1 and locks._locks["/a"][1] == 2  # one holds, one waits
    release.set()
    await asyncio.gather(t1, t2)
    assert order == ["first in", "other path", "first out", "second in"]
    assert len(locks) == 0


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads a /proc file (fstat size 0): Linux only")
def test_read_all_refuses_a_file_that_grows_past_the_limit_while_read() -> None:
    fd = os.open("/proc/self/maps", os.O_RDONLY)  # fstat says 0 bytes; it holds more than 16
    try:
        err = write_error(lambda: read_all(fd, 16, "maps"))
        assert (err.message, err.brief) == (
            "`maps` is 17 bytes; filegate changes files of at most 16 bytes. Use shell tools for a file this large.",
            "File too large",
        )
    finally:
        os.close(fd)


def status(mtime_ns: int, ctime_ns: int) -> os.stat_result:
    """A file status with these timestamps (a value, as the OS would return it)."""
    fields = list(range(19))
    fields[14], fields[15] = mtime_ns, ctime_ns
    return os.stat_result(fields)


@pytest.mark.parametrize(
    ("mtime_ns", "ctime_ns", "settle"),
    [
        (5_000_000_000, 7_000_000_000, snapshots.SETTLED_COARSE_NS),  # whole seconds both: a coarse clock
        (5_000_000_000, 7_000_000_001, snapshots.SETTLED_NS),
        (5_000_000_001, 7_000_000_000, snapshots.SETTLED_NS),
        (0, 0, snapshots.SETTLED_COARSE_NS),
    ],
)
def test_a_coarse_clock_needs_two_seconds_to_settle(mtime_ns: int, ctime_ns: int, settle: int) -> None:
    assert snapshots._settle_time(status(mtime_ns, ctime_ns)) == settle
    assert (snapshots.SETTLED_NS, snapshots.SETTLED_COARSE_NS) == (50_000_000, 2_000_000_000)


def test_a_snapshot_settles_strictly_after_the_settle_time(ws: Path) -> None:
    f = ws / "f"
    f.write_bytes(b"data")
    st = os.stat(f)
    changed = max(st.st_mtime_ns, st.st_ctime_ns)
    settle = snapshots._settle_time(st)
    fd = os.open(f, os.O_RDONLY)
    try:
        at_edge = read_all(fd, 100, "f", now_ns=changed + settle)[1]
        past_it = read_all(fd, 100, "f", now_ns=changed + settle + 1)[1]
    finally:
        os.close(fd)
    assert not at_edge.settled and at_edge.content == b"data"  # compared
    assert past_it.settled and past_it.digest() == snapshots.sha256_hex(b"data")
    assert (past_it.dev, past_it.ino, past_it.ctime_ns) == (st.st_dev, st.st_ino, st.st_ctime_ns)
    assert past_it.same_status(os.stat(f))
    assert not at_edge.same_status(os.stat(f))  # never settled: always hashed


def dead_pid() -> int:
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True
    )
    return int(proc.stdout)


def test_the_sweep_counts_every_temp_it_removes_and_drops_stale_records(ws: Path) -> None:
    pending = records.pending_dir()
    pending.mkdir(parents=True)
    pid = dead_pid()
    temps = [ws / f".t{i}.0123456789abcdef{TEMP_SUFFIX}" for i in range(3)]
    for i, t in enumerate(temps):
        t.write_text("half")
        (pending / (f"{pid}-{i}" if i else f"{pid}")).write_bytes(os.fsencode(t))
    (pending / f"{pid}-gone").write_bytes(os.fsencode(ws / f".gone.0123456789abcdef{TEMP_SUFFIX}"))
    assert records.sweep_pending_temps() == 3
    assert not any(t.exists() for t in temps)
    assert list(pending.iterdir()) == []


def test_successive_named_temps_are_each_recorded(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if (
        not os.supports_dir_fd
    ):  # taken away at start-up (FILEGATE_SIMULATE=no-dirfd): these call the dir_fd path directly
        pytest.skip("dir_fd was taken away from this process at start-up and cannot come back")
    monkeypatch.setattr(atomic, "_TMPFILE", 0)
    dfd = os.open(ws, os.O_RDONLY)
    try:
        made = [atomic._create_temp(dfd, "f", existing=False, directory=str(ws)) for _ in range(2)]
    finally:
        os.close(dfd)
    for fd, _, _ in made:
        os.close(fd)
    names = {name for _, name, _ in made}
    records = [record for _, _, record in made]
    assert len(names) == 2 and all(r is not None and r.exists() for r in records)
    assert {os.fsdecode(r.read_bytes()) for r in records if r is not None} == {
        str(ws / n) for n in names if n
    }


def flocked(path: Path) -> bool:
    """Whether another open file description holds an flock on ``path``."""
    import fcntl

    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


async def test_a_path_lock_is_an_flock_other_processes_see(ws: Path) -> None:
    target = ws / "f.txt"
    lock_file = locks.lock_dir() / hashlib.sha256(os.fsencode(str(target))).hexdigest()[:32]
    assert locks.lock_dir() == records.pending_dir().parent / "locks"
    mine, replica = PathLocks(), PathLocks()  # two servers: each its own open file description
    order: list[str] = []

    async def the_replica() -> None:
        async with replica.hold(target):
            order.append("replica in")

    async with mine.hold(target):
        assert flocked(lock_file)
        assert stat.S_IMODE(os.stat(lock_file).st_mode) == 0o600
        waiting = asyncio.create_task(the_replica())
        for _ in range(20):
            await asyncio.sleep(0)
        assert order == []  # it cannot get in while the flock is held
        order.append("mine out")
    await waiting
    assert order == ["mine out", "replica in"]
    assert not lock_file.exists()  # removed by its last holder: no file per path ever written
    assert len(mine) == 0 and len(replica) == 0


async def test_a_waiter_on_a_removed_lock_file_starts_over_on_the_new_one(ws: Path) -> None:
    """Three servers on one path: the second waits on the first's lock file, which the first
    removes on release; the second must not then hold a lock on a name that is gone while a
    third locks a new file at that name — they would both write."""
    target = ws / "f.txt"
    lock_file = locks.lock_dir() / hashlib.sha256(os.fsencode(str(target))).hexdigest()[:32]
    first, second, third = PathLocks(), PathLocks(), PathLocks()
    inside: list[str] = []
    overlaps: list[tuple[str, ...]] = []

    async def enter(name: str, locks: PathLocks) -> None:
        async with locks.hold(target):
            if inside:
                overlaps.append((*inside, name))
            inside.append(name)
            assert flocked(lock_file)  # the lock it holds is on the file at the name
            for _ in range(5):
                await asyncio.sleep(0.005)
            inside.remove(name)

    async with first.hold(target):
        waiting = asyncio.create_task(enter("second", second))
        for _ in range(20):
            await asyncio.sleep(0)
    # the first released (and removed the file); the third arrives while the second may be
    # between its flock and its check
    await asyncio.gather(waiting, enter("third", third))
    assert overlaps == []
    assert not lock_file.exists()


async def test_without_a_state_dir_only_the_process_lock_is_taken(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (ws / "state").write_text("a file, not a directory")
    monkeypatch.setenv("XDG_STATE_HOME", str(ws / "state"))
    assert await locks._lock_file("/x", time.monotonic() + 1, 1.0) is None
    async with PathLocks().hold(ws / "f"):
        pass
