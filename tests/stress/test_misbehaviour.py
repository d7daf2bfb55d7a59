"""Clients that misbehave: vanish mid-call, never answer, or tamper with a 2026-07-28 answer.

After a client disappears, its rg children die, the file it was changing holds the old or the
new content, and the next client is served — nothing waits for an answer that will never come.
An answer sent for one operation never approves another, however the request state is altered.
"""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.elicitation import ElicitResult
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult as WireElicitResult
from mcp.types import InputRequiredResult, ListRootsResult

from tests.conftest import connect, make_server, text
from tests.stress.procs import Zygote, http_server, rg_processes, wait_until

# Their writes are about something else: see tests/tools/test_read_guard.py for the guard.
pytestmark = pytest.mark.usefixtures("read_guard_off")

# Hang guards (not timings): how long a vanished client's leftovers may take to go, well under
# Grep's 20 s timeout where the point is that they go *because* the client went.
GONE_S = 10.0
TERA = 1 << 40  # a sparse file rg reads for minutes
REJECTED = "The tool call is rejected by the user."


def _tera(ws: Path) -> None:
    (ws / "small.txt").write_text("a small text file\n")
    with open(ws / "tera.txt", "wb") as f:
        f.write(b"a line of text\n" * 2000)  # text as far as the type sniffer looks
        f.truncate(TERA)


def _marker(tag: str) -> str:
    return f"never-found-{tag}-{os.getpid()}-{time.monotonic_ns()}"


def _exited(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0]
    except (OSError, IndexError):
        return True
    return state == "Z"


# --- stdio: the client closes its pipes ----------------------------------------------------


def test_stdio_pipes_closed_mid_grep_kill_rg_and_end_the_server(zygote: Zygote, ws: Path) -> None:
    _tera(ws)
    server = zygote.spawn(ws)
    marker = _marker("stdio")
    server.call("Grep", {"pattern": marker, "path": "tera.txt"})
    assert wait_until(lambda: bool(rg_processes(marker)), GONE_S), "rg never started"
    server.close_pipes()
    assert wait_until(lambda: not rg_processes(marker), GONE_S), "rg outlived its client"
    assert wait_until(lambda: _exited(server.pid), GONE_S), "the server outlived its client"


def test_stdio_pipes_closed_while_a_write_awaits_approval_write_nothing(zygote: Zygote, ws: Path) -> None:
    (ws / "f.txt").write_text("one\ntwo\n")
    server = zygote.spawn(ws, capabilities={"elicitation": {}})  # --approval ask: it will ask
    server.call("StrReplaceFile", {"path": "f.txt", "edit": {"old": "one", "new": "ONE"}})
    asked = server.next_request()
    assert asked["method"] == "elicitation/create"
    server.close_pipes()  # the client goes away instead of answering
    assert wait_until(lambda: _exited(server.pid), GONE_S)
    assert (ws / "f.txt").read_text() == "one\ntwo\n"
    assert [p.name for p in ws.iterdir()] == ["f.txt"]


def test_stdio_pipes_closed_mid_write_leave_old_or_new(zygote: Zygote, ws: Path) -> None:
    old, new = "old\n" * 200_000, "new!\n" * 300_000
    (ws / "big.txt").write_text(old)
    server = zygote.spawn(ws, "--approval", "auto")
    for k in range(6):
        server.call("WriteFile", {"path": "big.txt", "content": new if k % 2 == 0 else old})
    time.sleep(0.05)
    server.close_pipes()
    assert wait_until(lambda: _exited(server.pid), GONE_S)
    assert (ws / "big.txt").read_text() in (old, new)
    assert [p.name for p in ws.iterdir()] == ["big.txt"]
    # The next server reads the file and writes it.
    again = zygote.spawn(ws, "--approval", "auto")
    reply = again.reply(again.call("WriteFile", {"path": "big.txt", "content": "after\n"}))
    assert not reply["result"].get("isError"), reply
    again.close_pipes()
    assert (ws / "big.txt").read_text() == "after\n"


# --- HTTP: the client's connection drops -----------------------------------------------------

