"""Garbage in the queue's Redis keys never stops the queue.

The records are written with redis-py directly, as a bug, a hand edit or a future
version would leave them. An unreadable record is moved aside (the dead-letter hash keeps
its bytes), its pod leaves the queue, and every other pod is handed out as before: no
operation, in particular not the pop or the requeue a starting coordinator runs, raises.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
import redis

from cluster_sched.clock import FakeClock
from cluster_sched.queue import Location, SchedulingQueue
from tests.queue.queue_helpers import info

GARBAGE = b"\xc1 not a record"


def _keys(queue: SchedulingQueue) -> list[str]:
    return [p.pod_key for p in queue.pending_pods()[0]]


def test_unreadable_record_is_quarantined_at_pop_and_the_rest_pop(
    queue: SchedulingQueue, redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    queue.add(info("a", priority=10))
    queue.add(info("b"))
    redis_client.hset(queue.keys.info, "default/a", GARBAGE)
    with caplog.at_level(logging.WARNING):
        popped = queue.pop_many(10, timeout=0)
    assert [p.info.pod_key for p in popped] == ["default/b"]
    assert redis_client.hget(queue.keys.dead_letter, "default/a") == GARBAGE
    assert queue.location("default/a") is None
    assert queue.quarantined == 1
    assert "default/a" in caplog.text and "dead-letter" in caplog.text


def test_unreadable_in_flight_record_does_not_stop_the_start_up_requeue(
    queue: SchedulingQueue, redis_client: redis.Redis, clock: FakeClock
) -> None:
    """A coordinator starts with requeue_in_flight: a poisoned record there used to make
    every restart fail the same way (a crash loop)."""
    queue.add(info("a"))
    queue.add(info("b"))
    assert len(queue.pop_many(2, timeout=0)) == 2
    redis_client.hset(queue.keys.info, "default/a", GARBAGE)
    clock.step(1)
    assert queue.requeue_in_flight(clock.now()) == 1
    assert queue.location("default/b") is Location.BACKOFF
    assert queue.location("default/a") is None
    assert redis_client.hexists(queue.keys.dead_letter, "default/a")


@pytest.mark.parametrize(
    ("key", "value"),
    [("where", b"nowhere"), ("attempts", b"many")],
    ids=["where", "attempts"],
)
def test_unreadable_side_fields_are_quarantined_on_read(
    queue: SchedulingQueue, redis_client: redis.Redis, key: str, value: bytes
) -> None:
    queue.add(info("a"))
    queue.add(info("b"))
    redis_client.hset(getattr(queue.keys, key), "default/a", value)
    assert _keys(queue) == ["default/b"]
    assert queue.get("default/a") is None
    assert redis_client.hexists(queue.keys.dead_letter, "default/a")


def test_garbage_attempts_count_does_not_break_the_pop_script(
    queue: SchedulingQueue, redis_client: redis.Redis
) -> None:
    queue.add(info("a"))
    redis_client.hset(queue.keys.attempts, "default/a", b"many")
    (popped,) = queue.pop_many(1, timeout=0)
    assert popped.info.pod_key == "default/a"
    assert popped.info.attempts == 1


def test_garbage_active_member_is_dropped_and_the_rest_pop(
    queue: SchedulingQueue, redis_client: redis.Redis
) -> None:
    redis_client.zadd(queue.keys.active, {b"no separator": -1e9})
    queue.add(info("a"))
    popped = queue.pop_many(5, timeout=0)
    assert [p.info.pod_key for p in popped] == ["default/a"]
    assert redis_client.zcard(queue.keys.active) == 0


def test_a_record_rewritten_meanwhile_is_not_quarantined(
    queue: SchedulingQueue, redis_client: redis.Redis
) -> None:
    """The quarantine moves exactly the bytes that failed to decode: a writer that
    replaced them in between wins."""
    queue.add(info("a"))
    assert not queue.quarantine("default/a", GARBAGE, "test")
    assert queue.location("default/a") is Location.ACTIVE
    assert not redis_client.hexists(queue.keys.dead_letter, "default/a")


def test_a_pop_that_only_met_garbage_takes_the_next_pod(
    queue: SchedulingQueue, redis_client: redis.Redis
) -> None:
    queue.add(info("a", priority=10))
    queue.add(info("b"))
    redis_client.zadd(queue.keys.active, {b"no separator": -1e9})
    redis_client.hset(queue.keys.info, "default/a", GARBAGE)
    (popped,) = queue.pop_many(1, timeout=0)
    assert popped.info.pod_key == "default/b"


def test_the_quarantine_hook_hears_of_the_pod(make_queue: Any, redis_client: redis.Redis) -> None:
    heard: list[str] = []
    queue = make_queue(on_quarantine=heard.append)
    queue.add(info("a"))
    redis_client.hset(queue.keys.info, "default/a", GARBAGE)
    assert queue.pop_many(1, timeout=0) == []
    assert heard == ["default/a"]
