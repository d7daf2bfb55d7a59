"""Read before you change it (SPEC §4 StrReplaceFile, issue 27.1): StrReplaceFile, and WriteFile
overwriting an existing file, need a ReadFile of that file (any window) since it last changed;
both protocol eras, in memory, over stdio and over HTTP."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from mcp.types import ElicitResult

from filegate.tools.readguard.ledger import SESSION_CAPACITY, ReadLedger
from tests.conftest import call, connect, http_server, stdio_transport, text

NOT_READ = (
    '`a.txt` has not been read {scope}: read it first with ReadFile(path="a.txt") (any window of '
    "it counts), then {action} it. Nothing was written."
)
CHANGED = (
    '`a.txt` changed since it was read: read it again with ReadFile(path="a.txt") before you edit it. '
    "Nothing was written."
)
EDIT = {"old": "two", "new": "TWO"}


def _touch_later(p: Path, data: bytes, keep_mtime: bool = False) -> None:
    """Rewrite ``p`` in place as another program would (``keep_mtime``: and set its mtime back)."""
    st = p.stat()
    with open(p, "r+b") as f:
        f.write(data)
        f.truncate()
    if keep_mtime:
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))


async def test_an_edit_or_overwrite_of_a_file_never_read_is_refused_naming_the_read(
    ws: Path, mode: str
) -> None:
    (ws / "a.txt").write_text("one\ntwo\n")
    async with connect(ws, mode, approval="auto") as c:
        r = await call(c, "StrReplaceFile", path="a.txt", edit=EDIT)
        assert r.is_error and text(r) == NOT_READ.format(scope="in this session", action="edit")
        r = await call(c, "WriteFile", path="a.txt", content="new\n")
        assert r.is_error and text(r) == NOT_READ.format(scope="in this session", action="overwrite")
        assert (ws / "a.txt").read_text() == "one\ntwo\n"
        (ws / "d").mkdir()  # not a file: that is the error, not the guard's
        r = await call(c, "StrReplaceFile", path="d", edit=EDIT)
        assert r.is_error and text(r) == "`d` is not a file."
        # A one-line window is a read; then edits follow edits (a write counts as a read).
        assert not (await call(c, "ReadFile", path="a.txt", n_lines=1)).is_error
        assert not (await call(c, "StrReplaceFile", path="a.txt", edit=EDIT)).is_error
        assert not (await call(c, "StrReplaceFile", path="a.txt", edit={"old": "one", "new": "ONE"})).is_error
        assert not (await call(c, "WriteFile", path="a.txt", content="three\n")).is_error
        assert (ws / "a.txt").read_text() == "three\n"


async def test_creating_and_appending_need_no_read_but_an_append_is_not_a_read(ws: Path, mode: str) -> None:
    (ws / "log.txt").write_text("old entries\n")
    async with connect(ws, mode, approval="auto") as c:
        assert not (await call(c, "WriteFile", path="new.txt", content="fresh\n")).is_error
        assert not (
            await call(c, "StrReplaceFile", path="new.txt", edit={"old": "fresh", "new": "x"})
        ).is_error
        assert not (await call(c, "WriteFile", path="log.txt", content="more\n", mode="append")).is_error
        # Appending told the model nothing of what was there: an overwrite still needs a read.
        r = await call(c, "WriteFile", path="log.txt", content="all new\n")
        assert r.is_error and "has not been read" in text(r)
    assert (ws / "log.txt").read_text() == "old entries\nmore\n"


@pytest.mark.parametrize("keep_mtime", [False, True])
async def test_a_file_changed_by_another_program_after_the_read_must_be_read_again(
    ws: Path, mode: str, keep_mtime: bool
) -> None:
    p = ws / "a.txt"
    p.write_text("one\ntwo\n")
    async with connect(ws, mode, approval="auto") as c:
        await call(c, "ReadFile", path="a.txt")
        # Same size, and (keep_mtime) the mtime set back: the ctime still tells.
        _touch_later(p, b"uno\ntwo\n", keep_mtime)
        # An overwrite needs a fresh read; an edit may go ahead away from the changed line
        # (SPEC §8.3: tests/tools/test_read_guard_lines.py).
        r = await call(c, "WriteFile", path="a.txt", content="x\n")
        assert r.is_error and text(r) == CHANGED.replace("edit it", "overwrite it")
        assert p.read_bytes() == b"uno\ntwo\n"
        r = await call(c, "StrReplaceFile", path="a.txt", edit={"old": "uno", "new": "one"})
        assert r.is_error and "(now different: line 1)" in text(r)
        assert p.read_bytes() == b"uno\ntwo\n"
        await call(c, "ReadFile", path="a.txt", line_offset=-1)
        assert not (await call(c, "WriteFile", path="a.txt", content="uno\nTWO\n")).is_error
    assert p.read_bytes() == b"uno\nTWO\n"


async def test_a_huge_sparse_file_needs_only_one_window_read(ws: Path, mode: str) -> None:
    huge, big = ws / "huge.txt", ws / "big.txt"
    for p, size in ((huge, 10 << 30), (big, 100 << 20)):
        with open(p, "wb") as f:
            f.write(b"first line\n" + b"text line\n" * 6000)  # text for the type sniff
            f.truncate(size)  # then a hole: 10 GiB that take no disk
    async with connect(ws, mode, approval="auto") as c:
        r = await call(c, "StrReplaceFile", path="huge.txt", edit={"old": "first", "new": "1st"})
        assert r.is_error and "has not been read" in text(r)  # said before any of it is loaded
        assert not (await call(c, "ReadFile", path="huge.txt", n_lines=1)).is_error
        r = await call(c, "StrReplaceFile", path="huge.txt", edit={"old": "first", "new": "1st"})
        # The guard is satisfied; what stops this edit is the size an edit may hold in memory.
        assert r.is_error and "has not been read" not in text(r) and "bytes" in text(r)
        assert not (await call(c, "ReadFile", path="big.txt", n_lines=1)).is_error
        r = await call(c, "StrReplaceFile", path="big.txt", edit={"old": "first", "new": "1st"})
        assert not r.is_error, text(r)
    with open(big, "rb") as f:
        assert f.read(19) == b"1st line\ntext line\n"
    assert huge.stat().st_size == 10 << 30


async def test_read_guard_off_restores_writing_without_a_read(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("one\ntwo\n")
    async with connect(ws, mode, approval="auto", read_guard=False) as c:
        assert not (await call(c, "StrReplaceFile", path="a.txt", edit=EDIT)).is_error
        assert not (await call(c, "WriteFile", path="a.txt", content="x\n")).is_error


@pytest.mark.slow
async def test_over_stdio_a_read_counts_for_the_process_in_both_eras(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("one\ntwo\n")
    async with Client(stdio_transport(ws, "--approval", "auto"), mode=mode) as c:
        r = await call(c, "StrReplaceFile", path="a.txt", edit=EDIT)
        assert r.is_error and text(r) == NOT_READ.format(scope="in this session", action="edit")
        await call(c, "ReadFile", path="a.txt", n_lines=1)  # a read over stdio counts
        assert not (await call(c, "StrReplaceFile", path="a.txt", edit=EDIT)).is_error
    assert (ws / "a.txt").read_text() == "one\nTWO\n"


@pytest.mark.slow
async def test_http_handshake_sessions_each_need_their_own_read(ws: Path) -> None:
    (ws / "a.txt").write_text("one\ntwo\n")
    with http_server(ws, "--approval", "auto") as url:
        async with Client(url, mode="legacy") as a, Client(url, mode="legacy") as b:
            await call(a, "ReadFile", path="a.txt")
            r = await call(b, "StrReplaceFile", path="a.txt", edit=EDIT)
            assert r.is_error and text(r) == NOT_READ.format(scope="in this session", action="edit")
            assert not (await call(a, "StrReplaceFile", path="a.txt", edit=EDIT)).is_error
    assert (ws / "a.txt").read_text() == "one\nTWO\n"


async def test_http_2026_07_28_clients_have_no_session_so_any_read_counts(ws: Path) -> None:
    (ws / "a.txt").write_text("one\ntwo\n")
    with http_server(ws, "--approval", "auto") as url:
        async with Client(url) as a, Client(url) as b:
            r = await call(b, "StrReplaceFile", path="a.txt", edit=EDIT)
            assert r.is_error and text(r) == NOT_READ.format(scope="through this server", action="edit")
            await call(a, "ReadFile", path="a.txt")
            assert not (await call(b, "StrReplaceFile", path="a.txt", edit=EDIT)).is_error
    assert (ws / "a.txt").read_text() == "one\nTWO\n"


class Approve:
    def __init__(self) -> None:
        self.messages: list[str] = []

    async def __call__(self, message: str, response_type: Any, params: Any, context: Any) -> Any:
        self.messages.append(message)
        return ElicitResult(action="accept", content={"decision": "approve"})


async def test_a_sensitive_file_is_outside_the_guard_approval_covers_it(ws: Path, mode: str) -> None:
    """ReadFile refuses a secret, so a guard would make it unwritable; and "changed since it was
    read" would be a fact about it before approval (SPEC §2.6). It is asked about instead."""
    env = ws / ".env"
    env.write_text("KEY=old\n")
    answers = Approve()
    async with connect(ws, mode, client_elicitation_handler=answers) as c:
        r = await call(c, "StrReplaceFile", path=".env", edit={"old": "old", "new": "new"})
        assert not r.is_error, text(r)
        _touch_later(env, b"KEY=zzz\n")
        r = await call(c, "StrReplaceFile", path=".env", edit={"old": "zzz", "new": "new"})
        assert not r.is_error, text(r)
    assert env.read_text() == "KEY=new\n" and len(answers.messages) == 2


