"""Notable events, told to the client as MCP log messages and to the operator on stderr.

A tool's Outcome flags the notable facts (never sent in the result: its text says them);
:func:`tell` turns each into one log message, with the same level whatever the tool:

| fact (Outcome)                    | MCP level | why                                         |
|-----------------------------------|-----------|---------------------------------------------|
| ``skipped_sensitive`` > 0         | notice    | a policy acted: files were hidden on purpose |
| ``skipped_hidden`` > 0            | notice    | the same, by a client rule (SPEC §8.5)       |
| ``partial``                       | info      | the answer is partial, the model is told how |
| ``timed_out``                     | warning   | the search stopped early, results partial    |

The model already reads all of this in the result text; the log lines are for the human
watching the client's log. Clients filter them with ``logging/setLevel``. On stderr the
operator sees what was sent (``--log-level INFO``), plus one line per client session and per
failed call. The client's name and version and a failed call's text are escaped (SPEC §2.9):
a client or a file name cannot forge a log line. Every tool result passes
:func:`~filegate.server.render.safe_result` on its way out, whichever code built it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Literal

from fastmcp.server.middleware import Middleware, MiddlewareContext
from fastmcp.tools import ToolResult
from fastmcp.tools.base import InputRequiredToolResult
from mcp.types import CallToolRequestParams, InitializeRequest

from filegate.policy.escape import escape
from filegate.server.call import CallContext
from filegate.server.render import safe_result
from filegate.tools.outcome import Outcome

log = logging.getLogger("filegate")

Level = Literal["debug", "info", "notice", "warning", "error"]

# Longest piece of a failed call's message put on stderr (the model got all of it).
ERROR_EXCERPT = 200


def events(tool: str, outcome: Outcome) -> list[tuple[Level, str]]:
    """The log messages a successful result's notable facts call for, in a fixed order."""
    found: list[tuple[Level, str]] = []
    if outcome.is_error:
        return found
    tool = escape(tool)
    if (skipped := outcome.skipped_sensitive) > 0:
        found.append(("notice", f"{tool} left out {skipped} file(s) that may hold secrets."))
    if (hidden := outcome.skipped_hidden) > 0:
        found.append(("notice", f"{tool} left out {hidden} file(s) hidden from AI tools by client rules."))
    if outcome.timed_out:
        found.append(("warning", f"{tool} stopped at its time limit; the results are partial."))
    if outcome.partial:
        found.append(("info", f"{tool} returned part of its output; the result says how to page."))
    return found


async def tell(call: CallContext, tool: str, outcome: Outcome) -> None:
    """Each notable event of ``outcome`` as an MCP log message to the client (and stderr)."""
    for level, text in events(tool, outcome):
        try:
            await call.ctx.log(text, level=level, logger_name="filegate")
        except Exception:  # a client that went away must not fail the call
            log.debug("log notification failed", exc_info=True)


def _first_text(result: ToolResult) -> str:
    for block in result.content:
        text = getattr(block, "text", None)
        if isinstance(text, str):
            return escape(text.split("\n", 1)[0][:ERROR_EXCERPT]) if text else ""
    return ""


def log_failure(tool: str, result: ToolResult) -> None:
    """The operator's line for a failed call."""
    log.info("%s failed: %s", escape(tool), _first_text(result))


class NotableEvents(Middleware):
    async def on_initialize(
        self,
        context: MiddlewareContext[InitializeRequest],
        call_next: Callable[[MiddlewareContext[InitializeRequest]], Any],
    ) -> Any:
        result = await call_next(context)
        params = context.message.params
        info = params.client_info
        log.info(
            "client %s %s connected (protocol %s)",
            escape(str(info.name)),
            escape(str(info.version)),
            escape(str(getattr(result, "protocol_version", params.protocol_version))),
        )
        return result

    async def on_call_tool(
        self,
        context: MiddlewareContext[CallToolRequestParams],
        call_next: Callable[[MiddlewareContext[CallToolRequestParams]], Any],
    ) -> Any:
        result = await call_next(context)
        if not isinstance(result, ToolResult) or isinstance(result, InputRequiredToolResult):
            return result  # an input-required round: nothing has happened yet
        result = safe_result(result)
        if result.is_error:
            log_failure(context.message.name, result)
        return result
