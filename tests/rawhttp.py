"""The one raw initialize over streamable HTTP: its body and headers, for tests that need what a
client library hides (exact headers for the token, Host and Origin guards; a session cap; a
client that only POSTs). The body is tests/rawstdio.py's initialize request, sent as it is."""

from __future__ import annotations

import json
from typing import Any

from tests.rawstdio import initialize_request
from tests.server.served import request

ERA = "2025-06-18"
# What a streamable HTTP client sends with every POST: the transport requires both types.
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def init_body(capabilities: dict[str, Any] | None = None, version: str = ERA) -> bytes:
    """A handshake-era ``initialize`` (id 1) as the bytes of a POST body."""
    return json.dumps(initialize_request(1, version, capabilities)).encode()


INIT = init_body()


def init_headers(port: int, **headers: str) -> dict[str, str]:
    """The headers of an initialize POST to a loopback server: Host, the MCP content types, then
    ``headers`` (which win: a foreign Host or an Origin is what a test sends)."""
    return {"Host": f"127.0.0.1:{port}", **MCP_HEADERS, **headers}


def session_headers(session_id: str, version: str = ERA) -> dict[str, str]:
    """What every request after the initialize carries on a handshake-era session."""
    return {"Mcp-Session-Id": session_id, "Mcp-Protocol-Version": version}


def post_init(port: int, path: str = "/mcp", **headers: str) -> tuple[int, dict[str, str], bytes]:
    """POST the initialize with exactly ``init_headers(port, **headers)``: the status, the
    response headers (lower-cased names) and the start of the body."""
    return request(port, "POST", path, init_headers(port, **headers), INIT)
