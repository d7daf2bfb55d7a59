"""fsio/window.py at its seam: which lines a ReadFile window holds, forward and from the end,
under Kimi's caps on lines, bytes and line length (the tool words them; tests/tools test that)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from filegate.fsio import linecount
from filegate.fsio import window as fw
from filegate.fsio.lines import Scan, Source, detect_codec
from filegate.fsio.platform import pread


@pytest.fixture
def read(tmp_path: Path) -> Iterator[object]:
    opened: list[int] = []

    def window(data: bytes, start: int, n_lines: int = 1000) -> fw.Window:
        path = tmp_path / f"f{len(opened)}.txt"
        path.write_bytes(data)
        fd = os.open(path, os.O_RDONLY)
        opened.append(fd)
        src = Source(fd, os.fstat(fd), detect_codec(pread(fd, 8192, 0)), Scan.start(cancel=threading.Event()))
        return fw.read_window(src, start, n_lines)

    yield window
    for fd in opened:
        os.close(fd)


def numbered(n: int, width: int = 0) -> bytes:
    return b"".join(b"line %d%s\n" % (i, b"x" * width) for i in range(1, n + 1))


def test_truncate_line_counts_the_line_break_toward_the_limit() -> None:
    assert fw.truncate_line("abc\n", 10) == "abc\n"
    assert fw.truncate_line("a" * 20 + "\n", 10) == "a" * 6 + "...\n"
    assert fw.truncate_line("a" * 20 + "\r\n", 10) == "a" * 5 + "...\r\n"
    assert fw.truncate_line("a" * 20, 10) == "a" * 7 + "..."
    assert len(fw.truncate_line("b" * 5000 + "\n")) == fw.MAX_LINE_LENGTH


def test_a_forward_window_from_the_middle(read: object) -> None:
    w = read(numbered(10), 4, 3)  # type: ignore[operator]
    assert w.lines == [(4, "line 4\n"), (5, "line 5\n"), (6, "line 6\n")]
    assert (w.total, w.complete, w.reason, w.eof, w.tail) == (10, True, None, False, False)


def test_a_forward_window_to_the_end_says_eof(read: object) -> None:
    w = read(numbered(10), 8, 100)  # type: ignore[operator]
    assert [n for n, _ in w.lines] == [8, 9, 10]
    assert w.eof and w.total == 10 and w.reason is None


def test_an_offset_past_the_end_returns_no_lines_and_the_total(read: object) -> None:
    w = read(numbered(5), 50)  # type: ignore[operator]
    assert w.lines == [] and w.total == 5 and w.eof and w.complete


def test_max_lines_stops_a_forward_read(read: object) -> None:
    w = read(numbered(1500), 2, 5000)  # type: ignore[operator]
    assert len(w.lines) == fw.MAX_LINES and w.lines[0][0] == 2
    assert w.reason == "max_lines" and w.total == 1500 and not w.eof


def test_the_byte_cap_stops_a_forward_read(read: object) -> None:
    w = read(numbered(200, width=1000), 1)  # type: ignore[operator]
    sent = sum(len(t.encode()) for _, t in w.lines)
    assert w.reason == "max_bytes" and sent >= fw.MAX_BYTES and len(w.lines) < 200
    assert sent - len(w.lines[-1][1].encode()) < fw.MAX_BYTES  # stopped at the first line past it


def test_long_lines_are_cut_and_named(read: object) -> None:
    data = b"short\n" + b"L" * 3000 + b"\nafter\n"
    w = read(data, 2)  # type: ignore[operator]
    assert w.truncated == [2]
    assert w.lines[0][1] == "L" * (fw.MAX_LINE_LENGTH - 4) + "...\n"
    assert w.lines[1] == (3, "after\n")


def test_a_tail_numbers_its_lines_from_the_real_total(read: object) -> None:
    w = read(numbered(50), -3)  # type: ignore[operator]
    assert w.tail and w.lines == [(48, "line 48\n"), (49, "line 49\n"), (50, "line 50\n")]
    assert w.total == 50 and w.complete and w.eof and not w.from_end


def test_a_tail_longer_than_the_file_is_the_whole_file(read: object) -> None:
    w = read(numbered(4), -10)  # type: ignore[operator]
    assert [n for n, _ in w.lines] == [1, 2, 3, 4] and w.total == 4 and w.complete


def test_a_tail_keeps_the_newest_lines_that_fit_the_byte_cap(read: object) -> None:
    w = read(numbered(150, width=1000), -150)  # type: ignore[operator]
    assert w.reason == "max_bytes" and w.lines[-1][0] == 150
    assert w.cut_before == 150 - len(w.lines) > 0
    assert sum(len(t.encode()) for _, t in w.lines) <= fw.MAX_BYTES


def test_a_tail_with_fewer_lines_asked_than_taken(read: object) -> None:
    w = read(numbered(30), -10, 4)  # type: ignore[operator]
    assert [n for n, _ in w.lines] == [21, 22, 23, 24] and not w.eof


def test_a_tail_names_its_cut_long_lines(read: object) -> None:
    data = numbered(3) + b"M" * 2500 + b"\n"
    w = read(data, -2)  # type: ignore[operator]
    assert w.lines[0] == (3, "line 3\n") and w.truncated == [4]
    assert w.lines[1][1].endswith("...\n") and len(w.lines[1][1]) == fw.MAX_LINE_LENGTH


def exact_lines(n: int, size: int = 1024) -> bytes:
    """``n`` lines of exactly ``size`` bytes each, line break included."""
    return b"".join(b"%06d" % i + b"x" * (size - 7) + b"\n" for i in range(1, n + 1))


def test_a_forward_read_that_fills_the_byte_cap_exactly_stops_there(read: object) -> None:
    """Kimi's rule: the line that brings the bytes to the cap is the last one sent."""
    w = read(exact_lines(150), 2)  # type: ignore[operator]
    assert sum(len(t.encode()) for _, t in w.lines) == fw.MAX_BYTES
    assert [w.lines[0][0], w.lines[-1][0], len(w.lines)] == [2, 101, 100]
    assert w.reason == "max_bytes" and not w.eof


