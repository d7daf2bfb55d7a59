"""UndoWrite and the write history (SPEC §8.4) through real fastmcp clients, both eras.

Every test asserts what is on disk afterwards, and what the model reads.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from filegate.fsio import platform
from filegate.fsio.history import history_dir
from filegate.fsio.spliced import content_hash
from tests.conftest import call, connect, text, write_id_of
from tests.fakes import Answers

ORIGINAL = b"line one\r\nline two \xff\r\n"  # CRLF and an undecodable byte: exact bytes, not text


def _make(ws: Path, name: str = "a.txt", data: bytes = ORIGINAL, mode: int = 0o640) -> Path:
    path = ws / name
    path.write_bytes(data)
    path.chmod(mode)
    return path


async def test_undo_restores_the_exact_bytes_and_mode_of_each_write_in_turn(ws: Path, mode: str) -> None:
    path = _make(ws)
    async with connect(ws, mode, approval="auto") as c:
        await call(c, "ReadFile", path="a.txt")
        w1 = await call(c, "WriteFile", path="a.txt", content="rewritten\n")
        w2 = await call(c, "StrReplaceFile", path="a.txt", edit={"old": "rewritten", "new": "edited"})
        path.chmod(0o600)  # a mode change is not a content change: the undo puts the mode back
        u2 = await call(c, "UndoWrite", write_id=write_id_of(text(w2)))
        assert not u2.is_error, text(u2)
        assert path.read_bytes() == b"rewritten\r\n"  # WriteFile kept the file's CRLF (SPEC §8.1)
        u1 = await call(c, "UndoWrite", write_id=write_id_of(text(w1)))
    assert not u1.is_error, text(u1)
    assert path.read_bytes() == ORIGINAL
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert text(u1).startswith(f"Undid {write_id_of(text(w1))}: `a.txt` restored as it was before it.")
    # An undo is a write: its own id, different from the others.
    ids = {write_id_of(text(r)) for r in (w1, w2, u1, u2)}
    assert len(ids) == 4


async def test_an_undo_can_itself_be_undone(ws: Path, mode: str) -> None:
    path = _make(ws)
    async with connect(ws, mode, approval="auto", read_guard=False) as c:
        w = await call(c, "WriteFile", path="a.txt", content="new\n")
        u = await call(c, "UndoWrite", write_id=write_id_of(text(w)))
        assert path.read_bytes() == ORIGINAL
        redo = await call(c, "UndoWrite", write_id=write_id_of(text(u)))
    assert not redo.is_error, text(redo)
    assert path.read_bytes() == b"new\r\n"  # WriteFile kept the CRLF (SPEC §8.1)


async def test_undoing_a_write_already_undone_says_so_and_by_which_undo(ws: Path, mode: str) -> None:
    """Not "no longer as it left it ... undo the later writes first": that advice would redo it."""
    path = _make(ws)
    async with connect(ws, mode, approval="auto", read_guard=False) as c:
        w = await call(c, "WriteFile", path="a.txt", content="new\n")
        made = await call(c, "WriteFile", path="made.txt", content="x\n")
        u = await call(c, "UndoWrite", write_id=write_id_of(text(w)))
        again = await call(c, "UndoWrite", write_id=write_id_of(text(w)))
        forced = await call(c, "UndoWrite", write_id=write_id_of(text(w)), force=True)
        await call(c, "UndoWrite", write_id=write_id_of(text(made)))
        made_again = await call(c, "UndoWrite", write_id=write_id_of(text(made)))
        other = _make(ws, "b.txt")
        wb = await call(c, "WriteFile", path="b.txt", content="new\n")
        other.write_bytes(ORIGINAL)  # back as it was by hand: undone all the same, by no undo
        by_hand = await call(c, "UndoWrite", write_id=write_id_of(text(wb)))
    assert again.is_error and forced.is_error and made_again.is_error and by_hand.is_error
    undo_id = write_id_of(text(u))
    assert text(again).startswith(
        f"Write {write_id_of(text(w))} is already undone: `a.txt` is as it was before it (undone by "
        f"{undo_id}, "
    )
    assert text(again).endswith("). Nothing was written.")
    assert text(made_again).startswith(f"Write {write_id_of(text(made))} is already undone: `made.txt`")
    assert text(by_hand) == (
        f"Write {write_id_of(text(wb))} is already undone: `b.txt` is as it was before it. Nothing was written."
    )
    assert path.read_bytes() == ORIGINAL and not (ws / "made.txt").exists()


async def test_a_file_changed_since_is_refused_with_what_changed_and_force_overrides(
    ws: Path, mode: str
) -> None:
    path = _make(ws)
    async with connect(ws, mode, approval="auto", read_guard=False) as c:
        w = await call(c, "WriteFile", path="a.txt", content="model\n")
        e = await call(c, "StrReplaceFile", path="a.txt", edit={"old": "model", "new": "model too"})
        path.write_bytes(b"model too\nhand edit\n")
        refused = await call(c, "UndoWrite", write_id=write_id_of(text(w)))
        assert refused.is_error
        assert path.read_bytes() == b"model too\nhand edit\n"  # untouched
        message = text(refused)
        assert f"`a.txt` is no longer as {write_id_of(text(w))} left it: it changed since" in message
        assert f"{write_id_of(text(e))} (StrReplaceFile)" in message  # the later write is named
        assert "-hand edit" in message  # the diff force would apply
        forced = await call(c, "UndoWrite", write_id=write_id_of(text(w)), force=True)
    assert not forced.is_error, text(forced)
    assert path.read_bytes() == ORIGINAL


async def test_a_change_of_the_same_length_since_the_write_is_refused_without_force(
    ws: Path, mode: str
) -> None:
    """ "Still as that write left it" is its content, not its size: a hand edit that keeps the
    length (a changed digit, a case change) would be lost without a word."""
    path = _make(ws)
    async with connect(ws, mode, approval="auto", read_guard=False) as c:
        w = await call(c, "WriteFile", path="a.txt", content="port = 8080\n")
        written = path.read_bytes()
        by_hand = written.replace(b"8080", b"9090")
        assert len(by_hand) == len(written)
        path.write_bytes(by_hand)
        refused = await call(c, "UndoWrite", write_id=write_id_of(text(w)))
        assert refused.is_error, text(refused)
        assert f"is no longer as {write_id_of(text(w))} left it" in text(refused)
        assert path.read_bytes() == by_hand  # the hand edit kept
        forced = await call(c, "UndoWrite", write_id=write_id_of(text(w)), force=True)
    assert not forced.is_error, text(forced)
    assert path.read_bytes() == ORIGINAL


async def test_undoing_a_creation_removes_the_file_only_while_unchanged(ws: Path, mode: str) -> None:
    async with connect(ws, mode, approval="auto") as c:
        w = await call(c, "WriteFile", path="new.txt", content="made\n")
        write_id = write_id_of(text(w))
        (ws / "new.txt").write_text("made\nand kept\n")
        refused = await call(c, "UndoWrite", write_id=write_id)
        assert refused.is_error and (ws / "new.txt").exists()
        (ws / "new.txt").write_text("made\n")
        removed = await call(c, "UndoWrite", write_id=write_id)
        assert not removed.is_error, text(removed)
        assert not (ws / "new.txt").exists()
        assert text(removed).startswith(f"Undid {write_id}: removed `new.txt`, which it had created.")
        # ... and undoing the removal puts it back.
        back = await call(c, "UndoWrite", write_id=write_id_of(text(removed)))
    assert not back.is_error, text(back)
    assert (ws / "new.txt").read_text() == "made\n"


async def test_an_undo_that_removes_a_file_the_model_read_is_no_change_it_is_told_of(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The undo itself removed it: its own answer's notice of files changed since they were
    read does not name it (it did: a removal did not count as this session's write)."""
    from filegate.tools.readguard import ledger

    monkeypatch.setattr(ledger, "NOTICE_INTERVAL_S", 0.0)  # calls faster than a model's: each checks
    async with connect(ws, "legacy", approval="auto") as c:  # notices are the handshake era's
        w = await call(c, "WriteFile", path="new.txt", content="made\n")
        await call(c, "ReadFile", path="new.txt")
        removed = await call(c, "UndoWrite", write_id=write_id_of(text(w)))
    assert not removed.is_error, text(removed)
    assert "Changed on disk" not in text(removed), text(removed)
    assert not (ws / "new.txt").exists()


