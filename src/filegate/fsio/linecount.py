"""Line counts of arbitrarily large files, in bounded time (SPEC §4 ReadFile's total).

A file of ``WC_MIN_BYTES`` or more is counted by ``wc -l`` in a process of its own, on another
core while the read finds its lines (:class:`PendingCount`); a smaller one, or one wc cannot
count in time, in Python over fsio/lines.py's chunks, leaving checkpoints on the way. A count
that finished is remembered per unchanged file (fsio/lines.py's key); one out of time is a
lower bound.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from dataclasses import dataclass

from filegate.fsio import platform
from filegate.fsio.lines import (
    Lru,
    OutOfTime,
    ReadCancelled,
    Source,
    checkpoints,
    chunks,
    count_breaks,
    ends_with_break,
    file_key,
)

# Counting lines of a multi-GiB file stops after this long; the total is then a lower bound.
COUNT_BUDGET_S = 5.0
# Files this large are counted by coreutils `wc -l`, in a process of its own: it counts with
# SIMD, several times faster than bytes.count, and it runs on another core while this thread
# finds the requested lines. Below this size the Python count is quicker than spawning wc.
WC_MIN_BYTES = 16 << 20
# When wc runs out of the budget (a huge file on a slow disk), a Python count this long gives
# the lower bound that is reported ("at least N").
FALLBACK_BUDGET_S = 1.0
# A wc that is running is looked at this often, so that a cancelled read stops it soon.
POLL_S = 0.05


@dataclass(frozen=True, slots=True)
class LineCount:
    total: int
    complete: bool  # False: counting stopped at the budget and ``total`` is a lower bound


_COUNTS = Lru()


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
            tail = 0 if ends_with_break(self._src) else 1
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
        for at, data in chunks(src, src.codec.start, src.size, deadline):
            if isinstance(data, int):
                continue
            breaks += count_breaks(src.codec, data)
            marks.add(at + len(data), breaks)
    except OutOfTime:
        return LineCount(breaks, False)
    has_text = src.size > src.codec.start
    return LineCount(breaks + (1 if has_text and not ends_with_break(src) else 0), True)
