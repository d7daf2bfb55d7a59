"""server/http.py in-process: the real app (build_http_app over build_server) through a real
ASGI client, and run_http's uvicorn in a thread of this process on a port of its own.

tests/server/test_http.py proves the same guards on the installed `filegate --transport http`
in a subprocess; mutation testing cannot see a subprocess (the child imports the unmutated
package), so these run the code where mutmut's mutants live (`--target http`, docs/TESTING.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import os
import re
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from filegate import __version__
from filegate.server import http
from filegate.server.app import build_server
from filegate.server.http import OpenExchanges, build_http_app
from filegate.server.shutdown import CANCELLED
from filegate.settings import Settings, StartError

TOKEN = "t0ken-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "asgi", "version": "1"},
    },
}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
NO_TOKEN = "No bearer token was sent. Send the server's token as 'Authorization: Bearer <token>'.\n"
WRONG_TOKEN = "The bearer token is wrong. Send the token the server was started with.\n"
FORBIDDEN = "Forbidden Origin: this origin was not allowed (--allowed-origin).\n"
HANG_S = 60.0  # hang guard on one exchange; never a measurement


@pytest.fixture(autouse=True)
def no_filegate_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith(("FILEGATE_", "FASTMCP_"))]:
        if name != "FILEGATE_READ_GUARD":
            monkeypatch.delenv(name)


def settings_for(ws: Path, **kw: Any) -> Settings:
    return Settings(workdir=ws, transport="http", **kw)


@contextlib.asynccontextmanager
async def asgi(
    ws: Path, exchanges: OpenExchanges | None = None, **kw: Any
) -> AsyncIterator[httpx2.AsyncClient]:
    """The app filegate serves, lifespan running, behind a real ASGI client (Host 127.0.0.1)."""
    settings = settings_for(ws, **kw)
    app = build_http_app(build_server(settings), settings, exchanges)
    async with app.router.lifespan_context(app):
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as c:
            yield c


async def post_init(c: httpx2.AsyncClient, path: str = "/mcp", **headers: str) -> httpx2.Response:
    return await c.post(path, content=json.dumps(INIT), headers={**MCP_HEADERS, **headers})


def check_401(r: httpx2.Response, body: str) -> None:
    assert r.status_code == 401 and r.text == body, (r.status_code, r.text)
    assert r.headers["www-authenticate"] == "Bearer"
    assert r.headers["cache-control"] == "no-store"
    assert r.headers["content-type"].startswith("text/plain")


# --- the token -----------------------------------------------------------------------------


WRONG_AUTHORIZATIONS = [
    (None, NO_TOKEN),
    ("", NO_TOKEN),
    ("Bearer", NO_TOKEN),
    ("Bearer ", NO_TOKEN),
    ("Bearer    ", NO_TOKEN),
    (f"Basic {TOKEN}", NO_TOKEN),
    (f"Bearerx {TOKEN}", NO_TOKEN),
    (TOKEN, NO_TOKEN),
    ("Bearer wrong-token", WRONG_TOKEN),
    (f"Bearer {TOKEN}x", WRONG_TOKEN),
    (f"Bearer {TOKEN[:-1]}", WRONG_TOKEN),
    (f"Bearer {TOKEN.upper()}", WRONG_TOKEN),
    (f"Bearer {TOKEN} {TOKEN}", WRONG_TOKEN),
]


async def test_each_wrong_authorization_gets_its_own_401(ws: Path) -> None:
    async with asgi(ws, token=TOKEN) as c:
        for authorization, body in WRONG_AUTHORIZATIONS:
            headers = {} if authorization is None else {"Authorization": authorization}
            check_401(await post_init(c, **headers), body)


@pytest.mark.parametrize("authorization", [f"Bearer {TOKEN}", f"bearer {TOKEN}", f"BEARER {TOKEN}",
                                           f"bEaReR   {TOKEN}  "])  # fmt: skip
async def test_the_right_token_in_any_scheme_case_and_spacing_opens_a_session(
    ws: Path, authorization: str
) -> None:
    async with asgi(ws, token=TOKEN) as c:
        r = await post_init(c, Authorization=authorization)
    assert r.status_code == 200, r.text
    # Stateful streamable HTTP with SSE, as pinned against FASTMCP_* variables.
    assert r.headers["content-type"].startswith("text/event-stream")
    assert r.headers.get("mcp-session-id")
    assert '"serverInfo":{"name":"filegate"' in r.text
    assert not any(h.startswith("access-control-") for h in r.headers)  # no CORS unless asked


@pytest.mark.parametrize("method", ["GET", "DELETE", "POST", "PUT"])
async def test_every_method_on_the_mcp_path_needs_the_token(ws: Path, method: str) -> None:
    async with asgi(ws, token=TOKEN) as c:
        check_401(await c.request(method, "/mcp", headers={"Accept": "text/event-stream"}), NO_TOKEN)
        wrong = {"Accept": "text/event-stream", "Authorization": "Bearer nope"}
        check_401(await c.request(method, "/mcp", headers=wrong), WRONG_TOKEN)


async def test_the_token_guards_its_own_path_only(ws: Path) -> None:
    async with asgi(ws, token=TOKEN, path="/tools/mcp") as c:
        check_401(await post_init(c, "/tools/mcp"), NO_TOKEN)
        assert (await post_init(c, "/tools/mcp", **AUTH)).status_code == 200
        assert (await post_init(c, "/mcp", **AUTH)).status_code == 404
        health = await c.get("/healthz", headers={"Authorization": "Bearer nope"})
        assert (health.status_code, health.text) == (200, "ok")
        assert (await c.get("/")).status_code == 404


async def test_without_a_token_the_endpoint_is_open(ws: Path) -> None:
    async with asgi(ws) as c:
        assert (await post_init(c)).status_code == 200
        assert (await post_init(c, Authorization="Bearer anything")).status_code == 200


# --- Host and Origin -----------------------------------------------------------------------


async def test_a_refused_origin_gets_403_on_every_method_and_path_even_with_the_token(ws: Path) -> None:
    """fastmcp's own guard (outermost) refuses a non-loopback origin with its terse body; a
    loopback origin, which it lets through (any local web page has one), meets ours."""
    async with asgi(ws, token=TOKEN) as c:
        for method in ("GET", "DELETE", "POST", "OPTIONS"):
            for origin in ("http://localhost:5173", "http://127.0.0.1:8000", "https://evil.example.com"):
                for path in ("/mcp", "/healthz", "/elsewhere"):
                    r = await c.request(method, path, headers={**MCP_HEADERS, **AUTH, "Origin": origin})
                    assert r.status_code == 403, (method, origin, path)
                    assert r.text == (FORBIDDEN if "evil" not in origin else "Forbidden Origin"), r.text
            # The control: the same request without an Origin gets past the gates.
            r = await c.request(method, "/mcp", headers={**MCP_HEADERS, **AUTH})
            assert r.status_code not in (401, 403), (method, r.status_code)


async def test_an_allowed_origin_is_served_in_any_spelling_and_its_preflight_answered(ws: Path) -> None:
    allowed = ["https://app.example.com", "https://b.example"]
    async with asgi(ws, token=TOKEN, allowed_origins=allowed) as c:
        for origin in ("https://App.example.com", "https://app.example.com:443", "https://b.example/"):
            assert (await post_init(c, **AUTH, Origin=origin)).status_code == 200, origin
        for origin in allowed:  # as a browser spells it: CORS headers for it
            r = await post_init(c, **AUTH, Origin=origin)
            assert r.status_code == 200, (origin, r.text)
            assert r.headers["access-control-allow-origin"] == origin
            exposed = {h.strip().lower() for h in r.headers["access-control-expose-headers"].split(",")}
            assert exposed == {"mcp-session-id", "mcp-protocol-version", "www-authenticate"}
        for origin in ("http://app.example.com", "https://app.example.com:8443", "https://c.example"):
            r = await post_init(c, **AUTH, Origin=origin)
            assert r.status_code == 403 and r.text.startswith("Forbidden Origin"), origin
        r = await post_init(c, **AUTH, Origin="http://localhost:8000")  # past fastmcp's guard
        assert (r.status_code, r.text) == (403, FORBIDDEN)
        check_401(await post_init(c, Origin="https://b.example"), NO_TOKEN)  # still needs the token
        preflight = {
            "Origin": "https://b.example",
            "Access-Control-Request-Method": "DELETE",
            "Access-Control-Request-Headers": "authorization, content-type, mcp-protocol-version",
        }
        r = await c.options("/mcp", headers=preflight)
        assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "https://b.example"
        assert r.headers["access-control-allow-methods"] == "GET, POST, DELETE"
        assert r.headers["access-control-max-age"] == "600"
        assert r.headers["access-control-allow-headers"] == preflight["Access-Control-Request-Headers"]
        r = await c.options("/mcp", headers={**preflight, "Access-Control-Request-Method": "PUT"})
        assert r.status_code == 400  # a method the endpoint does not take


async def test_an_allowed_origin_given_in_another_spelling_gets_cors_for_the_browser_spelling(
    ws: Path,
) -> None:
    """The CORS layer compares exactly: the origins it lists are spelled as a browser spells its
    own, whatever the spelling of --allowed-origin (else the page's preflight fails)."""
    async with asgi(
        ws, token=TOKEN, allowed_origins=["https://App.Example.com:443/", "HTTP://b.example:80"]
    ) as c:
        for origin in ("https://app.example.com", "http://b.example"):
            preflight = {"Origin": origin, "Access-Control-Request-Method": "POST",
                         "Access-Control-Request-Headers": "authorization, content-type"}  # fmt: skip
            r = await c.options("/mcp", headers=preflight)
            assert r.status_code == 200 and r.headers["access-control-allow-origin"] == origin, r.text
            r = await post_init(c, **AUTH, Origin=origin)
            assert r.status_code == 200 and r.headers["access-control-allow-origin"] == origin


async def test_a_foreign_host_is_refused_with_421_and_an_allowed_host_is_served(ws: Path) -> None:
    async with asgi(ws, token=TOKEN, allowed_hosts=["files.internal:8000"]) as c:
        for host in ("evil.example.com", "evil.example.com:80", "10.0.0.1:8000"):
            assert (await post_init(c, **AUTH, Host=host)).status_code == 421, host
        assert (await post_init(c, **AUTH, Host="files.internal:8000")).status_code == 200
        assert (await post_init(c, **AUTH, Host="localhost:8000")).status_code == 200


@pytest.mark.parametrize(
    ("given", "normal"),
    [
        ("https://App.Example.com", "https://app.example.com:443"),
        (" https://app.example.com ", "https://app.example.com:443"),
        ("http://[::1]", "http://[::1]:80"),
        ("https://[::1]:8443", "https://[::1]:8443"),
        ("HTTP://localhost:5173/", "http://localhost:5173"),
        ("http://host:99999", "http://host:99999"),  # no port number: kept as given
        ("https://app.example.com/path", "https://app.example.com/path"),  # no origin: kept
        ("https://app.example.com?q=1", "https://app.example.com?q=1"),
        ("//app.example.com", "//app.example.com"),
        ("https://", "https://"),
        ("null", "null"),
        ("chrome-extension://abc", "chrome-extension://abc"),  # no default port
    ],
)
def test_origins_are_compared_in_one_spelling_and_non_origins_only_as_given(given: str, normal: str) -> None:
    assert http.normalized_origin(given) == normal


# --- /healthz ------------------------------------------------------------------------------


async def test_healthz_is_get_only_needs_no_token_and_tells_only_liveness(ws: Path) -> None:
    async with asgi(ws, token=TOKEN) as c:
        r = await c.get("/healthz")
        assert (r.status_code, r.text, r.headers["cache-control"]) == (200, "ok", "no-store")
        assert __version__ not in json.dumps(dict(r.headers))
        assert (await c.post("/healthz", content=b"{}")).status_code == 405


# --- open exchanges at shutdown ------------------------------------------------------------


async def open_session(c: httpx2.AsyncClient) -> dict[str, str]:
    r = await post_init(c)
    assert r.status_code == 200, r.text
    session = {"Mcp-Session-Id": r.headers["mcp-session-id"], "Mcp-Protocol-Version": "2025-06-18"}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    await c.post("/mcp", content=json.dumps(note), headers={**MCP_HEADERS, **session})
    return session


class HeldBody:
    """A request body whose end the test decides: the app waits in ``receive`` meanwhile."""

    def __init__(self) -> None:
        self.release = asyncio.Event()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield json.dumps(INIT)[:10].encode()
        await self.release.wait()
        yield json.dumps(INIT)[10:].encode()


async def until(check: Any) -> None:
    deadline = time.monotonic() + HANG_S
    while not check():
        assert time.monotonic() < deadline, "hang guard"
        await asyncio.sleep(0.01)


async def test_shutdown_ends_a_stream_with_its_last_chunk_and_an_unstarted_answer_with_503(ws: Path) -> None:
    exchanges = OpenExchanges()
    async with asgi(ws, exchanges) as c:
        session = await open_session(c)
        assert exchanges.scopes == {}  # finished exchanges are forgotten
        stream = asyncio.create_task(c.get("/mcp", headers={"Accept": "text/event-stream", **session}))
        await until(lambda: len(exchanges.scopes) == 1)
        assert list(exchanges.scopes.values()) == [False]  # a GET stream answers no request
        body = HeldBody()
        post = asyncio.create_task(c.post("/mcp", content=body, headers=MCP_HEADERS))  # type: ignore[arg-type]
        await until(lambda: len(exchanges.scopes) == 2)
        assert sorted(exchanges.scopes.values()) == [False, True]
        # settle waits for the exchanges that answer a request, not for streams.
        settling = asyncio.create_task(exchanges.settle(wait=HANG_S))
        await asyncio.sleep(0.3)
        assert not settling.done()
        exchanges.end_all()
        ended, refused = await asyncio.wait_for(asyncio.gather(stream, post), HANG_S)
        await asyncio.wait_for(settling, HANG_S)
        assert ended.status_code == 200 and ended.headers["content-type"].startswith("text/event-stream")
        assert (refused.status_code, refused.text) == (503, "filegate is shutting down")
        assert exchanges.scopes == {}
        body.release.set()


async def test_settle_returns_when_only_streams_are_open_and_gives_up_after_its_wait(ws: Path) -> None:
    exchanges = OpenExchanges()
    async with asgi(ws, exchanges) as c:
        session = await open_session(c)
        stream = asyncio.create_task(c.get("/mcp", headers={"Accept": "text/event-stream", **session}))
        await until(lambda: len(exchanges.scopes) == 1)
        await asyncio.wait_for(exchanges.settle(wait=HANG_S), HANG_S / 2)  # not the whole wait
        body = HeldBody()
        post = asyncio.create_task(c.post("/mcp", content=body, headers=MCP_HEADERS))  # type: ignore[arg-type]
        await until(lambda: len(exchanges.scopes) == 2)
        started = time.monotonic()
        await asyncio.wait_for(exchanges.settle(wait=0.2), HANG_S)  # the wait is a bound
        assert time.monotonic() - started >= 0.2
        body.release.set()  # the request ends by itself: settle sees it go
        await asyncio.wait_for(exchanges.settle(wait=HANG_S), HANG_S / 2)
        assert (await asyncio.wait_for(post, HANG_S)).status_code == 200
        exchanges.end_all()
        await asyncio.wait_for(stream, HANG_S)


# --- run_http: uvicorn in this process -----------------------------------------------------


class Running:
    def __init__(self, thread: threading.Thread, server: Any, line: str, errors: list[BaseException]) -> None:
        self.thread, self.server, self.line, self.errors = thread, server, line, errors

    @property
    def url(self) -> str:
        found = re.search(r"over http at (\S+);", self.line)
        assert found, self.line
        return found.group(1)

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].split("/")[0])

    def stop(self) -> None:
        self.server.handle_exit(15, None)
        self.thread.join(HANG_S)
        assert not self.thread.is_alive(), "run_http did not stop (hang guard)"