async def test_dry_run_shows_the_diff_and_writes_nothing(ws: Path, mode: str) -> None:
    path = _make(ws, data=b"before\n")
    async with connect(ws, mode, approval="auto", read_guard=False) as c:
        w = await call(c, "WriteFile", path="a.txt", content="after\n")
        r = await call(c, "UndoWrite", write_id=write_id_of(text(w)), dry_run=True)
    assert not r.is_error, text(r)
    assert "-after\n+before" in text(r) and "nothing was written" in text(r)
    assert path.read_bytes() == b"after\n"
    assert "Write id" not in text(r)


async def test_the_undo_is_asked_about_with_its_diff_and_a_rejection_writes_nothing(
    ws: Path, mode: str
) -> None:
    path = _make(ws, data=b"before\n")
    async with connect(ws, mode, approval="auto", read_guard=False) as c:
        w = await call(c, "WriteFile", path="a.txt", content="after\n")
    for decision, expected in (("reject", b"after\n"), ("approve", b"before\n")):
        answers = Answers(decision)
        async with connect(ws, mode, client_elicitation_handler=answers) as c:
            r = await call(c, "UndoWrite", write_id=write_id_of(text(w)))
        assert r.is_error == (decision == "reject"), text(r)
        (question,) = answers.messages
        assert question.splitlines()[0] == "Inside the workspace: UndoWrite wants to change `a.txt`."
        assert "-after\n+before" in question
        assert path.read_bytes() == expected


