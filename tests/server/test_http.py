"""The HTTP endpoint, secure by default: token, Host/Origin, /healthz, sessions, logging.

Each test runs the installed `filegate --transport http` on a free loopback port and talks to
it with raw HTTP (exact headers) or a real fastmcp client.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastmcp import Client
from fastmcp.client.elicitation import ElicitResult
from fastmcp.client.transports import StreamableHttpTransport
from mcp.shared.exceptions import MCPError

from filegate import __version__
from tests import rawhttp
from tests.conftest import FILEGATE, call, text
from tests.rawhttp import INIT, MCP_HEADERS
from tests.server.served import Served, http_filegate, request

TOKEN = "t0ken-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
# One worker under pytest-xdist: the module's server (`srv`) starts once, not once a worker.
pytestmark = pytest.mark.xdist_group("http-srv")


def post_init(srv: Served, **headers: str) -> tuple[int, dict[str, str], bytes]:
    return rawhttp.post_init(srv.port, **headers)


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One token-protected server for the tests that need no special flags."""
    tmp = tmp_path_factory.mktemp("http")
    workdir = Path(os.path.realpath(tmp / "ws"))
    workdir.mkdir()
    (workdir / "a.txt").write_text("over http\n")
    (workdir / "multi").mkdir()
    with http_filegate(workdir, tmp, "--token", TOKEN) as served:
        yield served


