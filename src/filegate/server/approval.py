"""Asking the user before a write (SPEC §6): elicitation in both protocol eras, and the fallback.

- ``--approval auto``: every write the path rules allow goes through, but a sensitive file's:
  that is asked about where the client can be asked and refused where it cannot (SPEC §2.6).
- ``--approval ask`` (default): ask through elicitation. Handshake era: ``elicitation/create``
  on the session's back channel. 2026-07-28 era: an input-required result whose sealed request
  state names the operation (tool, real path, hashes of the old and new bytes) and carries a
  nonce; the answer on the retry counts only for that very operation, only once, and a file
  that changed in between is asked about again. A client that cannot be asked may write
  inside the workspace only, and never a sensitive file.
- ``--approval strict``: like ask, but a client that cannot be asked may not write at all.

No call waits on a question another call asked, and no lock is held while a question is open:
a new question about a file supersedes the open one (its answer then writes nothing and says
so), and the write's stale check protects the file (tools/edit/writing.py).

"Approve for this session" lets later writes of the same class (inside / outside the
workspace) through without asking, in the same MCP session only: a handshake-era session
(stdio or HTTP), or a stdio process on 2026-07-28 (one process serves one client). A
2026-07-28 HTTP connection has no session, so it is offered approve / reject only. Sensitive
files are asked about every time.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
import weakref
from collections.abc import Awaitable
from dataclasses import asdict, dataclass
from typing import Any, Literal

import anyio
from mcp.types import ElicitRequest, ElicitRequestFormParams, ElicitResult, InputRequiredResult

from filegate.policy.escape import escape
from filegate.server.call import CallContext, InputRequired
from filegate.server.questions import (
    APPROVE,
    APPROVE_SESSION,
    CANCELLED,
    REJECT,
    REJECTED,
    REJECTED_WITH_FEEDBACK,
    REPLAYED,
    SUPERSEDED,
    WriteClass,
    approval_message,
    approval_schema,
    write_class,
)
from filegate.settings import Settings
from filegate.tools.outcome import Decision, Route, WriteRequest

log = logging.getLogger("filegate")

# The key of our one request in an input-required result (2026-07-28).
ANSWER_KEY = "approval"
# Bumped whenever the sealed state's shape changes: an old answer never approves.
STATE_VERSION = 4
# A file that keeps changing under the user's answers is given up on after this many re-asks
# (rather than leaving the client to run out of rounds).
MAX_REASKS = 3

# How long a handshake-era question may stay unanswered; the call that asked it waits for its
# own answer no longer (no other call ever waits on it). The SDK's sealed 2026-07-28 state
# expires after the same 600 s (mcp.server.request_state: ttl=600).
ASK_TIMEOUT_S = 600.0
# A question's nonce is remembered as spent this long after its answer came: longer than any
# sealed state lives, so a replay always finds it.
SPENT_FOR_S = ASK_TIMEOUT_S + 60.0
# Open questions remembered at most (one per file asked about in the last SPENT_FOR_S); past
# that the oldest is forgotten, and its answer then counts as superseded (writes nothing).
MAX_OPEN_QUESTIONS = 10_000
# How often an open handshake-era question looks whether its client's stream is still open.
STREAM_CHECK_S = 0.5


@dataclass(frozen=True, slots=True)
class SealedOperation:
    """The write an answer is for; sealed (encrypted + MAC) into the request state by the SDK."""

    v: int
    tool: str
    path: str
    old: str
    new: str
    session: bool  # the form offered "approve for this session"
    nonce: str  # this question: an answer to it counts once, and only while it is the newest
    reasks: int = 0  # how often the file changed under an answer and the user was asked again

    @classmethod
    def of(cls, request: WriteRequest, session: bool, nonce: str, reasks: int = 0) -> SealedOperation:
        return cls(
            STATE_VERSION,
            request.tool,
            str(request.real),
            request.old_hash,
            request.new_hash,
            session,
            nonce,
            reasks,
        )

    @classmethod
    def parse(cls, state: str | None) -> SealedOperation | None:
        if not state:
            return None
        try:
            sealed = cls(**json.loads(state))
        except (ValueError, TypeError):
            return None
        return sealed if sealed.v == STATE_VERSION else None

    def dump(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    def same_target(self, request: WriteRequest) -> bool:
        return (self.tool, self.path) == (request.tool, str(request.real))

    def matches(self, request: WriteRequest) -> bool:
        return self.same_target(request) and (self.old, self.new) == (
            request.old_hash,
            request.new_hash,
        )


class OpenQuestions:
    """Per file, the newest question asked about it; and the nonces whose answer was used.

    Process-wide, like the file locks: questions from any client about one file supersede
    each other. Nothing here is ever waited on.
    """

    def __init__(self) -> None:
        self._newest: dict[str, tuple[str, float]] = {}  # real path -> (nonce, forget after)
        self._spent: dict[str, float] = {}  # nonce -> forget after
        # Names this process's questions among the replicas' (a shared state key).
        self._prefix = f"{secrets.token_hex(8)}-"

    def open(self, path: str) -> str:
        """A new question about ``path``: it supersedes any open one. Returns its nonce."""
        now = time.monotonic()
        self._prune(now)
        nonce = f"{self._prefix}{secrets.token_hex(16)}"
        self._newest.pop(path, None)  # re-inserted last: the dict stays oldest-first
        self._newest[path] = (nonce, now + SPENT_FOR_S)
        if len(self._newest) > MAX_OPEN_QUESTIONS:
            del self._newest[next(iter(self._newest))]
        return nonce

    def answered(
        self, path: str, nonce: str, *, replicas: bool = False
    ) -> Literal["newest", "superseded", "replayed"]:
        """An answer to question ``nonce`` came: it is spent now, whatever it says.

        ``replicas`` (a shared state key): a question another replica asked (its nonce does not
        carry this process's prefix) counts as the newest here; one this process asked is
        judged as always. Supersession and replay
        are tracked per process; across replicas the sealed hashes of the old and new content
        keep a replayed answer from writing again (after the write the file no longer holds
        the old content, so the answer no longer matches and the user is asked again).
        """
        now = time.monotonic()
        self._prune(now)
        if nonce in self._spent:
            return "replayed"
        self._spent[nonce] = now + SPENT_FOR_S
        newest = self._newest.get(path)
        if replicas and not nonce.startswith(self._prefix):
            return "newest"
        if newest is None or newest[0] != nonce:
            return "superseded"
        del self._newest[path]
        return "newest"

    def _prune(self, now: float) -> None:
        # A sweep only once there is something to sweep (amortised over the calls).
        if len(self._newest) > 64:
            for key in [k for k, (_, until) in self._newest.items() if until <= now]:
                del self._newest[key]
        if len(self._spent) > 64:
            for key in [k for k, until in self._spent.items() if until <= now]:
                del self._spent[key]


QUESTIONS = OpenQuestions()


class SessionApprovals:
    """Write classes approved "for this session", per session (weakly keyed: they go with it)."""

    def __init__(self) -> None:
        self.by_session: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()


class ElicitingApprover:
    """The Approver a tool call gets: decides by the settings, the session, and the user."""

    def __init__(self, settings: Settings, approvals: SessionApprovals, call: CallContext) -> None:
        self.settings = settings
        self.approvals = approvals
        self.call = call

    def settle(self, request: WriteRequest) -> Decision | None:
        mode = self.settings.approval
        if mode == "auto" and not request.sensitive:  # SPEC §2.6: auto never covers secrets
            return Decision(True, "auto")
        if not request.sensitive and write_class(request) in self._session_classes():
            return Decision(True, "session")
        if not self.call.can_elicit:
            return self._without_elicitation(request, mode == "strict")
        return None

    async def ask(self, request: WriteRequest) -> Decision:
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
            return self.approvals  # one stdio process serves exactly one client
        return None

    def _session_classes(self) -> set[str]:
        key = self._session_key()
        return self.approvals.by_session.get(key, set()) if key is not None else set()

    def _offer_session(self, request: WriteRequest) -> WriteClass | None:
        if request.sensitive or self._session_key() is None:
            return None
        return write_class(request)

    def _remember(self, request: WriteRequest) -> None:
        key = self._session_key()
        if key is not None:
            self.approvals.by_session.setdefault(key, set()).add(write_class(request))

    # --- the ways to decide --------------------------------------------------------------

    def _without_elicitation(self, request: WriteRequest, strict: bool) -> Decision:
        cannot = "this client cannot be asked (it does not support MCP elicitation)"
        shown = request.shown
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
                f"`{shown}` matches a sensitive-file pattern, so writing it needs the "
                f"user's approval every time (`--approval auto` does not cover it), and {cannot}. "
                "Nothing was written. Use a client that supports MCP elicitation, or let the user "
                "edit the file.",
            )
        if not request.inside:
            return Decision(
                False,
                "no-elicitation",
                f"`{shown}` is outside the workspace; writing there needs the user's "
                f"approval, and {cannot}. Nothing was written. To allow it, the user can start "
                f"filegate with `--add-dir {escape(str(request.real.parent))}` (to add that "
                "directory to the workspace) or with `--approval auto`.",
            )
        return Decision(True, "no-elicitation")

    async def _handshake(self, request: WriteRequest) -> Decision:
        offer = self._offer_session(request)
        ctx = self.call.ctx
        path = str(request.real)
        nonce = QUESTIONS.open(path)
        try:
            # Only this call waits for this answer; a client that never answers is given up on.
            with anyio.fail_after(ASK_TIMEOUT_S):
                result = await self._answer_unless_gone(
                    self.call.session.elicit_form(
                        approval_message(request), approval_schema(offer), related_request_id=ctx.request_id
                    )
                )
            if result is None:
                QUESTIONS.answered(path, nonce)
                log.info("approval question cancelled: the client closed its stream")
                return Decision(
                    False,
                    "client-gone",
                    "The client closed the connection this approval question was sent on, so "
                    "nothing was written.",
                )
        except TimeoutError:
            QUESTIONS.answered(path, nonce)
            log.info("no answer to the approval question within %g seconds", ASK_TIMEOUT_S)
            return Decision(
                False,
                "unanswered",
                f"The user did not answer the approval question within {ASK_TIMEOUT_S:g} seconds, "
                "so nothing was written. Ask the user, then try again.",
            )
        except Exception as exc:  # the client failed to answer: nothing may be written
            QUESTIONS.answered(path, nonce)
            log.info("elicitation failed: %s", escape(str(exc)))
            return Decision(
                False,
                "elicitation-failed",
                f"Could not ask the user to approve this write ({_first_line(exc)}). Nothing was written.",
            )
        if QUESTIONS.answered(path, nonce) != "newest":
            return Decision(False, "superseded", SUPERSEDED.format(path=request.shown))
        return self._decide(request, result, offer is not None, "elicited")

    async def _answer_unless_gone(self, asking: Awaitable[ElicitResult]) -> ElicitResult | None:
        """The answer, or None as soon as the client's stream closed (SPEC §6: a handshake-era
        question is cancelled when its client's stream closes)."""
        answer: list[ElicitResult] = []
        failed: list[Exception] = []

        async def wait_for_answer() -> None:
            try:
                answer.append(await asking)
            except Exception as exc:  # raised below as itself, not inside an ExceptionGroup
                failed.append(exc)
            tg.cancel_scope.cancel()

        async def watch_stream() -> None:
            while not await self.call.stream_closed():
                await anyio.sleep(STREAM_CHECK_S)
            tg.cancel_scope.cancel()

        async with anyio.create_task_group() as tg:
            tg.start_soon(wait_for_answer)
            tg.start_soon(watch_stream)
        if failed:
            raise failed[0]
        return answer[0] if answer else None

    def _modern(self, request: WriteRequest) -> Decision:
        """2026-07-28: decide on the retry's answer, if it is for this very write; else ask."""
        ctx = self.call.ctx
        sealed = SealedOperation.parse(ctx.request_state)
        answer = (ctx.input_responses or {}).get(ANSWER_KEY)
        reasks = 0  # how often the file changed under an answer to this write
        if sealed is not None and isinstance(answer, ElicitResult) and sealed.same_target(request):
            replicas = self.settings.state_key is not None
            state = QUESTIONS.answered(str(request.real), sealed.nonce, replicas=replicas)
            if state == "replayed":
                return Decision(False, "replayed", REPLAYED)
            if state == "superseded":
                return Decision(False, "superseded", SUPERSEDED.format(path=request.shown))
            if sealed.matches(request):
                return self._decide(request, answer, sealed.session, "elicited")
            reasks = sealed.reasks + 1
        if reasks > MAX_REASKS:
            return Decision(
                False,
                "stale",
                f"`{request.shown}` changed {MAX_REASKS + 1} times while the user was being "
                "asked about this write (other writes to it are landing), so nothing was written. "
                "Read the file again and retry the edit.",
            )
        offer = self._offer_session(request)
        nonce = QUESTIONS.open(str(request.real))
        params = ElicitRequestFormParams(
            message=approval_message(request, changed=reasks > 0),
            requested_schema=approval_schema(offer),
        )
        raise InputRequired(
            InputRequiredResult(
                # Set although they are the models' defaults: a field left unset may be left
                # off the wire (the SDK writes messages with exclude_unset).
                result_type="input_required",
                input_requests={ANSWER_KEY: ElicitRequest(method="elicitation/create", params=params)},
                request_state=SealedOperation.of(request, offer is not None, nonce, reasks).dump(),
            )
        )

    def _decide(
        self, request: WriteRequest, result: ElicitResult, session_offered: bool, route: Route
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
                return Decision(True, "elicited, approved for the session")
            return Decision(True, route)
        feedback = str(content.get("feedback") or "").strip()
        if feedback:
            return Decision(False, route, REJECTED_WITH_FEEDBACK.format(feedback=feedback))
        return Decision(False, route, REJECTED)


def _first_line(exc: BaseException, limit: int = 200) -> str:
    """The client's reason, as one short escaped line: a client that checks its answer against
    the question's schema (fastmcp 4.2) reports the whole schema in its error."""
    line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return escape(line if len(line) <= limit else line[: limit - 1] + "…")
