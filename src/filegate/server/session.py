"""Per-call and per-session state: the workspace a call sees, its approver, its back channel."""

from __future__ import annotations

import logging
import time
import weakref
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import anyio
from fastmcp.server.middleware import Middleware, MiddlewareContext
from mcp.shared.exceptions import MCPError

from filegate.fsio.history import Limits, WriteHistory
from filegate.policy.budget import budget_for, tool_text_budget
from filegate.policy.escape import escape
from filegate.policy.grants import Grant, unseal
from filegate.policy.workspace import Workspace, abbreviate
from filegate.server import upstream
from filegate.server.approval import ElicitingApprover, SessionApprovals
from filegate.server.call import CallContext
from filegate.server.grants import GrantKey
from filegate.settings import Settings
from filegate.tools.outcome import ToolEnv
from filegate.tools.readguard.ledger import PROCESS_CAPACITY, PROCESS_INDEX_LINES, ChosenEncodings, ReadLedger

log = logging.getLogger("filegate")

# How long a client may take to answer roots/list (SPEC §2.8), and how often a roots change
# in flight may send filegate back to ask again.
ROOTS_TIMEOUT_S = 10.0
ROOTS_ATTEMPTS = 3


class RootsUnavailable(Exception):
    """The client's roots leave an empty workspace; the message says why and what the user can
    do (shown to the model, which tells the user)."""

    def __init__(self, reason: str) -> None:
        super().__init__(
            f"No file can be used: {reason}, so the workspace is empty (client roots fail closed). "
            "To fix it, configure the client to offer at least one root that is a local folder "
            "inside the workspace filegate serves (a file: URI, such as file:///home/me/project), "
            "or to offer no roots (an empty roots list, or no roots capability): filegate then "
            "serves its whole configured workspace."
        )


# How many unusable roots an error names (each escaped and abbreviated).
SHOWN_ROOTS = 3


def _shown(uris: list[str]) -> str:
    names = ", ".join(abbreviate(u) for u in uris[:SHOWN_ROOTS])
    return names + (f" and {len(uris) - SHOWN_ROOTS} more" if len(uris) > SHOWN_ROOTS else "")


async def _ask_roots(call: CallContext) -> list[str] | None:
    """The URIs of the client's roots, asked on the stream of the call that needs them (a
    client that never opens a standalone stream still gets the question), within the limit;
    None for an empty list: the client offers no roots (SPEC §2.8)."""
    if not call.session.can_send_request:
        raise RootsUnavailable("filegate cannot ask this client for its roots on this connection")
    try:
        with anyio.fail_after(ROOTS_TIMEOUT_S):
            answer = await upstream.request_on_call_stream(call.session, "roots/list", ROOTS_TIMEOUT_S)
    except TimeoutError:
        raise RootsUnavailable(f"the client did not answer roots/list within {ROOTS_TIMEOUT_S:g} s") from None
    except MCPError as exc:
        detail = escape(str(exc.error.message))[:ROOTS_ERROR_EXCERPT]
        raise RootsUnavailable(f"the client answered roots/list with an error ({detail})") from None
    except Exception as exc:  # a closed stream, a client gone
        log.info("roots/list failed: %s", escape(repr(exc))[:ROOTS_ERROR_EXCERPT])
        raise RootsUnavailable("the client's answer to roots/list could not be used") from None
    roots = answer.get("roots") if isinstance(answer, dict) else None
    if not isinstance(roots, list):
        raise RootsUnavailable("the client's answer to roots/list holds no roots list")
    if not roots:
        return None
    uris = [r["uri"] for r in roots if isinstance(r, dict) and isinstance(r.get("uri"), str)]
    if not usable_root_paths(uris):
        listed = f" ({_shown(uris)})" if uris else ""
        raise RootsUnavailable(f"none of the client's {len(roots)} root(s){listed} is a local file: URI")
    return uris


ROOTS_ERROR_EXCERPT = 200


def usable_root_paths(uris: list[str]) -> list[Path]:
    """The local directories among root URIs: ``file:`` only (no host but localhost), an
    absolute path, no NUL byte (``%00`` would break every later path operation). Others are
    dropped."""
    paths = []
    for uri in uris:
        parts = urlsplit(uri)
        if parts.scheme.lower() != "file" or parts.netloc.lower() not in ("", "localhost"):
            continue
        path = unquote(parts.path, errors="surrogateescape")
        if "\x00" in path or not path.startswith("/"):
            continue
        paths.append(Path(path))
    return paths


