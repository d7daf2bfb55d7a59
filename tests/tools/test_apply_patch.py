"""ApplyPatch (SPEC §10) through real fastmcp clients, both protocol eras: the set lands whole
or not at all, gated before anything is shown, asked once, undone as one.

Every test asserts what is on disk afterwards and what the model (or the user) reads."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import anyio
import pytest

from filegate.errors import PathError
from filegate.fsio.history import WriteHistory, history_dir
from filegate.history_cli import history_lines
from filegate.policy.changeset import Role, gate_path
from filegate.policy.secrets import SecretMatcher
from filegate.policy.workspace import Workspace
from filegate.settings import Settings
from filegate.tools.search.ignores import client_rules_of
from tests.conftest import blocks, call, connect, text, write_id_of
from tests.fakes import Answers

PATCH = """*** Begin Patch
*** Add File: docs/hello.md
+# Hello
+world
*** Update File: app.py
@@ def greet():
-    print("Hi")
+    print("Hello")
*** Update File: util.py
*** Move to: lib/util.py
@@
-X = 1
+X = 2
*** Delete File: old.txt
*** End Patch
"""

CHANGES: list[dict[str, Any]] = [
    {"path": "docs/hello.md", "content": "# Hello\nworld\n"},
    {"path": "app.py", "edits": [{"old": '    print("Hi")\n', "new": '    print("Hello")\n'}]},
    {"path": "util.py", "move_to": "lib/util.py", "edits": [{"old": "X = 1\n", "new": "X = 2\n"}]},
    {"path": "old.txt", "delete": True},
]

APP = b'def other():\n    pass\n\ndef greet():\n    print("Hi")\n'
UTIL = b"import os\nX = 1\n"
OLD = b"obsolete\nline two\n"


def tree(ws: Path) -> dict[str, bytes]:
    """Every file under ``ws`` and its bytes (folders implied)."""
    return {str(p.relative_to(ws)): p.read_bytes() for p in sorted(ws.rglob("*")) if p.is_file()}


def make(ws: Path) -> dict[str, bytes]:
    (ws / "app.py").write_bytes(APP)
    (ws / "util.py").write_bytes(UTIL)
    (ws / "util.py").chmod(0o751)
    (ws / "old.txt").write_bytes(OLD)
    return tree(ws)


AFTER = {
    "app.py": APP.replace(b'"Hi"', b'"Hello"'),
    "docs/hello.md": b"# Hello\nworld\n",
    "lib/util.py": b"import os\nX = 2\n",
}


async def read_all(c: Any, *paths: str) -> None:
    for path in paths:
        r = await call(c, "ReadFile", path=path)
        assert not r.is_error, text(r)


@pytest.mark.parametrize("form", ["patch", "changes"])
async def test_a_set_lands_whole_and_the_answer_lists_each_file(ws: Path, mode: str, form: str) -> None:
    make(ws)
    args = {"patch": PATCH} if form == "patch" else {"changes": CHANGES}
    async with connect(ws, mode, approval="auto") as c:
        await read_all(c, "app.py", "util.py", "old.txt")
        r = await call(c, "ApplyPatch", **args)
    assert not r.is_error, text(r)
    assert tree(ws) == AFTER
    assert stat.S_IMODE((ws / "lib" / "util.py").stat().st_mode) == 0o751  # a moved file keeps its mode
    said = text(r)
    assert "- added `docs/hello.md`: 14 bytes, lines +2 -0." in said
    assert "- modified `app.py`: 1 edit, 1 replacement, lines +1 -1." in said
    assert "- moved `util.py` → `lib/util.py`: 1 edit, 1 replacement, lines +1 -1." in said
    assert "- deleted `old.txt`." in said
    assert said.rstrip().endswith(f"Applied 4 file changes as one write. Write id: {write_id_of(said)}.")
    # As sent: one text block whose summary is followed by the write id on a line of its own.
    (sent,) = blocks(r)
    assert sent.endswith(f"Applied 4 file changes as one write.\nWrite id: {write_id_of(said)}."), sent


async def test_both_forms_give_the_same_result(tmp_path: Path) -> None:
    results = []
    for form in ("patch", "changes"):
        ws = tmp_path / form
        ws.mkdir()
        ws = Path(os.path.realpath(ws))
        make(ws)
        async with connect(ws, approval="auto", read_guard=False) as c:
            r = await call(c, "ApplyPatch", **({"patch": PATCH} if form == "patch" else {"changes": CHANGES}))
        assert not r.is_error, text(r)
        results.append((tree(ws), text(r).split("Write id:")[0]))
    assert results[0] == results[1]


async def test_undo_of_the_set_restores_every_file_with_its_mode(ws: Path, mode: str) -> None:
    before = make(ws)
    async with connect(ws, mode, approval="auto") as c:
        await read_all(c, "app.py", "util.py", "old.txt")
        r = await call(c, "ApplyPatch", patch=PATCH)
        set_id = write_id_of(text(r))
        u = await call(c, "UndoWrite", write_id=set_id)
        assert not u.is_error, text(u)
        assert tree(ws) == before
        assert stat.S_IMODE((ws / "util.py").stat().st_mode) == 0o751
        redo = await call(c, "UndoWrite", write_id=write_id_of(text(u)))  # an undone set, undone
    assert not redo.is_error, text(redo)
    assert tree(ws) == AFTER
    assert f"Undid {set_id}: 5 files as they were before it." in text(u)
    assert blocks(u)[0].endswith(f"as they were before it.\nWrite id: {write_id_of(text(u))}."), blocks(u)


async def test_undo_of_a_one_file_set_says_one_file(ws: Path, mode: str) -> None:
    (ws / "one.txt").write_text("old\n")
    async with connect(ws, mode, approval="auto", read_guard=False) as c:
        r = await call(
            c, "ApplyPatch", changes=[{"path": "one.txt", "edits": [{"old": "old", "new": "new"}]}]
        )
        assert not r.is_error, text(r)
        u = await call(c, "UndoWrite", write_id=write_id_of(text(r)))
    assert not u.is_error and (ws / "one.txt").read_text() == "old\n", text(u)
    assert f"Undid {write_id_of(text(r))}: 1 file as it was before it." in text(u), text(u)


async def test_undo_of_a_set_refuses_naming_every_file_changed_since_and_force_overrides(ws: Path) -> None:
    make(ws)
    async with connect(ws, approval="auto", read_guard=False) as c:
        set_id = write_id_of(text(await call(c, "ApplyPatch", patch=PATCH)))
        (ws / "app.py").write_bytes(b"someone else\n")
        (ws / "docs" / "hello.md").unlink()
        u = await call(c, "UndoWrite", write_id=set_id)
        assert u.is_error
        assert "`app.py` (it changed since" in text(u) and "`docs/hello.md` (it was deleted)" in text(u)
        assert (ws / "lib" / "util.py").read_bytes() == AFTER["lib/util.py"]  # nothing was undone
        forced = await call(c, "UndoWrite", write_id=set_id, force=True)
    assert not forced.is_error, text(forced)
    assert (ws / "app.py").read_bytes() == APP and (ws / "old.txt").read_bytes() == OLD
    assert not (ws / "lib" / "util.py").exists() and (ws / "util.py").read_bytes() == UTIL


async def test_history_shows_the_set_as_one_entry_with_its_files(ws: Path) -> None:
    make(ws)
    async with connect(ws, approval="auto", read_guard=False) as c:
        set_id = write_id_of(text(await call(c, "ApplyPatch", patch=PATCH)))
    (line,) = history_lines(WriteHistory(history_dir()).entries())
    assert line.startswith(f"{set_id}  ") and "ApplyPatch" in line and "set of 5 files:" in line
    for name in (
        "docs/hello.md (created",
        "app.py (",
        "lib/util.py (created",
        "util.py (removed",
        "old.txt (removed",
    ):
        assert name in line


# --- one question ----------------------------------------------------------------------------


async def test_one_question_shows_every_file_and_its_diff(ws: Path, mode: str) -> None:
    make(ws)
    answers = Answers("approve")
    async with connect(ws, mode, client_elicitation_handler=answers) as c:
        await read_all(c, "app.py", "util.py", "old.txt")
        r = await call(c, "ApplyPatch", patch=PATCH)
    assert not r.is_error, text(r)
    (question,) = answers.messages
    lines = question.splitlines()
    assert lines[0] == (
        "Inside the workspace: ApplyPatch wants to change 4 files as one write "
        "(1 added, 1 modified, 1 moved, 1 deleted)."
    )
    assert "- moved `util.py` → `lib/util.py`, edited (+1 -1 lines)" in lines
    assert "- deleted `old.txt` (18 bytes)" in lines
    assert '-    print("Hi")' in lines and '+    print("Hello")' in lines
    assert "moves `util.py` → `lib/util.py`" in lines
    assert "deletes 18 bytes, 2 lines; its first lines:" in lines and "-obsolete" in lines
    assert "+# Hello" in lines
    assert "- added `docs/hello.md` (14 bytes, +2 lines, in a folder it makes)" in lines
    assert tree(ws) == AFTER


async def test_dry_run_shows_the_questions_diff_and_writes_nothing(ws: Path, mode: str) -> None:
    before = make(ws)
    answers = Answers("approve")
    async with connect(ws, mode, client_elicitation_handler=answers) as c:
        await read_all(c, "app.py", "util.py", "old.txt")
        preview = await call(c, "ApplyPatch", patch=PATCH, dry_run=True)
        assert tree(ws) == before and answers.messages == []
        await call(c, "ApplyPatch", patch=PATCH)
    (question,) = answers.messages
    said = text(preview)
    assert said.startswith(question.split("\n\n", 1)[1].rstrip())  # the same diff, first
    assert (
        "Preview (dry_run): nothing was written and nothing was asked. ApplyPatch would change 4 files"
        in said
    )


async def test_a_rejected_set_writes_nothing(ws: Path, mode: str) -> None:
    before = make(ws)
    async with connect(ws, mode, client_elicitation_handler=Answers("reject"), read_guard=False) as c:
        r = await call(c, "ApplyPatch", patch=PATCH)
    assert r.is_error and "rejected by the user" in text(r)
    assert tree(ws) == before


async def test_a_client_that_cannot_be_asked_applies_an_inside_set_and_refuses_one_reaching_outside(
    ws: Path, outside: Path, mode: str
) -> None:
    make(ws)
    async with connect(ws, mode, read_guard=False) as c:  # no elicitation handler
        r = await call(c, "ApplyPatch", patch=PATCH)
        assert not r.is_error, text(r)
        far = str(outside / "far.txt")
        r = await call(
            c, "ApplyPatch", changes=[{"path": "x.txt", "content": "x\n"}, {"path": far, "content": "y\n"}]
        )
    assert r.is_error and "outside the workspace" in text(r)
    assert not (ws / "x.txt").exists() and not (outside / "far.txt").exists()


# --- the gate --------------------------------------------------------------------------------


@pytest.fixture
def rules(ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = Path(os.path.realpath(tmp_path)) / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"deny": ["Edit(./locked/**)"], "ask": ["Write(/asked.txt)"]}})
    )
    (ws / "locked").mkdir()
    (ws / "locked" / "f.txt").write_text("old\n")
    (ws / "asked.txt").write_text("old\n")
    (ws / ".cursorignore").write_text("hidden.txt\n")
    (ws / "hidden.txt").write_text("HIDDEN-CANARY\n")
    (ws / ".env").write_text("TOKEN=CANARY\n")
    (ws / "fine.txt").write_text("fine\n")
    return ws


SENSITIVE = (
    ", so ApplyPatch does not change it: nothing in the set was written. Leave it out of the set; "
    "WriteFile or StrReplaceFile ask the user about it alone."
)
LINK = (
    ": ApplyPatch never follows a link nor removes one, so nothing in the set was written. Give the "
    "path of the file itself."
)
DENIED = (
    "`locked/f.txt` is denied for writing by a rule in `.claude/settings.json`. Nothing was written; "
    "the user can change that rule file to allow it."
)
DIRECTORY = (
    "`adir` is a directory: ApplyPatch changes, deletes and moves files only. Nothing in the set was written."
)


# Each refusal as the model reads it, whole: which path, why, that nothing was written, and
# what to do instead.
@pytest.mark.parametrize(
    ("change", "words"),
    [
        (
            {"path": ".env", "content": "x\n"},
            "`.env` appears to contain secrets (matched sensitive file pattern)" + SENSITIVE,
        ),
        (
            {"path": "hidden.txt", "delete": True},
            "`hidden.txt` is hidden from AI tools by a rule in `.cursorignore`" + SENSITIVE,
        ),
        (
            {"path": ".cursorignore", "content": "\n"},
            "`.cursorignore` is a client rule file (it says what AI tools may read or change)" + SENSITIVE,
        ),
        ({"path": "locked/f.txt", "delete": True}, DENIED),
        (
            {"path": "../x.txt", "content": "x"},
            "`../x.txt` is not an absolute path. You must provide an absolute path to write a file "
            "outside the working directory.",
        ),
        (
            {"path": "../x.txt", "edits": [{"old": "a", "new": "b"}]},
            "`../x.txt` is not an absolute path. You must provide an absolute path to edit a file "
            "outside the working directory.",
        ),
        (
            {"path": "fine.txt", "move_to": ".env"},
            "`.env` appears to contain secrets (matched sensitive file pattern)" + SENSITIVE,
        ),
        ({"path": "locked/f.txt", "move_to": "free.txt"}, DENIED),
        ({"path": "adir", "delete": True}, DIRECTORY),
        ({"path": "adir", "move_to": "bdir"}, DIRECTORY),
        ({"path": "link.txt", "delete": True}, "`link.txt` is a symlink" + LINK),
        (
            {"path": "linkdir/f.txt", "content": "x\n"},
            "`linkdir/f.txt` is reached through the symlink `linkdir`" + LINK,
        ),
        (
            {"path": "missing.txt", "delete": True},
            "`missing.txt` does not exist, so there is nothing to delete. Nothing in the set was written.",
        ),
        (
            {"path": "missing.txt", "edits": [{"old": "a", "new": "b"}]},
            "`missing.txt` does not exist, so there is nothing to edit. Nothing in the set was written.",
        ),
        (
            {"path": "missing.txt", "move_to": "elsewhere.txt"},
            "`missing.txt` does not exist, so there is nothing to move. Nothing in the set was written.",
        ),
        ({"path": "./link.txt", "delete": True}, "`./link.txt` is a symlink" + LINK),
        ({"path": "adir/../link.txt", "delete": True}, "`adir/../link.txt` is a symlink" + LINK),
        (
            {"path": "adir/../linkdir/f.txt", "content": "x\n"},
            "`adir/../linkdir/f.txt` is reached through the symlink `linkdir`" + LINK,
        ),
        # A name is escaped wherever it is shown (SPEC §2.9), outside the workspace too.
        (
            {"path": "~/odd`link/f.txt", "content": "x\n"},
            "`~/odd\\x60link/f.txt` is reached through the symlink `HOME/odd\\x60link`" + LINK,
        ),
        # `~` is the user's home, outside the workspace: a link on the way there is refused too.
        (
            {"path": "~/hlink/f.txt", "content": "x\n"},
            "`~/hlink/f.txt` is reached through the symlink `HOME/hlink`" + LINK,
        ),
        ({"path": "fifo", "delete": True}, "`fifo` is not a file. Nothing in the set was written."),
        (
            {"path": "fine.txt/x.txt", "content": "x\n"},
            "`fine.txt/x.txt` cannot be examined: Not a directory.",
        ),
        (
            {"path": "./fine.txt", "delete": True},
            "`fine.txt` and `./fine.txt` name the same file: give each file once in a set. Nothing was "
            "written.",
        ),
    ],
)
async def test_a_set_holding_a_path_it_may_not_hold_is_refused_whole_before_anything_is_shown(
    rules: Path, change: dict[str, Any], words: str
) -> None:
    ws = rules
    home = Path(os.environ["HOME"])
    (ws / "adir").mkdir()
    (ws / "link.txt").symlink_to(ws / "fine.txt")
    (ws / "linkdir").symlink_to(ws / "adir")
    os.mkfifo(ws / "fifo")
    (home / "real").mkdir()
    (home / "hlink").symlink_to(home / "real")
    (home / "odd`link").symlink_to(home / "real")
    before = tree(ws)
    answers = Answers("approve")
    async with connect(ws, approval="auto", read_guard=False, client_elicitation_handler=answers) as c:
        first = {"path": "fine.txt" if change["path"] == "./fine.txt" else "new.txt", "content": "new\n"}
        r = await call(c, "ApplyPatch", changes=[first, change])
    assert r.is_error, text(r)
    assert text(r) == words.replace("HOME", str(home))
    assert "CANARY" not in text(r)
    assert answers.messages == []
    assert tree(ws) == before and (ws / "link.txt").is_symlink()
    assert not (home / "real" / "f.txt").exists()


async def test_an_ask_rule_makes_the_set_asked_even_under_auto(rules: Path, mode: str) -> None:
    ws = rules
    answers = Answers("approve")
    async with connect(ws, mode, approval="auto", read_guard=False, client_elicitation_handler=answers) as c:
        r = await call(
            c,
            "ApplyPatch",
            changes=[{"path": "asked.txt", "content": "new\n"}, {"path": "fine.txt", "delete": True}],
        )
    assert not r.is_error, text(r)
    (question,) = answers.messages
    assert question.startswith(
        "Inside the workspace, ASKED about always: `asked.txt` is under an `ask` rule: "
    )
    assert "-old\n+new" in question  # a file under an `ask` rule is no secret: its diff is shown
    assert (ws / "asked.txt").read_text() == "new\n" and not (ws / "fine.txt").exists()


# --- the read guard --------------------------------------------------------------------------


async def test_edits_overwrites_and_deletes_need_a_read_first_and_a_binary_delete_does_not(ws: Path) -> None:
    before = make(ws)
    (ws / "blob.bin").write_bytes(b"\x00\x01\x02binary")
    before = tree(ws)
    async with connect(ws, approval="auto") as c:
        for change in (
            {"path": "app.py", "edits": [{"old": "pass", "new": "return"}]},
            {"path": "old.txt", "delete": True},
            {"path": "util.py", "content": "X = 3\n"},
        ):
            r = await call(c, "ApplyPatch", changes=[change])
            assert r.is_error and "has not been read" in text(r), text(r)
            assert f'ReadFile(path="{change["path"]}")' in text(r)
        assert tree(ws) == before
        r = await call(c, "ApplyPatch", changes=[{"path": "blob.bin", "delete": True}])
    assert not r.is_error, text(r)
    assert not (ws / "blob.bin").exists()


async def test_a_move_onto_an_existing_file_needs_it_read_and_is_an_overwrite_in_the_diff(
    ws: Path, mode: str
) -> None:
    make(ws)
    (ws / "lib").mkdir()
    (ws / "lib" / "util.py").write_text("OLD TARGET\n")
    answers = Answers("approve")
    async with connect(ws, mode, client_elicitation_handler=answers) as c:
        r = await call(c, "ApplyPatch", changes=[{"path": "util.py", "move_to": "lib/util.py"}])
        assert r.is_error and "`lib/util.py` has not been read" in text(r), text(r)
        await read_all(c, "lib/util.py")
        r = await call(c, "ApplyPatch", changes=[{"path": "util.py", "move_to": "lib/util.py"}])
    assert not r.is_error, text(r)
    (question,) = answers.messages
    assert "over the existing `lib/util.py`, which it replaces:" in question
    assert "-OLD TARGET" in question and "+X = 1" in question
    assert (ws / "lib" / "util.py").read_bytes() == UTIL and not (ws / "util.py").exists()
    assert "(it replaced the existing `lib/util.py`)" in text(r)


# --- all or nothing --------------------------------------------------------------------------


async def test_a_file_changed_while_the_user_looked_refuses_the_whole_set(ws: Path, mode: str) -> None:
    """Handshake era: the answer comes while the call waits, and the commit's compare-and-swap
    finds the change. 2026-07-28: the answer comes on a retry, which prepares the set again and
    asks again, showing the change (the sealed hashes no longer match)."""
    before = make(ws)

    class Meddling(Answers):
        async def __call__(self, *args: Any) -> Any:
            if not self.messages:
                (ws / "old.txt").write_bytes(b"changed meanwhile\n")
            return await super().__call__(*args)

    answers = Meddling()
    async with connect(ws, mode, client_elicitation_handler=answers, read_guard=False) as c:
        r = await call(c, "ApplyPatch", patch=PATCH)
    if mode == "legacy":
        assert r.is_error
        assert "`old.txt` changed on disk after the change was prepared" in text(r)
        assert "Nothing in the set was written." in text(r)
        assert tree(ws) == {**before, "old.txt": b"changed meanwhile\n"}
        return
    assert not r.is_error, text(r)
    first, second = answers.messages
    assert "A file changed since you were asked" in second and "-changed meanwhile" in second
    assert tree(ws) == AFTER


async def test_a_failure_after_some_renames_restores_them_byte_for_byte_with_their_mode(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault injection (a mock, the last resort: a rename that fails once others landed has no
    real trigger a test can set off): the set's third rename raises ENOSPC."""
    import errno

    import filegate.fsio.atomic as atomic

    before = make(ws)
    (ws / "app.py").chmod(0o4755)  # setuid: a restore gives back the exact mode
    real_replace = os.replace
    renames: list[str] = []

    def failing(src: Any, dst: Any, *args: Any, **kw: Any) -> None:
        if "src_dir_fd" in kw and not str(dst).startswith("tmp-"):
            renames.append(str(dst))
            if len(renames) == 3:
                raise OSError(errno.ENOSPC, "No space left on device")
        real_replace(src, dst, *args, **kw)

    monkeypatch.setattr(atomic.os, "replace", failing)
    async with connect(ws, approval="auto", read_guard=False) as c:
        r = await call(c, "ApplyPatch", patch=PATCH)
        monkeypatch.setattr(atomic.os, "replace", real_replace)
        assert r.is_error
        assert "no space left on device" in text(r)
        assert "the 2 files it had already changed were restored as they were" in text(r)
        assert tree(ws) == before
        assert stat.S_IMODE((ws / "app.py").stat().st_mode) == 0o4755
        assert not (ws / "docs").exists() and not (ws / "lib").exists()  # its folders went too
        entries = WriteHistory(history_dir()).entries()
        assert {e.state for e in entries} == {"failed"}
        again = await call(c, "ApplyPatch", patch=PATCH)  # and the set can simply be tried again
    assert not again.is_error, text(again)
    assert tree(ws) == AFTER