DROPPED_CLIENT = r"""
import asyncio, sys
from fastmcp import Client
async def main():
    async with Client(sys.argv[1], mode=sys.argv[2]) as c:
        print("connected", flush=True)
        await c.call_tool("Grep", {"pattern": sys.argv[3], "path": "tera.txt"}, raise_on_error=False)
asyncio.run(main())
"""


def check_drop_mid_grep(url: str, mode: str, marker: str) -> None:
    """A client process starts a long Grep and is SIGKILLed: its TCP connection just drops."""
    client = subprocess.Popen(
        [sys.executable, "-c", DROPPED_CLIENT, url, mode, marker], stdout=subprocess.PIPE
    )
    try:
        assert client.stdout is not None and client.stdout.readline() == b"connected\n"
        assert wait_until(lambda: bool(rg_processes(marker)), GONE_S), "rg never started"
    finally:
        client.kill()
        client.wait()
        if client.stdout is not None:
            client.stdout.close()


@pytest.mark.slow
async def test_http_connection_dropped_mid_grep_kills_rg_at_once_on_2026_connections(ws: Path) -> None:
    _tera(ws)
    with http_server(ws) as server:  # Grep's own 20 s timeout: rg must go long before it
        marker = _marker("http-modern")
        await asyncio.to_thread(check_drop_mid_grep, server.url, "auto", marker)
        assert wait_until(lambda: not rg_processes(marker), GONE_S), "rg outlived the dropped request"
        async with Client(server.url) as c:
            r = await c.call_tool("Grep", {"pattern": "text", "path": "small.txt"}, raise_on_error=False)
            assert not r.is_error, text(r)


@pytest.mark.slow
async def test_http_connection_dropped_mid_grep_in_a_handshake_session_ends_rg_by_the_timeout(
    ws: Path,
) -> None:
    """A handshake-era session outlives a dropped connection (the client may resume its stream),
    so a disconnect is not a cancellation (MCP spec); rg still ends, at Grep's timeout."""
    _tera(ws)
    with http_server(ws, grep_timeout=1.5) as server:
        marker = _marker("http-legacy")
        await asyncio.to_thread(check_drop_mid_grep, server.url, "legacy", marker)
        assert wait_until(lambda: not rg_processes(marker), GONE_S), "rg outlived its timeout"
        async with Client(server.url, mode="legacy") as c:
            r = await c.call_tool("Grep", {"pattern": "text", "path": "small.txt"}, raise_on_error=False)
            assert not r.is_error, text(r)


@pytest.mark.slow
async def test_http_connection_dropped_mid_grep_in_a_handshake_session_real_timeout(ws: Path) -> None:
    _tera(ws)
    with http_server(ws) as server:
        marker = _marker("http-legacy-20s")
        await asyncio.to_thread(check_drop_mid_grep, server.url, "legacy", marker)
        assert wait_until(lambda: not rg_processes(marker), 30.0), "rg outlived Grep's 20 s timeout"


ASKED_THEN_KILLED = r"""
import asyncio, sys
from fastmcp import Client
async def never(message, response_type, params, context):
    print("asked", flush=True)
    await asyncio.Event().wait()
async def main():
    async with Client(sys.argv[1], mode="legacy", elicitation_handler=never) as c:
        await c.call_tool("WriteFile", {"path": "f.txt", "content": "never approved"}, raise_on_error=False)
asyncio.run(main())
"""


@pytest.mark.slow
def test_a_handshake_question_is_cancelled_when_its_clients_stream_closes(ws: Path, tmp_path: Path) -> None:
    """SPEC §6: the question goes out on the call's stream; once that closes (the client was
    killed) nothing can answer it, so the server gives it up at once, not after 600 s."""
    from tests.conftest import FILEGATE, free_port, wait_ready

    port = free_port()
    log_path = tmp_path / "server.log"
    with open(log_path, "wb") as log_file:
        server = subprocess.Popen(
            [FILEGATE, "--transport", "http", "--port", str(port), "--workdir", str(ws)],
            stdout=subprocess.DEVNULL,
            stderr=log_file,
        )
    client: subprocess.Popen[bytes] | None = None
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        wait_ready(server, port, log_path)  # its readiness signal: no start-up guess (was 10 s)
        client = subprocess.Popen([sys.executable, "-c", ASKED_THEN_KILLED, url], stdout=subprocess.PIPE)
        assert client.stdout is not None and client.stdout.readline() == b"asked\n"
        client.kill()
        client.wait()
        gone = b"(approval: client-gone)"
        assert wait_until(lambda: gone in log_path.read_bytes(), GONE_S), log_path.read_text()[-2000:]
    finally:
        if client is not None:
            if client.poll() is None:
                client.kill()
                client.wait()
            if client.stdout is not None:
                client.stdout.close()
        server.terminate()
        server.wait(15)
    assert not (ws / "f.txt").exists()


