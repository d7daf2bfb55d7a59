"""The event-loop stdio transport (server/stdio.py) under a raw JSON-RPC client.

Pipes (Python clients), socket pairs (Node clients such as the MCP Inspector and Claude
Desktop), and a regular file on stdin (the SDK's threaded transport takes over).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FILEGATE
from tests.rawstdio import INITIALIZED, RawStdio, initialize_request, raw_filegate

INIT = initialize_request(0, "2025-11-25")
# Named as Claude Code names itself: its 100,000-character text budget (SPEC §9) lets the wide
# reads go out as ~100 KB frames (a nameless client's 48,000 would cut them).
INIT["params"]["clientInfo"]["name"] = "claude-code"


def call(i: int, tool: str, **args: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": tool, "arguments": args}}


def burst(ws: Path) -> tuple[bytes, set[int]]:
    """Everything at once: 150 small reads, 10 reads of ~100 KB, one 300 KB request line."""
    (ws / "small.txt").write_text("hello\n")
    (ws / "wide.txt").write_text(("w" * 199 + "\n") * 600)
    msgs: list[dict[str, Any]] = [INIT, INITIALIZED]
    msgs += [call(i, "ReadFile", path="small.txt") for i in range(1, 151)]
    msgs += [call(i, "ReadFile", path="wide.txt") for i in range(151, 161)]
    msgs.append(call(161, "ReadFile", path="x" * 300_000))
    return b"".join(json.dumps(m).encode() + b"\n" for m in msgs), set(range(162))


def check(got: dict[int, dict[str, Any]], ids: set[int]) -> None:
    assert set(got) == ids
    assert got[0]["result"]["serverInfo"]["name"] == "filegate"
    assert "hello" in got[1]["result"]["content"][0]["text"]
    wide = got[155]["result"]
    assert not wide.get("isError") and len(wide["content"][0]["text"]) > 90_000  # a ~100 KB frame
    assert got[161]["result"]["isError"]  # the 300 KB path arrived whole, and was refused


@pytest.mark.slow
def test_a_burst_over_pipes_is_answered_in_full(ws: Path, tmp_path: Path) -> None:
    data, ids = burst(ws)
    stderr = tmp_path / "stderr"
    with raw_filegate(ws, initialize=False, stderr=stderr) as client:
        got = client.exchange(data, ids)
        assert client.end()[0] == 0, stderr.read_text()
    check(got, ids)


@pytest.mark.slow
def test_a_request_with_a_lone_surrogate_escape_is_answered_not_dropped(ws: Path) -> None:
    """JSON allows "\\ud800" alone; the SDK's parser refuses it and dropped the request without a
    reply, so the client waited for ever. Now it gets an error for its id, a valid escaped pair
    (an emoji) is served as usual, and later calls go on."""
    (ws / "small.txt").write_text("hello\n")
    lines = [
        json.dumps(INIT),
        json.dumps(INITIALIZED),
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ReadFile","arguments":{"path":"a\\ud800.txt"}}}',
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ReadFile","arguments":{"path":"\\ud83d\\ude00.txt"}}}',
        json.dumps(call(3, "ReadFile", path="small.txt")),
    ]
    data = "".join(line + "\n" for line in lines).encode()
    with raw_filegate(ws, initialize=False) as client:
        # A dropped request would wait for ever: reply()'s hang guard fails the test instead.
        got = client.exchange(data, {0, 1, 2, 3})
        assert client.end()[0] == 0
    assert got[1]["error"]["code"] == -32602 and "lone UTF-16 surrogate" in got[1]["error"]["message"]
    assert (
        got[2]["result"]["isError"]
        and "\U0001f600.txt` does not exist." in got[2]["result"]["content"][0]["text"]
    )
    assert "hello" in got[3]["result"]["content"][0]["text"]


@pytest.mark.slow
def test_a_burst_over_socket_pairs_is_answered_in_full(ws: Path) -> None:
    data, ids = burst(ws)
    in_ours, in_theirs = socket.socketpair()
    out_ours, out_theirs = socket.socketpair()
    with in_ours, out_ours:
        proc = subprocess.Popen([FILEGATE, "--workdir", str(ws)], stdin=in_theirs, stdout=out_theirs,
                                stderr=subprocess.PIPE)  # fmt: skip
        in_theirs.close()
        out_theirs.close()
        client = RawStdio(proc.pid, in_ours.makefile("wb"), out_ours.makefile("rb", buffering=0), proc)
        with proc:  # closes its stderr pipe at the end
            got = client.exchange(data, ids)
            client.close_pipes()  # the sockets stay open: the with statement closes them
            in_ours.shutdown(socket.SHUT_WR)  # end of input: the server exits
            assert proc.wait(60) == 0, proc.stderr.read().decode() if proc.stderr else ""
    check(got, ids)


@pytest.mark.slow
def test_stdin_from_a_regular_file_still_works(ws: Path, tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    requests.write_text(json.dumps(INIT) + "\n" + json.dumps(INITIALIZED) + "\n")
    with requests.open("rb") as stdin:
        proc = subprocess.run([FILEGATE, "--workdir", str(ws), "--log-level", "DEBUG"], stdin=stdin,
                              capture_output=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"threaded transport" in proc.stderr  # a file cannot be polled: the SDK's transport
    assert json.loads(proc.stdout.splitlines()[0])["result"]["serverInfo"]["name"] == "filegate"


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "get_blocking"), reason="POSIX only")
def test_stdin_is_left_blocking_after_a_clean_exit(ws: Path) -> None:
    r, w = os.pipe()
    try:
        os.write(w, json.dumps(INIT).encode() + b"\n")
        os.close(w)
        proc = subprocess.run([FILEGATE, "--workdir", str(ws)], stdin=r, capture_output=True, timeout=60)
        assert proc.returncode == 0 and b'"id":0' in proc.stdout.replace(b" ", b"")
        assert os.get_blocking(r)  # the same open pipe: the server gave back what it changed
    finally:
        os.close(r)