@pytest.fixture
def exit_handlers(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A stand-in (mock) for shutdown.run_exit_handlers: the real one runs this process's atexit
    handlers, which a test process must keep. It records that it was called."""
    called: list[str] = []
    monkeypatch.setattr(http, "run_exit_handlers", lambda: called.append("run"))
    return called


@contextlib.contextmanager
def run_in_thread(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Running]:
    """run_http as `filegate --transport http` runs it, on a thread of this process (uvicorn
    installs no signal handlers off the main thread; stop() calls its handler as a signal would)."""
    servers: list[Any] = []

    class Recorded(http._Server):
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            servers.append(self)

    monkeypatch.setattr(http, "_Server", Recorded)
    # sse-starlette's switches are process-wide and run_http sets them for good (a process
    # serves once): put them back after this test, or every later SSE stream here ends at once.
    from sse_starlette.sse import AppStatus

    monkeypatch.setattr(AppStatus, "should_exit", AppStatus.should_exit)
    monkeypatch.setattr(
        AppStatus, "enable_automatic_graceful_drain", AppStatus.enable_automatic_graceful_drain
    )
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            http.run_http(build_server(settings), settings)
        except BaseException as exc:  # reported by the test, not lost in the thread
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + HANG_S
    while not (servers and servers[0].started) and thread.is_alive():
        assert time.monotonic() < deadline, f"run_http did not start (hang guard): {stderr.getvalue()}"
        time.sleep(0.01)
    assert not errors, errors
    running = Running(thread, servers[0], stderr.getvalue(), errors)
    try:
        yield running
    finally:
        if thread.is_alive():
            running.stop()


def raw(port: int, method: str, path: str, host: str = "127.0.0.1") -> tuple[int, dict[str, str], bytes]:
    import http.client

    conn = http.client.HTTPConnection(host, port, timeout=HANG_S)
    try:
        conn.request(method, path)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def test_run_http_announces_where_it_listens_and_that_a_tokenless_server_is_open_to_local_processes(
    ws: Path, monkeypatch: pytest.MonkeyPatch, exit_handlers: list[str]
) -> None:
    with run_in_thread(settings_for(ws, port=0), monkeypatch) as running:
        assert running.line.count("\n") == 1
        assert running.line.startswith(f"filegate {__version__}: serving {ws} over http at http://127.0.0.1:")
        assert running.url == f"http://127.0.0.1:{running.port}/mcp"
        assert running.line.rstrip("\n").endswith(
            "; no token: any local process can connect (set --token or FILEGATE_TOKEN)"
        )
        status, headers, body = raw(running.port, "GET", "/healthz")
        assert (status, body) == (200, b"ok")
        assert "server" not in headers  # no uvicorn banner
        running.stop()
    assert exit_handlers == ["run"]  # a signalled server runs the exit handlers before dying of it
    assert not running.errors, running.errors


def test_run_http_with_a_token_on_ipv6_loopback(
    ws: Path, monkeypatch: pytest.MonkeyPatch, exit_handlers: list[str]
) -> None:
    settings = settings_for(ws, host="::1", port=0, token=TOKEN, path="/tools/mcp")
    with run_in_thread(settings, monkeypatch) as running:
        assert f"over http at http://[::1]:{running.port}/tools/mcp;" in running.line
        assert "no token" not in running.line
        status, headers, body = raw(running.port, "POST", "/tools/mcp", host="::1")
        assert (status, body.decode()) == (401, NO_TOKEN)


def test_a_taken_port_is_one_clear_start_error(ws: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(StartError) as caught:
            http.run_http(build_server(settings_for(ws, port=port)), settings_for(ws, port=port))
    assert str(caught.value) == f"cannot listen on 127.0.0.1:{port}: Address already in use"


async def test_a_second_signal_cuts_the_drain_short_and_the_cancelled_call_is_answered(
    ws: Path, monkeypatch: pytest.MonkeyPatch, exit_handlers: list[str]
) -> None:
    """A Grep through a sparse terabyte holds the drain (up to CALL_GRACE_S); no new connection
    is taken meanwhile; a second signal ends the drain at once and the call is answered as
    cancelled (tests/server/test_shutdown.py does the same to a `filegate` process)."""
    with (ws / "huge.bin").open("wb") as f:
        f.truncate(1 << 40)
    with run_in_thread(settings_for(ws, port=0), monkeypatch) as running:
        c = Client(StreamableHttpTransport(running.url), mode="legacy")
        await c.__aenter__()
        try:
            grep = asyncio.create_task(c.call_tool("Grep", {"pattern": "needle", "path": "huge.bin"},
                                                   raise_on_error=False))  # fmt: skip
            await until(lambda: running.server.gate.in_flight == 1)
            running.server.handle_exit(15, None)
            await until(lambda: running.server.hurry is not None)
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection(("127.0.0.1", running.port), timeout=HANG_S).close()
            assert running.thread.is_alive() and not grep.done()  # the drain waits for the call
            started = time.monotonic()
            running.server.handle_exit(2, None)
            result = await asyncio.wait_for(grep, HANG_S)
            assert time.monotonic() - started < http.CALL_GRACE_S
            assert result.is_error
            assert result.content[0].text == CANCELLED
        finally:
            with contextlib.suppress(Exception):
                await c.__aexit__(None, None, None)
        running.thread.join(HANG_S)
        assert not running.thread.is_alive()
    assert exit_handlers == ["run"]


# --- issue 26, second round: what the first mutation run left --------------------------------


async def test_a_non_ascii_token_matches_the_utf8_bytes_a_client_sends(ws: Path) -> None:
    token = "tök-🔑-ﬁ"
    async with asgi(ws, token=token) as c:
        right = {**MCP_HEADERS, "Authorization": b"Bearer " + token.encode()}
        r = await c.post("/mcp", content=json.dumps(INIT), headers=right)  # type: ignore[arg-type]
        assert r.status_code == 200, r.text
        wrong = {**MCP_HEADERS, "Authorization": b"Bearer " + token.encode("utf-16")}
        check_401(await c.post("/mcp", content=json.dumps(INIT), headers=wrong), WRONG_TOKEN)  # type: ignore[arg-type]


async def test_fastmcp_settings_cannot_turn_the_endpoint_stateless_or_plain_json(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What FASTMCP_JSON_RESPONSE / FASTMCP_STATELESS_HTTP would set (fastmcp reads them once,
    at import: set here on its settings object)."""
    import fastmcp

    monkeypatch.setattr(fastmcp.settings, "json_response", True)
    monkeypatch.setattr(fastmcp.settings, "stateless_http", True)
    async with asgi(ws) as c:
        r = await post_init(c)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    assert r.headers.get("mcp-session-id")


async def test_sessions_are_capped_and_expire_when_idle(ws: Path) -> None:
    async with asgi(ws, max_sessions=1, session_idle_timeout=0.5) as c:
        first = await open_session(c)
        r = await post_init(c)
        assert r.status_code == 503 and "Too many open sessions" in r.text
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        deadline = time.monotonic() + HANG_S
        while True:  # the idle session is ended (its id then unknown) and its place freed
            r = await c.post("/mcp", content=json.dumps(ping), headers={**MCP_HEADERS, **first})
            if r.status_code == 404:
                break
            assert time.monotonic() < deadline, "the idle session never ended (hang guard)"
            await asyncio.sleep(0.6)
        assert (await post_init(c)).status_code == 200


# TrackExchanges around a small ASGI app whose every move the test decides; what it sends is
# recorded (the messages uvicorn would write).


async def tracked(inner: Any, method: str = "GET", send_blocks: bool = False) -> list[dict[str, Any]]:
    exchanges = OpenExchanges()
    sent: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        if send_blocks and message.get("more_body") is False and message.get("body") == b"":
            await asyncio.Event().wait()  # a client that stopped reading
        sent.append(message)

    async def receive() -> Any:
        await asyncio.Event().wait()

    scope = {"type": "http", "method": method, "path": "/mcp", "headers": []}
    task = asyncio.create_task(http.TrackExchanges(inner, exchanges)(scope, receive, send))
    await until(lambda: bool(exchanges.scopes) or task.done())
    assert list(exchanges.scopes.values()) == [method == "POST"]
    await asyncio.sleep(0.05)  # the inner app's own steps first
    exchanges.end_all()
    await asyncio.wait_for(task, HANG_S)
    assert exchanges.scopes == {}
    return sent


START = {"type": "http.response.start", "status": 200, "headers": []}
PART = {"type": "http.response.body", "body": b"data: x\n\n", "more_body": True}
LAST = {"type": "http.response.body", "body": b"", "more_body": False}


async def test_an_ended_stream_gets_exactly_one_proper_last_chunk() -> None:
    async def streaming(scope: Any, receive: Any, send: Any) -> None:
        await send(START)
        await send(PART)
        await asyncio.Event().wait()

    assert await tracked(streaming) == [START, PART, LAST]


async def test_a_finished_answer_gets_nothing_more_when_its_exchange_is_ended() -> None:
    async def answered(scope: Any, receive: Any, send: Any) -> None:
        await send(START)
        await send(PART)
        await send({"type": "http.response.body", "body": b"end", "more_body": False})
        await asyncio.Event().wait()  # still running after its answer (a session's task)

    done = {"type": "http.response.body", "body": b"end", "more_body": False}
    assert await tracked(answered, "POST") == [START, PART, done]


async def test_an_unstarted_answer_is_a_503_and_a_stuck_client_does_not_hold_shutdown() -> None:
    async def waiting(scope: Any, receive: Any, send: Any) -> None:
        await asyncio.Event().wait()

    sent = await tracked(waiting, "POST")
    assert (
        sent[0]["status"] == 503
        and b"".join(m.get("body", b"") for m in sent) == b"filegate is shutting down"
    )

    async def streaming(scope: Any, receive: Any, send: Any) -> None:
        await send(START)
        await asyncio.Event().wait()

    assert await tracked(streaming, send_blocks=True) == [START]  # given up after its bound


async def test_a_lifespan_scope_passes_through_untracked() -> None:
    exchanges = OpenExchanges()
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["type"])
        assert exchanges.scopes == {}

    await http.TrackExchanges(app, exchanges)({"type": "lifespan"}, None, None)  # type: ignore[arg-type]
    assert seen == ["lifespan"]


