"""fsio.atomic: an edit of a large file copies the bytes it leaves unchanged from the file to
the temp in the kernel (copy_file_range, else sendfile, else from memory), and only bytes the
status proves unchanged since they were read (issue 28). The copy calls are observed through
spies: named wrappers around the real calls, which they still make."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from filegate.errors import WriteError
from filegate.fsio import atomic
from filegate.fsio.atomic import Snapshot, read_all, replace_file
from filegate.fsio.spliced import Spliced

SIZE = 3 << 20


def big_file(ws: Path) -> tuple[Path, bytes]:
    f = ws / "big.c"
    data = b"".join(b"line %07d of a large source file\n" % i for i in range(SIZE // 32))
    f.write_bytes(data)
    return f, data


def read(path: Path, *, settled: bool = True) -> tuple[bytes, Snapshot]:
    st = os.stat(path)
    now = st.st_ctime_ns + 10 * 1_000_000_000 if settled else st.st_ctime_ns
    fd = os.open(path, os.O_RDONLY)
    try:
        return read_all(fd, 1 << 30, path.name, now_ns=now)
    finally:
        os.close(fd)


def edit(data: bytes) -> tuple[Spliced, bytes]:
    start = data.index(b"line 0050000")
    end = start + len(b"line 0050000")
    new = Spliced(data, start, end, b"EDITED LINE")
    return new, data[:start] + b"EDITED LINE" + data[end:]


def spy(monkeypatch: pytest.MonkeyPatch, name: str, before: Callable[[int], None] | None = None) -> list[int]:
    """A spy on os.<name>: records the byte count each call copied, then returns it."""
    real = getattr(os, name)
    counts: list[int] = []

    def call(*args: Any) -> int:
        if before is not None:
            before(len(counts))
        n = int(real(*args))
        counts.append(n)
        return n

    monkeypatch.setattr(os, name, call)
    return counts


@pytest.fixture(params=["tmpfile", "named"])
def temps(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "named":
        monkeypatch.setattr(atomic, "_TMPFILE", 0)
    return str(request.param)


def test_a_large_edit_copies_the_unchanged_bytes_in_the_kernel(
    ws: Path, temps: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    f, data = big_file(ws)
    base, snap = read(f)
    new, expected = edit(base)
    copied = spy(monkeypatch, "copy_file_range")
    assert replace_file(f, new, expect=snap, shown="big.c") == len(expected)
    assert f.read_bytes() == expected
    assert sum(copied) == len(data) - len(b"line 0050000")  # all but the replaced span


def test_without_copy_file_range_sendfile_copies(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f, _ = big_file(ws)
    base, snap = read(f)
    new, expected = edit(base)

    def cross_device(*args: Any) -> int:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "copy_file_range", cross_device)
    sent = spy(monkeypatch, "sendfile")
    replace_file(f, new, expect=snap, shown="big.c")
    assert f.read_bytes() == expected and sum(sent) == len(expected) - len(b"EDITED LINE")


def test_where_the_kernel_copies_nothing_the_edit_is_written_from_memory(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f, _ = big_file(ws)
    base, snap = read(f)
    new, expected = edit(base)

    def unsupported(*args: Any) -> int:
        raise OSError(errno.ENOSYS, "Function not implemented")

    monkeypatch.setattr(os, "copy_file_range", unsupported)
    monkeypatch.setattr(os, "sendfile", unsupported)
    replace_file(f, new, expect=snap, shown="big.c")
    assert f.read_bytes() == expected


def test_a_file_changed_while_it_is_copied_is_written_from_what_was_read(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Changed during the copy and put back (same bytes, mtime restored): the stale check
    finds the content as read, so the write goes ahead, and it must hold the edit of what was
    read, not the bytes the copy saw in between."""
    f, _ = big_file(ws)
    base, snap = read(f)
    new, expected = edit(base)
    st = os.stat(f)
    tail = len(base) - 100

    def meddle(call: int) -> None:
        if call == 1:  # before the suffix is copied: another writer scribbles on the tail
            with open(f, "r+b") as w:
                w.seek(tail)
                w.write(b"X" * 100)

    copied = spy(monkeypatch, "copy_file_range", meddle)
    real_fstat = os.fstat

    def put_back_then_fstat(fd: int) -> os.stat_result:
        if len(copied) == 2 and f.read_bytes()[tail:] == b"X" * 100:
            with open(f, "r+b") as w:
                w.seek(tail)
                w.write(base[tail:])
            os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
        return real_fstat(fd)

    monkeypatch.setattr(os, "fstat", put_back_then_fstat)
    replace_file(f, new, expect=snap, shown="big.c")
    assert len(copied) == 2 and f.read_bytes() == expected


def test_a_file_changed_for_good_while_it_is_copied_is_not_overwritten(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f, _ = big_file(ws)
    base, snap = read(f)
    new, _ = edit(base)

    def meddle(call: int) -> None:
        if call == 0:
            with open(f, "r+b") as w:
                w.write(b"THEIRS")

    spy(monkeypatch, "copy_file_range", meddle)
    with pytest.raises(WriteError, match="changed"):
        replace_file(f, new, expect=snap, shown="big.c")
    assert f.read_bytes().startswith(b"THEIRS")


def test_an_unsettled_read_is_not_copied_from_the_file(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its status cannot prove the file unchanged since the read: the temp is written from
    the bytes read."""
    f, _ = big_file(ws)
    base, snap = read(f, settled=False)
    assert not snap.settled
    new, expected = edit(base)
    copied = spy(monkeypatch, "copy_file_range")
    replace_file(f, new, expect=snap, shown="big.c")
    assert f.read_bytes() == expected and copied == []
