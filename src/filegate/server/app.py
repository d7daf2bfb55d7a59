"""build_server(settings) → FastMCP with filegate's tools; serve(settings) runs it."""

from __future__ import annotations

import gc
import logging
import sys
import warnings
from typing import Any

from fastmcp import FastMCP
from fastmcp.server.dependencies import get_context
from fastmcp.tools import Tool, ToolResult
from fastmcp.tools.base import InputRequiredToolResult
from mcp.types import TextContent, ToolAnnotations
from pydantic import BaseModel, PrivateAttr, ValidationError

from filegate import __version__
from filegate.policy.budget import PRESETS
from filegate.policy.escape import escape, escape_record
from filegate.policy.secrets import SecretMatcher
from filegate.policy.workspace import Workspace
from filegate.server.approval import ElicitingApprover
from filegate.server.call import CallContext, InputRequired
from filegate.server.notify import NotableEvents, tell
from filegate.server.render import render
from filegate.server.session import RootsChanged, RootsUnavailable, SessionRuntime
from filegate.server.state import defer_session_state
from filegate.settings import Settings
from filegate.tools.outcome import ToolSpec, answer
from filegate.tools.readguard.ledger import change_notice
from filegate.tools.search.ignores import client_rules_of

log = logging.getLogger("filegate")
# Set on the log record of a tool's unexpected exception (tests/conftest.py fails a test on one
# under FILEGATE_SIMULATE: a missing fallback must not pass as a masked error).
UNEXPECTED = "filegate_unexpected"


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """Pydantic's schema with Kimi's conventions: aliases as keys, no titles, no $refs; and what
    every turn pays for kept short (SPEC §9): an optional field is its type alone (not
    ``anyOf: [T, null]`` with a null default: leaving it out means the same)."""
    schema = model.model_json_schema(by_alias=True)
    defs = schema.pop("$defs", {})
    expanded: set[str] = set()

    def clean(node: Any, described: bool = True) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                name = node["$ref"].rsplit("/", 1)[-1]
                merged = {**defs[name], **{k: v for k, v in node.items() if k != "$ref"}}
                again = name in expanded  # a second copy (StrReplaceFile's list of edits):
                expanded.add(name)  # its fields were described in the first
                return clean(merged, described and not again)
            unwrapped = _without_null(node)
            if unwrapped is not node:  # the optional field's own type, maybe a $ref
                return clean(unwrapped, described)
            drop = ("title",) if described else ("title", "description")
            return {k: clean(v, described) for k, v in node.items() if k not in drop}
        if isinstance(node, list):
            return [clean(v, described) for v in node]
        return node

    result: dict[str, Any] = clean(schema)
    return result


def _without_null(node: dict[str, Any]) -> dict[str, Any]:
    """``{anyOf: [T, {type: null}], default: D, …}`` → ``{…T, default: D, …}`` (no default when
    D is null); any other node as it is."""
    options = node.get("anyOf")
    if not isinstance(options, list) or {"type": "null"} not in options or len(options) != 2:
        return node
    kept = next(o for o in options if o != {"type": "null"})
    rest = {k: v for k, v in node.items() if k != "anyOf" and not (k == "default" and v is None)}
    return {**kept, **rest}


