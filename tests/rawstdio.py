"""The one raw JSON-RPC client for a server's stdio pipes, and the one initialize builder: for
tests that need what a client library hides (exact bytes, timing of lines, a server's own
requests answered by hand)."""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def initialize_params(
    version: str = "2025-06-18", capabilities: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The params of a handshake-era ``initialize`` from a client named "raw"."""
    return {"protocolVersion": version, "capabilities": capabilities or {},
            "clientInfo": {"name": "raw", "version": "0"}}  # fmt: skip


def initialize_request(
    rid: int = 1, version: str = "2025-06-18", capabilities: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "initialize",
        "params": initialize_params(version, capabilities),
    }


class RawStdio:
    """A minimal JSON-RPC client on a server's stdio pipes (handshake era, 2025-06-18)."""

    def __init__(self, pid: int, stdin: Any, stdout: Any) -> None:
        self.pid = pid
        self._in = stdin
        self._out = stdout
        self._next = 1
        self._replies: dict[int, dict[str, Any]] = {}
        self._buf = b""

    def send(self, message: dict[str, Any]) -> None:
        self._in.write((json.dumps(message) + "\n").encode())
        self._in.flush()

    def request(self, method: str, params: dict[str, Any]) -> int:
        rid = self._next
        self._next += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid

    def call(self, tool: str, args: dict[str, Any]) -> int:
        return self.request("tools/call", {"name": tool, "arguments": args})

    def reply(self, rid: int, timeout: float = 60.0) -> dict[str, Any]:
        """Read until the reply to ``rid`` arrives (a hang guard, not a timing)."""
        deadline = time.monotonic() + timeout
        while rid not in self._replies:
            while b"\n" not in self._buf:
                left = deadline - time.monotonic()
                ready, _, _ = select.select([self._out], [], [], max(left, 0))
                if not ready:
                    raise TimeoutError(f"no reply to request {rid} within {timeout} s")
                chunk = os.read(self._out.fileno(), 1 << 20)
                if not chunk:
                    raise EOFError("the server closed its stdout")
                self._buf += chunk
            line, _, self._buf = self._buf.partition(b"\n")
            msg = json.loads(line)
            if "id" in msg and ("result" in msg or "error" in msg):
                self._replies[int(msg["id"])] = msg
        return self._replies.pop(rid)

    def next_request(self, timeout: float = 60.0) -> dict[str, Any]:
        """Read until the server sends a request of its own (e.g. elicitation/create)."""
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" not in self._buf:
                ready, _, _ = select.select([self._out], [], [], max(deadline - time.monotonic(), 0))
                if not ready:
                    raise TimeoutError(f"no request from the server within {timeout} s")
                chunk = os.read(self._out.fileno(), 1 << 20)
                if not chunk:
                    raise EOFError("the server closed its stdout")
                self._buf += chunk
            line, _, self._buf = self._buf.partition(b"\n")
            msg = json.loads(line)
            if "method" in msg and "id" in msg:
                return dict(msg)
            if "id" in msg and ("result" in msg or "error" in msg):
                self._replies[int(msg["id"])] = msg

    def initialize(self, capabilities: dict[str, Any] | None = None) -> None:
        rid = self.request("initialize", initialize_params(capabilities=capabilities))
        self.reply(rid)
        self.send(INITIALIZED)

    def write_raw(self, data: bytes) -> None:
        """Bytes as they are (several messages in one write, an escape the encoder would not make)."""
        self._in.write(data)
        self._in.flush()

    def close_pipes(self) -> None:
        for f in (self._in, self._out):
            with contextlib.suppress(OSError):
                f.close()


@contextlib.contextmanager
def raw_filegate(
    workdir: Path, *flags: str, capabilities: dict[str, Any] | None = None
) -> Iterator[RawStdio]:
    """The installed `filegate` on pipes, initialized; stdin closed and the process reaped after."""
    from tests.conftest import FILEGATE

    proc = subprocess.Popen([FILEGATE, "--workdir", str(workdir), *flags], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, cwd=workdir)  # fmt: skip
    client = RawStdio(proc.pid, proc.stdin, proc.stdout)
    try:
        client.initialize(capabilities)
        yield client
    finally:
        client.close_pipes()
        proc.wait(timeout=60)
