"""dry_run on WriteFile and StrReplaceFile (SPEC §4 WriteFile, issue 27.2): the diff and counts
the approval question would show; nothing written, nothing asked; for a sensitive file, nothing
about the file at all (SPEC §2.6). Both protocol eras."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mcp.types import ElicitResult

from tests.conftest import call, connect, text, texts


class Recorder:
    def __init__(self) -> None:
        self.messages: list[str] = []

    async def __call__(self, message: str, response_type: Any, params: Any, context: Any) -> Any:
        self.messages.append(message)
        return ElicitResult(action="accept", content={"decision": "approve"})


def fingerprint(p: Path) -> tuple[bytes, int, int, int]:
    st = p.stat()
    return p.read_bytes(), st.st_mtime_ns, st.st_ino, st.st_ctime_ns


async def test_a_preview_writes_nothing_asks_nothing_and_shows_the_questions_diff(
    ws: Path, mode: str
) -> None:
    p = ws / "a.txt"
    p.write_text("one\ntwo\nthree\n")
    before = fingerprint(p)
    asked = Recorder()
    async with connect(ws, mode, client_elicitation_handler=asked) as c:
        await call(c, "ReadFile", path="a.txt")
        edit = {"old": "two", "new": "TWO\n2"}
        r = await call(c, "StrReplaceFile", path="a.txt", edit=edit, dry_run=True)
        assert not r.is_error, text(r)
        diff, msg = texts(r)
        assert "-two\n+TWO\n+2" in diff
        assert msg == (
            "Preview (dry_run): nothing was written and nothing was asked. StrReplaceFile would change "
            "`a.txt`. Size: 14 → 16 bytes (+2); lines: 3 → 4 (+1). Would apply 1 edit(s) with 1 total "
            "replacement(s)."
        )
        w = await call(c, "WriteFile", path="a.txt", content="new\n", dry_run=True)
        assert not w.is_error and "-one\n-two\n-three\n+new" in texts(w)[0]
        assert "Size: 14 → 4 bytes (-10); lines: 3 → 1 (-2)." in texts(w)[1]
        n = await call(c, "WriteFile", path="sub/new.txt", content="x\n", create_dirs=True, dry_run=True)
        assert not n.is_error and "would create `sub/new.txt`. New file: 2 bytes, 1 line." in text(n)
        assert fingerprint(p) == before and not (ws / "sub").exists() and asked.messages == []
        # The write itself asks with the same diff and counts.
        r = await call(c, "StrReplaceFile", path="a.txt", edit=edit)
        assert not r.is_error and len(asked.messages) == 1
        assert (
            diff.rstrip("\n") in asked.messages[0]
            and "Size: 14 → 16 bytes (+2); lines: 3 → 4 (+1)." in asked.messages[0]
        )
    assert p.read_text() == "one\nTWO\n2\nthree\n"


async def test_a_preview_answers_as_the_write_would_before_its_question(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("same\n")
    async with connect(ws, mode, approval="auto") as c:
        r = await call(c, "StrReplaceFile", path="a.txt", edit={"old": "same", "new": "x"}, dry_run=True)
        assert r.is_error and "has not been read" in text(r)  # the read guard holds for a preview too
        await call(c, "ReadFile", path="a.txt")
        r = await call(c, "StrReplaceFile", path="a.txt", edit={"old": "absent", "new": "x"}, dry_run=True)
        assert r.is_error and "was not found" in text(r)
        r = await call(c, "WriteFile", path="a.txt", content="same\n", dry_run=True)
        assert not r.is_error and "already has this content" in text(r)


async def test_a_preview_of_a_sensitive_file_tells_nothing_about_it(ws: Path, mode: str) -> None:
    secret = ws / ".env"
    secret.write_text("API_KEY=Zq8-CANARY\nregion=eu\n")
    before = fingerprint(secret)
    asked = Recorder()
    said: dict[str, list[str]] = {}
    async with connect(ws, mode, client_elicitation_handler=asked) as c:
        for name in (".env", ".env.missing"):
            for tool, args in (
                ("StrReplaceFile", {"edit": {"old": "region=eu", "new": "region=us"}}),
                ("WriteFile", {"content": "API_KEY=Zq8-CANARY\nregion=eu\n"}),
            ):
                r = await call(c, tool, path=name, dry_run=True, **args)
                assert not r.is_error, text(r)
                said.setdefault(tool, []).append(text(r).replace(name, "NAME"))
    # The same answer whether the file exists, matches or already has the content: no fact.
    assert all(a == b for a, b in said.values())
    out = said["StrReplaceFile"][0]
    assert "is sensitive, so nothing about its content, size or lines is shown" in out
    assert "region=us" in out and "Size" not in out and "lines:" not in out
    assert fingerprint(secret) == before and asked.messages == []
    assert not os.path.exists(ws / ".env.missing")
