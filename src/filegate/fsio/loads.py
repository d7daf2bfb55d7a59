"""The process-wide budget of whole-file loads (SPEC §4 ReadMediaFile, memory).

A media file is read whole before it is decoded (up to 100 MiB), and a write holds its
target's old content while it transforms, diffs and writes it (up to 128 MiB); twenty parallel
calls of either took the server past 2 GB. Every such load takes room from ``LOADS`` first,
for as long as it holds the bytes: parallel calls wait for each other, and one that waited
``LOAD_WAIT_S`` in vain is refused with a sentence that says why.

The gate is :class:`filegate.media.bounds.MemoryGate`, the decodes' mechanism, with a budget of
its own: a media read holds its file while it waits for a decode slot, so the two must not
share one pool (two held files could then wait for each other's room forever).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator

from filegate.errors import Busy, Refusal
from filegate.media.bounds import Deadline, MemoryGate, Ticket

# Bytes all whole-file loads of the process hold at once: two media files at Kimi's 100 MiB
# limit, or one write at its 128 MiB limit beside a media file. A load larger than this (none
# is) would be charged at the whole budget and run alone.
MAX_LOAD_BYTES = 256 << 20
# Seconds a call waits for room before it is refused: longer than a load at the budget takes
# to read and process, so only a server kept busy by other calls refuses.
LOAD_WAIT_S = 30.0


def _busy(seconds: float) -> Refusal:
    return Busy(
        f"The server was busy holding other calls' files (at most {LOADS.capacity >> 20} MiB "
        f"at once) for longer than {seconds:g} s; nothing was done, try again."
    )


# The one budget every whole-file load of this process takes its room from.
LOADS = MemoryGate(None, MAX_LOAD_BYTES, _busy)


@contextlib.contextmanager
def holding(size: int) -> Iterator[None]:
    """Room for ``size`` loaded bytes while the block runs (blocking: call in a thread)."""
    with LOADS.hold(size, Deadline(LOAD_WAIT_S)):
        yield


def load_ticket() -> Ticket:
    """A claim a worker thread takes (:func:`take`) once it knows a file's size, and the async
    code that started it closes when the bytes are let go, whether or not it was taken."""
    return LOADS.ticket()


def take(ticket: Ticket | None, size: int) -> None:
    """Wait for room for ``size`` bytes on ``ticket`` (blocking: in a thread); None: no charge."""
    if ticket is not None:
        ticket.take(size, Deadline(LOAD_WAIT_S))


@contextlib.asynccontextmanager
async def ticket_held() -> AsyncIterator[Ticket]:
    """A ticket closed when the block ends (however it ends)."""
    ticket = load_ticket()
    try:
        yield ticket
    finally:
        ticket.close()
