"""Stopping cleanly on SIGTERM/SIGINT, on stdio and on HTTP.

In-flight tool calls get a short grace period to finish; then they are cancelled, which runs
their cleanup (Grep kills its rg child) and answers the caller with an error result. Only
then does the process exit. Without this, SIGTERM killed a stdio server at once (rg lived on)
and SIGINT left it waiting for stdin forever.
"""

from __future__ import annotations

import atexit
import logging
import signal
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from fastmcp.server.middleware import Middleware, MiddlewareContext
from fastmcp.tools import ToolResult
from mcp.types import CallToolRequestParams, TextContent

log = logging.getLogger("filegate")

# How long in-flight calls may keep running after SIGTERM/SIGINT. `docker stop` sends SIGKILL
# 10 s after SIGTERM; 5 s leaves room for cancelling and closing connections.
CALL_GRACE_S = 5.0
# How long cancelled calls get to run their cleanup (killing and reaping rg takes milliseconds).
CANCEL_WAIT_S = 3.0

SIGNALS = (signal.SIGTERM, signal.SIGINT)

NOT_STARTED = "filegate is shutting down, so this call was not run. Try again once it is back."
CANCELLED = "The call was cancelled because filegate is shutting down. Nothing more was done."


def _error(text: str) -> ToolResult:
    return ToolResult(content=[TextContent(type="text", text=text)], is_error=True)


class CallGate(Middleware):
    """Tracks running tool calls so shutdown can let them finish, or cancel them."""

    def __init__(self) -> None:
        self.closing = False
        self._calls: set[anyio.CancelScope] = set()
        self._emptied: anyio.Event | None = None  # set when the last running call leaves

    @property
    def in_flight(self) -> int:
        return len(self._calls)

    async def on_call_tool(
        self,
        context: MiddlewareContext[CallToolRequestParams],
        call_next: Callable[[MiddlewareContext[CallToolRequestParams]], Any],
    ) -> ToolResult:
        return await self.run(context.message.name, lambda: call_next(context))

    async def run(self, name: str, call: Callable[[], Awaitable[ToolResult]]) -> ToolResult:
        """``call()`` counted as a running call."""
        if self.closing:
            return _error(NOT_STARTED)
        scope = anyio.CancelScope()
        self._calls.add(scope)
        try:
            with scope:
                return await call()
        finally:
            self._calls.discard(scope)
            if not self._calls and self._emptied is not None:
                self._emptied.set()
        log.warning("%s cancelled at shutdown", name)
        return _error(CANCELLED)

    async def drain(self, grace: float = CALL_GRACE_S, hurry: anyio.Event | None = None) -> None:
        """Refuse new calls, wait up to ``grace`` seconds for running ones, cancel the rest.

        ``hurry`` being set (a second Ctrl+C) ends the grace period at once.
        """
        self.closing = True
        if self._calls:
            log.info("waiting up to %.0f s for %d running call(s)", grace, len(self._calls))
        with anyio.move_on_after(grace):
            async with anyio.create_task_group() as tg:
                if hurry is not None:

                    async def hurried() -> None:
                        await hurry.wait()
                        tg.cancel_scope.cancel()

                    tg.start_soon(hurried)
                await self._all_done()
                tg.cancel_scope.cancel()
        if not self._calls:
            return
        log.warning("cancelling %d running call(s)", len(self._calls))
        for scope in list(self._calls):
            scope.cancel()
        with anyio.move_on_after(CANCEL_WAIT_S):
            await self._all_done()

    async def _all_done(self) -> None:
        if self._calls:
            self._emptied = anyio.Event()
            await self._emptied.wait()


def run_exit_handlers() -> None:
    """Run now what a normal interpreter exit runs (``atexit``: logging's flush, and a coverage
    measurement's save when the tests measure a server): a process about to die of the signal
    it was stopped with would skip them. ``atexit`` forgets each handler once run."""
    atexit._run_exitfuncs()
