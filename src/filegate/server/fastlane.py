"""The stdio fast lane: ``tools/call`` of the plain read tools answered beside fastmcp.

fastmcp's request path costs about 2 ms of CPU per call (dispatcher task, request-state
boundary, middleware chain, provider lookup, telemetry spans, pydantic JSON both ways), ~5×
filegate's own work for a small ReadFile (bench/README.md). The lane takes a request line
before the SDK parses it and, when it can answer exactly as fastmcp would, runs filegate's
own handler and writes the JSON-RPC response itself: JSON in, validate, handler, render, JSON
out.

"Exactly as fastmcp would" is kept by taking only what the lane fully understands and
handing everything else to the ordinary path, unchanged and in order:

- Only ReadFile, ReadMediaFile and Glob: read-only, no approval, no progress. Grep reports
  progress and runs long (the per-call cost does not matter there); writes ask for approval.
- A request whose shape is the one recorded from fastmcp's own answers: ``name``,
  ``arguments`` and ``_meta`` (``progressToken``, and on 2026-07-28 the request envelope).
  Handshake era: only after ``initialize`` (a version the lane knows) and
  ``notifications/initialized``. A client with the roots capability: only once the ordinary
  path has asked for its roots (SessionRuntime remembers them for the one stdio session), and
  not while a ``notifications/roots/list_changed`` seen going by has yet to reach RootsChanged.
- Arguments its params model accepts: invalid arguments go the ordinary way, which
  produces the validation message.
- After the call: an error result is logged as the ordinary path logs it; a result with
  notable facts (server/notify.py sends those as MCP log messages) is not answered here but
  handed over, and so is an unexpected exception (fastmcp masks it). The read tools change
  nothing, so running such a call again there only costs time.
- ``notifications/cancelled`` for a call on the lane cancels it: no answer, as the SDK does.
  The shutdown gate (server/shutdown.py) counts and cancels lane calls as its own.

``FILEGATE_FAST_LANE=off`` (or 0/false/no) turns the lane off: every call goes through
fastmcp (tests run the stdio tests both ways; tests/server/test_fast_lane.py compares them).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fastmcp.tools import ToolResult
from mcp.types import ClientCapabilities, Implementation, TextContent
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError

from filegate.policy.budget import media_part_budget_for, result_budget_for
from filegate.policy.workspace import Workspace
from filegate.server.notify import events, log_failure
from filegate.server.render import render
from filegate.server.session import SessionRuntime
from filegate.server.shutdown import CallGate
from filegate.tools.outcome import Outcome, ToolEnv

if TYPE_CHECKING:
    from fastmcp import FastMCP

log = logging.getLogger("filegate")

SWITCH = "FILEGATE_FAST_LANE"
LANE_TOOLS = ("ReadFile", "ReadMediaFile", "Glob")
# Handshake versions whose tools/call answers the lane's were compared with (the test).
HANDSHAKE_VERSIONS = frozenset({"2025-06-18", "2025-11-25"})
_META = "io.modelcontextprotocol/"
ENVELOPE = {
    "version": _META + "protocolVersion",
    "info": _META + "clientInfo",
    "caps": _META + "clientCapabilities",
    "level": _META + "logLevel",
}
_MODERN_META_KEYS = frozenset({*ENVELOPE.values(), "progressToken"})
# Calls on the lane at once; past this, new ones take the ordinary path (memory stays bounded
# however fast a client sends: the reader's own bound does not hold once a line is taken).
MAX_IN_FLIGHT = 64
_LEVELS = frozenset({"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"})


def enabled() -> bool:
    return os.environ.get(SWITCH, "on").strip().lower() not in ("0", "off", "false", "no")


@dataclass(frozen=True)
class LaneTool:
    """What the lane needs of one of filegate's tools (server/app.py's FilegateTool)."""

    name: str
    params: type[BaseModel]
    handler: Callable[[Any, ToolEnv], Awaitable[Outcome]]
    runtime: SessionRuntime


class HandOver(Exception):
    """This call is the ordinary path's to answer (raised inside a lane call)."""


class _HandOverReporter:
    """A lane tool that reports progress or logs needs fastmcp's Context: hand the call over."""

    async def progress(self, done: float, total: float | None, message: str) -> None:
        raise HandOver

    async def log(self, level: str, text: str) -> None:
        raise HandOver


class _NoApprover:
    """The lane's tools are read-only; one that asked for approval belongs to the ordinary path."""

    def settle(self, request: Any) -> Any:
        raise HandOver

    async def ask(self, request: Any) -> Any:
        raise HandOver


class _Session:
    """What the lane knows of a handshake-era session, from the lines it saw go by."""

    def __init__(self) -> None:
        self.initialize: dict[str, Any] | None = None
        self.initialized = False
        self.usable = False  # a known version
        self.has_roots = False
        self.roots_changes = 0  # notifications/roots/list_changed seen go by
        self.client_name = ""