# --- a client that never answers ------------------------------------------------------------


async def _never(message: str, response_type: Any, params: Any, context: Any) -> Any:
    await asyncio.Event().wait()  # the user walked away


async def _approve(message: str, response_type: Any, params: Any, context: Any) -> Any:
    return ElicitResult(action="accept", content={"decision": "approve"})


async def test_a_client_that_never_answers_does_not_block_other_clients_writes(ws: Path) -> None:
    """No lock is held while a question is open (SPEC §6): another client's write of the same
    file is asked at once and lands; the open question is superseded, so its late approval
    writes nothing and says so. (It used to hold the file's lock for up to ASK_TIMEOUT_S.)"""
    (ws / "f.txt").write_text("one\ntwo\n")
    asked, release = asyncio.Event(), asyncio.Event()

    async def late(message: str, response_type: Any, params: Any, context: Any) -> Any:
        asked.set()
        await release.wait()  # the user comes back after the other write landed
        return ElicitResult(action="accept", content={"decision": "approve"})

    server = make_server(ws)
    async with (
        Client(server, mode="legacy", elicitation_handler=late) as stalled,
        Client(server, mode="legacy", elicitation_handler=_approve) as other,
    ):
        pending = asyncio.create_task(
            stalled.call_tool(
                "StrReplaceFile",
                {"path": "f.txt", "edit": {"old": "one", "new": "ONE"}},
                raise_on_error=False,
            )
        )
        try:
            await asyncio.wait_for(asked.wait(), GONE_S)
            r = await other.call_tool(
                "StrReplaceFile", {"path": "f.txt", "edit": {"old": "two", "new": "TWO"}},
                raise_on_error=False, timeout=GONE_S,
            )  # fmt: skip
            release.set()
            stalled_result = await asyncio.wait_for(pending, GONE_S)
        finally:
            pending.cancel()
    assert not r.is_error, text(r)
    assert (ws / "f.txt").read_text() == "one\nTWO\n"
    assert stalled_result.is_error and "newer write" in text(stalled_result), text(stalled_result)


# --- 2026-07-28: answers that do not belong to the operation --------------------------------


def _approve_answer() -> dict[str, Any]:
    return {"approval": WireElicitResult(action="accept", content={"decision": "approve"})}


async def _ask(client: Client[Any], tool: str, args: dict[str, Any]) -> InputRequiredResult:
    first = await client.session.call_tool(name=tool, arguments=args, allow_input_required=True)
    assert isinstance(first, InputRequiredResult) and first.request_state, first
    return first


async def _retry(
    client: Client[Any], tool: str, args: dict[str, Any], state: str | None, answers: dict[str, Any]
) -> Any:
    return await client.session.call_tool(
        name=tool, arguments=args, input_responses=answers, request_state=state, allow_input_required=True
    )


def _refused_or_asked_again(outcome: Any) -> bool:
    """What a wrong answer may get: the SDK's refusal (MCPError), a new question, or a rejection."""
    if isinstance(outcome, MCPError):
        return "requestState" in str(outcome) or "request_state" in str(outcome)
    if isinstance(outcome, InputRequiredResult):
        return True
    return bool(getattr(outcome, "is_error", False))


async def _outcome(coro: Any) -> Any:
    try:
        return await coro
    except MCPError as exc:
        return exc


