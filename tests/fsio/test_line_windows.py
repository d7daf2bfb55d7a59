"""fsio/lines.py's line windows on real files, at the edges a mutation would move: line
starts and counts with and without a final break, lines longer than what is kept, lines that
straddle chunks, tails read in one piece or line by line, the remembered facts (checkpoints,
the count cache), `wc -l` counting and its fallback, and how a line is decoded."""

from __future__ import annotations

import codecs
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from filegate.fsio import linecount, lines, linetail, platform
from filegate.fsio.linecount import LineCount
from filegate.fsio.lines import Codec, RawLine, decode_line, detect_codec
from tests.tooling import line_count


@pytest.fixture
def fds() -> Iterator[list[int]]:
    opened: list[int] = []
    yield opened
    for fd in opened:
        os.close(fd)


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 8 bytes: lines straddle chunk boundaries. (A multiple of 4, as the real 1 MiB
    is: the UTF-16/32 counters rely on chunks starting on a code unit.)"""
    monkeypatch.setattr(lines, "CHUNK", 8)


def open_source(path: Path, fds: list[int], budget_s: float | None = None) -> lines.Source:
    fd = os.open(path, os.O_RDONLY)
    fds.append(fd)
    return lines.Source(fd, os.fstat(fd), detect_codec(os.pread(fd, 8192, 0)), lines.Scan.start(budget_s))


def write(tmp_path: Path, data: bytes, name: str = "f.txt") -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


COUNTS = [
    (b"", 0),
    (b"a", 1),
    (b"a\n", 1),
    (b"a\nb", 2),
    (b"\n\n\n", 3),
    (b"a\r\nb\r\n", 2),
    (codecs.BOM_UTF8, 0),
    (codecs.BOM_UTF8 + b"x", 1),
    (codecs.BOM_UTF16_LE + "a\nb\n".encode("utf-16-le"), 2),
    (codecs.BOM_UTF16_BE + "a\nb".encode("utf-16-be"), 2),
    (codecs.BOM_UTF32_LE + "a\nb\nc".encode("utf-32-le"), 3),
    (b"mac\rfile\rthree", 3),
]


@pytest.mark.parametrize(("data", "total"), COUNTS)
def test_line_count_with_and_without_a_final_break(
    tmp_path: Path, fds: list[int], data: bytes, total: int
) -> None:
    assert line_count(open_source(write(tmp_path, data), fds)) == LineCount(total, True)


@pytest.mark.parametrize(("data", "total"), COUNTS)
def test_line_count_in_small_chunks_is_the_same(
    tmp_path: Path, fds: list[int], small_chunks: None, data: bytes, total: int
) -> None:
    assert line_count(open_source(write(tmp_path, data), fds)) == LineCount(total, True)


def test_offsets_of_every_line_across_chunk_boundaries(
    tmp_path: Path, fds: list[int], small_chunks: None
) -> None:
    text = [b"%d" % i * (i % 5) for i in range(1, 40)]
    data = b"\n".join(text)
    src = open_source(write(tmp_path, data), fds)
    expected = 0
    for number, line in enumerate(text, start=1):
        assert lines.offset_of_line(src, number) == expected, number
        expected += len(line) + 1
    assert lines.offset_of_line(src, len(text) + 1) is None
    # again, now from the checkpoints the first pass left
    assert lines.offset_of_line(src, 30) == sum(len(t) + 1 for t in text[:29])


def test_the_first_line_starts_after_the_bom(tmp_path: Path, fds: list[int]) -> None:
    src = open_source(write(tmp_path, codecs.BOM_UTF16_LE + "x\ny".encode("utf-16-le")), fds)
    assert lines.offset_of_line(src, 1) == 2
    assert lines.offset_of_line(src, 2) == 6
    assert lines.offset_of_line(src, 3) is None


def test_an_offset_out_of_time_says_how_many_lines_it_passed(
    tmp_path: Path, fds: list[int], small_chunks: None
) -> None:
    src = open_source(write(tmp_path, b"ab\n" * 10), fds)
    src.scan.deadline = time.monotonic() - 1
    with pytest.raises(lines.OutOfTime) as err:
        lines.offset_of_line(src, 8)
    assert err.value.passed_lines == 0


def test_lines_are_read_whole_across_chunks_and_the_last_one_has_no_break(
    tmp_path: Path, fds: list[int], small_chunks: None
) -> None:
    src = open_source(write(tmp_path, b"first line\nsecond\n\nlast"), fds)
    got = [(r.number, r.head, r.long, r.newline) for r in lines.iter_lines_from(src, 0, 1)]
    assert got == [
        (1, b"first line", False, True),
        (2, b"second", False, True),
        (3, b"", False, True),
        (4, b"last", False, False),
    ]


def test_a_line_longer_than_what_is_kept_is_cut_and_marked(tmp_path: Path, fds: list[int]) -> None:
    keep = lines.KEEP_BYTES
    data = b"a" * keep + b"\n" + b"b" * (keep + 1) + b"\n" + b"c" * (keep + 5)
    src = open_source(write(tmp_path, data), fds)
    got = [(r.number, len(r.head), r.long, r.newline) for r in lines.iter_lines_from(src, 0, 7)]
    assert got == [(7, keep, False, True), (8, keep, True, True), (9, keep, True, False)]


def test_a_long_line_over_small_chunks_is_cut_at_the_same_place(
    tmp_path: Path, fds: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lines, "CHUNK", 5)
    monkeypatch.setattr(lines, "KEEP_BYTES", 12)
    src = open_source(write(tmp_path, b"0123456789ABCDEF\nshort\n0123456789AB\nend"), fds)
    got = [(r.head, r.long, r.newline) for r in lines.iter_lines_from(src, 0, 1)]
    assert got == [
        (b"0123456789AB", True, True),
        (b"short", False, True),
        (b"0123456789AB", False, True),
        (b"end", False, False),
    ]


def test_utf16_lines_are_read_on_code_units(tmp_path: Path, fds: list[int], small_chunks: None) -> None:
    data = codecs.BOM_UTF16_LE + "one\ntwo\r\nthree".encode("utf-16-le")
    src = open_source(write(tmp_path, data), fds)
    got = [decode_line(r, src.codec) for r in lines.iter_lines_from(src, 2, 1)]
    assert got == ["one\n", "two\n", "three"]


@pytest.mark.parametrize(
    ("data", "count", "expected"),
    [
        (b"a\nb\nc\n", 2, [2, 4]),
        (b"a\nb\nc", 2, [2, 4]),
        (b"a\nb\nc\n", 5, [0, 2, 4]),
        (b"a\nb\nc\n", 3, [0, 2, 4]),
        (b"a\nb\nc\n", 0, []),
        (b"", 3, []),
        (b"\n", 1, [0]),
        (b"\n\n", 1, [1]),
        (b"only", 1, [0]),
    ],
)
def test_tail_starts(tmp_path: Path, fds: list[int], data: bytes, count: int, expected: list[int]) -> None:
    assert linetail.tail_starts(open_source(write(tmp_path, data), fds), count) == expected


def test_tail_starts_of_a_bom_file(tmp_path: Path, fds: list[int]) -> None:
    src = open_source(write(tmp_path, codecs.BOM_UTF8 + b"a\nb\n"), fds)
    assert linetail.tail_starts(src, 5) == [3, 5]
    assert linetail.tail_starts(open_source(write(tmp_path, codecs.BOM_UTF8, "bom"), fds), 5) == []
    src16 = open_source(write(tmp_path, codecs.BOM_UTF16_LE + "a\nb\n".encode("utf-16-le"), "u16"), fds)
    assert linetail.tail_starts(src16, 1) == [6]
    assert linetail.tail_starts(src16, 9) == [2, 6]


@pytest.mark.parametrize(
    ("bom", "encoding", "straddling"),
    [
        (codecs.BOM_UTF16_LE, "utf-16-le", "\u0a41\u4100"),  # bytes 41 0A 00 41: "0A 00" at an odd offset
        (codecs.BOM_UTF16_BE, "utf-16-be", "\u4100\u0a41"),  # bytes 41 00 0A 41: "00 0A" at an odd offset
    ],
)
def test_a_break_that_straddles_two_code_units_is_no_line_start_backwards(
    tmp_path: Path, fds: list[int], bom: bytes, encoding: str, straddling: str
) -> None:
    data = bom + f"a\n{straddling}{straddling}\nb".encode(encoding)
    src = open_source(write(tmp_path, data, encoding), fds)
    assert linetail.tail_starts(src, 9) == [2, 6, 16]
    assert linetail.tail_starts(src, 2) == [6, 16]
    got = [(r.head.decode(encoding), r.newline) for r in linetail.tail_lines(src, [2, 6, 16], 1, 3)]
    assert got == [("a", True), (straddling * 2, True), ("b", False)]


def test_tail_starts_over_blocks_that_grow(
    tmp_path: Path, fds: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(linetail, "TAIL_BLOCK", 4)
    monkeypatch.setattr(linetail, "TAIL_WINDOW", 16)
    data = b"".join(b"line %02d\n" % i for i in range(30))
    src = open_source(write(tmp_path, data), fds)
    assert linetail.tail_starts(src, 25) == [8 * i for i in range(5, 30)]
    assert linetail.tail_starts(src, 40) == [8 * i for i in range(30)]


def tail(src: lines.Source, count: int, first: int, limit: int) -> list[tuple[int, bytes, bool, bool]]:
    return [
        (r.number, r.head, r.long, r.newline)
        for r in linetail.tail_lines(src, linetail.tail_starts(src, count), first, limit)
    ]


@pytest.mark.parametrize("one_read", [True, False])
def test_tail_lines_in_one_read_or_line_by_line_agree(
    tmp_path: Path, fds: list[int], monkeypatch: pytest.MonkeyPatch, one_read: bool
) -> None:
    if not one_read:
        monkeypatch.setattr(linetail, "TAIL_ONE_READ", 1)
    keep = lines.KEEP_BYTES
    data = b"x\n" + b"L" * (keep + 3) + b"\n" + b"M" * keep + b"\n\nend"
    src = open_source(write(tmp_path, data), fds)
    assert tail(src, 4, 10, 4) == [
        (10, b"L" * keep, True, True),
        (11, b"M" * keep, False, True),
        (12, b"", False, True),
        (13, b"end", False, False),
    ]
    assert tail(src, 4, 10, 2) == tail(src, 4, 10, 4)[:2]
    assert tail(src, 4, 10, 0) == []
    assert linetail.tail_lines(src, [], 1, 5) == []


@pytest.mark.parametrize("one_read", [True, False])
def test_tail_lines_of_a_utf16_file(
    tmp_path: Path, fds: list[int], monkeypatch: pytest.MonkeyPatch, one_read: bool
) -> None:
    if not one_read:
        monkeypatch.setattr(linetail, "TAIL_ONE_READ", 1)
    src = open_source(write(tmp_path, codecs.BOM_UTF16_BE + "ab\ncd\ne".encode("utf-16-be")), fds)
    got = [decode_line(r, src.codec) for r in linetail.tail_lines(src, linetail.tail_starts(src, 2), 2, 2)]
    assert got == ["cd\n", "e"]


def test_read_span_of_a_line_with_and_without_its_break(tmp_path: Path, fds: list[int]) -> None:
    src = open_source(write(tmp_path, b"abc\ndef"), fds)
    assert linetail.read_span(src, 0, 4, 1) == RawLine(1, b"abc", False, True)
    assert linetail.read_span(src, 4, 7, 2) == RawLine(2, b"def", False, False)
    assert linetail.read_span(src, 3, 4, 9) == RawLine(9, b"", False, True)
    assert linetail.read_span(src, 4, 4, 3) == RawLine(3, b"", False, False)


U8 = detect_codec(b"")
MAC = detect_codec(b"a\rb\r")
U16 = detect_codec(codecs.BOM_UTF16_LE + "a\n".encode("utf-16-le"))


@pytest.mark.parametrize(
    ("raw", "codec", "text"),
    [
        (RawLine(1, b"plain", False, True), U8, "plain\n"),
        (RawLine(1, b"plain", False, False), U8, "plain"),
        (RawLine(1, b"crlf\r", False, True), U8, "crlf\n"),
        (RawLine(1, b"cr at end\r", False, False), U8, "cr at end\u240d"),  # not a CRLF: no break
        (RawLine(1, b"long\r", True, True), U8, "long\u240d\n"),  # cut: the CR is not the line's end
        (RawLine(1, b"in\rside", False, True), U8, "in\u240dside\n"),
        (RawLine(1, b"bad \xff byte", False, True), U8, "bad \ufffd byte\n"),
        (RawLine(1, b"lf\ninside", False, True), MAC, "lf\u240ainside\n"),
        (RawLine(1, b"mac", False, True), MAC, "mac\n"),
        (RawLine(1, "wide\r".encode("utf-16-le"), False, True), U16, "wide\n"),
        (RawLine(1, "wide\r".encode("utf-16-le") + b"x", False, True), U16, "wide\u240d\ufffd\n"),
        (RawLine(1, b"", False, True), U8, "\n"),
        (RawLine(1, b"\r", False, True), U8, "\n"),
    ],
)
def test_decode_line(raw: RawLine, codec: Codec, text: str) -> None:
    assert decode_line(raw, codec) == text


def test_decode_line_defaults_to_utf8() -> None:
    assert decode_line(RawLine(1, "é\r".encode(), False, True)) == "é\n"


@pytest.mark.parametrize(
    ("header", "name", "unit", "newline", "cr"),
    [
        (b"", "utf-8", 1, b"\n", b"\r"),
        (b"a\r\nb", "utf-8", 1, b"\n", b"\r"),
        (b"a\rb", "utf-8", 1, b"\r", b"\r"),
        (
            codecs.BOM_UTF16_LE + "a\rb".encode("utf-16-le"),
            "utf-16-le",
            2,
            "\r".encode("utf-16-le"),
            "\r".encode("utf-16-le"),
        ),
        (codecs.BOM_UTF16_BE + b"\0a\0", "utf-16-be", 2, "\n".encode("utf-16-be"), "\r".encode("utf-16-be")),
        (
            codecs.BOM_UTF32_BE + b"\0\0\0a",
            "utf-32-be",
            4,
            "\n".encode("utf-32-be"),
            "\r".encode("utf-32-be"),
        ),
    ],
)
def test_codec_fields(header: bytes, name: str, unit: int, newline: bytes, cr: bytes) -> None:
    c = detect_codec(header)
    assert (c.name, c.unit, c.newline, c.cr) == (name, unit, newline, cr)
    assert c.newline_value == int.from_bytes(newline, "little" if os.sys.byteorder == "little" else "big")
    assert c.plain is (unit == 1 and newline == b"\n")


def test_checkpoints_seek_to_the_last_one_with_fewer_breaks_before_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lines, "CHUNK", 100)
    marks = lines.Checkpoints()
    marks.add(100, 10)
    marks.add(150, 15)  # closer than a chunk to the last one: not kept
    marks.add(200, 20)
    marks.add(300, 30)
    assert list(marks.offsets) == [0, 100, 200, 300] and list(marks.before) == [0, 10, 20, 30]
    assert marks.seek_point(1) == (0, 0)
    assert marks.seek_point(11) == (0, 0)
    assert marks.seek_point(12) == (100, 10)
    assert marks.seek_point(21) == (100, 10)
    assert marks.seek_point(22) == (200, 20)
    assert marks.seek_point(10**9) == (300, 30)


def test_the_cache_keeps_the_most_recently_used_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lines, "CACHE_FILES", 2)
    lru = lines.Lru()
    a, b, c = (1, 1, 1, 1, 1), (2, 2, 2, 2, 2), (3, 3, 3, 3, 3)
    assert lru.put(a, "A") == "A"
    assert lru.put(b, "B") == "B"
    assert lru.put(a, "other") == "A"  # the first one stored stays
    assert lru.get(a) == "A"  # a is now the most recent
    lru.put(c, "C")
    assert lru.get(b) is None and lru.get(a) == "A" and lru.get(c) == "C"
    lru.put(b, "B")
    assert lru.get(a) is None


def test_a_count_is_remembered_per_file_version(tmp_path: Path, fds: list[int]) -> None:
    p = write(tmp_path, b"1\n2\n")
    assert line_count(open_source(p, fds)) == LineCount(2, True)
    st = os.stat(p)
    p.write_bytes(b"1\n\n\n")  # same size
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime put back: ctime still moves
    assert line_count(open_source(p, fds)) == LineCount(3, True)
    assert lines.checkpoints(os.stat(p)) is lines.checkpoints(os.stat(p))


def test_a_count_with_no_deadline_given_uses_the_count_budget(tmp_path: Path, fds: list[int]) -> None:
    src = open_source(write(tmp_path, b"a\n" * 3), fds)
    pending = linecount.PendingCount(src)
    assert pending.result() == LineCount(3, True)
    pending.close()
    assert lines.Scan.start().deadline - time.monotonic() == pytest.approx(lines.SCAN_BUDGET_S, abs=1)


@pytest.fixture
def with_wc(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file counted by `wc -l` (the threshold is 16 MiB in use)."""
    if not platform.has_wc() or platform.fd_path(0) is None:  # no wc, or no way to reopen an fd
        pytest.skip("this platform (or its simulation) has no wc or no /proc: the Python count runs")
    if linecount._wc() is None:
        pytest.fail("coreutils wc is missing")
    monkeypatch.setattr(linecount, "WC_MIN_BYTES", 1)


