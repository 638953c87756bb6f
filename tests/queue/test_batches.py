"""Batched pops and batched failure returns equal the single calls in a row.

The property tests build a random queue under one prefix, copy every queue key to a
second prefix, then run the single calls on one copy and the batch call on the other:
same pods, same cycles, same metrics hooks, and the same Redis state key by key.
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from dataclasses import replace
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.clock import FakeClock
from cluster_sched.queue import Location, Popped, QueuedPodInfo, SchedulingQueue, priority_sort_key
from tests.queue.queue_helpers import (
    FIT,
    GATES,
    NODE_ADD,
    PLUGIN_EVENTS,
    SPREAD,
    T0,
    Recorder,
    dump,
    info,
    twin,
)

PATIENCE = 30.0
PROPERTY = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

priorities = st.integers(min_value=-3, max_value=3)  # few values: many ties to break
offsets = st.integers(min_value=0, max_value=50).map(lambda s: s / 10)


# One pod's history before the batch: where it is when the batch call runs.
FATES = (
    "active",
    "gated",
    "pool",
    "backoff",
    "pool_then_active",
    "backoff_then_active",
    "flying",
)


@PROPERTY
@given(
    pods=st.lists(st.tuples(priorities, offsets, st.sampled_from(FATES)), min_size=1, max_size=30),
    extra=st.integers(min_value=0, max_value=3),
    data=st.data(),
)
def test_pop_many_equals_single_pops(
    redis_client: redis.Redis, pods: list[tuple[int, float, str]], extra: int, data: st.DataObject
) -> None:
    clock = FakeClock(T0)
    hook = Recorder()
    common: dict[str, Any] = {"clock": clock, "plugin_events": PLUGIN_EVENTS}
    queue = SchedulingQueue(
        redis_client, prefix=f"{{a{uuid.uuid4().hex}}}", on_incoming=hook, **common
    )
    infos = [info(f"p{i}", prio, T0 + off) for i, (prio, off, _) in enumerate(pods)]
    fate = {i.pod_key: f for i, (_, _, f) in zip(infos, pods, strict=True)}
    # Pods attempted before the batch: add them, pop them all (single pops), fail them.
    tried = [i for i in infos if fate[i.pod_key] not in ("active", "gated")]
    queue.add_many(tried)
    flying = [queue.pop(timeout=0) for _ in tried]
    cycles = {p.pod_key: c for c, p in enumerate(flying, start=1) if p is not None}
    by_key = {p.pod_key: p for p in flying if p is not None}

    def fail(key: str, *plugins: str) -> None:
        rejected = replace(by_key[key], unschedulable_plugins=frozenset(plugins))
        queue.add_unschedulable_if_not_present(rejected, cycles[key])

    for key, kind in fate.items():
        if kind in ("pool", "pool_then_active"):
            fail(key, FIT)
        elif kind == "backoff_then_active":
            fail(key)  # an error: backoffQ
    clock.step(60)  # backoff over: these two kinds return to activeQ with attempts > 0
    queue.flush_backoff_q_completed()
    queue.move_all_to_active_or_backoff_queue(
        NODE_ADD, pre_check=lambda i: fate[i.pod_key] == "pool_then_active"
    )
    for key, kind in fate.items():
        if kind == "backoff":
            fail(key)  # backing off until T0 + 61
    queue.add_many([replace(i, gated=fate[i.pod_key] == "gated") for i in infos if i not in tried])
    count = Counter(fate.values())
    assert queue.counts() == {
        Location.ACTIVE: count["active"] + count["pool_then_active"] + count["backoff_then_active"],
        Location.BACKOFF: count["backoff"],
        Location.UNSCHEDULABLE: count["pool"] + count["gated"],
        Location.IN_FLIGHT: count["flying"],
    }
    active_before = queue.pending_pods()[0][: queue.counts()[Location.ACTIVE]]
    other_hook = Recorder()
    other = twin(redis_client, queue, on_incoming=other_hook, **common)
    hook.seen.clear()

    k = data.draw(st.integers(min_value=1, max_value=len(active_before) + extra + 1))
    singles: list[Popped] = []
    for _ in range(k):
        one = queue.pop(timeout=0)
        if one is not None:
            singles.append(Popped(one, queue.last_pop_cycle))
    cycle_before = other.scheduling_cycle()
    batch = other.pop_many(k, timeout=0)

    assert batch == singles
    assert dump(redis_client, queue.keys) == dump(redis_client, other.keys)
    assert hook.seen == other_hook.seen == []
    # And both are the model: QueueSort order, consecutive cycles, attempts counted,
    # rejecting plugins cleared.
    expected = sorted(active_before, key=lambda i: (priority_sort_key(i), i.pod_key))[:k]
    assert [p.info.pod_key for p in batch] == [i.pod_key for i in expected]
    assert [p.cycle for p in batch] == list(range(cycle_before + 1, cycle_before + 1 + len(batch)))
    assert [p.info.attempts for p in batch] == [i.attempts + 1 for i in expected]
    assert all(not p.info.rejector_plugins for p in batch)
    assert other.last_pop_cycle == (batch[-1].cycle if batch else 0)
    assert set(other.in_flight_pods()) >= {p.info.pod_key for p in batch}


# What the failure handler reports for one popped pod.
OUTCOMES = ("rejected", "pending", "error", "gated_now", "present", "deleted", "twice")


@PROPERTY
@given(
    outcomes=st.lists(st.sampled_from(OUTCOMES), min_size=1, max_size=20),
    move_after=st.integers(min_value=-1, max_value=20),
    data=st.data(),
)
def test_add_unschedulable_many_equals_single_calls(
    redis_client: redis.Redis, outcomes: list[str], move_after: int, data: st.DataObject
) -> None:
    clock = FakeClock(T0)
    gate: set[str] = set()

    def pre_enqueue(i: QueuedPodInfo) -> str | None:
        return GATES if i.pod_key in gate else None

    common: dict[str, Any] = {
        "clock": clock,
        "pre_enqueue": pre_enqueue,
        "plugin_events": PLUGIN_EVENTS,
    }
    hook = Recorder()
    queue = SchedulingQueue(
        redis_client, prefix=f"{{a{uuid.uuid4().hex}}}", on_incoming=hook, **common
    )
    queue.add_many([info(f"p{i}", 0, T0 + i) for i in range(len(outcomes))])
    popped: list[Popped] = []
    for n in range(len(outcomes)):
        popped += queue.pop_many(1, timeout=0)
        if n == move_after:  # a move request lands during this pod's cycle
            queue.move_all_to_active_or_backoff_queue(NODE_ADD)
    clock.step(data.draw(st.sampled_from([0.0, 0.5, 30.0])))
    failed: list[tuple[QueuedPodInfo, int]] = []
    for (pod, cycle), outcome in zip(popped, outcomes, strict=True):
        if outcome == "rejected":
            pod = replace(pod, unschedulable_plugins=frozenset({FIT}))
        elif outcome == "pending":
            pod = replace(pod, pending_plugins=frozenset({SPREAD}))
        elif outcome == "gated_now":
            gate.add(pod.pod_key)
        elif outcome == "present":  # an update put it back in activeQ meanwhile
            queue.done(pod.pod_key)
            queue.add(pod)
        elif outcome == "deleted":
            queue.delete(pod.pod_key)
        failed.append((pod, cycle))
        if outcome == "twice":
            failed.append((replace(pod, unschedulable_plugins=frozenset({FIT})), cycle))
    other_hook = Recorder()
    other = twin(redis_client, queue, on_incoming=other_hook, **common)
    hook.seen.clear()

    singles = [queue.add_unschedulable_if_not_present(pod, cycle) for pod, cycle in failed]
    many = other.add_unschedulable_if_not_present_many(failed)

    assert many == singles
    assert dump(redis_client, queue.keys) == dump(redis_client, other.keys)
    assert hook.seen == other_hook.seen
    # The in-flight rule per pod: a pod rejected by NodeResourcesFit (which registered
    # NodeAdd) whose own cycle saw the event goes to backoffQ, the others to the pool
    # (PodTopologySpread, the pending plugin here, did not register node events).
    move_cycle = popped[move_after].cycle if 0 <= move_after < len(popped) else None
    for (pod, cycle), where, outcome in zip(failed, many, [*_expand(outcomes)], strict=True):
        if outcome in ("present",) or (outcome == "twice" and pod.unschedulable_plugins):
            assert where is None
        elif outcome == "gated_now":
            assert where is Location.UNSCHEDULABLE
        elif outcome in ("error", "twice", "deleted"):
            assert where is Location.BACKOFF
        else:
            in_time = outcome == "rejected" and move_cycle is not None and move_cycle >= cycle
            assert where is (Location.BACKOFF if in_time else Location.UNSCHEDULABLE)


def _expand(outcomes: list[str]) -> list[str]:
    return [o for outcome in outcomes for o in ([outcome] * (2 if outcome == "twice" else 1))]


def test_pop_many_takes_what_is_ready(queue: SchedulingQueue, clock: FakeClock) -> None:
    queue.add_many([info(f"p{i}", i, clock.now()) for i in range(3)])
    batch = queue.pop_many(64, timeout=0)
    assert [p.info.pod_key for p in batch] == ["default/p2", "default/p1", "default/p0"]
    assert [p.cycle for p in batch] == [1, 2, 3] and queue.last_pop_cycle == 3
    assert queue.pop_many(64, timeout=0.01) == []


def test_peek_active_names_the_next_pop_and_takes_nothing(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    queue.add_many([info(f"p{i}", i % 3, clock.now() + i) for i in range(7)])
    assert queue.peek_active(0) == []
    peeked = queue.peek_active(4)
    assert queue.peek_active(4) == peeked and queue.last_pop_cycle == 0
    assert [p.info.pod_key for p in queue.pop_many(4, timeout=0)] == peeked
    rest = queue.peek_active(64)
    assert [p.info.pod_key for p in queue.pop_many(64, timeout=0)] == rest
    assert len(peeked) == 4 and len(rest) == 3


def test_pop_many_rejects_an_empty_batch(queue: SchedulingQueue) -> None:
    with pytest.raises(ValueError, match="max_pods"):
        queue.pop_many(0)


def test_blocked_pop_many_returns_a_lone_pod(queue: SchedulingQueue, clock: FakeClock) -> None:
    result: list[list[Popped]] = []
    thread = threading.Thread(target=lambda: result.append(queue.pop_many(64, PATIENCE)))
    thread.start()
    while thread.is_alive() and queue._waiters == 0:  # wait until it blocks in Redis
        thread.join(0.01)
    queue.add(info("alone", ts=clock.now()))
    thread.join(PATIENCE)
    assert not thread.is_alive()
    assert [[p.info.pod_key for p in batch] for batch in result] == [["default/alone"]]


def test_close_wakes_a_blocked_pop_many(queue: SchedulingQueue) -> None:
    result: list[object] = ["unset"]
    thread = threading.Thread(target=lambda: result.__setitem__(0, queue.pop_many(8)))
    thread.start()
    while thread.is_alive() and queue._waiters == 0:
        thread.join(0.01)
    queue.close()
    thread.join(PATIENCE)
    assert not thread.is_alive() and result == [[]]


def test_batch_round_trip_done_and_failed(queue: SchedulingQueue, clock: FakeClock) -> None:
    queue.add_many([info(f"p{i}", 0, clock.now() + i) for i in range(4)])
    batch = queue.pop_many(4, timeout=0)
    assert queue.done_many([p.info.pod_key for p in batch[:2]]) == 2
    failed = [
        Popped(replace(p.info, unschedulable_plugins=frozenset({FIT})), p.cycle) for p in batch[2:]
    ]
    assert queue.add_unschedulable_if_not_present_many(failed) == [Location.UNSCHEDULABLE] * 2
    assert queue.counts() == {
        Location.ACTIVE: 0,
        Location.BACKOFF: 0,
        Location.UNSCHEDULABLE: 2,
        Location.IN_FLIGHT: 0,
    }
    assert queue.add_unschedulable_if_not_present_many([]) == []


@PROPERTY
@given(
    priorities=st.lists(priorities, min_size=1, max_size=20),
    first=st.integers(min_value=1, max_value=20),
    second=st.integers(min_value=1, max_value=20),
    data=st.data(),
)
def test_done_later_equals_done_many_then_pop(
    redis_client: redis.Redis, priorities: list[int], first: int, second: int, data: st.DataObject
) -> None:
    """Done calls riding on the next pop leave exactly the state of done_many followed
    by that pop: same pods popped, same cycles, same Redis keys."""
    clock = FakeClock(T0)
    carried = SchedulingQueue(redis_client, prefix=f"{{a{uuid.uuid4().hex}}}", clock=clock)
    carried.add_many([info(f"p{i}", prio, T0 + i) for i, prio in enumerate(priorities)])
    taken = carried.pop_many(first, timeout=0)
    finished = [p.info.pod_key for p in taken if data.draw(st.booleans())]
    separate = twin(redis_client, carried, clock=clock)
    separate.last_pop_cycle = carried.last_pop_cycle

    for key in finished:
        carried.done_later(key)
    assert separate.done_many(finished) == len(finished)
    got = carried.pop_many(second, timeout=0)
    want = separate.pop_many(second, timeout=0)

    assert [(p.info.pod_key, p.cycle) for p in got] == [(p.info.pod_key, p.cycle) for p in want]
    assert dump(redis_client, carried.keys) == dump(redis_client, separate.keys)
    assert all(carried.location(key) is None for key in finished)
    assert carried.flush_done() == 0  # nothing left owed


def test_done_later_lands_before_the_pop_that_carries_it(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    """A pod whose Done is still owed may come back to the queue (its binding failed)
    and be popped again by the very pop that carries the Done: it must stay in flight."""
    queue.add_many([info("p", 0, clock.now())])
    (popped,) = queue.pop_many(1, timeout=0)
    queue.done_later("default/p")
    failed = Popped(replace(popped.info, unschedulable_plugins=frozenset({FIT})), popped.cycle)
    assert queue.add_unschedulable_if_not_present_many([failed]) == [Location.UNSCHEDULABLE]
    assert queue.activate(["default/p"]) == 1

    (again,) = queue.pop_many(1, timeout=0)

    assert again.info.pod_key == "default/p" and again.cycle == popped.cycle + 1
    assert queue.location("default/p") is Location.IN_FLIGHT


def test_flush_done_sends_what_no_pop_carried(queue: SchedulingQueue, clock: FakeClock) -> None:
    queue.add_many([info(f"p{i}", 0, clock.now() + i) for i in range(3)])
    batch = queue.pop_many(3, timeout=0)
    for p in batch[:2]:
        queue.done_later(p.info.pod_key)
    assert queue.location("default/p0") is Location.IN_FLIGHT  # owed, not yet sent

    assert queue.flush_done() == 2

    assert [queue.location(f"default/p{i}") for i in range(3)] == [None, None, Location.IN_FLIGHT]
    assert queue.flush_done() == 0


# What a pod is when a batch of adds arrives: not queued yet (most batches are all new
# pods: add.lua writes those per key for the whole batch), queued, in flight, gated.
ADD_STATES = ("new", "new", "new", "active", "pool", "flying")


@PROPERTY
@given(
    pods=st.lists(
        st.tuples(st.sampled_from(ADD_STATES), priorities, st.booleans()), min_size=1, max_size=25
    ),
    repeat=st.lists(st.integers(min_value=0, max_value=24), max_size=3),
    burst=st.booleans(),
)
def test_add_many_equals_single_adds(
    redis_client: redis.Redis, pods: list[tuple[str, int, bool]], repeat: list[int], burst: bool
) -> None:
    """add_many over any batch (new pods, queued ones, pods in flight, gated ones, a pod
    twice) leaves the state and gives the answers of single adds in a row; ``burst``
    makes the batch what most are, new ungated pods only, beside pods queued before."""
    clock = FakeClock(T0)
    common: dict[str, Any] = {"clock": clock, "plugin_events": PLUGIN_EVENTS}
    batched = SchedulingQueue(redis_client, prefix=f"{{a{uuid.uuid4().hex}}}", **common)
    batched.add_many([info(f"f{i}", 9, T0) for i, p in enumerate(pods) if p[0] == "flying"])
    while batched.pop(timeout=0) is not None:
        pass
    batched.add_many([info(f"q{i}", 0, T0) for i, p in enumerate(pods) if p[0] == "active"])
    batched.add_many(
        [info(f"u{i}", 0, T0, gated=True) for i, p in enumerate(pods) if p[0] == "pool"]
    )
    prefix = {"new": "n", "active": "q", "pool": "u", "flying": "f"}
    batch = [
        info(f"{prefix[state]}{i}", prio, T0 + i, gated=gated)
        for i, (state, prio, gated) in enumerate(pods)
    ]
    batch += [batch[i] for i in repeat if i < len(batch)]
    if burst:
        batch = [info(f"n{i}", prio, T0 + i, attempts=i % 3) for i, (_, prio, _) in enumerate(pods)]
    single = twin(redis_client, batched, **common)
    clock.step(1)

    got = batched.add_many(batch)
    want = [single.add(i) for i in batch]

    assert got == want
    assert dump(redis_client, batched.keys) == dump(redis_client, single.keys)


def test_a_burst_of_new_pods_is_queued_in_order(queue: SchedulingQueue, clock: FakeClock) -> None:
    pods = [info(f"p{i}", i % 3, clock.now() + i) for i in range(2500)]
    assert queue.add_many(pods) == [Location.ACTIVE] * 2500
    popped = queue.pop_many(2500, timeout=0)
    expected = sorted(pods, key=lambda i: (priority_sort_key(i), i.pod_key))
    assert [p.info.pod_key for p in popped] == [i.pod_key for i in expected]
