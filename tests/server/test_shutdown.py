"""SIGTERM/SIGINT stop filegate cleanly on both transports and in both eras.

A running Grep over a 1 TiB sparse file keeps a real rg busy for far longer than any test (its
own time limit is 20 s). After the signal, the call must come back as an error result, the rg
child must be gone, and the process must exit. A second signal skips the grace period, which
keeps these tests short; the full grace period runs in the slow variants.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from filegate.server.shutdown import CANCELLED, NOT_STARTED, CallGate
from tests.conftest import call, make_server, stdio_transport, text
from tests.server.served import (
    alive,
    filegate_children_of_me,
    http_filegate,
    wait_for_child,
)

HUGE = 1 << 40  # a sparse file: no disk used, but rg reads zeros for minutes
HURRY = (signal.SIGTERM, signal.SIGINT)  # the second signal ends the grace period


@pytest.fixture
def huge(ws: Path) -> Path:
    path = ws / "huge.bin"
    with path.open("wb") as f:
        f.truncate(HUGE)
    return path


def grep_huge(c: Client[Any]) -> asyncio.Task[Any]:
    return asyncio.create_task(call(c, "Grep", pattern="needle", path="huge.bin"))


@contextlib.asynccontextmanager
async def lenient(client: Client[Any]) -> AsyncIterator[Client[Any]]:
    """The client, whose own closing may fail: its server is gone by then."""
    await client.__aenter__()
    try:
        yield client
    finally:
        with contextlib.suppress(Exception):
            await client.__aexit__(None, None, None)


def check_no_trouble(log: str) -> None:
    assert "Traceback" not in log
    assert "ASGI callable returned without completing response" not in log


# --- HTTP ----------------------------------------------------------------------------------


async def check_http_cancel(ws: Path, tmp: Path, mode: str, *signals: signal.Signals) -> None:
    with http_filegate(ws, tmp, "--log-level", "INFO") as served:
        async with lenient(Client(served.url, mode=mode)) as c:
            running = grep_huge(c)
            rg = await asyncio.to_thread(wait_for_child, served.proc.pid, "rg")
            await asyncio.to_thread(served.stop, *signals)
            result = await running
        assert result.is_error and text(result) == CANCELLED
    assert not alive(rg)
    log = served.log()
    assert "Grep cancelled at shutdown" in log
    check_no_trouble(log)


@pytest.mark.slow
async def test_http_sigterm_cancels_a_running_grep_kills_rg_and_answers_the_caller(
    ws: Path, tmp_path: Path, huge: Path, mode: str
) -> None:
    await check_http_cancel(ws, tmp_path, mode, *HURRY)


@pytest.mark.slow
async def test_http_sigterm_alone_waits_the_grace_period_then_cancels(
    ws: Path, tmp_path: Path, huge: Path, mode: str
) -> None:
    await check_http_cancel(ws, tmp_path, mode, signal.SIGTERM)


@pytest.mark.slow
async def test_http_stops_with_idle_clients_connected_and_ends_their_streams_properly(
    ws: Path, tmp_path: Path
) -> None:
    sig = signal.SIGTERM
    (ws / "a.txt").write_text("x\n")
    with http_filegate(ws, tmp_path, "--log-level", "INFO") as served:
        async with contextlib.AsyncExitStack() as stack:
            for mode in ("legacy", "legacy", "auto"):  # handshake clients hold a GET stream
                c = await stack.enter_async_context(lenient(Client(served.url, mode=mode)))
                assert not (await call(c, "ReadFile", path="a.txt")).is_error
            returncode = await asyncio.to_thread(served.stop, sig)
    assert returncode in (-sig, 0)
    log = served.log()
    assert "Finished server process" in log
    check_no_trouble(log)


# --- stdio ---------------------------------------------------------------------------------


async def check_stdio_cancel(ws: Path, mode: str, *signals: signal.Signals) -> None:
    async with lenient(Client(stdio_transport(ws), mode=mode)) as c:
        (pid,) = filegate_children_of_me(ws)
        running = grep_huge(c)
        rg = await asyncio.to_thread(wait_for_child, pid, "rg")
        for sig in signals:
            os.kill(pid, sig)
        result = await running
        assert result.is_error and text(result) == CANCELLED
    assert not alive(rg)
    assert not alive(pid)


@pytest.mark.slow
async def test_stdio_sigterm_cancels_a_running_grep_kills_rg_and_answers_the_caller(
    ws: Path, huge: Path, mode: str
) -> None:
    await check_stdio_cancel(ws, mode, *HURRY)


@pytest.mark.slow
async def test_stdio_sigterm_alone_waits_the_grace_period_then_cancels(
    ws: Path, huge: Path, mode: str
) -> None:
    await check_stdio_cancel(ws, mode, signal.SIGTERM)


@pytest.mark.slow
async def test_idle_stdio_server_exits_on_sigint_without_waiting_for_stdin(ws: Path) -> None:
    """SIGINT used to leave the stdio server blocked on stdin until the client closed it."""
    sig = signal.SIGINT
    async with lenient(Client(stdio_transport(ws), mode="legacy")) as c:
        await c.list_tools()
        (pid,) = filegate_children_of_me(ws)
        os.kill(pid, sig)
        for _ in range(1500):  # hang guard: up to 30 s
            if not alive(pid):
                break
            await asyncio.sleep(0.02)
        assert not alive(pid)


@pytest.mark.slow
async def test_a_stdio_server_without_loop_signal_handlers_serves_and_ends_with_stdin(
    ws: Path, mode: str
) -> None:
    """Windows' event loop takes no signal handlers (add_signal_handler raises
    NotImplementedError): the stdio server, which Claude Desktop starts there, crashed at start.
    FILEGATE_SIMULATE=no-signals takes the facility away here."""
    (ws / "a.txt").write_text("x\n")
    transport = stdio_transport(ws, env={"FILEGATE_SIMULATE": "no-signals"})
    async with Client(transport, mode=mode) as c:
        (pid,) = filegate_children_of_me(ws)
        r = await call(c, "ReadFile", path="a.txt")
        assert not r.is_error and "x" in text(r)
    for _ in range(1500):  # hang guard: up to 30 s after stdin closed
        if not alive(pid):
            break
        await asyncio.sleep(0.02)
    assert not alive(pid)


# --- the gate, in memory -------------------------------------------------------------------


async def test_calls_arriving_during_shutdown_are_refused_with_a_clear_error(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("x\n")
    server = make_server(ws)
    gate = CallGate()
    server.add_middleware(gate)
    async with Client(server, mode=mode) as c:
        assert not (await call(c, "ReadFile", path="a.txt")).is_error
        await gate.drain(grace=0)
        r = await call(c, "ReadFile", path="a.txt")
    assert r.is_error and text(r) == NOT_STARTED


# --- the last answers, at the ASGI seam ----------------------------------------------------
# A call cancelled at shutdown leaves the gate before its result has crossed fastmcp's session
# and the SSE writer; ending its exchange at that moment lost the result ("SSE stream ended
# without a response", seen once in CI on a loaded machine). Driven here through the real
# TrackExchanges middleware with an ASGI app whose POST answers late.


def _late_app(answer_after: float) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        if scope["method"] == "POST":  # answers its request, then ends by itself
            await asyncio.sleep(answer_after)
            await send({"type": "http.response.body", "body": b"answer", "more_body": False})
        else:  # a session's own stream: open until ended
            await send({"type": "http.response.body", "body": b"", "more_body": True})
            await asyncio.Event().wait()

    return app


async def _exchange(app: Any, method: str, sent: list[dict[str, Any]]) -> None:
    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()
        return {}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app({"type": "http", "method": method, "path": "/mcp", "headers": []}, receive, send)


async def test_shutdown_lets_a_late_answer_reach_its_caller_then_ends_the_open_streams() -> None:
    from filegate.server.http import OpenExchanges, TrackExchanges

    exchanges = OpenExchanges()
    app = TrackExchanges(_late_app(answer_after=0.3), exchanges)
    post: list[dict[str, Any]] = []
    stream: list[dict[str, Any]] = []
    tasks = [
        asyncio.create_task(_exchange(app, "POST", post)),
        asyncio.create_task(_exchange(app, "GET", stream)),
    ]
    while len(exchanges.scopes) < 2:
        await asyncio.sleep(0.01)
    await exchanges.settle(wait=10)  # what _Server.shutdown does after the drain
    assert post[-1] == {"type": "http.response.body", "body": b"answer", "more_body": False}
    assert stream[-1]["more_body"] is True  # the session's stream is left for end_all
    exchanges.end_all()
    await asyncio.wait_for(asyncio.gather(*tasks), 5)
    assert stream[-1] == {"type": "http.response.body", "body": b"", "more_body": False}
    assert post.count(post[-1]) == 1 and not exchanges.scopes


async def test_shutdown_waits_for_an_answer_only_so_long() -> None:
    from filegate.server.http import OpenExchanges, TrackExchanges

    exchanges = OpenExchanges()
    app = TrackExchanges(_late_app(answer_after=3600), exchanges)
    post: list[dict[str, Any]] = []
    task = asyncio.create_task(_exchange(app, "POST", post))
    while not exchanges.scopes:
        await asyncio.sleep(0.01)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await exchanges.settle(wait=0.2)
    assert 0.2 <= loop.time() - started < 30
    exchanges.end_all()
    await asyncio.wait_for(task, 5)
    assert post[-1] == {"type": "http.response.body", "body": b"", "more_body": False}  # ended properly


# --- the exit handlers run however the server ends (issue 26: coverage of server processes) --

EXIT_MARKER_LAUNCHER = (
    "import atexit, sys; marker = sys.argv.pop(1); "
    "atexit.register(lambda: open(marker, 'w').write('exit handlers ran')); "
    "from filegate.cli import main; sys.exit(main())"
)


@pytest.mark.slow
def test_a_sigterm_runs_the_exit_handlers_and_the_http_server_still_dies_of_it(
    ws: Path, tmp_path: Path
) -> None:
    """A server stopped by SIGTERM dies of it (the status a supervisor expects), after what a
    normal exit runs: uvicorn raising the signal again skipped them, so a measured server's
    coverage was never saved."""
    import subprocess
    import sys

    from tests.conftest import free_port, wait_ready

    marker, stderr, port = tmp_path / "marker", tmp_path / "stderr", free_port()
    cmd = [
        sys.executable,
        "-c",
        EXIT_MARKER_LAUNCHER,
        str(marker),
        "--transport",
        "http",
        "--port",
        str(port),
    ]
    with stderr.open("wb") as err:
        proc = subprocess.Popen([*cmd, "--workdir", str(ws)], stdin=subprocess.DEVNULL, stderr=err)
    try:
        wait_ready(proc, port, stderr)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == -signal.SIGTERM, stderr.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert marker.read_text() == "exit handlers ran"
    check_no_trouble(stderr.read_text())


@pytest.mark.parametrize("how", ["sigterm", "stdin closed"])
def test_a_stdio_server_runs_the_exit_handlers_however_it_ends(ws: Path, tmp_path: Path, how: str) -> None:
    import subprocess
    import sys

    from filegate.fsio import platform
    from tests.rawstdio import RawStdio

    if how == "sigterm" and not platform.has_loop_signals():
        # FILEGATE_SIMULATE=no-signals (Windows' event loop): no handler catches SIGTERM, so it
        # ends the process at once and no exit handler can run (stdin's end is the way there).
        pytest.skip("no loop signal handlers on this platform: SIGTERM ends the process at once")

    marker = tmp_path / "marker"
    proc = subprocess.Popen(
        [sys.executable, "-c", EXIT_MARKER_LAUNCHER, str(marker), "--workdir", str(ws)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stdin and proc.stdout
        client = RawStdio(proc.pid, proc.stdin, proc.stdout, proc)
        client.initialize()
        # A tool call is answered by the server itself once it serves: its signals are watched.
        client.reply(client.call("Glob", {"pattern": "*"}))
        if how == "sigterm":
            proc.send_signal(signal.SIGTERM)
            expected = -signal.SIGTERM
        else:
            proc.stdin.close()
            expected = 0
        assert proc.wait(60) == expected
    finally:
        if proc.poll() is None:
            proc.kill()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe and not pipe.closed:
                pipe.close()
    assert marker.read_text() == "exit handlers ran"
