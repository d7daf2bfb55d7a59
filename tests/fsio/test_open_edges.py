"""fsio.safeopen at its edges: the root directory itself, what a final open creates, the
exact sentences, and read_whole's reads around the limit and past what fstat says."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from filegate.errors import PathError
from filegate.fsio import safeopen
from filegate.fsio.safeopen import open_components, open_directory, open_regular, read_whole
from filegate.policy.workspace import ResolvedPath


def rp(path: Path, shown: str = "shown") -> ResolvedPath:
    return ResolvedPath(shown, path, True, False)


def test_the_root_directory_opens_as_itself() -> None:
    fd = open_directory(rp(Path("/")))
    try:
        assert os.path.samestat(os.fstat(fd), os.stat("/"))
    finally:
        os.close(fd)


def test_a_file_right_under_the_root_opens(tmp_path: Path) -> None:
    fd = open_components(Path("/proc"), os.O_RDONLY)
    try:
        assert os.path.samestat(os.fstat(fd), os.stat("/proc"))
    finally:
        os.close(fd)


def test_a_created_final_component_gets_the_mode_asked_for_minus_the_umask(ws: Path) -> None:
    old = os.umask(0o022)
    try:
        fd = open_components(ws / "made", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        os.close(fd)
        fd = open_components(ws / "private", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(ws / "made").st_mode) == 0o644
    assert stat.S_IMODE(os.stat(ws / "private").st_mode) == 0o600


def test_a_descriptor_is_not_inherited_by_a_child(ws: Path) -> None:
    (ws / "f").write_text("x")
    fd = open_regular(rp(ws / "f"))
    try:
        assert os.get_inheritable(fd) is False
        assert os.get_blocking(fd) is True
    finally:
        os.close(fd)


def test_missing_and_wrong_kinds_have_their_sentences(ws: Path) -> None:
    cases = [
        (lambda: open_regular(rp(ws / "none", "none")), "`none` does not exist.", "File not found"),
        (lambda: open_directory(rp(ws / "none", "none")), "`none` does not exist.", "File not found"),
        (lambda: open_regular(rp(ws, "dir")), "`dir` is not a file.", "Invalid path"),
    ]
    (ws / "f").write_text("x")
    cases.append(
        (
            lambda: open_directory(rp(ws / "f", "f")),
            "`f` changed while being opened (a symlink appeared in its path) or goes through a symlink loop.",
            "Invalid path",
        )
    )
    for call, message, brief in cases:
        with pytest.raises(PathError) as err:
            call()
        assert (err.value.message, err.value.brief) == (message, brief)


def test_stat_target_of_an_unreachable_path_is_a_path_error(ws: Path) -> None:
    (ws / "f").write_text("x")
    with pytest.raises(PathError) as err:
        safeopen.stat_target(rp(ws / "f" / "under", "f/under"))
    assert err.value.message.startswith("`f/under` changed while being opened")


def test_a_long_path_error_is_quoted_by_its_first_200_characters() -> None:
    err = safeopen._os_error("x" * 200 + "y" * 50, OSError(36, "File name too long"))
    assert err.message == f"`{'x' * 200}…` is too long for a file path."
    other = safeopen._os_error("p", OSError(5, "Input/output error"))
    assert other.message == "Failed to open `p`: Input/output error."
    bare = safeopen._os_error("p", OSError("odd"))
    assert bare.message == "Failed to open `p`: odd."


@pytest.fixture
def opened(ws: Path) -> object:
    fds: list[int] = []

    def open_with(data: bytes) -> int:
        p = ws / f"f{len(fds)}"
        p.write_bytes(data)
        fd = os.open(p, os.O_RDONLY)
        fds.append(fd)
        return fd

    yield open_with
    for fd in fds:
        os.close(fd)


@pytest.mark.parametrize(
    ("size", "limit", "got"),
    [(0, 0, 0), (1, 0, 1), (5, 5, 5), (6, 5, 6), (7, 5, 6), (5, 100, 5)],
)
def test_read_whole_around_the_limit(opened: object, size: int, limit: int, got: int) -> None:
    assert callable(opened)
    data = bytes(range(size))
    assert read_whole(opened(data), limit) == data[:got]


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads a /proc file (fstat size 0): Linux only")
def test_read_whole_reads_past_fstats_size_in_extra_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(safeopen, "_EXTRA_READ", 7)
    fd = os.open("/proc/self/cmdline", os.O_RDONLY)
    try:
        whole = read_whole(fd, 1 << 20)
        assert whole == Path("/proc/self/cmdline").read_bytes() and len(whole) > 7
        assert read_whole(fd, 10) == whole[:11]
    finally:
        os.close(fd)
