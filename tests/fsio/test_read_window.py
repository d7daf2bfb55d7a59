"""ReadFile's one-piece read of a small file (fsio/window.whole_small) against the
line-by-line path it stands in for: wherever it answers, the Window is the same."""

from __future__ import annotations

import os
import random
import threading
from pathlib import Path

from filegate.fsio import window as rf
from filegate.fsio.lines import Scan, Source, detect_codec
from filegate.fsio.platform import pread

PIECES = [b"a", b"xyz ", b"\t", "é".encode(), "😀".encode(), b"\n", b"\n\n", b"\r", b"\r\n", b"\xff", b"\x00"]
PLAIN = [b"a", b"xyz ", b"\t", "é".encode(), "😀".encode(), b"\n", b"\n\n"]


def _open(path: Path) -> Source:
    fd = os.open(path, os.O_RDONLY)
    return Source(fd, os.fstat(fd), detect_codec(pread(fd, 8192, 0)), Scan.start(cancel=threading.Event()))


def _same(path: Path, n_lines: int) -> bool:
    """Whether the one-piece read answered; if it did, it matched the line-by-line path."""
    fast_src, slow_src = _open(path), _open(path)
    try:
        fast = rf.whole_small(fast_src, n_lines)
        if fast is None:
            return False
        assert fast == rf.lines_window(slow_src, 1, n_lines)
        return True
    finally:
        os.close(fast_src.fd)
        os.close(slow_src.fd)


def _generated(rng: random.Random) -> bytes:
    pieces = PLAIN if rng.random() < 0.8 else PIECES
    lines = [b"".join(rng.choice(pieces) for _ in range(rng.randrange(40))) for _ in range(rng.randrange(35))]
    body = b"\n".join(lines) + (b"\n" if lines and rng.random() < 0.7 else b"")
    if rng.random() < 0.2:
        body += b"L" * rng.choice([1995, 1998, 1999, 2000, 2500]) + b"\n"
    return rng.choice([b"", b"", b"\xef\xbb\xbf"]) + body


def test_the_one_piece_read_makes_the_same_window_over_generated_files(tmp_path: Path) -> None:
    rng = random.Random(20261124)
    taken = []
    for i in range(600):
        path = tmp_path / f"{i}.txt"
        path.write_bytes(_generated(rng))
        taken.append(_same(path, rng.choice([1, 3, 29, 30, 31, 1000, 1000, 1000, 1000])))
    # Not vacuous: both paths were taken many times.
    assert taken.count(True) >= 100 and taken.count(False) >= 100, (taken.count(True), taken.count(False))


def test_the_one_piece_read_is_taken_for_plain_text_and_left_for_what_it_cannot_do(tmp_path: Path) -> None:
    cases = {
        b"one\ntwo\n": True,
        b"one\ntwo": True,
        b"\xef\xbb\xbfbom\n": True,
        b"": False,  # empty: the line-by-line path says so
        b"crlf\r\n": False,
        b"bad \xff\n": False,
        b"x" * 2000 + b"\n": False,  # over MAX_LINE_LENGTH with its break
        b"\n" * 1000: False,  # MAX_LINES
        b"y\n" * (rf.SMALL_WHOLE // 2 + 1): False,  # over SMALL_WHOLE
    }
    for data, taken in cases.items():
        path = tmp_path / "f.txt"
        path.write_bytes(data)
        assert _same(path, 1000) is taken, data[:20]
    path.write_bytes(b"a\nb\nc\n")
    assert _same(path, 3) and not _same(path, 2)  # more lines than asked: line by line


def _rows_file(rng: random.Random) -> list[str]:
    """Lines with their breaks (a document's view): short, long, multi-byte, many or few."""
    n = rng.choice([0, 1, 5, 40, 999, 1000, 1001, 1500])
    width = rng.choice([10, 150, 400, 2500])
    return [rng.choice(["é", "a", "xyz ", "😀"]) * rng.randrange(width) + "\n" for _ in range(n)]


def test_a_window_over_rows_in_memory_matches_the_same_lines_read_from_a_file(tmp_path: Path) -> None:
    """rows_window (a notebook's view) keeps ReadFile's window rules: offsets, columns, tails,
    the line and byte caps, long lines cut, end of file; it is compared with the file reader's."""
    rng = random.Random(20261128)
    reasons = set()
    cases = [([f"{i}\n" for i in range(1500)], 1, 2000, 0)]  # the line cap, surely
    cases += [
        (
            _rows_file(rng),
            rng.choice([1, 2, 37, 999, 1001, 2000, -1, -5, -400, -1000]),
            rng.choice([1, 10, 300, 1000, 2000]),
            rng.choice([0, 0, 0, 3, 1999, 3000]),
        )
        for _ in range(150)
    ]
    columns = set()
    for i, (rows, start, n_lines, column) in enumerate(cases):
        column = column if start > 0 else 0  # a column needs a forward read (ReadFile's rule)
        path = tmp_path / f"{i}.txt"
        path.write_text("".join(rows), encoding="utf-8")
        src = _open(path)
        try:
            expected = rf.read_window(src, start, n_lines, column)
        finally:
            os.close(src.fd)
        got = rf.rows_window(rows, start, n_lines, column)
        assert got == expected, (i, start, n_lines, column, len(rows))
        reasons.add(got.reason)
        columns.add(bool(got.lines and 0 < column < len(rows[start - 1]) - 1))
    assert reasons == {None, "max_lines", "max_bytes"}  # every cap was met
    assert columns == {False, True}  # and reads that began inside a line
