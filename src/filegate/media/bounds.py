"""Bounds on every decode, process-wide: how big (from the header), how many at once, how long.

A 336 KB PNG can decode to 353 MB and a 5 MB TIFF can hold 50,000 pages, so no image or video
is decoded before its decoded size is known from its header and found within
``MAX_DECODE_BYTES``; decodes then run a few at a time (``DECODES``), so parallel calls cannot
stack their memory, and each stops at its deadline.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import io
import threading
import time
from collections.abc import Callable, Iterator

# The one filegate import of this package: errors is a leaf too (it imports nothing).
from filegate.errors import MediaError


class DecodeTimeout(MediaError):
    """A decode that ran past its time budget and was stopped."""


# Decoded bytes (width × height × bands × bytes per band, read from the header before any
# decoding) one image or video frame may take: 128 MiB is a 40 MP RGB or 33 MP RGBA picture;
# JPEGs are measured at the reduced size libjpeg decodes them to, plus the whole-image
# coefficient buffers it keeps for a progressive or multi-scan JPEG (headers.py).
MAX_DECODE_BYTES = 128 << 20
# At most this many decodes at once in the process (the machine's cores do the rest), and
# together at most MAX_DECODE_BYTES: one image at the limit decodes alone.
MAX_CONCURRENT_DECODES = 2
# Seconds one file may spend waiting for a decode slot, decoding and re-encoding.
DECODE_TIMEOUT_S = 30.0
# Frames of a video ReadMediaFile sends, at most (the N ≤ 8); here rather than in
# video.py so that ReadMediaFile's description is built without importing Pillow.
MAX_FRAMES = 8
# Characters of the reason a probe gives for knowing nothing, at most (the result reserves them).
MAX_UNKNOWN_CHARS = 400


class Deadline:
    """A point in time a decode must not run past; ``check()`` raises DecodeTimeout after it."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    def left(self) -> float:
        return self.at - time.monotonic()

    def check(self) -> None:
        if time.monotonic() > self.at:
            raise DecodeTimeout(
                f"decoding it took longer than the {self.seconds:g} s this server allows for one "
                "file, so it was stopped."
            )


class DeadlineReader(io.BytesIO):
    """The file's bytes for a decoder that pulls them in blocks (Pillow's ImageFile does):
    each block first checks the deadline, so a slow decode stops at its next read."""

    def __init__(self, data: bytes, deadline: Deadline) -> None:
        super().__init__(data)
        self.deadline = deadline

    def read(self, size: int | None = -1, /) -> bytes:
        self.deadline.check()
        return super().read(size)


def check_decoded_size(
    width: int, height: int, bytes_per_pixel: int, what: str = "it", verdict: str = "so it was not decoded"
) -> int:
    """Decoded bytes of a ``width``x``height`` picture; MediaError over MAX_DECODE_BYTES, whose
    ``verdict`` says truthfully what was not done."""
    decoded = width * height * bytes_per_pixel
    if decoded > MAX_DECODE_BYTES:
        raise MediaError(
            f"{what} is {width}x{height}px with {bytes_per_pixel} bytes a pixel: {decoded} bytes "
            f"once decoded, over the {MAX_DECODE_BYTES} bytes this server decodes for one picture "
            f"(a guard against decompression bombs), {verdict}. Make a smaller copy with an "
            "image tool and read that."
        )
    return decoded


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None elsewhere (musl, macOS)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


# A decode's pictures are freed into the malloc arena of the worker thread that made them, and
# glibc keeps freed arena memory: without a trim, each of the pool's threads would hold on to
# the largest picture it ever decoded (4 GB stayed after 4 parallel bomb calls).
_TRIM = _malloc_trim()


def release_memory() -> None:
    """Give freed decode memory back to the system (glibc); a no-op elsewhere."""
    if _TRIM is not None:
        _TRIM(0)


class DecodeGate:
    """At most ``slots`` decodes at once, holding at most ``capacity`` decoded bytes together.

    A decode asks for its decoded size (capped at ``capacity``) and waits until both fit; the
    wait counts against its deadline.
    """

    def __init__(self, slots: int, capacity: int) -> None:
        self.slots = slots
        self.capacity = capacity
        self._running = 0
        self._held = 0
        self._cond = threading.Condition()

    def _fits(self, cost: int) -> bool:
        return self._running < self.slots and self._held + cost <= self.capacity

    @contextlib.contextmanager
    def hold(self, cost: int, deadline: Deadline) -> Iterator[None]:
        cost = min(max(0, cost), self.capacity)
        with self._cond:
            while not self._fits(cost):
                left = deadline.left()
                if left <= 0:
                    raise DecodeTimeout(
                        "the server was busy decoding other media for longer than "
                        f"{deadline.seconds:g} s; try again."
                    )
                self._cond.wait(left)
            self._running += 1
            self._held += cost
        try:
            yield
        finally:
            release_memory()
            with self._cond:
                self._running -= 1
                self._held -= cost
                self._cond.notify_all()


# The one gate every image and video decode of this process goes through.
DECODES = DecodeGate(MAX_CONCURRENT_DECODES, MAX_DECODE_BYTES)
