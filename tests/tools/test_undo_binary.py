"""UndoWrite's refusal, preview, question and result apply the same type gate as every write's
(SPEC §3, §4, issue 53 item 9): a pre-image ReadFile would not show (binary) is described by its
sizes ("binary file, N → M bytes"), never shown.

The red team's case: a binary file holding `TOKEN=…` (ReadFile refuses it) was overwritten
through filegate, then changed by hand; UndoWrite's refusal ("no longer as that write left it")
showed a diff of the kept pre-image, with the token in it, and no question asked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import call, connect, text, write_id_of
from tests.fakes import Answers

CANARY = "TOKEN=s3cr3t-CANARY-9d1e"
# Text around NUL bytes: ReadFile refuses it as binary, yet a decoder would show its lines.
BINARY = b"\x00\x01\x02BLOB\n" + CANARY.encode() + b"\n\x00\xff\xfe tail\n"


async def _overwritten(ws: Path) -> str:
    """The binary file overwritten with text through filegate (its pre-image kept), then
    changed by hand: the id of that write."""
    target = ws / "blob.dat"
    target.write_bytes(BINARY)
    async with connect(ws, approval="auto") as c:
        read = await call(c, "ReadFile", path="blob.dat")
        assert read.is_error and CANARY not in text(read), text(read)  # the premise: withheld
        w = await call(c, "WriteFile", path="blob.dat", content="now text\n")
    assert not w.is_error, text(w)
    return write_id_of(text(w))


async def test_the_refusal_describes_a_binary_pre_image(ws: Path, mode: str) -> None:
    write_id = await _overwritten(ws)
    (ws / "blob.dat").write_text("edited by hand\n")
    async with connect(ws, mode, approval="auto") as c:
        r = await call(c, "UndoWrite", write_id=write_id)
    said = text(r)
    assert r.is_error and "no longer as" in said, said
    assert CANARY not in said and "BLOB" not in said, said
    assert f"binary file, 15 → {len(BINARY)} bytes" in said, said
    assert (ws / "blob.dat").read_text() == "edited by hand\n"


@pytest.mark.parametrize("changed", [True, False])
async def test_the_force_preview_question_and_result_describe_it(ws: Path, mode: str, changed: bool) -> None:
    """Changed by hand or not: the preview, the question and the result speak of sizes; the
    bytes come back whole."""
    write_id = await _overwritten(ws)
    if changed:
        (ws / "blob.dat").write_text("edited by hand\n")
    now = (ws / "blob.dat").read_bytes()
    answers = Answers("approve")
    async with connect(ws, mode, approval="ask", client_elicitation_handler=answers) as c:
        preview = await call(c, "UndoWrite", write_id=write_id, dry_run=True, force=True)
        done = await call(c, "UndoWrite", write_id=write_id, force=True)
    for said in (text(preview), text(done), *answers.messages):
        assert CANARY not in said and "BLOB" not in said, said
    assert f"binary file, {len(now)} → {len(BINARY)} bytes" in text(preview), text(preview)
    assert answers.messages and "a binary file, so its content is not shown" in answers.messages[0]
    assert not done.is_error, text(done)
    assert (ws / "blob.dat").read_bytes() == BINARY


async def test_a_text_pre_image_is_still_shown(ws: Path) -> None:
    """The gate hides what ReadFile would not show, and only that: a text file's refusal shows
    its diff as before."""
    (ws / "a.txt").write_text("one\n")
    async with connect(ws, approval="auto", read_guard=False) as c:
        write_id = write_id_of(text(await call(c, "WriteFile", path="a.txt", content="two\n")))
        (ws / "a.txt").write_text("three\n")
        r = await call(c, "UndoWrite", write_id=write_id)
    assert r.is_error and "-three\n+one" in text(r), text(r)
