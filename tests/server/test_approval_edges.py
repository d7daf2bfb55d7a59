"""Approval's edges, reached in this process (issue 26) so that mutation testing sees them: a
handshake-era question given up on (no answer in time, a client that fails to answer, a client
whose stream closed), every refusal sentence compared whole, the first line of a client's error,
the sealed 2026-07-28 state, the re-ask limit and the replica prefix. tests/stress reaches some
of these too, but in subprocesses, which a mutant never runs in.

Real fastmcp clients against the real server in memory (a real uvicorn in this process where
the stream must close); the only stand-in is a client's elicitation handler."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import uvicorn
from fastmcp import Client
from mcp.types import ElicitResult as WireElicitResult
from mcp.types import InputRequiredResult

from filegate.server import approval
from filegate.server.app import build_server
from filegate.server.approval import OpenQuestions, SealedOperation
from filegate.server.http import build_http_app
from filegate.server.questions import Choices
from filegate.settings import Settings
from filegate.tools.outcome import WriteRequest
from tests.conftest import call, connect, free_port, make_server, text
from tests.fakes import Answers
from tests.rawstdio import INITIALIZED, initialize_request

# Their writes are about something else: see tests/tools/test_read_guard.py for the guard.
pytestmark = pytest.mark.usefixtures("read_guard_off")

REJECTED = (
    "The tool call is rejected by the user. Stop what you are doing and wait for the user to "
    "tell you how to proceed."
)
CANNOT = "this client cannot be asked (it does not support MCP elicitation)"
# A hang guard, never a measurement.
GUARD_S = 60.0


def logged(caplog: pytest.LogCaptureFixture, name: str = "filegate") -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == name]


def still_open(path: Path) -> bool:
    """Whether a question about ``path`` is still remembered as open (memory stays bounded: a
    question given up on is forgotten at once, not after SPENT_FOR_S)."""
    return str(path) in approval.QUESTIONS._newest


# --- a handshake-era question given up on ---------------------------------------------------


async def test_no_answer_within_the_ask_timeout_writes_nothing_and_says_so(
    ws: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO")
    monkeypatch.setattr(approval, "ASK_TIMEOUT_S", 1.5)  # 600 s in a real run
    back = asyncio.Event()

    async def away(*_: Any) -> Any:
        await back.wait()  # the user walked away, and comes back after the call ended
        return {"decision": "approve"}

    async with connect(ws, "legacy", client_elicitation_handler=away) as c:
        r = await asyncio.wait_for(call(c, "WriteFile", path="new.txt", content="x"), GUARD_S)
        back.set()
    assert r.is_error
    assert text(r) == (
        "The user did not answer the approval question within 1.5 seconds, so nothing was "
        "written. Ask the user, then try again."
    )
    assert not (ws / "new.txt").exists() and not still_open(ws / "new.txt")
    assert "no answer to the approval question within 1.5 seconds" in logged(caplog)
    assert logged(caplog, "filegate.writes") == [
        f"WriteFile did not write {ws / 'new.txt'} (approval: unanswered); client: fastmcp"
    ]


@pytest.mark.parametrize(
    ("error", "shown"),
    [
        ("dialog crashed", "dialog crashed"),
        ("  \n first line\nsecond line", "first line"),  # one line: the first that says something
        ("", "MCPError"),  # nothing said: the kind of error
        ("x" * 200, "x" * 200),  # 200 characters are kept whole
        ("y" * 201 + "\nmore", "y" * 199 + "…"),  # past that: cut, and says so
        ("tab\there \x1b[2K", "tab\\x09here \\x1b[2K"),  # escaped (SPEC §2.9)
    ],
)
async def test_a_client_that_fails_to_answer_writes_nothing_and_says_why_in_one_line(
    ws: Path, caplog: pytest.LogCaptureFixture, error: str, shown: str
) -> None:
    caplog.set_level("INFO")

    async def broken(*_: Any) -> Any:
        raise RuntimeError(error)  # fastmcp's client answers the server with this text

    async with connect(ws, "legacy", client_elicitation_handler=broken) as c:
        r = await call(c, "WriteFile", path="new.txt", content="data")
    assert r.is_error
    assert text(r) == f"Could not ask the user to approve this write ({shown}). Nothing was written."
    assert not (ws / "new.txt").exists() and not still_open(ws / "new.txt")
    if error == "dialog crashed":
        assert "elicitation failed: dialog crashed" in logged(caplog)
    assert logged(caplog, "filegate.writes") == [
        f"WriteFile did not write {ws / 'new.txt'} (approval: elicitation-failed); client: fastmcp"
    ]


@contextlib.asynccontextmanager
async def http_in_process(ws: Path) -> AsyncIterator[str]:
    """A real uvicorn serving filegate's HTTP app in this process; yields the endpoint's URL."""
    settings = Settings(workdir=ws, transport="http")
    server = build_server(settings)
    port = free_port()
    config = uvicorn.Config(build_http_app(server, settings), host="127.0.0.1", port=port, log_config=None)
    uv = uvicorn.Server(config)
    serving = asyncio.create_task(uv.serve())
    try:
        async with asyncio.timeout(GUARD_S):
            while not uv.started:
                await asyncio.sleep(0.02)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        uv.should_exit = True
        await asyncio.wait_for(serving, GUARD_S)


async def test_a_handshake_question_is_given_up_when_its_clients_stream_closes(
    ws: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """SPEC §6: the question goes out on the call's own stream (its POST); a client that closes
    it can never answer, so the server gives the question up at once (tests/stress kills a real
    client process for the same)."""
    caplog.set_level("INFO")
    sse = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    write = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
             "params": {"name": "WriteFile", "arguments": {"path": "f.txt", "content": "never"}}}  # fmt: skip
    async with http_in_process(ws) as url, httpx2.AsyncClient(timeout=GUARD_S) as http:
        init = initialize_request(1, "2025-11-25", {"elicitation": {}})
        opened = await http.post(url, json=init, headers=sse)
        headers = {
            **sse,
            "mcp-session-id": opened.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-11-25",
        }
        assert (await http.post(url, json=INITIALIZED, headers=headers)).status_code == 202
        async with http.stream("POST", url, json=write, headers=headers) as stream:
            async for line in stream.aiter_lines():
                if "elicitation/create" in line:
                    break  # asked: now the client goes away without answering
        # Closing a response before its end closes its connection.
        gone = "approval question cancelled: the client closed its stream"
        async with asyncio.timeout(GUARD_S):
            while gone not in logged(caplog):
                await asyncio.sleep(0.05)
    assert logged(caplog, "filegate.writes") == [
        f"WriteFile did not write {ws / 'f.txt'} (approval: client-gone); client: raw"
    ]
    # The result goes nowhere (the client left); the operator's line says what it was.
    assert (
        "WriteFile failed: The client closed the connection this approval question was sent on, "
        "so nothing was written."
    ) in logged(caplog)
    assert not (ws / "f.txt").exists() and not still_open(ws / "f.txt")


# --- clients that cannot be asked: each refusal whole ---------------------------------------


async def test_strict_without_elicitation_refuses_in_one_whole_sentence(ws: Path, mode: str) -> None:
    async with connect(ws, mode, approval="strict") as c:
        r = await call(c, "WriteFile", path="a.txt", content="x")
    assert r.is_error and text(r) == (
        f"filegate runs with `--approval strict` and {CANNOT}, so no write is allowed. Nothing "
        "was written. Use a client that supports elicitation, or start filegate with "
        "`--approval ask` to allow writes inside the workspace."
    )
    assert not (ws / "a.txt").exists()


@pytest.mark.parametrize("approval_mode", ["ask", "auto"])
async def test_a_sensitive_write_without_elicitation_is_refused_whole(
    ws: Path, mode: str, approval_mode: str
) -> None:
    """`--approval auto` never covers a sensitive file (SPEC §2.6): refused as under ask."""
    async with connect(ws, mode, approval=approval_mode) as c:
        r = await call(c, "WriteFile", path=".env", content="KEY=1\n")
    assert r.is_error and text(r) == (
        "`.env` matches a sensitive-file pattern, so writing it needs the user's approval every "
        f"time (`--approval auto` does not cover it), and {CANNOT}. Nothing was written. Use a "
        "client that supports MCP elicitation, or let the user edit the file."
    )
    assert not (ws / ".env").exists()


async def test_an_outside_write_without_elicitation_is_refused_whole_naming_both_flags(
    ws: Path, outside: Path, mode: str
) -> None:
    odd = outside / "line\nbreak"  # the directory the flag names is shown escaped
    odd.mkdir()
    async with connect(ws, mode) as c:
        r = await call(c, "WriteFile", path=str(odd / "o.txt"), content="x")
    shown = f"{outside}/line\\x0abreak"
    assert r.is_error and text(r) == (
        f"`{shown}/o.txt` is outside the workspace; writing there needs the user's approval, and "
        f"{CANNOT}. Nothing was written. To allow it, the user can start filegate with "
        f"`--add-dir {shown}` (to add that directory to the workspace) or with `--approval auto`."
    )
    assert not (odd / "o.txt").exists()


async def test_each_route_is_named_in_the_write_log(
    ws: Path, outside: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO")
    async with connect(ws, "legacy") as c:  # cannot elicit
        await call(c, "WriteFile", path="plain.txt", content="1")
        await call(c, "WriteFile", path=".env", content="K=1\n")
        await call(c, "WriteFile", path=str(outside / "refused.txt"), content="1")
    async with connect(ws, "legacy", approval="strict") as c:
        await call(c, "WriteFile", path="strict.txt", content="1")
    async with connect(ws, "legacy", approval="auto") as c:
        await call(c, "WriteFile", path=str(outside / "auto.txt"), content="1")
    async with connect(ws, "legacy", client_elicitation_handler=Answers("approve_for_session")) as c:
        await call(c, "WriteFile", path="asked.txt", content="1")
        await call(c, "WriteFile", path="later.txt", content="1")
    async with connect(ws, "legacy", client_elicitation_handler=Answers("approve")) as c:
        await call(c, "WriteFile", path="once.txt", content="1")
    async with connect(ws, "legacy", client_elicitation_handler=Answers("reject", feedback="no")) as c:
        await call(c, "WriteFile", path="no.txt", content="1")
    routes = [line.split("approval: ")[1].split(")")[0] for line in logged(caplog, "filegate.writes")]
    assert routes == [
        "no-elicitation",
        "no-elicitation",
        "no-elicitation",
        "strict",
        "auto",
        "elicited, approved for the session",
        "session",
        "elicited",
        "elicited",
    ]


# --- 2026-07-28: the re-ask limit and the sealed state ---------------------------------------


async def test_a_file_that_changes_under_every_answer_is_given_up_after_the_re_asks(
    ws: Path, caplog: pytest.LogCaptureFixture
) -> None:
    target = ws / "a.txt"
    target.write_text("0\n")
    messages: list[str] = []

    async def meddle(message: str, *_: Any) -> Any:
        messages.append(message)
        target.write_text(f"{len(messages)}\n")  # another write lands while the user looks
        return {"decision": "approve"}

    caplog.set_level("INFO")
    async with connect(ws, "auto", client_elicitation_handler=meddle) as c:
        r = await call(c, "WriteFile", path="a.txt", content="mine\n")
    assert logged(caplog, "filegate.writes") == [
        f"WriteFile did not write {target} (approval: stale); client: fastmcp"
    ]
    assert r.is_error and text(r) == (
        "`a.txt` changed 4 times while the user was being asked about this write (other writes "
        "to it are landing), so nothing was written. Read the file again and retry the edit."
    )
    assert len(messages) == approval.MAX_REASKS + 1 == 4
    changed = "The file changed since you were asked; this is the change as it stands now."
    assert [changed in m.splitlines() for m in messages] == [False, True, True, True]
    assert target.read_text() == "4\n"


def _approve() -> dict[str, Any]:
    return {"approval": WireElicitResult(action="accept", content={"decision": "approve"})}


async def test_a_state_sealed_by_an_older_version_approves_nothing(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """STATE_VERSION is bumped when the sealed shape changes: an answer sealed before that is no
    approval, and the user is asked again."""
    args = {"path": "a.txt", "content": "x"}
    async with connect(ws, "auto", client_elicitation_handler=Answers()) as c:
        with monkeypatch.context() as m:  # only this: undo() would also drop the state folder's
            m.setattr(approval, "STATE_VERSION", approval.STATE_VERSION - 1)
            asked = await c.session.call_tool(name="WriteFile", arguments=args, allow_input_required=True)
        assert isinstance(asked, InputRequiredResult)
        retry = await c.session.call_tool(
            name="WriteFile", arguments=args, input_responses=_approve(),
            request_state=asked.request_state, allow_input_required=True,
        )  # fmt: skip
    assert isinstance(retry, InputRequiredResult)
    assert not (ws / "a.txt").exists()


async def test_an_answer_under_another_key_is_no_answer(ws: Path) -> None:
    args = {"path": "a.txt", "content": "x"}
    async with connect(ws, "auto", client_elicitation_handler=Answers()) as c:
        asked = await c.session.call_tool(name="WriteFile", arguments=args, allow_input_required=True)
        assert isinstance(asked, InputRequiredResult)
        retry = await c.session.call_tool(
            name="WriteFile", arguments=args, input_responses={"other": _approve()["approval"]},
            request_state=asked.request_state, allow_input_required=True,
        )  # fmt: skip
    assert isinstance(retry, InputRequiredResult)
    assert not (ws / "a.txt").exists()


def _request(**kw: Any) -> WriteRequest:
    fields: dict[str, Any] = dict(
        tool="WriteFile", shown="a.txt", real=Path("/w/a.txt"), inside=True, sensitive=False,
        old_hash="o", new_hash="n", old_size=1, new_size=2, old_lines=1, new_lines=1, diff="",
    )  # fmt: skip
    fields.update(kw)
    return WriteRequest(**fields)


def test_the_sealed_operation_round_trips_and_binds_tool_path_and_both_hashes() -> None:
    choices = Choices(file=True, folder="src/", write_class="inside")
    sealed = SealedOperation.of(_request(), choices, "n0nce", 2)
    offered = ["approve", "approve_file", "approve_folder", "approve_for_session", "reject"]
    assert sealed == SealedOperation(
        approval.STATE_VERSION, "WriteFile", "/w/a.txt", "o", "n", offered, "n0nce", 2
    )
    assert SealedOperation.parse(sealed.dump()) == sealed
    assert sealed.dump() == (  # compact JSON: the SDK seals it into every input-required result
        f'{{"v":{approval.STATE_VERSION},"tool":"WriteFile","path":"/w/a.txt","old":"o","new":"n",'
        '"choices":["approve","approve_file","approve_folder","approve_for_session","reject"],'
        '"nonce":"n0nce","reasks":2}'
    )
    assert SealedOperation.of(_request(), Choices(), "n").reasks == 0
    assert sealed.matches(_request())
    for other in (dict(tool="StrReplaceFile"), dict(real=Path("/w/b.txt"))):
        assert not sealed.same_target(_request(**other)) and not sealed.matches(_request(**other))
    for other in (dict(old_hash="x"), dict(new_hash="x")):
        assert sealed.same_target(_request(**other)) and not sealed.matches(_request(**other))


@pytest.mark.parametrize(
    "state",
    [None, "", "not json", "[1]", "{}", '{"v": 4, "tool": "WriteFile"}'],
)
def test_a_state_that_is_not_a_sealed_operation_parses_to_nothing(state: str | None) -> None:
    assert SealedOperation.parse(state) is None


def test_a_state_of_another_version_or_with_unknown_fields_parses_to_nothing() -> None:
    fields = json.loads(SealedOperation.of(_request(), Choices(), "n").dump())
    assert SealedOperation.parse(json.dumps(fields)) is not None
    assert SealedOperation.parse(json.dumps({**fields, "v": approval.STATE_VERSION - 1})) is None
    assert SealedOperation.parse(json.dumps({**fields, "extra": 1})) is None


# --- replicas: a shared state key -----------------------------------------------------------


def test_with_replicas_a_question_another_process_asked_counts_as_newest_once() -> None:
    here, there = OpenQuestions(), OpenQuestions()  # two processes' memories
    theirs = there.open("/f")
    assert here.answered("/f", theirs) == "superseded"  # no replicas: never asked here
    theirs = there.open("/f")
    assert here.answered("/f", theirs, replicas=True) == "newest"
    assert here.answered("/f", theirs, replicas=True) == "replayed"
    # One this process asked is judged as always, replicas or not.
    mine = here.open("/f")
    here.open("/f")
    assert here.answered("/f", mine, replicas=True) == "superseded"


def test_each_process_names_its_questions_with_a_prefix_of_its_own() -> None:
    here, there = OpenQuestions(), OpenQuestions()
    a, b = here.open("/f"), here.open("/g")
    prefix = a.split("-")[0] + "-"
    assert b.startswith(prefix) and not there.open("/f").startswith(prefix)
    assert len(a) == len(prefix) + 32 and a != b


async def test_a_replica_accepts_another_replicas_sealed_answer_once(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two servers with one state key, each with its own memory of questions (as two processes
    have): the answer to a question one asked writes through the other, once."""
    key = "replica-test-key-0123456789abcdef"
    (ws / "a.txt").write_text("old\n")
    args = {"path": "a.txt", "content": "new\n"}
    async with (
        Client(make_server(ws, state_key=key), elicitation_handler=Answers()) as first,
        Client(make_server(ws, state_key=key), elicitation_handler=Answers()) as second,
    ):
        asked = await first.session.call_tool(name="WriteFile", arguments=args, allow_input_required=True)
        assert isinstance(asked, InputRequiredResult)
        monkeypatch.setattr(approval, "QUESTIONS", OpenQuestions())  # the other process's memory
        done = await second.session.call_tool(
            name="WriteFile", arguments=args, input_responses=_approve(),
            request_state=asked.request_state, allow_input_required=True,
        )  # fmt: skip
        assert not isinstance(done, InputRequiredResult) and not done.is_error, done
        assert (ws / "a.txt").read_text() == "new\n"
        (ws / "a.txt").write_text("old\n")  # the old bytes again: only the nonce can tell
        replay = await second.session.call_tool(
            name="WriteFile", arguments=args, input_responses=_approve(),
            request_state=asked.request_state, allow_input_required=True,
        )  # fmt: skip
    assert not isinstance(replay, InputRequiredResult) and replay.is_error
    assert replay.content[0].text == (
        "This approval was already used: an answer approves one write, once. Nothing was written."
    )
    assert (ws / "a.txt").read_text() == "old\n"


