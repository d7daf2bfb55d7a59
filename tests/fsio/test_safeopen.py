"""fsio.safeopen at its seam, without a server: opening what policy resolved, never following a
symlink swapped in, never blocking on a FIFO or device, and the one whole-file read."""

from __future__ import annotations

import errno
import os
import socket
import stat
from pathlib import Path

import pytest

from filegate.errors import PathError
from filegate.fsio import safeopen
from filegate.fsio.safeopen import open_directory, open_regular, read_whole, stat_target
from filegate.policy.workspace import ResolvedPath, Workspace


def _read(fd: int) -> bytes:
    try:
        return os.pread(fd, 1 << 16, 0)
    finally:
        os.close(fd)


def test_a_regular_file_opens_blocking_and_reads(ws: Path) -> None:
    (ws / "a.txt").write_bytes(b"hello")
    fd = open_regular(Workspace(ws).resolve("a.txt"))
    assert os.get_blocking(fd)  # O_NONBLOCK was only for the open
    assert os.get_inheritable(fd) is False
    assert _read(fd) == b"hello"


def test_a_missing_file_does_not_exist(ws: Path) -> None:
    with pytest.raises(PathError, match=r"^`nope.txt` does not exist\.$") as err:
        open_regular(Workspace(ws).resolve("nope.txt"))
    assert err.value.brief == "File not found"


def test_a_symlinked_parent_swapped_in_after_resolution_is_not_followed(ws: Path, outside: Path) -> None:
    (ws / "d").mkdir()
    (ws / "d" / "f.txt").write_text("inside")
    (outside / "f.txt").write_text("OUTSIDE")
    rp = Workspace(ws).resolve("d/f.txt")
    dir_rp = Workspace(ws).resolve("d")
    (ws / "d").rename(ws / "d-old")
    (ws / "d").symlink_to(outside)
    with pytest.raises(PathError, match="a symlink appeared in its path"):
        open_regular(rp)
    with pytest.raises(PathError, match="a symlink appeared in its path"):
        open_directory(dir_rp)


def test_the_file_itself_swapped_for_a_symlink_is_not_followed(ws: Path, outside: Path) -> None:
    (ws / "f.txt").write_text("inside")
    rp = Workspace(ws).resolve("f.txt")
    (ws / "f.txt").unlink()
    (ws / "f.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(PathError, match="symlink"):
        open_regular(rp)


def test_a_fifo_without_a_writer_is_refused_at_once(ws: Path) -> None:
    os.mkfifo(ws / "fifo")
    with pytest.raises(PathError, match=r"^`fifo` is not a file\.$"):
        open_regular(Workspace(ws).resolve("fifo"))


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/dev/urandom"])
def test_a_device_is_not_a_file(ws: Path, device: str) -> None:
    with pytest.raises(PathError, match="is not a file"):
        open_regular(Workspace(ws).resolve(device))


def test_a_directory_is_not_a_file_but_opens_as_a_directory(ws: Path) -> None:
    (ws / "sub").mkdir()
    (ws / "sub" / "x").write_text("x")
    rp = Workspace(ws).resolve("sub")
    with pytest.raises(PathError, match="is not a file"):
        open_regular(rp)
    fd = open_directory(rp)
    try:
        assert stat.S_ISDIR(os.fstat(fd).st_mode)
        assert os.listdir(fd) == ["x"]
    finally:
        os.close(fd)


def test_an_open_directory_stays_pinned_when_a_symlink_replaces_it(ws: Path, outside: Path) -> None:
    (ws / "sub").mkdir()
    (ws / "sub" / "mine.txt").write_text("x")
    fd = open_directory(Workspace(ws).resolve("sub"))
    try:
        (ws / "sub").rename(ws / "sub-old")
        (ws / "sub").symlink_to(outside)
        assert os.listdir(fd) == ["mine.txt"]  # still the checked directory, not outside
    finally:
        os.close(fd)


def test_a_file_is_not_a_directory(ws: Path) -> None:
    (ws / "f").write_text("x")
    with pytest.raises(PathError):
        open_directory(Workspace(ws).resolve("f"))
    with pytest.raises(PathError, match="does not exist"):
        open_directory(Workspace(ws).resolve("missing"))


def test_a_unix_socket_is_not_a_file(tmp_path: Path) -> None:
    # A short path: sun_path holds 108 bytes.
    ws = Path(os.path.realpath(tmp_path))
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(ws / "s"))
        with pytest.raises(PathError, match="is not a file"):
            open_regular(Workspace(ws).resolve("s"))


def test_stat_target_is_none_for_a_missing_file_and_lstat_otherwise(ws: Path, outside: Path) -> None:
    assert stat_target(Workspace(ws).resolve("missing")) is None
    (ws / "f").write_text("abc")
    st = stat_target(Workspace(ws).resolve("f"))
    assert st is not None and st.st_size == 3
    below = ResolvedPath("f/below", ws / "f" / "below", True, False)  # a file on the way: ENOTDIR
    with pytest.raises(PathError, match="symlink"):
        stat_target(below)


@pytest.mark.parametrize(
    ("err", "expected", "brief"),
    [
        (errno.ELOOP, "a symlink appeared in its path", "Invalid path"),
        (errno.ENOTDIR, "a symlink appeared in its path", "Invalid path"),
        (errno.ENXIO, "is not a file.", "Invalid path"),
        (errno.EACCES, "is not readable: permission denied.", "Permission denied"),
        (errno.ENAMETOOLONG, "is too long for a file path.", "Invalid path"),
        (errno.EIO, "Failed to open `p`: Input/output error.", "Invalid path"),
    ],
)
def test_each_os_error_has_its_sentence(err: int, expected: str, brief: str) -> None:
    exc = safeopen._os_error("p", OSError(err, os.strerror(err)))
    assert expected in str(exc) and exc.brief == brief


def test_read_whole_reads_the_file_in_one_piece(ws: Path) -> None:
    data = os.urandom(3 << 20)
    (ws / "big").write_bytes(data)
    fd = os.open(ws / "big", os.O_RDONLY)
    try:
        assert read_whole(fd, len(data)) == data
        assert read_whole(fd, 10 << 20) == data
        assert read_whole(fd, 100) == data[:101]  # past the limit: limit + 1 bytes, no more
    finally:
        os.close(fd)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads a /proc file (fstat size 0): Linux only")
def test_read_whole_of_an_empty_file_and_of_a_proc_file_that_reports_size_zero(ws: Path) -> None:
    (ws / "empty").write_bytes(b"")
    fd = os.open(ws / "empty", os.O_RDONLY)
    try:
        assert read_whole(fd, 10) == b""
    finally:
        os.close(fd)
    fd = os.open("/proc/self/status", os.O_RDONLY)
    try:
        assert os.fstat(fd).st_size == 0
        assert b"Pid:" in read_whole(fd, 1 << 20)  # read to the end, not to fstat's size
    finally:
        os.close(fd)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads a /proc file (fstat size 0): Linux only")
def test_read_whole_stops_past_the_limit_on_a_file_larger_than_fstat_says(ws: Path) -> None:
    fd = os.open("/proc/self/maps", os.O_RDONLY)  # st_size 0, content larger than 16 bytes
    try:
        assert len(read_whole(fd, 16)) == 17
    finally:
        os.close(fd)