async def test_undo_needs_no_read_of_the_file(ws: Path) -> None:
    path = _make(ws, data=b"before\n")
    async with connect(ws, approval="auto", read_guard=False) as c:
        w = await call(c, "WriteFile", path="a.txt", content="after\n")
    async with connect(ws, approval="auto") as c:  # a new server: nothing read, guard on
        r = await call(c, "UndoWrite", write_id=write_id_of(text(w)))
    assert not r.is_error, text(r)
    assert path.read_bytes() == b"before\n"


async def test_read_only_offers_no_undo(ws: Path) -> None:
    async with connect(ws, read_only=True) as c:
        names = {t.name for t in await c.list_tools()}
    assert "UndoWrite" not in names and "ReadFile" in names


async def test_unknown_ids_and_history_off_are_refused_clearly(ws: Path) -> None:
    async with connect(ws, approval="auto") as c:
        r = await call(c, "UndoWrite", write_id="w-000000")
    assert r.is_error and "No write w-000000 in this workspace's history" in text(r)
    async with connect(ws, approval="auto", history="off") as c:
        w = await call(c, "WriteFile", path="b.txt", content="x\n")
        assert not w.is_error and "Write id" not in text(w)
        r = await call(c, "UndoWrite", write_id="w-000000")
    assert r.is_error and "--history off" in text(r)


async def test_a_sensitive_file_leaves_no_byte_hash_or_size_in_the_state_directory(ws: Path) -> None:
    """The canary: after writes to a sensitive file, nothing in the whole state directory holds
    its content, a hash of it, or its size; its history line says "not kept"."""
    old = b"API_KEY=CANARY-OLD-7f3a91\n"
    new = "API_KEY=CANARY-NEW-0b2c55-longer\n"
    (ws / ".env").write_bytes(old)
    (ws / "plain.txt").write_text("ordinary\n")  # an ordinary write beside it is kept as usual
    async with connect(
        ws, approval="ask", read_guard=False, client_elicitation_handler=Answers("approve")
    ) as c:
        w = await call(c, "WriteFile", path=".env", content=new)
        assert not w.is_error, text(w)
        e = await call(c, "StrReplaceFile", path=".env", edit={"old": "-longer", "new": "-x"})
        await call(c, "WriteFile", path="plain.txt", content="changed\n")
        u = await call(c, "UndoWrite", write_id=write_id_of(text(w)))
    assert u.is_error and "not kept (sensitive file)" in text(u)
    assert not e.is_error, text(e)
    edited = new.replace("-longer", "-x").encode()
    assert (ws / ".env").read_bytes() == edited
    forbidden = [old, new.encode(), edited, b"CANARY"]
    for data in (old, new.encode(), edited):
        digests = (content_hash(data), hashlib.sha256(data).hexdigest(), hashlib.sha1(data).hexdigest())
        forbidden += [d.encode() for d in digests]
    state = history_dir().parent
    seen = 0
    for root, _, files in os.walk(state):
        for name in files:
            blob = (Path(root) / name).read_bytes()
            seen += 1
            assert not [f for f in forbidden if f in blob], Path(root) / name
    assert seen >= 3  # the history file, the lock, the ordinary file's pre-image
    lines = (history_dir() / "history.jsonl").read_text().splitlines()
    env_lines = [line for line in lines if ".env" in line]
    assert env_lines and all(
        '"kept":false' in line and '"not_kept":"sensitive file"' in line for line in env_lines
    )
    assert not [line for line in env_lines if "size" in line or "before" in line or "after" in line]