def test_run_http_serves_a_bracketed_ipv6_host_and_no_websocket_upgrade(
    ws: Path, monkeypatch: pytest.MonkeyPatch, exit_handlers: list[str]
) -> None:
    settings = settings_for(ws, host="[::1]", port=0, token=TOKEN)
    with run_in_thread(settings, monkeypatch) as running:
        assert f"over http at http://[::1]:{running.port}/mcp;" in running.line
        import http.client

        conn = http.client.HTTPConnection("::1", running.port, timeout=HANG_S)
        upgrade = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
                   "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}  # fmt: skip
        conn.request("GET", "/mcp", headers=upgrade)
        resp = conn.getresponse()
        assert (resp.status, resp.read().decode()) == (401, NO_TOKEN)  # a plain request: no upgrade
        conn.close()


def test_run_http_sends_no_server_banner_and_logs_access_at_info(
    ws: Path, monkeypatch: pytest.MonkeyPatch, exit_handlers: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="uvicorn")
    with run_in_thread(settings_for(ws, port=0, log_level="INFO"), monkeypatch) as running:
        deadline = time.monotonic() + HANG_S
        while "date" not in (headers := raw(running.port, "GET", "/healthz")[1]):
            assert time.monotonic() < deadline  # uvicorn sets its default headers on its first tick
            time.sleep(0.1)
        assert "server" not in headers
    assert logging.getLogger("uvicorn.access").level == logging.INFO
    assert any(
        '"GET /healthz HTTP/1.1" 200' in r.getMessage() for r in caplog.records if r.name == "uvicorn.access"
    )
    caplog.clear()
    with run_in_thread(settings_for(ws, port=0), monkeypatch) as running:
        raw(running.port, "GET", "/healthz")
    assert logging.getLogger("uvicorn.access").level == logging.WARNING


