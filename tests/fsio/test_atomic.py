"""fsio.atomic at its seam, without a server: the replacement itself and each defence against
a target that moved between the read and the rename (SPEC §2.5, §2.10, §4)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from filegate.errors import WriteError
from filegate.fsio import atomic, platform
from filegate.fsio import pending as records
from filegate.fsio.atomic import replace_file
from filegate.fsio.pending import TEMP_SUFFIX, sweep_pending_temps
from filegate.fsio.snapshot import Snapshot, read_all, sha256_hex


def snapshot(path: Path) -> Snapshot:
    return Snapshot.of(path.read_bytes(), os.stat(path))


def leftovers(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name.endswith(TEMP_SUFFIX))


@pytest.fixture(params=["tmpfile", "named"])
def temps(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both temp strategies: O_TMPFILE, and named temps (a system without O_TMPFILE)."""
    if request.param == "named":
        monkeypatch.setattr(atomic, "_TMPFILE", 0)
    return str(request.param)


def test_replace_writes_the_new_bytes_and_keeps_the_mode(ws: Path, temps: str) -> None:
    f = ws / "f.txt"
    f.write_bytes(b"old\n")
    f.chmod(0o640)
    inode = os.stat(f).st_ino
    assert replace_file(f, b"new content\n", expect=snapshot(f), shown="f.txt") == 12
    assert f.read_bytes() == b"new content\n"
    assert os.stat(f).st_mode & 0o777 == 0o640
    assert os.stat(f).st_ino != inode  # a new file renamed over the old one, not written in place
    assert leftovers(ws) == [] and list(records.pending_dir().glob("*")) == []


def test_create_a_new_file_and_its_directories(ws: Path, temps: str) -> None:
    f = ws / "a" / "b" / "new.txt"
    with pytest.raises(WriteError, match="parent directory does not exist"):
        replace_file(f, b"x", expect=Snapshot.absent(), shown="a/b/new.txt")
    assert replace_file(f, b"x", expect=Snapshot.absent(), shown="a/b/new.txt", create_dirs=True) == 1
    assert f.read_bytes() == b"x"


def test_a_symlink_swapped_in_for_the_target_is_not_written_through(
    ws: Path, outside: Path, temps: str
) -> None:
    f = ws / "f.txt"
    f.write_text("mine")
    expect = snapshot(f)
    f.unlink()
    f.symlink_to(outside / "secret.txt")
    with pytest.raises(WriteError, match="replaced by a symlink"):
        replace_file(f, b"PWNED", expect=expect, shown="f.txt")
    assert (outside / "secret.txt").read_text() == "OUTSIDE-CONTENT\n"
    assert f.is_symlink()


def test_a_symlink_swapped_in_for_a_parent_is_not_written_through(
    ws: Path, outside: Path, temps: str
) -> None:
    (ws / "d").mkdir()
    f = ws / "d" / "secret.txt"
    f.write_text("mine")
    expect = snapshot(f)
    (ws / "d").rename(ws / "d-old")
    (ws / "d").symlink_to(outside)
    with pytest.raises(WriteError, match="symlink"):
        replace_file(f, b"PWNED", expect=expect, shown="d/secret.txt")
    assert (outside / "secret.txt").read_text() == "OUTSIDE-CONTENT\n"


def test_a_target_replaced_by_another_content_is_not_overwritten(ws: Path, temps: str) -> None:
    f = ws / "f.txt"
    f.write_text("original")
    expect = snapshot(f)
    (ws / "other").write_text("someone else's work, longer")
    os.rename(ws / "other", f)
    with pytest.raises(WriteError, match=r"changed on disk .*size or modification time"):
        replace_file(f, b"mine", expect=expect, shown="f.txt")
    assert f.read_text() == "someone else's work, longer"


def test_a_deleted_target_is_not_recreated(ws: Path, temps: str) -> None:
    f = ws / "f.txt"
    f.write_text("original")
    expect = snapshot(f)
    f.unlink()
    with pytest.raises(WriteError, match="it was deleted"):
        replace_file(f, b"mine", expect=expect, shown="f.txt")
    assert not f.exists() and leftovers(ws) == []