@pytest.mark.parametrize("limit", ["40"])
async def test_the_byte_bound_evicts_the_oldest_first_and_says_so(
    ws: Path, limit: str, caplog: pytest.LogCaptureFixture
) -> None:
    for name in "abc":
        (ws / f"{name}.txt").write_bytes(name.encode() * 20)  # 20-byte pre-images
    async with connect(ws, approval="auto", read_guard=False, history_max_bytes=limit) as c:
        ids = [write_id_of(text(await call(c, "WriteFile", path=f"{n}.txt", content="x"))) for n in "abc"]
        gone = await call(c, "UndoWrite", write_id=ids[0])
        kept = await call(c, "UndoWrite", write_id=ids[2])
    # The tool says it as for an unknown id (a tombstone keeps no path: "evicted" would tell an
    # id of another workspace that was); the terminal says "evicted" (tests/test_history_cli.py).
    assert gone.is_error and f"No write {ids[0]} in this workspace's history" in text(gone)
    assert "or it was evicted" in text(gone)
    assert not kept.is_error, text(kept)
    assert "history: evicted 1 write(s), oldest first (over --history-max-bytes)" in caplog.text
    objects = [f for _, _, files in os.walk(history_dir() / "objects") for f in files]
    assert len(objects) <= 2


BIG = b"line one\n" + b"a filler of a large file\n" * (
    240 << 10
)  # ~6 MiB: its two versions are hashed at once


@pytest.mark.parametrize("data", [ORIGINAL, BIG], ids=["small", "large"])
async def test_a_history_that_cannot_keep_the_write_stops_it_before_the_rename(
    ws: Path, mode: str, data: bytes
) -> None:
    """SPEC §8.4: no rename without its record. The record is kept while the temp file is
    written; when it cannot be, the write stops there: the file, its folder and the store stay
    as they were."""
    path = _make(ws, data=data)
    history_dir().mkdir(parents=True)
    (history_dir() / "history.jsonl").mkdir()  # where the record goes: EISDIR
    async with connect(ws, mode, approval="auto") as c:
        await call(c, "ReadFile", path="a.txt", n_lines=1)
        r = await call(c, "StrReplaceFile", path="a.txt", edit={"old": "line one", "new": "LINE ONE"})
    assert r.is_error and text(r).startswith(
        "Failed to keep the previous content of `a.txt` in the write history"
    )
    assert path.read_bytes() == data and os.stat(path).st_nlink == 1
    assert os.listdir(ws) == ["a.txt"]  # no temp file left
    assert [p for p in history_dir().rglob("*") if p.is_file()] == [history_dir() / "lock"]


@pytest.mark.parametrize("data", [ORIGINAL, BIG], ids=["small", "large"])
async def test_a_write_stopped_after_its_record_is_recorded_as_failed(ws: Path, data: bytes) -> None:
    """The file changes while the user is asked: the record kept meanwhile says "failed" and
    the other writer's content stays. Handshake era only: there the question comes between the
    load and the write (in 2026-07-28 the answered call runs again and loads the change)."""
    path = _make(ws, data=data)
    theirs = b"written by someone else\n"

    class ChangeWhileAsked(Answers):
        async def __call__(self, *args: object) -> object:
            path.write_bytes(theirs)
            return await super().__call__(*args)  # type: ignore[arg-type]

    async with connect(ws, "legacy", client_elicitation_handler=ChangeWhileAsked()) as c:
        await call(c, "ReadFile", path="a.txt", n_lines=1)
        r = await call(c, "StrReplaceFile", path="a.txt", edit={"old": "line one", "new": "LINE ONE"})
    assert r.is_error and "changed on disk after the change was prepared" in text(r), text(r)
    assert path.read_bytes() == theirs and os.listdir(ws) == ["a.txt"]
    records = [json.loads(line) for line in (history_dir() / "history.jsonl").read_text().splitlines()]
    assert [r.get("outcome") for r in records] == [None, "failed"]
    assert records[0]["after"] == content_hash(data.replace(b"line one", b"LINE ONE", 1))
    assert records[0]["before"] == content_hash(data)