async def test_a_file_too_large_for_the_process_limit_refuses_the_set(ws: Path) -> None:
    """A real disk-full stand-in: the process's file size limit (RLIMIT_FSIZE) makes the
    large file's temp write fail with EFBIG."""
    import resource
    import signal

    before = make(ws)
    big = "x" * 300_000 + "\n"
    old = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        async with connect(ws, approval="auto", read_guard=False) as c:
            resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, old[1]))
            try:
                r = await call(c, "ApplyPatch", changes=[*CHANGES, {"path": "big.txt", "content": big}])
            finally:
                resource.setrlimit(resource.RLIMIT_FSIZE, old)
    finally:
        signal.signal(signal.SIGXFSZ, handler)
    assert r.is_error
    assert "`big.txt`" in text(r) and "file size limit" in text(r)
    assert tree(ws) == before


async def test_an_edit_that_does_not_apply_refuses_the_set_naming_the_file(ws: Path) -> None:
    before = make(ws)
    async with connect(ws, approval="auto", read_guard=False) as c:
        r = await call(c, "ApplyPatch", patch=PATCH.replace("-X = 1", "-X = 9"))
    assert r.is_error
    assert "was not found in `util.py`" in text(r)
    assert tree(ws) == before


async def test_a_set_on_a_crlf_legacy_codec_file_keeps_its_bytes(ws: Path) -> None:
    (ws / "win.txt").write_bytes("caf\xe9 one\r\ntwo\r\n".encode("cp1252"))
    (ws / ".editorconfig").write_text("[*.txt]\ncharset = latin1\n")
    async with connect(ws, approval="auto", read_guard=False) as c:
        r = await call(
            c,
            "ApplyPatch",
            patch="*** Begin Patch\n*** Update File: win.txt\n@@\n-two\n+deux été\n*** End Patch",
        )
    assert not r.is_error, text(r)
    assert (ws / "win.txt").read_bytes() == "caf\xe9 one\r\ndeux \xe9t\xe9\r\n".encode("cp1252")
    assert "CRLF" in text(r)


