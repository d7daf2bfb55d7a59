"""An approved rewrite clears setuid/setgid (issue 22 item 9), through a real client: the new
content is the model's, so the file must not keep running with its owner's rights. The other
mode bits stay (tests/tools/test_write_file.py::test_mode_bits_are_kept)."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import call, connect, text, write_id_of


async def _approve(*_: Any) -> Any:
    return {"decision": "approve"}


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("WriteFile", {"content": "echo new\n"}),
        ("WriteFile", {"content": "echo more\n", "mode": "append"}),
        ("StrReplaceFile", {"edit": {"old": "old", "new": "new"}}),
    ],
)
@pytest.mark.parametrize("bits", [0o4755, 0o2755, 0o6750])
async def test_an_approved_rewrite_drops_setuid_and_setgid(
    ws: Path, mode: str, tool: str, args: dict[str, Any], bits: int
) -> None:
    prog = ws / "prog"
    prog.write_text("echo old\n")
    prog.chmod(bits)
    assert stat.S_IMODE(prog.stat().st_mode) == bits  # the file system kept them
    async with connect(ws, mode, client_elicitation_handler=_approve) as c:
        assert not (await call(c, "ReadFile", path="prog")).is_error  # the read guard's read first
        r = await call(c, tool, path="prog", **args)
    assert not r.is_error, text(r)
    assert prog.read_text() != "echo old\n"
    assert stat.S_IMODE(prog.stat().st_mode) == bits & ~(stat.S_ISUID | stat.S_ISGID)


@pytest.mark.parametrize("bits", [0o4755, 0o2755, 0o6750])
async def test_an_undo_puts_the_content_and_mode_back_but_never_setuid_or_setgid(
    ws: Path, mode: str, bits: int
) -> None:
    """The write dropped the bits; undoing it restores the old bytes and permissions, but not the
    owner's rights: the restored content came through the model's route like any write."""
    prog = ws / "prog"
    prog.write_text("echo old\n")
    prog.chmod(bits)
    async with connect(ws, mode, client_elicitation_handler=_approve) as c:
        assert not (await call(c, "ReadFile", path="prog")).is_error
        w = await call(c, "WriteFile", path="prog", content="echo new\n")
        assert not w.is_error, text(w)
        u = await call(c, "UndoWrite", write_id=write_id_of(text(w)))
    assert not u.is_error, text(u)
    assert prog.read_text() == "echo old\n"
    assert stat.S_IMODE(prog.stat().st_mode) == bits & ~(stat.S_ISUID | stat.S_ISGID)
