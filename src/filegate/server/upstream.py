"""Every place filegate reaches past the public API of fastmcp, the MCP SDK or sse-starlette.

Each touch is named here once, with why it is needed, and :func:`missing` checks that each
still exists (tests/server/test_upstream.py runs it), so an upgrade that renames one fails
that test loudly instead of quietly changing behaviour.

- ``FastMCP._lifespan_manager()``, ``FastMCP._mcp_server`` (fastmcp): stdio served on our own
  streams (server/stdio.py).
- ``FastMCP.__state_store``, name-mangled (fastmcp): the session-state store built lazily
  (server/state.py).
- ``ServerSession._connection`` (mcp): what lives as long as a handshake-era session, the key
  for its roots and approvals.
- ``ServerSession._request_outbound`` (mcp): a server-to-client request on the stream of the
  call being handled, with its raw (unvalidated) result: roots/list must go where a POST-only
  client listens, and its entries are judged one by one (a non-``file:`` root is dropped, not
  a reason to reject the whole answer, which ``send_request``'s validation would do).
- ``StreamableHTTPASGIApp.session_manager`` (fastmcp): the session cap; ``max_sessions`` is
  the SDK manager's public knob, which fastmcp does not pass on.
- ``AppStatus.disable_automatic_graceful_drain()``, ``AppStatus.should_exit`` (sse-starlette):
  SSE streams end after the shutdown drain, not at the signal.
- uvicorn's ``H11Protocol`` (its ``conn``, ``transport``, ``on_response_complete``): the
  connection cap and read deadlines (server/connections.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastmcp import FastMCP
    from starlette.applications import Starlette

# Where FastMCP keeps the session-state store it builds on first use.
STATE_STORE_SLOT = "_FastMCP__state_store"


def lifespan(server: FastMCP) -> contextlib.AbstractAsyncContextManager[Any]:
    return server._lifespan_manager()


def low_level(server: FastMCP) -> Any:
    return server._mcp_server


def connection_of(session: Any) -> object:
    """The connection a ServerSession (one per request in mcp 2) belongs to."""
    connection: object | None = getattr(session, "_connection", None)
    return connection if connection is not None else session


async def request_on_call_stream(session: Any, method: str, timeout: float) -> dict[str, Any]:
    """Ask the client ``method`` (no params) on the current call's stream; the raw result."""
    result: dict[str, Any] = await session._request_outbound.send_raw_request(
        method, None, {"timeout": timeout}
    )
    return result


def cap_sessions(app: Starlette, path: str, max_sessions: int) -> None:
    """Have the session manager fastmcp builds at start-up open at most ``max_sessions``."""
    from fastmcp.server.http import StreamableHTTPASGIApp
    from starlette.routing import Route

    endpoints = [
        r.endpoint
        for r in app.routes
        if isinstance(r, Route) and r.path == path and isinstance(r.endpoint, StreamableHTTPASGIApp)
    ]
    if len(endpoints) != 1:
        raise RuntimeError(f"fastmcp's streamable-HTTP endpoint at {path} was not found")
    endpoint = endpoints[0]
    inner: Callable[[Any], contextlib.AbstractAsyncContextManager[Any]] = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def capped(asgi: Any) -> AsyncIterator[Any]:
        async with inner(asgi) as state:
            manager = endpoint.session_manager
            if manager is None or not hasattr(manager, "max_sessions"):
                raise RuntimeError("fastmcp's session manager has no max_sessions")
            manager.max_sessions = max_sessions
            yield state

    app.router.lifespan_context = capped


def hold_sse_streams() -> None:
    """sse-starlette ends every SSE stream as soon as uvicorn sees a signal, which would cut a
    running call's response stream before the drain; take that decision over."""
    from sse_starlette.sse import AppStatus

    AppStatus.disable_automatic_graceful_drain()  # type: ignore[no-untyped-call]


def release_sse_streams() -> None:
    from sse_starlette.sse import AppStatus

    AppStatus.should_exit = True


def missing() -> list[str]:
    """The touches above that the installed packages no longer have."""
    from fastmcp import FastMCP
    from fastmcp.server.http import StreamableHTTPASGIApp
    from mcp.server.session import ServerSession
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.shared.dispatcher import DispatchContext
    from sse_starlette.sse import AppStatus
    from uvicorn.protocols.http.h11_impl import H11Protocol

    server = FastMCP("probe")
    checks = {
        "FastMCP._lifespan_manager": callable(getattr(server, "_lifespan_manager", None)),
        "FastMCP._mcp_server": getattr(server, "_mcp_server", None) is not None,
        f"FastMCP.{STATE_STORE_SLOT}": hasattr(server, STATE_STORE_SLOT),
        "ServerSession._connection": "_connection" in ServerSession.__init__.__code__.co_names,
        "ServerSession._request_outbound": "_request_outbound" in ServerSession.__init__.__code__.co_names,
        "DispatchContext.send_raw_request": callable(getattr(DispatchContext, "send_raw_request", None)),
        "StreamableHTTPASGIApp.session_manager": hasattr(StreamableHTTPASGIApp(None), "session_manager"),
        "StreamableHTTPSessionManager.max_sessions": "max_sessions"
        in StreamableHTTPSessionManager.__init__.__code__.co_varnames,
        "AppStatus.disable_automatic_graceful_drain": callable(
            getattr(AppStatus, "disable_automatic_graceful_drain", None)
        ),
        "AppStatus.should_exit": hasattr(AppStatus, "should_exit"),
        "H11Protocol.on_response_complete": callable(getattr(H11Protocol, "on_response_complete", None)),
        "H11Protocol.conn": "conn" in H11Protocol.__init__.__code__.co_names,
    }
    return [name for name, present in checks.items() if not present]