async def test_read_only_hides_apply_patch(ws: Path) -> None:
    async with connect(ws, read_only=True) as c:
        names = {t.name for t in await c.list_tools()}
    assert "ApplyPatch" not in names and "ReadFile" in names


async def test_apply_patch_is_destructive_and_not_open_world(ws: Path) -> None:
    async with connect(ws) as c:
        (tool,) = [t for t in await c.list_tools() if t.name == "ApplyPatch"]
    assert tool.annotations is not None
    assert tool.annotations.destructive_hint is True and tool.annotations.open_world_hint is False


async def test_patch_and_changes_together_or_neither_are_refused(ws: Path) -> None:
    async with connect(ws, approval="auto") as c:
        both = await call(c, "ApplyPatch", patch=PATCH, changes=CHANGES)
        neither = await call(c, "ApplyPatch")
    for r in (both, neither):
        assert r.is_error and "Give either `patch`" in text(r)


async def test_a_move_onto_a_name_taken_while_the_user_looked_refuses_the_set(ws: Path) -> None:
    """Handshake era: the move's target appears between the question and the commit."""
    before = make(ws)

    class Taking(Answers):
        async def __call__(self, *args: Any) -> Any:
            (ws / "lib").mkdir()
            (ws / "lib" / "util.py").write_text("someone else's\n")
            return await super().__call__(*args)

    async with connect(ws, "legacy", client_elicitation_handler=Taking(), read_guard=False) as c:
        r = await call(c, "ApplyPatch", patch=PATCH)
    assert r.is_error
    assert (
        "`lib/util.py` changed on disk after the change was prepared (it was created by someone else)"
        in text(r)
    )
    assert tree(ws) == {**before, "lib/util.py": b"someone else's\n"}


