"""The streamable-HTTP endpoint: stateful (SSE, so elicitation reaches handshake clients),
Host/Origin checked, bearer token compared in constant time."""

from __future__ import annotations

import hmac

import uvicorn
from fastmcp import FastMCP
from fastmcp.server.auth import AccessToken, TokenVerifier
from starlette.applications import Starlette

from filegate.settings import Settings


class BearerVerifier(TokenVerifier):
    """One shared secret, compared in constant time."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self._token = token.encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        if hmac.compare_digest(token.encode(), self._token):
            return AccessToken(token=token, client_id="filegate-user", scopes=[])
        return None


def build_http_app(server: FastMCP, settings: Settings) -> Starlette:
    if settings.token is not None:
        server.auth = BearerVerifier(settings.token.get_secret_value())
    return server.http_app(
        path=settings.path,
        host_origin_protection=True,
        allowed_origins=list(settings.allowed_origins) or None,
    )


def run_http(server: FastMCP, settings: Settings) -> None:
    app = build_http_app(server, settings)
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level.lower(),
        lifespan="on",
        timeout_graceful_shutdown=5,
    )
