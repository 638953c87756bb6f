"""A popped batch gives back the pods that a pod entering activeQ meanwhile precedes
(``unpop_overtaken``): afterwards the queue pops exactly what single pops would have
popped had the batch never been taken, with the same cycles and attempts."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.clock import FakeClock
from cluster_sched.queue import Popped, SchedulingQueue
from tests.queue.queue_helpers import info


def _popped(batch: list[Popped]) -> list[tuple[str, int, int]]:
    return [(p.info.pod_key, p.cycle, p.info.attempts) for p in batch]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    priorities=st.lists(st.integers(-2, 2), min_size=1, max_size=6),
    scheduled=st.integers(0, 6),
    newcomer=st.integers(-3, 3),
)
def test_a_batch_gives_back_what_a_newcomer_precedes(
    make_queue: Callable[..., SchedulingQueue],
    clock: FakeClock,
    priorities: list[int],
    scheduled: int,
    newcomer: int,
) -> None:
    scheduled = min(scheduled, len(priorities) - 1)
    pods = [info(f"p{i}", prio, clock.now() + i) for i, prio in enumerate(priorities)]
    late = info("late", newcomer, clock.now() + 0.5)
    serial, batched = (make_queue(prefix=f"{{u{uuid.uuid4().hex}}}") for _ in range(2))

    serial.add_many(pods)
    expected = [serial.pop_many(1, timeout=0)[0] for _ in range(scheduled)]
    serial.add(late)
    expected += [serial.pop_many(1, timeout=0)[0] for _ in range(len(pods) + 1 - scheduled)]
    assert serial.pop_many(1, timeout=0) == []

    batched.add_many(pods)
    batch = batched.pop_many(64, timeout=0)
    writes = batched.active_writes
    batched.add(late)
    assert batched.active_writes != writes  # the loop asks only then
    rest = batch[scheduled:]
    kept = batched.unpop_overtaken(rest)
    # the pods before the newcomer in activeQ's order stay popped, the others go back
    ahead = [p.info.pod_key for p in rest[:kept]]
    assert ahead == [p.info.pod_key for p in expected[scheduled : scheduled + kept]]
    got = batch[: scheduled + kept] + batched.pop_many(64, timeout=0)
    got += batched.pop_many(64, timeout=0)
    assert _popped(got) == _popped(expected)
    assert batched.pop_many(64, timeout=0) == []


def test_nothing_changes_when_the_newcomer_comes_last(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    queue.add_many([info(f"p{i}", 1, clock.now()) for i in range(3)])
    batch = queue.pop_many(64, timeout=0)
    queue.add(info("late", 0, clock.now()))
    assert queue.unpop_overtaken(batch[1:]) == 2
    assert queue.last_pop_cycle == 3
    assert _popped(queue.pop_many(64, timeout=0)) == [("default/late", 4, 1)]
