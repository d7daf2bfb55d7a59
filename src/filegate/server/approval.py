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

Grants (SPEC §11): beside "approve", a question offers "approve this file", "approve edits
under `<folder>`" (the path's top folder inside the workspace) and "approve all writes inside
(outside) the workspace", each for this session: a handshake-era session (stdio or HTTP), or a
stdio process on 2026-07-28 (one process serves one client). A 2026-07-28 HTTP connection has
no session: it is offered the file and the folder, for ``--grant-ttl``, and a granted answer's
result names a sealed handle the write tools take back as ``grant`` (policy/grants.py seals it
and judges what any grant covers, so sensitive files, rule files and ``ask`` rules' paths are
asked about every time by construction). The user's own allow rules count as grants.
``--approval ask-always`` offers no grant and honours none, nor any allow rule. Every grant is
logged and recorded for `filegate rules` (fsio/grantstore.py).
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
from filegate.policy.grants import Grant, GrantKind, unasked
from filegate.policy.workspace import Workspace
from filegate.server.call import CallContext, InputRequired
from filegate.server.grants import GrantKey, choices_for, give
from filegate.server.questions import (
    APPROVE,
    APPROVE_FILE,
    APPROVE_FOLDER,
    APPROVE_SESSION,
    CANCELLED,
    REJECT,
    REJECTED,
    REJECTED_WITH_FEEDBACK,
    REPLAYED,
    SUPERSEDED,
    Choices,
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
STATE_VERSION = 5
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
# Where a session's grant lives, as its log line and `filegate rules` say.
HELD_IN = {"stdio": "stdio session", "streamable-http": "HTTP session"}
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
    choices: list[str]  # the answers the form offered (a grant not offered is not given)
    nonce: str  # this question: an answer to it counts once, and only while it is the newest
    reasks: int = 0  # how often the file changed under an answer and the user was asked again

    @classmethod
    def of(cls, request: WriteRequest, choices: Choices, nonce: str, reasks: int = 0) -> SealedOperation:
        return cls(
            STATE_VERSION,
            request.tool,
            str(request.real),
            request.old_hash,
            request.new_hash,
            choices.values(),
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
    """Per session (weakly keyed: they go with it): the write classes approved "for this
    session", and its grants of a file or a folder."""

    def __init__(self) -> None:
        self.by_session: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
        self.grants: weakref.WeakKeyDictionary[Any, list[Grant]] = weakref.WeakKeyDictionary()


class ElicitingApprover:
    """The Approver a tool call gets: decides by the settings, the session's grants (or the
    handle the call carried), the user's allow rules, and the user."""

    def __init__(
        self,
        settings: Settings,
        approvals: SessionApprovals,
        call: CallContext,
        workspace: Workspace,
        keys: GrantKey,
        presented: Grant | None = None,
    ) -> None:
        self.settings = settings
        self.approvals = approvals
        self.call = call
        self.workspace = workspace
        self.keys = keys
        self.presented = presented  # the grant of the handle this call carried, verified
        # The line naming a handle this call's answer granted (SPEC §11), for its result.
        self.granted = ""

    def settle(self, request: WriteRequest) -> Decision | None:
        mode = self.settings.approval
        if mode == "auto" and not request.asked_always:  # SPEC §2.6: auto never covers secrets
            return Decision(True, "auto")
        if not request.asked_always and write_class(request) in self._session_classes():
            return Decision(True, "session")
        if mode != "ask-always":
            # policy/grants.py: never a sensitive file, a rule file or an ask rule's path
            why = unasked(self.workspace, request.targets, self._grants(), time.time())
            if why is not None:
                return Decision(True, why)
        if not self.call.can_elicit:
            return self._without_elicitation(request, mode == "strict")
        return None

    async def ask(self, request: WriteRequest) -> Decision:
        choices = await self._choices(request)
        if self.call.modern:
            decision, grant = self._modern(request, choices)
        else:
            decision, grant = await self._handshake(request, choices)
        if grant is not None:
            return await self._grant(request, grant, decision)
        return decision

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

    def _grants(self) -> list[Grant]:
        key = self._session_key()
        held = self.approvals.grants.get(key, []) if key is not None else []
        return [*held, self.presented] if self.presented is not None else held

    async def _choices(self, request: WriteRequest) -> Choices:
        session = self._session_key() is not None
        return await choices_for(request, self.settings, self.workspace, self.keys, session=session)

    def _remember(self, request: WriteRequest) -> None:
        key = self._session_key()
        if key is not None:
            self.approvals.by_session.setdefault(key, set()).add(write_class(request))

    async def _grant(self, request: WriteRequest, kind: GrantKind, approved: Decision) -> Decision:
        """The user approved this write and granted its file or folder: kept in the session, or
        (no session) sealed into a handle this call's result names."""
        session = self._session_key()
        kept = None if session is None else self.approvals.grants.setdefault(session, [])
        held = "handle" if session is None else HELD_IN.get(self.call.transport or "", "session")
        args = (self.settings, self.workspace, self.keys, kept, held, self.call.client_name, session)
        given = await give(request, kind, *args)
        if given is None:
            return approved  # no grant now (a rule came since, or no key to seal with): this write only
        self.granted = given
        return Decision(True, "elicited, granted")

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
        if request.always_ask and not request.sensitive:
            return Decision(
                False,
                "no-elicitation",
                f"The set holds a file an `ask` rule covers, so it needs the user's approval every "
                f"time (`--approval auto` does not cover it), and {cannot}. Nothing was written. "
                "Leave that file out of the set, or use a client that supports MCP elicitation.",
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

    async def _handshake(self, request: WriteRequest, choices: Choices) -> tuple[Decision, GrantKind | None]:
        ctx = self.call.ctx
        path = str(request.real)
        nonce = QUESTIONS.open(path)
        try:
            # Only this call waits for this answer; a client that never answers is given up on.
            with anyio.fail_after(ASK_TIMEOUT_S):
                result = await self._answer_unless_gone(
                    self.call.session.elicit_form(
                        approval_message(request), approval_schema(choices), related_request_id=ctx.request_id
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
                ), None
        except TimeoutError:
            QUESTIONS.answered(path, nonce)
            log.info("no answer to the approval question within %g seconds", ASK_TIMEOUT_S)
            return Decision(
                False,
                "unanswered",
                f"The user did not answer the approval question within {ASK_TIMEOUT_S:g} seconds, "
                "so nothing was written. Ask the user, then try again.",
            ), None
        except Exception as exc:  # the client failed to answer: nothing may be written
            QUESTIONS.answered(path, nonce)
            log.info("elicitation failed: %s", escape(str(exc)))
            return Decision(
                False,
                "elicitation-failed",
                f"Could not ask the user to approve this write ({_first_line(exc)}). Nothing was written.",
            ), None
        if QUESTIONS.answered(path, nonce) != "newest":
            return Decision(False, "superseded", SUPERSEDED.format(path=request.shown)), None
        return self._decide(request, result, choices.values(), "elicited")

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

    def _modern(self, request: WriteRequest, choices: Choices) -> tuple[Decision, GrantKind | None]:
        """2026-07-28: decide on the retry's answer, if it is for this very write; else ask."""
        ctx = self.call.ctx
        sealed = SealedOperation.parse(ctx.request_state)
        answer = (ctx.input_responses or {}).get(ANSWER_KEY)
        reasks = 0  # how often the file changed under an answer to this write
        if sealed is not None and isinstance(answer, ElicitResult) and sealed.same_target(request):
            replicas = self.settings.state_key is not None
            state = QUESTIONS.answered(str(request.real), sealed.nonce, replicas=replicas)
            if state == "replayed":
                return Decision(False, "replayed", REPLAYED), None
            if state == "superseded":
                return Decision(False, "superseded", SUPERSEDED.format(path=request.shown)), None
            if sealed.matches(request):
                return self._decide(request, answer, sealed.choices, "elicited")
            reasks = sealed.reasks + 1
        if reasks > MAX_REASKS:
            return Decision(
                False,
                "stale",
                f"`{request.shown}` changed {MAX_REASKS + 1} times while the user was being "
                "asked about this write (other writes to it are landing), so nothing was written. "
                "Read the file again and retry the edit.",
            ), None
        nonce = QUESTIONS.open(str(request.real))
        params = ElicitRequestFormParams(
            message=approval_message(request, changed=reasks > 0),
            requested_schema=approval_schema(choices),
        )
        raise InputRequired(
            InputRequiredResult(
                # Set although they are the models' defaults: a field left unset may be left
                # off the wire (the SDK writes messages with exclude_unset).
                result_type="input_required",
                input_requests={ANSWER_KEY: ElicitRequest(method="elicitation/create", params=params)},
                request_state=SealedOperation.of(request, choices, nonce, reasks).dump(),
            )
        )

    def _decide(
        self, request: WriteRequest, result: ElicitResult, choices: list[str], route: Route
    ) -> tuple[Decision, GrantKind | None]:
        """The answer as a decision, and the grant it asks for (given by :meth:`_grant`). An
        answer the form did not offer (a client that does not check its answer) approves this
        write only."""
        if result.action == "cancel":
            return Decision(False, route, CANCELLED), None
        content = result.content or {}
        choice = content.get("decision") if result.action == "accept" else REJECT
        if choice in (APPROVE, APPROVE_FILE, APPROVE_FOLDER, APPROVE_SESSION):
            if choice == APPROVE or choice not in choices:
                return Decision(True, route), None
            if choice == APPROVE_SESSION:
                self._remember(request)
                return Decision(True, "elicited, approved for the session"), None
            return Decision(True, route), "file" if choice == APPROVE_FILE else "folder"
        feedback = str(content.get("feedback") or "").strip()
        if feedback:
            return Decision(False, route, REJECTED_WITH_FEEDBACK.format(feedback=feedback)), None
        return Decision(False, route, REJECTED), None


def _first_line(exc: BaseException, limit: int = 200) -> str:
    """The client's reason, as one short escaped line: a client that checks its answer against
    the question's schema (fastmcp 4.2) reports the whole schema in its error."""
    line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return escape(line if len(line) <= limit else line[: limit - 1] + "…")
