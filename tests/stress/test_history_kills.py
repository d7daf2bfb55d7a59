"""SIGKILL a real filegate server at random moments while it writes with its history on
(SPEC §8.4): the pre-image is durable before the rename, so after every kill the file is its
old or its new content, every kept pre-image is whole, the history's last word on the file
agrees with what it holds, and an UndoWrite through the next server puts back the content
before the last write that landed."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from filegate.fsio.history import Entry, WriteHistory, history_dir
from tests.conftest import WRITE_ID
from tests.stress.procs import Zygote
from tests.stress.test_crash_kills import FILLER, OLD, QUEUED, _ok, _wait_gone

KILLS = 30


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def content(n: int) -> bytes:
    """The ``n``th write's content: each write's is its own, so no pre-image is kept already
    (content-addressed) and a write that landed with no record before it shows: the file then
    holds a content no record names."""
    return b"state: write %06d\r\n" % n + FILLER


def check_history(target: Path, known: set[bytes]) -> Entry:
    """The history agrees with the file after a kill; returns the write that left it so."""
    data = target.read_bytes()
    assert data in known, f"torn file after a kill: {len(data)} bytes"
    history = WriteHistory(history_dir())
    entries = [e for e in history.entries() if e.path == str(target) and e.state != "failed"]
    for entry in entries:  # every record names a pre-image that is there and whole
        assert history.pre_image(entry) in known, entry.id
    last = entries[-1]
    if last.state == "done":
        assert _sha(data) == last.after, last
    else:  # killed around its rename: either is right, and the undo below tells which
        assert _sha(data) in (last.before, last.after), last
    landed = [e for e in entries if e.after == _sha(data) and (e.state == "done" or e is last)]
    return landed[-1]


def kill_loop(zygote: Zygote, ws: Path, kills: int, seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    env = {"XDG_STATE_HOME": os.environ["XDG_STATE_HOME"]}
    target = ws / "target.txt"
    target.write_bytes(OLD)
    known = {OLD}
    seen = {"kills": 0, "unconfirmed": 0, "undone": 0}
    for _ in range(kills):
        server = zygote.spawn(ws, "--approval", "auto", "--read-guard", "off", env=env)
        calls = []
        for _ in range(QUEUED + 1):
            known.add(content(len(known)))
            calls.append(
                server.call("WriteFile", {"path": target.name, "content": content(len(known) - 1).decode()})
            )
        first = server.reply(calls[0])
        assert _ok(first), first
        server.reply(calls[1])
        time.sleep(rng.uniform(0, 0.04))
        os.kill(server.pid, signal.SIGKILL)
        server.close_pipes()
        _wait_gone(server.pid)
        last = check_history(target, known)
        seen["kills"] += 1
        seen["unconfirmed"] += last.state == "unconfirmed"
        # The next server undoes the write that left the file as it is.
        before = WriteHistory(history_dir()).pre_image(last)
        server = zygote.spawn(ws, "--approval", "auto", "--read-guard", "off", env=env)
        undo: dict[str, Any] = server.reply(server.call("UndoWrite", {"write_id": last.id}))
        assert _ok(undo), undo
        assert WRITE_ID.search(undo["result"]["content"][-1]["text"])
        assert target.read_bytes() == before
        seen["undone"] += 1
        server.close_pipes()  # its input ends: it stops
        _wait_gone(server.pid)
    return seen


@pytest.mark.slow
def test_server_killed_mid_write_leaves_a_history_that_agrees_with_the_file(zygote: Zygote, ws: Path) -> None:
    seen = kill_loop(zygote, ws, KILLS, seed=11)
    print(f"\nhistory kills: {seen}")
    assert seen["kills"] == KILLS == seen["undone"]
