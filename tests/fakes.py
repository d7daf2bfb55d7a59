"""The test seams as small as the interfaces they stand in for: a tool-level Approver
(filegate.tools.outcome.Approver) and a client's elicitation handler. Fakes, named as such:
everything else in a test is real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastmcp.client.elicitation import ElicitResult

from filegate.fsio.locks import PATH_LOCKS
from filegate.tools.outcome import Decision, WriteRequest


class FakeApprover:
    """Approves by asking (never settles), noting the request and the locks held meanwhile."""

    def __init__(self, ws: Path, *, settle: Decision | None = None) -> None:
        self.ws = ws
        self.settled = settle
        self.asked: list[WriteRequest] = []
        self.locks_while_asked: list[int] = []
        self.bytes_while_asked: list[bytes] = []

    def settle(self, request: WriteRequest) -> Decision | None:
        return self.settled

    async def ask(self, request: WriteRequest) -> Decision:
        self.asked.append(request)
        self.locks_while_asked.append(len(PATH_LOCKS))
        return Decision(True, "elicited")


class Answers:
    """A client's elicitation handler that gives one fixed answer and records what it was asked."""

    def __init__(self, decision: str | None = "approve", action: str = "accept", feedback: str = "") -> None:
        self.decision = decision
        self.action = action
        self.feedback = feedback
        self.messages: list[str] = []
        self.schemas: list[dict[str, Any]] = []

    async def __call__(self, message: str, response_type: Any, params: Any, context: Any) -> Any:
        self.messages.append(message)
        self.schemas.append(params.requested_schema)
        if self.action != "accept":
            return ElicitResult(action=self.action)  # type: ignore[arg-type]
        decision = self.decision
        offered = params.requested_schema["properties"]["decision"]["enum"]
        if decision and decision.startswith("approve_") and decision not in offered:
            decision = "approve"  # a dialog shows only the buttons offered (fastmcp 4.2 checks)
        content: dict[str, Any] = {"decision": decision}
        if self.feedback:
            content["feedback"] = self.feedback
        return ElicitResult(action="accept", content=content)

    @property
    def choices(self) -> list[str]:
        return list(self.schemas[-1]["properties"]["decision"]["enum"])
