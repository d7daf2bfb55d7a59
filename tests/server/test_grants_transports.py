"""Grants (SPEC §11) over the real transports: a stdio process (a grant lives in the process, both
eras) and real HTTP servers. Over HTTP a 2026-07-28 client has no session: its grant travels as a
handle sealed with the key the replicas share through the state directory, so two server
processes on one state directory (tests/server/test_replicas.py) honour each other's handles;
forged, expired and out-of-scope ones (another folder, another workspace) are ignored and the
user is asked, never told why. In-memory twins of each case: tests/server/test_grants.py."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from tests.conftest import blocks, call, http_server, stdio_transport, text
from tests.fakes import Answers

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("read_guard_off")]

GRANT_LINE = re.compile(r"\nGrant: (g-[0-9a-f]{8}\.[A-Za-z0-9_-]+): edits under `src/` for (.+)\.$")


async def write(c: Client[Any], path: str, handle: str = "") -> str:
    """A write as a model makes it (the handle passed back when it has one); the handle its
    result names, or ""."""
    args: dict[str, Any] = {"path": path, "content": f"{path}\n", "create_dirs": True}
    if handle:
        args["grant"] = handle
    r = await call(c, "WriteFile", **args)
    assert not r.is_error, text(r)
    found = GRANT_LINE.search("\n".join(blocks(r)))  # as sent: the grant on a line of its own
    return found.group(1) if found else ""


async def test_over_stdio_three_edits_under_one_folder_ask_once_and_a_fourth_outside_asks(
    ws: Path, mode: str
) -> None:
    answers = Answers("approve_folder")
    async with Client(stdio_transport(ws), mode=mode, elicitation_handler=answers) as c:
        for name in ("src/a.py", "src/b/c.py", "src/b/d.py"):
            assert await write(c, name) == ""  # the grant lives in the process: no handle
        assert len(answers.messages) == 1
        await write(c, "docs/e.md")
    assert len(answers.messages) == 2
    assert (
        answers.schemas[0]["properties"]["decision"]["enumNames"][2]
        == "Approve edits under `src/` for this session"
    )


async def test_over_http_a_handshake_session_keeps_its_grant(ws: Path) -> None:
    answers = Answers("approve_folder")
    with http_server(ws) as url:
        async with Client(url, mode="legacy", elicitation_handler=answers) as c:
            for name in ("src/a.py", "src/b.py", "src/c.py"):
                assert await write(c, name) == ""
            await write(c, "docs/d.md")
        async with Client(url, mode="legacy", elicitation_handler=answers) as c:
            await write(c, "src/e.py")  # another session: asked
    assert len(answers.messages) == 3


async def test_a_2026_handle_works_across_replicas_and_retries_and_nothing_forged_or_out_of_scope(
    ws: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    answers = Answers("approve_folder")
    with http_server(ws) as one, http_server(ws) as two, http_server(other) as elsewhere:
        async with (
            Client(one, elicitation_handler=answers) as c1,
            Client(two, elicitation_handler=answers) as c2,
        ):
            handle = await write(c1, "src/a.py")
            assert handle and len(answers.messages) == 1
            # Reused within its scope at either replica, as often as the model retries.
            for c, name in ((c2, "src/b.py"), (c1, "src/c/d.py"), (c2, "src/c/d.py"), (c2, "src/e.py")):
                assert await write(c, name, handle) == ""
            assert len(answers.messages) == 1
            # Out of scope (another folder), forged, or for a secret: the user is asked.
            ident, _, body = handle.partition(".")
            tampered = f"{ident}.{body[:-1]}{'A' if body[-1] != 'A' else 'B'}"
            for c, name, used in (
                (c2, "docs/f.md", handle),
                (c1, "src/g.py", tampered),
                (c2, "src/h.py", f"g-{'1' * 8}.{body}"),
                (c2, "src/.env", handle),
            ):
                before = len(answers.messages)
                await write(c, name, used)
                assert len(answers.messages) == before + 1, name
        # Another workspace sharing the state directory (and so the key): ignored there.
        async with Client(elsewhere, elicitation_handler=answers) as c3:
            before = len(answers.messages)
            await write(c3, "src/a.py", handle)
            assert len(answers.messages) == before + 1
    assert (ws / "src" / "e.py").exists() and (other / "src" / "a.py").exists()


async def test_a_2026_handle_stops_at_its_expiry_on_every_replica(ws: Path) -> None:
    answers = Answers("approve_folder")
    ttl = 8
    with http_server(ws, "--grant-ttl", f"{ttl}s") as one, http_server(ws, "--grant-ttl", f"{ttl}s") as two:
        async with (
            Client(one, elicitation_handler=answers) as c1,
            Client(two, elicitation_handler=answers) as c2,
        ):
            started = time.monotonic()
            handle = await write(c1, "src/a.py")
            assert handle
            assert await write(c2, "src/b.py", handle) == ""
            assert time.monotonic() - started < ttl - 1, "too slow to see the handle work before it expires"
            assert len(answers.messages) == 1
            # a handle holds its expiry in whole seconds, rounded up: it lasts at most ttl + 1 s
            time.sleep(max(0.0, ttl + 1.5 - (time.monotonic() - started)))
            for c, name in ((c1, "src/c.py"), (c2, "src/d.py")):
                await write(c, name, handle)
    assert len(answers.messages) == 3
