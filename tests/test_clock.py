"""The clock seam: FakeClock moves only when told; SystemClock is the wall clock."""

from __future__ import annotations

import time

import pytest

from cluster_sched.clock import Clock, FakeClock, SystemClock


def test_fake_clock_steps_and_sleeps_without_waiting() -> None:
    clock = FakeClock(100.0)
    assert clock.now() == 100.0
    assert clock.step(2.5) == 102.5
    clock.sleep(10)
    assert clock.now() == 112.5
    clock.sleep(-1)  # sleeping a negative time is a no-op, as time.sleep(0)
    assert clock.now() == 112.5


def test_fake_clock_never_goes_back() -> None:
    with pytest.raises(ValueError, match="backwards"):
        FakeClock().step(-0.1)


def test_system_clock_is_epoch_seconds() -> None:
    before = time.time()
    now = SystemClock().now()
    assert now >= before
    SystemClock().sleep(0)


@pytest.mark.parametrize("clock", [SystemClock(), FakeClock()], ids=["system", "fake"])
def test_both_satisfy_the_protocol(clock: Clock) -> None:
    assert isinstance(clock, Clock)


def test_virtual_clock_moves_only_forward_and_only_when_told() -> None:
    from cluster_sched.clock import VIRTUAL_EPOCH, VirtualClock

    clock = VirtualClock()
    assert clock.now() == VIRTUAL_EPOCH
    assert clock.advance_to(VIRTUAL_EPOCH + 10) == VIRTUAL_EPOCH + 10
    assert clock.advance_to(VIRTUAL_EPOCH) == VIRTUAL_EPOCH + 10  # never backwards
    clock.sleep(100)  # a thread sleeping does not move simulated time for everyone
    assert clock.now() == VIRTUAL_EPOCH + 10
    assert isinstance(clock, Clock)