async def test_under_confine_an_outside_path_refuses_the_set(ws: Path, outside: Path) -> None:
    before = make(ws)
    async with connect(ws, approval="auto", confine=True, read_guard=False) as c:
        r = await call(
            c,
            "ApplyPatch",
            changes=[{"path": "app.py", "delete": True}, {"path": str(outside / "x"), "content": "x"}],
        )
    assert r.is_error and "is outside the workspace. This server is confined" in text(r)
    assert tree(ws) == before and not (outside / "x").exists()


async def test_the_question_cuts_each_files_diff_to_its_share_and_says_so(ws: Path) -> None:
    body = "".join(f"line {k}\n" for k in range(40))
    for i in range(30):
        (ws / f"f{i:02d}.txt").write_text(body)
    changes = [{"path": f"f{i:02d}.txt", "content": body.upper()} for i in range(30)]
    answers = Answers("approve")
    async with connect(ws, "legacy", client_elicitation_handler=answers, read_guard=False) as c:
        r = await call(c, "ApplyPatch", changes=changes)
    assert not r.is_error, text(r)
    (question,) = answers.messages
    assert question.count("of this file's change not shown") == 30
    assert question.count("--- a/f") == 30  # every file is in it, each cut to its share
    assert len(question.splitlines()) < 30 * (8 + 4) + 40


