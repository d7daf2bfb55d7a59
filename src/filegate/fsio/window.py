"""ReadFile's window: which lines of a text file, and how many of their bytes, one read
returns (forward from a line, or the file's tail), under Kimi's caps on lines, bytes and line
length; what is known of the file around them. No messages: tools/read_file.py words them."""

from __future__ import annotations

import codecs
from dataclasses import dataclass, field

from filegate.fsio.linecount import PendingCount
from filegate.fsio.lines import (
    CHUNK,
    OutOfTime,
    RawLine,
    Source,
    decode_line,
    iter_lines_from,
    offset_of_line,
)
from filegate.fsio.linetail import tail_lines, tail_starts
from filegate.fsio.platform import pread

# Kimi's limits (read.py): lines per call, bytes of emitted text per call, characters a line.
MAX_LINES = 1000
MAX_BYTES = 100 << 10
MAX_LINE_LENGTH = 2000


def truncate_line(line: str, max_length: int = MAX_LINE_LENGTH, marker: str = "...") -> str:
    """Kimi's truncate_line: the line break counts toward the limit."""
    if len(line) <= max_length:
        return line
    stripped = line.rstrip("\r\n")
    linebreak = line[len(stripped) :]
    return line[: max_length - len(marker + linebreak)] + marker + linebreak


@dataclass(slots=True)
class Window:
    """The lines found, and what is known about the file around them."""

    lines: list[tuple[int, str]] = field(default_factory=list)
    truncated: list[int] = field(default_factory=list)
    total: int = 0
    complete: bool = True  # False: ``total`` is a lower bound (the count ran out of time)
    reason: str | None = None  # "max_lines" | "max_bytes" | "time": why reading stopped early
    eof: bool = False  # the last line returned is the file's last line (or none is left)
    from_end: bool = False  # numbered from the end (-1 = last line): the total is not known
    tail: bool = False
    not_reached: int | None = None  # the offset was not reached in time; lines passed on the way
    cut_before: int = 0  # a tail: lines before the first one kept that the byte cap left out


# A UTF-8 file up to this size, read from line 1, is read in one piece (the common small read,
# a fraction of the line-by-line path's CPU); anything the line-by-line path would treat
# specially sends it there. Under MAX_BYTES, so the byte cap never applies to it.
SMALL_WHOLE = 64 << 10


def read_window(src: Source, start: int, n_lines: int, column: int = 0) -> Window:
    """Lines ``start`` (1-based; negative: from the end) onward, at most ``n_lines``; a
    forward read starts at character ``column`` of its first line (SPEC §8.7)."""
    if start == 1 and column == 0:
        whole = whole_small(src, n_lines)
        if whole is not None:
            return whole
    return lines_window(src, start, n_lines, column)


def whole_small(src: Source, n_lines: int) -> Window | None:
    """The Window the line-by-line path makes for a small UTF-8 file read from line 1, made
    from one read; None where that path has something to do: a CR (dropped or shown as ␍), a
    line over MAX_LINE_LENGTH, bytes that are not UTF-8, more lines than asked or allowed, an
    empty or sparse file, or one whose size changed since it was opened.
    tests/fsio/test_read_window.py compares the two over generated files."""
    c = src.codec
    if not 0 < src.size <= SMALL_WHOLE or not c.plain or c.name != "utf-8" or src.sparse:
        return None
    data = pread(src.fd, src.size + 1 - c.start, c.start)
    if len(data) != src.size - c.start or b"\r" in data:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    rows = text.split("\n")
    ends = rows[-1] == ""
    if ends:
        rows.pop()
    if not rows or len(rows) > n_lines or len(rows) >= MAX_LINES:
        return None
    if max(map(len, rows)) + 1 > MAX_LINE_LENGTH:
        return None
    lines = [(number, row + "\n") for number, row in enumerate(rows, 1)]
    if not ends:
        lines[-1] = (len(rows), rows[-1])
    return Window(lines=lines, total=len(rows), complete=True, eof=True)


def lines_window(src: Source, start: int, n_lines: int, column: int = 0) -> Window:
    # The count (wc -l on a big file) runs while this thread finds and reads the lines.
    counting = PendingCount(src)
    try:
        if start > 0:
            return _forward(src, start, n_lines, counting, column)
        return _tail(src, -start, n_lines, counting)
    finally:
        counting.close()


def _forward(src: Source, start: int, n_lines: int, counting: PendingCount, column: int = 0) -> Window:
    w = Window()
    n_bytes = 0
    exhausted = False
    try:
        pos = offset_of_line(src, start)
        if pos is None:
            exhausted = True
        else:
            if column:
                pos = offset_of_column(src, pos, column)
            for raw in iter_lines_from(src, pos, start):
                n_bytes += _take(w, raw, src)
                if _full(w, n_bytes, n_lines):
                    break
            else:
                exhausted = True
    except OutOfTime as stop:
        w.reason = "time"
        if not w.lines and stop.passed_lines is not None:
            w.not_reached = stop.passed_lines
    count = counting.result()
    last = w.lines[-1][0] if w.lines else start - 1
    w.total, w.complete = count.total, count.complete
    if exhausted and w.lines and not count.complete:
        w.total, w.complete = last, True  # read to the end: the last number is the total
    elif not count.complete:
        w.total = max(count.total, last)
    w.eof = exhausted or (w.complete and last >= w.total)
    return w


