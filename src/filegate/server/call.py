"""One tool call as filegate sees it (read off fastmcp's Context), and the 2026-07-28 question.

A leaf of server/: approval.py and session.py both use it, neither imports the other's state.
"""

from __future__ import annotations

import logging
from typing import Literal

from fastmcp import Context
from fastmcp.server.dependencies import get_http_request
from mcp.types import InputRequiredResult
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from filegate.server import upstream
from filegate.server.render import safe_text

log = logging.getLogger("filegate")


class InputRequired(Exception):
    """Raised on a 2026-07-28 connection when the client must answer before the call goes on."""

    def __init__(self, result: InputRequiredResult) -> None:
        super().__init__("input required")
        self.result = result


class CallContext:
    """The facts of one tool call that filegate needs, read off fastmcp's Context."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        session = ctx.session
        self.session = session
        # mcp 2 builds a ServerSession per request; the connection is what lives as long as
        # the client's session (handshake era), so per-session memory is keyed on it.
        self.connection: object = upstream.connection_of(session)
        self.modern = session.protocol_version in MODERN_PROTOCOL_VERSIONS
        caps = session.client_capabilities
        self.can_elicit = bool(
            caps is not None and caps.elicitation is not None and (self.modern or session.can_send_request)
        )
        self.has_roots = bool(caps is not None and caps.roots is not None)
        params = session.client_params
        info = getattr(params, "client_info", None)
        self.client_name: str = getattr(info, "name", "") or ""
        self.transport = ctx.transport

    async def progress(self, done: float, total: float | None, message: str) -> None:
        try:
            await self.ctx.report_progress(done, total, safe_text(message))
        except Exception:  # a client that went away must not fail the call
            log.debug("progress notification failed", exc_info=True)

    async def log(self, level: Literal["debug", "info", "warning", "error"], text: str) -> None:
        try:
            await self.ctx.log(safe_text(text), level=level, logger_name="filegate")
        except Exception:
            log.debug("log notification failed", exc_info=True)

    async def stream_closed(self) -> bool:
        """Handshake-era HTTP: whether the client closed the stream this call answers on (its
        POST's connection). Without an event store nothing can resume that stream, so a
        question sent on it can never be answered. False wherever that cannot be told."""
        if self.modern or self.transport != "streamable-http":
            return False
        try:
            request = get_http_request()
        except RuntimeError:
            return False
        return await request.is_disconnected()
