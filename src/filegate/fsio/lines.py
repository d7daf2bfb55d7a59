# size: one job, line windows of huge, changing files; its parts share source, codec, checkpoints
"""Line windows of arbitrarily large files in bounded memory and bounded time (SPEC §4 ReadFile).

A file is read through a :class:`Source`: the open descriptor, the stat taken when the read
started (nothing past that size is read, so a file being appended is counted and numbered as
it was), the file's :class:`Codec` and the call's :class:`Scan` (its deadline and its cancel
flag, checked at every chunk). Holes of sparse files are skipped with SEEK_DATA/SEEK_HOLE:
they hold zeros, never a line break.

Codecs: as fsio/codec.py decides them (a BOM is skipped; UTF-16/32 by code unit). Lines end
at the codec's LF
(a CR before it is dropped: CRLF shows as LF), or at CR when the first bytes hold CRs and no
LF (classic Mac files). Only the first ``KEEP_BYTES`` of any line are ever held, so a 5 MB
single line costs 8 KiB.

Two facts about a file are remembered, keyed by (device, inode, size, mtime, ctime): its line
count, and checkpoints (byte offset, line breaks before it) about every ``CHUNK`` bytes that a
scan has passed, so a repeat read of an unchanged file neither counts nor scans again. ctime
is in the key because a rewrite of the same size can put its old mtime back; its ctime moves.
"""

from __future__ import annotations

import array
import contextlib
import errno
import os
import shutil
import subprocess
import sys
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterator
from dataclasses import dataclass, field

from filegate.fsio import platform
from filegate.fsio.codec import FileCodec, bom_codec

CHUNK = 1 << 20
# A line is cut at 2000 characters; 4 bytes per character at most, plus a little.
KEEP_BYTES = 8192
# Counting lines of a multi-GiB file stops after this long; the total is then a lower bound.
COUNT_BUDGET_S = 5.0
# Seeking to an offset, reading lines and finding a tail stop after this long in all (a client
# such as Kimi CLI gives a tool call 60 s); the answer then says what is known.
SCAN_BUDGET_S = 15.0
# Files this large are counted by coreutils `wc -l`, in a process of its own: it counts with
# SIMD, several times faster than bytes.count, and it runs on another core while this thread
# finds the requested lines. Below this size the Python count is quicker than spawning wc.
WC_MIN_BYTES = 16 << 20
# When wc runs out of the budget (a huge file on a slow disk), a Python count this long gives
# the lower bound that is reported ("at least N").
FALLBACK_BUDGET_S = 1.0
# A tail is looked for in a block this large first (enough for 100 lines of a typical log),
# then in blocks 4 times larger.
TAIL_BLOCK = 64 << 10
# A tail window spanning at most this many bytes is read with one pread.
TAIL_ONE_READ = 4 << 20
# Unchanged files whose count and checkpoints are remembered.
CACHE_FILES = 64
# A file with more unallocated bytes than this is read hole by hole (SEEK_DATA/SEEK_HOLE).
SPARSE_SLACK = 1 << 20
# A tail looks for data in windows this large, from the end, each twice the one before.
TAIL_WINDOW = 64 << 20
# More data segments than this in one window (alternating blocks and holes) are not mapped.
MAX_SEGMENTS = 4096
# A wc that is running is looked at this often, so that a cancelled read stops it soon.
POLL_S = 0.05

Key = tuple[int, int, int, int, int]


def file_key(st: os.stat_result) -> Key:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


# --- the call's deadline and cancellation ---------------------------------------------------


class ScanStopped(Exception):
    """A scan stopped before it was done."""


class ReadCancelled(ScanStopped):
    """Nobody waits for this read any more."""


class OutOfTime(ScanStopped):
    """The scan's time budget ran out; ``passed_lines`` line breaks were seen before it."""

    def __init__(self, passed_lines: int | None = None) -> None:
        super().__init__("out of time")
        self.passed_lines = passed_lines


@dataclass(slots=True)
class Scan:
    deadline: float
    cancel: threading.Event = field(default_factory=threading.Event)

    @classmethod
    def start(cls, budget_s: float | None = None, cancel: threading.Event | None = None) -> Scan:
        budget = SCAN_BUDGET_S if budget_s is None else budget_s
        return cls(time.monotonic() + budget, cancel or threading.Event())

    def check(self, deadline: float | None = None) -> None:
        if self.cancel.is_set():
            raise ReadCancelled("cancelled")
        if time.monotonic() > (self.deadline if deadline is None else deadline):
            raise OutOfTime()


