"""ApplyPatch's all or nothing when the commit itself fails (SPEC §10, fsio/changeset.py), and
what its gate (policy/changeset.py) says, through real fastmcp clients on real files.

A failure partway through the commit has no real trigger a test can set off at the right
moment (the process runs as root here, so a read-only folder does not refuse an unlink), so
these tests inject one fault: a mock of one ``os`` call of fsio/atomic.py, the last resort, named
as such in each test. What they check is what a user sees afterwards: every file as it was, the
error naming the file that failed and what was restored, or — when someone changed a file while
the set was being written — that file left as they left it and named."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import filegate.fsio.atomic as atomic
from filegate.errors import WriteError
from filegate.fsio import platform
from filegate.fsio.changeset import SetWrite, commit_set, sets_dir
from filegate.fsio.history import WriteHistory, history_dir
from filegate.fsio.snapshot import read_all
from filegate.history_cli import history_lines
from filegate.policy.workspace import ResolvedPath
from tests.conftest import call, connect, text, write_id_of
from tests.fakes import Answers

APP = b'def greet():\n    print("Hi")\n'
OLD = b"obsolete\nline two\n"
SECOND = b"second to go\n"

PATCH = """*** Begin Patch
*** Update File: app.py
@@
-    print("Hi")
+    print("Hello")
*** Add File: docs/hello.md
+# Hello
*** Delete File: old.txt
*** Delete File: second.txt
*** End Patch
"""


def tree(ws: Path) -> dict[str, bytes]:
    return {str(p.relative_to(ws)): p.read_bytes() for p in sorted(ws.rglob("*")) if p.is_file()}


def make(ws: Path) -> dict[str, bytes]:
    (ws / "app.py").write_bytes(APP)
    (ws / "app.py").chmod(0o751)
    (ws / "old.txt").write_bytes(OLD)
    (ws / "old.txt").chmod(0o640)
    (ws / "second.txt").write_bytes(SECOND)
    return tree(ws)


def modes(ws: Path) -> dict[str, int]:
    return {name: stat.S_IMODE((ws / name).stat().st_mode) for name in tree(ws)}


def states() -> set[str]:
    return {e.state for e in WriteHistory(history_dir()).entries()}


def named(path: Any, in_folder: bool) -> str:
    """The name a commit's call gives: relative to the folder's handle, or a whole path where
    there are no folder handles (FILEGATE_SIMULATE=no-dirfd, as on Windows: fsio/bypath.py)."""
    return str(path) if in_folder else os.path.basename(os.fspath(path))


def fail_unlink_of(
    monkeypatch: pytest.MonkeyPatch, name: str, meddle: Callable[[], None] = lambda: None
) -> None:
    """Fault injection (a mock): the commit's unlink of ``name`` fails with EPERM (as on an
    immutable file), after ``meddle`` (someone else's change meanwhile)."""
    real_unlink = os.unlink

    def failing(path: Any, *args: Any, **kw: Any) -> None:
        if named(path, kw.get("dir_fd") is not None) == name:
            meddle()
            raise OSError(errno.EPERM, "Operation not permitted")
        real_unlink(path, *args, **kw)

    monkeypatch.setattr(atomic.os, "unlink", failing)


def fail_rename_onto(
    monkeypatch: pytest.MonkeyPatch, name: str, meddle: Callable[[], None] = lambda: None
) -> None:
    """Fault injection (a mock): the commit's rename onto ``name`` fails with ENOSPC, after
    ``meddle``."""
    real_replace = os.replace

    def failing(src: Any, dst: Any, *args: Any, **kw: Any) -> None:
        if named(dst, kw.get("src_dir_fd") is not None) == name:
            meddle()
            raise OSError(errno.ENOSPC, "No space left on device")
        real_replace(src, dst, *args, **kw)

    monkeypatch.setattr(atomic.os, "replace", failing)


async def test_a_delete_that_fails_after_the_others_landed_puts_every_file_back_with_its_mode(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The renames and the first delete landed; the second delete fails: the deleted file comes
    back byte for byte with its mode, the renamed ones too, the folder the set made goes."""
    before = make(ws)
    before_modes = modes(ws)
    fail_unlink_of(monkeypatch, "second.txt")
    async with connect(ws, approval="auto", read_guard=False) as c:
        r = await call(c, "ApplyPatch", patch=PATCH)
    assert r.is_error
    assert text(r) == (
        "Failed to delete `second.txt`: operation not permitted. Nothing in the set was written: "
        "the 3 files it had already changed were restored as they were."
    )
    assert tree(ws) == before and modes(ws) == before_modes
    assert not (ws / "docs").exists()
    assert states() == {"failed"}
    assert list(sets_dir().iterdir()) == []


async def test_one_file_changed_before_the_first_rename_is_named_and_nothing_is_restored(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No file was changed yet: the error says nothing was written, once."""
    before = make(ws)

    def meddle() -> None:
        (ws / "second.txt").write_bytes(b"theirs\n")

    # The first rename (the last file's, docs/hello.md: they come back out in reverse) fails.
    fail_rename_onto(monkeypatch, "hello.md", meddle)
    async with connect(ws, approval="auto", read_guard=False) as c:
        r = await call(c, "ApplyPatch", patch=PATCH)
    assert text(r) == (
        "Failed to write `docs/hello.md`: no space left on device. Nothing in the set was written."
    )
    assert tree(ws) == {**before, "second.txt": b"theirs\n"}
    assert not (ws / "docs").exists()
    assert states() == {"failed"}


async def test_a_failure_after_one_file_landed_says_that_file_was_restored(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The renames land last file first: docs/hello.md, then app.py fails."""
    before = make(ws)
    patch = PATCH.replace("*** Delete File: old.txt\n*** Delete File: second.txt\n", "")
    fail_rename_onto(monkeypatch, "app.py")
    async with connect(ws, approval="auto", read_guard=False) as c:
        r = await call(c, "ApplyPatch", patch=patch)
    assert text(r) == (
        "Failed to write `app.py`: no space left on device. Nothing in the set was written: the "
        "file it had already changed was restored as it was."
    )
    assert tree(ws) == before and not (ws / "docs").exists()


async def test_a_file_changed_by_someone_during_the_commit_is_left_as_they_left_it_and_named(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rename fails after app.py's landed, and someone wrote app.py in between: app.py keeps
    their bytes (a restore never overwrites a change it did not make), the error names it and
    why, the set stays unconfirmed with its mark (the next start tries again), and a file they
    put in the folder the set made stays with its folder."""
    before = make(ws)

    def meddle() -> None:
        (ws / "app.py").write_bytes(b"theirs, written during the commit\n")
        (ws / "notes.txt").write_bytes(b"their notes\n")
        (ws / "docs" / "theirs.txt").write_bytes(b"theirs\n")

    # The renames land last file first: notes.txt, app.py, then docs/hello.md fails.
    patch = """*** Begin Patch
*** Add File: docs/hello.md
+# Hello
*** Update File: app.py
@@
-    print("Hi")
+    print("Hello")
*** Add File: notes.txt
+notes
*** Delete File: old.txt
*** End Patch
"""
    fail_rename_onto(monkeypatch, "hello.md", meddle)
    async with connect(ws, approval="auto", read_guard=False) as c:
        r = await call(c, "ApplyPatch", patch=patch)
    assert r.is_error
    stale = (
        "changed on disk after the change was prepared (its size or modification time changed). "
        "Nothing was written. Read the file again and redo the change."
    )
    assert text(r) == (
        "Failed to write `docs/hello.md`: no space left on device. The set was not written whole, "
        f"and none of the 2 files it had already changed could be restored: `app.py` (`app.py` {stale}); "
        f"`notes.txt` (`notes.txt` {stale})."
    )
    assert tree(ws) == {
        **before,
        "app.py": b"theirs, written during the commit\n",
        "notes.txt": b"their notes\n",
        "docs/theirs.txt": b"theirs\n",
    }
    assert states() == {"unconfirmed"}
    assert len(list(sets_dir().iterdir())) == 1


async def test_a_deleted_file_someone_created_again_is_left_as_theirs_and_the_others_restored(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = make(ws)

    def meddle() -> None:
        (ws / "old.txt").write_bytes(b"a new old.txt, someone's\n")

    fail_unlink_of(monkeypatch, "second.txt", meddle)
    async with connect(ws, approval="auto", read_guard=False) as c:
        r = await call(c, "ApplyPatch", patch=PATCH)
    assert text(r) == (
        "Failed to delete `second.txt`: operation not permitted. The set was not written whole, "
        "and 1 of the 3 files it had already changed could not be restored: `old.txt` (`old.txt` "
        "changed on disk after the change was prepared (it was created by someone else). Nothing "
        "was written. Read the file again and redo the change.). The others were."
    )
    assert tree(ws) == {**before, "old.txt": b"a new old.txt, someone's\n"}
    assert not (ws / "docs").exists()
    assert states() == {"unconfirmed"}


async def test_after_a_restored_failure_the_same_set_lands_and_undoes(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = make(ws)
    async with connect(ws, approval="auto", read_guard=False) as c:
        # The fault in a context of its own: monkeypatch.undo() would undo the test's own
        # XDG_STATE_HOME too, and the set's mark would go to the user's state folder.
        with monkeypatch.context() as faults:
            fail_unlink_of(faults, "second.txt")
            assert (await call(c, "ApplyPatch", patch=PATCH)).is_error
        r = await call(c, "ApplyPatch", patch=PATCH)
        assert not r.is_error, text(r)
        assert set(tree(ws)) == {"app.py", "docs/hello.md"}
        back = await call(c, "UndoWrite", write_id=write_id_of(text(r)))
    assert not back.is_error, text(back)
    assert tree(ws) == before
    assert list(sets_dir().iterdir()) == [] and str(sets_dir()).startswith(os.environ["XDG_STATE_HOME"])


# --- the gate's word in a rewind -------------------------------------------------------------


async def test_a_rewind_leaves_out_a_client_rule_file_saying_why(ws: Path) -> None:
    """UndoWrite(since=…) gates its files as ApplyPatch does (policy/changeset.py): a client
    rule file it wrote is left as it is, named with the gate's reason; the others are restored."""
    answers = Answers("approve")
    async with connect(ws, approval="auto", read_guard=False, client_elicitation_handler=answers) as c:
        first = write_id_of(text(await call(c, "WriteFile", path="a.txt", content="a new\n")))
        rule = write_id_of(text(await call(c, "WriteFile", path=".cursorignore", content="x.txt\n")))
        r = await call(c, "UndoWrite", since=first)
    assert not r.is_error, text(r)
    assert (
        "Left as it is: `.cursorignore` cannot be restored with the others (sensitive file in set); "
        f"UndoWrite with `write_id` undoes its writes one at a time, newest first ({rule})."
    ) in text(r)
    assert not (ws / "a.txt").exists() and (ws / ".cursorignore").read_text() == "x.txt\n"


@pytest.mark.parametrize("folder", [False, True])
async def test_a_set_that_lands_leaves_no_mark_and_its_history_line_says_how_it_was_approved(
    ws: Path, folder: bool
) -> None:
    """The set's mark (what a start looks for after a crash) goes when it lands, whether or not
    it made a folder; `filegate history` says the route it was approved by and the client."""
    make(ws)
    new = "docs/new.md" if folder else "new.md"
    async with connect(ws, approval="auto", read_guard=False) as c:
        r = await call(
            c, "ApplyPatch", changes=[{"path": new, "content": "x\n"}, {"path": "old.txt", "delete": True}]
        )
    assert not r.is_error, text(r)
    assert list(sets_dir().iterdir()) == []
    (line,) = history_lines(WriteHistory(history_dir()).entries())
    assert line.endswith(f"/{new} (created, 2 bytes); {ws}/old.txt (removed, was 18 bytes)  (auto; fastmcp)")


async def test_a_set_whose_old_content_the_history_cannot_keep_is_not_written_at_all(ws: Path) -> None:
    """A set is restored from the history after a failure or a crash: a file whose previous
    content is past --history-max-bytes refuses the set before any file is renamed (its temp
    files go, and so does the folder it made)."""
    before = make(ws)
    (ws / "big.txt").write_bytes(b"big line\n" * 300)
    before = {**before, "big.txt": (ws / "big.txt").read_bytes()}
    async with connect(ws, approval="auto", read_guard=False, history_max_bytes=1000) as c:
        r = await call(
            c,
            "ApplyPatch",
            changes=[{"path": "docs/new.md", "content": "x\n"}, {"path": "big.txt", "delete": True}],
        )
    assert r.is_error
    assert text(r) == (
        "Failed to keep the previous content in the write history (the previous content of `big.txt` "
        "is larger than --history-max-bytes). Nothing in the set was written."
    )
    assert tree(ws) == before and not (ws / "docs").exists()
    assert list(sets_dir().iterdir()) == []


async def test_a_failed_set_removes_every_level_of_the_folders_it_made(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = make(ws)
    fail_rename_onto(monkeypatch, "app.py")
    async with connect(ws, approval="auto", read_guard=False) as c:
        r = await call(
            c,
            "ApplyPatch",
            changes=[
                {"path": "a/b/c/new.md", "content": "x\n"},
                {"path": "app.py", "edits": [{"old": "Hi", "new": "Hello"}]},
            ],
        )
    assert r.is_error
    assert tree(ws) == before and not (ws / "a").exists()


async def test_an_empty_file_the_set_changed_is_restored_empty(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = make(ws)
    for name in ("empty1.txt", "empty2.txt"):
        (ws / name).write_bytes(b"")
    before = tree(ws)
    fail_unlink_of(monkeypatch, "second.txt")
    async with connect(ws, approval="auto", read_guard=False) as c:
        r = await call(
            c,
            "ApplyPatch",
            changes=[
                {"path": "empty1.txt", "content": "now full\n"},
                {"path": "empty2.txt", "delete": True},
                {"path": "second.txt", "delete": True},
            ],
        )
    assert "the 2 files it had already changed were restored as they were" in text(r)
    assert tree(ws) == before


async def test_a_moved_files_source_comes_back_with_its_mode_when_the_set_fails(
    ws: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The move landed (its new file written, its source removed), then the set's next delete
    fails: the source comes back byte for byte with its own mode (0640), its new path goes."""
    make(ws)
    before, before_modes = tree(ws), modes(ws)
    fail_unlink_of(monkeypatch, "second.txt")
    async with connect(ws, mode, approval="auto", read_guard=False) as c:
        r = await call(
            c,
            "ApplyPatch",
            changes=[{"path": "old.txt", "move_to": "new.txt"}, {"path": "second.txt", "delete": True}],
        )
    assert r.is_error
    assert text(r) == (
        "Failed to delete `second.txt`: operation not permitted. Nothing in the set was written: "
        "the 2 files it had already changed were restored as they were."
    )
    assert tree(ws) == before and modes(ws) == before_modes
    assert before_modes["old.txt"] == 0o640


@pytest.mark.parametrize(
    ("patch", "said"),
    [
        # app.py's rename lands first (they come back out last file first), then hello.md's fails.
        (
            "*** Begin Patch\n*** Add File: docs/hello.md\n+# Hello\n*** Update File: app.py\n@@\n"
            '-    print("Hi")\n+    print("Hello")\n*** End Patch\n',
            "the file it had already changed could not be restored: `app.py` (`app.py` {stale}).",
        ),
        (
            "*** Begin Patch\n*** Add File: docs/hello.md\n+# Hello\n*** Update File: app.py\n@@\n"
            '-    print("Hi")\n+    print("Hello")\n*** Add File: notes.txt\n+notes\n*** End Patch\n',
            "1 of the 2 files it had already changed could not be restored: `app.py` (`app.py` {stale}). "
            "The other was.",
        ),
        (
            "*** Begin Patch\n*** Add File: docs/hello.md\n+# Hello\n*** Update File: app.py\n@@\n"
            '-    print("Hi")\n+    print("Hello")\n*** Add File: notes.txt\n+notes\n'
            "*** Add File: more.txt\n+more\n*** End Patch\n",
            "2 of the 3 files it had already changed could not be restored: `app.py` (`app.py` {stale}); "
            "`notes.txt` (`notes.txt` {stale}). The other was.",
        ),
    ],
    ids=["the only one", "one of two", "two of three"],
)
async def test_a_set_partly_written_says_how_many_of_its_files_could_not_be_restored(
    ws: Path, monkeypatch: pytest.MonkeyPatch, patch: str, said: str
) -> None:
    """Someone writes app.py after its rename and before the set fails: the error counts the
    files left as they left them against those the set had changed ("the others" only where
    there are others)."""
    before = make(ws)

    def meddle() -> None:
        (ws / "app.py").write_bytes(b"theirs\n")
        if "more.txt" in patch:
            (ws / "notes.txt").write_bytes(b"their notes\n")

    fail_rename_onto(monkeypatch, "hello.md", meddle)
    async with connect(ws, approval="auto", read_guard=False) as c:
        r = await call(c, "ApplyPatch", patch=patch)
    stale = (
        "changed on disk after the change was prepared (its size or modification time changed). "
        "Nothing was written. Read the file again and redo the change."
    )
    assert text(r) == (
        "Failed to write `docs/hello.md`: no space left on device. The set was not written whole, and "
        + said.format(stale=stale)
    )
    theirs = {"notes.txt": b"their notes\n"} if "more.txt" in patch else {}
    assert tree(ws) == {**before, "app.py": b"theirs\n", **theirs}


async def test_a_failed_set_in_an_empty_workspace_leaves_the_workspace(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The set made `docs/`, then failed: `docs/` goes, and only it (the workspace, empty again,
    stays, as does every folder the set found there)."""
    fail_rename_onto(monkeypatch, "a.md")
    async with connect(ws, approval="auto", read_guard=False) as c:
        r = await call(
            c,
            "ApplyPatch",
            changes=[{"path": "docs/a.md", "content": "a\n"}, {"path": "b.md", "content": "b\n"}],
        )
    assert text(r) == (
        "Failed to write `docs/a.md`: no space left on device. Nothing in the set was written: the "
        "file it had already changed was restored as it was."
    )
    assert ws.is_dir() and list(ws.iterdir()) == []


def spy_marks(monkeypatch: pytest.MonkeyPatch, ws: Path, *, fail_fsync: bool = False) -> list[str]:
    """A spy (a mock of os calls, recording and passing them on; ``fail_fsync``: the sets
    folder's fsync fails with EIO): the set's mark made, made durable (its folder fsynced) and
    removed, and each folder made and file renamed in the workspace, in their order."""
    events: list[str] = []
    # Where docs/ARCHITECTURE.md says the marks are (and every version's start looks).
    folder = os.path.join(os.environ["XDG_STATE_HOME"], "filegate", "sets")
    folder_fds: set[int] = set()
    real = {name: getattr(os, name) for name in ("open", "close", "fsync", "mkdir", "replace", "unlink")}

    def in_ws(path: Any, kw: dict[str, Any], key: str) -> bool:
        return kw.get(key) is not None or os.fspath(path).startswith(str(ws))

    def open_(path: Any, flags: int, *args: Any, **kw: Any) -> int:
        fd: int = real["open"](path, flags, *args, **kw)
        if kw.get("dir_fd") is None and os.fspath(path) == folder:
            folder_fds.add(fd)
        elif kw.get("dir_fd") is None and os.path.dirname(os.fspath(path)) == folder:
            events.append("mark made")
        return fd

    def close(fd: int) -> None:
        folder_fds.discard(fd)
        real["close"](fd)

    def fsync(fd: int) -> None:
        if fd in folder_fds:
            events.append("mark durable")
            if fail_fsync:
                raise OSError(errno.EIO, "Input/output error")
        real["fsync"](fd)

    def mkdir(path: Any, *args: Any, **kw: Any) -> None:
        if in_ws(path, kw, "dir_fd"):
            events.append(f"mkdir {os.path.basename(os.fspath(path))}")
        real["mkdir"](path, *args, **kw)

    def replace(src: Any, dst: Any, *args: Any, **kw: Any) -> None:
        if in_ws(dst, kw, "dst_dir_fd"):
            events.append(f"rename {os.path.basename(os.fspath(dst))}")
        real["replace"](src, dst, *args, **kw)

    def unlink(path: Any, *args: Any, **kw: Any) -> None:
        if kw.get("dir_fd") is None and os.path.dirname(os.fspath(path)) == folder:
            events.append("mark gone")
        real["unlink"](path, *args, **kw)

    for name, spy in (("open", open_), ("close", close), ("fsync", fsync), ("mkdir", mkdir),
                      ("replace", replace), ("unlink", unlink)):  # fmt: skip
        monkeypatch.setattr(os, name, spy)
    return events


@pytest.mark.parametrize("folder", [False, True])
async def test_a_sets_mark_is_durable_once_before_the_first_folder_or_rename(
    ws: Path, monkeypatch: pytest.MonkeyPatch, folder: bool
) -> None:
    """The mark is what a start finds a killed set by: it is on disk for good before the set
    changes anything (a set that makes folders: before the first, as the mark names them;
    otherwise before the first rename, with one fsync of its folder either way), and it goes
    when the set has landed."""
    make(ws)
    new = "docs/new.md" if folder else "new.md"
    async with connect(ws, approval="auto", read_guard=False) as c:
        with monkeypatch.context() as spied:
            events = spy_marks(spied, ws)
            r = await call(
                c,
                "ApplyPatch",
                changes=[{"path": new, "content": "x\n"}, {"path": "old.txt", "content": "y\n"}],
            )
    assert not r.is_error, text(r)
    made = ["mkdir docs"] if folder else []
    assert events == ["mark made", "mark durable", *made, "rename old.txt", "rename new.md", "mark gone"]
    assert (ws / new).read_bytes() == b"x\n"


@pytest.mark.parametrize("folder", [False, True])
async def test_a_set_whose_mark_cannot_be_made_durable_lands_and_leaves_no_mark(
    ws: Path, monkeypatch: pytest.MonkeyPatch, folder: bool
) -> None:
    """Fault injection (the spy above, failing the fsync of the marks' folder): the mark is a
    best effort, so the set lands all the same, and no mark is left behind for a later start
    to take for a killed set's."""
    make(ws)
    new = "docs/new.md" if folder else "new.md"
    async with connect(ws, approval="auto", read_guard=False) as c:
        with monkeypatch.context() as spied:
            spy_marks(spied, ws, fail_fsync=True)
            r = await call(
                c,
                "ApplyPatch",
                changes=[{"path": new, "content": "x\n"}, {"path": "old.txt", "delete": True}],
            )
    assert not r.is_error, text(r)
    assert (ws / new).read_bytes() == b"x\n" and not (ws / "old.txt").exists()
    assert list(sets_dir().iterdir()) == []
    assert states() == {"done"}


async def test_a_set_lands_where_its_mark_cannot_be_made(ws: Path) -> None:
    """The marks' folder cannot be made (a file has its name): the set lands unmarked."""
    make(ws)
    sets_dir().parent.mkdir(parents=True, exist_ok=True)
    sets_dir().write_bytes(b"not a folder\n")
    async with connect(ws, approval="auto", read_guard=False) as c:
        r = await call(
            c,
            "ApplyPatch",
            changes=[{"path": "new.md", "content": "x\n"}, {"path": "old.txt", "delete": True}],
        )
    assert not r.is_error, text(r)
    assert (ws / "new.md").read_bytes() == b"x\n" and not (ws / "old.txt").exists()
    assert states() == {"done"}


async def test_a_set_keeps_a_changed_files_previous_content_by_linking_it_not_copying(ws: Path) -> None:
    """The speed device a single write has (docs/ARCHITECTURE.md): the history keeps an edited
    file's previous content as that very file (its inode linked before the rename), not as a
    copy, where the platform can link one; the undo puts the same bytes back."""
    before = make(ws)
    old_inode = (ws / "app.py").stat().st_ino
    async with connect(ws, approval="auto", read_guard=False) as c:
        r = await call(
            c,
            "ApplyPatch",
            changes=[
                {"path": "app.py", "edits": [{"old": "Hi", "new": "Hello"}]},
                {"path": "new.md", "content": "x\n"},
            ],
        )
        assert not r.is_error, text(r)
        history = WriteHistory(history_dir())
        (app,) = [e for e in history.entries() if e.path == str(ws / "app.py")]
        # Linking needs /proc (fsio/preimages.py): without it (macOS, Windows, FILEGATE_SIMULATE
        # =no-proc) the content is copied.
        assert (history.object_path(app.before).stat().st_ino == old_inode) == platform.has_proc()
        assert not (await call(c, "UndoWrite", write_id=write_id_of(text(r)))).is_error
    assert tree(ws) == before


def test_a_sets_failure_keeps_the_failed_writes_label_or_says_partly_written(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commit's own contract (fsio/changeset.py), for its callers: the error of a set put
    back whole carries the label of the write that failed (here a refused rename: "Permission
    denied"); one that could not be put back whole is labelled "Set partly written". Fault
    injection: a mock of the rename onto b.txt (EPERM), after someone writes a.txt."""
    for name in ("a.txt", "b.txt"):
        (ws / name).write_bytes(b"old\n")

    def planned() -> list[SetWrite]:
        out = []
        for name in ("b.txt", "a.txt"):  # a.txt's rename comes first
            fd = os.open(ws / name, os.O_RDONLY)
            try:
                _, snap = read_all(fd, 1 << 20, name)
            finally:
                os.close(fd)
            out.append(SetWrite(ResolvedPath(name, ws / name, True, False), snap, b"new\n", old_mode=0o644))
        return out

    real_replace = os.replace
    meddle = [False]

    def refused(src: Any, dst: Any, *args: Any, **kw: Any) -> None:
        if os.path.basename(os.fspath(dst)) == "b.txt":
            if meddle[0]:
                (ws / "a.txt").write_bytes(b"theirs\n")
            raise OSError(errno.EPERM, "Operation not permitted")
        real_replace(src, dst, *args, **kw)

    history = WriteHistory(history_dir())
    with monkeypatch.context() as faults:
        faults.setattr(atomic.os, "replace", refused)
        with pytest.raises(WriteError) as whole:
            commit_set(planned(), history, "ApplyPatch", "test", "auto")
        meddle[0] = True
        with pytest.raises(WriteError) as partly:
            commit_set(planned(), history, "ApplyPatch", "test", "auto")
    assert (whole.value.brief, whole.value.output) == ("Permission denied", "")
    assert whole.value.message.endswith("the file it had already changed was restored as it was.")
    assert (partly.value.brief, partly.value.output) == ("Set partly written", "")
    assert (ws / "a.txt").read_bytes() == b"theirs\n" and (ws / "b.txt").read_bytes() == b"old\n"
