"""Line windows of arbitrarily large files in bounded memory (SPEC §4 ReadFile).

Lines end at b"\\n"; a CR before it is dropped (CRLF shows as LF). Only the first
``KEEP_BYTES`` of any line are ever held, so a 5 MB single line costs 8 KiB.

Two facts about a file are remembered, keyed by (device, inode, size, mtime): its line count,
and checkpoints (byte offset, lines before it) every ``CHUNK`` bytes that a scan has passed, so
a repeat read of an unchanged file neither counts nor scans again.
"""

from __future__ import annotations

import array
import contextlib
import os
import shutil
import subprocess
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
# Files this large are counted by coreutils `wc -l`, in a process of its own: it counts with
# SIMD (1 GiB in 0.17 s on the benchmark machine, bench/README.md) where bytes.count manages
# 1.2 GB/s, and it runs on another core while this thread finds the requested lines.
# Below this size the Python count takes < 15 ms and spawning wc would cost more than it saves.
WC_MIN_BYTES = 16 << 20
# When wc runs out of the budget (a huge file on a slow disk), a Python count this long gives
# the lower bound that is reported ("at least N").
FALLBACK_BUDGET_S = 1.0
# A tail is looked for in a block this large first (100 log lines are ~11 KB), then 4x larger.
TAIL_BLOCK = 64 << 10
# A tail window spanning at most this many bytes is read with one pread.
TAIL_ONE_READ = 4 << 20
# Unchanged files whose count and checkpoints are remembered.
CACHE_FILES = 64

Key = tuple[int, int, int, int]


def file_key(st: os.stat_result) -> Key:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


@dataclass(frozen=True, slots=True)
class LineCount:
    total: int
    complete: bool  # False: counting stopped at the budget and ``total`` is a lower bound


@dataclass(slots=True)
class Checkpoints:
    """(offset, newlines before it) at chunk starts, ascending; grows as scans pass them."""

    offsets: array.array[int] = field(default_factory=lambda: array.array("q", [0]))
    before: array.array[int] = field(default_factory=lambda: array.array("q", [0]))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def seek_point(self, line: int) -> tuple[int, int]:
        """The last (offset, newlines_before) with fewer than ``line - 1`` newlines before it.

        Fewer, not as many: a checkpoint may fall inside a line, so the scan from it must
        still see the newline that ends line ``line - 1``.
        """
        with self.lock:
            lo, hi, best = 0, len(self.offsets) - 1, 0
            while lo <= hi:
                mid = (lo + hi) // 2
                if self.before[mid] < line - 1:
                    best = mid
                    lo = mid + 1
                else:
                    hi = mid - 1
            return self.offsets[best], self.before[best]

    def add(self, offset: int, before: int) -> None:
        with self.lock:
            if offset > self.offsets[-1]:
                self.offsets.append(offset)
                self.before.append(before)


class _Lru:
    def __init__(self) -> None:
        self._data: OrderedDict[Key, object] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Key) -> object | None:
        with self._lock:
            hit = self._data.get(key)
            if hit is not None:
                self._data.move_to_end(key)
            return hit

    def put(self, key: Key, value: object) -> object:
        """Store ``value`` unless another thread stored one first; return the stored one."""
        with self._lock:
            old = self._data.setdefault(key, value)
            self._data.move_to_end(key)
            while len(self._data) > CACHE_FILES:
                self._data.popitem(last=False)
            return old


_COUNTS = _Lru()
_MARKS = _Lru()


def checkpoints(st: os.stat_result) -> Checkpoints:
    key = file_key(st)
    hit = _MARKS.get(key)
    if isinstance(hit, Checkpoints):
        return hit
    stored = _MARKS.put(key, Checkpoints())
    assert isinstance(stored, Checkpoints)
    return stored


# --- counting ------------------------------------------------------------------------------


class PendingCount:
    """A line count under way (``wc -l`` in its own process) or already known."""

    def __init__(self, fd: int, st: os.stat_result, budget_s: float = COUNT_BUDGET_S) -> None:
        self._fd, self._st, self._budget = fd, st, budget_s
        self._deadline = time.monotonic() + budget_s
        self._known: LineCount | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        hit = _COUNTS.get(file_key(st))
        if isinstance(hit, LineCount):
            self._known = hit
        elif st.st_size >= WC_MIN_BYTES and _wc() is not None:
            self._proc = _spawn_wc(fd)
        if self._known is None and self._proc is None:
            self._known = self._remember(_count(fd, st, budget_s))

    def result(self) -> LineCount:
        if self._known is not None:
            return self._known
        assert self._proc is not None
        proc, self._proc = self._proc, None
        try:
            out, _ = proc.communicate(timeout=max(self._deadline - time.monotonic(), 0.01))
            newlines = int(out.split()[0]) if proc.returncode == 0 and out.split() else None
        except subprocess.TimeoutExpired:
            _stop(proc)
            newlines = None
        except ValueError:  # not a number: a wc unlike coreutils' or BSD's
            newlines = None
        if newlines is None:
            self._known = self._remember(_count(self._fd, self._st, FALLBACK_BUDGET_S))
        else:
            last = os.pread(self._fd, 1, self._st.st_size - 1) if self._st.st_size else b"\n"
            self._known = self._remember(LineCount(newlines + (last != b"\n"), True))
        return self._known

    def close(self) -> None:
        """Stop a count nobody will wait for (the read failed or was abandoned)."""
        if self._proc is not None:
            _stop(self._proc)
            self._proc = None

    def _remember(self, count: LineCount) -> LineCount:
        if count.complete:
            stored = _COUNTS.put(file_key(self._st), count)
            assert isinstance(stored, LineCount)
            return stored
        return count


