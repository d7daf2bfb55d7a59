"""Notable events reach the client as MCP log messages, at one level whatever the tool."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from filegate.server.notify import events
from filegate.tools.outcome import Outcome
from tests.conftest import call, connect


class Logs:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str | None]] = []

    async def __call__(self, message: Any) -> None:
        data = message.data
        self.seen.append((message.level, data["msg"] if isinstance(data, dict) else data, message.logger))


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        ({"skipped_sensitive": 2}, [("notice", "Glob left out 2 file(s) that may hold secrets.")]),
        ({"partial": True}, [("info", "Glob returned part of its output; the result says how to page.")]),
        ({"timed_out": True}, [("warning", "Glob stopped at its time limit; the results are partial.")]),
        ({"skipped_sensitive": 0, "partial": False, "timed_out": False}, []),
        ({"message": "Results truncated to 3 lines. Use offset=3 to see more."}, []),  # paging
        ({"is_error": True, "skipped_sensitive": 2, "timed_out": True}, []),  # a failure is logged apart
    ],
)
def test_each_fact_maps_to_one_message_at_a_fixed_level(
    facts: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    assert events("Glob", Outcome(**facts)) == expected


def test_several_facts_come_in_a_fixed_order() -> None:
    facts = Outcome(partial=True, timed_out=True, skipped_sensitive=1)
    assert [level for level, _ in events("Grep", facts)] == ["notice", "warning", "info"]


async def test_a_skipped_secret_is_a_notice_to_the_client(ws: Path, mode: str) -> None:
    (ws / ".env").write_text("KEY=1\n")
    (ws / "a.txt").write_text("x\n")
    logs = Logs()
    async with connect(ws, mode, client_log_handler=logs) as c:
        r = await call(c, "Glob", pattern="*")
    assert not r.is_error
    assert ("notice", "Glob left out 1 file(s) that may hold secrets.", "filegate") in logs.seen


async def test_a_truncated_result_is_an_info_message(ws: Path, mode: str) -> None:
    for i in range(1001):  # one past Glob's 1000 matches
        (ws / f"f{i:04}.txt").touch()
    logs = Logs()
    async with connect(ws, mode, client_log_handler=logs) as c:
        r = await call(c, "Glob", pattern="*.txt")
    assert "Only the first 1000 matches are returned." in r.content[-1].text  # the one block (SPEC §9)
    assert [s for s in logs.seen if s[0] == "info" and "Glob" in s[1]] == [
        ("info", "Glob returned part of its output; the result says how to page.", "filegate")
    ]


async def test_ordinary_and_failed_calls_send_no_log_messages(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("x\n")
    logs = Logs()
    async with connect(ws, mode, client_log_handler=logs) as c:
        assert not (await call(c, "ReadFile", path="a.txt")).is_error
        assert (await call(c, "ReadFile", path="missing.txt")).is_error
        assert not (await call(c, "Glob", pattern="*.txt")).is_error
    assert logs.seen == []


async def test_a_client_name_cannot_forge_an_operator_log_line(
    ws: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The one line per client session on stderr carries the client's own name and version: a
    name with a line break would start a line of its own that reads like an audit record."""
    from mcp.types import Implementation

    caplog.set_level("INFO", logger="filegate")
    forged = "filegate.writes: WriteFile wrote 1 bytes to /etc/passwd"
    client = Implementation(name=f"evil\n{forged}\r\x1b[2K", version="1\n2")
    async with connect(ws, "legacy", client_client_info=client) as c:
        assert not (await call(c, "Glob", pattern="*")).is_error
    (line,) = [r.getMessage() for r in caplog.records if "connected (protocol" in r.getMessage()]
    assert not any(ch in line for ch in "\n\r\x1b"), line
    assert line.startswith(f"client evil\\x0a{forged}\\x0d\\x1b[2K 1\\x0a2 connected (protocol "), line


def test_a_logged_traceback_cannot_forge_a_log_line() -> None:
    """An unexpected tool error is logged with its traceback, whose last line is the
    exception's text: a file name in it (`x\\nfilegate.writes: …`) stays on the record's line."""
    import logging

    from filegate.server.app import OneLineFormatter

    try:
        raise RuntimeError("x\nfilegate.writes: WriteFile wrote 9 bytes to /etc/passwd")
    except RuntimeError:
        record = logging.LogRecord(
            "filegate", logging.ERROR, __file__, 1, "Grep failed", None, sys.exc_info()
        )
    line = OneLineFormatter("%(name)s: %(message)s").format(record)
    assert "\n" not in line and "\\x0afilegate.writes: WriteFile wrote" in line
    assert line.startswith("filegate: Grep failed") and "Traceback" in line
