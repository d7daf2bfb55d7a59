"""Clients nobody on this team wrote, over every transport filegate offers.

- the official `mcp` SDK's own ``ClientSession``: stdio and streamable HTTP, handshake era
  (``initialize``) and 2026-07-28 (``server/discover``);
- the MCP Inspector CLI (npm): ``tools/list --strict`` and a ``tools/call`` of each read tool,
  over stdio and HTTP with a bearer header;
- fastmcp's ``Client`` in both eras over HTTP with a token.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import ElicitResult, LoggingMessageNotificationParams
from mcp_types import LOG_LEVEL_META_KEY
from PIL import Image

from tests.conftest import FILEGATE, blocks, call, text
from tests.server.served import Served, http_filegate, inspector_missing, run_inspector
from tests.tooling import INSTALL_TIMEOUT_S, tool_missing

# The Inspector may be installed from npm by the first test that needs it.
# One xdist worker: the module's server starts once, not once a worker.
pytestmark = [pytest.mark.timeout(INSTALL_TIMEOUT_S), pytest.mark.xdist_group("interop-server")]

TOKEN = "interop-token"
ERAS = {"initialize": "2025-11-25", "discover": "2026-07-28"}
READ_TOOLS = ["ReadFile", "ReadMediaFile", "Glob", "Grep"]
# One call of each read tool as the Inspector CLI writes it (`--tool-arg key=value`).
INSPECTOR_CALLS: dict[str, list[str]] = {
    "ReadFile": ["path=a.txt"],
    "ReadMediaFile": ["path=red.png"],
    "Glob": ["pattern=sub/*.py"],
    "Grep": ["pattern=interop", "output_mode=content"],
}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = Path(os.path.realpath(tmp_path_factory.mktemp("interop")))
    (ws / "a.txt").write_text("interop line\n")
    (ws / "sub").mkdir()
    (ws / "sub" / "b.py").write_text("print('interop')\n")
    (ws / ".env").write_text("TOKEN=secret\n")
    Image.new("RGB", (8, 8), (200, 30, 30)).save(ws / "red.png")
    return ws


@pytest.fixture(scope="module")
def server(workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    with http_filegate(workspace, tmp_path_factory.mktemp("srv"), "--token", TOKEN) as served:
        yield served


# --- the official SDK's ClientSession ------------------------------------------------------


SessionOpener = Callable[..., AbstractAsyncContextManager[ClientSession]]


@asynccontextmanager
async def sdk_stdio(workspace: Path, **kw: Any) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=FILEGATE, args=["--workdir", str(workspace)])
    async with stdio_client(params) as (read, write), ClientSession(read, write, **kw) as s:
        yield s


def sdk_http(server: Served) -> SessionOpener:
    @asynccontextmanager
    async def opener(workspace: Path, **kw: Any) -> AsyncIterator[ClientSession]:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with (
            create_mcp_http_client(headers=headers) as http,
            streamable_http_client(server.url, http_client=http) as (read, write),
            ClientSession(read, write, **kw) as s,
        ):
            yield s

    return opener


@pytest.fixture(params=["stdio", "http"])
def sdk(request: pytest.FixtureRequest) -> SessionOpener:
    if request.param == "stdio":
        return sdk_stdio
    served: Served = request.getfixturevalue("server")
    return sdk_http(served)


@pytest.mark.parametrize("era", list(ERAS))
@pytest.mark.slow
async def test_official_sdk_session_lists_calls_every_read_tool_and_gets_log_messages(
    sdk: SessionOpener, workspace: Path, era: str
) -> None:
    logs: list[LoggingMessageNotificationParams] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async with sdk(workspace, logging_callback=on_log) as s:
        await getattr(s, era)()
        assert s.protocol_version == ERAS[era]
        names = [t.name for t in (await s.list_tools()).tools]
        assert names[:4] == READ_TOOLS
        r = await s.call_tool("ReadFile", {"path": "a.txt"})
        assert not r.is_error and r.structured_content is None
        assert blocks(r) == [  # one block: the lines, then the summary (SPEC §9)
            "     1\tinterop line\n1 lines read from file starting from line 1. Total lines in file: 1. End of file reached."
        ]
        r = await s.call_tool("ReadMediaFile", {"path": "red.png"})
        assert not r.is_error and [b.type for b in r.content].count("image") == 1
        r = await s.call_tool("Grep", {"pattern": "interop", "output_mode": "content"})
        assert not r.is_error and "a.txt:1:interop line" in r.content[0].text  # type: ignore[union-attr]
        r = await s.call_tool("ReadFile", {"path": "nope.txt"})
        assert r.is_error and r.content[0].text == "`nope.txt` does not exist."  # type: ignore[union-attr]

        # A Grep or Glob that skips a secret file tells the client so as a notice (Grep counts the
        # secrets it searched around whether or not they match: the count says nothing of their
        # content). 2026-07-28 makes log delivery a per-request opt-in (_meta); the handshake era
        # delivers everything.
        r = await s.call_tool("Glob", {"pattern": "sub/*.py"})
        assert not r.is_error and blocks(r) == ["sub/b.py\nFound 1 matches for pattern `sub/*.py`."]
        r = await s.call_tool("Glob", {"pattern": "*"})
        assert ".env" not in blocks(r)[0].split("\nFound ")[0]  # listed nowhere; the summary counts it
        assert [str(m.data) for m in logs] == (
            []
            if era == "discover"
            else [AnyWith("Grep left out 1 file(s)"), AnyWith("Glob left out 1 file(s)")]
        )
        r = await s.call_tool("Glob", {"pattern": "*"}, meta={LOG_LEVEL_META_KEY: "info"})
        assert not r.is_error
    assert [(m.level, m.logger) for m in logs] == [("notice", "filegate")] * (1 if era == "discover" else 3)
    assert "1 file(s) that may hold secrets" in str(logs[-1].data)


class AnyWith(str):
    """Equal to any string that contains it."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and str.__str__(self) in other

    __hash__ = str.__hash__


