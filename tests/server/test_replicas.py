"""Several filegate processes serving one workspace (issue 13: replicas behind a load
balancer, or several clients on one project): real HTTP server processes, real clients.

- A shared state key (FILEGATE_STATE_KEY): any replica accepts the sealed 2026-07-28 answer
  to another replica's question, once; without it, the answer is worthless elsewhere
  (tests/stress/test_misbehaviour.py::test_a_state_sealed_by_another_server_is_refused).
- Writes to one file are serialised across processes (an advisory lock beside the per-path
  lock): concurrent edits spread over three processes all land.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from mcp.types import ElicitResult as WireElicitResult
from mcp.types import InputRequiredResult

from tests.conftest import WRITE_ID, text, write_id_of
from tests.stress.procs import HttpServer, http_server

# Their writes are about something else: see tests/tools/test_read_guard.py for the guard.
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("read_guard_off")]

STATE_KEY = "replica-test-key-0123456789abcdef"


@pytest.fixture
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The servers' state directory (lock files), shared by them, outside the workspace."""
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


async def _never_asked(*_: Any) -> Any:
    raise AssertionError("the retry carries its answer; nobody is asked")


async def _ask(client: Client[Any], args: dict[str, Any]) -> InputRequiredResult:
    first = await client.session.call_tool(name="WriteFile", arguments=args, allow_input_required=True)
    assert isinstance(first, InputRequiredResult) and first.request_state, first
    return first


async def _answer(client: Client[Any], args: dict[str, Any], state: str | None) -> Any:
    answer = {"approval": WireElicitResult(action="accept", content={"decision": "approve"})}
    return await client.session.call_tool(
        name="WriteFile",
        arguments=args,
        input_responses=answer,
        request_state=state,
        allow_input_required=True,
    )


