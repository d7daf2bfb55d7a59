"""A tool's exception nobody expected (issue 29). A facility the OS lacks (NotImplementedError:
Windows' dir_fd, fchdir) is a one-line refusal naming it, never fastmcp's masked "Error calling
tool"; any other exception stays masked for the client and is logged with a mark that
tests/conftest.py fails a test on under FILEGATE_SIMULATE."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError

from filegate.server.app import UNEXPECTED
from tests.conftest import make_server

EXPECTS_UNEXPECTED_ERRORS = True  # raised on purpose: tests/conftest.py lets them pass


async def test_a_missing_facility_is_a_one_line_refusal_naming_it(
    ws: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    (ws / "a.py").write_text("x\n")

    def scandir_unavailable(*args: object, **kwargs: object) -> None:  # a mock: Windows-like os
        raise NotImplementedError("scandir: fd unavailable on this platform")

    server = make_server(ws)  # before the patch: the start's case probe lists the workdir too
    monkeypatch.setattr(os, "scandir", scandir_unavailable)
    async with Client(server) as client:
        result = await client.call_tool("Glob", {"pattern": "*.py"}, raise_on_error=False)
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert text == "Glob cannot do this on this platform: scandir: fd unavailable on this platform."
    [record] = [r for r in caplog.records if getattr(r, UNEXPECTED, False)]
    assert record.getMessage() == "Glob: scandir: fd unavailable on this platform"
    assert record.exc_info and record.exc_info[0] is NotImplementedError  # its traceback, for the operator


async def test_a_missing_facility_without_words_is_still_a_sentence(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def scandir_unavailable(*args: object, **kwargs: object) -> None:  # a mock: Windows-like os
        raise NotImplementedError

    server = make_server(ws)
    monkeypatch.setattr(os, "scandir", scandir_unavailable)
    async with Client(server) as client:
        result = await client.call_tool("Glob", {"pattern": "*.py"}, raise_on_error=False)
    assert result.is_error and [b.text for b in result.content] == [  # type: ignore[union-attr]
        "Glob cannot do this on this platform: an OS facility is missing."
    ]


async def test_an_unexpected_exception_stays_masked_and_is_marked_in_the_log(
    ws: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def scandir_broken(*args: object, **kwargs: object) -> None:  # a mock: a bug in a tool
        raise RuntimeError("SECRET-DETAIL")

    server = make_server(ws)
    monkeypatch.setattr(os, "scandir", scandir_broken)
    caplog.set_level(logging.ERROR)
    async with Client(server) as client:
        with pytest.raises(ToolError) as raised:
            await client.call_tool("Glob", {"pattern": "*.py"})
    assert "SECRET-DETAIL" not in str(raised.value)
    marked = [r for r in caplog.records if getattr(r, UNEXPECTED, False)]
    assert marked and marked[0].getMessage() == "Glob raised an unexpected error"
    assert marked[0].exc_info and "SECRET-DETAIL" in str(marked[0].exc_info[1])
