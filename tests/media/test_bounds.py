"""media/bounds.py at its seam: the decoded-size check, the decode gate, the deadline."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from filegate.errors import MediaError
from filegate.media.bounds import (
    MAX_DECODE_BYTES,
    Deadline,
    DeadlineReader,
    DecodeTimeout,
    MemoryGate,
    check_decoded_size,
    decode_busy,
)


def test_decoded_size_is_width_height_and_bytes_a_pixel_up_to_the_budget() -> None:
    assert check_decoded_size(MAX_DECODE_BYTES // 4, 1, 4) == MAX_DECODE_BYTES
    assert check_decoded_size(100, 50, 3) == 15_000
    with pytest.raises(MediaError) as caught:
        check_decoded_size(MAX_DECODE_BYTES // 4 + 1, 1, 4, "each frame")
    assert str(caught.value).startswith(
        f"each frame is {MAX_DECODE_BYTES // 4 + 1}x1px with 4 bytes a pixel: "
        f"{MAX_DECODE_BYTES + 4} bytes once decoded, over the {MAX_DECODE_BYTES} bytes"
    )


def test_deadline_raises_only_once_it_has_passed() -> None:
    Deadline(10).check()
    late = Deadline(0)
    time.sleep(0.001)  # not an ordering: a deadline of 0 s is past after any wait at all
    with pytest.raises(DecodeTimeout, match=r"took longer than the 0 s this server allows"):
        late.check()
    assert isinstance(DecodeTimeout("x"), MediaError)


def test_deadline_reader_reads_until_the_deadline_then_refuses() -> None:
    reader = DeadlineReader(b"abcdef", Deadline(10))
    assert reader.read(2) == b"ab" and reader.read() == b"cdef"
    reader.deadline = Deadline(-1)
    with pytest.raises(DecodeTimeout):
        reader.read(1)


@pytest.fixture
def holder() -> Iterator[Callable[[MemoryGate, int], None]]:
    """Holds a gate's slot from another thread until the test ends."""
    release = threading.Event()
    workers: list[threading.Thread] = []

    def hold(gate: MemoryGate, cost: int) -> None:
        held = threading.Event()

        def run() -> None:
            with gate.hold(cost, Deadline(10)):
                held.set()
                release.wait(10)

        worker = threading.Thread(target=run)
        worker.start()
        workers.append(worker)
        assert held.wait(10)

    yield hold
    release.set()
    for worker in workers:
        worker.join(10)


def test_gate_makes_a_decode_wait_while_the_capacity_is_held(
    holder: Callable[[MemoryGate, int], None],
) -> None:
    gate = MemoryGate(2, 100, decode_busy)
    holder(gate, 100)
    with pytest.raises(DecodeTimeout, match="busy decoding other media"), gate.hold(1, Deadline(0.05)):
        pass


def test_gate_counts_slots_as_well_as_bytes(holder: Callable[[MemoryGate, int], None]) -> None:
    gate = MemoryGate(2, 100, decode_busy)
    holder(gate, 10)
    with gate.hold(10, Deadline(1)):  # a second small decode runs beside the first
        pass
    holder(gate, 10)
    with pytest.raises(DecodeTimeout), gate.hold(1, Deadline(0.05)):  # a third waits
        pass


def test_gate_caps_a_cost_at_its_capacity_and_frees_what_it_held() -> None:
    gate = MemoryGate(1, 100, decode_busy)
    with gate.hold(10**12, Deadline(1)):  # a decode bigger than the capacity runs alone
        pass
    with gate.hold(100, Deadline(0.05)):  # and left the whole capacity free
        pass
    with pytest.raises(RuntimeError), gate.hold(50, Deadline(1)):
        raise RuntimeError("a failed decode")
    with gate.hold(100, Deadline(0.05)):  # a failure frees its slot too
        pass


def test_a_gate_without_slots_bounds_bytes_alone(holder: Callable[[MemoryGate, int], None]) -> None:
    gate = MemoryGate(None, 100, decode_busy)
    for _ in range(5):  # any number of holders, while their bytes fit together
        holder(gate, 10)
    with gate.hold(50, Deadline(1)):
        assert (gate.running, gate.held) == (6, 100)
    with pytest.raises(DecodeTimeout), gate.hold(51, Deadline(0.05)):
        pass
    assert (gate.running, gate.held) == (5, 50)


def test_a_ticket_closed_before_its_take_holds_nothing() -> None:
    # A cancelled call closes its ticket while the abandoned worker thread may still take it:
    # the take is then refused and gives its room straight back.
    gate = MemoryGate(None, 100, decode_busy)
    ticket = gate.ticket()
    ticket.close()
    with pytest.raises(DecodeTimeout):
        ticket.take(60, Deadline(1))
    assert (gate.running, gate.held) == (0, 0)
    taken = gate.ticket()
    taken.take(60, Deadline(1))
    assert gate.held == 60
    taken.close()
    taken.close()  # closing twice gives back once
    assert (gate.running, gate.held) == (0, 0)
