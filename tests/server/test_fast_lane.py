"""The stdio fast lane (server/fastlane.py) answers exactly as fastmcp's ordinary path does.

One recorded conversation per protocol era is played to a real `filegate` stdio subprocess
twice, with the lane on and with ``FILEGATE_FAST_LANE=off``; every answer and every
notification must be the same JSON value. The set covers successes of each lane tool, each
kind of error (missing, outside the workspace, a secret, a directory, a binary), invalid
arguments, an unknown tool, a tool the lane leaves alone (Grep), a result with notable facts
(told as MCP log messages), envelopes the lane does not take, and a call cancelled in flight.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FILEGATE
from tests.media_factory import line_art, write_png

ERA_PARAMS = {
    "2026-07-28": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "recorder", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/logLevel": "debug",
    },
    "2025-11-25": {},
    "2025-06-18": {},
}
# A tail read of a file this big counts its lines in a child process: long enough to be
# cancelled while running.
SLOW_BYTES = 48 << 20


def workspace(ws: Path) -> None:
    (ws / "small.txt").write_text("one\ntwo\nthree\n")
    (ws / ".env").write_text("TOKEN=secret\n")
    (ws / "bin.dat").write_bytes(bytes(range(256)) * 8)
    (ws / "sub").mkdir()
    (ws / "sub" / "a.py").write_text("print(1)\n")
    write_png(ws / "pic.png", line_art(40, 30))
    line = b"x" * 63 + b"\n"
    (ws / "slow.log").write_bytes(line * (SLOW_BYTES // len(line)))


def request(i: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "method": method, "params": params}


def calls(era: str) -> list[dict[str, Any]]:
    """The recorded tools/call requests, with this era's envelope and a progress token."""
    meta = {**ERA_PARAMS[era]}
    plan: list[tuple[str, Any]] = [
        ("ReadFile", {"path": "small.txt"}),
        ("ReadFile", {"path": "small.txt", "line_offset": 2, "n_lines": 1}),
        ("ReadFile", {"path": "small.txt", "line_offset": -1}),
        ("ReadFile", {"path": "missing.txt"}),
        ("ReadFile", {"path": "/etc/hostname"}),
        ("ReadFile", {"path": ".env"}),
        ("ReadFile", {"path": "sub"}),
        ("ReadFile", {"path": "bin.dat"}),
        ("ReadFile", {"path": 5}),
        ("ReadFile", {"path": "small.txt", "bogus": 1}),
        ("ReadFile", {"path": "small.txt", "n_lines": "2"}),
        ("ReadFile", {}),
        ("ReadFile", None),
        ("ReadMediaFile", {"path": "pic.png"}),
        ("ReadMediaFile", {"path": "small.txt"}),
        ("Glob", {"pattern": "**/*.py"}),
        ("Glob", {"pattern": "*"}),  # skips .env: a notable fact, sent as a log message
        ("Glob", {"pattern": "../*"}),
        ("Grep", {"pattern": "one"}),
        ("Nope", {}),
        ("StrReplaceFile", {"path": "missing.txt", "edit": {"old": "a", "new": "b"}}),
    ]
    out = []
    for i, (tool, args) in enumerate(plan, start=10):
        params: dict[str, Any] = {"name": tool, "_meta": {**meta, "progressToken": f"p{i}"}}
        if args is not None:
            params["arguments"] = args
        out.append(request(i, "tools/call", params))
    # Shapes the lane leaves to the ordinary path: a string id, an unknown _meta key, a bad
    # log level, a bad progress token.
    out.append(
        request(40, "tools/call", {"name": "ReadFile", "arguments": {"path": "small.txt"}, "_meta": meta})
    )
    out[-1]["id"] = "forty"
    extra = {**meta, "other": 1}
    out.append(
        request(41, "tools/call", {"name": "ReadFile", "arguments": {"path": "small.txt"}, "_meta": extra})
    )
    if era == "2026-07-28":
        bad = {**meta, "io.modelcontextprotocol/logLevel": "loud"}
        out.append(
            request(42, "tools/call", {"name": "ReadFile", "arguments": {"path": "small.txt"}, "_meta": bad})
        )
    token = {**meta, "progressToken": 1.5}
    out.append(request(43, "tools/call", {"name": "Glob", "arguments": {"pattern": "*.txt"}, "_meta": token}))
    return out