def test_a_file_created_meanwhile_is_not_overwritten(ws: Path, temps: str) -> None:
    f = ws / "f.txt"
    f.write_text("theirs")
    with pytest.raises(WriteError, match="created by someone else"):
        replace_file(f, b"mine", expect=Snapshot.absent(), shown="f.txt")
    assert f.read_text() == "theirs"


def test_a_change_at_the_same_size_and_mtime_is_caught_by_the_comparison(ws: Path, temps: str) -> None:
    f = ws / "f.txt"
    f.write_text("AAAA")
    expect = snapshot(f)
    st = os.stat(f)
    f.write_text("BBBB")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (os.stat(f).st_size, os.stat(f).st_mtime_ns) == (expect.size, expect.mtime_ns)
    with pytest.raises(WriteError, match="its content changed"):
        replace_file(f, b"mine", expect=expect, shown="f.txt")
    assert f.read_text() == "BBBB"


def test_a_directory_or_fifo_at_the_target_is_not_a_file(ws: Path) -> None:
    (ws / "d").mkdir()
    os.mkfifo(ws / "p")
    for name in ("d", "p"):
        with pytest.raises(WriteError, match="is not a file"):
            replace_file(ws / name, b"x", expect=Snapshot.absent(), shown=name)


def test_a_read_only_target_is_refused_even_for_root(ws: Path) -> None:
    f = ws / "ro.txt"
    f.write_text("x")
    f.chmod(0o444)
    with pytest.raises(WriteError, match="read-only"):
        replace_file(f, b"y", expect=snapshot(f), shown="ro.txt")
    assert f.read_text() == "x"


def test_a_long_multibyte_name_still_gets_a_temp_name_within_name_max(ws: Path, temps: str) -> None:
    name = "\u00e9" * 120  # 240 bytes: a legal name whose temp name must be cut by bytes
    f = ws / name
    f.write_text("old")
    replace_file(f, b"new", expect=snapshot(f), shown=name)
    assert f.read_text() == "new"
    assert len(os.fsencode(atomic._temp_name(name))) <= 255


def test_an_undecodable_name_is_written_and_recorded(ws: Path, temps: str) -> None:
    raw = os.fsencode(ws) + b"/caf\xe9.py"
    with open(raw, "wb") as fh:
        fh.write(b"old")
    f = Path(os.fsdecode(raw))
    replace_file(f, b"new", expect=snapshot(f), shown="caf\\xe9.py")
    assert f.read_bytes() == b"new"


def test_read_all_gives_the_bytes_and_a_snapshot_and_refuses_past_the_limit(ws: Path) -> None:
    f = ws / "f.bin"
    f.write_bytes(b"x" * 100)
    fd = os.open(f, os.O_RDONLY)
    try:
        data, snap = read_all(fd, 100, "f.bin")
        assert data == b"x" * 100 and snap == snapshot(f)
        with pytest.raises(WriteError, match="is 100 bytes; filegate changes files of at most 99 bytes"):
            read_all(fd, 99, "f.bin")
    finally:
        os.close(fd)


# --- a dead writer's named temp -----------------------------------------------------------


def dead_pid() -> int:
    proc = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True
    )
    return int(proc.stdout)


def test_a_dead_writers_temp_is_swept_and_a_live_ones_kept(ws: Path) -> None:
    pending = records.pending_dir()
    pending.mkdir(parents=True)
    dead_temp = ws / f".f.txt.0123456789abcdef{TEMP_SUFFIX}"
    live_temp = ws / f".g.txt.0123456789abcdef{TEMP_SUFFIX}"
    dead_temp.write_text("half")
    live_temp.write_text("in flight")
    (pending / f"{dead_pid()}-aa").write_bytes(os.fsencode(dead_temp))
    (pending / f"{os.getpid()}-bb").write_bytes(os.fsencode(live_temp))
    assert sweep_pending_temps() == 1
    assert not dead_temp.exists() and live_temp.exists()
    assert sorted(p.name for p in pending.iterdir()) == [f"{os.getpid()}-bb"]


