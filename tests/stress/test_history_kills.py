"""SIGKILL a real filegate server at random moments while it writes with its history on
(SPEC §8.4): the pre-image is durable before the rename, so after every kill the file is its
old or its new content, every kept pre-image is whole, the history's last word on the file
agrees with what it holds, and an UndoWrite through the next server puts back the content
before the last write that landed."""

from __future__ import annotations

import json
import os
import random
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from filegate.fsio.history import Entry, Limits, WriteHistory, history_dir
from filegate.fsio.spliced import content_hash
from filegate.policy.workspace import ResolvedPath
from tests.conftest import WRITE_ID
from tests.stress.procs import Zygote
from tests.stress.test_crash_kills import FILLER, OLD, QUEUED, _ok, _wait_gone

KILLS = 30


def _sha(data: bytes) -> str:
    return content_hash(data)


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


# A writer of its own, in a child process, through the store's API (begin, the file replaced,
# finish): its writes age out after AGE_S (tombstones appended, pre-images removed), and every
# few writes it pads the log with lines no record needs (outcomes of unknown ids, as many as a
# long-evicted history leaves), so the next finish compacts a log of LIVE live writes.
# SIGKILLed at random moments.
LIVE = 20_000
AGE_S = 1.0
COMPACTING_WRITER = """
import os, sys, time
from pathlib import Path
from filegate.fsio import historylog
from filegate.fsio.history import Limits, WriteHistory
from filegate.policy.workspace import ResolvedPath

compact = historylog.HistoryLog.compact
def said(self, *args):  # the parent is told when a compaction starts, to kill inside it
    print("compacting", flush=True)
    started = time.monotonic()
    compact(self, *args)
    print("compacted %f" % (time.monotonic() - started), flush=True)
historylog.HistoryLog.compact = said
fsync = os.fsync
def syncing(fd):  # and when the compacted log's temp is synced, before it replaces the log
    if "history.jsonl.tmp-" in os.readlink("/proc/self/fd/%d" % fd):
        print("syncing its temp", flush=True)
    fsync(fd)
os.fsync = syncing
ws, round_ = Path(sys.argv[1]), int(sys.argv[2])
h = WriteHistory(limits=Limits(max_age_s=AGE_S))
h.entries()
print("ready", flush=True)
for k in range(10**9):
    path = ws / f"f{k % 7}.txt"
    old = path.read_bytes() if path.exists() else None
    new = b"round %06d write %09d " % (round_, k) + b"x" * 40
    write_id = h.begin("WriteFile", ResolvedPath(path.name, path, True, False), "kills", "auto", old, new)
    path.write_bytes(new)
    h.finish(write_id, ok=True)
    if k % 3 == 2:
        with h._locked():
            h.log.append([{"id": f"w-{j:06x}", "outcome": "done"} for j in range(3 * LIVE)], durable=False)
""".replace("LIVE", str(LIVE)).replace("AGE_S", str(AGE_S))


def seed_live_writes(n: int) -> None:
    """``n`` writes of sensitive files (no pre-image) with their outcomes: what a compaction
    writes back, so that it takes a while. Dated an hour ahead (a clock stepped back since),
    so that no bound evicts them."""
    root = history_dir()
    root.mkdir(parents=True, mode=0o700)
    now = time.time() + 3600
    with open(root / "history.jsonl", "w") as f:
        for k in range(n):
            entry = Entry(f"w-{0xA00000 + k:06x}", now, "seed", "WriteFile", f"/s/{k}", "auto", kept=False)
            f.write(json.dumps(entry.line(), separators=(",", ":")) + "\n")
            f.write(json.dumps({"id": entry.id, "outcome": "done"}, separators=(",", ":")) + "\n")


@pytest.mark.slow
def test_killed_while_compacting_the_log_leaves_a_history_that_reads_whole(tmp_path: Path) -> None:
    """After each kill: every live write's pre-image is there and whole, no evicted id is live
    again, the seeded writes are all there and evictions happened; a compaction's temp file
    left by a kill is gone after the next one. Half the kills come a few ms after the child
    says a compaction starts (a wrapper in the child, named so), half at random; counted by
    what each kill left."""
    rng = random.Random(56)
    ws = tmp_path / "ws"
    ws.mkdir()
    seed_live_writes(LIVE)
    evicted: set[str] = set()
    seen = {"in a compaction": 0, "its temp written": 0, "elsewhere": 0}
    span = 0.3  # a compaction's length, as the last one the child said took
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for round_ in range(KILLS):
        child = subprocess.Popen(
            [sys.executable, "-c", COMPACTING_WRITER, str(ws), str(round_)],
            stdout=subprocess.PIPE,
            env=env,
        )
        assert child.stdout is not None and child.stdout.readline() == b"ready\n"
        if round_ % 2:  # at a random moment
            time.sleep(rng.uniform(0.05, 1.5))
        else:  # at a random moment of a compaction (as long as the last one seen took), or
            ready, _, _ = select.select([child.stdout], [], [], 60)  # as its temp is synced
            assert ready and child.stdout.readline() == b"compacting\n"
            if round_ % 4 == 0:
                assert child.stdout.readline() == b"syncing its temp\n"
            else:
                time.sleep(rng.uniform(0.0, span))
        child.kill()
        child.wait()
        said = child.stdout.read().split(b"\n")
        child.stdout.close()
        took = [float(line.split()[1]) for line in said if line.startswith(b"compacted")]
        span = took[-1] if took else span
        inside = said[-2:-1] in ([b"compacting"], [b"syncing its temp"]) or (round_ % 2 == 0 and not took)
        if inside:
            seen["in a compaction"] += 1
            seen["its temp written"] += bool(list(history_dir().glob("history.jsonl.tmp-*")))
        else:
            seen["elsewhere"] += 1
        history = WriteHistory(history_dir(), Limits(max_age_s=AGE_S))
        entries = history.entries()
        live = {e.id for e in entries}
        assert not live & evicted, "an evicted write came back"
        assert sum(1 for e in entries if e.client == "seed") == LIVE
        for entry in entries:
            if entry.kept and entry.before:
                assert len(history.pre_image(entry)) == entry.size_before, entry.id
        evicted |= set(history.log.tombstones)
    print(f"\ncompaction kills: {seen}, {len(evicted)} writes evicted")
    assert (
        seen["in a compaction"] >= 5 and seen["its temp written"] >= 1 and seen["elsewhere"] >= 5 and evicted
    )
    write_id = WriteHistory(history_dir()).begin(  # one more compaction sweeps what kills left
        "WriteFile", ResolvedPath("f0.txt", ws / "f0.txt", True, False), "kills", "auto", None, b"x"
    )
    history = WriteHistory(history_dir())
    history.log.compact(time.time(), 1e9)
    assert list(history_dir().glob("history.jsonl.tmp-*")) == [] and history.find(write_id) is not None
