"""Blocking pops, close, the background flusher, several poppers, several processes.

Nothing here asserts on elapsed time: waits are bounded only so a broken queue fails
the test instead of hanging it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from dataclasses import replace

import pytest
import redis

from cluster_sched.clock import FakeClock
from cluster_sched.errors import StoreError
from cluster_sched.queue import Location, SchedulingQueue
from cluster_sched.redis_server import RedisServer, connect
from tests.queue.queue_helpers import T0, info

# Generous bound for "eventually": only reached if the queue is broken.
PATIENCE = 30.0


def test_pop_times_out_empty(queue: SchedulingQueue) -> None:
    assert queue.pop(timeout=0.05) is None


def test_blocked_pop_wakes_when_another_client_adds(
    queue: SchedulingQueue, redis_url: str, clock: FakeClock
) -> None:
    started = threading.Event()
    result: list[object] = []

    def popper() -> None:
        started.set()
        result.append(queue.pop(timeout=PATIENCE))

    thread = threading.Thread(target=popper)
    thread.start()
    started.wait()
    other = SchedulingQueue(connect(redis_url), clock=clock)
    other.add(info("a", ts=clock.now()))
    thread.join(PATIENCE)
    assert not thread.is_alive()
    assert [getattr(r, "pod_key", None) for r in result] == ["default/a"]


def test_close_wakes_a_blocked_pop(queue: SchedulingQueue) -> None:
    result: list[object] = ["unset"]
    thread = threading.Thread(target=lambda: result.__setitem__(0, queue.pop()))
    thread.start()
    while thread.is_alive() and queue._waiters == 0:  # wait until it blocks in Redis
        thread.join(0.01)
    queue.close()
    thread.join(PATIENCE)
    assert not thread.is_alive() and result == [None]
    assert queue.closed and queue.pop(timeout=0) is None


def test_run_flushes_backoff_in_the_background(make_queue, clock: FakeClock) -> None:  # type: ignore[no-untyped-def]
    queue = make_queue(backoff_flush_interval=0.02)
    queue.add(info("a", ts=clock.now()))
    popped = queue.pop(timeout=0)
    assert queue.add_unschedulable_if_not_present(popped, 1) is Location.BACKOFF
    with queue:
        queue.run()
        clock.step(1)  # backoff over: the flusher moves it and wakes the pop
        again = queue.pop(timeout=PATIENCE)
    assert again is not None and again.pod_key == "default/a" and again.attempts == 2


def test_run_flushes_leftovers_in_the_background(make_queue, clock: FakeClock) -> None:  # type: ignore[no-untyped-def]
    queue = make_queue(backoff_flush_interval=0.02, leftover_flush_interval=0.02)
    queue.add(info("a", ts=clock.now()))
    popped = queue.pop(timeout=0)
    queue.add_unschedulable_if_not_present(
        replace(popped, unschedulable_plugins=frozenset({"VolumeBinding"})), 1
    )
    queue.run()
    clock.step(301)
    again = queue.pop(timeout=PATIENCE)
    queue.close()
    assert again is not None and again.pod_key == "default/a"


def test_concurrent_poppers_never_share_a_pod(make_queue, clock: FakeClock) -> None:  # type: ignore[no-untyped-def]
    n = 400
    producer = make_queue()
    producer.add_many([info(f"p{i}", i % 5, clock.now()) for i in range(n)])
    popped: list[str] = []
    lock = threading.Lock()

    def drain(queue: SchedulingQueue) -> None:
        while (pod := queue.pop(timeout=0)) is not None:
            with lock:
                popped.append(pod.pod_key)

    threads = [threading.Thread(target=drain, args=(make_queue(),)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(PATIENCE)
    assert len(popped) == n and len(set(popped)) == n
    assert producer.scheduling_cycle() == n


ADDER = textwrap.dedent(
    """
    import sys
    from cluster_sched.clock import FakeClock
    from cluster_sched.queue import QueuedPodInfo, SchedulingQueue
    from cluster_sched.redis_server import connect

    url, prefix, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    queue = SchedulingQueue(connect(url), prefix=prefix, clock=FakeClock(0))
    for start in range(0, n, 25):
        queue.add_many(
            [QueuedPodInfo(f"ns/p{i}", i % 3, 1000.0 + i) for i in range(start, min(n, start + 25))]
        )
    """
)


def test_pods_added_by_another_process_are_each_popped_once(
    redis_client: redis.Redis, redis_url: str
) -> None:
    n, prefix = 500, "{two-process}"
    queue = SchedulingQueue(redis_client, prefix=prefix, clock=FakeClock(T0))
    adder = subprocess.Popen([sys.executable, "-c", ADDER, redis_url, prefix, str(n)])
    popped: list[str] = []
    try:
        while adder.poll() is None:
            pod = queue.pop(timeout=0.2)
            if pod is not None:
                popped.append(pod.pod_key)
        assert adder.returncode == 0
        while (pod := queue.pop(timeout=0)) is not None:
            popped.append(pod.pod_key)
    finally:
        if adder.poll() is None:
            adder.kill()
        adder.wait()
        queue.close()
    assert sorted(popped) == sorted(f"ns/p{i}" for i in range(n))


def test_redis_failure_is_a_store_error() -> None:
    with RedisServer() as server:
        client = connect(server.url)
        queue = SchedulingQueue(client, clock=FakeClock(T0))
        queue.add(info("a", ts=T0))
    with pytest.raises(StoreError, match="cannot add pods to the scheduling queue in Redis"):
        queue.add(info("b", ts=T0))
    with pytest.raises(StoreError, match="cannot pop"):
        queue.pop(timeout=0)
    client.close()
