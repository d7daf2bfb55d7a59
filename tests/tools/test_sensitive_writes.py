"""WriteFile and StrReplaceFile on a sensitive file tell nothing about it before approval.

SPEC §2.6: no byte of a sensitive file and no derived fact (closest region, match counts, line
numbers, size, "already had this content", a diff, its type) reaches a result, an error, the
write log or the approval question before the user approved a write to it — in every approval
mode, both protocol eras, inside the workspace and at an absolute path outside it, with and
without --confine. A canary secret sits in the file; every probe a model could try is sent.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest

from filegate.fsio.history import WRITE_ID
from tests.conftest import call, connect
from tests.fakes import Answers

CANARY = "Zq8-CANARY-TOKEN-4471"
SECRET = (
    f"API_KEY={CANARY}\nDB_PASSWORD={CANARY}-db\nregion=eu\nregion=eu\n#" + "padding " * 7 + "\n"
).encode()
SIZE = len(SECRET)
LINES = SECRET.count(b"\n")

# What a model may send to learn something about the file.
PROBES: list[tuple[str, dict[str, Any]]] = [
    # Not found: Kimi-style tools would show the closest region (the key's line, numbered).
    ("StrReplaceFile", {"edit": {"old": "API_KEY=wrong-value", "new": "API_KEY=x"}}),
    # Found twice: "occurs 2 times (at lines 3, 4)" is an oracle.
    ("StrReplaceFile", {"edit": {"old": "region=eu", "new": "region=us"}}),
    # The matching ladder (SPEC §8.2): "matches 2 places (line 3, line 4)" ignoring trailing
    # blanks, "already there (line 1)" for a new text the file has, would each be an oracle.
    ("StrReplaceFile", {"edit": {"old": "region=eu  ", "new": "region=us"}}),
    ("StrReplaceFile", {"edit": {"old": "no such text", "new": "DB_PASSWORD="}}),
    # A type probe: StrReplaceFile names a non-text file's MIME type.
    ("StrReplaceFile", {"edit": [{"old": "DB_", "new": "db_"}, {"old": "db_", "new": "DB_"}]}),
    # Append nothing: the "current size" would be the file's size.
    ("WriteFile", {"content": "", "mode": "append"}),
    # Guess the whole content: "already had this content" would confirm it.
    ("WriteFile", {"content": SECRET.decode()}),
]


def leaks(text: str) -> list[str]:
    """The facts about the canary file found in ``text`` (a write id is random: its hex digits
    are no size, so ids are taken out first)."""
    text = WRITE_ID.sub("w-…", text)
    found = []
    if CANARY in text or "CANARY" in text:
        found.append("content")
    if re.search(rf"(?<![\d.]){SIZE}(?![\d.])", text):
        found.append(f"size {SIZE}")
    words = ("closest", "occurs", "at lines", "already", "places", "Size:", "lines:", "text file", "bytes")
    for word in words:
        if word in text:
            found.append(word)
    return found


def test_a_write_id_s_digits_are_not_taken_for_the_size() -> None:
    # An id drawn in a run of the test below, whose "145" was once read as the canary's size.
    assert SIZE == 145 and leaks("Write id: w-15c145e88faecda2.") == []
    assert leaks("it holds 145 now") == ["size 145"]


def everything(result: Any) -> str:
    texts = [getattr(b, "text", "") for b in result.content]
    return "\n".join(texts) + json.dumps(result.structured_content or {})


def make_target(ws: Path, tmp_path: Path, where: str) -> tuple[Path, str]:
    if where == "inside":
        target = ws / ".env"
        shown = ".env"
    elif where == "symlink":  # a harmless name for a secrets file
        target = ws / ".env"
        shown = "notes.txt"
        (ws / shown).symlink_to(".env")
    else:  # like ~/.ssh/id_rsa, at an absolute path outside the workspace
        ssh = tmp_path / "home" / ".ssh"
        ssh.mkdir(parents=True)
        target = ssh / "id_rsa"
        shown = str(target)
    target.write_bytes(SECRET)
    return target, shown


@pytest.mark.parametrize("where", ["inside", "symlink", "outside"])
@pytest.mark.parametrize("confine", [False, True])
@pytest.mark.parametrize("answer", ["none", "approve", "reject"])
async def test_write_tools_tell_nothing_about_a_sensitive_file_before_approval(
    ws: Path,
    tmp_path: Path,
    mode: str,
    where: str,
    confine: bool,
    answer: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    target, shown = make_target(ws, tmp_path, where)
    recorder = Answers(answer)
    kw: dict[str, Any] = {"confine": confine}
    if answer != "none":
        kw["client_elicitation_handler"] = recorder
    async with connect(ws, mode, **kw) as c:
        results = [await call(c, tool, path=shown, **args) for tool, args in PROBES]
    for (tool, args), r in zip(PROBES, results, strict=True):
        assert r.is_error or answer == "approve", (tool, args, everything(r))
        assert leaks(everything(r)) == [], (tool, args, everything(r))
    for message in recorder.messages:
        head, _, requested = message.partition("\n\n")
        assert leaks(head) == [], message
        # Below the head: only what the model itself sent (the last probe guessed the content).
        assert leaks(requested) == [] or requested.startswith("Writes:\n+API_KEY="), message
        assert message.splitlines()[0].startswith(
            ("Inside the workspace, SENSITIVE", "OUTSIDE the workspace, SENSITIVE")
        )
        assert "hidden because the file is sensitive" in message
    assert leaks(caplog.text) == [], caplog.text
    # Every probe leaves the file as it was (the guesses write back the same bytes at most).
    assert target.read_bytes() == SECRET
    if answer == "none" and not (confine and where == "outside"):
        assert all("`--approval auto` does not cover it" in everything(r) for r in results)


@pytest.mark.parametrize("where", ["inside", "symlink", "outside"])
async def test_auto_approval_never_covers_a_sensitive_file(
    ws: Path, tmp_path: Path, mode: str, where: str
) -> None:
    """SPEC §2.6/§6 (issue 22 item 6): `--approval auto` writes `.env` only after asking; a
    client that cannot be asked is refused, and nothing is told either way."""
    target, shown = make_target(ws, tmp_path, where)
    async with connect(ws, mode, approval="auto") as c:
        results = [await call(c, tool, path=shown, **args) for tool, args in PROBES]
        blind = await call(c, "WriteFile", path=shown, content="API_KEY=mine\n")
    for r in [*results, blind]:
        assert r.is_error, everything(r)
        assert leaks(everything(r)) == [], everything(r)
        assert "needs the user's approval every time (`--approval auto` does not cover it)" in everything(r)
    assert target.read_bytes() == SECRET
    recorder = Answers("reject")
    async with connect(ws, mode, approval="auto", client_elicitation_handler=recorder) as c:
        asked = await call(c, "WriteFile", path=shown, content="API_KEY=mine\n")
        ordinary = await call(c, "WriteFile", path="plain.txt", content="x\n")
    assert asked.is_error and "rejected by the user" in everything(asked)
    assert len(recorder.messages) == 1 and "SENSITIVE" in recorder.messages[0].splitlines()[0]
    assert target.read_bytes() == SECRET
    assert not ordinary.is_error and (ws / "plain.txt").read_text() == "x\n"  # auto still skips the rest
    approver = Answers("approve")
    async with connect(ws, mode, approval="auto", client_elicitation_handler=approver) as c:
        approved = await call(c, "WriteFile", path=shown, content="API_KEY=mine\n")
    assert not approved.is_error, everything(approved)
    assert len(approver.messages) == 1 and target.read_text() == "API_KEY=mine\n"


async def test_an_approved_edit_of_a_sensitive_file_lands(ws: Path, mode: str) -> None:
    (ws / ".env").write_bytes(SECRET)
    recorder = Answers("approve")
    async with connect(ws, mode, client_elicitation_handler=recorder) as c:
        r = await call(
            c, "StrReplaceFile", path=".env", edit={"old": "region=eu\nregion=eu", "new": "region=us"}
        )
    assert not r.is_error, everything(r)
    assert (ws / ".env").read_bytes() == SECRET.replace(b"region=eu\nregion=eu", b"region=us")
    (message,) = recorder.messages
    # The question shows the change as the model asked for it, never the file.
    assert "-region=eu" in message and "+region=us" in message and CANARY not in message
    assert leaks(everything(r)) == []


async def test_a_sensitive_question_is_bound_to_its_arguments(ws: Path) -> None:
    """2026-07-28: the sealed answer for one edit of .env cannot approve another edit of it."""
    from mcp.shared.exceptions import MCPError
    from mcp.types import ElicitResult, InputRequiredResult

    (ws / ".env").write_bytes(SECRET)
    async with connect(ws, "auto", client_elicitation_handler=Answers("approve")) as c:
        first = await c.session.call_tool(
            name="StrReplaceFile",
            arguments={"path": ".env", "edit": {"old": "region=eu\nregion=eu", "new": "region=us"}},
            allow_input_required=True,
        )
        assert isinstance(first, InputRequiredResult)
        # The SDK binds the sealed state to the request; filegate binds it to the arguments too.
        with pytest.raises(MCPError, match="requestState"):
            await c.session.call_tool(
                name="StrReplaceFile",
                arguments={"path": ".env", "edit": {"old": "DB_PASSWORD", "new": "STOLEN"}},
                input_responses={"approval": ElicitResult(action="accept", content={"decision": "approve"})},
                request_state=first.request_state,
                allow_input_required=True,
            )
    assert (ws / ".env").read_bytes() == SECRET


@pytest.mark.parametrize("answer", ["none", "approve"])
@pytest.mark.slow
async def test_over_http_confined_nothing_is_told_either(ws: Path, mode: str, answer: str) -> None:
    """A real `filegate --transport http` (confined by default), both eras."""
    from fastmcp import Client

    from tests.conftest import http_server

    (ws / ".env").write_bytes(SECRET)
    recorder = Answers("approve")
    handler = recorder if answer == "approve" else None
    with http_server(ws) as url:
        async with Client(url, mode=mode, elicitation_handler=handler) as c:
            results = [await call(c, tool, path=".env", **args) for tool, args in PROBES]
    for r in results:
        assert leaks(everything(r)) == [], everything(r)
    for message in recorder.messages:
        assert leaks(message.partition("\n\n")[0]) == [], message
    assert (ws / ".env").read_bytes() == SECRET