# --- codecs ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Codec:
    name: str  # Python codec of the text after the BOM
    unit: int  # bytes per code unit: 1, 2 or 4
    start: int  # bytes of BOM before line 1
    newline: bytes  # the line break, one code unit
    cr: bytes  # CR as one code unit (dropped before a LF break)
    lf_breaks: bool  # False: lines end at CR (a classic Mac file)

    @property
    def newline_value(self) -> int:
        return int.from_bytes(self.newline, sys.byteorder)

    @property
    def plain(self) -> bool:
        """Byte-for-byte what `wc -l` counts."""
        return self.unit == 1 and self.lf_breaks


def detect_codec(header: bytes) -> Codec:
    """The codec of a file from its first bytes: a BOM decides, else UTF-8."""
    return line_codec(bom_codec(header) or FileCodec(), header)


def line_codec(fc: FileCodec, header: bytes) -> Codec:
    """The line reader's view of a decided codec (fsio/codec.py): its code unit, the BOM to
    skip, and whether lines end at LF or, with no LF in ``header`` but a CR, at CR."""
    name, unit, start = fc.name, fc.unit, len(fc.bom)
    body = header[start : len(header) - (len(header) - start) % unit]
    text = body.decode(name, errors="replace")
    lf = "\n" in text or "\r" not in text
    return Codec(name, unit, start, ("\n" if lf else "\r").encode(name), "\r".encode(name), lf)


UTF8 = detect_codec(b"")


def _typecode(unit: int) -> str:
    for code in ("H", "I", "L"):
        if array.array(code).itemsize == unit:
            return code
    raise RuntimeError(f"no array type of {unit} bytes")  # pragma: no cover


def _count_breaks(codec: Codec, data: bytes) -> int:
    if codec.unit == 1:
        return data.count(codec.newline)
    units = array.array(_typecode(codec.unit))
    units.frombytes(memoryview(data)[: len(data) - len(data) % codec.unit])
    return units.count(codec.newline_value)


def _find_break(codec: Codec, data: bytes, base: int, start: int, end: int | None = None) -> int:
    """Index of the first line break in ``data[start:end]`` on a code-unit boundary of the
    file (``data`` starts at file offset ``base``), or -1."""
    while True:
        k = data.find(codec.newline, start, end)
        if k == -1 or (base + k) % codec.unit == 0:
            return k
        start = k + 1


def _rfind_break(codec: Codec, data: bytes, base: int, end: int) -> int:
    while True:
        k = data.rfind(codec.newline, 0, end)
        if k == -1 or (base + k) % codec.unit == 0:
            return k
        end = k + codec.unit - 1


# --- the file being read --------------------------------------------------------------------


@dataclass(slots=True)
class Source:
    """An open file as it was when the read started."""

    fd: int
    st: os.stat_result
    codec: Codec
    scan: Scan

    @property
    def size(self) -> int:
        return self.st.st_size

    @property
    def sparse(self) -> bool:
        return self.st.st_blocks * 512 + SPARSE_SLACK < self.st.st_size


def _seek_data(fd: int, pos: int) -> int | None:
    """The first data byte at or after ``pos``; None when only a hole follows."""
    try:
        return os.lseek(fd, pos, os.SEEK_DATA)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            return None
        return pos  # no SEEK_DATA on this file system: all of it is data


def _seek_hole(fd: int, pos: int, end: int) -> int:
    try:
        return min(os.lseek(fd, pos, os.SEEK_HOLE), end)
    except OSError:
        return end


def _chunks(
    src: Source, pos: int, end: int, deadline: float | None = None
) -> Iterator[tuple[int, bytes | int]]:
    """(offset, bytes) of data and (offset, length) of holes from ``pos`` to ``end``."""
    while pos < end:
        src.scan.check(deadline)
        n = min(CHUNK, end - pos)
        if src.sparse:
            data_at = _seek_data(src.fd, pos)
            if data_at is None or data_at >= end:
                yield pos, end - pos
                return
            if data_at > pos:
                yield pos, data_at - pos
                pos = data_at
                continue
            n = min(n, max(_seek_hole(src.fd, pos, end) - pos, 1))
        data = platform.pread(src.fd, n, pos)
        if not data:  # the file shrank
            return
        yield pos, data
        pos += len(data)


