"""The read guard's dead ends and binary previews (SPEC §4 StrReplaceFile, issue 41 items 4-5).

ReadMediaFile counts as a read of an image or video, so an image can be overwritten after it was
looked at; a file no tool can show (binary, of unknown type) needs no read — its overwrite is
judged by approval alone; and such a file's bytes never reach a diff, a preview or a question:
"binary file, {old} → {new} bytes"."""

from __future__ import annotations

import io
from pathlib import Path

from tests import media_factory as mf
from tests.conftest import call, connect, text
from tests.fakes import Answers


# A KeePass database's magic, then text a preview must not show (ReadFile and Grep withhold it).
def _png() -> bytes:
    buf = io.BytesIO()
    mf.line_art(16, 16).save(buf, "PNG")
    return buf.getvalue()


PNG = _png()
KDBX = b"\x03\xd9\xa2\x9a\x67\xfb\x4b\xb5\x01\x00\x04\x00" + b"\x00" * 20 + b"master-password=HUNTER2\n" * 4


async def test_an_image_read_with_read_media_file_may_be_overwritten(ws: Path, mode: str) -> None:
    mf.write_png(ws / "logo.png", mf.line_art(32, 24))
    async with connect(ws, mode, approval="auto") as c:
        r = await call(c, "WriteFile", path="logo.png", content="now text\n")
        assert r.is_error and text(r) == (
            "`logo.png` has not been read in this session: read it first with "
            'ReadMediaFile(path="logo.png"), then overwrite it. Nothing was written.'
        )
        assert not (await call(c, "ReadMediaFile", path="logo.png")).is_error
        r = await call(c, "WriteFile", path="logo.png", content="now text\n")
        assert not r.is_error, text(r)
    assert (ws / "logo.png").read_text() == "now text\n"


async def test_a_file_no_tool_can_show_needs_no_read_only_approval(ws: Path, mode: str) -> None:
    (ws / "vault.kdbx").write_bytes(KDBX)
    answers = Answers("reject")
    async with connect(ws, mode, client_elicitation_handler=answers) as c:
        assert (await call(c, "ReadFile", path="vault.kdbx")).is_error  # no tool can show it
        rejected = await call(c, "WriteFile", path="vault.kdbx", content="reset\n")
        assert rejected.is_error and "has not been read" not in text(rejected), text(rejected)
    assert len(answers.messages) == 1  # the guard let it through to the question
    async with connect(ws, mode, approval="auto") as c:
        r = await call(c, "WriteFile", path="vault.kdbx", content="reset\n")
        assert not r.is_error, text(r)
    assert (ws / "vault.kdbx").read_text() == "reset\n"


async def test_a_binary_file_never_reaches_a_preview_or_a_question(ws: Path, mode: str) -> None:
    (ws / "vault.kdbx").write_bytes(KDBX)
    (ws / "logo.png").write_bytes(PNG)
    answers = Answers("reject")
    async with connect(ws, mode, client_elicitation_handler=answers) as c:
        grep = await call(c, "Grep", pattern="HUNTER2", output_mode="content")
        assert "HUNTER2" not in str(grep)  # withheld by Grep: so by every other tool too
        seen = []
        for args in (
            {"path": "vault.kdbx", "content": "reset\n", "dry_run": True},
            {"path": "vault.kdbx", "content": "more\n", "mode": "append", "dry_run": True},
            {"path": "vault.kdbx", "content": "more\n", "mode": "append"},
            {"path": "vault.kdbx", "content": "reset\n"},
        ):
            seen.append(str(await call(c, "WriteFile", **args)))
        assert not (await call(c, "ReadMediaFile", path="logo.png")).is_error
        seen.append(str(await call(c, "WriteFile", path="logo.png", content="x\n", dry_run=True)))
    seen += answers.messages
    assert len(answers.messages) == 2  # the append and the overwrite were asked about
    for shown in seen:
        assert "HUNTER2" not in shown and "master-password" not in shown, shown
        assert "IHDR" not in shown and "@@" not in shown, shown
    old = len(KDBX)
    assert f"binary file, {old} → 6 bytes" in seen[0]
    assert f"binary file, {old} → {old + 5} bytes" in seen[1]
    assert f"Size: {old} → {old + 5} bytes (+5); a binary file, so its content is not shown." in seen[1]
    assert f"binary file, {old} → {old + 5} bytes" in answers.messages[0]
    assert f"binary file, {old} → 6 bytes" in answers.messages[1]
    assert f"binary file, {len(PNG)} → 2 bytes" in seen[4]
    assert (ws / "vault.kdbx").read_bytes() == KDBX
