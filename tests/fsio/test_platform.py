"""The platform facilities and their portable fallbacks (issue 15 item 4), on real files.

``FILEGATE_SIMULATE`` takes Linux's facilities away inside filegate; these tests set it per test
and check that the fallback really runs (and still refuses a swapped path). The whole fsio /
policy / tools suites also run with it set (CI's simulated-platform job).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from filegate.errors import PathError, WriteError
from filegate.fsio import atomic, linecount, platform
from filegate.fsio.atomic import replace_file
from filegate.fsio.pending import TEMP_SUFFIX
from filegate.fsio.safeopen import open_components, open_regular, open_then_verify
from filegate.fsio.snapshot import Snapshot
from filegate.policy.workspace import Workspace

ALL = ",".join(platform.FACILITIES)
HAS_F_GETPATH = hasattr(fcntl, "F_GETPATH")  # macOS
needs_proc = pytest.mark.skipif(not os.path.isdir(platform.PROC_FD), reason="about Linux's /proc")


@pytest.fixture
def bare(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every facility taken away: what filegate sees on Windows."""
    monkeypatch.setenv(platform.SIMULATE_ENV, ALL)


def test_the_switch_takes_each_facility_away(monkeypatch: pytest.MonkeyPatch) -> None:
    if not os.supports_dir_fd:  # taken away at start-up (FILEGATE_SIMULATE=no-dirfd): for good
        pytest.skip("dir_fd was taken away from this process at start-up and cannot come back")
    monkeypatch.delenv(platform.SIMULATE_ENV, raising=False)
    proc, tmpfile = platform.has_proc(), platform.has_tmpfile()  # what this OS has
    assert platform.has_dir_fd() and platform.has_wc()
    monkeypatch.setenv(platform.SIMULATE_ENV, "no-dirfd")
    assert not platform.has_dir_fd() and platform.has_proc() == proc
    monkeypatch.setenv(platform.SIMULATE_ENV, " no-proc , no-wc")
    assert not platform.has_proc() and not platform.has_tmpfile() and not platform.has_wc()
    monkeypatch.setenv(platform.SIMULATE_ENV, "no-tmpfile")
    assert not platform.has_tmpfile() and platform.has_proc() == proc and platform.has_dir_fd()
    monkeypatch.setenv(platform.SIMULATE_ENV, "")
    assert platform.has_tmpfile() == tmpfile
    assert platform.has_loop_signals() == (os.name == "posix")
    monkeypatch.setenv(platform.SIMULATE_ENV, "no-signals")
    assert not platform.has_loop_signals() and platform.has_dir_fd() and platform.has_wc()


