"""The portable fallbacks of fsio (issue 15) run for real at their seam (issue 17 item 1).

Each test takes a facility away with ``FILEGATE_SIMULATE`` (set per test through monkeypatch)
and checks what the fallback does on real files: reopening an open file by its path, opening
without ``dir_fd``, writing through a named temp and sweeping it after its writer died.
"""

from __future__ import annotations

import fcntl
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from filegate.errors import PathError, WriteError
from filegate.fsio import atomic, platform
from filegate.fsio import pending as records
from filegate.fsio.atomic import replace_file
from filegate.fsio.pending import TEMP_SUFFIX, sweep_pending_temps
from filegate.fsio.safeopen import open_directory, open_regular
from filegate.fsio.snapshot import Snapshot
from filegate.policy.workspace import Workspace

ALL = ",".join(platform.FACILITIES)
linux_only = pytest.mark.skipif(
    sys.platform != "linux" or not os.path.isdir(platform.PROC_FD), reason="about Linux's facilities"
)


def simulate(monkeypatch: pytest.MonkeyPatch, taken_away: str) -> None:
    monkeypatch.setenv(platform.SIMULATE_ENV, taken_away)


def dead_pid() -> int:
    proc = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True
    )
    return int(proc.stdout)


@linux_only
def test_linux_has_every_facility_until_one_is_taken_away(monkeypatch: pytest.MonkeyPatch) -> None:
    if not os.supports_dir_fd:  # taken away at start-up (FILEGATE_SIMULATE=no-dirfd): for good
        pytest.skip("dir_fd was taken away from this process at start-up and cannot come back")
    monkeypatch.delenv(platform.SIMULATE_ENV, raising=False)
    assert platform.has_dir_fd() and platform.has_proc() and platform.has_tmpfile() and platform.has_wc()
    simulate(monkeypatch, "no-proc")  # O_TMPFILE's temp is named through /proc: it goes too
    assert platform.has_dir_fd() and not platform.has_tmpfile() and platform.has_wc()


# --- reopening an open file: /proc, or its final path checked to be the same file ----------


@pytest.mark.parametrize("taken_away", ["", "no-proc"])
def test_a_reopened_file_is_the_same_file_with_its_own_offset(
    ws: Path, monkeypatch: pytest.MonkeyPatch, taken_away: str
) -> None:
    simulate(monkeypatch, taken_away)
    (ws / "f").write_bytes(b"0123456789")
    fd = os.open(ws / "f", os.O_RDONLY)
    try:
        os.lseek(fd, 7, os.SEEK_SET)
        own = platform.reopen(fd, os.O_RDONLY)
        assert own is not None
        try:
            assert os.read(own, 4) == b"0123"  # from its own start, readable
            assert os.lseek(fd, 0, os.SEEK_CUR) == 7
            assert os.path.samestat(os.fstat(own), os.fstat(fd))
        finally:
            os.close(own)
    finally:
        os.close(fd)


