"""``filegate check``: start filegate as a client does, list its tools, read one file, and
print what it saw — the first thing to run after installing, before any client is involved.

The server is this very ``filegate`` (the command ``filegate install`` writes into a client's
configuration), started over stdio by a real MCP client. Without ``--workdir`` it serves a
scratch folder holding one file; with it, it reads the first file Glob finds at that folder's
top. Nothing is written. Exit 0 when the round trip worked and the server named no problem.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from filegate.policy.escape import escape, escape_record

# A hang guard for the whole round trip (a cold start takes about a second).
CHECK_TIMEOUT_S = 120.0
HELLO = "hello from filegate\n"
SHOWN_LINES = 5


def check(server: Sequence[str], folder: Path | None) -> int:
    """``server``: the command line that starts this filegate (what ``filegate install``
    writes); ``folder``: the folder to serve, or None for a scratch one holding one file."""
    if folder is not None:
        return run_check([*server, "--workdir", str(folder)], scratch=False)
    with tempfile.TemporaryDirectory(prefix="filegate-check-") as tmp:
        (Path(tmp) / "hello.txt").write_text(HELLO)
        return run_check([*server, "--workdir", tmp], scratch=True)


def run_check(command: list[str], scratch: bool) -> int:
    import anyio

    print(f"Starting {escape(' '.join(command))} over stdio, as a client does:")
    with tempfile.TemporaryDirectory(prefix="filegate-check-log-") as logs:
        log = Path(logs) / "stderr"
        try:
            seen = anyio.run(_round_trip, command, log, scratch)
        except Exception as exc:
            said = _read(log)
            print(f"  the server said: {said}" if said else "  the server said nothing on stderr")
            why = escape(str(exc) or type(exc).__name__)
            sys.stderr.write(f"filegate check: error: the round trip failed ({why})\n")
            return 1
        said = _read(log)
    startup = said.splitlines()[0] if said else ""
    print(f"  start-up line: {startup or '(none)'}")
    print(f"  tools listed: {', '.join(seen['tools'])}")
    print(f"  {seen['read_call']}:")
    for line in seen["read"].splitlines():
        print(f"    {line}".rstrip())
    if "PROBLEM:" in startup:
        sys.stderr.write("filegate check: error: the server named a problem in its start-up line (above)\n")
        return 1
    if seen["failed"]:
        sys.stderr.write("filegate check: error: the read failed (above)\n")
        return 1
    print("filegate works. Next: filegate install CLIENT (see filegate install --help).")
    return 0


async def _round_trip(command: list[str], log: Path, scratch: bool) -> dict[str, Any]:
    import anyio

    with anyio.fail_after(CHECK_TIMEOUT_S):
        return await _talk(command, log, scratch)


async def _talk(command: list[str], log: Path, scratch: bool) -> dict[str, Any]:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    transport = StdioTransport(command[0], command[1:], env=dict(os.environ), keep_alive=False, log_file=log)
    async with Client(transport) as client:
        tools = [t.name for t in await client.list_tools()]
        paths = ["hello.txt"] if scratch else await _top_files(client)
        if not paths:
            return {"tools": tools, "read_call": "Glob found no file at the top", "read": "", "failed": False}
        for path in paths:  # the first the server reads as text (an image or a binary is refused)
            result = await client.call_tool(
                "ReadFile", {"path": path, "n_lines": SHOWN_LINES}, raise_on_error=False
            )
            if not result.is_error:
                break
    text = "\n".join(getattr(block, "text", "") for block in result.content)
    call = f"ReadFile(path={path!r}, n_lines={SHOWN_LINES}) answered"
    return {"tools": tools, "read_call": call, "read": text, "failed": result.is_error}


async def _top_files(client: Any, most: int = 5) -> list[str]:
    """The first few files Glob lists at the folder's top (its output is one name a line, then
    a blank line and its summary)."""
    result = await client.call_tool("Glob", {"pattern": "*", "include_dirs": False}, raise_on_error=False)
    if result.is_error:
        return []
    lines = "\n".join(getattr(block, "text", "") for block in result.content).split("\n")
    blank = lines.index("") if "" in lines else 0
    return lines[:blank][:most]


def _read(log: Path) -> str:
    try:
        return "\n".join(escape_record(line) for line in log.read_text(errors="replace").splitlines())
    except OSError:
        return ""
