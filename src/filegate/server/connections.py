"""HTTP connections under abuse: a cap, read deadlines, and accept errors logged once per burst.

Before a request is authenticated it costs the server a descriptor and a little memory; a
client that opens connections and never finishes its request (slowloris) would otherwise
hold them forever, and at the descriptor limit the real client is locked out while asyncio
logs every failed ``accept()`` (on 3.11, up to 2048 tracebacks per second per listener).

- **Cap.** At most ``cap`` connections are open; the cap is also kept ``FD_RESERVE`` below the
  process's descriptor limit, so ``accept()`` itself never runs out (files, rg pipes and the
  listener need the rest). A connection beyond the cap makes room by closing the oldest
  connection that is still *waiting on its client* (sending headers or a body, or idle
  between requests); a request being answered (an SSE stream, a call waiting on an approval)
  is never closed for room. Only when nothing is waiting is the newcomer itself closed.
- **Deadlines.** A request's headers must arrive within ``HEADERS_S`` of the connection (or
  of the first byte of a later request on it), and its body within ``BODY_S`` of the headers.
- **Accept errors.** :class:`AcceptErrors` logs the first failure of a burst and, once the
  failures have stopped for ``QUIET_S``, how many there were.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from filegate.policy.escape import escape

log = logging.getLogger("filegate")

HEADERS_S = 10.0
BODY_S = 60.0  # a 4 MiB WriteFile body at ~70 KB/s still makes it
# Descriptors kept free for everything that is not a client connection.
FD_RESERVE = 64
MIN_CAP = 8
# A burst of accept errors (or of connections closed for room) ends after this long without one.
QUIET_S = 5.0

ACCEPT_FAILED = "socket.accept() out of system resource"  # asyncio's message (selector_events)


def connection_cap(configured: int) -> int:
    """``configured``, lowered to leave ``FD_RESERVE`` descriptors of the soft limit free."""
    try:
        import resource  # POSIX only
    except ImportError:  # Windows: no descriptor limit of this kind to stay under
        return configured
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return configured
    return max(MIN_CAP, min(configured, soft - FD_RESERVE))


class Burst:
    """Counts events of one kind; logs the first of a burst, and the count once it is over."""

    def __init__(self, first: str, over: str) -> None:
        self.first, self.over = first, over
        self.count = 0
        self._last = 0.0
        self._timer: asyncio.TimerHandle | None = None

    def event(self, detail: str = "") -> None:
        self.count += 1
        self._last = time.monotonic()
        if self.count == 1:
            log.warning(self.first, detail)
            self._timer = asyncio.get_running_loop().call_later(QUIET_S, self._check)

    def _check(self) -> None:
        quiet_for = time.monotonic() - self._last
        if quiet_for < QUIET_S:
            self._timer = asyncio.get_running_loop().call_later(QUIET_S - quiet_for, self._check)
            return
        log.warning(self.over, self.count)
        self.count, self._timer = 0, None


class AcceptErrors:
    """A loop exception handler: failed accepts counted per burst, anything else passed on."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._previous = loop.get_exception_handler()
        self._burst = Burst(
            "cannot accept connections (%s); logged once until it stops",
            "accepting connections again after %d failed accept(s)",
        )

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if context.get("message") == ACCEPT_FAILED:
            self._burst.event(escape(str(context.get("exception", ""))))
        elif _closed_listener_rearmed(context):
            log.debug("a listener closed during an accept burst was not re-armed")
        elif self._previous is not None:
            self._previous(loop, context)
        else:
            loop.default_exception_handler(context)


def _closed_listener_rearmed(context: dict[str, Any]) -> bool:
    """After a failed accept asyncio re-arms the listener a second later; if the server closed
    it meanwhile (a shutdown during the burst), that callback meets a closed socket (fd -1) and
    raises this ValueError, one traceback per listener per retry. Nothing is left to accept."""
    exc = context.get("exception")
    return isinstance(exc, ValueError) and str(exc) == "Invalid file descriptor: -1"


def quiet_accept_errors(loop: asyncio.AbstractEventLoop) -> None:
    loop.set_exception_handler(AcceptErrors(loop))


class Connections:
    """The open connections, oldest first, and the cap on them."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.open: dict[GuardedH11, None] = {}  # insertion order = age
        self.closed_for_room = Burst(
            "connection cap (%s) reached: closing connections that wait on their client",
            "connection cap: %d connection(s) were closed for room",
        )
        self.timed_out = Burst(
            "closing connections whose request did not arrive in time (%s)",
            "%d connection(s) were closed for a request that did not arrive in time",
        )

    def admit(self, conn: GuardedH11) -> None:
        self.open[conn] = None
        if len(self.open) <= self.cap:
            return
        victim = next((c for c in self.open if c.waiting_on_client()), conn)
        self.closed_for_room.event(str(self.cap))
        victim.drop()

    def leave(self, conn: GuardedH11) -> None:
        self.open.pop(conn, None)


class GuardedH11(H11Protocol):
    """uvicorn's h11 protocol with read deadlines and a place in :class:`Connections`."""

    registry: Connections  # set on the per-server subclass made by guarded_protocol()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._deadline: asyncio.TimerHandle | None = None
        self._phase: str | None = None
        self._arm("headers", HEADERS_S)
        self.registry.admit(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.registry.leave(self)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow()

    def waiting_on_client(self) -> bool:
        """Whether the next move is the client's (a request being sent, or an idle keep-alive)."""
        return self.conn.their_state in (h11.IDLE, h11.SEND_BODY)

    def drop(self) -> None:
        self._disarm()
        if not self.transport.is_closing():
            self.transport.abort()

    def _follow(self) -> None:
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            if self._phase != "body":
                self._arm("body", BODY_S)
        elif state is h11.IDLE and self.conn.our_state is h11.IDLE:
            # Between requests: uvicorn's keep-alive timer covers the wait for a first byte;
            # once bytes of the next request came, its headers are on the clock.
            if self._phase is None and self.conn.trailing_data[0]:
                self._arm("headers", HEADERS_S)
        else:
            self._disarm()

    def _arm(self, phase: str, seconds: float) -> None:
        self._disarm()
        self._phase = phase
        self._deadline = self.loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline, self._phase = None, None

    def _expired(self) -> None:
        self._deadline = None
        if self.waiting_on_client():
            self.registry.timed_out.event(
                f"{self._phase}: {HEADERS_S if self._phase == 'headers' else BODY_S:g} s"
            )
            self.drop()


def guarded_protocol(cap: int) -> type[GuardedH11]:
    """A protocol class for one server (uvicorn builds one instance per connection)."""
    return type("FilegateH11", (GuardedH11,), {"registry": Connections(cap)})
