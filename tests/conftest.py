"""Shared fixtures: a real workspace on disk and real MCP clients in both protocol eras.

`mode` is fastmcp's Client mode: "auto" negotiates 2026-07-28 against our server,
"legacy" forces the initialize handshake (2025-11-25).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from filegate.server.app import build_server
from filegate.settings import Settings

MODES = ["auto", "legacy"]
FILEGATE = str(Path(sys.executable).parent / "filegate")


@pytest.fixture(autouse=True)
def private_state_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """filegate records in-flight temp files under $XDG_STATE_HOME; keep each test's apart."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))


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


def texts(result: Any) -> list[str]:
    return [b.text for b in result.content if getattr(b, "type", "") == "text"]


def text(result: Any) -> str:
    return "\n".join(texts(result))


async def call(client: Client[Any], tool: str, **args: Any) -> Any:
    return await client.call_tool(tool, args, raise_on_error=False)


def stdio_transport(workdir: Path, *extra: str, env: dict[str, str] | None = None) -> Any:
    """The installed `filegate` console script as a stdio subprocess (the SDK passes it only a
    few variables: FILEGATE_FAST_LANE is handed on, so CI can run these with the lane off)."""
    if "FILEGATE_FAST_LANE" in os.environ:
        env = {"FILEGATE_FAST_LANE": os.environ["FILEGATE_FAST_LANE"], **(env or {})}
    return StdioTransport(
        FILEGATE, ["--workdir", str(workdir), *extra], env=env, cwd=str(workdir), keep_alive=False
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def http_server(workdir: Path, *extra: str) -> Iterator[str]:
    """A real `filegate --transport http` on a free loopback port; yields its URL."""
    port = free_port()
    proc = subprocess.Popen(
        [FILEGATE, "--transport", "http", "--port", str(port), "--workdir", str(workdir), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited: {proc.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        if proc.stderr is not None:
            proc.stderr.close()