def _validation_message(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        problems.append(f"{loc}: {msg}" if loc else msg)
    n = len(problems)
    return f"Error validating JSON arguments: {n} validation error{'s' if n > 1 else ''}: " + (
        "; ".join(problems)
    )


class FilegateTool(Tool):
    """A tool whose arguments are validated by its own params model (Kimi's aliases)."""

    _spec: ToolSpec = PrivateAttr()
    _runtime: SessionRuntime = PrivateAttr()

    @classmethod
    def create(cls, spec: ToolSpec, runtime: SessionRuntime, defer: bool = False) -> FilegateTool:
        # The hints that say something (SPEC §1): destructive and idempotent mean nothing for a
        # read-only tool, and a writer is not idempotent by default.
        if spec.read_only:
            annotations = ToolAnnotations(read_only_hint=True, open_world_hint=False)
        else:
            annotations = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)
        tool = cls(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            parameters=json_schema(spec.params),
            output_schema=None,  # text only (SPEC §1): no structuredContent to describe
            annotations=annotations,
            meta=tool_meta(spec, defer),
        )
        tool._spec = spec
        tool._runtime = runtime
        return tool

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    def get_meta(self) -> dict[str, Any]:
        """The tool's ``_meta`` as sent: filegate's keys only (fastmcp adds its own tag list,
        which no client reads and every turn of an always-loaded tool would pay for)."""
        return dict(self.meta or {})

    @property
    def runtime(self) -> SessionRuntime:
        return self._runtime

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        try:
            params = self._spec.params.model_validate(arguments)
        except ValidationError as exc:
            msg = _validation_message(exc)
            return ToolResult(content=[TextContent(type="text", text=msg)], is_error=True)
        call = CallContext(get_context())
        try:
            # SPEC §11: a write tool's `grant` carries a handle back; the approver judges it
            env = await self._runtime.env_for(call, getattr(params, "grant", ""))
            outcome = await answer(self._spec.handler, params, env)
        except InputRequired as ask:
            return InputRequiredToolResult(ask.result)
        except RootsUnavailable as closed:
            return ToolResult(content=[TextContent(type="text", text=str(closed))], is_error=True)
        except NotImplementedError as missing:
            # A facility this OS lacks (Windows: dir_fd, fchdir, …) reached by a path with no
            # fallback: said in one line, naming it, never masked as an internal error.
            log.error("%s: %s", self._spec.name, missing, exc_info=True, extra={UNEXPECTED: True})
            what = escape(str(missing)) or "an OS facility is missing"
            text = f"{self._spec.name} cannot do this on this platform: {what}."
            return ToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        except Exception:
            # fastmcp masks it ("Error calling tool"); the record lets a test fail on it.
            log.error(
                "%s raised an unexpected error", self._spec.name, exc_info=True, extra={UNEXPECTED: True}
            )
            raise
        if isinstance(env.approver, ElicitingApprover):  # a handle this call's answer granted
            outcome.grant = env.approver.granted
        await tell(call, self._spec.name, outcome)
        # SPEC §8.3: a handshake-era session hears of files it read that changed on disk since;
        # a 2026-07-28 call has no session whose reads these would be.
        if env.reads is not None and not call.modern:
            outcome.notice = change_notice(env.reads, env.workspace)
        return render(outcome)


# SPEC §9, Claude Code's per-tool `_meta`: loaded in the first request, not behind its tool
# search (alwaysLoad, unless --defer-tools), found by these words when deferred (searchHint), and
# shown whole up to the text budget filegate gives it (without the declaration it saves any text
# over 50,000 characters to a file and shows the model a preview).
ALWAYS_LOAD = "anthropic/alwaysLoad"
SEARCH_HINT = "anthropic/searchHint"
MAX_RESULT_SIZE = "anthropic/maxResultSizeChars"


