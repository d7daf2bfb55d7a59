"""Asking the user before a write (SPEC §6): elicitation in both protocol eras, and the fallback.

- ``--approval auto``: every write the path rules allow goes through.
- ``--approval ask`` (default): ask through elicitation. Handshake era: ``elicitation/create``
  on the session's back channel. 2026-07-28 era: an input-required result whose sealed request
  state names the operation (tool, real path, hashes of the old and new bytes); the answer on
  the retry counts only for that very operation, and a file that changed in between is asked
  about again. A client that cannot be asked may write inside the workspace only, and never
  a sensitive file.
- ``--approval strict``: like ask, but a client that cannot be asked may not write at all.

"Approve for this session" lets later writes of the same class (inside / outside the
workspace) through without asking, in the same MCP session only: a handshake-era session
(stdio or HTTP), or a stdio process on 2026-07-28 (one process serves one client). A
2026-07-28 HTTP connection has no session, so it is offered approve / reject only. Sensitive
files are asked about every time.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
from mcp.types import ElicitRequest, ElicitRequestFormParams, ElicitResult, InputRequiredResult

from filegate.policy.workspace import Workspace
from filegate.server.session import InputRequired
from filegate.tools.outcome import Decision, WriteRequest

if TYPE_CHECKING:
    from filegate.server.session import CallContext, SessionRuntime

log = logging.getLogger("filegate")

WriteClass = Literal["inside", "outside"]

# Kimi's rejection sentences (KIMI-REFERENCE §1, Approval).
REJECTED = (
    "The tool call is rejected by the user. Stop what you are doing and wait for the user to "
    "tell you how to proceed."
)
REJECTED_WITH_FEEDBACK = "The tool call is rejected by the user. User feedback: {feedback}"
CANCELLED = (
    "The user cancelled the approval of this write, so nothing was written. Stop what you are "
    "doing and wait for the user to tell you how to proceed."
)
# The key of our one request in an input-required result (2026-07-28).
ANSWER_KEY = "approval"
# Bumped whenever the sealed state's shape changes: an old answer never approves.
STATE_VERSION = 3
# A file that keeps changing under the user's answers is given up on after this many re-asks
# (rather than leaving the client to run out of rounds).
MAX_REASKS = 3

# How long a handshake-era question may stay unanswered (the 2026-07-28 sealed answer expires
# after the SDK's 600 s too).
ASK_TIMEOUT_S = 600.0
# How long a 2026-07-28 question holds its file's turn waiting for the retry; a client that
# went away blocks other writes of that file no longer than this (a later answer still
# counts: it is asked again if the file changed meanwhile).
TURN_TIMEOUT_S = 120.0

APPROVE = "approve"
APPROVE_SESSION = "approve_for_session"
REJECT = "reject"


def approval_schema(write_class: WriteClass | None) -> dict[str, Any]:
    """The form: one enum (approve [/ approve for this session] / reject) and a feedback text.

    ``write_class`` None: no session to remember an answer in, so no session choice.
    """
    values, titles = [APPROVE], ["Approve this write"]
    if write_class is not None:
        where = "inside the workspace" if write_class == "inside" else "outside the workspace"
        values.append(APPROVE_SESSION)
        titles.append(f"Approve, and allow further writes {where} this session without asking")
    values.append(REJECT)
    titles.append("Reject")
    return {
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Decision",
                "enum": values,
                "enumNames": titles,
                "default": APPROVE,
            },
            "feedback": {
                "type": "string",
                "title": "Feedback",
                "description": "Optional: why, or what to do instead (the model reads this).",
            },
        },
        "required": ["decision"],
    }


def approval_message(request: WriteRequest, *, changed: bool = False) -> str:
    """What the user reads: tool, path, where it is, the size and line change, the diff."""
    where = "inside the workspace" if request.inside else "OUTSIDE the workspace"
    action = "create" if request.created else "change"
    lines = [f"{request.tool} wants to {action} `{request.shown}` ({where})."]
    if changed:
        lines.append("The file changed since you were asked; this is the change as it stands now.")
    if request.created:
        lines.append(f"New file: {request.new_size} bytes, {request.new_lines} lines.")
    else:
        lines.append(
            f"Size: {request.old_size} → {request.new_size} bytes "
            f"({request.new_size - request.old_size:+d}); lines: {request.old_lines} → "
            f"{request.new_lines} ({request.new_lines - request.old_lines:+d})."
        )
    if request.sensitive:
        lines.append("Warning: this file matches a sensitive-file pattern (it may hold secrets).")
    lines.extend(request.notes)
    return "\n".join([*lines, "", request.diff])


@dataclass(frozen=True, slots=True)
class SealedOperation:
    """The write an answer is for; sealed (encrypted + MAC) into the request state by the SDK."""

    v: int
    tool: str
    path: str
    old: str
    new: str
    session: bool  # the form offered "approve for this session"
    reasks: int = 0  # how often the file changed under an answer and the user was asked again
    turn: str = ""  # the file's turn this question holds (see Turns)

    @classmethod
    def of(cls, request: WriteRequest, session: bool, reasks: int = 0, turn: str = "") -> SealedOperation:
        return cls(
            STATE_VERSION,
            request.tool,
            str(request.real),
            request.old_hash,
            request.new_hash,
            session,
            reasks,
            turn,
        )

    @classmethod
    def parse(cls, state: str | None) -> SealedOperation | None:
        if not state:
            return None
        try:
            return cls(**json.loads(state))
        except (ValueError, TypeError):
            return None

    def dump(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    def same_target(self, request: WriteRequest) -> bool:
        return self.v == STATE_VERSION and (self.tool, self.path) == (request.tool, str(request.real))

    def matches(self, request: WriteRequest) -> bool:
        return self.same_target(request) and (self.old, self.new) == (
            request.old_hash,
            request.new_hash,
        )


class Turns:
    """2026-07-28: questions about one file are asked one at a time.

    In the handshake era the file's lock is held while the user decides, so parallel edits of
    one file are asked in turn, each on the bytes the previous one left. A 2026-07-28 question
    ends the call (input-required) and the answer comes on a retry, so no lock can span it;
    instead the question holds the file's *turn*, named in its sealed state, until its retry
    is done. Another write of the file waits for the turn (at most TURN_TIMEOUT_S) before it
    reads the file, so its diff is computed on what the first one wrote.
    """

    def __init__(self) -> None:
        self._held: dict[str, tuple[str, float]] = {}  # path -> (token, expires at)
        self._released: dict[str, anyio.Event] = {}

    @contextlib.asynccontextmanager
    async def take(self, path: str, token: str) -> AsyncIterator[None]:
        """Hold ``path``'s turn as ``token`` (waiting for another holder first). The turn
        stays held past an InputRequired (the question is out), else it is given back."""
        while True:
            held = self._held.get(path)
            now = anyio.current_time()
            if held is None or held[0] == token or held[1] <= now:
                break
            event = self._released.setdefault(path, anyio.Event())
            with anyio.move_on_after(held[1] - now):
                await event.wait()
        self._held[path] = (token, anyio.current_time() + TURN_TIMEOUT_S)
        asked = False
        try:
            yield
        except InputRequired:
            asked = True
            raise
        finally:
            if not asked and self._held.get(path, ("",))[0] == token:
                del self._held[path]
                if path in self._released:
                    self._released.pop(path).set()


TURNS = Turns()


def write_class(request: WriteRequest) -> WriteClass:
    return "inside" if request.inside else "outside"


class ElicitingApprover:
    """The Approver a tool call gets: decides by the settings, the session, and the user."""

    def __init__(self, runtime: SessionRuntime, call: CallContext, workspace: Workspace) -> None:
        self.runtime = runtime
        self.call = call
        self.workspace = workspace
        self._turn = ""

    def turn(self, path: Path) -> contextlib.AbstractAsyncContextManager[None]:
        """Taken by a write before it reads the file: see Turns (2026-07-28 questions only)."""
        asks = self.call.modern and self.call.can_elicit and self.runtime.settings.approval != "auto"
        if not asks:
            return contextlib.nullcontext()
        sealed = SealedOperation.parse(self.call.ctx.request_state)
        self._turn = sealed.turn if sealed is not None and sealed.turn else secrets.token_hex(8)
        return TURNS.take(str(path), self._turn)

    async def approve(self, request: WriteRequest) -> Decision:
        mode = self.runtime.settings.approval
        if mode == "auto":
            return Decision(True, "auto")
        if not request.sensitive and write_class(request) in self._session_classes():
            return Decision(True, "session")
        if not self.call.can_elicit:
            return self._without_elicitation(request, mode == "strict")
        if self.call.modern:
            return self._modern(request)
        return await self._handshake(request)

    # --- the session -------------------------------------------------------------------

    def _session_key(self) -> object | None:
        """What "this session" is for this call, or None when there is no session."""
        if not self.call.modern:
            # mcp 2 builds a ServerSession per request; the connection is what lasts.
            return self.call.connection
        if self.call.transport == "stdio":
            return self.runtime  # one stdio process serves exactly one client
        return None

    def _session_classes(self) -> set[str]:
        key = self._session_key()
        return self.runtime.session_approvals.get(key, set()) if key is not None else set()

    def _offer_session(self, request: WriteRequest) -> WriteClass | None:
        if request.sensitive or self._session_key() is None:
            return None
        return write_class(request)

    def _remember(self, request: WriteRequest) -> None:
        key = self._session_key()
        if key is not None:
            self.runtime.session_approvals.setdefault(key, set()).add(write_class(request))

    # --- the three ways to decide ------------------------------------------------------

    def _without_elicitation(self, request: WriteRequest, strict: bool) -> Decision:
        cannot = "this client cannot be asked (it does not support MCP elicitation)"
        if strict:
            return Decision(
                False,
                "strict",
                f"filegate runs with `--approval strict` and {cannot}, so no write is allowed. "
                "Nothing was written. Use a client that supports elicitation, or start filegate "
                "with `--approval ask` to allow writes inside the workspace.",
            )
        if request.sensitive:
            return Decision(
                False,
                "no-elicitation",
                f"`{request.shown}` matches a sensitive-file pattern, so writing it needs the "
                f"user's approval, and {cannot}. Nothing was written. To allow it, the user can "
                "start filegate with `--approval auto`.",
            )
        if not request.inside:
            return Decision(
                False,
                "no-elicitation",
                f"`{request.shown}` is outside the workspace; writing there needs the user's "
                f"approval, and {cannot}. Nothing was written. To allow it, the user can start "
                f"filegate with `--add-dir {request.real.parent}` (to add that directory to the "
                "workspace) or with `--approval auto`.",
            )
        return Decision(True, "no-elicitation")

    async def _handshake(self, request: WriteRequest) -> Decision:
        offer = self._offer_session(request)
        ctx = self.call.ctx
        try:
            # The file's lock is held while the user decides (writes to it queue up and are
            # asked in turn); a client that never answers must not hold it forever.
            with anyio.fail_after(ASK_TIMEOUT_S):
                result = await self.call.session.elicit_form(
                    approval_message(request), approval_schema(offer), related_request_id=ctx.request_id
                )
        except TimeoutError:
            log.info("no answer to the approval question within %ss", ASK_TIMEOUT_S)
            return Decision(
                False,
                "unanswered",
                f"The user did not answer the approval question within {ASK_TIMEOUT_S:g} seconds, "
                "so nothing was written. Ask the user, then try again.",
            )
        except Exception as exc:  # the client failed to answer: nothing may be written
            log.info("elicitation failed: %s", exc)
            return Decision(
                False,
                "elicitation-failed",
                f"Could not ask the user to approve this write ({exc}). Nothing was written.",
            )
        return self._decide(request, result, offer is not None, "elicited")

    def _modern(self, request: WriteRequest) -> Decision:
        """2026-07-28: decide on the retry's answer, if it is for this very write; else ask."""
        ctx = self.call.ctx
        sealed = SealedOperation.parse(ctx.request_state)
        answer = (ctx.input_responses or {}).get(ANSWER_KEY)
        if sealed is not None and isinstance(answer, ElicitResult):
            if sealed.matches(request):
                return self._decide(request, answer, sealed.session, "elicited")
            changed = sealed.same_target(request)
        else:
            changed = False
        reasks = sealed.reasks + 1 if changed and sealed is not None else 0
        if reasks > MAX_REASKS:
            return Decision(
                False,
                "stale",
                f"`{request.shown}` changed {MAX_REASKS + 1} times while the user was being asked "
                "about this write (other writes to it are landing), so nothing was written. Read "
                "the file again and retry the edit.",
            )
        offer = self._offer_session(request)
        params = ElicitRequestFormParams(
            message=approval_message(request, changed=changed),
            requested_schema=approval_schema(offer),
        )
        raise InputRequired(
            InputRequiredResult(
                result_type="input_required",
                input_requests={ANSWER_KEY: ElicitRequest(method="elicitation/create", params=params)},
                request_state=SealedOperation.of(request, offer is not None, reasks, self._turn).dump(),
            )
        )

    def _decide(
        self, request: WriteRequest, result: ElicitResult, session_offered: bool, route: str
    ) -> Decision:
        if result.action == "cancel":
            return Decision(False, route, CANCELLED)
        content = result.content or {}
        choice = content.get("decision") if result.action == "accept" else REJECT
        if choice == APPROVE:
            return Decision(True, route)
        if choice == APPROVE_SESSION:
            if session_offered:
                self._remember(request)
                return Decision(True, f"{route}, approved for the session")
            return Decision(True, route)
        feedback = str(content.get("feedback") or "").strip()
        if feedback:
            return Decision(False, route, REJECTED_WITH_FEEDBACK.format(feedback=feedback))
        return Decision(False, route, REJECTED)
