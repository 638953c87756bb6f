"""Done for many pods in one script run (``done_many``, and the Done calls a pop carries)
leaves exactly the state and count of single ``done`` calls in a row: the script writes
per key for the whole batch, so pods that are not in flight, keys given twice and
unknown keys must come out as the single calls leave them."""

from __future__ import annotations

import uuid
from dataclasses import replace

import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.clock import FakeClock
from cluster_sched.queue import SchedulingQueue
from tests.queue.queue_helpers import FIT, PLUGIN_EVENTS, T0, dump, info, twin

PROPERTY = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# Where a pod named in the Done call is when the call runs.
STATES = ("flying", "active", "pool", "unknown")


@PROPERTY
@given(
    states=st.lists(st.sampled_from(STATES), min_size=1, max_size=25),
    data=st.data(),
)
def test_done_many_equals_single_dones(
    redis_client: redis.Redis, states: list[str], data: st.DataObject
) -> None:
    clock = FakeClock(T0)
    queue = SchedulingQueue(
        redis_client, prefix=f"{{d{uuid.uuid4().hex}}}", clock=clock, plugin_events=PLUGIN_EVENTS
    )
    infos = [info(f"p{i}", 0, T0 + i) for i in range(len(states))]
    queue.add_many([i for i, s in zip(infos, states, strict=True) if s != "unknown"])
    popped = queue.pop_many(len(states), timeout=0)
    cycles = {p.info.pod_key: p.cycle for p in popped}
    for p, s in zip(popped, [s for s in states if s != "unknown"], strict=True):
        if s == "active":  # an update put it back in activeQ meanwhile
            queue.done(p.info.pod_key)
            queue.add(p.info)
        elif s == "pool":
            rejected = replace(p.info, unschedulable_plugins=frozenset({FIT}))
            queue.add_unschedulable_if_not_present(rejected, cycles[p.info.pod_key])
    keys = [i.pod_key for i in infos]
    # Any order, some keys twice, some left out.
    named = data.draw(st.lists(st.sampled_from(keys), max_size=2 * len(keys)))
    other = twin(redis_client, queue, clock=clock, plugin_events=PLUGIN_EVENTS)

    singles = sum(queue.done(key) for key in named)
    many = other.done_many(named)

    assert many == singles
    assert dump(redis_client, queue.keys) == dump(redis_client, other.keys)


@PROPERTY
@given(
    sizes=st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=5),
    data=st.data(),
)
def test_pops_carrying_done_calls_equal_single_calls(
    redis_client: redis.Redis, sizes: list[int], data: st.DataObject
) -> None:
    """Batches popped and finished in turn, the Done calls riding on each next pop, leave
    the state single pops and single Done calls leave (the in-flight set included)."""
    clock = FakeClock(T0)
    carried = SchedulingQueue(redis_client, prefix=f"{{d{uuid.uuid4().hex}}}", clock=clock)
    carried.add_many([info(f"p{i:02d}", i % 3, T0 + i) for i in range(sum(sizes) + 3)])
    single = twin(redis_client, carried, clock=clock)
    for size in sizes:
        got = carried.pop_many(size, timeout=0)
        want = [p for p in (single.pop(timeout=0) for _ in range(size)) if p is not None]
        assert [p.info.pod_key for p in got] == [p.pod_key for p in want]
        for p in got:
            if data.draw(st.booleans()):
                carried.done_later(p.info.pod_key)
                assert single.done(p.info.pod_key)
        clock.step(0.5)
    carried.flush_done()
    assert dump(redis_client, carried.keys) == dump(redis_client, single.keys)
