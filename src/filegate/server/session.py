"""Per-call and per-session state: the workspace a call sees, its approver, its back channel."""

from __future__ import annotations

import logging
import weakref
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from fastmcp.server.middleware import Middleware, MiddlewareContext

from filegate.policy.budget import result_budget_for
from filegate.policy.workspace import Workspace
from filegate.server import upstream
from filegate.server.approval import ElicitingApprover, SessionApprovals
from filegate.server.call import CallContext
from filegate.settings import Settings
from filegate.tools.outcome import ToolEnv

log = logging.getLogger("filegate")


class SessionRuntime:
    """What lives as long as the server: settings, the workspace, per-session memory."""

    def __init__(self, settings: Settings, workspace: Workspace) -> None:
        self.settings = settings
        self.workspace = workspace
        # Handshake-era sessions only: roots the client offered. Keyed weakly on the session.
        self._roots: weakref.WeakKeyDictionary[Any, Workspace] = weakref.WeakKeyDictionary()
        # Which write classes each session approved "for this session" (see approval.py).
        self.approvals = SessionApprovals()

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
        workspace = await self.workspace_for(call)
        return ToolEnv(
            workspace=workspace,
            approver=ElicitingApprover(self.settings, self.approvals, call),
            reporter=call,
            result_budget=result_budget_for(self.settings, call.client_name),
            image_max_side=self.settings.image_max_side,
            client=call.client_name,
        )


class RootsChanged(Middleware):
    """A client that says its roots changed is asked for them again on its next call."""

    def __init__(self, runtime: SessionRuntime) -> None:
        self.runtime = runtime

    async def on_notification(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        if context.method == "notifications/roots/list_changed" and context.fastmcp_context:
            session = context.fastmcp_context.session
            self.runtime.forget_roots(upstream.connection_of(session))
        return await call_next(context)