def offset_of_column(src: Source, pos: int, column: int) -> int:
    """Byte offset of character ``column`` (0-based) of the line that starts at byte ``pos``,
    or of its line break when the line is shorter. Characters are counted as the codec decodes
    them, an undecodable byte as one; at most one chunk is held at a time, under the deadline.
    """
    c = src.codec
    errors = "surrogatepass" if c.unit > 1 else "surrogateescape"
    decoder = codecs.getincrementaldecoder(c.name)(errors)
    breaks = "\n" if c.lf_breaks else "\r"
    seen = 0  # characters decoded before this chunk
    at = pos
    while at < src.size:
        src.scan.check()
        data = pread(src.fd, min(CHUNK, src.size - at), at)
        if not data:
            break
        pending = len(decoder.getstate()[0])
        text = decoder.decode(data)
        end = text.find(breaks)
        room = len(text) if end < 0 else end
        if seen + room >= column or end >= 0:
            take = text[: min(column - seen, room)]
            return at - pending + len(take.encode(c.name, errors))
        seen += len(text)
        at += len(data)
    return at


def _take(w: Window, raw: RawLine, src: Source) -> int:
    text = decode_line(raw, src.codec)
    cut = truncate_line(text)
    if cut != text or raw.long:
        w.truncated.append(raw.number)
    w.lines.append((raw.number, cut))
    return len(cut.encode("utf-8"))


def _tail(src: Source, want: int, n_lines: int, counting: PendingCount) -> Window:
    w = Window(tail=True)
    try:
        starts = tail_starts(src, want)
    except OutOfTime:
        count = counting.result()
        return Window(total=count.total, complete=count.complete, reason="time", tail=True)
    count = counting.result()
    w.total, w.complete = count.total, count.complete
    if starts and starts[0] == src.codec.start and len(starts) < want:
        w.total, w.complete = len(starts), True  # the tail reached line 1: the whole file
    if w.complete and w.total >= len(starts):
        first = w.total - len(starts) + 1
    else:  # never print absolute numbers that are not known
        first, w.from_end = -len(starts), True
        w.total = max(w.total, len(starts))
    limit = min(n_lines, MAX_LINES)
    window = tail_lines(src, starts, first, limit)
    w.eof = limit >= len(starts)
    if _keep_tail(window, w, src):
        w.reason = "max_bytes"
        w.cut_before = len(window) - len(w.lines)
    return w


def _keep_tail(window: list[RawLine], w: Window, src: Source) -> bool:
    """Keep the newest lines of ``window`` that fit the byte cap (Kimi's tail rule)."""
    decoded = []
    for r in window:
        text = decode_line(r, src.codec)
        cut = truncate_line(text)
        decoded.append((r.number, cut, cut != text or r.long))
    total_bytes = 0
    max_bytes = False
    kept: list[tuple[int, str, bool]] = []
    for item in reversed(decoded):
        size = len(item[1].encode("utf-8"))
        if kept and total_bytes + size > MAX_BYTES:
            max_bytes = True
            break
        total_bytes += size
        kept.append(item)
    kept.reverse()
    for number, text, was_cut in kept:
        w.lines.append((number, text))
        if was_cut:
            w.truncated.append(number)
    return max_bytes


def rows_window(rows: list[str], start: int, n_lines: int, column: int = 0) -> Window:
    """The same window over lines already in memory (a document's text view), each with its
    line break: forward from ``start`` (at character ``column`` of its first line) or the last
    ``-start`` lines, under the same caps."""
    w = Window(total=len(rows), tail=start < 0)
    if start > 0:
        n_bytes = 0
        for number in range(start, len(rows) + 1):
            row = rows[number - 1]
            if column and number == start:  # past its end: the line break alone, as in a file
                body = row.rstrip("\n")
                row = body[min(column, len(body)) :] + row[len(body) :]
            n_bytes += _take_row(w, number, row)
            if _full(w, n_bytes, n_lines):
                break
        w.eof = not w.lines or w.lines[-1][0] >= len(rows)
        return w
    first = max(1, len(rows) + start + 1)
    limit = min(n_lines, MAX_LINES)
    chosen = list(range(first, min(first + limit, len(rows) + 1)))
    w.eof = not chosen or chosen[-1] >= len(rows)
    kept: list[tuple[int, str, bool]] = []
    total_bytes = 0
    for number in reversed(chosen):
        text = truncate_line(rows[number - 1])
        size = len(text.encode("utf-8"))
        if kept and total_bytes + size > MAX_BYTES:
            w.reason = "max_bytes"
            w.cut_before = len(chosen) - len(kept)
            break
        total_bytes += size
        kept.append((number, text, text != rows[number - 1]))
    for number, text, was_cut in reversed(kept):
        w.lines.append((number, text))
        if was_cut:
            w.truncated.append(number)
    return w


def _take_row(w: Window, number: int, text: str) -> int:
    cut = truncate_line(text)
    if cut != text:
        w.truncated.append(number)
    w.lines.append((number, cut))
    return len(cut.encode("utf-8"))


def _full(w: Window, n_bytes: int, n_lines: int) -> bool:
    """Whether a forward window is complete: the lines asked for, or a cap (named in ``reason``)."""
    if len(w.lines) >= n_lines:
        return True
    if len(w.lines) >= MAX_LINES:
        w.reason = "max_lines"
        return True
    if n_bytes >= MAX_BYTES:
        w.reason = "max_bytes"
        return True
    return False