def test_a_temp_left_by_a_former_life_of_this_process_number_is_swept(ws: Path) -> None:
    """A restarted container's filegate often has its predecessor's number: a temp that one
    left is still swept, as its record names the writer's life (boot and start), not its
    number alone. This life's own temp stays."""
    pending = records.pending_dir()
    pending.mkdir(parents=True)
    life = platform.process_life()
    if not life:
        pytest.skip("no /proc here to tell one life of a process number from another")
    boot, ticks = life.split(".")
    former, current = (
        ws / f".f.txt.0123456789abcdef{TEMP_SUFFIX}",
        ws / f".g.txt.0123456789abcdef{TEMP_SUFFIX}",
    )
    former.write_text("half")
    current.write_text("in flight")
    (pending / f"{os.getpid()}-{boot}.{int(ticks) - 1}.aa").write_bytes(os.fsencode(former))
    (pending / f"{os.getpid()}-{life}.bb").write_bytes(os.fsencode(current))
    assert sweep_pending_temps() == 1
    assert not former.exists() and current.exists()


def test_the_sweep_removes_only_regular_temp_files(ws: Path, outside: Path) -> None:
    """A record is a path in a file: it must never delete what is not one of our temps."""
    pending = records.pending_dir()
    pending.mkdir(parents=True)
    link = ws / f".l.0123456789abcdef{TEMP_SUFFIX}"
    link.symlink_to(outside / "secret.txt")
    pid = dead_pid()
    (pending / f"{pid}-1").write_bytes(os.fsencode(outside / "secret.txt"))  # not a temp name
    (pending / f"{pid}-2").write_bytes(os.fsencode(link))  # a temp name, but a symlink
    (pending / "not-a-pid").write_text(str(outside / "secret.txt"))
    assert sweep_pending_temps() == 0
    assert (outside / "secret.txt").exists() and link.is_symlink()


def test_the_sweep_takes_an_undecodable_temp_name(ws: Path) -> None:
    pending = records.pending_dir()
    pending.mkdir(parents=True)
    temp = os.fsencode(ws) + b"/.caf\xe9.0123456789abcdef" + TEMP_SUFFIX.encode()
    with open(temp, "wb") as fh:
        fh.write(b"half")
    (pending / f"{dead_pid()}-cc").write_bytes(temp)
    assert sweep_pending_temps() == 1
    assert not os.path.exists(temp)


# --- the status check: a settled snapshot is not hashed again (issue 13) -------------------


def read_snapshot(path: Path, now_ns: int | None = None) -> Snapshot:
    fd = os.open(path, os.O_RDONLY)
    try:
        return read_all(fd, 1 << 20, path.name, now_ns=now_ns)[1]
    finally:
        os.close(fd)


def later(path: Path) -> int:
    """A clock at which the file's last change is long settled."""
    return os.stat(path).st_ctime_ns + 10 * 1_000_000_000


def test_a_file_changed_just_before_it_was_read_is_compared_by_content(ws: Path, temps: str) -> None:
    """Its status proves nothing, so the write-time check compares the file with the bytes
    read, byte for byte: nothing is hashed, neither when read nor when written (issue 13.3)."""
    f = ws / "f.txt"
    f.write_text("fresh")
    snap = read_snapshot(f, now_ns=os.stat(f).st_ctime_ns)  # read in the tick of its change
    assert not snap.settled and snap.content == b"fresh"
    assert replace_file(f, b"new", expect=snap, shown="f.txt") == 3
    assert f.read_bytes() == b"new"
    assert snap.digest() == sha256_hex(b"fresh")  # a question's binding, on demand


def test_a_settled_unchanged_file_is_written_without_hashing_it(ws: Path, temps: str) -> None:
    f = ws / "f.txt"
    f.write_text("old")
    snap = read_snapshot(f, now_ns=later(f))
    assert snap.settled
    assert replace_file(f, b"new", expect=snap, shown="f.txt") == 3
    assert f.read_bytes() == b"new"