@linux_only
def test_with_proc_a_deleted_file_is_still_reopened(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(platform.SIMULATE_ENV, raising=False)
    (ws / "f").write_bytes(b"still here")
    fd = os.open(ws / "f", os.O_RDONLY)
    try:
        (ws / "f").unlink()
        own = platform.reopen(fd, os.O_RDONLY)
        assert own is not None
        assert os.read(own, 100) == b"still here"
        os.close(own)
    finally:
        os.close(fd)


@linux_only
def test_without_proc_a_deleted_file_is_not_reopened_through_a_file_named_like_its_ghost(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # By path, a deleted file is named "<path> (deleted)": a cloned repository may hold a file
    # of exactly that name. The fallback must see it is another file and give up.
    simulate(monkeypatch, "no-proc")
    (ws / "f").write_bytes(b"the real one")
    fd = os.open(ws / "f", os.O_RDONLY)
    try:
        (ws / "f").unlink()
        ghost = platform.fd_path(fd)
        assert ghost == f"{ws / 'f'} (deleted)"
        Path(ghost).write_bytes(b"an impostor")
        assert platform.reopen(fd, os.O_RDONLY) is None
    finally:
        os.close(fd)


@pytest.mark.parametrize("taken_away", ["", "no-proc"])
def test_a_file_that_cannot_be_reopened_so_gives_none(
    ws: Path, monkeypatch: pytest.MonkeyPatch, taken_away: str
) -> None:
    simulate(monkeypatch, taken_away)
    fd = os.open(ws, os.O_RDONLY)
    try:
        assert platform.reopen(fd, os.O_WRONLY) is None  # a directory is not opened for writing
        assert platform.fd_path(-1) is None  # no such descriptor
    finally:
        os.close(fd)


@pytest.mark.skipif(hasattr(fcntl, "F_GETPATH"), reason="macOS names a handle with F_GETPATH")
def test_f_getpath_is_no_answer_where_the_os_has_no_f_getpath(ws: Path) -> None:
    fd = os.open(ws, os.O_RDONLY)
    try:
        assert platform._f_getpath(fd) is None
    finally:
        os.close(fd)


@pytest.mark.parametrize(
    ("final", "compared"),
    [
        ("\\\\?\\C:\\Users\\me\\w\\f.txt", "C:\\Users\\me\\w\\f.txt"),
        ("\\\\?\\UNC\\server\\share\\w\\f.txt", "\\\\server\\share\\w\\f.txt"),
        ("\\\\?\\Volume{0b1e}\\f.txt", "Volume{0b1e}\\f.txt"),
        ("C:\\plain", "C:\\plain"),
        ("\\\\server\\share\\f", "\\\\server\\share\\f"),
    ],
)
def test_windows_final_paths_lose_their_long_path_prefix(final: str, compared: str) -> None:
    assert platform._from_final_path(final) == compared


# --- opening without dir_fd ------------------------------------------------------------------


def test_without_dir_fd_a_directory_is_opened_and_a_file_is_not_a_directory(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    simulate(monkeypatch, ALL)
    (ws / "d").mkdir()
    (ws / "d" / "f").write_bytes(b"x")
    fd = open_directory(Workspace(ws).resolve("d"))
    try:
        assert stat.S_ISDIR(os.fstat(fd).st_mode)
        assert sorted(os.listdir(fd)) == ["f"]
    finally:
        os.close(fd)
    with pytest.raises(PathError):
        open_directory(Workspace(ws).resolve("d/f"))
    fd = open_regular(Workspace(ws).resolve("d/f"))
    try:
        assert os.read(fd, 10) == b"x"
    finally:
        os.close(fd)


# --- writing: named temps, their records, the sweep -------------------------------------------


@pytest.mark.parametrize("taken_away", ["no-tmpfile", ALL])
def test_a_named_temp_is_recorded_while_it_exists_and_swept_if_its_writer_died(
    ws: Path, monkeypatch: pytest.MonkeyPatch, taken_away: str
) -> None:
    simulate(monkeypatch, taken_away)
    dfd: int | None = os.open(ws, os.O_RDONLY) if platform.has_dir_fd() else None
    name = "f.txt" if dfd is not None else str(ws / "f.txt")
    try:
        fd, temp, record = atomic._create_temp(dfd, name, existing=False)
        os.close(fd)
    finally:
        if dfd is not None:
            os.close(dfd)
    assert temp is not None and record is not None
    made = [p for p in ws.iterdir() if p.name.endswith(TEMP_SUFFIX)]
    assert len(made) == 1 and made[0].name.startswith(".f.txt.")
    assert record.parent == records.pending_dir()
    assert os.fsdecode(record.read_bytes()) == str(made[0])  # the full path, for the sweep
    assert sweep_pending_temps() == 0  # its writer (this process) is alive
    record.rename(record.with_name(f"{dead_pid()}-{record.name.split('-', 1)[1]}"))
    assert sweep_pending_temps() == 1
    assert list(ws.iterdir()) == [] and list(records.pending_dir().iterdir()) == []


@pytest.mark.parametrize("taken_away", ["no-dirfd", "no-tmpfile", "no-proc", ALL])
def test_each_missing_facility_still_writes_atomically_and_leaves_nothing(
    ws: Path, monkeypatch: pytest.MonkeyPatch, taken_away: str
) -> None:
    simulate(monkeypatch, taken_away)
    (ws / "f.txt").write_bytes(b"old")
    inode = os.stat(ws / "f.txt").st_ino
    expect = Snapshot.of(b"old", os.stat(ws / "f.txt"))
    assert replace_file(ws / "f.txt", b"new!", expect=expect, shown="f.txt") == 4
    assert (ws / "f.txt").read_bytes() == b"new!" and os.stat(ws / "f.txt").st_ino != inode
    assert (
        replace_file(ws / "n" / "new.txt", b"n", expect=Snapshot.absent(), shown="n", create_dirs=True) == 1
    )
    assert sorted(p.name for p in ws.iterdir()) == ["f.txt", "n"]
    assert [p.name for p in (ws / "n").iterdir()] == ["new.txt"]
    assert list(records.pending_dir().glob("*")) == []


def check_write_through_a_swapped_parent(ws: Path, outside: Path) -> None:
    (ws / "d").symlink_to(outside)  # swapped in after the path was resolved
    with pytest.raises(WriteError, match="changed while being written"):
        replace_file(ws / "d" / "x" / "new.txt", b"PWNED", expect=Snapshot.absent(), shown="d/x/new.txt",
                     create_dirs=True)  # fmt: skip
    assert not (outside / "x" / "new.txt").exists()


@pytest.mark.parametrize("taken_away", ["", ALL])
def test_directories_made_for_a_write_do_not_lead_it_through_a_symlink(
    ws: Path, outside: Path, monkeypatch: pytest.MonkeyPatch, taken_away: str
) -> None:
    simulate(monkeypatch, taken_away)
    check_write_through_a_swapped_parent(ws, outside)


@pytest.mark.parametrize(
    "taken_away",
    [
        "",
        ALL,  # without dir_fd: each directory made is checked where it landed, and removed there
    ],
)
def test_directories_made_for_a_write_are_not_made_through_a_symlink(
    ws: Path, outside: Path, monkeypatch: pytest.MonkeyPatch, taken_away: str
) -> None:
    simulate(monkeypatch, taken_away)
    check_write_through_a_swapped_parent(ws, outside)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_directories_made_for_a_write_are_not_made_through_a_symlink_where_handles_have_no_name(
    ws: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An OS that cannot name an open directory (simulated): the made directory's path must
    still resolve to itself, else it is removed by that same path."""
    simulate(monkeypatch, ALL)
    monkeypatch.setattr(platform, "fd_path", lambda fd: None)
    check_write_through_a_swapped_parent(ws, outside)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


@pytest.mark.parametrize("taken_away", ["", ALL])
def test_directories_made_for_a_write_get_the_umask_mode(
    ws: Path, monkeypatch: pytest.MonkeyPatch, taken_away: str
) -> None:
    simulate(monkeypatch, taken_away)
    old = os.umask(0o002)
    try:
        replace_file(ws / "a" / "b" / "n.txt", b"n", expect=Snapshot.absent(), shown="n", create_dirs=True)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(ws / "a").st_mode) == 0o775
    assert stat.S_IMODE(os.stat(ws / "a" / "b").st_mode) == 0o775
    assert stat.S_IMODE(os.stat(ws / "a" / "b" / "n.txt").st_mode) == 0o664


def test_without_dir_fd_an_interruption_just_after_the_rename_keeps_the_written_file(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rename landed, then an interruption (Ctrl-C, a cancelled task) came before the write
    noted it: the temp's clean-up finds the handle under the target's name now and must not
    delete the target (it did: the written file was gone). Fault injection: os.replace renames,
    then raises."""
    simulate(monkeypatch, "no-dirfd")
    target = ws / "f.txt"
    target.write_bytes(b"old\n")
    real = os.replace

    def renamed_then_interrupted(src: object, dst: object, *args: object, **kw: object) -> None:
        real(src, dst, *args, **kw)  # type: ignore[arg-type]
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic.os, "replace", renamed_then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        replace_file(target, b"new\n", expect=Snapshot.of(b"old\n", os.stat(target)), shown="f.txt")
    assert target.read_bytes() == b"new\n"
    assert [p.name for p in ws.iterdir()] == ["f.txt"]
