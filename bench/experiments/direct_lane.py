"""PROTOTYPE, not part of filegate: how fast could stdio go if tools/call skipped fastmcp?

filegate's stdio throughput on small reads is bounded by fastmcp's per-request machinery
(dispatcher task, RequestStateBoundary, middleware chain, visibility state lookup, telemetry
spans, tool lookup): ~75% of the event loop's samples under load (bench/README.md). This
script runs the real server, except that a `tools/call` of ReadFile is answered straight from
the stdio reader: JSON in, filegate's own ReadFile handler, render, JSON out. Everything
else (initialize, tools/list, other tools) still goes through fastmcp.

It skips what a real direct lane would have to keep: cancellation, progress and log
notifications, roots, the 2026-07-28 request envelope, the shutdown gate, error masking.
So it measures a ceiling, for a decision, not a design.

    ../shared/tools/inspector --cli .venv/bin/python bench/experiments/direct_lane.py \\
        --workdir DIR --method tools/call --tool-name ReadFile --tool-arg path=FILE \\
        --load --load-requests 2000 --load-concurrency 10
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import anyio

import filegate.server.stdio as stdio
from filegate.cli import parse_settings
from filegate.server.app import build_server, configure_logging
from filegate.server.render import render
from filegate.tools.outcome import SilentReporter, ToolEnv
from filegate.tools.read_file import ReadFileParams, read_file

settings = parse_settings(sys.argv[1:])
configure_logging(settings.log_level)
server = build_server(settings)
writers: list[Any] = []
envs: list[ToolEnv] = []
_writer_init = stdio._Writer.__init__
_next_line = stdio._LineReader.__anext__


def _remember_writer(self: Any, fd: int, loop: asyncio.AbstractEventLoop) -> None:
    _writer_init(self, fd, loop)
    writers.append(self)


async def _answer(msg: dict[str, Any]) -> None:
    if not envs:
        tool: Any = await server.get_tool("ReadFile")
        envs.append(ToolEnv(workspace=tool._runtime.workspace, approver=None, reporter=SilentReporter()))  # type: ignore[arg-type]
    outcome = await read_file(ReadFileParams.model_validate(msg["params"]["arguments"]), envs[0])
    result = render(outcome)
    body = {"jsonrpc": "2.0", "id": msg["id"], "result": {
        "content": [c.model_dump(mode="json", exclude_none=True) for c in result.content],
        "isError": False}}  # fmt: skip
    await writers[0].write(json.dumps(body, separators=(",", ":")) + "\n")
    await writers[0].flush()


async def _next(self: Any) -> str:
    while True:
        line: str = await _next_line(self)
        if '"tools/call"' in line and '"ReadFile"' in line:
            asyncio.get_running_loop().create_task(_answer(json.loads(line)))
            continue
        return line


stdio._Writer.__init__ = _remember_writer  # type: ignore[method-assign]
stdio._LineReader.__anext__ = _next  # type: ignore[method-assign]
anyio.run(stdio.run_stdio_async, server)
