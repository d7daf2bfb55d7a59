"""Bench item ``history-load`` (SPEC §8.4, issue 56): a long write history costs a server its
first write once, and a replica little after another process's eviction.

A generated history of HISTORY_WRITES writes (each record written by the installed filegate's
own ``Entry.line()``, with its outcome; each kept a distinct 1,000-byte pre-image, counted by
the records, not on disk: an eviction passes over a missing one) in a state directory of its
own. Two rows:

- the first StrReplaceFile of a fresh server with that history (it reads the whole log)
  against the same with an empty history; target: at most 0.5 s more;
- a replica's write (a warm server B sharing the state directory) right after another process
  (A, started with a byte bound just under what is kept) evicted a tenth of the history,
  against B's write with nothing in between; target: at most 0.1 s more (a tenth of a whole
  read: what a replica paid after each eviction when an eviction rewrote the log).
"""

from __future__ import annotations

import hashlib
import shutil
import statistics
import time
from pathlib import Path

from harness import CACHE, Pairs, connect, filegate_cmd
from items import Config, Row, ms, spread
from percall import server_cpu_s

HISTORY_WRITES = 50_000
PRE_IMAGE = 1_000
FLAGS = ("--approval", "auto", "--read-guard", "off")


def _generate(log: Path, writes: int) -> None:
    import json

    from filegate.fsio.history import Entry

    now = time.time()
    with log.open("w") as f:
        for k in range(writes):
            before, after = (hashlib.sha256(b"%s%d" % (w, k)).hexdigest() for w in (b"", b"after "))
            path = f"/home/user/project/src/module_{k % 500}/file_{k % 37}.py"
            entry = Entry(f"w-{k:06x}", now - 3600 + k * 0.05, "bench", "StrReplaceFile", path, "auto",
                          True, before, after, PRE_IMAGE, PRE_IMAGE + 5, 0o644)  # fmt: skip
            f.write(json.dumps(entry.line(), separators=(",", ":")) + "\n")
            f.write(json.dumps({"id": entry.id, "outcome": "done"}, separators=(",", ":")) + "\n")


def _fresh_state(state: Path, original: Path | None) -> None:
    shutil.rmtree(state, ignore_errors=True)
    (state / "filegate" / "history").mkdir(parents=True, mode=0o700)
    if original is not None:
        shutil.copyfile(original, state / "filegate" / "history" / "history.jsonl")


async def _first_write(work: Path, state: Path, name: str) -> tuple[float, float]:
    """The first write's wall time at the client and the server's CPU time for it."""
    async with connect(filegate_cmd(work, *FLAGS), "filegate", state) as fg:
        (work / name).write_text("one line\n")
        cpu = server_cpu_s(fg.pid) if fg.pid else 0.0
        wall = await fg.timed("StrReplaceFile", {"path": name, "edit": {"old": "one", "new": "first"}})
        return wall, (server_cpu_s(fg.pid) - cpu) if fg.pid else 0.0


async def history_load(cfg: Config) -> list[Row]:
    base = CACHE / "work" / "history-load"
    shutil.rmtree(base, ignore_errors=True)
    work = base / "ws"
    work.mkdir(parents=True)
    original = base / "history.jsonl"
    _generate(original, HISTORY_WRITES)
    long_state, empty_state = base / "state-long", base / "state-empty"
    p, cpu = Pairs(), Pairs()
    for i in range(cfg.runs + 1):  # the first pair warms the page cache and is left out
        _fresh_state(long_state, original)
        _fresh_state(empty_state, None)
        order = [(long_state, "a"), (empty_state, "b")][:: 1 if i % 2 == 0 else -1]
        got = {side: await _first_write(work, state, f"{side}.txt") for state, side in order}
        if i:
            (wall_a, cpu_a), (wall_b, cpu_b) = got["a"], got["b"]
            p.a.append(wall_a)
            p.b.append(wall_b)
            cpu.a.append(cpu_a)
            cpu.b.append(cpu_b)
    empty = statistics.median(p.b)
    extra = p.a_med - empty
    work_done = f"first StrReplaceFile of a fresh server with a {HISTORY_WRITES:,}-write history"
    size = original.stat().st_size >> 20
    notes = [
        f"n={len(p.a)} pairs; {spread(p.a)}, empty {spread(p.b)}; log {size} MiB; the server's CPU "
        f"for the call {ms(cpu.a_med)} against {ms(statistics.median(cpu.b))} (/proc, 10 ms ticks)"
    ]
    rows = [Row(work_done, ms(p.a_med), f"{ms(empty)} (empty history)", f"+{ms(extra)}", "≤ +0.5 s",
                extra <= 0.5, "—", notes)]  # fmt: skip
    rows.append(await _replica(cfg, work, long_state, original))
    return rows


def _tombstones(root: Path) -> int:
    return (root / "history.jsonl").read_bytes().count(b'"evicted":')


async def _replica(cfg: Config, work: Path, state: Path, original: Path) -> Row:
    from filegate.fsio.history import WriteHistory

    _fresh_state(state, original)
    root = state / "filegate" / "history"
    p = Pairs()
    evicted: list[int] = []
    async with connect(filegate_cmd(work, *FLAGS), "filegate", state) as b:
        (work / "b.txt").write_text("b 0\n")
        count = [0]

        async def b_write() -> float:
            count[0] += 1
            old, new = f"b {count[0] - 1}", f"b {count[0]}"
            return float(await b.timed("StrReplaceFile", {"path": "b.txt", "edit": {"old": old, "new": new}}))

        await b_write()  # B has read the whole log
        for i in range(cfg.runs):
            reader = WriteHistory(root)
            reader.find("w-none")  # read up to date
            bound = str(reader.kept_bytes())  # A: at its bound, so its write evicts a tenth
            before = _tombstones(root)
            (work / "a.txt").write_bytes(b"%d " % i + b"a" * 20_000)
            evictor = filegate_cmd(work, *FLAGS, "--history-max-bytes", bound)
            async with connect(evictor, "filegate", state) as a:
                await a.call("WriteFile", {"path": "a.txt", "content": f"a {i}\n"})
            evicted.append(_tombstones(root) - before)
            p.a.append(await b_write())  # B reads what A appended (or, before issue 56, the whole log)
            p.b.append(await b_write())  # the same write with nothing in between
    ratio = p.ratio() or 0.0
    note = [f"n={len(p.a)} pairs; after an eviction {spread(p.a)}, nothing between {spread(p.b)}; "
            f"writes evicted by A each time: {evicted}"]  # fmt: skip
    quiet = statistics.median(p.b)
    extra = p.a_med - quiet
    return Row("a replica's StrReplaceFile after another process evicted a tenth of the history",
               ms(p.a_med), f"{ms(quiet)} (nothing in between)", f"{ratio:.2f}×, +{ms(extra)}",
               "≤ +0.1 s", extra <= 0.1, "—", note)  # fmt: skip