def test_a_tail_that_fills_the_byte_cap_exactly_keeps_every_line(read: object) -> None:
    w = read(exact_lines(150), -100, 100)  # type: ignore[operator]
    assert [w.lines[0][0], w.lines[-1][0], len(w.lines)] == [51, 150, 100]
    assert (w.reason, w.cut_before, w.eof) == (None, 0, True)


def _out_of_time(tmp_path: Path, start: int) -> fw.Window:
    path = tmp_path / "late.txt"
    path.write_bytes(numbered(50))
    fd = os.open(path, os.O_RDONLY)
    try:  # a scan whose deadline has passed: every step of it is out of time
        src = Source(fd, os.fstat(fd), detect_codec(pread(fd, 8192, 0)), Scan(deadline=time.monotonic() - 1))
        return fw.read_window(src, start, 10)
    finally:
        os.close(fd)


def test_a_tail_out_of_time_says_so_and_knows_no_total(tmp_path: Path) -> None:
    w = _out_of_time(tmp_path, -10)
    assert (w.reason, w.tail, w.lines, w.total, w.complete, w.eof) == ("time", True, [], 0, False, False)


def test_a_forward_read_out_of_time_before_its_line_says_how_far_it_got(tmp_path: Path) -> None:
    """No line reached: the total is at least the lines before the one asked for, and not known."""
    w = _out_of_time(tmp_path, 5)
    assert (w.reason, w.lines, w.not_reached) == ("time", [], 0)
    assert (w.total, w.complete, w.eof, w.tail) == (4, False, False, False)


def test_a_tail_whose_count_ran_out_numbers_from_the_end_unless_it_reached_line_1(
    read: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The line count gave up (its budget spent: a huge file), the tail did not: its lines are
    numbered from the end (-10 … -1), since absolute numbers are not known; a tail that reached
    line 1 knows them all the same."""
    monkeypatch.setattr(linecount, "COUNT_BUDGET_S", -1.0)
    w = read(numbered(50), -10, 10)  # type: ignore[operator]
    assert [n for n, _ in w.lines] == list(range(-10, 0)) and w.lines[0][1] == "line 41\n"
    assert (w.from_end, w.total, w.complete, w.eof) == (True, 10, False, True)
    w = read(numbered(50), -100)  # type: ignore[operator]
    assert [n for n, _ in w.lines] == list(range(1, 51))
    assert (w.from_end, w.total, w.complete) == (False, 50, True)


@pytest.mark.parametrize("start", [2, -2])
def test_a_utf16_file_is_read_in_its_own_codec_forward_and_from_the_end(read: object, start: int) -> None:
    data = "\ufeffone\nzwei\ndrei ü\n".encode("utf-16-le")
    w = read(data, start)  # type: ignore[operator]
    assert [t for _, t in w.lines] == ["zwei\n", "drei ü\n"]