def test_run_http_caps_its_connections(
    ws: Path, monkeypatch: pytest.MonkeyPatch, exit_handlers: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    with run_in_thread(settings_for(ws, port=0, max_connections=8), monkeypatch) as running:
        idle = [socket.create_connection(("127.0.0.1", running.port), timeout=HANG_S) for _ in range(12)]
        try:
            deadline = time.monotonic() + HANG_S
            while not any("connection cap (8) reached" in r.getMessage() for r in caplog.records):
                assert time.monotonic() < deadline, "no connection was closed for room (hang guard)"
                time.sleep(0.05)
            assert raw(running.port, "GET", "/healthz")[2] == b"ok"
        finally:
            for s in idle:
                s.close()


async def test_a_stop_ends_idle_sessions_streams_properly(
    ws: Path, monkeypatch: pytest.MonkeyPatch, exit_handlers: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    with run_in_thread(settings_for(ws, port=0), monkeypatch) as running:
        c = Client(StreamableHttpTransport(running.url), mode="legacy")
        await c.__aenter__()
        try:
            await c.list_tools()
            started = time.monotonic()
            await asyncio.to_thread(running.stop)
            assert time.monotonic() - started < http.HTTP_GRACE_S  # not cut by uvicorn's grace period
        finally:
            with contextlib.suppress(Exception):
                await c.__aexit__(None, None, None)
    assert not [r for r in caplog.records if "without completing response" in r.getMessage()]


async def grep_then_stop(ws: Path, monkeypatch: pytest.MonkeyPatch, *signals: int) -> tuple[Any, float]:
    with (ws / "huge.bin").open("wb") as f:
        f.truncate(1 << 40)
    with run_in_thread(settings_for(ws, port=0), monkeypatch) as running:
        c = Client(StreamableHttpTransport(running.url), mode="legacy")
        await c.__aenter__()
        try:
            grep = asyncio.create_task(c.call_tool("Grep", {"pattern": "needle", "path": "huge.bin"},
                                                   raise_on_error=False))  # fmt: skip
            await until(lambda: running.server.gate.in_flight == 1)
            started = time.monotonic()
            for sig in signals:
                running.server.handle_exit(sig, None)
            result = await asyncio.wait_for(grep, HANG_S)
            return result, time.monotonic() - started
        finally:
            with contextlib.suppress(Exception):
                await c.__aexit__(None, None, None)


async def test_two_sigterms_at_once_skip_the_grace_period(
    ws: Path, monkeypatch: pytest.MonkeyPatch, exit_handlers: list[str]
) -> None:
    result, took = await grep_then_stop(ws, monkeypatch, 15, 15)
    assert result.content[0].text == CANCELLED and took < http.CALL_GRACE_S


async def test_one_sigterm_lets_a_call_run_for_the_grace_period_then_cancels_it(
    ws: Path, monkeypatch: pytest.MonkeyPatch, exit_handlers: list[str]
) -> None:
    # A shorter grace than the real one: what is checked is that the call runs until the grace
    # ends, then is cancelled (the real one runs in tests/server/test_shutdown.py's slow tests).
    monkeypatch.setattr(http, "CALL_GRACE_S", 1.0)
    result, took = await grep_then_stop(ws, monkeypatch, 15)
    assert result.content[0].text == CANCELLED and took >= http.CALL_GRACE_S