async def test_a_write_whose_folder_fsync_fails_after_the_rename_says_so_and_can_be_undone(
    ws: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault injection, a mock (no disk here fails on cue): the workspace folder's fsync after
    the rename raises EIO. The file holds the new content by then, so the error says it was
    written (not "Nothing was written"), and its record says "done": it can be undone."""
    path = _make(ws)
    folder = os.stat(ws)
    real_fsync = os.fsync

    def failing_for_the_folder(fd: int) -> None:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) == (folder.st_dev, folder.st_ino):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real_fsync(fd)

    async with connect(ws, mode, approval="auto") as c:
        await call(c, "ReadFile", path="a.txt")
        monkeypatch.setattr(os, "fsync", failing_for_the_folder)
        r = await call(c, "StrReplaceFile", path="a.txt", edit={"old": "line one", "new": "LINE ONE"})
        monkeypatch.setattr(os, "fsync", real_fsync)
        if platform.has_dir_fd():
            assert r.is_error and text(r).startswith(
                "`a.txt` was written, but making the change durable failed: Input/output error."
            ), text(r)
        else:  # no folder handle, so no folder fsync to fail (the fallback's gap, docs/TESTING.md)
            assert not r.is_error, text(r)
        assert path.read_bytes() == ORIGINAL.replace(b"line one", b"LINE ONE")
        records = [json.loads(line) for line in (history_dir() / "history.jsonl").read_text().splitlines()]
        assert [r.get("outcome") for r in records] == [None, "done"]
        u = await call(c, "UndoWrite", write_id=records[0]["id"])
    assert not u.is_error, text(u)
    assert path.read_bytes() == ORIGINAL


async def test_a_write_recorded_before_blake3_is_undone_from_its_sha256_record(ws: Path, mode: str) -> None:
    """A history written by an earlier filegate (SHA-256 addresses, the old key order): its
    write is undone as it is, the file checked against its SHA-256 "after"; a change since is
    told, as for any write."""
    import time

    path = _make(ws, data=b"after the old write\n")
    before, after = ORIGINAL, path.read_bytes()
    sha = [hashlib.sha256(b).hexdigest() for b in (before, after)]
    record = {
        "id": "w-0a0b0c", "time": time.time() - 60, "client": "old", "tool": "WriteFile", "path": str(path),
        "route": "auto", "kept": True, "before": sha[0], "after": sha[1], "size_before": len(before),
        "size_after": len(after), "mode": 0o640,
    }  # fmt: skip
    history_dir().mkdir(parents=True, mode=0o700)
    line = json.dumps(record, separators=(",", ":"))  # as filegate wrote it
    (history_dir() / "history.jsonl").write_text(line + '\n{"id":"w-0a0b0c","outcome":"done"}\n')
    blob = history_dir() / "objects" / sha[0][:2] / sha[0][2:]
    blob.parent.mkdir(parents=True)
    blob.write_bytes(before)
    async with connect(ws, mode, approval="auto") as c:
        path.write_bytes(after + b"more\n")
        refused = await call(c, "UndoWrite", write_id="w-0a0b0c")
        path.write_bytes(after)
        undone = await call(c, "UndoWrite", write_id="w-0a0b0c")
        again = await call(c, "UndoWrite", write_id="w-0a0b0c")
    assert refused.is_error and "is no longer as w-0a0b0c left it: it changed since" in text(refused)
    assert not undone.is_error, text(undone)
    assert path.read_bytes() == ORIGINAL
    # The undo (a BLAKE3 record) left it as the SHA-256 record's before: said by hashing the file
    # in each record's own algorithm, never by comparing a hash of one with a hash of the other.
    assert text(again).startswith(
        f"Write w-0a0b0c is already undone: `a.txt` is as it was before it (undone by {write_id_of(text(undone))}, "
    ), text(again)


class DiskSpy:
    """A recording shim around the real ``os.fsync``, ``os.fdatasync``, ``os.replace`` and
    ``os.rename`` (each real call still runs): the order in which things reached the disk.
    A sync notes the file's path and what it held at that moment; a rename its target's name."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.events: list[tuple[str, str, bytes]] = []  # ("sync", path, bytes) | ("rename", dst, b"")
        for name in ("fsync", "fdatasync"):
            if hasattr(os, name):
                monkeypatch.setattr(os, name, self._sync(getattr(os, name)))
        for name in ("replace", "rename"):
            monkeypatch.setattr(os, name, self._rename(getattr(os, name)))

    def _sync(self, real: Callable[[int], None]) -> Callable[[int], None]:
        def spy(fd: int) -> None:
            path, held = os.readlink(f"/proc/self/fd/{fd}"), b""
            if stat.S_ISREG(os.fstat(fd).st_mode):
                with open(f"/proc/self/fd/{fd}", "rb") as f:  # opened anew: a write-only fd too
                    held = f.read()
            self.events.append(("sync", path, held))
            real(fd)

        return spy

    def _rename(self, real: Callable[..., None]) -> Callable[..., None]:
        def spy(src: Any, dst: Any, **kw: Any) -> None:
            real(src, dst, **kw)
            self.events.append(("rename", os.fspath(dst), b""))

        return spy

    def rename_of(self, target: Path) -> int:
        """Where the write's rename onto ``target`` came (by name in its folder, or whole path)."""
        found = [
            i
            for i, (kind, dst, _) in enumerate(self.events)
            if kind == "rename" and dst in (target.name, str(target))
        ]
        assert len(found) == 1, self.events
        return found[0]

    def synced_before(self, index: int, test: Callable[[str, bytes], bool]) -> bool:
        return any(kind == "sync" and test(path, held) for kind, path, held in self.events[:index])


async def spied(c: Any, tool: str, **args: Any) -> tuple[Any, DiskSpy]:
    """``tool`` called with the disk spy in place for that call only."""
    with pytest.MonkeyPatch.context() as patch:
        spy = DiskSpy(patch)
        r = await call(c, tool, **args)
    assert not r.is_error, text(r)
    return r, spy


def assert_durable_before_the_rename(spy: DiskSpy, path: Path, write_id: str, before: bytes) -> None:
    rename = spy.rename_of(path)
    state = str(history_dir().parent)
    record = spy.synced_before(rename, lambda p, held: p.startswith(state) and write_id.encode() in held)
    assert record, ("the record was not on disk before the rename", spy.events)
    assert spy.synced_before(rename, lambda p, held: held == before), ("the pre-image", spy.events)
    (copy,) = [f for f in history_dir().rglob("*") if f.is_file() and f.read_bytes() == before]
    assert spy.synced_before(rename, lambda p, held: p == str(copy.parent)), ("its folder", spy.events)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="the spy names a synced file by /proc")
