"""Approval without fatigue (SPEC §11) through real fastmcp clients in both protocol eras.

In memory, a handshake-era client has a session (grants live in it); a 2026-07-28 client has none
(as over HTTP): a granted answer's result names a sealed handle, which the test passes back as
`grant`, as a model would. The same over a real stdio process and two real HTTP replicas is
tests/server/test_grants_transports.py (slow). Every test asserts how often the user was asked
and what is on disk.
"""

from __future__ import annotations

import base64
import errno
import gc
import io
import json
import logging
import os
import re
import struct
import time
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from mcp.types import ElicitResult as WireElicitResult
from mcp.types import Implementation, InputRequiredResult

from filegate.fsio.grantstore import grant_key, grants_dir, listing, live_grants
from filegate.server.app import build_server
from filegate.settings import Settings
from tests.conftest import blocks, call, connect, text, write_id_of
from tests.fakes import Answers

pytestmark = pytest.mark.usefixtures("read_guard_off")

# How a granted 2026-07-28 result ends (SPEC §11).
GRANT_LINE = re.compile(r"^Grant: (g-[0-9a-f]{8}\.[A-Za-z0-9_-]+): (edits (?:under|of) `[^`]+`) for (.+)\.$")


def grant_of(result: Any) -> str:
    """The handle a result's last line names (it must be there), as sent (SPEC §9: its own line)."""
    last = "\n".join(blocks(result)).splitlines()[-1]
    found = GRANT_LINE.match(last)
    assert found, text(result)
    return found.group(1)


class Writer:
    """Writes through a client as a model would: over 2026-07-28 it keeps the last handle a
    result named and passes it back as `grant` (SPEC §11); in a session it needs none."""

    def __init__(self, client: Client[Any]) -> None:
        self.client = client
        self.handle = ""

    async def write(self, path: str, content: str = "x\n", **extra: Any) -> Any:
        args = {"path": path, "content": content, "create_dirs": True, **extra}
        if self.handle:
            args["grant"] = self.handle
        result = await call(self.client, "WriteFile", **args)
        sent = "\n".join(blocks(result))
        found = GRANT_LINE.match(sent.splitlines()[-1]) if sent else None
        if found:
            self.handle = found.group(1)
        return result


# --- three edits under one folder ask once; a fourth outside it asks ---------------------------


async def test_three_edits_under_one_folder_ask_once_and_a_fourth_outside_asks(ws: Path, mode: str) -> None:
    answers = Answers("approve_folder")
    async with connect(ws, mode, client_elicitation_handler=answers) as c:
        w = Writer(c)
        for name in ("src/a.py", "src/pkg/b.py", "src/pkg/deep/c.py"):
            r = await w.write(name)
            assert not r.is_error, text(r)
        assert len(answers.messages) == 1
        r = await w.write("docs/d.md")
        assert not r.is_error, text(r)
    assert len(answers.messages) == 2
    assert answers.messages[1].startswith("Inside the workspace: WriteFile wants to create `docs/d.md`.")
    assert all((ws / p).exists() for p in ("src/a.py", "src/pkg/b.py", "src/pkg/deep/c.py", "docs/d.md"))


async def test_a_2026_grant_ends_the_result_after_the_write_id_and_is_reused_until_it_expires(
    ws: Path,
) -> None:
    answers = Answers("approve_folder")
    async with connect(ws, "auto", client_elicitation_handler=answers) as c:
        first = await call(c, "WriteFile", path="src/a.py", content="1\n", create_dirs=True)
        lines = "\n".join(blocks(first)).splitlines()
        write_id_of(lines[-2])  # the write id, then the grant line (SPEC §9's order)
        assert GRANT_LINE.match(lines[-1]).group(2, 3) == ("edits under `src/`", "30 minutes")  # type: ignore[union-attr]
        handle = grant_of(first)
        for i in range(3):  # reused within its scope: nobody is asked, no new grant is named
            r = await call(
                c,
                "StrReplaceFile",
                path="src/a.py",
                edit={"old": f"{i + 1}", "new": f"{i + 2}"},
                grant=handle,
            )
            assert not r.is_error and "Grant:" not in text(r), text(r)
    assert len(answers.messages) == 1 and (ws / "src/a.py").read_text() == "4\n"