def tool_meta(spec: ToolSpec, defer: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {} if defer else {ALWAYS_LOAD: True, SEARCH_HINT: spec.search_hint or spec.title}
    return meta | {MAX_RESULT_SIZE: PRESETS["claude-code"].text}


def instructions(specs: list[ToolSpec]) -> str:
    """What filegate is for, in two lines (SPEC §9): shown as its only description while its
    tools are deferred, and matched by Codex's tool search."""
    names = ", ".join(spec.name for spec in specs)
    return (
        f"filegate: file tools for this workspace ({names}): read, search, find and edit files with "
        "secrets kept out, every result sized to this client, writes asked about and undoable.\n"
        "Prefer them to built-in file tools and to shell commands (cat, grep, find, sed) for files here."
    )


class Events(RootsChanged, NotableEvents):
    """filegate's one middleware: a client's roots change (session.py) and the notable events of
    a call (notify.py). One layer, not two: each costs every message a pass through fastmcp's
    middleware dispatch, a fixed cost per message (bench/percall.py measures it)."""


def tool_specs(settings: Settings) -> list[ToolSpec]:
    """Every tool filegate offers under these settings, in the order they are listed: each
    declared once, as its module's ``SPEC``."""
    from filegate.tools import (
        apply_patch,
        changes,
        glob,
        grep,
        read_file,
        read_media,
        str_replace,
        undo_write,
        write_file,
    )

    specs = [
        read_file.SPEC,
        read_media.SPEC,
        glob.SPEC,
        grep.SPEC,
        write_file.SPEC,
        str_replace.SPEC,
        undo_write.SPEC,
        apply_patch.SPEC,
        changes.SPEC,
    ]
    return [spec for spec in specs if spec.read_only or not settings.read_only]


def build_server(settings: Settings) -> FastMCP:
    workspace = Workspace(
        workdir=settings.workdir,
        add_dirs=tuple(settings.add_dirs),
        confine=settings.confined,
        secrets=SecretMatcher(settings.secret_patterns, client_rules_of(settings)),
    )
    runtime = SessionRuntime(settings, workspace)
    specs = tool_specs(settings)
    server = FastMCP(
        "filegate",
        version=__version__,
        instructions=instructions(specs),
        mask_error_details=True,
        on_duplicate="error",
        middleware=[Events(runtime)],
        request_state_security=_request_state_security(settings),
    )
    defer_session_state(server)  # no py-key-value import until session state is written
    for spec in specs:
        server.add_tool(FilegateTool.create(spec, runtime, settings.defer_tools))
    return server


def _request_state_security(settings: Settings) -> Any:
    """Replicas share ``--state-key`` to seal 2026-07-28 approval state (issue 13); without it
    fastmcp seals under a per-process key. The audience is the server's name either way."""
    if settings.state_key is None:
        return None
    from mcp.server.request_state import RequestStateSecurity

    return RequestStateSecurity(keys=[settings.state_key.get_secret_value()], audience="filegate")


class OneLineFormatter(logging.Formatter):
    """Every record's message escaped (SPEC §2.9): whatever a library or a caller put in it (a
    file name, a client's name, an error text), one record is one line of stderr, with no
    terminal control sequence and no undecodable character. A traceback, when one is logged,
    is escaped too (its last line is the exception's text, which can quote a file name): its
    line breaks show as ``\x0a`` on the record's one line."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = escape_record(record.message)
        return super().formatMessage(record)

    def format(self, record: logging.LogRecord) -> str:
        # logging joins the message, the traceback and the stack with line breaks; each part is
        # escaped already, so the only line breaks left are those joints.
        return super().format(record).replace("\n", " ")

    def formatException(self, ei: Any) -> str:
        return escape_record(super().formatException(ei))

    def formatStack(self, stack_info: str) -> str:
        return escape_record(super().formatStack(stack_info))


def configure_logging(level: str) -> None:
    """Logs go to stderr only: on stdio, stdout carries nothing but JSON-RPC."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLineFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in ("fastmcp", "mcp", "uvicorn", "uvicorn.error", "uvicorn.access", "httpx"):
        lg = logging.getLogger(name)
        lg.handlers[:] = []
        lg.propagate = True
        lg.setLevel(level)
    # Python's defaults already hide DeprecationWarning outside __main__; nothing is silenced
    # process-wide. One known, intended use is: notable events are sent as MCP log messages
    # (notify.py), which the SDK marks deprecated as of 2026-07-28 (per-request opt-in there).
    warnings.filterwarnings(
        "ignore",
        message="The logging capability is deprecated",
        category=UserWarning,  # the SDK's MCPDeprecationWarning; imported lazily, so by its base
        module=r"fastmcp\.server\.context",
    )
    # Any other warning becomes a log record: one escaped line on stderr, not a raw block.
    logging.captureWarnings(True)


def _recover_sets(settings: Settings) -> None:
    """Sets (ApplyPatch) a killed filegate process left mid-commit, rolled back (SPEC §10)."""
    from filegate.fsio.changeset import interrupted_sets, recover_sets
    from filegate.server.session import open_history

    history = open_history(settings)
    if history is None or not interrupted_sets():  # one folder listed: nothing else at a start
        return
    import asyncio

    for said in asyncio.run(recover_sets(history)):
        log.warning("history: %s", escape(said))


def serve(settings: Settings) -> None:
    """Run the server on the configured transport until it is stopped."""
    configure_logging(settings.log_level)
    from filegate.fsio.pending import sweep_pending_temps

    if swept := sweep_pending_temps():
        log.warning("removed %d temp file(s) left by a killed filegate write", swept)
    _recover_sets(settings)
    server = build_server(settings)
    # The start is over (cli.main paused the collector for it): what it built lives as long
    # as the process, so it is left out of every later collection; garbage from here on is
    # collected as usual.
    gc.freeze()
    gc.enable()
    if settings.transport == "stdio":
        from filegate.server.startup import announce
        from filegate.server.stdio import run_stdio

        announce(settings)
        run_stdio(server)
        return
    from filegate.server.http import run_http

    run_http(server, settings)