async def test_undoing_a_set_asks_once_with_the_combined_diff(ws: Path) -> None:
    make(ws)
    answers = Answers("approve")
    async with connect(ws, "legacy", client_elicitation_handler=answers, read_guard=False) as c:
        set_id = write_id_of(text(await call(c, "ApplyPatch", patch=PATCH)))
        u = await call(c, "UndoWrite", write_id=set_id)
    assert not u.is_error, text(u)
    question = answers.messages[-1]
    first = question.splitlines()[0]
    assert first.startswith(f"Inside the workspace: UndoWrite wants to undo {set_id} (ApplyPatch, ")
    assert first.endswith("), restoring 5 files as one write (2 removed, 3 restored).")
    assert "- restored `old.txt` (18 bytes, +2 lines)" in question and "-# Hello" in question
    assert '-    print("Hello")' in question and '+    print("Hi")' in question


async def test_a_binary_file_is_described_by_its_size_never_shown(ws: Path) -> None:
    blob = b"\x00\x01BINARY-CANARY\x02" * 50
    (ws / "a.bin").write_bytes(blob)
    (ws / "b.bin").write_bytes(blob)
    (ws / "c.txt").write_text("old text\n")
    answers = Answers("approve")
    async with connect(ws, "legacy", client_elicitation_handler=answers) as c:
        await read_all(c, "c.txt")
        r = await call(
            c,
            "ApplyPatch",
            changes=[{"path": "a.bin", "delete": True}, {"path": "b.bin", "move_to": "c.txt"}],
        )
    assert not r.is_error, text(r)
    (question,) = answers.messages
    assert "BINARY-CANARY" not in question and "BINARY-CANARY" not in text(r)
    assert f"deletes a binary file of {len(blob)} bytes (not shown)" in question
    assert f"binary file, 9 → {len(blob)} bytes" in question  # c.txt replaced by the moved file
    assert (ws / "c.txt").read_bytes() == blob and not (ws / "a.bin").exists() and not (ws / "b.bin").exists()


