"""Concurrency and load over real HTTP: many clients, many edits, the MCP Inspector's --load.

The server is a real `filegate --transport http` process (confined, as HTTP is by default, and
asking for approval through elicitation). Clients are real fastmcp clients in both protocol eras,
each with its own elicitation handler that records what it was asked.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from tests.conftest import text
from tests.fakes import Answers
from tests.server.served import inspector_command, inspector_missing
from tests.stress.procs import http_server, status
from tests.tooling import INSTALL_TIMEOUT_S, tool_missing

# Their writes are about something else: see tests/tools/test_read_guard.py for the guard.
# The Inspector may be installed from npm by the first test that needs it.
pytestmark = [pytest.mark.usefixtures("read_guard_off"), pytest.mark.timeout(INSTALL_TIMEOUT_S)]

# The Inspector's --load: calls and concurrency by default, and in the slow variant (the issue's).
LOAD_CALLS, LOAD_CONCURRENCY = 200, 50
SLOW_LOAD_CALLS = 20_000
LOAD_RUN_S = 3600  # hang guard on one Inspector load run
# RSS after the load may differ from RSS before it by at most this fraction.
RSS_TOLERANCE = 0.10
REJECTED = "The tool call is rejected by the user."


# --- 50 concurrent edits of one file -------------------------------------------------------


def _slot_edit(s: int) -> dict[str, Any]:
    return {"path": "slots.txt", "edit": {"old": f"slot-{s:02d}: todo", "new": f"slot-{s:02d}: done"}}


async def _fifty_edits(ws: Path, modes: list[str], *flags: str) -> list[Any]:
    """Five clients, ten concurrent edits each, all to one file: slot i todo -> done."""
    (ws / "slots.txt").write_text("".join(f"slot-{i:02d}: todo\n" for i in range(50)))
    with http_server(ws, *flags) as server:

        async def client_edits(c: int) -> list[Any]:
            async with Client(server.url, mode=modes[c], elicitation_handler=Answers("approve")) as client:
                edits = [
                    client.call_tool("StrReplaceFile", _slot_edit(s), raise_on_error=False, timeout=120)
                    for s in range(c * 10, c * 10 + 10)
                ]
                return list(await asyncio.gather(*edits))

        return [r for rs in await asyncio.gather(*(client_edits(c) for c in range(5))) for r in rs]


def check_all_done(ws: Path, results: list[Any]) -> None:
    errors = [text(r) for r in results if r.is_error]
    assert not errors, errors[:3]
    assert (ws / "slots.txt").read_text() == "".join(f"slot-{i:02d}: done\n" for i in range(50))


# What an asked-about edit may hear instead of landing: a newer question about the file came
# first, or the file changed under the answer (SPEC §6: no question holds a lock).
NOT_WRITTEN = ("newer write", "changed on disk", "changed 4 times")


def check_no_lost_update(ws: Path, results: list[Any]) -> None:
    """Each edit landed or said it wrote nothing; the file holds exactly the landed ones."""
    landed = {s for s, r in enumerate(results) if not r.is_error}
    refused = [text(r) for r in results if r.is_error]
    assert all(any(why in t for why in NOT_WRITTEN) for t in refused), refused[:3]
    assert landed, "no edit landed"
    expected = "".join(f"slot-{i:02d}: {'done' if i in landed else 'todo'}\n" for i in range(50))
    assert (ws / "slots.txt").read_text() == expected


@pytest.mark.slow
async def test_fifty_concurrent_approved_edits_from_clients_of_both_eras_lose_nothing(ws: Path) -> None:
    """No lock spans a question (SPEC §6): a newer question about the file supersedes an open
    one and the write's stale check refuses an edit made on old bytes, so some edits are
    refused, none is lost and none lands twice."""
    check_no_lost_update(ws, await _fifty_edits(ws, ["auto", "legacy", "auto", "legacy", "auto"]))


@pytest.mark.slow
async def test_fifty_concurrent_edits_with_auto_approval_lose_nothing(ws: Path) -> None:
    modes = ["auto", "legacy", "auto", "legacy", "auto"]
    check_all_done(ws, await _fifty_edits(ws, modes, "--approval", "auto"))


@pytest.mark.slow
async def test_fifty_concurrent_approved_edits_in_handshake_sessions_lose_nothing(ws: Path) -> None:
    check_no_lost_update(ws, await _fifty_edits(ws, ["legacy"] * 5))


@pytest.mark.slow
async def test_fifty_concurrent_approved_edits_on_2026_connections_lose_nothing(ws: Path) -> None:
    check_no_lost_update(ws, await _fifty_edits(ws, ["auto"] * 5))


# --- 10 clients, mixed reads and writes, their own approvals -------------------------------


async def _client_session(url: str, i: int, answers: Answers) -> dict[str, Any]:
    """Client i: reads, searches, lists, then writes and edits only its own files, all at once."""
    mode = "legacy" if i % 2 else "auto"
    mine = f"c{i:02d}"
    async with Client(url, mode=mode, elicitation_handler=answers) as client:

        async def go(tool: str, **args: Any) -> Any:
            return await client.call_tool(tool, args, raise_on_error=False, timeout=120)

        reads = await asyncio.gather(
            go("ReadFile", path="shared.txt"),
            go("Grep", pattern="shared", output_mode="content"),
            go("Glob", pattern="*.txt"),
            go("ReadFile", path="shared.txt", line_offset=-2),
        )
        writes = await asyncio.gather(
            *(go("WriteFile", path=f"{mine}-{k}.txt", content=f"{mine} wrote {k}\n") for k in range(3)),
            go("StrReplaceFile", path=f"{mine}-own.txt", edit={"old": "before", "new": f"after {mine}"}),
        )
    return {"mode": mode, "reads": reads, "writes": writes}


@pytest.mark.slow
async def test_ten_http_clients_at_once_keep_their_approvals_to_themselves(ws: Path) -> None:
    (ws / "shared.txt").write_text("".join(f"shared line {n}\n" for n in range(20)))
    for i in range(10):
        (ws / f"c{i:02d}-own.txt").write_text("before\n")
    # Even clients approve (for the session where there is one); odd clients reject everything.
    answers = [Answers("approve_for_session" if i % 4 == 1 else "approve" if i % 2 == 0 else "reject")
               for i in range(10)]  # fmt: skip
    answers[3] = Answers("reject")
    with http_server(ws) as server:
        outcomes = await asyncio.gather(*(_client_session(server.url, i, answers[i]) for i in range(10)))
    for i, (out, ans) in enumerate(zip(outcomes, answers, strict=True)):
        mine = f"c{i:02d}"
        read_errors = [text(r) for r in out["reads"] if r.is_error]
        assert not read_errors, (i, read_errors)
        # Every question a client was shown is about its own files: nothing crossed over.
        for message in ans.messages:
            assert all(f"`{mine}-" in line for line in message.splitlines() if "wants to" in line), (
                i,
                message,
            )
        if ans.decision == "reject":
            assert all(r.is_error and REJECTED in text(r) for r in out["writes"]), i
            assert len(ans.messages) == 4, (i, len(ans.messages))  # asked every time, never "approved"
            assert not any((ws / f"{mine}-{k}.txt").exists() for k in range(3))
            assert (ws / f"{mine}-own.txt").read_text() == "before\n"
        else:
            errors = [text(r) for r in out["writes"] if r.is_error]
            assert not errors, (i, errors)
            assert all((ws / f"{mine}-{k}.txt").read_text() == f"{mine} wrote {k}\n" for k in range(3))
            assert (ws / f"{mine}-own.txt").read_text() == f"after {mine}\n"
            if ans.decision == "approve_for_session" and out["mode"] == "legacy":
                assert len(ans.messages) <= 4  # a session may be asked fewer times, never more


# --- the MCP Inspector's load test ---------------------------------------------------------


def _inspector_load(
    url: str, ws: Path, tool: str, args: dict[str, Any], calls: int, concurrency: int
) -> dict[str, Any]:
    # Its roots name the workspace: the Inspector declares roots and offers an empty list when
    # none are set, and an empty list leaves an empty workspace (SPEC §2.8).
    entry = {"type": "streamable-http", "url": url, "roots": [{"uri": ws.as_uri(), "name": "ws"}]}
    config = ws.parent / "inspector-load.json"
    config.write_text(json.dumps({"mcpServers": {"filegate": entry}}))
    cmd = [inspector_command(), "--cli", "--config", str(config), "--server", "filegate",
           "--method", "tools/call", "--tool-name", tool,
           "--tool-args-json", json.dumps(args), "--load", "--load-requests", str(calls),
           "--load-concurrency", str(concurrency), "--format", "json", "-q"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=LOAD_RUN_S)
    found = re.search(r"\{.*\}\s*$", done.stdout, re.S)
    assert found, f"no summary from the Inspector: {done.stdout[-500:]} {done.stderr[-1000:]}"
    summary: dict[str, Any] = json.loads(found.group(0))["result"]
    return summary


def _needs_inspector() -> None:
    if missing := inspector_missing():
        tool_missing(missing)


async def _load(ws: Path, calls: int) -> dict[str, Any]:
    _needs_inspector()
    (ws / "a.txt").write_text("".join(f"line {n}: some text to read\n" for n in range(200)))
    with http_server(ws) as server:
        await asyncio.to_thread(
            _inspector_load, server.url, ws, "ReadFile", {"path": "a.txt"}, 100, 10
        )  # warm
        before = status(server.pid)["VmRSS"]
        summary = await asyncio.to_thread(
            _inspector_load,
            server.url,
            ws,
            "ReadFile",
            {"path": "a.txt", "n_lines": 50},
            calls,
            LOAD_CONCURRENCY,
        )
        after = status(server.pid)["VmRSS"]
    assert summary["requests"] == calls and summary["ok"] == calls, summary
    assert summary["errors"] == 0 and summary["toolErrors"] == 0, summary["errorMessages"][:3]
    growth = (after - before) / before
    assert abs(growth) <= RSS_TOLERANCE, f"RSS {before >> 20} MiB -> {after >> 20} MiB"
    return {**summary, "rss_before_mib": before >> 20, "rss_after_mib": after >> 20}


@pytest.mark.slow
async def test_inspector_load_over_http_has_no_errors_and_steady_memory(ws: Path) -> None:
    await _load(ws, LOAD_CALLS)


@pytest.mark.slow
@pytest.mark.timeout(LOAD_RUN_S + 300)
async def test_inspector_load_of_twenty_thousand_calls(ws: Path) -> None:
    summary = await _load(ws, SLOW_LOAD_CALLS)
    print(f"\nInspector --load: {summary}")
