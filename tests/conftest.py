"""Shared fixtures: a real workspace on disk and real MCP clients in both protocol eras.

`mode` is fastmcp's Client mode: "auto" negotiates 2026-07-28 against our server,
"legacy" forces the initialize handshake (2025-11-25).
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from filegate.fsio import platform
from filegate.server.app import UNEXPECTED, build_server
from filegate.settings import Settings

# A ResourceWarning anywhere fails the run, at its end (tests/resource_warnings.py says why).
pytest_plugins = ["tests.resource_warnings"]

MODES = ["auto", "legacy"]
# For the read tools' own tests, whose answers no protocol era changes (the era is the
# framework's, and these tools ask the user nothing): the handshake-era twin of each test runs in
# the slow set, to keep the default set within its time. Such a module overrides `mode` with
# these params. The server's tests (transports, approval, sessions, roots) and the write tools'
# keep both eras in the default set.
MODES_LEGACY_SLOW = ["auto", pytest.param("legacy", marks=pytest.mark.slow)]
FILEGATE = str(Path(sys.executable).parent / "filegate")


_RUN_STATE = [""]


def pytest_unconfigure(config: pytest.Config) -> None:
    if _RUN_STATE[0]:
        shutil.rmtree(_RUN_STATE[0], ignore_errors=True)


def pytest_configure(config: pytest.Config) -> None:
    """A state folder for the whole run (each xdist worker its own), set before any fixture: a
    module's or a session's server (test_exhaustion's, test_http's, the stress zygote, the
    agents') starts before the per-test one below is set, and would else keep its history (50 MB
    pre-images included), locks and temp records in the real user's ~/.local/state/filegate.
    The MCP SDK hands a stdio server only a few variables of its own choosing (HOME among them):
    XDG_STATE_HOME joins them for the tests (a test's own ``env`` still wins)."""
    os.environ["XDG_STATE_HOME"] = _RUN_STATE[0] = tempfile.mkdtemp(prefix="filegate-test-state-")
    import mcp.client.stdio

    if "XDG_STATE_HOME" not in mcp.client.stdio.DEFAULT_INHERITED_ENV_VARS:
        mcp.client.stdio.DEFAULT_INHERITED_ENV_VARS.append("XDG_STATE_HOME")


@pytest.fixture(autouse=True)
def private_state_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """filegate records in-flight temp files under $XDG_STATE_HOME; keep each test's apart."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))


@pytest.fixture
def read_guard_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """For tests of something other than the read guard (tests/tools/test_read_guard.py) that
    write files they never read: every server they start (in memory, stdio, HTTP) runs with
    --read-guard off, through FILEGATE_READ_GUARD. Use: pytest.mark.usefixtures("read_guard_off")."""
    monkeypatch.setenv("FILEGATE_READ_GUARD", "off")


@pytest.fixture(autouse=True)
def no_unexpected_tool_errors(request: pytest.FixtureRequest) -> Iterator[None]:
    """Under FILEGATE_SIMULATE (a facility taken away), a tool's unexpected exception or a
    facility it lacks fails the test, even where the client only sees a masked error or a
    refusal the test accepts: every path needs its fallback (issue 29). A module that raises
    them on purpose says so (EXPECTS_UNEXPECTED_ERRORS)."""
    if not os.environ.get(platform.SIMULATE_ENV) or getattr(
        request.module, "EXPECTS_UNEXPECTED_ERRORS", False
    ):
        yield
        return
    seen: list[logging.LogRecord] = []
    handler = logging.Handler(logging.ERROR)
    handler.emit = lambda record: seen.append(record) if getattr(record, UNEXPECTED, False) else None  # type: ignore[method-assign]
    logger = logging.getLogger("filegate")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
    if seen:
        pytest.fail(f"a tool failed unexpectedly under {platform.SIMULATE_ENV}: {seen[0].getMessage()}")


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """An empty workspace directory (a real path: tmp dirs may sit behind symlinks)."""
    d = tmp_path / "ws"
    d.mkdir()
    return Path(os.path.realpath(d))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the workspace, outside it, with a file in it."""
    d = tmp_path / "outside"
    d.mkdir()
    (d / "secret.txt").write_text("OUTSIDE-CONTENT\n")
    return Path(os.path.realpath(d))


def make_server(workdir: Path, **kw: Any) -> Any:
    return build_server(Settings(workdir=workdir, **kw))


@contextlib.asynccontextmanager
async def connect(workdir: Path, mode: str = "auto", **kw: Any) -> AsyncIterator[Client[Any]]:
    """An in-memory fastmcp Client on a fresh server. Client kwargs: ``client_*`` prefixed."""
    client_kw = {k.removeprefix("client_"): v for k, v in kw.items() if k.startswith("client_")}
    settings_kw = {k: v for k, v in kw.items() if not k.startswith("client_")}
    async with Client(make_server(workdir, **settings_kw), mode=mode, **client_kw) as c:
        yield c


def blocks(result: Any) -> list[str]:
    """The result's text blocks, as sent."""
    return [b.text for b in result.content if getattr(b, "type", "") == "text"]


# The lines a result ends with after its summary (SPEC §9; server/render.py): the write id, the
# grant line, the change notice.
TRAILER = re.compile(r"^(Write id: w-[0-9a-f]+\.|Grant: g-\S+: .*|Changed on disk since you read them: .*)$")
# An output line, never a summary: ReadFile's numbered line, Grep's `path:line:` or `path-line-`.
OUTPUT_LINE = re.compile(r"^\s*\d+\t|^[^\s:]+[:-]\d+[:-]")


def texts(result: Any) -> list[str]:
    """The result's text as its parts: a successful text-only result's one block (SPEC §9) split
    back into its output and its summary line (a last line that ends a sentence and is no line
    of output), the lines after the summary (write id, change
    notice) joined to it with a space, as they read before they had lines of their own; every
    other result's blocks as sent. tests/server/test_text_only.py checks the block itself."""
    sent = blocks(result)
    if result.is_error or len(sent) != 1 or len(result.content) != 1:
        return sent
    lines = sent[0].split("\n")
    end = len(lines)
    while end > 1 and TRAILER.match(lines[end - 1]):
        end -= 1
    last = lines[end - 1]
    if end == len(lines) and (not last.endswith((".", ".)")) or OUTPUT_LINE.match(last)):
        return sent  # no summary: the output alone (a list of names, of matching lines)
    summary = " ".join(lines[end - 1 :])
    output = "\n".join(lines[: end - 1])
    return [output + "\n", summary] if output else [summary]


def text(result: Any) -> str:
    return "\n".join(texts(result))


# How every write's message ends (SPEC §8.4).
# (after a space where texts() joined it to the summary, on a line of its own as it was sent)
WRITE_ID = re.compile(r"(?:^|[ \n])Write id: (w-[0-9a-f]{16})\.$")


def without_write_id(message: str) -> str:
    """A write's message without its closing "Write id: w-xxxxxx." (which must be there)."""
    assert WRITE_ID.search(message), message
    return WRITE_ID.sub("", message)


def write_id_of(message: str) -> str:
    found = WRITE_ID.search(message)
    assert found, message
    return found.group(1)


async def call(client: Client[Any], tool: str, **args: Any) -> Any:
    return await client.call_tool(tool, args, raise_on_error=False)


def stdio_transport(workdir: Path, *extra: str, env: dict[str, str] | None = None) -> Any:
    """The installed `filegate` console script as a stdio subprocess (the SDK passes it only a
    few variables: FILEGATE_READ_GUARD is handed on, for the read_guard_off fixture, and the
    test's own XDG_STATE_HOME, so no server writes its history into the real user's state)."""
    handed = {k: os.environ[k] for k in ("FILEGATE_READ_GUARD", "XDG_STATE_HOME") if k in os.environ}
    if handed:
        env = {**handed, **(env or {})}
    return StdioTransport(
        FILEGATE, ["--workdir", str(workdir), *extra], env=env, cwd=str(workdir), keep_alive=False
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# A hang guard, never a measurement: past it a test fails loudly (with the load average).
START_S = 120.0
# What the server writes on stderr once its socket listens (server/startup.py, server/http.py).
READY_LINE = re.compile(rb"^filegate \S+: serving .* over http at http://", re.MULTILINE)


def wait_ready(proc: subprocess.Popen[bytes], port: int, stderr: Path, start_s: float = START_S) -> None:
    """Wait for the server's own readiness signal, its start-up line (written once it listens:
    a connect from then on waits in the listen queue, it is never refused), then one /healthz.

    No guess at how long a start takes on a busy machine: ``start_s`` is a hang guard only, and
    running past it fails loudly with the load average and the server's stderr."""
    deadline = time.monotonic() + start_s
    while not READY_LINE.search(stderr.read_bytes()):
        if proc.poll() is not None:
            raise AssertionError(
                f"filegate exited {proc.returncode} before it was ready: {stderr.read_text()[-2000:]}"
            )
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(
                f"filegate did not announce itself within {start_s:g} s (hang guard; load average "
                f"{os.getloadavg()[0]:.1f}); stderr:\n{stderr.read_text()[-2000:]}"
            )
        time.sleep(0.02)  # how often the line is looked for, not a guess at a start-up time
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=max(1.0, deadline - time.monotonic()))
    try:
        conn.request("GET", "/healthz")
        status = conn.getresponse().status
    finally:
        conn.close()
    assert status == 200, (
        f"/healthz answered {status} after the start-up line; stderr:\n{stderr.read_text()[-2000:]}"
    )


@contextlib.contextmanager
def http_server(workdir: Path, *extra: str) -> Iterator[str]:
    """A real `filegate --transport http` on a free loopback port; yields its URL once ready."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="filegate-http-") as logs:
        stderr = Path(logs) / "stderr"
        with stderr.open("wb") as err:
            proc = subprocess.Popen(
                [FILEGATE, "--transport", "http", "--port", str(port), "--workdir", str(workdir), *extra],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        try:
            wait_ready(proc, port, stderr)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