@pytest.fixture
def other_fs(ws: Path) -> Any:
    """A folder on another file system than the workspace (tmpfs), or a skip saying why."""
    import shutil
    import tempfile

    if not os.path.isdir("/dev/shm") or os.stat("/dev/shm").st_dev == ws.stat().st_dev:
        pytest.skip("no second file system (/dev/shm) on this machine")
    folder = Path(tempfile.mkdtemp(dir="/dev/shm"))
    yield Path(os.path.realpath(folder))
    shutil.rmtree(folder, ignore_errors=True)


async def test_a_move_across_file_systems_copies_then_removes_the_source_and_undoes(
    ws: Path, other_fs: Path
) -> None:
    (ws / "src.txt").write_bytes(b"moving across\r\n")
    (ws / "src.txt").chmod(0o640)
    target = other_fs / "dst.txt"
    async with connect(ws, approval="auto", read_guard=False, add_dirs=[other_fs]) as c:
        r = await call(c, "ApplyPatch", changes=[{"path": "src.txt", "move_to": str(target)}])
        assert not r.is_error, text(r)
        assert target.read_bytes() == b"moving across\r\n" and not (ws / "src.txt").exists()
        assert stat.S_IMODE(target.stat().st_mode) == 0o640
        u = await call(c, "UndoWrite", write_id=write_id_of(text(r)))
    assert not u.is_error, text(u)
    assert (ws / "src.txt").read_bytes() == b"moving across\r\n" and not target.exists()


