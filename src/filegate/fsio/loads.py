"""The process-wide budget of whole-file loads (SPEC §4 ReadMediaFile, memory).

A media file is read whole before it is decoded (up to 100 MiB), and a write holds its
target's old content while it transforms, diffs and writes it (up to 128 MiB); twenty parallel
calls of either took the server past 2 GB. Every such load takes room from ``LOADS`` first,
for as long as it holds the bytes: parallel calls wait for each other, first come first
served, and one that waited ``LOAD_WAIT_S`` in vain is refused with a sentence that says why.

The room is held as long as the work on the bytes runs, and no longer than a call's deadline:
the work (a write's transformation, the matching ladder, the closest match) checks its call's
:class:`Work` as it goes, which stops it ``WORK_S`` after its file was loaded or as soon as
its client gave up, and the worker thread gives the room back when it ends (``Ticket.enter``
and ``leave``). So no call holds room longer than ``WORK_S``, shorter than the ``LOAD_WAIT_S``
the others wait: two calls that would run for minutes no longer keep every other session's
loads waiting and refused "busy".

The gate is :class:`filegate.media.bounds.MemoryGate`, the decodes' mechanism, with a budget of
its own: a media read holds its file while it waits for a decode slot, so the two must not
share one pool (two held files could then wait for each other's room forever).
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TypeVar

import anyio

from filegate.errors import Busy, Refusal, Stopped
from filegate.media.bounds import Deadline, MemoryGate, Ticket

# Bytes all whole-file loads of the process hold at once: two media files at Kimi's 100 MiB
# limit, or one write at its 128 MiB limit beside a media file. A load larger than this (none
# is) would be charged at the whole budget and run alone.
MAX_LOAD_BYTES = 256 << 20
# Seconds a call waits for room before it is refused: longer than a load at the budget takes
# to read and process, so only a server kept busy by other calls refuses.
LOAD_WAIT_S = 30.0
# Seconds a call's work on a loaded file may run (the transformation of a write, its matching
# ladder and closest match): past them it is stopped at its next check. Well under LOAD_WAIT_S,
# so a call that waits for room gets it before its wait runs out; far over what the work takes
# (a 128 MiB edit is prepared in about a second).
WORK_S = 20.0

T = TypeVar("T")
# What stops a call's slow work as it goes (Work.check), or :func:`unchecked`.
Check = Callable[[], None]


def unchecked() -> None:
    """A check that never stops the work (no call's deadline to keep: a direct use, a test)."""


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


class Work:
    """One call's work on loaded bytes, stoppable: ``check()`` (called by the work as it goes,
    cheaply: every few thousand steps) raises Stopped once the call's deadline passed or its
    client gave up (``cancel``). The deadline runs from ``arm`` (the file loaded), so the wait
    for room does not count."""

    def __init__(self) -> None:
        self.seconds = math.inf
        self.at = math.inf
        self._cancelled = threading.Event()

    def arm(self, seconds: float | None = None) -> None:
        if self.at == math.inf:
            self.seconds = WORK_S if seconds is None else seconds
            self.at = time.monotonic() + self.seconds

    def cancel(self) -> None:
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def check(self) -> None:
        if self._cancelled.is_set():
            raise Stopped("The call was cancelled (its client gave up on it); nothing was done.")
        if time.monotonic() > self.at:
            raise Stopped(
                f"The call was stopped: its work on the file took longer than the {self.seconds:g} s "
                "this server allows a call (so that one call cannot hold the server's memory from "
                "the others); nothing was done. Make the edit smaller or `old` more distinctive."
            )


async def in_thread(fn: Callable[[], T], work: Work | None, *tickets: Ticket) -> T:
    """``fn()`` on a worker thread that holds ``tickets``' room until it ends, even when this
    call is cancelled meanwhile (the thread is then abandoned, ``work`` cancelled so that it
    stops at its next check, and the room given back as it ends)."""

    def run() -> T:
        for ticket in tickets:
            ticket.enter()
        try:
            return fn()
        finally:
            for ticket in tickets:
                ticket.leave()

    try:
        return await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
    except BaseException:
        if work is not None:
            work.cancel()
        raise
