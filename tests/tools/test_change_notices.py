"""Handshake-era change notices (SPEC §8.3): any tool's result ends with one line naming the
files this session read (and did not write since) that changed on disk since, each change told
once, at most five names, never a sensitive file. A 2026-07-28 call has no session: none."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from filegate.tools.readguard import ledger as readguard
from filegate.tools.readguard.ledger import NOTICE_CHECKED, ReadLedger, identity_of
from tests.conftest import blocks, call, connect, text

NOTICE = "Changed on disk since you read them:"


@pytest.fixture(autouse=True)
def check_on_every_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """These calls come faster than a model's: each one checks (test_checks_are_spaced below
    has the interval)."""
    monkeypatch.setattr(readguard, "NOTICE_INTERVAL_S", 0.0)


def notice_of(result: object) -> str | None:
    """The result's notice line, when its last line is one (a line of its own, SPEC §9)."""
    last = "\n".join(blocks(result)).rsplit("\n", 1)[-1]
    return last if last.startswith(NOTICE) else None


def change(p: Path, data: str = "changed\n") -> None:
    with open(p, "r+") as f:
        f.write(data)
        f.truncate()


async def test_a_changed_file_is_named_once_in_the_handshake_era(ws: Path) -> None:
    (ws / "src").mkdir()
    p = ws / "src" / "app.py"
    p.write_text("x = 1\n")
    async with connect(ws, "legacy") as c:
        first = await call(c, "ReadFile", path="src/app.py")
        assert notice_of(first) is None
        change(p, "x = 2\n")
        r = await call(c, "Glob", pattern="*")
        assert not r.is_error
        assert notice_of(r) == f"{NOTICE} src/app.py."
        assert notice_of(await call(c, "Glob", pattern="*")) is None  # told once
        change(p, "x = 33\n")  # a new change is told again, on any tool's result (an error too)
        r = await call(c, "ReadFile", path="missing.txt")
        assert r.is_error
        assert notice_of(r) == f"{NOTICE} src/app.py."


async def test_no_notice_in_the_2026_07_28_era(ws: Path) -> None:
    p = ws / "a.txt"
    p.write_text("one\n")
    async with connect(ws, "auto") as c:
        await call(c, "ReadFile", path="a.txt")
        change(p)
        for _ in range(2):
            assert notice_of(await call(c, "Glob", pattern="*")) is None


async def test_a_file_the_session_wrote_is_not_named(ws: Path) -> None:
    p = ws / "a.txt"
    p.write_text("one\n")
    q = ws / "b.txt"
    q.write_text("bee\n")
    async with connect(ws, "legacy", approval="auto") as c:
        await call(c, "ReadFile", path="a.txt")
        await call(c, "ReadFile", path="b.txt")
        r = await call(c, "StrReplaceFile", path="a.txt", edit={"old": "one", "new": "two"})
        assert not r.is_error, text(r)
        assert notice_of(r) is None  # its own write is no change on disk since a read
        change(p, "formatted\n")  # a change after the session's write: it wrote it, not named
        change(q)
        assert notice_of(await call(c, "Glob", pattern="*")) == f"{NOTICE} b.txt."


async def test_six_changed_files_name_five_and_the_sixth_next(ws: Path) -> None:
    names = [f"f{n}.txt" for n in range(6)]
    async with connect(ws, "legacy") as c:
        for name in names:
            (ws / name).write_text("v1\n")
            await call(c, "ReadFile", path=name)
        for name in names:
            change(ws / name)
        first = notice_of(await call(c, "Glob", pattern="*"))
        assert first is not None
        # The most recently read first: f5 … f1, and f0 left for the next result.
        assert (
            first
            == f"{NOTICE} f5.txt, f4.txt, f3.txt, f2.txt, f1.txt (and 1 more, named in the next result)."
        )
        assert notice_of(await call(c, "Glob", pattern="*")) == f"{NOTICE} f0.txt."
        assert notice_of(await call(c, "Glob", pattern="*")) is None


async def test_a_sensitive_file_is_never_named_nor_counted(ws: Path) -> None:
    names = [f"f{n}.txt" for n in range(6)]
    async with connect(ws, "legacy") as c:
        (ws / "notes.txt").write_text("v1\n")
        await call(c, "ReadFile", path="notes.txt")
        for name in names:
            (ws / name).write_text("v1\n")
            await call(c, "ReadFile", path=name)
        (ws / ".cursorignore").write_text("notes.txt\n")  # a client rule hides it from now on
        for name in [*names, "notes.txt"]:
            change(ws / name)
        r = await call(c, "Glob", pattern="f*.txt")
        # Six changed files besides it: the same words as when it had not changed.
        assert (
            notice_of(r)
            == f"{NOTICE} f5.txt, f4.txt, f3.txt, f2.txt, f1.txt (and 1 more, named in the next result)."
        )
        assert notice_of(await call(c, "Glob", pattern="*")) == f"{NOTICE} f0.txt."
        assert notice_of(await call(c, "Glob", pattern="*")) is None
        assert "notes" not in text(r)