async def test_a_file_changed_since_its_read_away_from_the_hunk_still_takes_it(ws: Path) -> None:
    """SPEC §8.3 per file of a set: a formatter changed another line since the read; the hunk
    lands, and the answer says which lines changed and that the edit left them alone."""
    body = "".join(f"line {k}\n" for k in range(1, 31))
    (ws / "f.txt").write_text(body)
    async with connect(ws, approval="auto") as c:
        await read_all(c, "f.txt")
        (ws / "f.txt").write_text(body.replace("line 28\n", "line 28 (reformatted)\n"))
        r = await call(
            c,
            "ApplyPatch",
            patch="*** Begin Patch\n*** Update File: f.txt\n@@\n-line 3\n+line three\n*** End Patch",
        )
        assert not r.is_error, text(r)
        touching = await call(
            c,
            "ApplyPatch",
            patch="*** Begin Patch\n*** Update File: f.txt\n@@\n-line 2\n+line two\n*** End Patch",
        )
    assert (ws / "f.txt").read_text().startswith("line 1\nline two\nline three\n")
    assert (
        "`f.txt` changed on disk since it was read (now different: line 28); the edits did not touch "
        "those lines, so they were applied."
    ) in text(r)
    assert not touching.is_error  # the file as the set left it counts as read


async def test_a_move_onto_a_file_with_the_same_content_still_removes_the_source(ws: Path) -> None:
    (ws / "a.txt").write_text("same\n")
    (ws / "b.txt").write_text("same\n")
    async with connect(ws, approval="auto") as c:
        await read_all(c, "b.txt")
        r = await call(c, "ApplyPatch", changes=[{"path": "a.txt", "move_to": "b.txt"}])
    assert not r.is_error, text(r)
    assert not (ws / "a.txt").exists() and (ws / "b.txt").read_text() == "same\n"
    assert "Applied 1 file change as one write." in text(r)


async def test_a_folder_grant_covers_a_set_only_when_every_file_is_under_it(ws: Path, mode: str) -> None:
    """SPEC §11: a grant covers ApplyPatch when every file of the set is in its scope; a set
    reaching outside it is asked, and its question offers no folder grant (no common folder)."""
    (ws / "src").mkdir()
    (ws / "src" / "a.py").write_text("a\n")
    answers = Answers("approve_folder")
    async with connect(ws, mode, client_elicitation_handler=answers, read_guard=False) as c:
        r = await call(c, "StrReplaceFile", path="src/a.py", edit={"old": "a", "new": "A"})
        assert not r.is_error, text(r)
        grant = {"grant": r_grant} if (r_grant := _grant_line("\n".join(blocks(r)))) else {}  # as sent
        inside = [{"path": "src/b.py", "content": "b\n"}, {"path": "src/a.py", "delete": True}]
        r = await call(c, "ApplyPatch", changes=inside, **grant)
        assert not r.is_error, text(r)
        assert len(answers.messages) == 1  # covered by the grant: not asked
        reaching = [{"path": "src/c.py", "content": "c\n"}, {"path": "top.txt", "content": "t\n"}]
        r = await call(c, "ApplyPatch", changes=reaching, **grant)
        assert not r.is_error, text(r)
    assert len(answers.messages) == 2
    assert "approve_folder" not in answers.choices
    assert (ws / "src" / "b.py").exists() and not (ws / "src" / "a.py").exists() and (ws / "top.txt").exists()


