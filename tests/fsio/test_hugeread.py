"""fsio.hugeread: a large whole-file read into memory backed by huge pages (Linux, CPython),
through read_whole as StrReplaceFile and WriteFile use it, against real files."""

from __future__ import annotations

import contextlib
import mmap
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from filegate.fsio import hugeread, platform
from filegate.fsio.safeopen import read_whole

THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")
HERE = (
    sys.platform == "linux"
    and sys.implementation.name == "cpython"
    and THP.exists()
    and "[never]" not in THP.read_text()
)
needs_thp = pytest.mark.skipif(not HERE, reason="transparent huge pages: Linux with THP not 'never'")
# read_whole takes this road only with the OS's own pread (FILEGATE_SIMULATE=no-pread: not).
via_read_whole = pytest.mark.skipif(not platform.NATIVE_PREAD, reason="pread simulated away")
SIZE = hugeread.HUGE_FROM_BYTES + 12_345  # not a whole number of pages


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    data = os.urandom(SIZE)
    path = tmp_path_factory.mktemp("huge") / "big.bin"
    path.write_bytes(data)
    return path, data


def _vm_flags(address: int) -> str:
    """The VmFlags of the mapping of this process that holds ``address``."""
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split(" ", 1)[0]
        if "-" in head and ":" not in head:
            lo, hi = (int(x, 16) for x in head.split("-"))
            inside = lo <= address < hi
        elif inside and line.startswith("VmFlags:"):
            return line
    raise AssertionError(f"no mapping holds {address:#x}")


@contextlib.contextmanager
def opened(path: Path) -> Iterator[int]:
    fd = os.open(path, os.O_RDONLY)
    try:
        yield fd
    finally:
        os.close(fd)


def _rss() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * mmap.PAGESIZE


@needs_thp
def test_available_where_the_kernel_has_huge_pages() -> None:
    assert hugeread.available()


@needs_thp
@via_read_whole
def test_a_large_file_is_read_whole_into_memory_advised_for_huge_pages(big: tuple[Path, bytes]) -> None:
    path, data = big
    with opened(path) as fd:
        got = read_whole(fd, SIZE)
    assert type(got) is bytes and len(got) == SIZE
    assert got == data and hash(got) == hash(bytes(data))  # a bytes like any other
    # The object's own pages carry the advice ("hg"): the read went through hugeread.
    middle = id(got) + SIZE // 2
    assert " hg" in _vm_flags(middle)


@needs_thp
@via_read_whole
def test_a_small_file_is_read_plainly(tmp_path: Path) -> None:
    (tmp_path / "small").write_bytes(b"x" * (3 << 20))
    with opened(tmp_path / "small") as fd:
        got = read_whole(fd, 10 << 20)
        assert hugeread.pread_fresh(fd, 3 << 20) is None
    assert got == b"x" * (3 << 20)
    assert " hg" not in _vm_flags(id(got) + (1 << 20))


@needs_thp
@via_read_whole
def test_the_limit_still_holds(big: tuple[Path, bytes]) -> None:
    path, data = big
    with opened(path) as fd:
        assert read_whole(fd, SIZE - 1) == data  # limit + 1 bytes: the caller sees "too large"
        assert read_whole(fd, SIZE - 100) == data[: SIZE - 99]


@needs_thp
def test_a_file_of_exactly_the_threshold_takes_the_huge_road(tmp_path: Path) -> None:
    path = tmp_path / "edge.bin"
    path.write_bytes(b"e" * hugeread.HUGE_FROM_BYTES)
    with opened(path) as fd:
        got = hugeread.pread_fresh(fd, hugeread.HUGE_FROM_BYTES)
        assert hugeread.pread_fresh(fd, hugeread.HUGE_FROM_BYTES - 1) is None
    assert got == b"e" * hugeread.HUGE_FROM_BYTES
    assert " hg" in _vm_flags(id(got) + hugeread.HUGE_FROM_BYTES // 2)


@needs_thp
def test_a_file_shorter_than_asked_gives_what_it_has(big: tuple[Path, bytes]) -> None:
    path, data = big
    with opened(path) as fd:
        got = hugeread.pread_fresh(fd, SIZE + 4096)  # as if it shrank after its size was taken
    assert got == data


@needs_thp
@via_read_whole
def test_a_file_that_grows_after_the_large_read_is_read_to_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = os.urandom(SIZE)
    path = tmp_path / "growing.bin"
    path.write_bytes(data)
    real = hugeread.pread_fresh

    def then_a_writer_appends(fd: int, size: int) -> bytes | None:  # a wrapper, not a stand-in
        got = real(fd, size)
        with path.open("ab") as f:
            f.write(b"tail")
        return got

    monkeypatch.setattr(hugeread, "pread_fresh", then_a_writer_appends)
    with opened(path) as fd:
        assert read_whole(fd, SIZE + 10) == data + b"tail"


@needs_thp
@via_read_whole
def test_its_memory_goes_back_when_the_bytes_go(big: tuple[Path, bytes]) -> None:
    path, _ = big
    with opened(path) as fd:
        before = _rss()
        got = read_whole(fd, SIZE)
        held = _rss()
        del got
        after = _rss()
    assert held - before >= SIZE * 0.9
    assert after - before < 4 << 20


@needs_thp
def test_the_probe_finds_where_a_bytes_object_keeps_its_content() -> None:
    tools = hugeread._probe()  # not available(): that answer is cached for the process
    assert tools is not None
    madvise, ctypes, content_of = tools
    fresh = b"".join([b"known ", b"content"])
    assert ctypes.string_at(content_of(fresh), len(fresh)) == b"known content"
    assert madvise.restype is ctypes.c_int


@needs_thp
@pytest.mark.parametrize(("mode", "works"), [("always [madvise] never\n", True),
                                             ("[always] madvise never\n", True),
                                             ("always madvise [never]\n", False),
                                             (None, False)])  # fmt: skip
def test_the_probe_follows_the_kernels_thp_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str | None, works: bool
) -> None:
    setting = tmp_path / "enabled"
    if mode is not None:  # None: no such file (a kernel built without THP)
        setting.write_text(mode)
    monkeypatch.setattr(hugeread, "_THP_MODE", setting)
    assert (hugeread._probe() is not None) is works


@needs_thp
def test_the_probe_runs_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hugeread, "_probed", False)
    monkeypatch.setattr(hugeread, "_tools", None)
    calls = []
    real = hugeread._probe

    def counted() -> object:  # a wrapper, not a stand-in
        calls.append(1)
        return real()

    monkeypatch.setattr(hugeread, "_probe", counted)
    assert hugeread.available() and hugeread.available()
    assert len(calls) == 1


def test_elsewhere_it_declines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hugeread, "_probed", False)
    monkeypatch.setattr(hugeread, "_tools", None)  # both put back after
    monkeypatch.setattr(hugeread.sys, "platform", "win32")
    assert hugeread._probe() is None
    assert not hugeread.available()
    assert hugeread.pread_fresh(0, SIZE) is None
