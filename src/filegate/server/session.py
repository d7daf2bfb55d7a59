"""Per-call and per-session state: the workspace a call sees, its approver, its back channel."""

from __future__ import annotations

import logging
import weakref
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlparse

from fastmcp import Context
from fastmcp.server.middleware import Middleware, MiddlewareContext
from mcp.types import InputRequiredResult
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from filegate.policy.budget import result_budget_for
from filegate.policy.workspace import Workspace
from filegate.settings import Settings
from filegate.tools.outcome import ToolEnv

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
        self.connection: object = getattr(session, "_connection", None) or session
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
            await self.ctx.report_progress(done, total, message)
        except Exception:  # a client that went away must not fail the call
            log.debug("progress notification failed", exc_info=True)

    async def log(self, level: Literal["debug", "info", "warning", "error"], text: str) -> None:
        try:
            await self.ctx.log(text, level=level, logger_name="filegate")
        except Exception:
            log.debug("log notification failed", exc_info=True)


class SessionRuntime:
    """What lives as long as the server: settings, the workspace, per-session memory."""

    def __init__(self, settings: Settings, workspace: Workspace) -> None:
        self.settings = settings
        self.workspace = workspace
        # Handshake-era sessions only: roots the client offered. Keyed weakly on the session.
        self._roots: weakref.WeakKeyDictionary[Any, Workspace] = weakref.WeakKeyDictionary()
        self.session_approvals: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()

    async def workspace_for(self, call: CallContext) -> Workspace:
        """The workspace narrowed by the client's roots (handshake era; roots never widen)."""
        if not call.has_roots or call.modern or not call.session.can_send_request:
            return self.workspace
        cached = self._roots.get(call.connection)
        if cached is not None:
            return cached
        try:
            result = await call.session.list_roots()
        except Exception:
            log.info("client declared roots but list_roots failed; using the whole workspace")
            self._roots[call.connection] = self.workspace
            return self.workspace
        paths = [Path(unquote(urlparse(str(r.uri)).path)) for r in result.roots]
        narrowed = self.workspace.narrowed(paths) if paths else self.workspace
        self._roots[call.connection] = narrowed
        return narrowed

    def forget_roots(self, connection: object) -> None:
        self._roots.pop(connection, None)

    async def env_for(self, call: CallContext) -> ToolEnv:
        from filegate.server.approval import ElicitingApprover

        workspace = await self.workspace_for(call)
        return ToolEnv(
            workspace=workspace,
            approver=ElicitingApprover(self, call, workspace),
            reporter=call,
            result_budget=result_budget_for(self.settings, call.client_name),
            image_max_side=self.settings.image_max_side,
        )


class RootsChanged(Middleware):
    """A client that says its roots changed is asked for them again on its next call."""

    def __init__(self, runtime: SessionRuntime) -> None:
        self.runtime = runtime

    async def on_notification(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        if context.method == "notifications/roots/list_changed" and context.fastmcp_context:
            session = context.fastmcp_context.session
            self.runtime.forget_roots(getattr(session, "_connection", None) or session)
        return await call_next(context)