async def test_a_file_grant_covers_that_file_and_its_undo_but_no_other(ws: Path, mode: str) -> None:
    (ws / "src").mkdir()
    (ws / "src" / "a.py").write_text("one\n")
    answers = Answers("approve_file")
    async with connect(ws, mode, client_elicitation_handler=answers) as c:
        w = Writer(c)
        first = await w.write("src/a.py", "two\n")
        assert not first.is_error, text(first)
        second = await w.write("src/a.py", "three\n")
        assert not second.is_error and len(answers.messages) == 1
        undo = await call(c, "UndoWrite", write_id=write_id_of(text(second)), grant=w.handle)
        assert not undo.is_error, text(undo)
        assert len(answers.messages) == 1  # UndoWrite is a write the grant covers
        assert not (await w.write("src/b.py")).is_error
    assert len(answers.messages) == 2  # another file: asked
    assert (ws / "src" / "a.py").read_text() == "two\n"


async def test_a_file_directly_in_the_workspace_is_offered_no_folder(ws: Path, mode: str) -> None:
    answers = Answers("reject")
    async with connect(ws, mode, client_elicitation_handler=answers) as c:
        await call(c, "WriteFile", path="top.txt", content="x")
        await call(c, "WriteFile", path="src/a.py", content="x", create_dirs=True)
    root_choices, src_choices = ([*s["properties"]["decision"]["enum"]] for s in answers.schemas)
    assert "approve_folder" not in root_choices and "approve_file" in root_choices
    assert "approve_folder" in src_choices


# --- asked every time, whatever was granted --------------------------------------------------


async def test_secrets_rule_files_and_ask_rules_are_asked_whatever_was_granted(ws: Path, mode: str) -> None:
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"ask": ["Edit(src/gen/**)"]}}))
    answers = Answers("approve_folder")
    async with connect(ws, mode, client_elicitation_handler=answers) as c:
        w = Writer(c)
        assert not (await w.write("src/a.py")).is_error
        assert w.handle or mode == "legacy"
        for path in ("src/.env", "src/.cursorignore", "src/gen/out.py", "src/id_rsa"):
            before = len(answers.messages)
            r = await w.write(path)
            assert not r.is_error, text(r)
            assert len(answers.messages) == before + 1, path
            # ... and nothing beyond approve / reject is offered for them
            assert answers.choices == ["approve", "reject"], path
        assert not (await w.write("src/b.py")).is_error
    assert len(answers.messages) == 5


async def test_grants_never_cross_to_another_session(ws: Path) -> None:
    server = build_server(Settings(workdir=ws))
    first, second = Answers("approve_folder"), Answers("reject")
    async with Client(server, mode="legacy", elicitation_handler=first) as c1:
        assert not (await call(c1, "WriteFile", path="src/a.py", content="1", create_dirs=True)).is_error
        async with Client(server, mode="legacy", elicitation_handler=second) as c2:
            r = await call(c2, "WriteFile", path="src/b.py", content="2")
        assert r.is_error and "rejected by the user" in text(r)
        assert not (await call(c1, "WriteFile", path="src/c.py", content="3")).is_error
    assert len(first.messages) == 1 and len(second.messages) == 1
    assert not (ws / "src" / "b.py").exists()


# --- handles: forged, expired, out of scope, another workspace --------------------------------


async def _asked(c: Client[Any], path: str, handle: str) -> bool:
    """Whether a 2026-07-28 write carrying ``handle`` is asked about (and not an error)."""
    r = await c.session.call_tool(
        name="WriteFile",
        arguments={"path": path, "content": "y", "create_dirs": True, "grant": handle},
        allow_input_required=True,
    )
    if isinstance(r, InputRequiredResult):
        return True
    assert not r.is_error, r
    return False


async def _minted(c: Client[Any], path: str, decision: str = "approve_folder") -> str:
    asked = await c.session.call_tool(
        name="WriteFile",
        arguments={"path": path, "content": "x", "create_dirs": True},
        allow_input_required=True,
    )
    assert isinstance(asked, InputRequiredResult)
    done = await c.session.call_tool(
        name="WriteFile",
        arguments={"path": path, "content": "x", "create_dirs": True},
        input_responses={"approval": WireElicitResult(action="accept", content={"decision": decision})},
        request_state=asked.request_state,
        allow_input_required=True,
    )
    assert not isinstance(done, InputRequiredResult) and not done.is_error, done
    return grant_of(done)


