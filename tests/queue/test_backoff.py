"""Pop bookkeeping and backoffQ: attempts, cycles, backoff per attempt, the flush."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cluster_sched.clock import FakeClock
from cluster_sched.queue import Location, SchedulingQueue
from tests.queue.queue_helpers import FIT, NODE_ADD, fail, info


def test_pop_moves_the_head_into_flight_and_counts(queue: SchedulingQueue) -> None:
    queue.add(info("a", ts=queue.clock.now()))
    popped = queue.pop(timeout=0)
    assert popped is not None and popped.attempts == 1
    assert queue.scheduling_cycle() == 1 == queue.last_pop_cycle
    assert queue.location("default/a") is Location.IN_FLIGHT
    assert queue.in_flight_pods() == ["default/a"]
    assert queue.pop(timeout=0) is None
    assert queue.done("default/a") is True
    assert queue.location("default/a") is None and queue.in_flight_pods() == []
    assert queue.done("default/a") is False


def test_pop_clears_rejecting_plugins_for_the_new_attempt(queue: SchedulingQueue) -> None:
    queue.add(info("a", ts=queue.clock.now()))
    popped = queue.pop(timeout=0)
    assert popped is not None
    fail(queue, popped)  # no rejecting plugin: an error, goes to backoff
    queue.clock.step(5)  # type: ignore[attr-defined]
    queue.flush_backoff_q_completed()
    again = queue.pop(timeout=0)
    assert again is not None and again.attempts == 2
    assert again.unschedulable_plugins == frozenset() == again.pending_plugins


@pytest.mark.parametrize(
    ("attempts", "seconds"),
    [(1, 1), (2, 2), (3, 4), (4, 8), (5, 10), (6, 10)],
    ids=[f"attempt-{n}" for n in range(1, 7)],
)
def test_backoff_expires_per_attempt(
    queue: SchedulingQueue, clock: FakeClock, attempts: int, seconds: float
) -> None:
    queue.add(info("a", ts=clock.now()))
    popped = queue.pop(timeout=0)
    assert popped is not None
    # Pretend this was the n-th attempt; no plugin rejected it, so it backs off.
    failed_at = clock.now()
    assert fail(queue, replace(popped, attempts=attempts)) is Location.BACKOFF
    clock.step(seconds - 0.001)
    assert queue.flush_backoff_q_completed() == 0
    assert queue.location("default/a") is Location.BACKOFF
    clock.step(0.001)
    assert clock.now() == pytest.approx(failed_at + seconds)
    assert queue.flush_backoff_q_completed() == 1
    assert queue.location("default/a") is Location.ACTIVE


def test_configured_backoff_bounds(make_queue, clock: FakeClock) -> None:  # type: ignore[no-untyped-def]
    queue = make_queue(pod_initial_backoff=3.0, pod_max_backoff=5.0)
    queue.add(info("a", ts=clock.now()))
    popped = queue.pop(timeout=0)
    fail(queue, replace(popped, attempts=2))  # 6 s capped to 5 s
    assert queue.backoff_expiry(queue.get("default/a")) == clock.now() + 5.0


def test_flush_moves_expired_pods_in_expiry_order_and_counts_metrics(
    make_queue, clock: FakeClock
) -> None:  # type: ignore[no-untyped-def]
    seen: list[tuple[str, str]] = []
    queue = make_queue(on_incoming=lambda q, e: seen.append((q, e)))
    for name, attempts in (("slow", 3), ("fast", 1)):
        queue.add(info(name, ts=clock.now()))
        popped = queue.pop(timeout=0)
        fail(queue, replace(popped, attempts=attempts))
    clock.step(1)
    assert queue.flush_backoff_q_completed() == 1
    assert queue.location("default/fast") is Location.ACTIVE
    assert queue.location("default/slow") is Location.BACKOFF
    clock.step(3)
    assert queue.flush_backoff_q_completed() == 1
    assert seen.count(("active", "BackoffComplete")) == 2
    assert seen.count(("backoff", "ScheduleAttemptFailure")) == 2


def test_rejected_pod_with_a_move_request_backs_off_from_its_new_timestamp(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    queue.add(info("a", ts=clock.now()))
    popped = queue.pop(timeout=0)
    clock.step(100)
    queue.move_all_to_active_or_backoff_queue(NODE_ADD)
    assert fail(queue, popped, FIT) is Location.BACKOFF
    stored = queue.get("default/a")
    assert stored is not None and stored.timestamp == clock.now()
    assert queue.backoff_expiry(stored) == clock.now() + 1


def test_abandoned_in_flight_pods_are_requeued(queue: SchedulingQueue, clock: FakeClock) -> None:
    queue.add_many([info("old", 1, clock.now()), info("new", 0, clock.now())])
    queue.pop(timeout=0)  # "old": its process dies
    clock.step(10)
    restart = clock.now()
    queue.pop(timeout=0)  # "new": popped by the restarted process
    assert queue.requeue_in_flight(restart) == 1
    assert queue.location("default/old") is Location.BACKOFF
    assert queue.location("default/new") is Location.IN_FLIGHT
    stored = queue.get("default/old")
    assert stored.timestamp == restart and stored.attempts == 1