def _segments(src: Source, lo: int, hi: int) -> list[tuple[int, int]]:
    """The data regions of [lo, hi), ascending (all of it when the file is not sparse).

    A window of more than ``MAX_SEGMENTS`` regions (alternating blocks and holes) is returned
    whole: its holes are then read as zeros, under the scan's deadline, in bounded memory.
    """
    if not src.sparse:
        return [(lo, hi)] if lo < hi else []
    out: list[tuple[int, int]] = []
    pos = lo
    while pos < hi:
        src.scan.check()
        data_at = _seek_data(src.fd, pos)
        if data_at is None or data_at >= hi:
            break
        hole_at = max(_seek_hole(src.fd, data_at, hi), data_at + 1)
        out.append((data_at, hole_at))
        if len(out) > MAX_SEGMENTS:
            return [(lo, hi)]
        pos = hole_at
    return out


def _ends_with_break(src: Source) -> bool:
    u = src.codec.unit
    return src.size - u >= src.codec.start and platform.pread(src.fd, u, src.size - u) == src.codec.newline


# --- remembered facts -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LineCount:
    total: int
    complete: bool  # False: counting stopped at the budget and ``total`` is a lower bound


@dataclass(slots=True)
class Checkpoints:
    """(offset, line breaks before it) at chunk starts, ascending; grows as scans pass them."""

    offsets: array.array[int] = field(default_factory=lambda: array.array("q", [0]))
    before: array.array[int] = field(default_factory=lambda: array.array("q", [0]))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def seek_point(self, line: int) -> tuple[int, int]:
        """The last (offset, breaks_before) with fewer than ``line - 1`` breaks before it.

        Fewer, not as many: a checkpoint may fall inside a line, so the scan from it must
        still see the break that ends line ``line - 1``.
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
            if offset >= self.offsets[-1] + CHUNK:
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

    def __init__(self, src: Source, budget_s: float | None = None) -> None:
        self._src = src
        budget = COUNT_BUDGET_S if budget_s is None else budget_s
        self._deadline = min(time.monotonic() + budget, src.scan.deadline)
        self._known: LineCount | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        hit = _COUNTS.get(file_key(src.st))
        if isinstance(hit, LineCount):
            self._known = hit
        elif src.size >= WC_MIN_BYTES and src.codec.plain and not src.sparse:
            self._proc = _spawn_wc(src.fd)
        if self._known is None and self._proc is None:
            self._known = self._remember(_count(src, self._deadline))

    def result(self) -> LineCount:
        if self._known is not None:
            return self._known
        assert self._proc is not None
        proc, self._proc = self._proc, None
        try:
            newlines = self._wait(proc)
        finally:
            _stop(proc)
        if newlines is not None and _changed(self._src):  # wc read past the size we started with
            newlines = None
        if newlines is None:
            fallback = min(time.monotonic() + FALLBACK_BUDGET_S, self._src.scan.deadline)
            self._known = self._remember(_count(self._src, max(fallback, self._deadline)))
        else:
            tail = 0 if _ends_with_break(self._src) else 1
            self._known = self._remember(LineCount(newlines + tail, True))
        return self._known

    def _wait(self, proc: subprocess.Popen[bytes]) -> int | None:
        while True:
            if self._src.scan.cancel.is_set():
                raise ReadCancelled("cancelled")
            left = self._deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                out, _ = proc.communicate(timeout=min(left, POLL_S))
            except subprocess.TimeoutExpired:
                continue
            words = out.split()
            try:
                return int(words[0]) if proc.returncode == 0 and words else None
            except ValueError:  # not a number: a wc unlike coreutils' or BSD's
                return None

    def close(self) -> None:
        """Stop a count nobody will wait for (the read failed or was abandoned)."""
        if self._proc is not None:
            _stop(self._proc)
            self._proc = None

    def _remember(self, count: LineCount) -> LineCount:
        if count.complete:
            stored = _COUNTS.put(file_key(self._src.st), count)
            assert isinstance(stored, LineCount)
            return stored
        return count


def _changed(src: Source) -> bool:
    now = os.fstat(src.fd)
    return (now.st_size, now.st_mtime_ns, now.st_ctime_ns) != (
        src.st.st_size,
        src.st.st_mtime_ns,
        src.st.st_ctime_ns,
    )


_wc_path: list[str | None] = []


def _wc() -> str | None:
    if not _wc_path:
        _wc_path.append(shutil.which("wc", path=os.defpath) or shutil.which("wc"))
    return _wc_path[0]


def _spawn_wc(fd: int) -> subprocess.Popen[bytes] | None:
    """`wc -l` reading the already-open file from its start (no path is looked up again).

    wc gets a file description of its own (a reopen of /proc/self/fd/N names this very inode):
    sharing ours would make the SEEK_DATA/SEEK_HOLE of this process move wc's position.
    """
    wc = _wc() if platform.has_wc() else None
    if wc is None:
        return None
    own = platform.reopen(fd, os.O_RDONLY)  # None where the OS cannot reopen an open file
    if own is None:
        return None
    try:
        return subprocess.Popen([wc, "-l"], stdin=own, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env={"LC_ALL": "C"})  # fmt: skip
    except OSError:
        return None
    finally:
        os.close(own)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):  # stuck in the kernel (a hung NFS)
        proc.wait(timeout=1.0)
    if proc.stdout is not None:
        proc.stdout.close()


def _count(src: Source, deadline: float) -> LineCount:
    """Count in Python up to the size the read started with, leaving checkpoints on the way.

    Holes are skipped. Out of time, the count is a lower bound; cancelled, it raises.
    """
    marks = checkpoints(src.st)
    breaks = 0
    try:
        for at, data in _chunks(src, src.codec.start, src.size, deadline):
            if isinstance(data, int):
                continue
            breaks += _count_breaks(src.codec, data)
            marks.add(at + len(data), breaks)
    except OutOfTime:
        return LineCount(breaks, False)
    has_text = src.size > src.codec.start
    return LineCount(breaks + (1 if has_text and not _ends_with_break(src) else 0), True)


# --- finding and reading lines -------------------------------------------------------------


def offset_of_line(src: Source, line: int) -> int | None:
    """Byte offset where 1-based ``line`` starts, or None past the end.

    Out of time it raises OutOfTime with the number of lines passed.
    """
    c = src.codec
    if line == 1:
        return c.start
    marks = checkpoints(src.st)
    pos, seen = marks.seek_point(line)
    need = line - 1 - seen
    try:
        for at, data in _chunks(src, max(pos, c.start), src.size):
            if isinstance(data, int):
                continue
            k = _count_breaks(c, data)
            if k < need:
                need -= k
                marks.add(at + len(data), line - 1 - need)
                continue
            i = -c.unit
            for _ in range(need):
                i = _find_break(c, data, at, i + c.unit)
            return at + i + c.unit
    except OutOfTime:
        raise OutOfTime(line - 1 - need) from None
    return None


@dataclass(slots=True)
class RawLine:
    number: int
    head: bytes  # at most KEEP_BYTES of the line, without its line break
    long: bool  # the line had more than KEEP_BYTES
    newline: bool  # the line ended with a line break


def iter_lines_from(src: Source, pos: int, first_number: int) -> Iterator[RawLine]:
    """RawLine objects from byte ``pos`` on, holding at most one chunk and one head.

    Raises OutOfTime (after the lines already yielded) when the scan's time is up.
    """
    c = src.codec
    u, nl = c.unit, c.newline
    number = first_number
    head = bytearray()
    long = False
    for at, data in _chunks(src, pos, src.size):
        if isinstance(data, int):  # a hole: zeros, no line break in it
            room = KEEP_BYTES - len(head)
            if room > 0:
                head += bytes(min(room, data))
            if data > max(room, 0):
                long = True
            continue
        i, n = 0, len(data)
        while i < n:
            j = data.find(nl, i) if u == 1 else _find_break(c, data, at, i)  # 1 byte: no alignment
            end = n if j == -1 else j
            if not head and not long and j != -1 and end - i <= KEEP_BYTES:
                yield RawLine(number, data[i:end], False, True)  # the common case: one slice
                number += 1
                i = j + u
                continue
            room = KEEP_BYTES - len(head)
            if room > 0:
                head += data[i : min(end, i + room)]
            if end - i > max(room, 0):
                long = True
            if j == -1:
                break
            yield RawLine(number, bytes(head), long, True)
            number += 1
            head = bytearray()
            long = False
            i = j + u
    if head or long:
        yield RawLine(number, bytes(head), long, False)


def decode_line(raw: RawLine, codec: Codec = UTF8) -> str:
    """Bytes of a line → text ending in LF: CR of CRLF dropped, invalid bytes as U+FFFD.

    No raw CR ever comes out: a CR inside a line is shown as U+240D (and, in a file whose
    lines end at CR, a LF inside a line as U+240A), so content cannot forge a line break
    a terminal or a model would see.
    """
    head = raw.head
    u = codec.unit
    if codec.lf_breaks and raw.newline and not raw.long and head[-u:] == codec.cr and len(head) % u == 0:
        head = head[:-u]
    text = head.decode(codec.name, errors="replace")
    if "\r" in text:
        text = text.replace("\r", "\u240d")
    if not codec.lf_breaks and "\n" in text:
        text = text.replace("\n", "\u240a")
    return text + ("\n" if raw.newline else "")


def tail_starts(src: Source, count: int) -> list[int]:
    """Start offsets of the last ``count`` lines (oldest first), scanning backwards.

    Only data is read: the holes of a sparse file hold no line break.
    """
    c, u = src.codec, src.codec.unit
    if src.size <= c.start or count <= 0:
        return []
    # A final line break ends the last line; it does not start a new one.
    end = src.size - u if _ends_with_break(src) else src.size
    starts: deque[int] = deque()
    hi, window = end, TAIL_WINDOW
    while hi > c.start and len(starts) < count:
        lo = max(c.start, hi - window)
        for lo_seg, hi_seg in reversed(_segments(src, lo, hi)):
            _breaks_backwards(src, lo_seg, hi_seg, starts, count)
            if len(starts) >= count:
                break
        hi, window = lo, window * 2
    if len(starts) < count:
        starts.appendleft(c.start)
    return list(starts)


def _breaks_backwards(src: Source, lo_seg: int, hi_seg: int, starts: deque[int], count: int) -> None:
    """Prepend to ``starts`` the line starts in [lo_seg, hi_seg), newest first, up to ``count``."""
    c, u = src.codec, src.codec.unit
    pos, block = hi_seg, TAIL_BLOCK
    while pos > lo_seg and len(starts) < count:
        src.scan.check()
        lo = max(lo_seg, pos - block)
        chunk = platform.pread(src.fd, pos - lo, lo)
        j = len(chunk)
        while len(starts) < count:
            k = _rfind_break(c, chunk, lo, j)
            if k == -1:
                break
            starts.appendleft(lo + k + u)
            j = k
        pos = lo
        block = min(block * 4, CHUNK)


def tail_lines(src: Source, starts: list[int], first_number: int, limit: int) -> list[RawLine]:
    """The first ``limit`` of the lines beginning at ``starts`` (from tail_starts)."""
    k = min(len(starts), limit)
    if k <= 0:
        return []
    bounds = [*starts, src.size]
    base, stop = starts[0], bounds[k]
    if stop - base > TAIL_ONE_READ:
        return [read_span(src, bounds[i], bounds[i + 1], first_number + i) for i in range(k)]
    data = platform.pread(src.fd, stop - base, base)
    nl, u = src.codec.newline, src.codec.unit
    out: list[RawLine] = []
    for i in range(k):
        a, b = bounds[i] - base, min(bounds[i + 1] - base, len(data))
        newline = b - a >= u and data[b - u : b] == nl
        body = data[a : b - u] if newline else data[a:b]
        long = len(body) > KEEP_BYTES
        out.append(RawLine(first_number + i, body[:KEEP_BYTES] if long else body, long, newline))
    return out


def read_span(src: Source, start: int, end: int, number: int) -> RawLine:
    """The line occupying bytes [start, end) (its break included, if any)."""
    u = src.codec.unit
    length = end - start
    data = platform.pread(src.fd, min(length, KEEP_BYTES + 2 * u), start)
    newline = length >= u and platform.pread(src.fd, u, end - u) == src.codec.newline
    body_len = length - (u if newline else 0)
    long = body_len > KEEP_BYTES
    head = data[:KEEP_BYTES] if long else data[:body_len]
    return RawLine(number, head, long, newline)
