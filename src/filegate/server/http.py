"""The streamable-HTTP endpoint.

- Stateful streamable HTTP with SSE: a handshake-era client keeps one session (its own roots and
  approvals) and gets elicitation requests on its stream; 2026-07-28 clients are served per
  request. Many clients at once.
- Every request to the MCP path needs ``Authorization: Bearer <token>`` when a token is set
  (compared in constant time; 401 with ``WWW-Authenticate: Bearer`` otherwise). Binding a
  non-loopback address without a token is refused earlier, in Settings.
- Host and Origin are checked on every request (421 / 403): DNS rebinding cannot reach a
  server on loopback. ``--allowed-origin`` admits browser-based clients (and answers their
  CORS preflights). Host names other than loopback and the bound address get 421.
- ``GET /healthz`` needs no token and answers ``ok``: it tells liveness and nothing else.
- SIGTERM/SIGINT: stop accepting, let running calls finish (shutdown.CALL_GRACE_S), cancel the
  rest (killing their rg), end open responses properly, then stop.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import socket
from types import FrameType

import anyio
import uvicorn
from fastmcp import FastMCP
from fastmcp.server.auth import AccessToken, TokenVerifier
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from filegate.server.shutdown import CALL_GRACE_S, CallGate
from filegate.settings import Settings, StartError, announce

log = logging.getLogger("filegate")

HEALTH_PATH = "/healthz"
# What a browser page on an --allowed-origin may send and read (streamable HTTP, both eras).
CORS_METHODS = ["GET", "POST", "DELETE"]
CORS_EXPOSE = ["Mcp-Session-Id", "Mcp-Protocol-Version", "WWW-Authenticate"]
# After the calls are drained and open responses ended, how long uvicorn waits for the
# connections to close before cancelling what is left.
HTTP_GRACE_S = 2.0


class BearerVerifier(TokenVerifier):
    """One shared secret. Both sides are hashed first, so the comparison takes the same time
    whatever the token's length and content."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self._digest = hashlib.sha256(token.encode()).digest()

    async def verify_token(self, token: str) -> AccessToken | None:
        offered = hashlib.sha256(token.encode()).digest()
        if hmac.compare_digest(offered, self._digest):
            return AccessToken(token=token, client_id="filegate-user", scopes=[])
        return None


async def _healthz(request: Request) -> Response:
    return PlainTextResponse("ok", headers={"Cache-Control": "no-store"})


class OpenExchanges:
    """The HTTP exchanges in progress (an SSE stream can stay open for hours)."""

    def __init__(self) -> None:
        self.scopes: set[anyio.CancelScope] = set()

    def end_all(self) -> None:
        for scope in list(self.scopes):
            scope.cancel()


class TrackExchanges:
    """ASGI middleware: lets shutdown end every open response with a proper last chunk, rather
    than leave uvicorn to cut them (it logs "ASGI callable returned without completing
    response" for each)."""

    def __init__(self, app: ASGIApp, exchanges: OpenExchanges) -> None:
        self.app = app
        self.exchanges = exchanges

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = finished = False

        async def tracked(message: Message) -> None:
            nonlocal started, finished
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                finished = True
            await send(message)

        cancel = anyio.CancelScope()
        self.exchanges.scopes.add(cancel)
        try:
            with cancel:
                await self.app(scope, receive, tracked)
        finally:
            self.exchanges.scopes.discard(cancel)
        if not cancel.cancelled_caught or finished:
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(1):
            if started:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            else:
                await PlainTextResponse("filegate is shutting down", 503)(scope, receive, send)


def build_http_app(server: FastMCP, settings: Settings, exchanges: OpenExchanges | None = None) -> Starlette:
    """The ASGI app. ``exchanges`` (optional) collects open responses for shutdown."""
    if settings.token is not None:
        server.auth = BearerVerifier(settings.token.get_secret_value())
    server.custom_route(HEALTH_PATH, methods=["GET"], include_in_schema=False)(_healthz)
    middleware = [Middleware(TrackExchanges, exchanges=exchanges)] if exchanges else []
    if settings.allowed_origins:
        # A browser page may call the endpoint only if its preflight is answered and the
        # responses carry CORS headers; other origins still get 403 from the guard.
        middleware.insert(0, _cors(list(settings.allowed_origins)))
    app: Starlette = server.http_app(
        path=settings.path,
        middleware=middleware,
        transport="http",
        # Pinned here so FASTMCP_* variables in the user's environment cannot weaken them.
        json_response=False,
        stateless_http=False,
        host_origin_protection=True,
        allowed_hosts=list(settings.allowed_hosts),
        allowed_origins=list(settings.allowed_origins),
    )
    return app


def _cors(origins: list[str]) -> Middleware:
    return Middleware(
        CORSMiddleware,
        allow_origins=origins,
        allow_methods=CORS_METHODS,
        allow_headers=["*"],  # Authorization, Content-Type, Mcp-* and Last-Event-ID
        expose_headers=CORS_EXPOSE,
        max_age=600,
    )


class _Server(uvicorn.Server):
    """uvicorn, with filegate's drain step before its own shutdown."""

    def __init__(self, config: uvicorn.Config, gate: CallGate, exchanges: OpenExchanges) -> None:
        super().__init__(config)
        self.gate = gate
        self.exchanges = exchanges

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit:
            self.force_exit = True  # a second signal of either kind: stop waiting
        super().handle_exit(sig, frame)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for listener in self.servers:
            listener.close()  # no new connections while the calls drain
        await self.gate.drain(CALL_GRACE_S, hurry=lambda: self.force_exit)
        self.exchanges.end_all()
        await anyio.sleep(0)  # let the ended exchanges send their last chunk
        _release_sse_streams()
        await super().shutdown(sockets)


def _hold_sse_streams() -> None:
    """sse-starlette ends every SSE stream as soon as uvicorn sees a signal, which would cut a
    running call's response stream before the drain; take that decision over."""
    with contextlib.suppress(ImportError):
        from sse_starlette.sse import AppStatus

        AppStatus.disable_automatic_graceful_drain()  # type: ignore[no-untyped-call]


def _release_sse_streams() -> None:
    with contextlib.suppress(ImportError):
        from sse_starlette.sse import AppStatus

        AppStatus.should_exit = True


def run_http(server: FastMCP, settings: Settings) -> None:
    _hold_sse_streams()
    gate = CallGate()
    server.add_middleware(gate)
    exchanges = OpenExchanges()
    app = build_http_app(server, settings, exchanges)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,  # keep filegate's stderr handler and --log-level (app.configure_logging)
        log_level=settings.log_level.lower(),
        lifespan="on",
        timeout_graceful_shutdown=int(HTTP_GRACE_S),
        server_header=False,
    )
    listener = _listen(settings.host, settings.port)  # before uvicorn: a taken port is one line
    announce(settings, f"http://{_url_host(settings.host)}:{listener.getsockname()[1]}{settings.path}")
    _Server(config, gate, exchanges).run(sockets=[listener])


def _listen(host: str, port: int) -> socket.socket:
    """The bound listening socket (as uvicorn binds it), or StartError naming host, port and why."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise StartError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
