"""The installed `filegate` script over stdio and streamable HTTP, in both protocol eras."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from mcp.types import Implementation

from tests.conftest import FILEGATE, http_server, stdio_transport, text
from tests.rawstdio import raw_filegate

# Both eras; the 2026-07-28 twin in the slow set (the handshake era is what agents speak over
# stdio today; test_interop speaks 2026-07-28 over HTTP in the default set).
ERAS_NEW_SLOW = pytest.mark.parametrize("mode", ["legacy", pytest.param("auto", marks=pytest.mark.slow)])


@ERAS_NEW_SLOW
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


@ERAS_NEW_SLOW
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


def test_stdout_carries_only_json_rpc(ws: Path, tmp_path: Path) -> None:
    stderr = tmp_path / "stderr"
    with raw_filegate(ws, "--log-level", "DEBUG", initialize=False, stderr=stderr) as client:
        init = client.initialize()
        listed = client.reply(client.request("tools/list", {}))
        status, rest = client.end()
    assert status == 0, stderr.read_text()
    assert rest == b""  # nothing after the replies, up to the end of stdout
    assert [json.loads(line).get("id") for line in client.lines] == [1, 2]  # nor before
    assert "DEBUG" in stderr.read_text()  # logs went to stderr
    assert init["result"]["serverInfo"]["name"] == "filegate"
    assert {t["name"] for t in listed["result"]["tools"]} >= {"ReadFile", "Glob", "Grep"}


def test_no_env_file_is_read_from_the_users_directory(ws: Path) -> None:
    (ws / ".env").write_text("FASTMCP_LOG_LEVEL=NOPE\nFILEGATE_LOG_LEVEL=NOPE\n")
    proc = subprocess.run([FILEGATE, "--workdir", str(ws)], input="", capture_output=True,
                          text=True, timeout=60, cwd=ws)  # fmt: skip
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_fastmcp_makes_no_telemetry_spans_unless_the_operator_asks() -> None:
    """filegate exports no traces: fastmcp's per-call span helpers are off by default (they
    cost every call), and an operator's own FASTMCP_TELEMETRY_MODE still wins."""
    probe = "import filegate.server, fastmcp; print(fastmcp.settings.telemetry_mode)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("FASTMCP_")}
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "off", out.stderr
    env["FASTMCP_TELEMETRY_MODE"] = "native"
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "native", out.stderr


@pytest.mark.slow
async def test_an_undecodable_file_name_never_stops_the_stdio_server(ws: Path, mode: str) -> None:
    """A name that is not UTF-8 (old archives) reached JSON as a lone surrogate and the stdio
    writer died on the model's first Glob (issue 18 item 2). Every answer comes, and the
    server is still up for the next call."""
    os.makedirs(os.fsencode(ws) + b"/d\xe9p", exist_ok=True)
    (Path(os.fsdecode(os.fsencode(ws) + b"/caf\xe9.py"))).write_text("print('caf')\n")
    (Path(os.fsdecode(os.fsencode(ws) + b"/d\xe9p/x\xff.txt"))).write_text("print('deep')\n")
    (ws / "plain.txt").write_text("still here\n")
    async with Client(stdio_transport(ws), mode=mode) as c:
        for tool, args in [
            ("Glob", {"pattern": "*"}),
            ("Glob", {"pattern": "**/*"}),
            ("Grep", {"pattern": "print"}),
            ("Grep", {"pattern": "print", "output_mode": "content"}),
            ("Grep", {"pattern": "print", "output_mode": "count_matches"}),
            ("ReadFile", {"path": "caf\\xe9.py"}),
            ("ReadFile", {"path": "d\\xe9p"}),
        ]:
            r = await c.call_tool(tool, args, raise_on_error=False, timeout=30)
            assert r.structured_content is None  # text only (SPEC §1)
            shown = json.dumps([b.model_dump(mode="json") for b in r.content])
            assert "\\udc" not in shown and "\ufffd" not in shown, (tool, shown)
        r = await c.call_tool("ReadFile", {"path": "plain.txt"}, timeout=30)
        assert "still here" in text(r)


async def test_log_lines_cannot_be_forged_by_a_client_name_or_a_path(ws: Path, tmp_path: Path) -> None:
    """clientInfo.name and error texts with LF, CR and ESC: each record stays one line of
    stderr, with no control character in it (SPEC §2.9, §6; issue 18 item 9)."""
    name = "evil\n2026-01-01 00:00:00,000 INFO filegate: FORGED\r\x1b[2K"
    stderr = tmp_path / "stderr.log"
    transport = StdioTransport(
        FILEGATE,
        ["--workdir", str(ws), "--log-level", "INFO"],
        cwd=str(ws),
        keep_alive=False,
        log_file=stderr,
    )
    info = Implementation(name=name, version="1\n2")
    async with Client(transport, mode="legacy", client_info=info) as c:
        await c.call_tool("ReadFile", {"path": "no\nFORGED\x1b[31m.txt"}, raise_on_error=False)
        await c.call_tool("Glob", {"pattern": "x", "directory": "FORGED\u2028\u202e/"}, raise_on_error=False)
    log = stderr.read_text()
    assert "client evil\\x0a2026-01-01" in log  # the name is there, escaped
    for line in log.splitlines():
        assert not line.startswith(("FORGED", "2026-01-01")), line
        assert not any(ch in line for ch in "\x1b\r\u2028\u202e"), repr(line)
    assert log.count("FORGED") >= 2


@pytest.mark.slow
def test_warnings_are_not_silenced_process_wide_and_each_is_one_escaped_log_line() -> None:
    """configure_logging used to ignore every DeprecationWarning in the process; now only the
    one named, intended use is filtered, and any other warning is a one-line log record."""
    probe = (
        "import warnings\n"
        "from filegate.server.app import configure_logging\n"
        "before = list(warnings.filters)\n"
        "configure_logging('WARNING')\n"
        "added = [f for f in warnings.filters if f not in before]\n"
        "print([(f[0], f[1] and f[1].pattern, f[2].__name__, f[3] and f[3].pattern) for f in added])\n"
        "warnings.warn('forged\\nFAKE LINE\\x1b[2K', UserWarning)\n"
    )
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == (
        "[('ignore', 'The logging capability is deprecated', 'UserWarning', 'fastmcp\\\\.server\\\\.context')]"
    )
    (line,) = r.stderr.splitlines()
    assert "WARNING py.warnings:" in line and "forged\\x0aFAKE LINE\\x1b[2K" in line