async def test_a_refusal_that_names_the_change_is_not_repeated_by_a_notice(ws: Path) -> None:
    p = ws / "a.txt"
    p.write_text("one\n")
    async with connect(ws, "legacy", approval="auto") as c:
        await call(c, "ReadFile", path="a.txt")
        os.replace(_written(ws / "new.txt", "other\n"), p)  # replaced: the plain refusal
        r = await call(c, "StrReplaceFile", path="a.txt", edit={"old": "other", "new": "x"})
        assert r.is_error and "changed since it was read" in text(r)
        assert notice_of(r) is None
        assert notice_of(await call(c, "Glob", pattern="*")) is None


async def test_a_deleted_file_is_named_and_a_name_is_escaped(ws: Path) -> None:
    p = ws / "odd\nname.txt"
    p.write_text("one\n")
    async with connect(ws, "legacy") as c:
        await call(c, "ReadFile", path=str(p))
        p.unlink()
        assert notice_of(await call(c, "Glob", pattern="*")) == f"{NOTICE} odd\\x0aname.txt."


def _written(p: Path, data: str) -> Path:
    p.write_text(data)
    return p


def test_only_the_most_recent_reads_are_checked(tmp_path: Path) -> None:
    """The cost per call is bounded: NOTICE_CHECKED stats, whatever the ledger holds."""
    ledger = ReadLedger("in this session")
    old = tmp_path / "old.txt"
    old.write_text("v1\n")
    ledger.saw(old, identity_of(os.stat(old)))
    for n in range(NOTICE_CHECKED):
        q = tmp_path / f"{n}.txt"
        q.write_text("v1\n")
        ledger.saw(q, identity_of(os.stat(q)))
    change(old)
    assert ledger.changes_untold() == []
    assert [real for real, _ in ledger.changes_untold(NOTICE_CHECKED + 1)] == [old]


def test_checks_are_spaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Calls that come faster than NOTICE_INTERVAL_S do not each pay a check: a change is told
    by the first call after the interval."""
    monkeypatch.setattr(readguard, "NOTICE_INTERVAL_S", 3600.0)
    ledger = ReadLedger("in this session")
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    for p in (a, b):
        p.write_text("v1\n")
        ledger.saw(p, identity_of(os.stat(p)))
    change(a)
    assert [real for real, _ in ledger.changes_untold()] == [a]
    change(b)
    assert ledger.changes_untold() == []  # within the interval: no stat at all
    monkeypatch.setattr(readguard, "NOTICE_INTERVAL_S", 0.0)
    assert [real for real, _ in ledger.changes_untold()] == [b, a]  # a: not marked told


@pytest.mark.parametrize("length", [10, 3000])
async def test_a_refusal_showing_the_changed_lines_is_not_repeated_by_a_notice(ws: Path, length: int) -> None:
    """Shown whole (a read) or cut (told, not read): either way the result told the change."""
    p = ws / "a.txt"
    p.write_text("one\ntwo\nthree\n")
    async with connect(ws, "legacy", approval="auto") as c:
        await call(c, "ReadFile", path="a.txt")
        change(p, "one\n" + "x" * length + "\nthree\n")
        r = await call(c, "StrReplaceFile", path="a.txt", edit={"old": "one\nx", "new": "y"})
        assert r.is_error and "now different: line 2" in text(r)
        assert notice_of(r) is None
        assert notice_of(await call(c, "Glob", pattern="*")) is None


async def test_a_write_that_does_not_count_as_a_read_still_keeps_the_file_out(ws: Path) -> None:
    """A file read as text, turned binary since (no read is asked for it), then overwritten by
    this session: its own write, never named."""
    p = ws / "a.dat"
    p.write_text("text\n")
    async with connect(ws, "legacy", approval="auto") as c:
        await call(c, "ReadFile", path="a.dat")
        with open(p, "r+b") as f:
            f.write(b"\x00\x01\x02\xff" * 64)
        r = await call(c, "WriteFile", path="a.dat", content="new\n")
        assert not r.is_error, text(r)
        assert notice_of(r) is None
        assert notice_of(await call(c, "Glob", pattern="*")) is None