# --- the form, as a client receives it -------------------------------------------------------


def _form(choices: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Decision",
                "enum": [value for value, _ in choices],
                "enumNames": [title for _, title in choices],
                "default": "approve",
            },
            "feedback": {
                "type": "string",
                "title": "Feedback",
                "description": "Optional: why, or what to do instead (the model reads this).",
            },
        },
        "required": ["decision"],
    }


async def test_the_form_offers_the_session_choice_by_write_class_and_never_for_a_secret(
    ws: Path, outside: Path
) -> None:
    answers = Answers("reject")
    async with connect(ws, "legacy", client_elicitation_handler=answers) as c:
        await call(c, "WriteFile", path="in.txt", content="1")
        await call(c, "WriteFile", path="src/pkg/in.txt", content="1", create_dirs=True)
        await call(c, "WriteFile", path=str(outside / "out.txt"), content="2")
        await call(c, "WriteFile", path=".env", content="K=1\n")
    approve, reject = ("approve", "Approve this write"), ("reject", "Reject")
    this_file = ("approve_file", "Approve this file for this session")
    session = "Approve all writes {} the workspace for this session"
    # SPEC §11: a file directly in the workspace has no folder to grant (never the root
    # alone); one deeper is offered its top folder; outside, neither file nor folder.
    assert answers.schemas == [
        _form([approve, this_file, ("approve_for_session", session.format("inside")), reject]),
        _form(
            [
                approve,
                this_file,
                ("approve_folder", "Approve edits under `src/` for this session"),
                ("approve_for_session", session.format("inside")),
                reject,
            ]
        ),
        _form([approve, ("approve_for_session", session.format("outside")), reject]),
        _form([approve, reject]),
    ]


