"""The process-wide budget of whole-file loads (fsio/loads.py): room is held while a load runs,
given back however it ends, and a load that finds no room in time is refused as busy."""

from __future__ import annotations

import asyncio

import pytest

from filegate.errors import Busy
from filegate.fsio import loads


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
