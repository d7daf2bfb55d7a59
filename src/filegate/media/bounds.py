"""Bounds on every decode, process-wide: how big (from the header), how many at once, how long.

A 336 KB PNG can decode to 353 MB and a 5 MB TIFF can hold 50,000 pages, so no image or video
is decoded before its decoded size is known from its header and found within
``MAX_DECODE_BYTES``; decodes then run a few at a time (``DECODES``), so parallel calls cannot
stack their memory, and each stops at its deadline. :class:`MemoryGate` is the one mechanism
for such a process-wide byte budget; whole-file loads have their own (``filegate.fsio.loads``),
so a call that holds a loaded file never waits for room that only it could free.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import ctypes.util
import io
import threading
import time
from collections.abc import Callable, Iterator

# The one filegate import of this package: errors is a leaf too (it imports nothing).
from filegate.errors import MediaError, Refusal


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


# Pillow's 16-bit grey modes: 2 bytes a pixel stored.
SIXTEEN_BIT_MODES = ("I;16", "I;16B", "I;16L", "I;16N")


def stored_bytes(mode: str) -> int:
    """Bytes Pillow stores one pixel of a picture in ``mode`` in: 1 for bilevel, grey and
    palette, 2 for 16-bit grey, 4 for every other mode (RGB too: Pillow keeps it in 32 bits)."""
    if mode in ("1", "L", "P"):
        return 1
    return 2 if mode in SIXTEEN_BIT_MODES else 4


def conversion_bytes(mode: str) -> int:
    """Bytes a pixel that the conversion to an encodable mode (``_prepare``) holds at once
    beside the decoded picture: none for L and RGB; a 32-bit copy and its scaled 32-bit copy
    for 16-bit and 32-bit grey; an RGB(A) copy for every other mode (palette, bilevel, with
    alpha, CMYK, float)."""
    if mode in ("L", "RGB"):
        return 0
    return 8 if mode in (*SIXTEEN_BIT_MODES, "I") else 4


def bytes_per_pixel(mode: str, *, cropped: bool = False) -> int:
    """Bytes one pixel of a picture decoded in ``mode`` costs once decoded and converted for
    encoding: what Pillow stores, plus the most it holds beside it at once — the conversion to
    an encodable mode, or (``cropped``) a crop as large as the picture (which is let go once
    cropped, and the crop converted). A 78 KB 16-bit PNG held 582 MB when charged 4 bytes a
    pixel; an 11 KB bilevel PNG of 9400x9400 px becomes a 353 MB RGB picture."""
    stored = stored_bytes(mode)
    return stored + max(conversion_bytes(mode), stored if cropped else 0)


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


class MemoryGate:
    """At most ``slots`` holders at once (None: any number), holding at most ``capacity`` bytes
    together: the one mechanism that bounds what parallel calls hold in memory (the decodes'
    gate below, and the whole-file loads' in ``filegate.fsio.loads``).

    A holder asks for its cost (capped at ``capacity``) and waits until both fit; past its
    deadline it is refused with ``busy``, a sentence that ends "…; try again.". Waiters are
    served first come, first served: a call that waits is not passed by later ones taking the
    room as it frees (without the queue, a steady stream of calls could keep one waiting to
    its deadline), so its wait is bounded by how long the holders before it hold.
    """

    def __init__(self, slots: int | None, capacity: int, busy: Callable[[float], Refusal]) -> None:
        self.slots = slots
        self.capacity = capacity
        self.busy = busy
        self.running = 0
        self.held = 0
        self._cond = threading.Condition()
        self._queue: collections.deque[object] = collections.deque()

    def _fits(self, cost: int) -> bool:
        free_slot = self.slots is None or self.running < self.slots
        return free_slot and self.held + cost <= self.capacity

    def ticket(self) -> Ticket:
        """A claim on the gate to be taken (possibly in another thread) and closed once."""
        return Ticket(self)

    @contextlib.contextmanager
    def hold(self, cost: int, deadline: Deadline) -> Iterator[None]:
        ticket = self.ticket()
        try:
            ticket.take(cost, deadline)
            yield
        finally:
            ticket.close()

    def _take(self, cost: int, deadline: Deadline) -> None:
        me = object()
        with self._cond:
            self._queue.append(me)
            try:
                while self._queue[0] is not me or not self._fits(cost):
                    left = deadline.left()
                    if left <= 0:
                        raise self.busy(deadline.seconds)
                    self._cond.wait(left)
                self.running += 1
                self.held += cost
            finally:
                self._queue.remove(me)
                self._cond.notify_all()  # the next in the queue may fit too

    def _give_back(self, cost: int) -> None:
        release_memory()
        with self._cond:
            self.running -= 1
            self.held -= cost
            self._cond.notify_all()


class Ticket:
    """One holder's claim on a :class:`MemoryGate`: ``take`` waits for room (once), ``close``
    gives it back. Closing first makes a later ``take`` refuse: a worker thread its call
    abandoned (a cancelled call) can then never take room that nobody would give back.

    The room is given back when the work holding the bytes ends, not before: a worker thread
    ``enter``s the ticket while it works and ``leave``s it when it ends, and a ``close`` (the
    call's async side, which may be cancelled while its thread runs on) while a worker is
    inside leaves the giving back to that worker's ``leave``."""

    def __init__(self, gate: MemoryGate) -> None:
        self.gate = gate
        self.cost = 0
        self.taken = False
        self.closed = False
        self.workers = 0
        self._lock = threading.Lock()

    def take(self, cost: int, deadline: Deadline) -> None:
        cost = min(max(0, cost), self.gate.capacity)
        self.gate._take(cost, deadline)
        with self._lock:
            if self.taken or self.closed:  # taken twice, or its call is gone: give it back
                self.gate._give_back(cost)
                if self.closed:
                    raise self.gate.busy(0.0)
                return
            self.cost, self.taken = cost, True

    def enter(self) -> None:
        """A worker thread starts using what the ticket holds."""
        with self._lock:
            self.workers += 1

    def leave(self) -> None:
        """A worker thread ends: the room goes back if the ticket was closed meanwhile."""
        with self._lock:
            self.workers -= 1
            taken = self.taken and self.closed and not self.workers
            if taken:
                self.taken = False
        if taken:
            self.gate._give_back(self.cost)

    def close(self) -> None:
        with self._lock:
            self.closed = True
            taken = self.taken and not self.workers
            if taken:
                self.taken = False
        if taken:
            self.gate._give_back(self.cost)


def decode_busy(seconds: float) -> Refusal:
    return DecodeTimeout(
        f"the server was busy decoding other media for longer than {seconds:g} s; try again."
    )


# The one gate every image and video decode of this process goes through.
DECODES = MemoryGate(MAX_CONCURRENT_DECODES, MAX_DECODE_BYTES, decode_busy)
