"""Line windows of arbitrarily large files in bounded memory (SPEC §4 ReadFile).

Lines end at b"\\n"; a CR before it is dropped (CRLF shows as LF). Only the first
``KEEP_BYTES`` of any line are ever held, so a 5 MB single line costs 8 KiB.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterator
from dataclasses import dataclass, field

CHUNK = 1 << 20
# A line is cut at 2000 characters; 4 bytes per character at most, plus a little.
KEEP_BYTES = 8192
# Counting lines of a multi-GiB file stops after this long; the total is then a lower bound.
COUNT_BUDGET_S = 5.0


@dataclass(slots=True)
class LineIndex:
    """Newline counts of a file, chunk by chunk: enough to seek to any line fast."""

    total: int
    complete: bool
    offsets: list[int] = field(default_factory=list)  # chunk start offsets
    before: list[int] = field(default_factory=list)  # newlines before each offset

    def seek_point(self, line: int) -> tuple[int, int]:
        """The last (offset, newlines_before) whose line count is below ``line``."""
        lo, hi, best = 0, len(self.offsets) - 1, (0, 0)
        while lo <= hi:
            mid = (lo + hi) // 2
            if self.before[mid] <= line - 1:
                best = (self.offsets[mid], self.before[mid])
                lo = mid + 1
            else:
                hi = mid - 1
        return best


_CACHE: OrderedDict[tuple[int, int, int, int], LineIndex] = OrderedDict()
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 64


def _key(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def line_index(fd: int, st: os.stat_result, budget_s: float = COUNT_BUDGET_S) -> LineIndex:
    """Count the lines of an open file (one sequential pass), cached by inode/size/mtime."""
    key = _key(st)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    idx = _count(fd, st.st_size, budget_s)
    if idx.complete:
        with _CACHE_LOCK:
            _CACHE[key] = idx
            while len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
    return idx


def _count(fd: int, size: int, budget_s: float) -> LineIndex:
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    offsets: list[int] = []
    before: list[int] = []
    pos = newlines = 0
    last = b""
    deadline = time.monotonic() + budget_s
    complete = True
    while True:
        n = os.preadv(fd, [view], pos)
        if n <= 0:
            break
        offsets.append(pos)
        before.append(newlines)
        newlines += buf.count(b"\n", 0, n)
        last = bytes(buf[n - 1 : n])
        pos += n
        if time.monotonic() > deadline and pos < size:
            complete = False
            break
    total = newlines + (1 if pos > 0 and last != b"\n" and complete else 0)
    return LineIndex(total, complete, offsets, before)


def offset_of_line(fd: int, line: int, idx: LineIndex) -> int | None:
    """Byte offset where 1-based ``line`` starts, or None past the end."""
    if line == 1:
        return 0
    pos, seen = idx.seek_point(line)
    need = line - 1 - seen
    while need > 0:
        chunk = os.pread(fd, CHUNK, pos)
        if not chunk:
            return None
        c = chunk.count(b"\n")
        if c < need:
            need -= c
            pos += len(chunk)
            continue
        i = -1
        for _ in range(need):
            i = chunk.find(b"\n", i + 1)
        pos += i + 1
        need = 0
    return pos


@dataclass(slots=True)
class RawLine:
    number: int
    head: bytes  # at most KEEP_BYTES of the line, without its line break
    long: bool  # the line had more than KEEP_BYTES
    newline: bool  # the line ended with a line break


def iter_lines_from(fd: int, pos: int, first_number: int) -> Iterator[RawLine]:
    """Yield RawLine objects from byte ``pos`` on, holding at most one chunk and one head."""
    number = first_number
    head = bytearray()
    long = False
    while True:
        chunk = os.pread(fd, CHUNK, pos)
        if not chunk:
            if head or long:
                yield RawLine(number, bytes(head), long, False)
            return
        pos += len(chunk)
        i = 0
        n = len(chunk)
        while i < n:
            j = chunk.find(b"\n", i)
            end = n if j == -1 else j
            room = KEEP_BYTES - len(head)
            if room > 0:
                head += chunk[i : min(end, i + room)]
            if end - i > max(room, 0):
                long = True
            if j == -1:
                break
            yield RawLine(number, bytes(head), long, True)
            number += 1
            head = bytearray()
            long = False
            i = j + 1


def decode_line(raw: RawLine) -> str:
    """Bytes of a line → text: CR of CRLF dropped, invalid UTF-8 as U+FFFD, LF kept."""
    head = raw.head
    if raw.newline and not raw.long and head.endswith(b"\r"):
        head = head[:-1]
    text = head.decode("utf-8", errors="replace")
    return text + ("\n" if raw.newline else "")


def tail_starts(fd: int, size: int, count: int) -> list[int]:
    """Start offsets of the last ``count`` lines (oldest first), scanning backwards."""
    if size == 0 or count <= 0:
        return []
    end = size
    # A final line break ends the last line; it does not start a new one.
    if os.pread(fd, 1, size - 1) == b"\n":
        end = size - 1
    starts: deque[int] = deque()
    pos = end
    while pos > 0 and len(starts) < count:
        lo = max(0, pos - CHUNK)
        chunk = os.pread(fd, pos - lo, lo)
        j = len(chunk)
        while len(starts) < count:
            k = chunk.rfind(b"\n", 0, j)
            if k == -1:
                break
            starts.appendleft(lo + k + 1)
            j = k
        pos = lo
    if len(starts) < count and pos == 0:
        starts.appendleft(0)
    return list(starts)


def read_span(fd: int, start: int, end: int, number: int) -> RawLine:
    """The line occupying bytes [start, end) (its break included, if any)."""
    length = end - start
    data = os.pread(fd, min(length, KEEP_BYTES + 2), start)
    newline = length > 0 and os.pread(fd, 1, end - 1) == b"\n"
    body_len = length - (1 if newline else 0)
    if newline and body_len > 0 and body_len <= KEEP_BYTES + 1:
        data = data[:body_len]
    long = body_len > KEEP_BYTES
    head = data[:KEEP_BYTES] if long else data[:body_len]
    return RawLine(number, head, long, newline)