def test_a_same_size_change_with_mtime_restored_after_a_settled_read_is_caught(ws: Path, temps: str) -> None:
    """ctime cannot be set back: the status differs, so the content is hashed and compared."""
    f = ws / "f.txt"
    f.write_text("AAAA")
    snap = read_snapshot(f, now_ns=later(f))
    assert snap.settled
    st = os.stat(f)
    # Rewritten until the clock has ticked (kernels without fine-grained ctime may put a change
    # in the read's tick, which a real, unfaked read's settling time rules out).
    while os.stat(f).st_ctime_ns == snap.ctime_ns:
        f.write_text("BBBB")
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (os.stat(f).st_size, os.stat(f).st_mtime_ns) == (snap.size, snap.mtime_ns)
    with pytest.raises(WriteError, match="its content changed"):
        replace_file(f, b"mine", expect=snap, shown="f.txt")
    assert f.read_text() == "BBBB"


def test_a_status_only_change_after_a_settled_read_still_writes(ws: Path, temps: str) -> None:
    """A chmod changes ctime but not the content: compared with the bytes read, it is the same
    (compared, not hashed: issue 13.3)."""
    f = ws / "f.txt"
    f.write_text("same")
    snap = read_snapshot(f, now_ns=later(f))
    f.chmod(0o640)
    assert replace_file(f, b"new", expect=snap, shown="f.txt") == 3
    assert f.read_bytes() == b"new"


def test_the_temp_file_and_then_its_directory_are_fsynced(
    ws: Path, temps: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Durability (SPEC §2.5): the new bytes are on disk before the rename makes them the file's
    (else power loss can leave an empty file under the old name), and the rename itself is on
    disk (the directory's fsync) before the write is reported done. A spy (a recording shim
    around the real ``os.fsync``: the real call still runs) notes what each call synced and
    what the target held at that moment."""
    import stat as stat_module

    from filegate.fsio import platform

    f = ws / "f.txt"
    f.write_bytes(b"old\n")
    old_ino, dir_ino = os.stat(f).st_ino, os.stat(ws).st_ino
    real_fsync = os.fsync
    synced: list[tuple[str, int, int, bytes]] = []  # kind, inode, size, what the target held

    def fsync_spy(fd: int) -> None:
        st = os.fstat(fd)
        kind = "dir" if stat_module.S_ISDIR(st.st_mode) else "file"
        synced.append((kind, st.st_ino, st.st_size, f.read_bytes()))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync_spy)
    replace_file(f, b"new content\n", expect=snapshot(f), shown="f.txt")
    new_ino = os.stat(f).st_ino
    assert new_ino != old_ino and f.read_bytes() == b"new content\n"
    temp = [i for i, s in enumerate(synced) if s[:3] == ("file", new_ino, 12)]
    assert temp and synced[temp[0]][3] == b"old\n", synced  # the temp, before the rename
    if not platform.has_dir_fd():
        return  # no directory handle to sync without dir_fd (the fallback's gap, docs/TESTING.md)
    directory = [i for i, s in enumerate(synced) if s[:2] == ("dir", dir_ino)]
    assert directory and directory[-1] > temp[0], synced
    assert synced[directory[-1]][3] == b"new content\n"  # after the rename


def test_a_delete_says_delete_in_its_failure_and_in_a_removal_not_made_durable(tmp_path: Path) -> None:
    """A removal is told as one: "Failed to delete" when it did not happen, and "was deleted, but
    making the change durable failed" (brief "Deleted, not durable") when the unlink landed and
    what came after it failed; never "Failed to write" nor "Written"."""
    import errno

    f = tmp_path / "f.txt"
    f.write_text("x\n")

    def after_unlink() -> None:
        raise OSError(errno.EIO, "Input/output error")

    with pytest.raises(WriteError) as landed:
        atomic.remove_file(f, expect=snapshot(f), shown="f.txt", removed=after_unlink)
    assert landed.value.message.startswith("`f.txt` was deleted, but making the change durable failed: ")
    assert landed.value.brief == "Deleted, not durable"
    assert not f.exists()
    gone = tmp_path / "no-such-folder" / "g.txt"
    with pytest.raises(WriteError) as refused:
        atomic.remove_file(gone, expect=Snapshot(False), shown="g.txt")
    assert "delete" in refused.value.message.lower() and "write" not in refused.value.brief.lower(), (
        refused.value.message,
        refused.value.brief,
    )
