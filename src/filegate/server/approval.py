"""Asking the user before a write (SPEC §6). Placeholder policy until elicitation lands."""

from __future__ import annotations

from typing import TYPE_CHECKING

from filegate.policy.workspace import Workspace
from filegate.tools.outcome import Decision, WriteRequest

if TYPE_CHECKING:
    from filegate.server.session import CallContext, SessionRuntime


class ElicitingApprover:
    def __init__(self, runtime: SessionRuntime, call: CallContext, workspace: Workspace) -> None:
        self.runtime = runtime
        self.call = call
        self.workspace = workspace

    async def approve(self, request: WriteRequest) -> Decision:
        raise NotImplementedError("write approval is not built yet")
