"""A large file read into a ``bytes`` whose memory is backed by transparent huge pages.

Reading a cached 50 MB file into a fresh ``bytes`` takes ~25 ms here, ~20 of them page faults:
the kernel fills the new object one 4 KiB page at a time (12,800 faults), and frees it the same
way. With ``madvise(MADV_HUGEPAGE)`` on that memory before the read, it is ~25 faults of 2 MiB
and the read takes ~8 ms (a StrReplaceFile of a 50 MB file: ~77 → ~55 ms).

Python cannot ask for such memory for a ``bytes``, so :func:`pread_fresh` makes the object
first — ``bytes(n)`` is ``calloc``, whose large blocks are fresh mappings no one has touched —
advises its pages, and reads into it in place through ctypes, at the address the C API gives
for its content (``PyBytes_AsString``). This is the one place filegate writes into a ``bytes``:
the object is new, nothing else refers to it, and its hash has not been computed, until the
function returns it. Only on CPython on Linux with THP not "never", only for objects of at
least :data:`HUGE_FROM_BYTES` (glibc gives blocks that large a mapping of their own, which goes
back to the OS when the object is freed), and only after a probe has read a known object back
through that address; anywhere else, or on any failure, the caller reads plainly.
"""

from __future__ import annotations

import mmap
import os
import sys
from pathlib import Path
from typing import Any

# glibc serves an allocation this large from its own mapping whatever its dynamic threshold
# (which never rises past 32 MiB on 64-bit), so the advice covers the object and nothing else,
# and goes away with it.
HUGE_FROM_BYTES = 32 << 20
_MADV_HUGEPAGE = 14  # Linux's value on every architecture
_THP_MODE = Path("/sys/kernel/mm/transparent_hugepage/enabled")

_tools: tuple[Any, Any, Any] | None = None
_probed = False


def available() -> bool:
    """Whether :func:`pread_fresh` reads (on first call: probes, once)."""
    global _tools, _probed
    if not _probed:
        _probed = True
        _tools = _probe()
    return _tools is not None


def _probe() -> tuple[Any, Any, Any] | None:
    """(madvise, ctypes, PyBytes_AsString) where this read can be done, else None."""
    if sys.platform != "linux" or sys.implementation.name != "cpython" or not hasattr(os, "preadv"):
        return None
    try:
        if "[never]" in _THP_MODE.read_text():
            return None
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        madvise.restype = ctypes.c_int
        # Where a bytes object's content lies: the C API's own answer, checked once on a fresh
        # object before anything is written through it.
        content_of = ctypes.pythonapi.PyBytes_AsString
        content_of.argtypes = [ctypes.py_object]
        content_of.restype = ctypes.c_void_p
        probe = b"-".join([b"filegate", b"hugeread", b"probe"])
        if ctypes.string_at(content_of(probe), len(probe)) != probe:
            return None
        return madvise, ctypes, content_of
    except (OSError, AttributeError, ValueError, ImportError):
        return None


def pread_fresh(fd: int, size: int) -> bytes | None:
    """The first ``size`` bytes of ``fd`` (fewer if it ends first) in a new ``bytes`` backed
    by huge pages where the kernel has them; None where this read is not available (the caller
    reads plainly). An OSError of the read is raised as from ``os.pread``."""
    if size < HUGE_FROM_BYTES or not available():
        return None
    assert _tools is not None
    madvise, ctypes, content_of = _tools
    data = bytes(size)  # calloc: pages untouched until the read below fills them
    start = content_of(data)
    page = mmap.PAGESIZE
    first = -(-start // page) * page
    end = (start + size) // page * page
    madvise(first, end - first, _MADV_HUGEPAGE)  # a hint: refused or ignored, the read still works
    view = memoryview((ctypes.c_char * size).from_address(start)).cast("B")
    got = 0
    try:
        while got < size:
            n = os.preadv(fd, [view[got:]], got)
            if n == 0:
                break
            got += n
    finally:
        view.release()
    return data if got == size else data[:got]