class SessionRuntime:
    """What lives as long as the server: settings, the workspace, per-session memory."""

    def __init__(self, settings: Settings, workspace: Workspace) -> None:
        self.settings = settings
        self.workspace = workspace
        # Handshake-era sessions only: roots the client offered. Keyed weakly on the session.
        self._roots: weakref.WeakKeyDictionary[Any, Workspace] = weakref.WeakKeyDictionary()
        # Bumped by each roots/list_changed: an answer asked for before the bump is stale.
        self._roots_generation: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
        # Which write classes each session approved "for this session", and its grants (see
        # approval.py); the key grant handles are sealed with (SPEC §11).
        self.approvals = SessionApprovals()
        self.grant_key = GrantKey()
        # What was read (tools/readguard/ledger.py): per handshake-era session, weakly keyed on its
        # connection; one ledger for a stdio process (one client) and for every 2026-07-28
        # client of this process (no session: SPEC §4 "reads by any client ... count").
        self._reads: weakref.WeakKeyDictionary[Any, ReadLedger] = weakref.WeakKeyDictionary()
        scope = "in this session" if settings.transport == "stdio" else "through this server"
        self.process_reads = ReadLedger(scope, PROCESS_CAPACITY, PROCESS_INDEX_LINES)
        # ReadFile's `encoding` per file, kept the same way (SPEC §8.1), guard or not.
        self._encodings: weakref.WeakKeyDictionary[Any, ChosenEncodings] = weakref.WeakKeyDictionary()
        self.process_encodings = ChosenEncodings(PROCESS_CAPACITY)
        self.history = open_history(settings)

    async def workspace_for(self, call: CallContext) -> Workspace:
        """The workspace narrowed by the client's roots (handshake era; roots never widen).

        Roots fail closed (SPEC §2.8): raises :class:`RootsUnavailable` when the client's
        answer leaves nothing usable, errs, or does not come within ``ROOTS_TIMEOUT_S``.
        """
        if not call.has_roots or call.modern:
            return self.workspace
        cached = self._roots.get(call.connection)
        if cached is not None:
            return cached
        for _ in range(ROOTS_ATTEMPTS):
            asked_at = self._roots_generation.get(call.connection, 0)
            uris = await _ask_roots(call)
            if self._roots_generation.get(call.connection, 0) != asked_at:
                continue  # roots changed while the question was out: that answer is stale
            if uris is None:  # an empty list: the client offers no roots (MCP Inspector 2.12)
                log.warning(
                    "client %s sent an empty roots list (it offers no roots): serving the "
                    "configured workspace",
                    escape(call.client_name),
                )
                self._roots[call.connection] = self.workspace
                return self.workspace
            narrowed = self.workspace.narrowed(usable_root_paths(uris))
            self._roots[call.connection] = narrowed
            return narrowed
        raise RootsUnavailable("the client's roots kept changing while filegate asked for them")

    def forget_roots(self, connection: object) -> None:
        self._roots.pop(connection, None)
        self._roots_generation[connection] = self._roots_generation.get(connection, 0) + 1

    def reads_for(self, call: CallContext) -> ReadLedger | None:
        """The read ledger of this call's session (None: --read-guard off): the process's one
        ledger for stdio (one client) and for 2026-07-28 calls (no session), else the
        handshake-era session's own."""
        if not self.settings.read_guard:
            return None
        if call.modern or call.transport == "stdio":
            return self.process_reads
        ledger = self._reads.get(call.connection)
        if ledger is None:
            ledger = self._reads[call.connection] = ReadLedger("in this session")
        return ledger

    def encodings_for(self, call: CallContext | None) -> ChosenEncodings:
        """The codecs this call's session chose by ReadFile's ``encoding`` (scoped as reads)."""
        if call is None or call.modern or call.transport == "stdio":
            return self.process_encodings
        chosen = self._encodings.get(call.connection)
        if chosen is None:
            chosen = self._encodings[call.connection] = ChosenEncodings()
        return chosen

    async def presented_grant(self, handle: str) -> Grant | None:
        """The grant a call's ``grant`` handle carries (SPEC §11), or None: a handle that does not
        verify, expired or names another workspace is no grant (the user is asked), and the
        caller is never told why (the log says that one was ignored)."""
        if not handle or self.settings.approval == "ask-always":
            return None
        key = await self.grant_key.get()
        grant = None if key is None else unseal(key, self.workspace, handle, time.time())
        if grant is None:
            log.info("a grant handle was ignored: it does not verify, expired, or names another workspace")
        return grant

    async def env_for(self, call: CallContext, grant: str = "") -> ToolEnv:
        workspace = await self.workspace_for(call)
        budget = budget_for(self.settings, call.client_name)
        presented = await self.presented_grant(grant)
        return ToolEnv(
            workspace=workspace,
            approver=ElicitingApprover(
                self.settings, self.approvals, call, workspace, self.grant_key, presented
            ),
            reporter=call,
            text_budget=tool_text_budget(budget.text),  # room for the lines render ends it with
            result_budget=budget.result,
            media_part_budget=budget.media_part,
            image_max_side=self.settings.image_max_side,
            client=call.client_name,
            reads=self.reads_for(call),
            legacy_encoding=self.settings.legacy_encoding,
            encodings=self.encodings_for(call),
            history=self.history,
            edit_match=self.settings.edit_match,
        )


def open_history(settings: Settings) -> WriteHistory | None:
    """The write history of the state directory (SPEC §8.4); None: --history off."""
    if settings.history == "off":
        return None
    return WriteHistory(limits=Limits(settings.history_max_bytes, settings.history_max_age))


class RootsChanged(Middleware):
    """A client that says its roots changed is asked for them again on its next call."""

    def __init__(self, runtime: SessionRuntime) -> None:
        self.runtime = runtime

    async def on_notification(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        if context.method == "notifications/roots/list_changed" and context.fastmcp_context:
            session = context.fastmcp_context.session
            self.runtime.forget_roots(upstream.connection_of(session))
        return await call_next(context)
