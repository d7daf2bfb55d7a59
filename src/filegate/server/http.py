"""The streamable-HTTP endpoint.

- Stateful streamable HTTP with SSE: a handshake-era client keeps one session (its own roots and
  approvals) and gets elicitation requests on its stream; 2026-07-28 clients are served per
  request. Many clients at once.
- Every request to the MCP path needs ``Authorization: Bearer <token>`` when a token is set
  (compared in constant time). Without it: a plain 401 that says the token is missing or
  wrong, with a bare ``WWW-Authenticate: Bearer`` challenge -- no OAuth error codes, no
  resource metadata, no discovery routes, so no client starts an OAuth login against a
  server that has no OAuth. Binding a non-loopback address without a token is refused
  earlier, in Settings.
- Host and Origin are checked on every request (421 / 403): DNS rebinding cannot reach a
  server on loopback. A request that carries an ``Origin`` header is served only when that
  origin was given with ``--allowed-origin`` (which also answers its CORS preflights): no
  implicit localhost ports, since any local web page has a localhost origin. Host names other
  than loopback and the bound address get 421.
- Under abuse (SPEC §5): a cap on connections and deadlines for a request's headers and body
  (server/connections.py), accept errors logged once per burst, and a cap on handshake-era
  sessions with an idle expiry (``--max-sessions``, ``--session-idle-timeout``); a session's
  roots and approvals are keyed weakly on it and go when it ends.
- ``GET /healthz`` needs no token and answers ``ok``: it tells liveness and nothing else.
- SIGTERM/SIGINT: stop accepting, let running calls finish (shutdown.CALL_GRACE_S), cancel the
  rest (killing their rg), end open responses properly, then stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import socket
from collections.abc import Iterator
from types import FrameType
from urllib.parse import urlsplit

import anyio
import uvicorn
from fastmcp import FastMCP
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from filegate.server import upstream
from filegate.server.connections import connection_cap, guarded_protocol, quiet_accept_errors
from filegate.server.shutdown import CALL_GRACE_S, CallGate, run_exit_handlers
from filegate.server.startup import announce
from filegate.settings import Settings, StartError

log = logging.getLogger("filegate")

HEALTH_PATH = "/healthz"
# What a browser page on an --allowed-origin may send and read (streamable HTTP, both eras).
CORS_METHODS = ["GET", "POST", "DELETE"]
CORS_EXPOSE = ["Mcp-Session-Id", "Mcp-Protocol-Version", "WWW-Authenticate"]
# After the calls are drained and open responses ended, how long uvicorn waits for the
# connections to close before cancelling what is left.
HTTP_GRACE_S = 2.0
# After the drain, how long the answers of the calls it cancelled get to reach their callers
# (milliseconds normally; more only on a loaded machine), and how often that is looked at.
ANSWER_WAIT_S = 1.0
SETTLE_POLL_S = 0.005
# The listen queue, which is also how many connections asyncio accepts in one go before any of
# them reaches the connection cap (server/connections.py): kept well under its descriptor
# reserve, so a flood of connects waits in the kernel instead of taking the last descriptors.
ACCEPT_BACKLOG = 16


NO_TOKEN = "No bearer token was sent. Send the server's token as 'Authorization: Bearer <token>'.\n"
WRONG_TOKEN = "The bearer token is wrong. Send the token the server was started with.\n"
FORBIDDEN_ORIGIN = "Forbidden Origin: this origin was not allowed (--allowed-origin).\n"


class BearerGate:
    """ASGI middleware: requests to the MCP path need the one shared token.

    Both sides are hashed first, so the comparison takes the same time whatever the offered
    token's length and content. A failure is a plain 401 naming the problem; the challenge is
    a bare ``Bearer`` (RFC 6750 §3) with no ``error`` or ``resource_metadata`` parameter, which
    is what sends OAuth-capable clients (the Inspector) into discovery and a login page.
    """

    def __init__(self, app: ASGIApp, token: str, path: str) -> None:
        self.app = app
        self.path = path
        self._digest = hashlib.sha256(token.encode()).digest()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        scheme, _, offered = Headers(scope=scope).get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not offered.strip():
            await _unauthorized(NO_TOKEN)(scope, receive, send)
            return
        # Starlette decodes header bytes as latin-1: encoding back gives the bytes the client
        # sent, so a non-ASCII token (UTF-8 on both sides) matches too.
        digest = hashlib.sha256(offered.strip().encode("latin-1")).digest()
        if not hmac.compare_digest(digest, self._digest):
            await _unauthorized(WRONG_TOKEN)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _unauthorized(text: str) -> Response:
    return PlainTextResponse(text, 401, headers={"WWW-Authenticate": "Bearer", "Cache-Control": "no-store"})


def normalized_origin(origin: str) -> str:
    """``scheme://host:port`` in lower case with the scheme's default port spelled out, so
    ``https://App.example`` and ``https://app.example:443/`` are one origin; anything that
    does not parse as an origin is kept as given (and matches only itself)."""
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return origin
    if not parts.scheme or not parts.hostname or parts.path not in ("", "/") or parts.query:
        return origin
    scheme = parts.scheme.lower()
    port = port if port is not None else {"http": 80, "https": 443}.get(scheme)
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{scheme}://{host}:{port}" if port is not None else f"{scheme}://{host}"


def browser_origin(origin: str) -> str:
    """An allowed origin as a browser spells its own (lower case, no default port): the CORS
    layer compares the ``Origin`` header with its list exactly, so ``--allowed-origin
    https://App.example:443`` must be listed as ``https://app.example`` there."""
    norm = normalized_origin(origin)
    for scheme, port in (("http", ":80"), ("https", ":443")):
        if norm.startswith(f"{scheme}://") and norm.endswith(port):
            return norm[: -len(port)]
    return norm


