"""server/connections.py in-process: the cap's arithmetic, bursts of events logged twice, and
the loop's exception handler (the whole of it under abuse: tests/stress/test_http_abuse.py)."""

from __future__ import annotations

import asyncio
import logging
import resource
from typing import Any

import pytest

from filegate.server import connections
from filegate.server.connections import (
    ACCEPT_FAILED,
    FD_RESERVE,
    MIN_CAP,
    AcceptErrors,
    Burst,
    connection_cap,
    quiet_accept_errors,
)


@pytest.fixture
def soft_limit() -> Any:
    """Sets the descriptor soft limit for one test (restored after)."""
    old = resource.getrlimit(resource.RLIMIT_NOFILE)

    def set_soft(n: int) -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, old[1]))

    yield set_soft
    resource.setrlimit(resource.RLIMIT_NOFILE, old)


def test_the_cap_leaves_the_reserve_free_and_never_drops_below_the_minimum(soft_limit: Any) -> None:
    soft_limit(1024)
    assert connection_cap(100) == 100  # under the limit: as configured
    assert connection_cap(5000) == 1024 - FD_RESERVE
    soft_limit(FD_RESERVE + 3)
    assert connection_cap(100) == MIN_CAP  # a tiny limit still serves a few clients


def records(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "filegate"]


async def test_a_burst_is_logged_at_its_start_and_counted_once_it_is_over(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connections, "QUIET_S", 0.2)
    caplog.set_level("WARNING", logger="filegate")
    burst = Burst("trouble started (%s)", "trouble over after %d event(s)")
    burst.event("a")
    burst.event("b")
    await asyncio.sleep(0.1)
    burst.event("c")  # within the quiet time: the burst goes on (its check is put off)
    await asyncio.sleep(0.15)
    assert records(caplog) == ["trouble started (a)"]
    await asyncio.sleep(0.3)
    assert records(caplog) == ["trouble started (a)", "trouble over after 3 event(s)"]
    burst.event("d")  # a new burst
    assert records(caplog)[-1] == "trouble started (d)"


async def test_failed_accepts_are_counted_and_other_loop_errors_passed_on(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connections, "QUIET_S", 60.0)
    caplog.set_level("WARNING")
    loop = asyncio.get_running_loop()
    passed_on: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: passed_on.append(context))
    try:
        handler = AcceptErrors(loop)
        for _ in range(50):
            handler(loop, {"message": ACCEPT_FAILED, "exception": OSError(24, "Too many open files\n")})
        handler(loop, {"message": "something else"})
        assert [c["message"] for c in passed_on] == ["something else"]
        loop.set_exception_handler(None)
        AcceptErrors(loop)(loop, {"message": "no handler before"})  # asyncio's default handler logs it
    finally:
        loop.set_exception_handler(None)
    said = [r.getMessage() for r in caplog.records]
    accepted = [m for m in said if m.startswith("cannot accept connections")]
    assert accepted == [
        "cannot accept connections ([Errno 24] Too many open files\\x0a); logged once until it stops"
    ]
    assert any(r.name == "asyncio" and r.getMessage() == "no handler before" for r in caplog.records)


async def test_a_listener_closed_before_its_accept_retry_logs_no_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # What asyncio's accept retry does on a listener the server has closed meanwhile: register
    # the closed socket with the selector, in a loop callback (a real ValueError from asyncio).
    import socket

    caplog.set_level("DEBUG")
    loop = asyncio.get_running_loop()
    listener = socket.socket()
    listener.close()
    quiet_accept_errors(loop)
    try:
        loop.call_soon(loop.add_reader, listener, lambda: None)
        await asyncio.sleep(0.05)
        loop.call_soon(lambda: 1 / 0)  # any other error is still passed on
        await asyncio.sleep(0.05)
    finally:
        loop.set_exception_handler(None)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "ZeroDivisionError" in str(errors[0].exc_info), errors
    assert "was not re-armed" in caplog.text


@pytest.mark.slow
def test_past_the_cap_the_oldest_connection_waiting_on_its_client_is_closed(ws: Any, tmp_path: Any) -> None:
    """`--max-connections 8`: a ninth connection makes room by closing the oldest one that is
    still waiting on its client (here: sent nothing); the newest is served, and the operator
    is told once."""
    import socket

    from tests.server.served import http_filegate, request

    with http_filegate(ws, tmp_path, "--max-connections", "8") as served:
        idle = []
        for _ in range(8):
            s = socket.create_connection(("127.0.0.1", served.port), timeout=60)
            idle.append(s)
        try:
            assert request(served.port, "GET", "/healthz")[0] == 200  # the ninth: served
            assert idle[0].recv(1) == b""  # the oldest idle one was closed for room
        finally:
            for s in idle:
                s.close()
        served.stop()
    assert "connection cap (8) reached: closing connections that wait on their client" in served.log()