def _flip(state: str) -> list[str]:
    """Tampered copies of a sealed state: a flipped bit at the start, middle and end, cut, padded."""
    raw = bytearray(state.encode())
    out = []
    for at in (0, len(raw) // 2, len(raw) - 2):
        copy = bytearray(raw)
        copy[at] ^= 0x01
        out.append(copy.decode("latin-1"))
    out += [state[:-8], state + "AAAA", base64.b64encode(b'{"v":1}').decode()]
    return out


async def test_tampered_request_states_never_approve_a_write(ws: Path) -> None:
    args = {"path": "a.txt", "content": "APPROVED?\n"}
    async with connect(ws, "auto", client_elicitation_handler=_approve) as c:
        first = await _ask(c, "WriteFile", args)
        for tampered in _flip(first.request_state or ""):
            outcome = await _outcome(_retry(c, "WriteFile", args, tampered, _approve_answer()))
            assert _refused_or_asked_again(outcome), (tampered, outcome)
    assert not (ws / "a.txt").exists()


async def test_an_answer_for_one_tool_cannot_approve_another_on_the_same_file(ws: Path) -> None:
    (ws / "a.txt").write_text("one\n")
    edit = {"path": "a.txt", "edit": {"old": "one", "new": "two"}}
    write = {"path": "a.txt", "content": "two\n"}  # the very bytes the edit would write
    async with connect(ws, "auto", client_elicitation_handler=_approve) as c:
        first = await _ask(c, "StrReplaceFile", edit)
        outcome = await _outcome(_retry(c, "WriteFile", write, first.request_state, _approve_answer()))
        assert _refused_or_asked_again(outcome), outcome
    assert (ws / "a.txt").read_text() == "one\n"


async def test_answers_of_the_wrong_shape_are_no_approval(ws: Path) -> None:
    args = {"path": "a.txt", "content": "x\n"}
    wrong: list[dict[str, Any]] = [
        {"other-key": WireElicitResult(action="accept", content={"decision": "approve"})},
        {"approval": WireElicitResult(action="accept", content={"decision": "APPROVE"})},
        {"approval": WireElicitResult(action="accept", content={"decision": ["approve"]})},
        {"approval": WireElicitResult(action="accept", content={})},
        {"approval": WireElicitResult(action="decline", content={"decision": "approve"})},
        {"approval": ListRootsResult(roots=[])},
    ]
    async with connect(ws, "auto", client_elicitation_handler=_approve) as c:
        first = await _ask(c, "WriteFile", args)
        for answers in wrong:
            outcome = await _outcome(_retry(c, "WriteFile", args, first.request_state, answers))
            assert _refused_or_asked_again(outcome), (answers, outcome)
    assert not (ws / "a.txt").exists()


@pytest.mark.slow
async def test_a_state_sealed_by_another_server_is_refused(tmp_path: Path) -> None:
    """Two HTTP servers (two processes, two sealing keys): one's answer is worthless to the other."""
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    args = {"path": "a.txt", "content": "x\n"}
    with http_server(one) as first_server, http_server(two) as second_server:
        async with Client(first_server.url, elicitation_handler=_approve) as c1:
            first = await _ask(c1, "WriteFile", args)
        async with Client(second_server.url, elicitation_handler=_approve) as c2:
            outcome = await _outcome(_retry(c2, "WriteFile", args, first.request_state, _approve_answer()))
    assert _refused_or_asked_again(outcome), outcome
    assert not (one / "a.txt").exists() and not (two / "a.txt").exists()


async def test_approve_for_session_sent_where_it_was_not_offered_approves_once(ws: Path) -> None:
    """A 2026-07-28 connection that is not stdio (HTTP; here in memory, which takes the same
    path) has no session: an answer claiming "for this session" approves the one write it was
    asked about and is not remembered for the next."""
    args = {"path": "a.txt", "content": "1\n"}
    session_answer = {
        "approval": WireElicitResult(action="accept", content={"decision": "approve_for_session"})
    }
    async with connect(ws, "auto", client_elicitation_handler=_approve) as c:
        first = await _ask(c, "WriteFile", args)
        done = await _retry(c, "WriteFile", args, first.request_state, session_answer)
        assert not isinstance(done, InputRequiredResult) and not done.is_error, done
        again = await c.session.call_tool(
            name="WriteFile", arguments={"path": "b.txt", "content": "2\n"}, allow_input_required=True
        )
        assert isinstance(again, InputRequiredResult)
    assert (ws / "a.txt").read_text() == "1\n" and not (ws / "b.txt").exists()
