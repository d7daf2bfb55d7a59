"""fsio/lines.py on real files: counts that cannot finish, holes, cancellation, codecs."""

from __future__ import annotations

import codecs
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from filegate.fsio import linecount, lines, linetail
from tests.tooling import line_count


@pytest.fixture
def opened(tmp_path: Path) -> Iterator[tuple[Path, list[int]]]:
    """A path to write, and the descriptors to close afterwards."""
    fds: list[int] = []
    yield tmp_path / "f.txt", fds
    for fd in fds:
        os.close(fd)


def source(path: Path, fds: list[int], scan: lines.Scan | None = None) -> lines.Source:
    fd = os.open(path, os.O_RDONLY)
    fds.append(fd)
    header = os.pread(fd, 8192, 0)
    return lines.Source(fd, os.fstat(fd), lines.detect_codec(header), scan or lines.Scan.start())


def sparse_file(path: Path, head_lines: int, hole: int, tail_lines: int) -> None:
    """Lines, a hole of ``hole`` bytes, lines; skips where holes would be written out as data."""
    probe = path.with_name(path.name + ".probe")
    with probe.open("wb") as f:
        f.truncate(64 << 20)
    allocated = probe.stat().st_blocks * 512
    probe.unlink()
    if allocated >= 1 << 20:
        pytest.skip("this file system stores holes as data: a sparse test file would fill the disk")
    with path.open("wb") as f:
        f.write(b"".join(b"line %d\n" % i for i in range(1, head_lines + 1)))
        f.seek(f.tell() + hole)
        f.write(b"".join(b"tail %d\n" % i for i in range(1, tail_lines + 1)))
        f.truncate()


def test_a_count_out_of_time_is_a_lower_bound_and_not_remembered(opened: tuple[Path, list[int]]) -> None:
    path, fds = opened
    path.write_bytes(b"x\n" * 5000)
    late = lines.Scan(deadline=time.monotonic() - 1)
    count = line_count(source(path, fds, late))
    assert not count.complete and count.total <= 5000
    assert line_count(source(path, fds)) == linecount.LineCount(5000, True)


def test_holes_are_skipped_by_count_offset_and_tail(opened: tuple[Path, list[int]]) -> None:
    path, fds = opened
    sparse_file(path, 2000, 1 << 40, 0)  # 2,000 lines then 1 TiB of hole: line 2001 is zeros
    src = source(path, fds, lines.Scan.start(budget_s=60))
    assert src.sparse
    assert line_count(src) == linecount.LineCount(2001, True)
    pos = lines.offset_of_line(src, 2000)
    assert pos is not None
    got = list(lines.iter_lines_from(src, pos, 2000))
    assert [(r.number, r.head[:9], r.long, r.newline) for r in got] == [
        (2000, b"line 2000", False, True),
        (2001, b"\0" * 9, True, False),
    ]
    starts = linetail.tail_starts(src, 3)
    assert [lines.decode_line(r)[:9] for r in linetail.tail_lines(src, starts, 1999, 3)] == [
        "line 1999", "line 2000", "\0" * 9,
    ]  # fmt: skip


def test_a_sparse_file_with_data_after_the_hole_counts_and_tails_exactly(
    opened: tuple[Path, list[int]],
) -> None:
    path, fds = opened
    sparse_file(path, 20_000, 10 << 30, 10)
    src = source(path, fds, lines.Scan.start(budget_s=60))
    assert line_count(src) == linecount.LineCount(20_010, True)
    starts = linetail.tail_starts(src, 3)
    assert [lines.decode_line(r) for r in linetail.tail_lines(src, starts, 20_008, 3)] == [
        "tail 8\n", "tail 9\n", "tail 10\n",
    ]  # fmt: skip


def test_a_cancelled_scan_stops_at_once(opened: tuple[Path, list[int]]) -> None:
    path, fds = opened
    path.write_bytes(b"y\n" * 100_000)
    cancel = threading.Event()
    cancel.set()
    src = source(path, fds, lines.Scan.start(cancel=cancel))
    with pytest.raises(lines.ReadCancelled):
        line_count(src)
    with pytest.raises(lines.ReadCancelled):
        lines.offset_of_line(src, 50_000)
    with pytest.raises(lines.ReadCancelled):
        linetail.tail_starts(src, 10)


def test_nothing_past_the_starting_size_is_counted_or_read(opened: tuple[Path, list[int]]) -> None:
    path, fds = opened
    path.write_bytes(b"a\nb\n")
    src = source(path, fds)
    with path.open("ab") as f:
        f.write(b"c\nd\n")
    assert line_count(src) == linecount.LineCount(2, True)
    assert [r.head for r in lines.iter_lines_from(src, 0, 1)] == [b"a", b"b"]
    assert linetail.tail_starts(src, 5) == [0, 2]


@pytest.mark.parametrize(
    ("raw", "name", "start", "lf"),
    [
        (b"a\nb", "utf-8", 0, True),
        (codecs.BOM_UTF8 + b"a\r\nb", "utf-8", 3, True),
        (b"a\rb\r", "utf-8", 0, False),
        (codecs.BOM_UTF16_LE + "a\nb".encode("utf-16-le"), "utf-16-le", 2, True),
        (codecs.BOM_UTF16_BE + "a\rb".encode("utf-16-be"), "utf-16-be", 2, False),
        (codecs.BOM_UTF32_LE + "a\nb".encode("utf-32-le"), "utf-32-le", 4, True),
        (codecs.BOM_UTF32_BE + "a\nb".encode("utf-32-be"), "utf-32-be", 4, True),
    ],
)
def test_codec_from_the_first_bytes(raw: bytes, name: str, start: int, lf: bool) -> None:
    c = lines.detect_codec(raw)
    assert (c.name, c.start, c.lf_breaks) == (name, start, lf)


def test_a_utf16_break_is_only_found_on_a_code_unit_boundary(opened: tuple[Path, list[int]]) -> None:
    # U+0A41 U+4100 in UTF-16-LE is 41 0A 00 41: a LF byte pair at an odd offset, not a break.
    path, fds = opened
    path.write_bytes(codecs.BOM_UTF16_LE + "\u0a41\u4100\nz".encode("utf-16-le"))
    src = source(path, fds)
    assert line_count(src) == linecount.LineCount(2, True)
    got = [lines.decode_line(r, src.codec) for r in lines.iter_lines_from(src, src.codec.start, 1)]
    assert got == ["\u0a41\u4100\n", "z"]


@pytest.mark.parametrize("max_segments", [3, 4096])
def test_many_islands_between_holes_tail_alike_mapped_or_read_whole(
    opened: tuple[Path, list[int]], monkeypatch: pytest.MonkeyPatch, max_segments: int
) -> None:
    monkeypatch.setattr(lines, "MAX_SEGMENTS", max_segments)
    path, fds = opened
    with path.open("wb") as f:
        for i in range(1, 11):  # "island i" lines, each island after a 2 MiB hole
            f.seek(f.tell() + (2 << 20))
            f.write(b"\nisland %d\n" % i)
    src = source(path, fds)
    assert src.sparse
    assert line_count(src) == linecount.LineCount(20, True)
    starts = linetail.tail_starts(src, 4)
    assert [lines.decode_line(r)[:9] for r in linetail.tail_lines(src, starts, 17, 4)] == [
        "\0" * 9, "island 9\n", "\0" * 9, "island 10",
    ]  # fmt: skip
