"""Line windows of arbitrarily large files in bounded memory and bounded time (SPEC §4 ReadFile).

A file is read through a :class:`Source`: the open descriptor, the stat taken when the read
started (nothing past that size is read, so a file being appended is counted and numbered as
it was), the file's :class:`Codec` and the call's :class:`Scan` (its deadline and its cancel
flag, checked at every chunk). Holes of sparse files are skipped with SEEK_DATA/SEEK_HOLE:
they hold zeros, never a line break.

Codecs: as fsio/codec.py decides them (a BOM is skipped; UTF-16/32 by code unit). Lines end at
the codec's LF (a CR before it is dropped: CRLF shows as LF), or at CR when the first bytes
hold CRs and no LF (classic Mac files). Only the first ``KEEP_BYTES`` of any line are ever
held, so a 5 MB single line costs 8 KiB.

Checkpoints (byte offset, line breaks before it) about every ``CHUNK`` bytes that a scan has
passed are remembered, keyed by (device, inode, size, mtime, ctime), so a repeat read of an
unchanged file does not scan again; its line count (fsio/linecount.py) is kept the same way.
ctime is in the key because a rewrite of the same size can put its old mtime back.
"""

from __future__ import annotations

import array
import errno
import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field

from filegate.fsio import platform
from filegate.fsio.codec import FileCodec, bom_codec

CHUNK = 1 << 20
# A line is cut at 2000 characters; 4 bytes per character at most, plus a little.
KEEP_BYTES = 8192
# Seeking to an offset, reading lines and finding a tail stop after this long in all (a client
# such as Kimi CLI gives a tool call 60 s); the answer then says what is known.
SCAN_BUDGET_S = 15.0
# Unchanged files whose count and checkpoints are remembered.
CACHE_FILES = 64
# A file with more unallocated bytes than this is read hole by hole (SEEK_DATA/SEEK_HOLE).
SPARSE_SLACK = 1 << 20
# More data segments than this in one window (alternating blocks and holes) are not mapped.
MAX_SEGMENTS = 4096

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


def count_breaks(codec: Codec, data: bytes) -> int:
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


def rfind_break(codec: Codec, data: bytes, base: int, end: int) -> int:
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


def chunks(
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


def segments(src: Source, lo: int, hi: int) -> list[tuple[int, int]]:
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


def ends_with_break(src: Source) -> bool:
    u = src.codec.unit
    return src.size - u >= src.codec.start and platform.pread(src.fd, u, src.size - u) == src.codec.newline


# --- remembered facts -----------------------------------------------------------------------


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


class Lru:
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


_MARKS = Lru()


def checkpoints(st: os.stat_result) -> Checkpoints:
    key = file_key(st)
    hit = _MARKS.get(key)
    if isinstance(hit, Checkpoints):
        return hit
    stored = _MARKS.put(key, Checkpoints())
    assert isinstance(stored, Checkpoints)
    return stored


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
        for at, data in chunks(src, max(pos, c.start), src.size):
            if isinstance(data, int):
                continue
            k = count_breaks(c, data)
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
    for at, data in chunks(src, pos, src.size):
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