async def test_a_forged_or_out_of_scope_handle_is_ignored_and_the_user_asked(ws: Path) -> None:
    async with Client(build_server(Settings(workdir=ws)), elicitation_handler=Answers()) as c:
        handle = await _minted(c, "src/a.py")
        assert not await _asked(c, "src/b.py", handle)
        ident, _, body = handle.partition(".")
        for forged in (
            f"{ident}.{body[:-2]}{'AA' if body[-2:] != 'AA' else 'BB'}",
            f"g-{'0' * 8}.{body}",
            "g-deadbeef.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            "not a handle",
        ):
            assert await _asked(c, "src/c.py", forged), forged
        assert await _asked(c, "docs/a.md", handle)  # another folder
        assert await _asked(c, "top.txt", handle)
        assert await _asked(c, "src/.env", handle)
    assert not (ws / "src" / "c.py").exists() and not (ws / "docs").exists()


def expiry_of(handle: str) -> int:
    """The expiry a handle carries (SPEC §11's layout: after the id, version, kind, expiry)."""
    sealed = handle.partition(".")[2]
    raw = base64.urlsafe_b64decode(sealed + "=" * (-len(sealed) % 4))
    expires: int = struct.unpack_from(">BcI", raw)[2]
    return expires


async def test_a_handle_lasts_its_whole_ttl_and_is_ignored_once_expired(ws: Path) -> None:
    """Never a second less than --grant-ttl (a 1-second TTL once gave handles that had expired
    by the next call: the expiry was rounded down to the second)."""
    async with Client(build_server(Settings(workdir=ws, grant_ttl=2)), elicitation_handler=Answers()) as c:
        before = time.time()
        handle = await _minted(c, "src/a.py")
        expires = expiry_of(handle)
        assert before + 2 <= expires <= time.time() + 3
        assert not await _asked(c, "src/b.py", handle)
        time.sleep(max(0.0, expires - time.time()) + 0.05)
        assert await _asked(c, "src/c.py", handle)


async def test_a_handle_from_another_workspace_is_ignored(ws: Path, tmp_path: Path) -> None:
    """Two servers sharing the state directory (its key): one serving another folder."""
    other = tmp_path / "other"
    (other / "src").mkdir(parents=True)
    async with Client(build_server(Settings(workdir=other)), elicitation_handler=Answers()) as c:
        handle = await _minted(c, "src/a.py")
    async with Client(build_server(Settings(workdir=ws)), elicitation_handler=Answers()) as c:
        assert await _asked(c, "src/a.py", handle)
    async with Client(build_server(Settings(workdir=other)), elicitation_handler=Answers()) as c:
        assert not await _asked(c, "src/b.py", handle)  # its own workspace: still good


async def test_a_grant_answer_the_form_did_not_offer_approves_this_write_only(ws: Path) -> None:
    """A client that does not check its answer sends approve_folder for a file in the root."""
    async with Client(build_server(Settings(workdir=ws)), elicitation_handler=Answers()) as c:
        args = {"path": "top.txt", "content": "x"}
        asked = await c.session.call_tool(name="WriteFile", arguments=args, allow_input_required=True)
        assert isinstance(asked, InputRequiredResult)
        done = await c.session.call_tool(
            name="WriteFile",
            arguments=args,
            input_responses={
                "approval": WireElicitResult(action="accept", content={"decision": "approve_folder"})
            },
            request_state=asked.request_state,
            allow_input_required=True,
        )
        assert not isinstance(done, InputRequiredResult) and not done.is_error
        assert "Grant:" not in text(done)


# --- the user's own allow rules; --approval ask-always ----------------------------------------


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = Path(os.path.realpath(tmp_path)) / "home"
    (h / ".claude").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(h))
    return h