async def test_a_replica_accepts_another_replicas_sealed_answer_once(
    ws: Path, state_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FILEGATE_STATE_KEY", STATE_KEY)
    args = {"path": "a.txt", "content": "from replica two\n"}
    with http_server(ws) as one, http_server(ws) as two:
        async with Client(one.url, elicitation_handler=_never_asked) as c1:
            first = await _ask(c1, args)
        assert not (ws / "a.txt").exists()  # nothing written before the answer
        async with Client(two.url, elicitation_handler=_never_asked) as c2:
            done = await _answer(c2, args, first.request_state)
        assert not done.is_error, done
        assert (ws / "a.txt").read_text() == "from replica two\n"
        # The same answer again, at either replica: it approved one write, which happened;
        # the file no longer holds what was asked about, so nothing more is written.
        (ws / "a.txt").write_text("changed since\n")
        for url in (one.url, two.url):
            async with Client(url, elicitation_handler=_never_asked) as c:
                again = await _answer(c, args, first.request_state)
            assert isinstance(again, InputRequiredResult) or again.is_error, again
        assert (ws / "a.txt").read_text() == "changed since\n"


async def test_a_replayed_answer_at_the_same_replica_writes_nothing(
    ws: Path, state_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replay is caught per process (its spent nonces); the shared key does not loosen that."""
    monkeypatch.setenv("FILEGATE_STATE_KEY", STATE_KEY)
    args = {"path": "b.txt", "content": "once\n"}
    with http_server(ws) as one:
        async with Client(one.url, elicitation_handler=_never_asked) as c:
            first = await _ask(c, args)
            assert not (await _answer(c, args, first.request_state)).is_error
            (ws / "b.txt").unlink()  # as it was when asked: only the nonce can tell
            replay = await _answer(c, args, first.request_state)
    assert replay.is_error and "already used" in text(replay), replay
    assert not (ws / "b.txt").exists()


def _edit(k: int) -> dict[str, Any]:
    return {"path": "shared.txt", "edit": {"old": f"line {k}: old\n", "new": f"line {k}: new\n"}}


async def _spread_edits(urls: list[str], edits: int) -> list[Any]:
    async with contextlib.AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(Client(u, elicitation_handler=_never_asked)) for u in urls]
        calls = [
            clients[k % len(clients)].call_tool("StrReplaceFile", _edit(k), raise_on_error=False, timeout=60)
            for k in range(edits)
        ]
        return list(await asyncio.gather(*calls))


def _lost(ws: Path, results: list[Any], edits: int) -> tuple[list[str], list[int]]:
    errors = [text(r) for r in results if r.is_error]
    lines = (ws / "shared.txt").read_text().splitlines()
    missing = [k for k in range(edits) if lines[k] != f"line {k}: new"]
    return errors, missing


async def _run(ws: Path, processes: int, edits: int) -> tuple[list[str], list[int]]:
    (ws / "shared.txt").write_text("".join(f"line {k}: old\n" for k in range(edits)))
    with contextlib.ExitStack() as stack:
        servers: list[HttpServer] = [
            stack.enter_context(http_server(ws, "--approval", "auto")) for _ in range(processes)
        ]
        results = await _spread_edits([s.url for s in servers], edits)
    return _lost(ws, results, edits)


async def test_concurrent_edits_of_one_file_over_three_processes_all_land(ws: Path, state_home: Path) -> None:
    errors, missing = await _run(ws, processes=3, edits=24)
    assert errors == [] and missing == [], (errors[:3], missing)
    # the lock lived outside ws, and its last holder removed it
    assert (state_home / "filegate" / "locks").is_dir()
    assert list((state_home / "filegate" / "locks").iterdir()) == []


@pytest.mark.slow
async def test_fifty_concurrent_edits_over_three_processes_lose_nothing(ws: Path, state_home: Path) -> None:
    errors, missing = await _run(ws, processes=3, edits=50)
    assert errors == [] and missing == [], (errors[:3], missing)


# --- the write history, shared through the state directory (SPEC §8.4) ---------------------


@pytest.mark.slow
async def test_a_write_made_through_one_replica_is_undone_through_another(ws: Path, state_home: Path) -> None:
    (ws / "a.txt").write_text("before\n")
    with http_server(ws, "--approval", "auto") as one, http_server(ws, "--approval", "auto") as two:
        async with Client(one.url) as c1, Client(two.url) as c2:
            # Writes through both at once: every id is distinct, across the two processes.
            calls = [
                c.call_tool("WriteFile", {"path": f"f{k}.txt", "content": f"{k}\n"}, raise_on_error=False)
                for k, c in enumerate([c1, c2] * 8)
            ]
            ids = [write_id_of(text(r)) for r in await asyncio.gather(*calls)]
            assert len(set(ids)) == len(ids) == 16
            written = await c1.call_tool(
                "WriteFile", {"path": "a.txt", "content": "after\n"}, raise_on_error=False
            )
            undo = await c2.call_tool(
                "UndoWrite", {"write_id": write_id_of(text(written))}, raise_on_error=False
            )
    assert not undo.is_error, text(undo)
    assert WRITE_ID.search(text(undo))
    assert (ws / "a.txt").read_text() == "before\n"
    assert (state_home / "filegate" / "history" / "history.jsonl").is_file()


# --- ApplyPatch: two replicas' sets over shared files never interleave (SPEC §10) -----------


async def test_overlapping_sets_through_two_replicas_never_interleave(ws: Path, state_home: Path) -> None:
    """Each set writes its own token into the same three files, listed in opposite orders by
    the two replicas: each set takes every file's lock in one order (deadlock-free), so after
    each round all three files hold one set's token, never a mix of both."""
    names = ["x.txt", "y.txt", "z.txt"]
    for name in names:
        (ws / name).write_text("start\n")
    with http_server(ws, "--approval", "auto") as one, http_server(ws, "--approval", "auto") as two:
        async with Client(one.url) as c1, Client(two.url) as c2:
            for round_ in range(12):
                calls = []
                for who, (client, order) in enumerate(((c1, names), (c2, names[::-1]))):
                    changes = [{"path": n, "content": f"set {who} round {round_}\n"} for n in order]
                    calls.append(client.call_tool("ApplyPatch", {"changes": changes}, raise_on_error=False))
                results = await asyncio.wait_for(asyncio.gather(*calls), 60)
                for r in results:
                    assert not r.is_error, text(r)
                held = {(ws / n).read_text() for n in names}
                assert len(held) == 1, f"round {round_}: the sets interleaved: {held}"
