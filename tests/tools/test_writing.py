"""The write route (tools/edit/writing.py) through a fake approver: no MCP, real files.

A fake approver stands in for the user here (named as such): it records what it is asked and
what the process holds at that moment. Everything a client sees is tested through real
clients in test_write_file.py, test_str_replace.py and tests/server/test_approval.py.
"""

from __future__ import annotations

from pathlib import Path

from filegate.fsio.locks import PATH_LOCKS
from filegate.policy.workspace import Workspace
from filegate.tools.edit.replacing import Edit
from filegate.tools.outcome import Decision, ToolEnv, answer
from filegate.tools.str_replace import StrReplaceFileParams, str_replace_file
from filegate.tools.write_file import WriteFileParams, write_file
from tests.fakes import FakeApprover


def env(ws: Path, approver: FakeApprover) -> ToolEnv:
    return ToolEnv(workspace=Workspace(workdir=ws), approver=approver)


async def test_no_lock_is_held_while_the_user_is_asked(ws: Path) -> None:
    (ws / "a.txt").write_text("one\n")
    approver = FakeApprover(ws)
    out = await answer(write_file, WriteFileParams(path="a.txt", content="two\n"), env(ws, approver))
    assert not out.is_error, out.message
    assert approver.locks_while_asked == [0]
    assert (ws / "a.txt").read_text() == "two\n"
    assert len(PATH_LOCKS) == 0


async def test_a_sensitive_file_is_asked_about_before_it_is_read(ws: Path) -> None:
    (ws / ".env").write_text("TOKEN=hunter2\n")
    approver = FakeApprover(ws)
    out = await answer(
        str_replace_file,
        StrReplaceFileParams(path=".env", edit=Edit(old="TOKEN=nope", new="TOKEN=x")),
        env(ws, approver),
    )
    (request,) = approver.asked
    assert (request.old_size, request.new_size, request.old_hash) == (0, 0, "")
    assert "hunter2" not in request.diff and "-TOKEN=nope" in request.diff
    assert out.is_error and "did not apply" in out.message and "hunter2" not in out.message + out.output
    assert (ws / ".env").read_text() == "TOKEN=hunter2\n"


async def test_a_settled_write_is_never_asked_about(ws: Path) -> None:
    approver = FakeApprover(ws, settle=Decision(True, "auto"))
    out = await answer(write_file, WriteFileParams(path="n.txt", content="x"), env(ws, approver))
    assert not out.is_error and approver.asked == []
    assert (ws / "n.txt").read_text() == "x"