def test_an_unknown_facility_is_an_error_not_a_silent_no_op(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(platform.SIMULATE_ENV, "no-dirfd,no-prco")
    with pytest.raises(ValueError, match="no-prco"):
        platform.has_dir_fd()


def test_without_proc_an_fd_is_named_by_f_getpath_or_not_at_all(ws: Path, bare: None) -> None:
    fd = os.open(ws, os.O_RDONLY)
    try:
        if HAS_F_GETPATH or os.path.isdir(platform.PROC_FD):  # macOS, or Linux's stand-in for it
            assert platform.fd_path(fd) == str(ws)
        else:  # Linux with no /proc at all
            assert platform.fd_path(fd) is None
            assert platform.reopen(fd, os.O_RDONLY) is None
    finally:
        os.close(fd)


@needs_proc
def test_with_proc_an_fd_is_named_and_reopened_as_its_own_description(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(platform.SIMULATE_ENV, raising=False)  # this one is about /proc itself
    (ws / "f").write_bytes(b"abc")
    fd = os.open(ws / "f", os.O_RDONLY)
    try:
        assert platform.fd_path(fd) == str(ws / "f")
        own = platform.reopen(fd, os.O_RDONLY)
        assert own is not None
        os.read(own, 2)
        assert os.lseek(fd, 0, os.SEEK_CUR) == 0  # its own offset
        os.close(own)
    finally:
        os.close(fd)


def test_without_dir_fd_a_file_is_opened_by_path_and_checked(ws: Path, bare: None) -> None:
    (ws / "d").mkdir()
    (ws / "d" / "f").write_bytes(b"inside")
    rp = Workspace(ws).resolve("d/f")
    fd = open_regular(rp)
    try:
        assert os.read(fd, 100) == b"inside"
    finally:
        os.close(fd)


@pytest.mark.parametrize("simulate", ["", "no-proc", ALL])
def test_a_directory_swapped_for_a_symlink_after_the_check_is_refused(
    ws: Path, outside: Path, monkeypatch: pytest.MonkeyPatch, simulate: str
) -> None:
    monkeypatch.setenv(platform.SIMULATE_ENV, simulate)
    (ws / "d").mkdir()
    (ws / "d" / "secret.txt").write_text("inside")
    rp = Workspace(ws).resolve("d/secret.txt")
    (ws / "d").rename(ws / "d-old")
    (ws / "d").symlink_to(outside)  # outside/secret.txt exists: a plain open would read it
    with pytest.raises(PathError, match="changed while being opened"):
        open_regular(rp)


@needs_proc
def test_open_then_verify_sees_the_swap_through_the_handles_own_path(ws: Path, outside: Path) -> None:
    # With /proc (as with F_GETPATH or GetFinalPathNameByHandle) the opened handle itself is
    # named: the check does not rest on the path resolving the same way a second time.
    (ws / "d").symlink_to(outside)
    with pytest.raises(OSError, match="not the checked path"):
        open_then_verify(ws / "d" / "secret.txt", os.O_RDONLY)
    fd = open_components(outside / "secret.txt", os.O_RDONLY)  # the target itself opens
    assert os.read(fd, 100) == b"OUTSIDE-CONTENT\n"
    os.close(fd)


def test_a_write_without_any_facility_uses_a_named_temp_and_replaces(
    ws: Path, bare: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    used: list[str] = []
    real_create = atomic._create_temp

    def spy(
        dfd: int | None, name: str, *, existing: bool, directory: str | None = None
    ) -> tuple[int, str | None, Path | None]:
        out = real_create(dfd, name, existing=existing, directory=directory)
        used.append(f"{dfd}:{out[1]}")
        return out

    monkeypatch.setattr(atomic, "_create_temp", spy)  # a spy: the real function runs
    (ws / "f.txt").write_bytes(b"old")
    st = os.stat(ws / "f.txt")
    assert replace_file(ws / "f.txt", b"new", expect=Snapshot.of(b"old", st), shown="f.txt") == 3
    assert (ws / "f.txt").read_bytes() == b"new"
    assert len(used) == 1 and used[0].startswith("None:") and used[0].endswith(TEMP_SUFFIX)
    assert sorted(p.name for p in ws.iterdir()) == ["f.txt"]
    assert (
        replace_file(ws / "a" / "b" / "n.txt", b"x", expect=Snapshot.absent(), shown="n", create_dirs=True)
        == 1
    )
    assert (ws / "a" / "b" / "n.txt").read_bytes() == b"x"


def test_a_write_without_dir_fd_refuses_a_parent_swapped_for_a_symlink(
    ws: Path, outside: Path, bare: None
) -> None:
    (ws / "d").symlink_to(outside)
    with pytest.raises(WriteError, match="changed while being written"):
        replace_file(ws / "d" / "new.txt", b"x", expect=Snapshot.absent(), shown="d/new.txt")
    assert not (outside / "new.txt").exists()


def _swap_after(monkeypatch: pytest.MonkeyPatch, step: str, d: Path, outside: Path) -> None:
    """Race injection (a real swap at a chosen instant, not a mock): right after the write's
    ``step`` ran, the directory ``d`` is moved aside and a symlink to ``outside`` takes its
    name — what tests/security/test_races.py provokes by chance, made deterministic."""
    original = getattr(atomic, step)

    def then_swap(*args: object, **kwargs: object) -> object:
        result = original(*args, **kwargs)
        d.rename(d.with_name("d-real"))
        d.symlink_to(outside)
        return result

    monkeypatch.setattr(atomic, step, then_swap)


def _everything_in(*dirs: Path) -> list[str]:
    return sorted(str(p) for d in dirs for p in d.rglob("*"))


@pytest.mark.parametrize("named", [True, False], ids=["handle-named", "handle-unnamed"])
def test_a_write_without_dir_fd_whose_parent_is_swapped_after_its_check_writes_nowhere(
    ws: Path, outside: Path, bare: None, monkeypatch: pytest.MonkeyPatch, named: bool
) -> None:
    """The temp is created by a path that now leads outside: it is found there by its handle's
    final path (or, where the OS cannot name a handle, by its directory no longer resolving to
    itself), removed, and nothing is written (the simulated run's race test once saw
    ``outside/new.txt`` appear: CI, 43ad87c)."""
    if not named:  # an OS without F_GETPATH / GetFinalPathNameByHandle (simulated)
        monkeypatch.setattr(platform, "fd_path", lambda fd: None)
    (ws / "d").mkdir()
    before = _everything_in(outside)
    _swap_after(monkeypatch, "check_parent_by_path", ws / "d", outside)
    with pytest.raises(WriteError, match="changed while being written"):
        replace_file(ws / "d" / "new.txt", b"PWNED", expect=Snapshot.absent(), shown="d/new.txt")
    assert _everything_in(outside) == before
    assert list((ws / "d-real").iterdir()) == []


def test_a_write_without_dir_fd_whose_parent_is_swapped_before_the_rename_writes_nowhere(
    ws: Path, outside: Path, bare: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The temp sits in the real directory; the rename by path then finds no temp under the
    swapped name and fails, and the temp is removed from where it really is."""
    (ws / "d").mkdir()
    (ws / "d" / "f.txt").write_bytes(b"old")
    expect = Snapshot.of(b"old", os.stat(ws / "d" / "f.txt"))
    before = _everything_in(outside)
    _swap_after(monkeypatch, "_check_unchanged", ws / "d", outside)
    with pytest.raises(WriteError, match="Nothing was written"):
        replace_file(ws / "d" / "f.txt", b"PWNED", expect=expect, shown="d/f.txt")
    assert _everything_in(outside) == before
    assert sorted(p.name for p in (ws / "d-real").iterdir()) == ["f.txt"]
    assert (ws / "d-real" / "f.txt").read_bytes() == b"old"


def test_a_write_without_dir_fd_that_a_swap_moved_out_during_the_rename_is_reported(
    ws: Path, outside: Path, bare: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rename(2) by path looks its two paths up one after the other; a directory swapped for a
    link between them moves the file into the folder the link leads to (the simulated run's
    race test saw ``outside/new.txt`` appear in a full run at 74e8e69). One cannot make the kernel lose
    that race on cue, so ``os.replace`` is replaced here by what the kernel then does — a MOCK
    of the rename, named as such: the source from the real directory, the target through the
    link. The write must not be reported as done."""
    (ws / "d").mkdir()
    real_replace = os.replace

    def rename_meeting_the_swap(src: str, dst: str, **kwargs: object) -> None:
        real_replace(src, outside / os.path.basename(dst))

    monkeypatch.setattr(os, "replace", rename_meeting_the_swap)
    with pytest.raises(WriteError, match="moved the written file elsewhere"):
        replace_file(ws / "d" / "new.txt", b"PWNED", expect=Snapshot.absent(), shown="d/new.txt")
    monkeypatch.setattr(os, "replace", real_replace)
    assert (outside / "new.txt").read_bytes() == b"PWNED"  # what the README says cannot be undone
    assert list((ws / "d").iterdir()) == []


def test_a_write_without_dir_fd_still_refuses_a_stale_target(ws: Path, bare: None) -> None:
    (ws / "f").write_bytes(b"old")
    expect = Snapshot.of(b"old", os.stat(ws / "f"))
    (ws / "f").write_bytes(b"changed by someone")
    with pytest.raises(WriteError, match="changed on disk"):
        replace_file(ws / "f", b"new", expect=expect, shown="f")
    assert (ws / "f").read_bytes() == b"changed by someone"
    assert sorted(p.name for p in ws.iterdir()) == ["f"]


def test_without_wc_lines_are_counted_in_python(
    ws: Path, bare: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    (ws / "big.txt").write_bytes(b"line\n" * 1000)
    monkeypatch.setattr(linecount, "WC_MIN_BYTES", 1)
    fd = os.open(ws / "big.txt", os.O_RDONLY)
    try:
        assert linecount._spawn_wc(fd) is None
    finally:
        os.close(fd)


def test_the_pread_stand_in_reads_at_the_offset_and_keeps_the_position(tmp_path: Path) -> None:
    """Windows has no os.pread: platform._read_at seeks, reads and puts the position back
    (FILEGATE_SIMULATE=no-pread makes it platform.pread for a whole run)."""
    path = tmp_path / "f"
    path.write_bytes(b"0123456789")
    fd = os.open(path, os.O_RDONLY)
    try:
        os.lseek(fd, 3, os.SEEK_SET)
        assert platform._read_at(fd, 4, 5) == b"5678"
        assert platform._read_at(fd, 100, 8) == b"89"
        assert os.lseek(fd, 0, os.SEEK_CUR) == 3 and os.read(fd, 2) == b"34"
    finally:
        os.close(fd)
    if "no-pread" in os.environ.get(platform.SIMULATE_ENV, ""):
        assert platform.pread is platform._read_at
    else:
        assert platform.pread is os.pread


def test_no_dirfd_takes_dir_fd_away_from_the_whole_process(tmp_path: Path) -> None:
    """FILEGATE_SIMULATE=no-dirfd, installed at import: every os call given dir_fd raises as
    on Windows, os.supports_dir_fd is empty, and shutil no longer removes trees by descriptor
    (issue 29). Run in-process (coverage), everything put back after."""
    import shutil

    saved = {fn.__name__: fn for fn in os.supports_dir_fd}
    saved_set, saved_rmtree = set(os.supports_dir_fd), shutil._use_fd_functions  # type: ignore[attr-defined]
    try:
        platform._take_dir_fd_away()
        assert not os.supports_dir_fd and not shutil._use_fd_functions  # type: ignore[attr-defined]
        with pytest.raises(NotImplementedError, match="stat: dir_fd unavailable on this platform"):
            os.stat("x", dir_fd=0)
        assert os.stat(tmp_path).st_ino == os.lstat(tmp_path).st_ino  # without dir_fd: as before
    finally:
        for name, fn in saved.items():
            setattr(os, name, fn)
        os.supports_dir_fd.update(saved_set)
        shutil._use_fd_functions = saved_rmtree  # type: ignore[attr-defined]


def test_a_descriptor_path_is_told_from_a_missing_file() -> None:
    from filegate.fsio.safeopen import names_a_descriptor
    from filegate.policy.workspace import ResolvedPath

    def rp(real: str) -> ResolvedPath:
        return ResolvedPath(shown=real, real=Path(real), inside=False, sensitive=False)

    assert names_a_descriptor(rp("/proc/self/fd/0")) and names_a_descriptor(rp("/proc/123/fd/7"))
    assert not names_a_descriptor(rp("/proc/self/status")) and not names_a_descriptor(rp("/tmp/fd/0"))


def test_dropping_a_files_cached_pages_keeps_its_bytes_and_is_silent_where_it_cannot(ws: Path) -> None:
    """``drop_cached`` is advice (a kept pre-image leaves the page cache): the file reads the
    same afterwards, and a pipe or a closed descriptor (ESPIPE, EBADF) raises nothing."""
    path = ws / "kept.bin"
    data = os.urandom(1 << 20)
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        platform.drop_cached(fd)
        assert os.pread(fd, len(data) + 1, 0) == data
    finally:
        os.close(fd)
    r, w = os.pipe()
    platform.drop_cached(r)
    os.close(r)
    os.close(w)
    platform.drop_cached(r)