@pytest.mark.parametrize(("data", "total"), [(b"a\nb\n", 2), (b"a\nb", 2), (b"x", 1), (b"\n" * 1000, 1000)])
def test_wc_counts_like_python(
    tmp_path: Path, fds: list[int], with_wc: None, data: bytes, total: int
) -> None:
    p = write(tmp_path, data, f"wc{len(data)}")
    src = open_source(p, fds)
    pending = linecount.PendingCount(src)
    assert pending._proc is not None  # wc really runs
    assert pending.result() == LineCount(total, True)
    assert pending._proc is None


def test_a_complete_count_is_known_at_once_until_the_file_changes(tmp_path: Path, fds: list[int]) -> None:
    p = write(tmp_path, b"x\n" * (2 << 20), "counted.txt")  # 4 MiB: more than one chunk
    assert line_count(open_source(p, fds)) == LineCount(2 << 20, True)
    # No time left at all: only the remembered count of this very file can answer.
    assert line_count(open_source(p, fds), budget_s=0) == LineCount(2 << 20, True)
    with p.open("ab") as f:
        f.write(b"one more\n")
    again = line_count(open_source(p, fds), budget_s=0)
    assert not again.complete and again.total < 2 << 20  # counted afresh, out of time at once


def test_without_proc_a_deleted_file_is_counted_in_python_not_by_wc(
    tmp_path: Path, fds: list[int], with_wc: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # wc needs a descriptor of its own; by path, a deleted file has none to give it.
    monkeypatch.setenv(platform.SIMULATE_ENV, "no-proc")
    p = write(tmp_path, b"a\nb\nc", "gone.txt")
    src = open_source(p, fds)
    p.unlink()
    pending = linecount.PendingCount(src)
    assert pending._proc is None
    assert pending.result() == LineCount(3, True)


def test_the_wc_run_is_the_systems_not_one_put_earlier_on_path(
    tmp_path: Path, fds: list[int], with_wc: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A workspace's bin/ on PATH (a direnv, a venv) must not choose the program that counts.
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "wc").write_text("#!/bin/sh\necho 999\n")
    (fake / "wc").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setattr(linecount, "_wc_path", [])  # looked up afresh under this PATH
    src = open_source(write(tmp_path, b"a\nb\n", "two"), fds)
    pending = linecount.PendingCount(src)
    assert pending._proc is not None  # wc really runs
    assert pending.result() == LineCount(2, True)


def test_wc_is_not_used_for_a_utf16_file(tmp_path: Path, fds: list[int], with_wc: None) -> None:
    src = open_source(write(tmp_path, codecs.BOM_UTF16_LE + "a\nb\n".encode("utf-16-le")), fds)
    pending = linecount.PendingCount(src)
    assert pending._proc is None
    assert pending.result() == LineCount(2, True)


def test_a_file_changed_while_wc_counts_is_counted_as_it_was(
    tmp_path: Path, fds: list[int], with_wc: None
) -> None:
    p = write(tmp_path, b"1\n2\n3\n")
    src = open_source(p, fds)
    pending = linecount.PendingCount(src)
    assert pending._proc is not None
    with p.open("ab") as f:
        f.write(b"4\n5\n")
    assert pending.result() == LineCount(3, True)


def test_wc_out_of_time_falls_back_to_a_short_python_count(
    tmp_path: Path, fds: list[int], with_wc: None
) -> None:
    src = open_source(write(tmp_path, b"z\n" * 10), fds)
    pending = linecount.PendingCount(src, budget_s=-1)
    assert pending._proc is not None
    assert pending.result() == LineCount(10, True)  # the fallback has a second of its own


def test_a_cancelled_wc_count_raises_and_is_stopped(tmp_path: Path, fds: list[int], with_wc: None) -> None:
    src = open_source(write(tmp_path, b"q\n" * 10), fds)
    pending = linecount.PendingCount(src)
    proc = pending._proc
    assert proc is not None
    src.scan.cancel.set()
    with pytest.raises(lines.ReadCancelled):
        pending.result()
    assert proc.poll() is not None


def test_a_count_nobody_waits_for_is_stopped(tmp_path: Path, fds: list[int], with_wc: None) -> None:
    src = open_source(write(tmp_path, b"q\n" * 10), fds)
    pending = linecount.PendingCount(src)
    proc = pending._proc
    assert proc is not None
    pending.close()
    assert pending._proc is None and proc.poll() is not None
    pending.close()  # twice is harmless


def test_scan_check_uses_the_deadline_it_is_given() -> None:
    scan = lines.Scan.start(budget_s=60)
    scan.check()
    scan.check(time.monotonic() + 10)
    with pytest.raises(lines.OutOfTime):
        scan.check(time.monotonic() - 1)
    late = lines.Scan.start(budget_s=-1)
    with pytest.raises(lines.OutOfTime):
        late.check()
    late.check(time.monotonic() + 10)


def test_wc_really_counts_so_no_python_pass_leaves_checkpoints(
    tmp_path: Path, fds: list[int], with_wc: None, small_chunks: None
) -> None:
    src = open_source(write(tmp_path, b"line\n" * 200), fds)
    assert line_count(src) == LineCount(200, True)
    assert list(lines.checkpoints(src.st).offsets) == [0]  # wc's count: this process read nothing
    other = open_source(write(tmp_path, b"line\n" * 200, "python"), fds)
    linecount.PendingCount(other, budget_s=-1).result()  # wc out of time: the Python fallback counts
    assert len(lines.checkpoints(other.st).offsets) > 100


def test_wc_is_found_on_the_default_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(linecount, "_wc_path", [])
    wc = linecount._wc()
    assert wc is not None and os.path.basename(wc) == "wc" and os.access(wc, os.X_OK)
    assert linecount._wc() is wc  # looked up once


def test_the_scan_exceptions_say_what_stopped_them(tmp_path: Path, fds: list[int], with_wc: None) -> None:
    assert str(lines.OutOfTime(3)) == "out of time" and lines.OutOfTime().passed_lines is None
    src = open_source(write(tmp_path, b"q\n" * 10), fds)
    pending = linecount.PendingCount(src)
    src.scan.cancel.set()
    with pytest.raises(lines.ReadCancelled, match="^cancelled$"):
        pending.result()
    with pytest.raises(lines.ReadCancelled, match="^cancelled$"):
        lines.Scan.start(cancel=src.scan.cancel).check()


def sparse_line(path: Path, before: bytes, hole: int, after: bytes) -> None:
    with path.open("wb") as f:
        f.write(before)
        f.seek(len(before) + hole)
        f.write(after)
    if path.stat().st_blocks * 512 >= hole:
        pytest.fail("this file system stores holes as data")


def test_a_hole_inside_a_line_is_read_as_zeros_up_to_what_is_kept(tmp_path: Path, fds: list[int]) -> None:
    p = tmp_path / "holey"
    sparse_line(p, b"start", 4 << 20, b"end\nnext\n")
    src = open_source(p, fds)
    assert src.sparse
    got = list(lines.iter_lines_from(src, 0, 1))
    assert [(r.number, len(r.head), r.long, r.newline) for r in got] == [
        (1, lines.KEEP_BYTES, True, True),
        (2, 4, False, True),
    ]
    assert got[0].head == b"start" + bytes(lines.KEEP_BYTES - 5) and got[1].head == b"next"
    assert line_count(src) == LineCount(2, True)
    assert lines.offset_of_line(src, 2) == 5 + (4 << 20) + 4


def test_a_line_that_is_all_hole_and_fits_is_not_long(
    tmp_path: Path, fds: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    p = tmp_path / "holey"
    sparse_line(p, b"a\n", 2 << 20, b"\nz\n")
    monkeypatch.setattr(lines, "KEEP_BYTES", 2 << 20)  # the hole is exactly what is kept
    src = open_source(p, fds)
    got = [(r.number, len(r.head), r.long, r.newline) for r in lines.iter_lines_from(src, 0, 1)]
    assert got == [(1, 1, False, True), (2, 2 << 20, False, True), (3, 1, False, True)]


def test_a_count_stops_at_its_own_budget_before_the_scans(tmp_path: Path, fds: list[int]) -> None:
    src = open_source(write(tmp_path, b"c\n" * 50), fds, budget_s=60)
    count = linecount.PendingCount(src, budget_s=-1).result()  # the scan has a minute; the count none
    assert count.complete is False and count.total <= 50
    assert line_count(src) == LineCount(50, True)


def test_the_checkpoints_a_count_leaves_give_every_offset(
    tmp_path: Path, fds: list[int], small_chunks: None
) -> None:
    text = [b"x" * (i % 11) for i in range(60)]
    src = open_source(write(tmp_path, b"\n".join(text)), fds)
    assert line_count(src) == LineCount(60, True)
    assert len(lines.checkpoints(src.st).offsets) > 10
    expected = 0
    for number, line in enumerate(text, start=1):
        assert lines.offset_of_line(src, number) == expected, number
        expected += len(line) + 1


@pytest.mark.parametrize("one_read", [True, False])
def test_a_tail_of_one_line(
    tmp_path: Path, fds: list[int], monkeypatch: pytest.MonkeyPatch, one_read: bool
) -> None:
    if not one_read:
        monkeypatch.setattr(linetail, "TAIL_ONE_READ", 1)
    src = open_source(write(tmp_path, b"a\nbb\nccc\n"), fds)
    assert tail(src, 1, 3, 1) == [(3, b"ccc", False, True)]
    assert tail(src, 2, 2, 1) == [(2, b"bb", False, True)]