def line_count(fd: int, st: os.stat_result, budget_s: float = COUNT_BUDGET_S) -> LineCount:
    """The number of lines of an open file, one sequential pass at most, cached."""
    pending = PendingCount(fd, st, budget_s)
    try:
        return pending.result()
    finally:
        pending.close()


_wc_path: list[str | None] = []


def _wc() -> str | None:
    if not _wc_path:
        _wc_path.append(shutil.which("wc", path=os.defpath) or shutil.which("wc"))
    return _wc_path[0]


def _spawn_wc(fd: int) -> subprocess.Popen[bytes] | None:
    """`wc -l` reading the already-open file from its start (no path is opened again)."""
    wc = _wc()
    if wc is None:
        return None
    try:
        os.lseek(fd, 0, os.SEEK_SET)  # this fd is otherwise only read with pread
        return subprocess.Popen([wc, "-l"], stdin=fd, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env={"LC_ALL": "C"})  # fmt: skip
    except OSError:
        return None


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):  # stuck in the kernel (a hung NFS)
        proc.wait(timeout=1.0)
    if proc.stdout is not None:
        proc.stdout.close()


def _count(fd: int, st: os.stat_result, budget_s: float) -> LineCount:
    """Count in Python, leaving a checkpoint at every chunk on the way."""
    marks = checkpoints(st)
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    pos = newlines = 0
    last = b""
    deadline = time.monotonic() + budget_s
    complete = True
    while True:
        n = os.preadv(fd, [view], pos)
        if n <= 0:
            break
        newlines += buf.count(b"\n", 0, n)
        last = bytes(buf[n - 1 : n])
        pos += n
        if n == CHUNK:
            marks.add(pos, newlines)
        if time.monotonic() > deadline and pos < st.st_size:
            complete = False
            break
    return LineCount(newlines + (1 if pos > 0 and last != b"\n" and complete else 0), complete)


# --- finding and reading lines -------------------------------------------------------------


def offset_of_line(fd: int, line: int, marks: Checkpoints) -> int | None:
    """Byte offset where 1-based ``line`` starts, or None past the end."""
    if line == 1:
        return 0
    pos, seen = marks.seek_point(line)
    need = line - 1 - seen
    while need > 0:
        chunk = os.pread(fd, CHUNK, pos)
        if not chunk:
            return None
        c = chunk.count(b"\n")
        if c < need:
            need -= c
            pos += len(chunk)
            if len(chunk) == CHUNK:
                marks.add(pos, line - 1 - need)
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
            if not head and not long and j != -1 and end - i <= KEEP_BYTES:
                yield RawLine(number, chunk[i:end], False, True)  # the common case: one slice
                number += 1
                i = j + 1
                continue
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
    block = TAIL_BLOCK
    while pos > 0 and len(starts) < count:
        lo = max(0, pos - block)
        chunk = os.pread(fd, pos - lo, lo)
        j = len(chunk)
        while len(starts) < count:
            k = chunk.rfind(b"\n", 0, j)
            if k == -1:
                break
            starts.appendleft(lo + k + 1)
            j = k
        pos = lo
        block = min(block * 4, CHUNK)
    if len(starts) < count and pos == 0:
        starts.appendleft(0)
    return list(starts)


def tail_lines(fd: int, size: int, starts: list[int], first_number: int, limit: int) -> list[RawLine]:
    """The first ``limit`` of the lines beginning at ``starts`` (from tail_starts)."""
    k = min(len(starts), limit)
    if k <= 0:
        return []
    bounds = [*starts, size]
    base, stop = starts[0], bounds[k]
    if stop - base > TAIL_ONE_READ:
        return [read_span(fd, bounds[i], bounds[i + 1], first_number + i) for i in range(k)]
    data = os.pread(fd, stop - base, base)
    out: list[RawLine] = []
    for i in range(k):
        a, b = bounds[i] - base, min(bounds[i + 1] - base, len(data))
        newline = b > a and data[b - 1 : b] == b"\n"
        body = data[a : b - 1] if newline else data[a:b]
        long = len(body) > KEEP_BYTES
        out.append(RawLine(first_number + i, body[:KEEP_BYTES] if long else body, long, newline))
    return out


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
