"""activeQ order is the QueueSort order, exactly, and sort keys are pluggable."""

from __future__ import annotations

import uuid

import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.clock import FakeClock
from cluster_sched.queue import QueuedPodInfo, SchedulingQueue, priority_sort_key
from tests.queue.queue_helpers import FIT, T0, info, park

# int32 priorities and microsecond timestamps within a few years of T0.
priorities = st.integers(min_value=-(2**31), max_value=2**31 - 1)
offsets = st.integers(min_value=0, max_value=10**14).map(lambda us: us / 1_000_000)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(pods=st.lists(st.tuples(priorities, offsets), min_size=1, max_size=40))
def test_pop_order_is_priority_then_timestamp(
    redis_client: redis.Redis, pods: list[tuple[int, float]]
) -> None:
    # Hypothesis runs many examples per test: each gets its own key prefix.
    queue = SchedulingQueue(redis_client, prefix=f"{{h{uuid.uuid4().hex}}}", clock=FakeClock(T0))
    infos = [info(f"p{i}", priority, T0 + offset) for i, (priority, offset) in enumerate(pods)]
    queue.add_many(infos)
    popped = [queue.pop(timeout=0) for _ in infos]
    assert queue.pop(timeout=0) is None
    expected = sorted(infos, key=lambda i: (priority_sort_key(i), i.pod_key))
    assert [p.pod_key for p in popped if p] == [i.pod_key for i in expected]


def test_custom_sort_key(make_queue, clock: FakeClock) -> None:  # type: ignore[no-untyped-def]
    def by_name_desc(pod: QueuedPodInfo) -> tuple[float, str]:
        return (0.0, "".join(chr(255 - ord(c)) for c in pod.pod_key))

    queue = make_queue(sort_key=by_name_desc)
    queue.add_many([info(name, ts=clock.now()) for name in ("b", "c", "a")])
    assert [queue.pop(timeout=0).pod_key for _ in range(3)] == [
        "default/c",
        "default/b",
        "default/a",
    ]


def test_add_many_handles_large_batches(queue: SchedulingQueue, clock: FakeClock) -> None:
    n = 5000
    results = queue.add_many([info(f"p{i:05d}", i % 7, clock.now()) for i in range(n)])
    assert len(results) == n and all(results)
    _, summary = queue.pending_pods()
    assert summary == f"activeQ:{n}; backoffQ:0; unschedulablePods:0"
    first = queue.pop(timeout=0)
    assert first is not None and first.priority == 6 and first.pod_key == "default/p00006"


def test_pending_pods_lists_every_sub_queue(queue: SchedulingQueue, clock: FakeClock) -> None:
    park(queue, "pool", FIT)
    queue.add(info("err", ts=clock.now()))
    popped = queue.pop(timeout=0)
    queue.add_unschedulable_if_not_present(popped, queue.last_pop_cycle)  # -> backoff
    queue.add_many([info("low", 1, clock.now()), info("high", 2, clock.now())])
    queue.add(info("flying", 3, clock.now()))
    queue.pop(timeout=0)
    pods, summary = queue.pending_pods()
    assert summary == "activeQ:2; backoffQ:1; unschedulablePods:1"
    assert [p.pod_key for p in pods] == [
        "default/high",
        "default/low",
        "default/err",
        "default/pool",
    ]
