"""The one raw JSON-RPC client for a server's stdio pipes, and the one initialize builder: for
tests that need what a client library hides (exact bytes, timing of lines, a server's own
requests answered by hand)."""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import threading
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
    """A minimal JSON-RPC client on a server's stdio pipes (handshake era, 2025-06-18).

    ``lines`` keeps every line the server wrote, in order: a test of what stdout carries reads
    them all, not only the replies it waited for."""

    def __init__(
        self, pid: int, stdin: Any, stdout: Any, proc: subprocess.Popen[bytes] | None = None
    ) -> None:
        self.pid = pid
        self.proc = proc
        self.lines: list[bytes] = []
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

    def _message(self, deadline: float, waiting_for: str) -> dict[str, Any]:
        """The next line as JSON (a hang guard at ``deadline``); a reply is kept for reply()."""
        while b"\n" not in self._buf:
            ready, _, _ = select.select([self._out], [], [], max(deadline - time.monotonic(), 0))
            if not ready:
                raise TimeoutError(f"no {waiting_for} in time (hang guard)")
            chunk = os.read(self._out.fileno(), 1 << 20)
            if not chunk:
                raise EOFError(f"the server closed its stdout before {waiting_for}")
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        self.lines.append(line)
        msg = json.loads(line)
        if "id" in msg and ("result" in msg or "error" in msg):
            self._replies[int(msg["id"])] = msg
        return dict(msg)

    def reply(self, rid: int, timeout: float = 60.0) -> dict[str, Any]:
        """Read until the reply to ``rid`` arrives (a hang guard, not a timing)."""
        deadline = time.monotonic() + timeout
        while rid not in self._replies:
            self._message(deadline, f"reply to request {rid} within {timeout} s")
        return self._replies.pop(rid)

    def next_request(self, timeout: float = 60.0) -> dict[str, Any]:
        """Read until the server sends a request of its own (e.g. elicitation/create)."""
        deadline = time.monotonic() + timeout
        while True:
            msg = self._message(deadline, f"request from the server within {timeout} s")
            if "method" in msg and "id" in msg:
                return msg

    def initialize(self, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
        rid = self.request("initialize", initialize_params(capabilities=capabilities))
        answer = self.reply(rid)
        self.send(INITIALIZED)
        return answer

    def write_raw(self, data: bytes) -> None:
        """Bytes as they are (several messages in one write, an escape the encoder would not make)."""
        self._in.write(data)
        self._in.flush()

    def exchange(self, data: bytes, ids: set[int], timeout: float = 60.0) -> dict[int, dict[str, Any]]:
        """Write ``data`` (requests as raw lines) from a thread while reading until each of ``ids``
        is answered: a burst larger than the pipes would otherwise stall both sides. Input stays
        open: at its end a stdio server stops, and calls still running then go unanswered."""
        writer = threading.Thread(target=self.write_raw, args=(data,), daemon=True)
        writer.start()
        try:
            return {rid: self.reply(rid, timeout) for rid in sorted(ids)}
        finally:
            writer.join(timeout)

    def end(self, timeout: float = 60.0) -> tuple[int, bytes]:
        """End the input (the server stops), read its stdout until it closes it: the exit
        status and every byte written after the last line read."""
        assert self.proc is not None, "end() needs the server's process (raw_filegate)"
        self._in.close()
        rest = self._buf
        self._buf = b""
        deadline = time.monotonic() + timeout
        while chunk := self._read_before(deadline):
            rest += chunk
        return self.proc.wait(max(deadline - time.monotonic(), 1)), rest

    def _read_before(self, deadline: float) -> bytes:
        ready, _, _ = select.select([self._out], [], [], max(deadline - time.monotonic(), 0))
        if not ready:
            raise TimeoutError("the server kept its stdout open after its input ended (hang guard)")
        return os.read(self._out.fileno(), 1 << 20)

    def close_pipes(self) -> None:
        for f in (self._in, self._out):
            with contextlib.suppress(OSError):
                f.close()


@contextlib.contextmanager
def raw_filegate(
    workdir: Path,
    *flags: str,
    capabilities: dict[str, Any] | None = None,
    initialize: bool = True,
    stderr: Path | None = None,
) -> Iterator[RawStdio]:
    """The installed `filegate` on pipes, initialized unless ``initialize`` is false (a test that
    sends its own initialize); its stderr into the file ``stderr`` if given. At the end: stdin
    closed and the process reaped."""
    from tests.conftest import FILEGATE

    with contextlib.ExitStack() as stack:
        err = stack.enter_context(stderr.open("wb")) if stderr else None
        proc = subprocess.Popen([FILEGATE, "--workdir", str(workdir), *flags], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=err, cwd=workdir)  # fmt: skip
    client = RawStdio(proc.pid, proc.stdin, proc.stdout, proc)
    try:
        if initialize:
            client.initialize(capabilities)
        yield client
    finally:
        client.close_pipes()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