# --- the token -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong-token", f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", f"Basic {TOKEN}", TOKEN],
)
def test_mcp_request_without_the_right_bearer_token_gets_401_and_a_bearer_challenge(
    srv: Served, authorization: str | None
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    status, hdrs, body = post_init(srv, **headers)
    assert status == 401
    assert hdrs["www-authenticate"].startswith("Bearer")
    assert b"filegate" not in body and b"jsonrpc" not in body
    # A plain answer that says what is wrong, and nothing that starts an OAuth login (issue 12).
    assert hdrs["content-type"].startswith("text/plain")
    sent_bearer = (authorization or "").lower().startswith("bearer ")
    assert (b"bearer token is wrong" if sent_bearer else b"No bearer token was sent") in body
    assert hdrs["www-authenticate"] == "Bearer"
    for oauth_word in (b"oauth", b"register", b"invalid_token", b"resource_metadata", b"expired"):
        assert oauth_word not in body.lower() and oauth_word not in hdrs["www-authenticate"].encode().lower()


@pytest.mark.parametrize(
    "path",
    [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
        "/register",
        "/authorize",
    ],
)
def test_no_oauth_discovery_is_offered(srv: Served, path: str) -> None:
    assert request(srv.port, "GET", path, {"Host": f"127.0.0.1:{srv.port}"})[0] == 404


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_every_method_on_the_mcp_path_needs_the_token(srv: Served, method: str) -> None:
    status, hdrs, _ = request(srv.port, method, "/mcp", {"Accept": "text/event-stream"})
    assert status == 401 and hdrs["www-authenticate"].startswith("Bearer")


def test_the_right_token_opens_a_session(srv: Served) -> None:
    status, hdrs, body = post_init(srv, **AUTH)
    assert status == 200
    assert not any(h.startswith("access-control-") for h in hdrs)  # no CORS unless asked
    assert hdrs["content-type"].startswith("text/event-stream")  # stateful, SSE
    assert hdrs.get("mcp-session-id")
    assert b'"serverInfo":{"name":"filegate"' in body


# --- Host and Origin -----------------------------------------------------------------------


@pytest.mark.parametrize("host", ["evil.example.com", "evil.example.com:80", "10.0.0.1:8000"])
def test_foreign_host_is_refused_with_421_even_with_the_token(srv: Served, host: str) -> None:
    assert post_init(srv, **AUTH, Host=host)[0] == 421


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
def test_loopback_hosts_are_accepted(srv: Served, host: str) -> None:
    assert post_init(srv, **AUTH, Host=f"{host}:{srv.port}")[0] == 200


def test_foreign_origin_is_refused_with_403(srv: Served) -> None:
    assert post_init(srv, **AUTH, Origin="https://evil.example.com")[0] == 403


@pytest.mark.parametrize(
    "origin", ["http://localhost:5173", "http://127.0.0.1:8080", "http://[::1]:3000", "null"]
)
def test_an_origin_that_was_not_allowed_is_refused_even_on_loopback(srv: Served, origin: str) -> None:
    """Any local web page has a localhost origin: no implicit localhost ports (issue 10 hole 9)."""
    assert post_init(srv, **AUTH, Origin=origin)[0] == 403
    assert post_init(srv, **AUTH, Origin=f"http://127.0.0.1:{srv.port}")[0] == 403


def test_a_tokenless_loopback_server_refuses_a_local_web_page(ws: Path, tmp_path: Path) -> None:
    with http_filegate(ws, tmp_path) as served:
        assert post_init(served, Origin="http://localhost:5173")[0] == 403
        assert post_init(served, Origin="http://localhost")[0] == 403
        assert post_init(served)[0] == 200  # no Origin: a native client, served


@pytest.mark.slow
def test_an_allowed_origin_matches_in_any_spelling_of_itself(ws: Path, tmp_path: Path) -> None:
    with http_filegate(ws, tmp_path, "--allowed-origin", "https://App.example.com") as served:
        assert post_init(served, Origin="https://app.example.com:443")[0] == 200
        assert post_init(served, Origin="https://app.example.com")[0] == 200
        assert post_init(served, Origin="http://app.example.com")[0] == 403
        assert post_init(served, Origin="https://app.example.com:8443")[0] == 403


@pytest.mark.slow
def test_allowed_origin_admits_those_browser_origins_only_on_a_custom_path_too(
    ws: Path, tmp_path: Path
) -> None:
    flags = ("--token", TOKEN, "--path", "/tools/mcp", "--allowed-origin", "https://app.example.com")
    with http_filegate(ws, tmp_path, *flags, "--allowed-origin", "https://b.example") as served:

        def post(path: str, **extra: str) -> int:
            return rawhttp.post_init(served.port, path, **extra)[0]

        assert post("/tools/mcp", Origin="https://app.example.com") == 401  # still needs the token
        assert post("/tools/mcp", **AUTH, Origin="https://app.example.com") == 200
        assert post("/tools/mcp", **AUTH, Origin="https://b.example") == 200
        assert post("/tools/mcp", **AUTH, Origin="https://other.example.com") == 403
        assert post("/tools/mcp", **AUTH) == 200
        assert post("/mcp", **AUTH) == 404

        # A browser page on that origin can make the call: its preflight is answered ...
        preflight = {
            "Host": f"127.0.0.1:{served.port}",
            "Origin": "https://app.example.com",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type, mcp-protocol-version",
        }
        status, cors, _ = request(served.port, "OPTIONS", "/tools/mcp", preflight)
        assert status == 200 and cors["access-control-allow-origin"] == "https://app.example.com"
        assert "authorization" in cors["access-control-allow-headers"]
        assert "POST" in cors["access-control-allow-methods"]
        # ... and it may read the session id; other origins get no preflight at all.
        _, resp, _ = rawhttp.post_init(served.port, "/tools/mcp", **AUTH, Origin="https://app.example.com")
        assert "mcp-session-id" in resp["access-control-expose-headers"].lower()
        other = {**preflight, "Origin": "https://other.example.com"}
        assert request(served.port, "OPTIONS", "/tools/mcp", other)[0] == 403


def test_token_and_origins_from_the_environment_and_fastmcp_env_cannot_weaken_guards(
    ws: Path, tmp_path: Path
) -> None:
    env = {
        "FILEGATE_TOKEN": TOKEN,
        "FILEGATE_ALLOWED_ORIGINS": "https://app.example.com,https://b.example",
        # fastmcp reads these; filegate pins what they would change.
        "FASTMCP_HTTP_HOST_ORIGIN_PROTECTION": "false",
        "FASTMCP_HTTP_ALLOWED_HOSTS": '["*"]',
        "FASTMCP_HTTP_ALLOWED_ORIGINS": '["*"]',
        "FASTMCP_STATELESS_HTTP": "true",
        "FASTMCP_JSON_RESPONSE": "true",
    }
    with http_filegate(ws, tmp_path, env=env) as served:
        assert post_init(served)[0] == 401
        assert post_init(served, **AUTH, Origin="https://app.example.com")[0] == 200
        assert post_init(served, **AUTH, Origin="https://b.example")[0] == 200
        assert post_init(served, **AUTH, Origin="https://other.example.com")[0] == 403
        assert post_init(served, **AUTH, Host="evil.example.com")[0] == 421
        status, hdrs, _ = post_init(served, **AUTH)
        assert status == 200 and hdrs["content-type"].startswith("text/event-stream")
        assert hdrs.get("mcp-session-id")


@pytest.mark.slow
def test_allowed_host_adds_a_name_and_nothing_else(ws: Path, tmp_path: Path) -> None:
    with http_filegate(ws, tmp_path, "--token", TOKEN, "--allowed-host", "files.internal:8000") as served:
        assert post_init(served, **AUTH, Host="files.internal:8000")[0] == 200
        assert post_init(served, **AUTH, Host="evil.example.com")[0] == 421
        assert post_init(served, **AUTH)[0] == 200  # loopback still works


# --- /healthz ------------------------------------------------------------------------------


def test_healthz_needs_no_token_and_tells_only_liveness(srv: Served) -> None:
    status, hdrs, body = request(srv.port, "GET", "/healthz", {"Host": f"127.0.0.1:{srv.port}"})
    assert (status, body) == (200, b"ok")
    assert "server" not in hdrs  # no uvicorn banner either
    assert __version__ not in json.dumps(hdrs)
    assert hdrs["cache-control"] == "no-store"


def test_healthz_ignores_a_wrong_token(srv: Served) -> None:
    status, _, body = request(srv.port, "GET", "/healthz", {"Authorization": "Bearer nope"})
    assert (status, body) == (200, b"ok")


def test_healthz_is_get_only(srv: Served) -> None:
    assert request(srv.port, "POST", "/healthz", {}, b"{}")[0] == 405


def test_unknown_paths_are_404_without_detail(srv: Served) -> None:
    status, _, body = request(srv.port, "GET", "/", {})
    assert status == 404 and b"filegate" not in body


# --- binding -------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10"])
def test_non_loopback_bind_without_a_token_refuses_to_start_with_one_line(ws: Path, host: str) -> None:
    r = subprocess.run(
        [FILEGATE, "--transport", "http", "--host", host, "--port", "0", "--workdir", str(ws)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1
    assert "refusing to serve HTTP" in r.stderr and "FILEGATE_TOKEN" in r.stderr


# --- clients -------------------------------------------------------------------------------


async def test_fastmcp_client_in_each_era_reads_with_the_token(srv: Served, mode: str) -> None:
    async with Client(srv.url, auth=TOKEN, mode=mode) as c:
        assert c.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        r = await call(c, "ReadFile", path="a.txt")
        assert "over http" in text(r)


async def test_fastmcp_client_with_a_wrong_token_cannot_connect(srv: Served, mode: str) -> None:
    """The SDK hides the status in its error: the exchanges are watched to see that every
    answer was exactly 401 (not a 400 or 500 that would also refuse the client)."""
    statuses: list[int] = []

    async def seen(response: httpx2.Response) -> None:
        statuses.append(response.status_code)

    def factory(**kw: Any) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(**kw, event_hooks={"response": [seen]})

    transport = StreamableHttpTransport(srv.url, auth="wrong", httpx_client_factory=factory)
    with pytest.raises(MCPError, match="error response"):
        async with Client(transport, mode=mode) as c:
            await c.list_tools()
    assert statuses and set(statuses) == {401}, statuses


class Answer:
    def __init__(self, decision: str) -> None:
        self.decision = decision
        self.asked = 0

    async def __call__(self, message: str, response_type: Any, params: Any, context: Any) -> Any:
        self.asked += 1
        await asyncio.sleep(0)
        return ElicitResult(action="accept", content={"decision": self.decision})


async def test_several_clients_at_once_each_with_its_own_session_and_approvals(
    srv: Served,
) -> None:
    """Three clients on one server at the same time: two handshake-era sessions (elicitation
    reaches each over its own SSE stream) and one 2026-07-28 client."""
    session_yes, session_no, modern_yes = (
        Answer("approve_for_session"),
        Answer("reject"),
        Answer("approve"),
    )

    async def writer(mode: str, answer: Answer, name: str, n: int) -> list[bool]:
        transport = StreamableHttpTransport(srv.url, auth=TOKEN)
        async with Client(transport, mode=mode, elicitation_handler=answer) as c:
            results = await asyncio.gather(
                *(call(c, "WriteFile", path=f"multi/{name}{i}.txt", content=name) for i in range(n))
            )
            reads = await asyncio.gather(*(call(c, "ReadFile", path="a.txt") for _ in range(3)))
            assert all("over http" in text(r) for r in reads)
            return [not r.is_error for r in results]

    ok = await asyncio.gather(
        writer("legacy", session_yes, "yes", 1),
        writer("legacy", session_no, "no", 2),
        writer("auto", modern_yes, "modern", 2),
    )
    assert ok == [[True], [False, False], [True, True]]
    # The session approval of the first client let nothing through for the second one.
    assert session_no.asked == 2 and modern_yes.asked == 2
    assert srv.workdir is not None
    written = sorted(p.name for p in (srv.workdir / "multi").glob("*"))
    assert written == ["modern0.txt", "modern1.txt", "yes0.txt"]
    # ... and it holds, within its own session, for later writes.
    transport = StreamableHttpTransport(srv.url, auth=TOKEN)
    again = Answer("approve_for_session")
    async with Client(transport, mode="legacy", elicitation_handler=again) as c:
        for i in range(3):
            r = await call(c, "WriteFile", path=f"multi/again{i}.txt", content="x")
            assert not r.is_error
    assert again.asked == 1


# --- logging -------------------------------------------------------------------------------


@pytest.mark.slow
async def test_default_log_level_keeps_stderr_quiet(ws: Path, tmp_path: Path) -> None:
    """Nothing but the one start-up line SPEC §5 asks for."""
    with http_filegate(ws, tmp_path) as served:
        async with Client(served.url, mode="legacy") as c:
            await call(c, "ReadFile", path="missing.txt")
        served.stop()
    (line,) = served.log().splitlines()
    assert line.startswith("filegate ") and f"over http at {served.url};" in line


@pytest.mark.slow
async def test_log_level_info_puts_access_lines_and_client_events_on_stderr(ws: Path, tmp_path: Path) -> None:
    with http_filegate(ws, tmp_path, "--log-level", "info") as served:
        async with Client(served.url, mode="legacy") as c:
            await call(c, "ReadFile", path="missing.txt")
        served.stop()
    log = served.log()
    assert "uvicorn.access" in log and '"POST /mcp HTTP/1.1" 200' in log
    assert "filegate: client " in log and "connected (protocol 2025-11-25)" in log
    assert "filegate: ReadFile failed: " in log
    assert "DEBUG" not in log
    assert "Traceback" not in log


# --- issue 26: the guards on every method, the scheme's case, the exact status -------------


@pytest.mark.parametrize("method", ["GET", "DELETE", "POST"])
@pytest.mark.parametrize("origin", ["http://localhost:5173", "https://evil.example.com"])
def test_a_refused_origin_gets_403_on_every_method_even_with_the_token(
    srv: Served, method: str, origin: str
) -> None:
    """A local web page can send GET (open the SSE stream) and DELETE (end a session) as well as
    POST: each must stop at the Origin check, not reach fastmcp (whose 400/404 would also tell
    the page that the endpoint exists). The positive control is the same request without an
    Origin, which gets past the gate (fastmcp answers it: not 403)."""
    session = rawhttp.session_headers("not-a-session")
    hdrs = {"Host": f"127.0.0.1:{srv.port}", "Accept": "text/event-stream", **AUTH, **session}
    sent = INIT if method == "POST" else None
    if method == "POST":
        hdrs.update(MCP_HEADERS)
        del hdrs["Mcp-Session-Id"]
    status, _, body = request(srv.port, method, "/mcp", {**hdrs, "Origin": origin}, sent)
    assert status == 403 and body.startswith(b"Forbidden Origin"), (status, body)
    control, _, _ = request(srv.port, method, "/mcp", hdrs, sent)
    assert control not in (401, 403), control


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "bEaReR"])
def test_the_auth_scheme_is_case_insensitive(srv: Served, scheme: str) -> None:
    """RFC 7235 §2.1: the scheme is a case-insensitive token; clients sending `bearer` are
    served. The token itself stays case-sensitive."""
    assert post_init(srv, Authorization=f"{scheme} {TOKEN}")[0] == 200
    assert post_init(srv, Authorization=f"{scheme} {TOKEN.upper()}")[0] == 401


@pytest.mark.parametrize(
    ("given", "normal"),
    [
        ("https://App.Example.com", "https://app.example.com:443"),
        ("http://[::1]", "http://[::1]:80"),
        ("HTTP://localhost:5173/", "http://localhost:5173"),
        ("http://host:99999", "http://host:99999"),  # no port number: kept as given
        ("https://app.example.com/path", "https://app.example.com/path"),  # no origin: kept
        ("https://app.example.com?q=1", "https://app.example.com?q=1"),
        ("null", "null"),
        ("chrome-extension://abc", "chrome-extension://abc"),  # no default port
    ],
)
def test_origins_are_compared_in_one_spelling_and_non_origins_only_as_given(given: str, normal: str) -> None:
    from filegate.server.http import normalized_origin

    assert normalized_origin(given) == normal