def _grant_line(said: str) -> str:
    import re

    found = re.search(r"^Grant: (g-\S+):", said, re.MULTILINE)
    return found.group(1) if found else ""


# Issue 53 through a set: a codec named in the question's first line, the HZ disguise closed,
# the ladder's bound (items 1, 4, 5).


async def test_a_sets_first_line_names_a_codec_other_than_utf8_and_hz_is_never_used(ws: Path) -> None:
    (ws / ".editorconfig").write_text("root = true\n[*.txt]\ncharset = gb18030\n[*.sh]\ncharset = hz\n")
    (ws / "old.txt").write_bytes("北京\n".encode("gb18030"))
    changes = [
        {"path": "old.txt", "edits": [{"old": "北京", "new": "上海"}]},
        {"path": "build.sh", "content": "echo building 痪凶闻幕\n"},  # in HZ: ~{;>PWNED;~}
    ]
    answers = Answers("approve")
    async with connect(ws, "auto", client_elicitation_handler=answers) as c:
        await read_all(c, "old.txt")
        r = await call(c, "ApplyPatch", changes=changes)
    assert not r.is_error, text(r)
    first = answers.messages[0].splitlines()[0]
    assert first.endswith(
        "as one write (1 modified, 1 added); `old.txt` encoded in gb18030 (from .editorconfig)."
    )
    assert (ws / "old.txt").read_bytes() == "上海\n".encode("gb18030")
    assert (ws / "build.sh").read_bytes() == "echo building 痪凶闻幕\n".encode()  # the text shown, in UTF-8


async def test_a_crafted_miss_in_a_set_is_refused_as_ambiguous(ws: Path) -> None:
    data = b"a\n" * (1 << 18)
    (ws / "gen.txt").write_bytes(data)
    async with connect(ws, "auto", approval="auto") as c:
        await read_all(c, "gen.txt")
        with anyio.fail_after(60):  # a hang guard, not a measurement
            r = await call(
                c,
                "ApplyPatch",
                changes=[{"path": "gen.txt", "edits": [{"old": "a\n" * 199 + "a-a", "new": "b"}]}],
            )
    assert r.is_error and "more than 1000 places in the file (starting at lines 1, 2, 3, 4, 5, …)" in text(r)
    assert (ws / "gen.txt").read_bytes() == data


def test_the_gate_hands_on_an_ask_rules_file_as_asked_and_as_no_secret(rules: Path) -> None:
    """The gate's own answer (policy/changeset.py): an `ask` rule's file is asked about, and
    handed on as an ordinary file (not sensitive, no guard of its own: the set's one question
    says why it is asked, and shows its diff); a file no rule covers is neither. Whether a
    regular file is there already is said too (a write onto it is an overwrite)."""
    settings = Settings(workdir=rules)  # the workspace as build_server makes it
    workspace = Workspace(rules, secrets=SecretMatcher(settings.secret_patterns, client_rules_of(settings)))
    asked = gate_path(workspace, "asked.txt", "edit")
    assert (asked.asked, asked.exists, asked.rp.sensitive, asked.rp.guarded_as) == (True, True, False, "")
    fine = gate_path(workspace, "fine.txt", "write")
    assert (fine.asked, fine.exists, fine.rp.sensitive, fine.rp.guarded_as) == (False, True, False, "")
    new = gate_path(workspace, "new.txt", "write")
    assert (new.asked, new.exists) == (False, False)


@pytest.mark.parametrize(
    ("raw", "role", "brief"),
    [
        ("missing.txt", "edit", "File not found"),
        ("adir", "delete", "Is a directory"),
        ("fifo", "delete", "Invalid path"),
        ("link.txt", "delete", "Symlink in set"),
        ("linkdir/f.txt", "write", "Symlink in set"),
        (".env", "write", "Sensitive file in set"),
        (".cursorignore", "write", "Sensitive file in set"),
    ],
)
def test_each_refusal_of_the_gate_is_labelled_for_its_callers(
    rules: Path, raw: str, role: Role, brief: str
) -> None:
    """A refusal's brief labels it for filegate's own callers (errors.py): the rewind names a
    file it leaves out by it ("`.cursorignore` cannot be restored with the others (sensitive
    file in set)"), so each kind of refusal has its own, the same wherever it is met."""
    (rules / "adir").mkdir()
    os.mkfifo(rules / "fifo")
    (rules / "link.txt").symlink_to(rules / "fine.txt")
    (rules / "linkdir").symlink_to(rules / "adir")
    settings = Settings(workdir=rules)
    workspace = Workspace(rules, secrets=SecretMatcher(settings.secret_patterns, client_rules_of(settings)))
    with pytest.raises(PathError) as refused:
        gate_path(workspace, raw, role)
    assert refused.value.brief == brief