def test_the_ledger_is_bounded_and_forgets_the_least_recently_seen() -> None:
    ledger = ReadLedger("in this session", capacity=3)
    ident = (1, 2, 3, 4, 5)
    for name in "abcd":
        ledger.saw(Path(f"/w/{name}"), ident)
    assert len(ledger) == 3
    assert ledger.verdict(Path("/w/a"), ident) == "unread"
    assert ledger.verdict(Path("/w/d"), ident) == "read"
    assert ledger.verdict(Path("/w/d"), (1, 2, 3, 4, 6)) == "changed"


def test_a_file_seen_again_is_remembered_as_the_most_recent() -> None:
    """Least recently *seen*, not first seen: a re-read moves a file to the back of the queue."""
    ledger = ReadLedger("in this session", capacity=3)
    ident = (1, 2, 3, 4, 5)
    for name in "abc":
        ledger.saw(Path(f"/w/{name}"), ident)
    ledger.saw(Path("/w/a"), ident)  # read again
    ledger.saw(Path("/w/d"), ident)  # one more file: the oldest seen goes, which is b now
    assert ledger.verdict(Path("/w/a"), ident) == "read"
    assert ledger.verdict(Path("/w/b"), ident) == "unread"


@pytest.mark.slow  # 1,025 calls: about 20 s on a loaded machine
async def test_the_file_just_read_again_stays_editable_past_the_session_capacity(ws: Path) -> None:
    """A long handshake-era session (its ledger keeps SESSION_CAPACITY files): after a file is
    read, then a ledger's worth of others, then the file once more, one more read must not
    push it out: the model just read it."""
    (ws / "a.txt").write_text("one\ntwo\n")
    others = ws / "others"
    others.mkdir()
    for i in range(SESSION_CAPACITY):
        (others / f"{i}.txt").write_text(f"{i}\n")
    async with connect(ws, "legacy", approval="auto") as c:
        assert not (await call(c, "ReadFile", path="a.txt")).is_error
        for i in range(SESSION_CAPACITY - 1):
            assert not (await call(c, "ReadFile", path=f"others/{i}.txt")).is_error
        assert not (await call(c, "ReadFile", path="a.txt", n_lines=1)).is_error  # read again
        assert not (await call(c, "ReadFile", path=f"others/{SESSION_CAPACITY - 1}.txt")).is_error
        r = await call(c, "StrReplaceFile", path="a.txt", edit=EDIT)
        assert not r.is_error, text(r)
        # The capacity is real: the first of the others, seen least recently, is forgotten.
        r = await call(c, "WriteFile", path="others/0.txt", content="new\n")
        assert r.is_error and "has not been read in this session" in text(r)
    assert (ws / "a.txt").read_text() == "one\nTWO\n"
