"""One process-wide byte budget for every whole-file load (SPEC §4 ReadMediaFile, memory): a
media file read before decoding, a write's old content, a preview. Parallel calls wait for
room; one that waits too long is refused clearly. In memory here, with the budget lowered so a
few MiB show it (tests/stress/test_load_memory.py measures a real server's peak)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from filegate.fsio import loads
from filegate.media.bounds import Deadline, MemoryGate
from tests import media_factory as mf
from tests.conftest import call, connect, text, write_id_of

pytestmark = pytest.mark.usefixtures("read_guard_off")

MIB = 1 << 20
FILE = 2 * MIB
# Room for two of the files at once, not three.
BUDGET = 5 * MIB


@pytest.fixture
def charges(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[int, int]]]:
    """The load budget lowered to BUDGET; each room taken, as (cost, bytes held after it)."""
    seen: list[tuple[int, int]] = []
    take = loads.LOADS._take

    def recording(cost: int, deadline: Deadline) -> None:
        take(cost, deadline)
        seen.append((cost, loads.LOADS.held))

    monkeypatch.setattr(loads.LOADS, "capacity", BUDGET)
    monkeypatch.setattr(loads.LOADS, "_take", recording)
    yield seen
    assert (loads.LOADS.running, loads.LOADS.held) == (0, 0), "room left taken after the calls"


def files(ws: Path, n: int) -> None:
    for i in range(n):
        mf.write_sparse_png(ws / f"pic{i}.png", FILE)
        (ws / f"log{i}.txt").write_bytes(b"a line\n" * (FILE // 7))
        (ws / f"src{i}.txt").write_bytes(b"first\n" + b"a line\n" * (FILE // 7 - 1))


async def test_parallel_whole_file_loads_wait_for_room_in_one_budget(
    ws: Path, charges: list[tuple[int, int]]
) -> None:
    n = 4
    files(ws, n)
    async with connect(ws, approval="auto") as c:
        calls = []
        for i in range(n):
            calls.append(call(c, "ReadMediaFile", path=f"pic{i}.png"))
            calls.append(
                call(c, "WriteFile", path=f"log{i}.txt", content="more\n", mode="append", dry_run=True)
            )
            edit = {"old": "first\n", "new": "one line\n"}
            calls.append(call(c, "StrReplaceFile", path=f"src{i}.txt", edit=edit))
        results = await asyncio.gather(*calls)
    for r in results:
        assert not r.is_error, text(r)
    assert "Preview (dry_run)" in text(results[1])
    # Every load was charged at its file's size (a text file of whole lines is a bit smaller),
    # and never did the loads together hold more than the budget.
    assert len(charges) == 3 * n
    assert all(FILE - 7 <= cost <= FILE for cost, _held in charges)
    assert max(held for _cost, held in charges) <= BUDGET
    assert (ws / "src0.txt").read_bytes().startswith(b"one line\n")


async def test_a_call_that_finds_no_room_in_time_is_refused_and_changes_nothing(
    ws: Path, charges: list[tuple[int, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    files(ws, 1)
    monkeypatch.setattr(loads, "LOAD_WAIT_S", 0.05)
    before = (ws / "src0.txt").read_bytes()
    async with connect(ws, approval="auto") as c:
        with loads.holding(BUDGET):  # another call holds the whole budget meanwhile
            media = await call(c, "ReadMediaFile", path="pic0.png")
            preview = await call(c, "WriteFile", path="log0.txt", content="x", mode="append", dry_run=True)
            edit = await call(c, "StrReplaceFile", path="src0.txt", edit={"old": "first", "new": "b"})
        after = await call(c, "ReadMediaFile", path="pic0.png")
    busy = (
        f"The server was busy holding other calls' files (at most {BUDGET >> 20} MiB at once) for "
        "longer than 0.05 s; nothing was done, try again."
    )
    for r in (media, preview, edit):
        assert r.is_error and text(r) == busy
    assert (ws / "src0.txt").read_bytes() == before
    assert not after.is_error, text(after)  # the room came back with the holder


class CountingGate(MemoryGate):
    """The real gate, counting the rooms taken (so a test knows a call did load its file)."""

    taken = 0

    def _take(self, cost: int, deadline: Deadline) -> None:
        super()._take(cost, deadline)
        self.taken += 1


@pytest.fixture
def room_for_one_file(monkeypatch: pytest.MonkeyPatch) -> CountingGate:
    """A budget of its own for this test, with room for one file's load: what earlier tests on
    this worker took or left taken cannot change the verdict (run alone, first, or after others)."""
    gate = CountingGate(None, FILE, loads.LOADS.busy)
    monkeypatch.setattr(loads, "LOADS", gate)
    monkeypatch.setattr(loads, "LOAD_WAIT_S", 0.2)
    return gate


async def test_a_refused_call_gives_its_share_of_the_load_budget_back(
    ws: Path, room_for_one_file: CountingGate
) -> None:
    """Each call below loads its file whole and is then refused. Each must give its room back
    however it ends: one refusal that kept its share would leave the budget full, and every later
    load of this process would be refused as "busy"."""
    gate = room_for_one_file
    src = ws / "src.txt"
    src.write_bytes(b"first\n" + b"a line\n" * (FILE // 7 - 1))
    mf.write_truncated_png(ws / "broken.png")
    async with connect(ws, approval="auto") as c:
        w = await call(c, "WriteFile", path="log.txt", content="written\n")
        (ws / "log.txt").write_text("WRITTEN\n")  # changed since: its undo is refused
        refusals = [
            ("StrReplaceFile", {"path": "src.txt", "edit": {"old": "not in the file", "new": "x"}}),
            ("StrReplaceFile", {"path": "src.txt", "edit": {"old": "a line", "new": "x"}}),  # ambiguous
            ("WriteFile", {"path": "src.txt", "content": "first\n# ... rest of the code unchanged\n"}),
            ("UndoWrite", {"write_id": write_id_of(text(w))}),
            ("ReadMediaFile", {"path": "broken.png"}),
        ]
        for tool, args in refusals:
            taken = gate.taken
            r = await call(c, tool, **args)
            assert gate.taken > taken, (tool, "loaded nothing: this refusal tests nothing here")
            assert r.is_error, (tool, text(r))
            assert "busy" not in text(r), text(r)
            assert (gate.running, gate.held) == (0, 0), (tool, "kept its share", text(r))
        edit = await call(c, "StrReplaceFile", path="src.txt", edit={"old": "first\n", "new": "one\n"})
    assert not edit.is_error, text(edit)  # the whole budget was free again
    assert src.read_bytes().startswith(b"one\n")
