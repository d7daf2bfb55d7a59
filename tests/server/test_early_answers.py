"""The answers given before fastmcp is imported (server/early.py, issue 13.2) are fastmcp's.

The shipped early_answers.json is checked against what a fresh server answers for every
settings variant and every client opening the early path accepts; real stdio sessions run
through the early answers into tool calls in both eras, and give the same replies as a server
with the early path off; anything unusual waits for the real server.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from filegate.server import early
from filegate.server.early_data import (
    handshake_opening,
    installed_versions,
    profile_answers,
    stateless_opening,
)
from filegate.settings import Settings
from tests.conftest import FILEGATE, stdio_transport, text

# Their writes are about something else: see tests/tools/test_read_guard.py for the guard.
pytestmark = pytest.mark.usefixtures("read_guard_off")

DATA = json.loads(early.DATA.read_text(encoding="utf-8"))
STALE = "src/filegate/server/early_answers.json is out of date: run .venv/bin/python -m filegate.server.early_data"
REPLY_TIMEOUT_S = 60.0

# Every setting that might plausibly reach a description or the tool set, alone and mixed.
SETTINGS_VARIANTS: list[dict[str, Any]] = [
    {},
    {"read_only": True},
    {"approval": "strict"},
    {"approval": "auto"},
    {"read_only": True, "approval": "auto"},
    {"client": "claude-desktop"},
    {"client": "kimi", "result_budget": 4096},
    {"result_budget": 1 << 22, "image_max_side": 512},
    {"confine": True, "secret_patterns": ["*.key"]},
    {"log_level": "DEBUG", "max_sessions": 2},
]


def test_early_answers_were_made_with_the_installed_versions() -> None:
    assert DATA["versions"] == installed_versions(), STALE


@pytest.mark.parametrize("variant", SETTINGS_VARIANTS, ids=lambda v: ",".join(v) or "defaults")
async def test_early_answers_are_what_fastmcp_answers_for_these_settings(
    variant: dict[str, Any], ws: Path, outside: Path
) -> None:
    settings = Settings(workdir=ws, add_dirs=[outside], **variant)
    assert await profile_answers(settings) == DATA["profiles"][early.profile(settings)], STALE


def _accepted_capabilities() -> list[dict[str, Any]]:
    each = [{name: value} for name, values in early.ACCEPTED_CAPABILITIES.items() for value in values]
    every = {name: values[-1] for name, values in early.ACCEPTED_CAPABILITIES.items()}
    return [*each, every]


@pytest.mark.parametrize("capabilities", _accepted_capabilities(), ids=json.dumps)
async def test_accepted_client_capabilities_do_not_change_the_answers(
    capabilities: dict[str, Any], ws: Path
) -> None:
    settings = Settings(workdir=ws)
    answers = await profile_answers(settings, capabilities)
    assert answers == DATA["profiles"][early.profile(settings)]


# --- what the early path leaves to the real server (pure logic) -------------------------------

INIT = handshake_opening("2025-11-25")
STATELESS = stateless_opening()
ANSWERS = DATA["profiles"]["read-write"]


def opening_answers(messages: list[Any]) -> list[str]:
    """The methods an Opening answers, in order, until the first message it cannot."""
    opening, answered = early.Opening(ANSWERS), []
    for m in messages:
        message = early.parse(m if isinstance(m, bytes) else json.dumps(m).encode())
        if message is None:
            break
        if "id" not in message:
            if not opening.notified(message):
                break
            continue
        if opening.answer(message) is None:
            break
        answered.append(message["method"])
    return answered


def with_params(message: dict[str, Any], **params: Any) -> dict[str, Any]:
    return {**message, "params": {**message["params"], **params}}


def test_the_usual_openings_are_answered() -> None:
    assert opening_answers(INIT) == ["initialize", "tools/list"]
    assert opening_answers(STATELESS) == ["server/discover", "tools/list"]
    assert opening_answers(STATELESS[1:]) == ["tools/list"]
    v0618 = [with_params(INIT[0], protocolVersion="2025-06-18"), *INIT[1:]]
    assert opening_answers(v0618) == ["initialize", "tools/list"]


meta = STATELESS[1]["params"]["_meta"]


@pytest.mark.parametrize(
    "messages",
    [
        [with_params(INIT[0], protocolVersion="2024-11-05"), *INIT[1:]],  # not answered early
        [with_params(INIT[0], protocolVersion="2026-07-28"), *INIT[1:]],
        [with_params(INIT[0], capabilities={"experimental": {"x": {}}}), *INIT[1:]],
        [with_params(INIT[0], capabilities={"roots": {"listChanged": 1}}), *INIT[1:]],
        [with_params(INIT[0], capabilities={"extensions": {"io.modelcontextprotocol/ui": {}}})],
        [with_params(INIT[0], clientInfo={"name": "x"}), *INIT[1:]],  # no version: SDK refuses
        [with_params(INIT[0], _meta={}), *INIT[1:]],
        [{**INIT[0], "id": True}],
        [{**INIT[0], "id": 1.5}],
        [{**INIT[0], "extra": 1}],
        [{**INIT[0], "jsonrpc": "1.0"}],
        [[INIT[0]]],  # a batch
        [b'{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'],
        [json.dumps(with_params(INIT[0], clientInfo={"name": "\ud800", "version": "1"})).encode()],
        [b"\xff" + json.dumps(INIT[0]).encode()],
    ],
)
def test_an_unusual_initialize_waits_for_the_real_server(messages: list[Any]) -> None:
    assert opening_answers(messages) == []


@pytest.mark.parametrize(
    "messages",
    [
        [INIT[0], INIT[2]],  # tools/list before notifications/initialized
        [INIT[0], INIT[1], {**INIT[2], "params": {"cursor": "x"}}],
        [INIT[0], INIT[1], {**INIT[2], "params": None}],
        [INIT[0], INIT[1], {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}, INIT[2]],
        [INIT[0], INIT[1], {"jsonrpc": "2.0", "id": 9, "method": "ping"}, INIT[2]],
        [INIT[0], INIT[1], INIT[0]],  # a second initialize
        [INIT[0], INIT[1], STATELESS[1]],  # the other era's request on a handshake session
    ],
)
def test_after_the_handshake_only_a_plain_tools_list_is_answered(messages: list[Any]) -> None:
    assert opening_answers(messages) == ["initialize"]


@pytest.mark.parametrize(
    "changed_meta",
    [
        {early.META_PROTOCOL: "2025-11-25"},
        {early.META_CAPABILITIES: {"sampling": {"tools": {}}}},
        {early.META_LOG_LEVEL: "verbose"},
        {"progressToken": 1},
        {early.META_CLIENT_INFO: {"name": "x", "version": 1}},
    ],
)
def test_an_unusual_stateless_request_waits_for_the_real_server(changed_meta: dict[str, Any]) -> None:
    discover = {**STATELESS[0], "params": {"_meta": {**meta, **changed_meta}}}
    assert opening_answers([discover, STATELESS[1]]) == []
    assert opening_answers([STATELESS[0], STATELESS[0], INIT[0]]) == ["server/discover"] * 2


# --- real stdio sessions ----------------------------------------------------------------------


def early_log(log: Path) -> str:
    lines = [ln for ln in log.read_text().splitlines() if "before fastmcp was loaded" in ln]
    assert "was not fastmcp's" not in log.read_text()
    return lines[0].split("loaded: ", 1)[1].split(";")[0] if lines else ""


async def test_a_stdio_session_runs_through_the_early_answers_into_tool_calls(
    ws: Path, mode: str, tmp_path: Path
) -> None:
    (ws / "notes.txt").write_text("alpha\nbeta\n")
    log = tmp_path / "stderr.log"
    transport = stdio_transport(ws, "--log-level", "DEBUG", env=_env())
    transport.log_file = log
    async with Client(transport, mode=mode) as client:
        tools = await client.list_tools()
        read = await client.call_tool("ReadFile", {"path": "notes.txt"})
        found = await client.call_tool("Glob", {"pattern": "*.txt"})
        again = await client.list_tools()
    assert [t.name for t in tools] == [t.name for t in again]
    assert {t.name for t in tools} == {
        "ReadFile",
        "ReadMediaFile",
        "Glob",
        "Grep",
        "WriteFile",
        "StrReplaceFile",
    }
    assert "alpha" in text(read) and "notes.txt" in text(found)
    first = "initialize" if mode == "legacy" else "server/discover"
    assert early_log(log) == f"{first}, tools/list"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FILEGATE_")}
    return {**env, **extra}


def raw_session(ws: Path, messages: list[dict[str, Any]], log: Path, **env: str) -> dict[Any, Any]:
    """Send every message at once, read until each request has its reply; replies by id."""
    ids = {m["id"] for m in messages if "id" in m}
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [FILEGATE, "--workdir", str(ws), "--log-level", "DEBUG"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=_env(**env),
            bufsize=0,  # unbuffered: select() must see every line not yet read
        )  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        proc.stdin.flush()
        replies: dict[Any, Any] = {}
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        try:
            while not ids <= replies.keys():
                ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
                assert ready, f"no reply to {ids - replies.keys()} in {REPLY_TIMEOUT_S} s"
                line = proc.stdout.readline()
                assert line, "the server closed stdout"
                message = json.loads(line)
                assert message.get("id") not in replies, f"two replies to {message.get('id')}"
                replies[message.get("id")] = message.get("result", message.get("error"))
        finally:
            proc.stdin.close()
            proc.wait(timeout=REPLY_TIMEOUT_S)
        extra = proc.stdout.read()
        proc.stdout.close()
    assert extra == b"", "a reply nobody asked for (the replayed initialize's?)"
    return replies


def calls(first_id: int, meta: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    extra = {"_meta": meta} if meta else {}
    return [
        {"jsonrpc": "2.0", "id": first_id, "method": "tools/call",
         "params": {"name": "ReadFile", "arguments": {"path": "notes.txt"}, **extra}},
        {"jsonrpc": "2.0", "id": first_id + 1, "method": "tools/list", "params": extra or {}},
    ]  # fmt: skip


OPENINGS = {
    "handshake": [*INIT, *calls(3)],
    "stateless": [*STATELESS, *calls(3, meta)],
    "unusual": [with_params(INIT[0], capabilities={"experimental": {"x": {}}}), *INIT[1:], *calls(3)],
}


@pytest.mark.parametrize("opening", [*OPENINGS, "fastmcp-env"])
def test_the_early_answers_are_the_real_server_answers_on_stdio(
    opening: str, ws: Path, tmp_path: Path
) -> None:
    """Same replies with the early path on and off; "unusual" (an unknown client capability)
    and "fastmcp-env" (a FASTMCP_ variable fastmcp would read) get no early answer at all."""
    (ws / "notes.txt").write_text("alpha\nbeta\n")
    env = {"FASTMCP_STRICT_INPUT_VALIDATION": "true"} if opening == "fastmcp-env" else {}
    messages = OPENINGS.get(opening, OPENINGS["handshake"])
    on = raw_session(ws, messages, tmp_path / "on.log", **env)
    off = raw_session(ws, messages, tmp_path / "off.log", FILEGATE_EARLY_ANSWERS="off", **env)
    assert on == off
    assert "alpha" in json.dumps(on[3])
    expected = {"handshake": "initialize, tools/list", "stateless": "server/discover, tools/list"}
    assert early_log(tmp_path / "on.log") == expected.get(opening, "")
    assert early_log(tmp_path / "off.log") == ""


# --- the hand-over, in-process on pipes ---------------------------------------------------------


def lines_of(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.splitlines()]


def read_available(fd: int) -> bytes:
    os.set_blocking(fd, False)
    try:
        return os.read(fd, 1 << 20)
    except BlockingIOError:
        return b""


def test_the_hand_over_gives_the_real_server_every_line_it_did_not_answer() -> None:
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    session = early.EarlySession(ANSWERS, in_r, out_w).start()
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "Glob"}}
    tail = b'{"jsonrpc":"2.0","id":4,"meth'  # a line still being written
    os.write(in_w, b"".join(json.dumps(m).encode() + b"\n" for m in [*INIT, call]) + tail)
    replies: list[dict[str, Any]] = []
    deadline = time.monotonic() + REPLY_TIMEOUT_S
    while len(replies) < 2 and time.monotonic() < deadline:
        select.select([out_r], [], [], 1.0)
        replies += lines_of(read_available(out_r))
    handover = session.hand_over()
    for fd in (in_r, in_w, out_r, out_w):
        os.close(fd)
    assert replies == [
        {"jsonrpc": "2.0", "id": 1, "result": ANSWERS["initialize"]["2025-11-25"]},
        {"jsonrpc": "2.0", "id": 2, "result": ANSWERS["tools/list"]["2025-11-25"]},
    ]
    assert handover.answered == ["initialize", "tools/list"]
    *complete, partial = handover.pending.split(b"\n")
    initialize, initialized, tools_list, left = (json.loads(line) for line in complete)
    assert partial == tail
    assert initialized == INIT[1] and left == call
    # the requests answered early, replayed under private ids
    assert initialize == {**INIT[0], "id": initialize["id"]}
    assert tools_list == {**INIT[2], "id": tools_list["id"]}
    assert handover.held_back == {
        initialize["id"]: early.HeldBack("initialize", "handshake", ANSWERS["initialize"]["2025-11-25"]),
        tools_list["id"]: early.HeldBack("tools/list", "handshake", ANSWERS["tools/list"]["2025-11-25"]),
    }


class Collected:
    def __init__(self) -> None:
        self.text = ""

    async def write(self, text: str) -> None:
        self.text += text

    async def flush(self) -> None:
        pass


async def test_the_replies_to_replayed_requests_are_held_back_and_checked(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    result = ANSWERS["initialize"]["2025-11-25"]
    private = "filegate-early-0123456789abcdef-0"
    out = Collected()
    held = {private: early.HeldBack("initialize", "handshake", result)}
    writer = early.Handover(b"", ["initialize"], held, tmp_path / "marker").writer(out)
    content = {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": private}]}}
    await writer.write(json.dumps(content) + "\n")  # a file that names the private id: passed on
    await writer.write(json.dumps({"jsonrpc": "2.0", "id": private, "result": result}) + "\n")
    await writer.write(json.dumps({"jsonrpc": "2.0", "id": 8, "result": {}}) + "\n")
    assert lines_of(out.text.encode()) == [content, {"jsonrpc": "2.0", "id": 8, "result": {}}]
    assert "was not fastmcp's" not in caplog.text
    assert not (tmp_path / "marker").exists()


async def test_a_replayed_request_cancelled_at_end_of_input_is_no_mismatch(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    """A client that closes stdin right after the early tools/list: the SDK cancels the replay."""
    private = "filegate-early-0123456789abcdef-1"
    held = {private: early.HeldBack("tools/list", "handshake", ANSWERS["tools/list"]["2025-11-25"])}
    out = Collected()
    writer = early.Handover(b"", ["tools/list"], held, tmp_path / "marker").writer(out)
    cancelled = {"jsonrpc": "2.0", "id": private, "error": {"code": -32000, "message": "Connection closed"}}
    await writer.write(json.dumps(cancelled) + "\n")
    assert out.text == ""
    assert "was not fastmcp's" not in caplog.text
    assert not (tmp_path / "marker").exists()


async def test_an_early_tools_list_that_differed_is_corrected_and_not_given_again(
    caplog: pytest.LogCaptureFixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Should early_answers.json be out of date (a test keeps it not), the client lists again."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    settings = Settings(workdir=tmp_path)
    loaded = early.load_answers(settings)
    assert loaded is not None
    answers, marker = loaded
    private = "filegate-early-0123456789abcdef-1"
    held = {private: early.HeldBack("tools/list", "handshake", answers["tools/list"]["2025-11-25"])}
    out = Collected()
    writer = early.Handover(b"", ["tools/list"], held, marker).writer(out)
    real = {"jsonrpc": "2.0", "id": private, "result": {"tools": []}}
    await writer.write(json.dumps(real) + "\n")
    assert lines_of(out.text.encode()) == [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}]
    assert "the early answer to tools/list was not fastmcp's" in caplog.text
    assert early.load_answers(settings) is None  # later starts wait for the real server