def test_the_whole_question_in_order_for_a_change_and_for_a_secret() -> None:
    from filegate.server.questions import UNSAFE_NOTE, approval_message

    notes = ("Directories created: d/.",)
    change = _request(tool="StrReplaceFile", diff="-a\n+b", notes=notes, unsafe=True)
    assert approval_message(change, changed=True) == "\n".join(
        [
            "Inside the workspace: StrReplaceFile wants to change `a.txt`.",
            UNSAFE_NOTE,
            "The file changed since you were asked; this is the change as it stands now.",
            "Size: 1 → 2 bytes (+1); lines: 1 → 1 (+0).",
            *notes,
            "",
            "-a\n+b",
        ]
    )
    secret = _request(tool="StrReplaceFile", sensitive=True, inside=False, diff="-a\n+b", notes=notes)
    assert approval_message(secret) == "\n".join(
        [
            "OUTSIDE the workspace, SENSITIVE file (it may hold secrets): StrReplaceFile wants to "
            "edit `a.txt`.",
            "The diff is hidden because the file is sensitive: its content, size and line counts "
            "are not shown. Below is the change as the model asked for it.",
            *notes,
            "",
            "-a\n+b",
        ]
    )


def test_open_questions_and_spent_answers_are_swept_only_past_64_of_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The sweep runs only once there is something to sweep (amortised): with every entry past
    its time, 64 are kept and the 65th makes the sweep forget them all."""
    monkeypatch.setattr(approval, "SPENT_FOR_S", -1.0)
    for count, verdict in ((64, "newest"), (65, "superseded")):
        questions = OpenQuestions()
        nonces = [questions.open(f"/f{i}") for i in range(count)]
        assert questions.answered("/f0", nonces[0]) == verdict
    for count, verdict in ((64, "replayed"), (65, "superseded")):
        questions = OpenQuestions()
        spent = [questions.open("/f") for _ in range(count)]
        for nonce in spent:
            questions.answered("/f", nonce)
        assert questions.answered("/f", spent[0]) == verdict


def test_at_most_max_open_questions_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(approval, "MAX_OPEN_QUESTIONS", 3)
    questions = OpenQuestions()
    nonces = [questions.open(f"/f{i}") for i in range(3)]
    assert questions.answered("/f0", nonces[0]) == "newest"  # three are kept
    # Past that the oldest question goes; asking about a file again makes its question the newest.
    questions = OpenQuestions()
    first, _, again = questions.open("/f0"), questions.open("/f1"), questions.open("/f0")
    questions.open("/f2")
    questions.open("/f3")
    assert questions.answered("/f1", _) == "superseded"  # the oldest: forgotten
    assert questions.answered("/f0", again) == "newest" and questions.answered("/f0", first) == "superseded"


async def test_a_2026_stdio_process_is_one_session(ws: Path) -> None:
    """One stdio process serves one client, so on 2026-07-28 "approve for this session" is
    offered and remembered there (tests/server/test_approval.py checks it over a real stdio
    subprocess). fastmcp names the transport in a context variable that its stdio runner sets
    before serving; set here the same way, so the in-memory server serves as over stdio."""
    from fastmcp.server.context import reset_transport, set_transport

    answers = Answers("approve_for_session")
    token = set_transport("stdio")
    try:
        async with connect(ws, "auto", client_elicitation_handler=answers) as c:
            for name in ("a.txt", "b.txt"):
                assert not (await call(c, "WriteFile", path=name, content="x")).is_error
    finally:
        reset_transport(token)
    assert answers.choices == ["approve", "approve_file", "approve_for_session", "reject"]
    assert len(answers.messages) == 1 and (ws / "b.txt").read_text() == "x"


async def test_each_2026_route_is_named_in_the_write_log(ws: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO")

    def answer(action: str, decision: str | None = None) -> dict[str, Any]:
        content = None if decision is None else {"decision": decision}
        return {"approval": WireElicitResult(action=action, content=content)}  # type: ignore[arg-type]

    async with connect(ws, "auto", client_elicitation_handler=Answers()) as c:

        async def retry(args: dict[str, Any], state: str | None, answers: dict[str, Any]) -> Any:
            return await c.session.call_tool(
                name="WriteFile", arguments=args, input_responses=answers,
                request_state=state, allow_input_required=True,
            )  # fmt: skip

        async def ask(args: dict[str, Any]) -> str:
            asked = await c.session.call_tool(name="WriteFile", arguments=args, allow_input_required=True)
            assert isinstance(asked, InputRequiredResult) and asked.request_state
            return asked.request_state

        (ws / "a.txt").write_text("old\n")
        args = {"path": "a.txt", "content": "A"}
        state = await ask(args)
        assert not (await retry(args, state, answer("accept", "approve"))).is_error
        (ws / "a.txt").write_text("old\n")  # the old bytes again: only the nonce can tell
        assert (await retry(args, state, answer("accept", "approve"))).is_error  # replayed
        old = await ask(args)
        newer = await ask(args)
        assert (await retry(args, old, answer("accept", "approve"))).is_error  # superseded
        assert (await retry(args, newer, answer("cancel"))).is_error
        rejected = await retry(args, await ask(args), answer("accept", "reject"))
        # A decline counts as a rejection, whatever content a client sends with it.
        declined = await retry(args, await ask(args), answer("decline", "approve"))
        assert rejected.is_error and declined.is_error
        assert rejected.content[0].text == declined.content[0].text == REJECTED
        # "For this session" where the form did not offer it (a secret): approves this write only.
        secret = {"path": ".env", "content": "K=1\n"}
        session = answer("accept", "approve_for_session")
        assert not (await retry(secret, await ask(secret), session)).is_error
    routes = [line.split("approval: ")[1].split(")")[0] for line in logged(caplog, "filegate.writes")]
    assert routes == ["elicited", "replayed", "superseded", "elicited", "elicited", "elicited", "elicited"]
    assert (ws / "a.txt").read_text() == "old\n"