def cancelled_then_more(era: str) -> list[dict[str, Any]]:
    """A slow call and its cancellation in one write, then a slow call that is answered."""
    meta = ERA_PARAMS[era]
    slow = {"name": "ReadFile", "arguments": {"path": "slow.log", "line_offset": -1}, "_meta": meta}
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 90}}
    return [request(90, "tools/call", slow), cancel, request(91, "tools/call", slow)]


class Conversation:
    """A raw JSON-RPC client on a filegate stdio subprocess: everything it wrote, kept."""

    def __init__(self, ws: Path, lane: str, log: Path) -> None:
        env = {**os.environ, "FILEGATE_FAST_LANE": lane}
        self.log = log
        self._stderr = log.open("wb")
        self.proc = subprocess.Popen(
            [FILEGATE, "--workdir", str(ws), "--log-level", "DEBUG"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=ws,
            env=env,
        )
        self.answers: dict[Any, Any] = {}
        self.notifications: list[Any] = []
        self.roots: list[Path] = [ws]  # answered to each roots/list the server asks
        self.roots_asked = 0
        self._buf = b""

    def send(self, *messages: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        self.proc.stdin.flush()

    def until(self, ids: set[Any]) -> None:
        self.wait_for(lambda: ids <= set(self.answers), f"unanswered: {ids}")

    def wait_for(self, done: Callable[[], bool], what: str) -> None:
        assert self.proc.stdout is not None
        while not done():
            chunk = self.proc.stdout.read1(1 << 16)
            assert chunk, f"output closed; {what}"
            self._buf += chunk
            *lines, self._buf = self._buf.split(b"\n")
            for line in lines:
                message = json.loads(line)
                if "id" in message and "method" not in message:
                    assert message["id"] not in self.answers, message
                    self.answers[message["id"]] = message
                elif message.get("method") == "roots/list" and "id" in message:
                    self.roots_asked += 1
                    roots = [{"uri": root.as_uri()} for root in self.roots]
                    self.send({"jsonrpc": "2.0", "id": message["id"], "result": {"roots": roots}})
                else:
                    self.notifications.append(message)

    def close(self) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        rest = self._buf + self.proc.stdout.read()
        for line in rest.splitlines():
            message = json.loads(line)
            assert "id" not in message or "method" in message, f"an answer after the last wait: {message}"
            self.notifications.append(message)
        self.proc.wait(timeout=30)
        return self.log.read_text("utf-8", "replace")

    def end(self) -> None:
        self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self._stderr):
            if stream is not None:
                stream.close()


def play(ws: Path, era: str, lane: str, log: Path) -> tuple[dict[Any, Any], list[Any], str]:
    talk = Conversation(ws, lane, log)
    timer = threading.Timer(120, talk.proc.kill)  # a hang fails the test, it does not block CI
    timer.start()
    try:
        if era == "2026-07-28":
            talk.send(request(1, "server/discover", {"_meta": ERA_PARAMS[era]}))
        else:
            init = {
                "protocolVersion": era,
                "capabilities": {},
                "clientInfo": {"name": "recorder", "version": "1"},
            }
            talk.send(request(1, "initialize", init))
        talk.until({1})
        if era != "2026-07-28":
            talk.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        recorded = calls(era)
        talk.send(*recorded)
        talk.until({m["id"] for m in recorded})
        talk.send(*cancelled_then_more(era))
        talk.until({91})
        err = talk.close()
    finally:
        timer.cancel()
        talk.end()
    assert 90 not in talk.answers, "a cancelled call was answered"
    return talk.answers, talk.notifications, err


def canonical(notifications: list[Any]) -> list[str]:
    return sorted(json.dumps(n, sort_keys=True) for n in notifications)


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25", "2025-06-18"])
def test_the_fast_lane_answers_as_the_ordinary_path_does(ws: Path, outside: Path, era: str) -> None:
    workspace(ws)
    fast_answers, fast_notes, fast_err = play(ws, era, "on", outside / "fast.log")
    plain_answers, plain_notes, plain_err = play(ws, era, "off", outside / "plain.log")

    assert set(fast_answers) == set(plain_answers)
    for key in plain_answers:
        assert fast_answers[key] == plain_answers[key], key
    assert canonical(fast_notes) == canonical(plain_notes)
    # The conversation is worth comparing: errors, results, log messages all occur.
    results = [a["result"] for a in plain_answers.values() if "content" in a.get("result", {})]
    assert any(r["isError"] for r in results) and any(not r["isError"] for r in results)
    assert any(n.get("method") == "notifications/message" for n in plain_notes)
    # And the lane really answered part of it (the rest it handed over or left alone).
    assert "stdio: fast lane for ReadFile, ReadMediaFile, Glob" in fast_err
    assert "fast lane" not in plain_err
    answered = int(fast_err.split("stdio: fast lane answered ")[1].split(" ")[0])
    assert answered >= 12, fast_err
    # The operator's stderr says the same about failed calls either way.
    failed = [ln.split("filegate: ", 1)[1] for ln in fast_err.splitlines() if " failed: " in ln]
    assert sorted(failed) == sorted(
        ln.split("filegate: ", 1)[1] for ln in plain_err.splitlines() if " failed: " in ln
    )


def again_id(request_id: Any) -> Any:
    return request_id + 100 if isinstance(request_id, int) else f"{request_id}-again"


def play_with_roots(ws: Path, lane: str, log: Path) -> tuple[dict[Any, Any], list[Any], str, int]:
    """A handshake client with roots: the first call asks for them; the recorded calls; then the
    roots change to ``sub/`` and the same calls again, twice (a file outside them is refused)."""
    talk = Conversation(ws, lane, log)
    timer = threading.Timer(120, talk.proc.kill)
    timer.start()
    try:
        init = {"protocolVersion": "2025-11-25", "capabilities": {"roots": {"listChanged": True}},
                "clientInfo": {"name": "recorder", "version": "1"}}  # fmt: skip
        talk.send(request(1, "initialize", init))
        talk.until({1})
        talk.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        talk.send(request(2, "tools/call", {"name": "ReadFile", "arguments": {"path": "small.txt"}}))
        talk.until({2})
        recorded = calls("2025-11-25")
        talk.send(*recorded)
        talk.until({m["id"] for m in recorded})
        talk.roots = [ws / "sub"]
        again = [{**m, "id": again_id(m["id"])} for m in recorded]
        talk.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}, *again)
        talk.until({m["id"] for m in again})
        third = [{**m, "id": again_id(again_id(m["id"]))} for m in recorded]
        talk.send(*third)  # the new roots are known by now: back on the lane
        talk.until({m["id"] for m in third})
        err = talk.close()
    finally:
        timer.cancel()
        talk.end()
    return talk.answers, talk.notifications, err, talk.roots_asked


def test_a_handshake_client_with_roots_gets_the_same_answers_before_and_after_a_change(
    ws: Path, outside: Path
) -> None:
    workspace(ws)
    fast_answers, fast_notes, fast_err, fast_asked = play_with_roots(ws, "on", outside / "fast.log")
    plain_answers, plain_notes, plain_err, plain_asked = play_with_roots(ws, "off", outside / "plain.log")

    assert set(fast_answers) == set(plain_answers)
    for key in plain_answers:
        assert fast_answers[key] == plain_answers[key], key
    assert canonical(fast_notes) == canonical(plain_notes)
    # The roots were asked for, and the change took effect: small.txt is outside sub/ then.
    assert fast_asked >= 2 and plain_asked >= 2
    assert plain_answers[10]["result"]["isError"] is False
    assert plain_answers[110]["result"]["isError"] is True
    assert "small.txt" in json.dumps(plain_answers[110])
    assert plain_answers[210] == {**plain_answers[110], "id": 210}
    # The lane answered once the roots were known, before the change and after it (the calls
    # sent with the change went to fastmcp's path, which asked again).
    answered = int(fast_err.split("stdio: fast lane answered ")[1].split(" ")[0])
    assert answered >= 24, fast_err
