"""The last lines of a file (ReadFile's negative line_offset), found backwards from its end in
bounded memory: windows from the end, each twice the one before, read in blocks that grow
(fsio/lines.py's sources, codecs and scan deadlines; only data is read, never a hole).
"""

from __future__ import annotations

from collections import deque

from filegate.fsio import lines, platform
from filegate.fsio.lines import KEEP_BYTES, RawLine, Source, ends_with_break, rfind_break, segments

# A tail is looked for in a block this large first (enough for 100 lines of a typical log),
# then in blocks 4 times larger.
TAIL_BLOCK = 64 << 10
# A tail window spanning at most this many bytes is read with one pread.
TAIL_ONE_READ = 4 << 20
# A tail looks for data in windows this large, from the end, each twice the one before.
TAIL_WINDOW = 64 << 20


def tail_starts(src: Source, count: int) -> list[int]:
    """Start offsets of the last ``count`` lines (oldest first), scanning backwards.

    Only data is read: the holes of a sparse file hold no line break.
    """
    c, u = src.codec, src.codec.unit
    if src.size <= c.start or count <= 0:
        return []
    # A final line break ends the last line; it does not start a new one.
    end = src.size - u if ends_with_break(src) else src.size
    starts: deque[int] = deque()
    hi, window = end, TAIL_WINDOW
    while hi > c.start and len(starts) < count:
        lo = max(c.start, hi - window)
        for lo_seg, hi_seg in reversed(segments(src, lo, hi)):
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
            k = rfind_break(c, chunk, lo, j)
            if k == -1:
                break
            starts.appendleft(lo + k + u)
            j = k
        pos = lo
        block = min(block * 4, lines.CHUNK)


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