def allow(path: Path, *rules: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": {"allow": list(rules)}}))


async def test_the_users_allow_rules_are_not_asked_a_cloned_repositorys_change_nothing(
    ws: Path, home: Path, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "filegate.writes")
    allow(home / ".claude" / "settings.json", "Edit(src/**)")
    allow(ws / ".claude" / "settings.json", "Edit(**)", "Write(**)")  # the repository's own
    answers = Answers("approve")
    async with connect(ws, mode, client_elicitation_handler=answers) as c:
        assert not (await call(c, "WriteFile", path="src/a.py", content="x", create_dirs=True)).is_error
        assert len(answers.messages) == 0
        assert not (await call(c, "WriteFile", path="docs/a.md", content="x", create_dirs=True)).is_error
        assert len(answers.messages) == 1  # the repository's Edit(**) counts for nothing
        assert not (await call(c, "WriteFile", path="src/.env", content="K=1\n")).is_error
        assert len(answers.messages) == 2  # never a secret
    assert "(inside workspace, approval: allow-rule)" in caplog.text


async def test_approval_ask_always_offers_no_grant_and_honours_none(ws: Path, home: Path, mode: str) -> None:
    allow(home / ".claude" / "settings.json", "Edit(src/**)")
    # a handle minted before, by a server that honours grants
    async with Client(build_server(Settings(workdir=ws)), elicitation_handler=Answers()) as c:
        handle = await _minted(c, "lib/z.py")
    answers = Answers("approve_folder")
    async with connect(ws, mode, approval="ask-always", client_elicitation_handler=answers) as c:
        # the user's allow rule (src/), a handle (lib/), a grant asked for (never offered)
        for name in ("src/a.py", "lib/b.py", "lib/c.py", "src/d.py"):
            r = await call(c, "WriteFile", path=name, content="x", grant=handle, create_dirs=True)
            assert not r.is_error and "Grant:" not in text(r), text(r)
    assert len(answers.messages) == 4
    assert answers.choices == ["approve", "reject"]


# --- logged, and listed by `filegate rules` -----------------------------------------------------


async def test_every_grant_is_logged_escaped_and_listed_by_filegate_rules(
    ws: Path, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    from filegate.cli import main

    caplog.set_level(logging.INFO, "filegate.grants")
    weird = "we\u202eird\nname"
    answers = Answers("approve_folder")
    async with connect(ws, mode, client_elicitation_handler=answers) as c:
        assert not (await Writer(c).write(f"{weird}/a.py")).is_error
    (record,) = [r for r in caplog.records if r.name == "filegate.grants"]
    line = record.getMessage()
    assert "edits under `we\\u202eird\\x0aname/`" in line and "\n" not in line and "\u202e" not in line
    held = "handle" if mode == "auto" else "session"  # in memory: neither stdio nor HTTP
    assert (" until 20" in line) == (mode == "auto") and f"({held})" in line
    gc.collect()  # the session's objects, and with them its grants
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["rules", "--workdir", str(ws)]) == 0
    listing = out.getvalue()
    if mode == "auto":  # a handle holds until it expires
        assert "edits under `we\\u202eird\\x0aname/`  handle, 30 minutes left" in listing, listing
    else:  # a session's grant ends with the session
        assert "(none)" in listing and "edits under" not in listing, listing


async def test_a_session_grant_is_listed_while_its_session_lasts(ws: Path) -> None:
    from filegate.cli import main

    def listed() -> str:
        out = io.StringIO()
        with redirect_stdout(out):
            main(["rules", "--workdir", str(ws)])
        return out.getvalue()

    async with connect(ws, "legacy", client_elicitation_handler=Answers("approve_file")) as c:
        assert not (await call(c, "WriteFile", path="a.txt", content="x")).is_error
        assert f"edits of `a.txt`  while its session lasts (server process {os.getpid()})" in listed()
    gc.collect()
    assert "edits of `a.txt`" not in listed()


# --- the form as a client receives it, as the README shows it ---------------------------------


def transcript(message: str, schema: dict[str, Any]) -> str:
    decision = schema["properties"]["decision"]
    rows = [f"{v:<21} {t}" for v, t in zip(decision["enum"], decision["enumNames"], strict=True)]
    choices = "\n".join(("decision:  " if i == 0 else " " * 11) + row for i, row in enumerate(rows))
    return f"{message}\n\n{choices}\nfeedback:  {schema['properties']['feedback']['description']}"


async def test_the_readmes_transcript_is_the_form_a_client_receives(ws: Path) -> None:
    (ws / "src").mkdir()
    answers = Answers("reject")
    async with connect(ws, "legacy", client_elicitation_handler=answers) as c:
        await call(c, "WriteFile", path="src/one.py", content="one = 1\n")
    shown = transcript(answers.messages[0], answers.schemas[0])
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert f"```text\n{shown}\n```" in readme, shown


# --- an ApplyPatch set is covered only when every one of its files is ---------------------------


async def test_a_folder_grant_covers_an_applypatch_set_inside_it_and_not_one_reaching_outside(
    ws: Path, mode: str
) -> None:
    answers = Answers("approve_folder")
    async with connect(ws, mode, client_elicitation_handler=answers) as c:
        w = Writer(c)
        r = await w.write("src/a.py")
        assert not r.is_error, text(r)
        assert len(answers.messages) == 1
        grant = {"grant": w.handle} if w.handle else {}
        inside = [{"path": "src/b.py", "content": "b\n"}, {"path": "src/pkg/c.py", "content": "c\n"}]
        r = await call(c, "ApplyPatch", changes=inside, **grant)
        assert not r.is_error, text(r)
        assert len(answers.messages) == 1  # every file under src/: not asked
        reaching = [{"path": "src/d.py", "content": "d\n"}, {"path": "docs/e.md", "content": "e\n"}]
        answers.decision = "approve"
        r = await call(c, "ApplyPatch", changes=reaching, **grant)
        assert not r.is_error, text(r)
        assert len(answers.messages) == 2  # one file outside the grant: the set is asked
    assert (ws / "src" / "pkg" / "c.py").read_text() == "c\n"
    assert (ws / "docs" / "e.md").read_text() == "e\n"


# --- issue 55: what the mutation run showed untested ---------------------------------------------


def choices_named(schema: dict[str, Any]) -> dict[str, str]:
    decision = schema["properties"]["decision"]
    return dict(zip(decision["enum"], decision["enumNames"], strict=True))


async def test_the_question_words_each_grant_for_the_session_or_for_the_handles_ttl(ws: Path) -> None:
    session, handle = Answers("reject"), Answers("reject")
    async with connect(ws, "legacy", client_elicitation_handler=session) as c:
        await call(c, "WriteFile", path="src/a.py", content="x", create_dirs=True)
    async with connect(ws, "auto", grant_ttl=7200, client_elicitation_handler=handle) as c:
        await call(c, "WriteFile", path="src/a.py", content="x", create_dirs=True)
    assert choices_named(session.schemas[0]) == {
        "approve": "Approve this write",
        "approve_file": "Approve this file for this session",
        "approve_folder": "Approve edits under `src/` for this session",
        "approve_for_session": "Approve all writes inside the workspace for this session",
        "reject": "Reject",
    }
    assert choices_named(handle.schemas[0]) == {  # no session: no class, and a handle's time
        "approve": "Approve this write",
        "approve_file": "Approve this file for 2 hours",
        "approve_folder": "Approve edits under `src/` for 2 hours",
        "reject": "Reject",
    }


async def test_a_write_outside_the_workspace_is_offered_no_file_or_folder(
    ws: Path, outside: Path, mode: str
) -> None:
    answers = Answers("approve_file")
    async with connect(ws, mode, client_elicitation_handler=answers) as c:
        for name in ("a.txt", "b.txt"):
            r = await call(c, "WriteFile", path=str(outside / name), content="x")
            assert not r.is_error and "Grant:" not in text(r), text(r)
    assert len(answers.messages) == 2
    legacy = ["approve", "approve_for_session", "reject"]
    assert answers.choices == (legacy if mode == "legacy" else ["approve", "reject"])


class RuleMeanwhile(Answers):
    """Answers "approve edits under src/", having put an ask rule on the file asked about while
    the user looked."""

    def __init__(self, ws: Path) -> None:
        super().__init__("approve_folder")
        self.ws = ws

    async def __call__(self, message: str, response_type: Any, params: Any, context: Any) -> Any:
        if not self.messages:
            rules = {"permissions": {"ask": ["Edit(src/a.py)"]}}
            (self.ws / ".claude").mkdir()
            (self.ws / ".claude" / "settings.json").write_text(json.dumps(rules))
        return await super().__call__(message, response_type, params, context)


async def test_an_ask_rule_that_came_while_the_user_looked_beats_the_grant_given(ws: Path) -> None:
    """The rules are read at each call's start: the answer's grant of src/ is given, and from
    the next call on the new ask rule's file is asked about every time, the grant whatever."""
    answers = RuleMeanwhile(ws)
    async with connect(ws, "legacy", client_elicitation_handler=answers) as c:
        for name, asked in (("src/a.py", 1), ("src/b.py", 1), ("src/a.py", 2), ("src/c.py", 2)):
            r = await call(c, "WriteFile", path=name, content=name, create_dirs=True)
            assert not r.is_error, text(r)
            assert len(answers.messages) == asked, name
    assert (ws / "src" / "a.py").read_text() == "src/a.py"


async def test_without_a_usable_key_handles_are_off_said_once_and_sessions_still_granted(
    ws: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A key others could read is refused (fsio/grantstore.py): a 2026 client gets no grant to
    carry, and the log says why once, not at every write; a session keeps grants in memory."""
    caplog.set_level(logging.WARNING, "filegate")
    key = grants_dir() / "key"
    grant_key()
    os.chmod(key, 0o644)
    handle = Answers("approve_folder")
    async with connect(ws, "auto", client_elicitation_handler=handle) as c:
        for name in ("src/a.py", "src/b.py"):
            r = await call(c, "WriteFile", path=name, content="x", create_dirs=True)
            assert not r.is_error and "Grant:" not in text(r), text(r)
    assert len(handle.messages) == 2 and handle.choices == ["approve", "reject"]
    session = Answers("approve_folder")
    async with connect(ws, "legacy", client_elicitation_handler=session) as c:
        for name in ("src/c.py", "src/d.py"):
            assert not (await call(c, "WriteFile", path=name, content="x")).is_error
    assert len(session.messages) == 1 and "approve_folder" in session.choices
    said = [r.getMessage() for r in caplog.records if "grant handles" in r.getMessage()]
    assert said == [
        f"grant handles are off: {key} is not an owner-only file of this user of 32 bytes; remove it "
        "to make a new key (grants sealed with the old one then stop working)"
    ]


def grant_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "filegate.grants"]


async def test_a_grants_log_line_and_record_say_which_grant_where_until_when_and_for_whom(
    ws: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "filegate")
    before = time.time()
    async with connect(ws, "legacy", client_elicitation_handler=Answers("approve_folder")) as c:
        r = await call(c, "WriteFile", path="src/a.py", content="x", create_dirs=True)
        write_id_of(text(r))  # the result ends with its write id: no handle named in a session
        async with connect(ws, "auto", client_elicitation_handler=Answers("approve_file")) as m:
            handle = grant_of(await call(m, "WriteFile", path="src/b.py", content="x"))
        (session, held) = live_grants()
    after = time.time()
    expiry = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(expiry_of(handle)))
    assert re.fullmatch(r"g-[0-9a-f]{8}", session.id) and held.id == handle.partition(".")[0]
    assert grant_lines(caplog) == [
        f"grant {session.id} given: edits under `src/` in workspace {ws}, while the session lasts "
        "(session); client: fastmcp",
        f"grant {held.id} given: edits of `src/b.py` in workspace {ws}, until {expiry} (handle); "
        "client: fastmcp",
    ]
    granted = "(inside workspace, approval: elicited, granted); client: fastmcp"
    assert f"WriteFile wrote 1 byte to {ws}/src/a.py {granted}" in caplog.messages
    assert all(before <= r.time <= after for r in (session, held))  # when each was given


async def test_a_client_that_gives_no_name_is_logged_and_listed_as_a_dash(
    ws: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "filegate.grants")
    nameless = Implementation(name="", version="0")
    answers = Answers("approve_folder")
    async with connect(ws, "auto", client_elicitation_handler=answers, client_client_info=nameless) as c:
        grant_of(await call(c, "WriteFile", path="src/a.py", content="x", create_dirs=True))
    (line,) = grant_lines(caplog)
    assert line.endswith("(handle); client: -"), line
    assert listing(str(ws)).endswith("; client: -")


async def test_a_grant_the_record_cannot_take_still_holds_and_the_log_says_why(
    ws: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """grants.jsonl replaced by a link (the record is never written through one): the grant is
    given and logged, and a warning names it and the reason `filegate rules` will not list it."""
    caplog.set_level(logging.INFO, "filegate")
    log = grants_dir() / "grants.jsonl"
    grants_dir().mkdir(parents=True, mode=0o700)
    log.symlink_to(grants_dir() / "elsewhere")
    answers = Answers("approve_folder")
    async with connect(ws, "auto", client_elicitation_handler=answers) as c:
        w = Writer(c)
        for name in ("src/a.py", "src/b.py"):
            assert not (await w.write(name)).is_error
    assert len(answers.messages) == 1 and not (grants_dir() / "elsewhere").exists()
    ident = w.handle.partition(".")[0]
    why = f"[Errno {errno.ELOOP}] {os.strerror(errno.ELOOP)}: '{log}'"
    assert f"grant {ident} could not be recorded for `filegate rules`: {why}" in caplog.messages
