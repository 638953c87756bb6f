"""Scans of the unschedulable pool: every cluster event and every batch of bound pods
reads the pool, which is usually empty. Once a scan found it empty, the next scans are
skipped until this queue places a pod there (the coordinator's queue is the pool's only
writer): by a failed attempt (add_unschedulable.lua), a gated add (add.lua) or a gated
update (requeue.lua)."""

from __future__ import annotations

import redis

from cluster_sched.clock import FakeClock
from cluster_sched.queue import Location, QueuedPodInfo, SchedulingQueue
from tests.queue.queue_helpers import FIT, GATES, GATES_GONE, NODE_ADD, info, park


def scans(client: redis.Redis) -> int:
    """ZRANGEBYSCORE calls the server has run (only the pool scan issues them)."""
    stats = client.info("commandstats").get("cmdstat_zrangebyscore") or {}
    return int(stats.get("calls", 0))


def test_an_empty_pool_is_read_once_until_a_pod_is_placed_there(
    queue: SchedulingQueue, redis_client: redis.Redis, clock: FakeClock
) -> None:
    before = scans(redis_client)
    assert queue.move_all_to_active_or_backoff_queue(NODE_ADD) == 0
    assert queue.move_all_to_active_or_backoff_queue(NODE_ADD) == 0
    assert scans(redis_client) == before + 1

    park(queue, "p", FIT)  # a failed attempt puts it in the pool: the next scan reads

    assert queue.location("default/p") is Location.UNSCHEDULABLE
    assert queue.move_all_to_active_or_backoff_queue(NODE_ADD) == 1
    assert queue.location("default/p") is Location.BACKOFF
    assert scans(redis_client) == before + 2


def test_pods_added_to_activeq_do_not_make_the_pool_read_again(
    queue: SchedulingQueue, redis_client: redis.Redis, clock: FakeClock
) -> None:
    assert queue.move_all_to_active_or_backoff_queue(NODE_ADD) == 0
    before = scans(redis_client)
    queue.add_many([info(f"a{i}", 0, clock.now()) for i in range(3)])
    assert queue.move_all_to_active_or_backoff_queue(NODE_ADD) == 0
    assert scans(redis_client) == before


def test_a_gated_add_and_a_gating_update_are_seen_by_the_next_scan(make_queue) -> None:  # type: ignore[no-untyped-def]
    gated = {"default/a"}

    def pre_enqueue(pod: QueuedPodInfo) -> str | None:
        return GATES if pod.pod_key in gated else None

    queue = make_queue(pre_enqueue=pre_enqueue)
    assert queue.move_all_to_active_or_backoff_queue(GATES_GONE) == 0  # found empty
    assert queue.add(info("a", ts=queue.clock.now())) is Location.UNSCHEDULABLE
    gated.clear()
    assert queue.move_all_to_active_or_backoff_queue(GATES_GONE) == 1

    assert queue.move_all_to_active_or_backoff_queue(GATES_GONE) == 0  # found empty again
    b = info("b", ts=queue.clock.now())  # an update of a pod not queued yet adds it
    gated.add("default/b")
    assert queue.update(b, b, pod_updated=True) is Location.UNSCHEDULABLE
    gated.clear()
    assert queue.move_all_to_active_or_backoff_queue(GATES_GONE) == 1
    assert queue.location("default/b") is Location.ACTIVE