async def test_a_writes_record_and_pre_image_are_on_disk_before_its_rename(ws: Path) -> None:
    """SPEC §8.4: the history is "kept before the rename and durable, so a crash never loses
    both versions". A power loss drops whatever was not fsynced; what is on disk is what was
    synced, in order. So before the rename that makes the file new: the record naming the
    write was synced (the file holding it at that moment), and so were the previous content's
    bytes and the folder that names that copy. For a write, and for an undo (a write too)."""
    path = _make(ws)
    async with connect(ws, approval="auto", read_guard=False) as c:
        w, spy = await spied(c, "WriteFile", path="a.txt", content="rewritten\n")
        assert path.read_bytes() == b"rewritten\r\n"  # the file's CRLF kept
        assert_durable_before_the_rename(spy, path, write_id_of(text(w)), ORIGINAL)
        u, spy = await spied(c, "UndoWrite", write_id=write_id_of(text(w)))
    assert path.read_bytes() == ORIGINAL
    assert_durable_before_the_rename(spy, path, write_id_of(text(u)), b"rewritten\r\n")


async def test_a_rewinds_preview_and_question_say_first_which_files_it_leaves_as_they_are(
    ws: Path, mode: str
) -> None:
    """SPEC §10: the files a rewind cannot restore are named before the question, in it and in
    its preview, not only in the answer after it."""
    answers = Answers("approve")
    async with connect(ws, mode, read_guard=False, client_elicitation_handler=answers) as c:
        first = write_id_of(text(await call(c, "WriteFile", path="a.txt", content="a new\n")))
        rule = write_id_of(text(await call(c, "WriteFile", path=".cursorignore", content="x.txt\n")))
        left = (
            "Left as it is: `.cursorignore` cannot be restored with the others (sensitive file in set); "
            f"UndoWrite with `write_id` undoes its writes one at a time, newest first ({rule})."
        )
        preview = await call(c, "UndoWrite", since=first, dry_run=True)
        assert not preview.is_error, text(preview)
        assert left in text(preview).split("\n"), text(preview)
        asked = len(answers.messages)
        r = await call(c, "UndoWrite", since=first)
    assert not r.is_error, text(r)
    (question,) = answers.messages[asked:]
    assert question.split("\n")[1] == left, question
    assert not (ws / "a.txt").exists() and (ws / ".cursorignore").read_text() == "x.txt\n"