async def test_official_sdk_session_answers_an_elicitation_over_http(server: Served, workspace: Path) -> None:
    """Handshake era over HTTP: the server's elicitation/create reaches the client on its SSE
    stream, and the approved write lands."""
    asked: list[str] = []

    async def approve(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"decision": "approve"})

    async with sdk_http(server)(workspace, elicitation_callback=approve) as s:
        await s.initialize()
        r = await s.call_tool("WriteFile", {"path": "sdk-written.txt", "content": "hi\n"})
    assert not r.is_error, r.content
    assert len(asked) == 1 and "sdk-written.txt" in asked[0]
    assert (workspace / "sdk-written.txt").read_text() == "hi\n"


# --- the MCP Inspector CLI -----------------------------------------------------------------


def inspector_target(transport: str, workspace: Path, served: Served | None) -> list[str]:
    """The Inspector's session config for filegate, as a user writes it: its roots name the
    workspace. (The Inspector declares roots and offers an empty list when none are set, and
    an empty list leaves an empty workspace: SPEC §2.8, roots fail closed.)"""
    entry: dict[str, Any] = {"roots": [{"uri": workspace.as_uri(), "name": "workspace"}]}
    if transport == "stdio":
        entry |= {"command": FILEGATE, "args": ["--workdir", str(workspace)]}
    else:
        assert served is not None
        entry |= {
            "type": "streamable-http",
            "url": served.url,
            "headers": {"Authorization": f"Bearer {TOKEN}"},
        }
    config = workspace.parent / f"inspector-{transport}.json"
    config.write_text(json.dumps({"mcpServers": {"filegate": entry}}))
    return ["--config", str(config), "--server", "filegate"]


def last_json(text: str) -> Any:
    """The Inspector's JSON answer: its last line (it may print notes about its secret store first)."""
    return json.loads(text.strip().splitlines()[-1])


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.slow
def test_inspector_cli_lists_strictly_and_calls_every_read_tool(
    request: pytest.FixtureRequest, workspace: Path, transport: str
) -> None:
    missing = inspector_missing()
    if missing:
        tool_missing(missing)
    served = request.getfixturevalue("server") if transport == "http" else None
    target = inspector_target(transport, workspace, served)

    def run(job: str) -> tuple[str, Any]:
        if job == "list":
            return job, run_inspector(*target, "--method", "tools/list", "--strict")
        args = [a for kv in INSPECTOR_CALLS[job] for a in ("--tool-arg", kv)]
        return job, run_inspector(*target, "--method", "tools/call", "--tool-name", job, *args)

    # Each run starts a server (stdio) and node: all at once.
    with ThreadPoolExecutor(1 + len(READ_TOOLS)) as pool:
        runs = dict(pool.map(run, ["list", *READ_TOOLS]))
    listed = runs.pop("list")
    assert listed.returncode == 0, listed.stderr
    assert "Error: tool" not in listed.stderr, listed.stderr  # no error-severity finding
    listed_tools = json.loads(listed.stdout)["tools"]
    names = [t["name"] for t in listed_tools]
    assert [t["name"] for t in listed_tools if "outputSchema" in t] == []  # text only (SPEC §1)
    # This server offers every read tool (and the write tools after them).
    tools = [t for t in READ_TOOLS if t in names]
    assert tools == READ_TOOLS, names
    results = {}
    for tool in tools:
        assert runs[tool].returncode == 0, f"{tool}: {runs[tool].stderr}"
        results[tool] = json.loads(runs[tool].stdout)
    for tool, result in results.items():
        assert result["isError"] is False, (tool, result)
    # What the Inspector shows is the model's text: the lines, then the summary; no
    # structuredContent beside them (Claude Code and Codex would show only that, SPEC §1).
    assert results["ReadFile"]["content"] == [  # one block (SPEC §9)
        {
            "type": "text",
            "text": "     1\tinterop line\n"
            "1 lines read from file starting from line 1. Total lines in file: 1. End of file reached.",
        },
    ]
    assert [tool for tool, result in results.items() if "structuredContent" in result] == []
    assert results["ReadMediaFile"]["content"][1]["mimeType"] == "image/png"
    assert results["Glob"]["content"] == [
        {"type": "text", "text": "sub/b.py\nFound 1 matches for pattern `sub/*.py`."}
    ]
    assert "a.txt:1:interop line" in results["Grep"]["content"][0]["text"]


@pytest.mark.slow
def test_inspector_cli_reports_a_tool_error_as_such(workspace: Path, server: Served) -> None:
    missing = inspector_missing()
    if missing:
        tool_missing(missing)
    target = inspector_target("http", workspace, server)
    done = run_inspector(
        *target, "--method", "tools/call", "--tool-name", "ReadFile", "--tool-arg", "path=no.txt"
    )
    assert done.returncode == 5  # the Inspector's exit code for isError:true
    assert json.loads(done.stdout)["content"][0]["text"] == "`no.txt` does not exist."


@pytest.mark.parametrize("header", [[], ["--header", "Authorization: Bearer wrong"]])
@pytest.mark.slow
def test_inspector_cli_is_refused_without_the_right_token(server: Served, header: list[str]) -> None:
    missing = inspector_missing()
    if missing:
        tool_missing(missing)
    # --stored-auth-only: the Inspector would otherwise start an interactive OAuth flow.
    done = run_inspector(server.url, *header, "--method", "tools/list", "--stored-auth-only")
    assert done.returncode == 3
    assert last_json(done.stderr or done.stdout)["error"]["code"] == "auth_required"


# --- fastmcp's Client over HTTP ------------------------------------------------------------


async def test_fastmcp_client_calls_every_read_tool_over_http_with_a_token(server: Served, mode: str) -> None:
    async with Client(server.url, auth=TOKEN, mode=mode) as c:
        assert c.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        assert [t.name for t in await c.list_tools()][:4] == READ_TOOLS
        assert text(await call(c, "ReadFile", path="a.txt")) == (
            "     1\tinterop line\n\n1 lines read from file starting from line 1. "
            "Total lines in file: 1. End of file reached."
        )
        r = await call(c, "ReadMediaFile", path="red.png")
        assert not r.is_error and any(b.type == "image" for b in r.content)
        assert text(await call(c, "Glob", pattern="sub/*.py")).startswith("sub/b.py")
        r = await call(c, "Grep", pattern="interop", output_mode="content")
        assert "a.txt:1:interop line" in text(r)