class OriginGate:
    """ASGI middleware: a request with an ``Origin`` header is served only for an allowed origin.

    fastmcp's own guard also lets through any loopback origin on a loopback server, which is
    every local web page (``http://localhost:5173``); this one has no such exception.
    """

    def __init__(self, app: ASGIApp, allowed: list[str]) -> None:
        self.app = app
        self.allowed = frozenset(normalized_origin(o) for o in allowed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            origin = Headers(scope=scope).get("origin")
            if origin is not None and normalized_origin(origin) not in self.allowed:
                await PlainTextResponse(FORBIDDEN_ORIGIN, 403)(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def _healthz(request: Request) -> Response:
    return PlainTextResponse("ok", headers={"Cache-Control": "no-store"})


class OpenExchanges:
    """The HTTP exchanges in progress (an SSE stream can stay open for hours).

    A POST exchange carries the answer to a request and ends by itself once that answer is
    sent; a GET stream (a handshake-era session's own SSE stream) ends only when it is ended.
    """

    def __init__(self) -> None:
        self.scopes: dict[anyio.CancelScope, bool] = {}  # scope -> does it answer a request?

    async def settle(self, wait: float = ANSWER_WAIT_S) -> None:
        """Wait up to ``wait`` seconds for the exchanges that answer a request to end by
        themselves: a call cancelled at shutdown has its result on the way (through fastmcp's
        session and the SSE writer), and ending its exchange first loses it."""
        with anyio.move_on_after(wait):
            while any(self.scopes.values()):
                await anyio.sleep(SETTLE_POLL_S)

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
        self.exchanges.scopes[cancel] = scope["method"] == "POST"
        try:
            with cancel:
                await self.app(scope, receive, tracked)
        finally:
            self.exchanges.scopes.pop(cancel, None)
        if not cancel.cancelled_caught or finished:
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(1):
            if started:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            else:
                await PlainTextResponse("filegate is shutting down", 503)(scope, receive, send)


def build_http_app(server: FastMCP, settings: Settings, exchanges: OpenExchanges | None = None) -> Starlette:
    """The ASGI app. ``exchanges`` (optional) collects open responses for shutdown."""
    server.custom_route(HEALTH_PATH, methods=["GET"], include_in_schema=False)(_healthz)
    # Outermost first: the Origin verdict, then CORS (a preflight carries no token), then the
    # token, then the shutdown bookkeeping.
    middleware = [Middleware(OriginGate, allowed=list(settings.allowed_origins))]
    if settings.allowed_origins:
        # A browser page may call the endpoint only if its preflight is answered and the
        # responses carry CORS headers.
        middleware.append(_cors([browser_origin(o) for o in settings.allowed_origins]))
    if settings.token is not None:
        middleware.append(Middleware(BearerGate, token=settings.token.get_secret_value(), path=settings.path))
    if exchanges:
        middleware.append(Middleware(TrackExchanges, exchanges=exchanges))
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
        session_idle_timeout=settings.session_idle_timeout,
    )
    upstream.cap_sessions(app, settings.path, settings.max_sessions)
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

    hurry: anyio.Event | None = None
    loop: asyncio.AbstractEventLoop | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit:
            self.force_exit = True  # a second signal of either kind: stop waiting
            if self.hurry is not None and self.loop is not None:
                self.loop.call_soon_threadsafe(self.hurry.set)
        self.signalled = True
        super().handle_exit(sig, frame)

    signalled = False

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """uvicorn's, with the exit handlers run before it raises the caught signal again (to
        die of it, the conventional status), which would skip them."""
        with super().capture_signals():
            yield
            if self.signalled:
                run_exit_handlers()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        quiet_accept_errors(self.loop)
        await super().startup(sockets)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for listener in self.servers:
            listener.close()  # no new connections while the calls drain
        self.hurry = anyio.Event()
        if self.force_exit:
            self.hurry.set()
        await self.gate.drain(CALL_GRACE_S, hurry=self.hurry)
        await self.exchanges.settle()  # the cancelled calls' results reach their callers
        self.exchanges.end_all()
        await anyio.sleep(0)  # let the ended exchanges send their last chunk
        upstream.release_sse_streams()
        await super().shutdown(sockets)


def run_http(server: FastMCP, settings: Settings) -> None:
    upstream.hold_sse_streams()
    gate = CallGate()
    server.add_middleware(gate)
    exchanges = OpenExchanges()
    app = build_http_app(server, settings, exchanges)
    # No host, port or backlog here: uvicorn serves the socket _listen bound (and uses those
    # only to bind one itself).
    config = uvicorn.Config(
        app,
        log_config=None,  # keep filegate's stderr handler and --log-level (app.configure_logging)
        log_level=settings.log_level,
        lifespan="on",
        timeout_graceful_shutdown=int(HTTP_GRACE_S),
        server_header=False,
        http=guarded_protocol(connection_cap(settings.max_connections)),
        ws="none",  # no WebSocket route: an upgrade request is just a request
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
    # Listening before the start-up line is written: from that line on, a client's connect is
    # queued by the kernel until uvicorn serves it, so the line is a readiness signal.
    sock.listen(ACCEPT_BACKLOG)
    sock.set_inheritable(True)
    return sock


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
