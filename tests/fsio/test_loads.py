"""The process-wide budget of whole-file loads (fsio/loads.py): room is held while a load runs,
given back however it ends, and a load that finds no room in time is refused as busy."""

from __future__ import annotations

import asyncio
import threading
import time

import anyio
import pytest

from filegate.errors import Busy, Stopped
from filegate.fsio import loads
from filegate.media.bounds import Deadline, MemoryGate, Ticket


def test_holding_takes_room_for_the_block_and_gives_it_back_on_error() -> None:
    before = loads.LOADS.held
    with loads.holding(5 << 20):
        assert loads.LOADS.held == before + (5 << 20)
    assert loads.LOADS.held == before
    with pytest.raises(RuntimeError), loads.holding(7 << 20):
        assert loads.LOADS.held == before + (7 << 20)
        raise RuntimeError("the load failed")
    assert loads.LOADS.held == before


def test_a_ticket_is_charged_once_taken_and_released_when_its_block_ends() -> None:
    before = loads.LOADS.held

    async def run() -> None:
        async with loads.ticket_held() as ticket:
            loads.take(ticket, 3 << 20)
            assert loads.LOADS.held == before + (3 << 20)
        assert loads.LOADS.held == before
        async with loads.ticket_held():
            assert loads.LOADS.held == before  # never taken: nothing charged, nothing to give back

    asyncio.run(run())
    loads.take(None, 1 << 30)  # no ticket: no charge, no wait
    assert loads.LOADS.held == before


def test_a_load_that_finds_no_room_in_time_is_refused_as_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loads, "LOAD_WAIT_S", 0.05)
    with loads.holding(loads.MAX_LOAD_BYTES), pytest.raises(Busy) as refused, loads.holding(1):
        pass
    message = refused.value.message
    assert message.startswith("The server was busy holding other calls' files (at most 256 MiB at once)")
    assert message.endswith("; nothing was done, try again.")


# Issue 53 item 6: the budget is given back when the work on the bytes ends, a call's work stops
# at its deadline or when its client gave up, and a waiting call is not passed by later ones.


def test_a_ticket_closed_while_its_worker_runs_keeps_the_room_until_the_worker_ends() -> None:
    """A cancelled call closed its ticket while its abandoned thread still held the bytes: the
    budget said free, the memory was not."""
    before = loads.LOADS.held
    ticket = loads.load_ticket()
    started, finish = threading.Event(), threading.Event()

    def worker() -> None:
        ticket.enter()
        try:
            loads.take(ticket, 4 << 20)
            started.set()
            finish.wait(10)
        finally:
            ticket.leave()

    thread = threading.Thread(target=worker)
    thread.start()
    assert started.wait(10)
    ticket.close()  # the call's async side ends (cancelled): the worker still holds the bytes
    assert loads.LOADS.held == before + (4 << 20)
    finish.set()
    thread.join(10)
    assert loads.LOADS.held == before


def test_in_thread_cancelled_cancels_the_work_and_gives_the_room_back_when_the_thread_ends() -> None:
    before = loads.LOADS.held
    work = loads.Work()
    holding_now, seen = threading.Event(), []

    def job(ticket: Ticket) -> None:
        loads.take(ticket, 2 << 20)
        holding_now.set()
        deadline = time.monotonic() + 10
        try:
            while time.monotonic() < deadline:  # the work, checking its call as it goes
                work.check()
                time.sleep(0.001)
        except Stopped as stopped:
            seen.append((stopped.message, loads.LOADS.held))
            raise

    async def run() -> None:
        async with loads.ticket_held() as ticket:
            with anyio.move_on_after(0.2):  # the client gives up
                await loads.in_thread(lambda: job(ticket), work, ticket)
        assert work.cancelled

    asyncio.run(run())
    deadline = time.monotonic() + 10
    while loads.LOADS.held != before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert holding_now.is_set() and work.cancelled
    assert seen == [
        ("The call was cancelled (its client gave up on it); nothing was done.", before + (2 << 20))
    ]
    assert loads.LOADS.held == before  # given back by the worker as it stopped


def test_work_stops_past_its_deadline_which_runs_from_arm() -> None:
    work = loads.Work()
    work.check()  # not armed: no deadline (a wait for room does not count)
    work.arm(0.05)
    work.arm(100)  # armed once: a later arm does not move it
    work.check()
    time.sleep(0.06)
    with pytest.raises(Stopped) as stopped:
        work.check()
    assert stopped.value.message.startswith(
        "The call was stopped: its work on the file took longer than the 0.05 s"
    )
    assert loads.WORK_S < loads.LOAD_WAIT_S  # a waiting call gets room before its wait runs out


def test_waiting_calls_are_served_first_come_first_served() -> None:
    """Without the queue a call waiting for room was passed by later calls that fit in what
    was left, again and again, until its wait ran out ("busy")."""
    gate = MemoryGate(None, 10, lambda s: Busy(f"busy {s}"))
    order: list[str] = []
    holder = gate.ticket()
    holder.take(6, Deadline(1))

    def wait_for(name: str, cost: int) -> None:
        with gate.hold(cost, Deadline(10)):
            order.append(name)
            time.sleep(0.05)

    big = threading.Thread(target=wait_for, args=("big", 8))  # 6 + 8 > 10: waits
    big.start()
    time.sleep(0.2)  # the big call waits first
    small = threading.Thread(target=wait_for, args=("small", 3))  # 6 + 3 fits, but it came later
    small.start()
    time.sleep(0.2)
    assert order == []
    holder.close()
    big.join(10)
    small.join(10)
    assert order == ["big", "small"]
    assert (gate.running, gate.held) == (0, 0)


def test_a_waiter_that_gives_up_lets_the_next_one_in() -> None:
    gate = MemoryGate(None, 10, lambda s: Busy("busy"))
    holder = gate.ticket()
    holder.take(6, Deadline(1))
    with pytest.raises(Busy):  # wants 8: waits at the head of the queue, in vain
        gate.hold(8, Deadline(0.05)).__enter__()
    with gate.hold(4, Deadline(0.05)):  # fits, and no one is ahead of it any more
        assert gate.held == 10
    holder.close()
    assert (gate.running, gate.held) == (0, 0)