class FastLane:
    """Takes the request lines it can answer; the rest go to the SDK (see the module doc)."""

    def __init__(
        self,
        server: FastMCP,
        tools: dict[str, LaneTool],
        gate: CallGate | None,
        write: Callable[[str], Awaitable[None]],
        hand_over: Callable[[str], None],
    ) -> None:
        self._tools = tools
        self._gate = gate
        self._write = write
        self._hand_over = hand_over
        self._server_info = {"name": server.name, "version": server.version}
        self._session = _Session()
        self._calls: dict[Any, asyncio.Task[None]] = {}
        self._known_envelope: tuple[Any, Any] | None = None
        self.answered = 0
        self.handed_over = 0

    @classmethod
    async def build(
        cls,
        server: FastMCP,
        gate: CallGate | None,
        write: Callable[[str], Awaitable[None]],
        hand_over: Callable[[str], None],
    ) -> FastLane:
        tools: dict[str, LaneTool] = {}
        for name in LANE_TOOLS:
            tool = await server.get_tool(name)
            # Duck-typed: server/app.py's FilegateTool (app.py imports this module's user).
            spec, runtime = getattr(tool, "spec", None), getattr(tool, "runtime", None)
            if spec is None or not isinstance(runtime, SessionRuntime) or not spec.read_only:
                continue
            tools[name] = LaneTool(name, spec.params, spec.handler, runtime)
        return cls(server, tools, gate, write, hand_over)

    # --- the reader's side: one call per line, before the SDK sees it -----------------------

    def take(self, line: str) -> bool:
        """Whether the lane answers this line (else it goes to the SDK as it is)."""
        if '"tools/call"' not in line:
            if "initialize" in line or "notifications/cancelled" in line or "roots/list_changed" in line:
                self._observe(line)
            return False
        if '"ReadFile"' not in line and '"ReadMediaFile"' not in line and '"Glob"' not in line:
            return False
        if len(self._calls) >= MAX_IN_FLIGHT:
            return False
        if "\\u" in line:  # escapes (a lone surrogate among them): the ordinary path's parser
            return False
        try:
            message = json.loads(line)
        except ValueError:
            return False
        call = self._admit(message)
        if call is None:
            return False
        request_id, tool, params, modern, client_name, workspace = call
        task = asyncio.get_running_loop().create_task(
            self._serve(line, request_id, tool, params, modern, client_name, workspace)
        )
        self._calls[request_id] = task
        task.add_done_callback(lambda _t: self._calls.pop(request_id, None))
        return True

    def _observe(self, line: str) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return
        if not isinstance(message, dict):
            return
        method = message.get("method")
        params = message.get("params")
        session = self._session
        if method == "initialize" and "id" in message:
            if session.initialize is not None:  # a second initialize: leave it all to fastmcp
                session.usable = False
                return
            session.initialize = params if isinstance(params, dict) else {}
            session.usable = self._handshake_usable(session.initialize)
            caps = session.initialize.get("capabilities")
            session.has_roots = isinstance(caps, dict) and "roots" in caps
            info = session.initialize.get("clientInfo")
            session.client_name = str(info.get("name") or "") if isinstance(info, dict) else ""
        elif method == "notifications/initialized":
            session.initialized = session.initialize is not None
        elif method == "notifications/roots/list_changed":
            session.roots_changes += 1
        elif method == "notifications/cancelled" and isinstance(params, dict):
            task = self._calls.get(params.get("requestId"))
            if task is not None:
                task.cancel()

    @staticmethod
    def _handshake_usable(params: dict[str, Any]) -> bool:
        if params.get("protocolVersion") not in HANDSHAKE_VERSIONS:
            return False
        caps, info = params.get("capabilities"), params.get("clientInfo")
        if not isinstance(caps, dict) or not isinstance(info, dict):
            return False
        try:
            ClientCapabilities.model_validate(caps)
            Implementation.model_validate(info)
        except ValidationError:
            return False
        return True

    def _admit(self, message: Any) -> tuple[Any, LaneTool, Any, bool, str, Workspace] | None:
        """The call's (id, tool, validated params, modern, client name, workspace), or None:
        not the lane's."""
        if not isinstance(message, dict) or message.keys() != {"jsonrpc", "id", "method", "params"}:
            return None
        request_id = message["id"]
        if message["jsonrpc"] != "2.0" or message["method"] != "tools/call":
            return None
        if type(request_id) not in (int, str) or request_id in self._calls:
            return None
        params = message["params"]
        if not isinstance(params, dict) or not params.keys() <= {"name", "arguments", "_meta"}:
            return None
        tool = self._tools.get(params.get("name"))  # type: ignore[arg-type]
        arguments = params.get("arguments")
        if tool is None or not isinstance(arguments, dict):
            return None
        meta = params.get("_meta", {})
        if not isinstance(meta, dict):
            return None
        if ENVELOPE["version"] in meta:
            client_name = self._modern_client(meta)
            modern = True
        else:
            client_name = self._handshake_client(meta)
            modern = False
        workspace = self._workspace(tool.runtime, modern)
        if client_name is None or workspace is None:
            return None
        try:
            validated = tool.params.model_validate(arguments)
        except ValidationError:
            return None  # the ordinary path words the validation error
        return request_id, tool, validated, modern, client_name, workspace

    def _workspace(self, runtime: SessionRuntime, modern: bool) -> Workspace | None:
        """The workspace SessionRuntime.workspace_for would give this call, when it is known
        without asking the client: a handshake client with roots uses the roots fastmcp's
        path asked for, once every roots change seen on the way in has been applied there."""
        if modern or not self._session.has_roots:
            return runtime.workspace
        narrowed, applied = runtime.sole_session_roots()
        if applied < self._session.roots_changes:
            return None  # a change on its way to RootsChanged: what is cached may be stale
        return narrowed

    def _modern_client(self, meta: dict[str, Any]) -> str | None:
        if self._session.initialize is not None or not meta.keys() <= _MODERN_META_KEYS:
            return None
        if meta[ENVELOPE["version"]] not in MODERN_PROTOCOL_VERSIONS:
            return None
        info, caps = meta.get(ENVELOPE["info"]), meta.get(ENVELOPE["caps"])
        if not isinstance(info, dict) or not isinstance(caps, dict):
            return None
        level = meta.get(ENVELOPE["level"], "debug")
        if level not in _LEVELS or not _progress_token_ok(meta):
            return None
        if self._known_envelope != (info, caps):
            try:
                Implementation.model_validate(info)
                ClientCapabilities.model_validate(caps)
            except ValidationError:
                return None
            self._known_envelope = (info, caps)
        name = info.get("name")
        return name if isinstance(name, str) else ""

    def _handshake_client(self, meta: dict[str, Any]) -> str | None:
        session = self._session
        if not (session.usable and session.initialized):
            return None
        if not meta.keys() <= {"progressToken"} or not _progress_token_ok(meta):
            return None
        return session.client_name

    # --- one call ------------------------------------------------------------------------

    async def _serve(
        self,
        line: str,
        request_id: Any,
        tool: LaneTool,
        params: Any,
        modern: bool,
        client: str,
        workspace: Workspace,
    ) -> None:
        try:
            result = await self._guarded(tool, params, client, workspace)
        except HandOver:
            self._hand_over_line(line)
            return
        except asyncio.CancelledError:
            return  # cancelled by the client: never answered (the SDK's rule)
        except Exception:
            log.debug("fast lane: %s raised; handed to the ordinary path", tool.name, exc_info=True)
            self._hand_over_line(line)
            return
        # render() already spelled every lone surrogate; NotableEvents' safe_result() is for
        # results made elsewhere (the gate's own are ASCII), so it is not repeated here.
        if result.is_error:
            log_failure(tool.name, result)
        self.answered += 1
        await self._write(self._response(request_id, result, modern))

    def _hand_over_line(self, line: str) -> None:
        self.handed_over += 1
        self._hand_over(line)

    async def _guarded(self, tool: LaneTool, params: Any, client: str, workspace: Workspace) -> ToolResult:
        async def run() -> ToolResult:
            runtime = tool.runtime
            env = ToolEnv(
                workspace=workspace,
                approver=_NoApprover(),
                reporter=_HandOverReporter(),
                result_budget=result_budget_for(runtime.settings, client),
                media_part_budget=media_part_budget_for(runtime.settings, client),
                image_max_side=runtime.settings.image_max_side,
                client=client,
                reads=runtime.reads_for(None),  # a ReadFile here counts for the write guard
            )
            outcome = await tool.handler(params, env)
            if events(tool.name, outcome):
                raise HandOver  # told to the client as log messages: fastmcp's Context
            return render(outcome)

        if self._gate is None:
            return await run()
        return await self._gate.run(tool.name, run)

    def _response(self, request_id: Any, result: ToolResult, modern: bool) -> str:
        content = [_block(b) for b in result.content]
        body: dict[str, Any] = {"content": content, "isError": bool(result.is_error)}
        if modern:
            body["resultType"] = "complete"
            body["_meta"] = {_META + "serverInfo": self._server_info}
        reply = {"jsonrpc": "2.0", "id": request_id, "result": body}
        return json.dumps(reply, ensure_ascii=False, separators=(",", ":")) + "\n"

    @property
    def tools(self) -> list[str]:
        return list(self._tools)

    # --- the end of input ------------------------------------------------------------------

    async def cancel_all(self) -> None:
        """stdin closed: the SDK cancels its running calls unanswered; so does the lane."""
        for task in list(self._calls.values()):
            task.cancel()
        if self._calls:
            await asyncio.gather(*self._calls.values(), return_exceptions=True)


def _progress_token_ok(meta: dict[str, Any]) -> bool:
    return "progressToken" not in meta or type(meta["progressToken"]) in (int, str)


def _block(block: Any) -> dict[str, Any]:
    if type(block) is TextContent and block.annotations is None and block.meta is None:
        return {"type": "text", "text": block.text}
    dumped: dict[str, Any] = block.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped
