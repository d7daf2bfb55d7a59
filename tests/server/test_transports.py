"""The installed `filegate` script over stdio and streamable HTTP, in both protocol eras."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from fastmcp import Client

from tests.conftest import FILEGATE, http_server, stdio_transport, text


async def test_stdio_serves_the_read_tools(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("over stdio\n")
    async with Client(stdio_transport(ws), mode=mode) as c:
        assert c.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        r = await c.call_tool("ReadFile", {"path": "a.txt"})
        assert "over stdio" in text(r)
        r = await c.call_tool("Glob", {"pattern": "*.txt"})
        assert text(r).startswith("a.txt")
        r = await c.call_tool("Grep", {"pattern": "stdio", "output_mode": "content"})
        assert text(r).startswith("a.txt:1:over stdio")


async def test_http_serves_the_read_tools_and_confines_by_default(ws: Path, outside: Path, mode: str) -> None:
    (ws / "a.txt").write_text("over http\n")
    with http_server(ws) as url:
        async with Client(url, mode=mode) as c:
            r = await c.call_tool("ReadFile", {"path": "a.txt"})
            assert "over http" in text(r)
            r = await c.call_tool("ReadFile", {"path": str(outside / "secret.txt")}, raise_on_error=False)
            assert r.is_error and "outside the workspace" in text(r) and "OUTSIDE" not in text(r)
            r = await c.call_tool("Grep", {"pattern": "http"})
            assert text(r).startswith("a.txt")


def test_stdout_carries_only_json_rpc(ws: Path) -> None:
    init = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "0"}},
    }  # fmt: skip
    lines = [json.dumps(init), json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
             json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})]  # fmt: skip
    proc = subprocess.Popen(
        [FILEGATE, "--workdir", str(ws), "--log-level", "DEBUG"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdin and proc.stdout
    proc.stdin.write("\n".join(lines) + "\n")
    proc.stdin.flush()
    replies = [proc.stdout.readline(), proc.stdout.readline()]
    proc.stdin.close()
    proc.wait(30)
    rest = proc.stdout.read()
    assert rest.strip() == ""  # nothing but the two replies on stdout
    assert proc.stderr and "DEBUG" in proc.stderr.read()  # logs went to stderr
    out = [json.loads(line) for line in replies]
    assert [m.get("id") for m in out] == [1, 2]
    assert out[0]["result"]["serverInfo"]["name"] == "filegate"
    assert {t["name"] for t in out[1]["result"]["tools"]} >= {"ReadFile", "Glob", "Grep"}


def test_no_env_file_is_read_from_the_users_directory(ws: Path) -> None:
    (ws / ".env").write_text("FASTMCP_LOG_LEVEL=NOPE\nFILEGATE_LOG_LEVEL=NOPE\n")
    proc = subprocess.run([FILEGATE, "--workdir", str(ws)], input="", capture_output=True,
                          text=True, timeout=60, cwd=ws)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
