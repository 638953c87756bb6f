"""activate, update and delete: each from every place a pod can be."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cluster_sched.clock import FakeClock
from cluster_sched.queue import Location, SchedulingQueue
from tests.queue.queue_helpers import FIT, NODE_ADD, SPREAD, fail, info, park


def backing_off(queue: SchedulingQueue, key: str) -> None:
    """Leave ``key`` in backoffQ (failed by an error)."""
    queue.add(info(key, ts=queue.clock.now()))
    popped = queue.pop(timeout=0)
    assert popped is not None
    assert fail(queue, popped) is Location.BACKOFF


# --- activate ---------------------------------------------------------------------------


def test_activate_from_backoff(make_queue) -> None:  # type: ignore[no-untyped-def]
    seen: list[tuple[str, str]] = []
    queue = make_queue(on_incoming=lambda q, e: seen.append((q, e)))
    backing_off(queue, "a")
    assert queue.activate(["default/a"]) == 1
    assert queue.location("default/a") is Location.ACTIVE
    assert seen[-1] == ("active", "ForceActivate")


def test_activate_from_unschedulable(queue: SchedulingQueue) -> None:
    park(queue, "a", FIT)
    assert queue.activate(["default/a"]) == 1
    assert queue.location("default/a") is Location.ACTIVE
    assert queue.num_unschedulable_pods() == 0


def test_activate_ignores_active_and_unknown_pods(queue: SchedulingQueue) -> None:
    queue.add(info("a", ts=queue.clock.now()))
    assert queue.activate(["default/a", "default/ghost"]) == 0
    assert queue.location("default/a") is Location.ACTIVE
    assert queue.location("default/ghost") is None


def test_activating_an_in_flight_pod_records_force_activate(queue: SchedulingQueue) -> None:
    queue.add(info("a", ts=queue.clock.now()))
    popped = queue.pop(timeout=0)
    assert queue.activate(["default/a"]) == 0
    # The attempt fails: the activation must not be lost in the pool.
    assert fail(queue, popped, FIT) is Location.BACKOFF


# --- update -----------------------------------------------------------------------------


def test_update_of_an_unschedulable_pod_that_changed_requeues_it(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    park(queue, "a", FIT)
    clock.step(5)  # backoff (1 s) is over
    old = queue.get("default/a")
    assert queue.update(old, replace(old, priority=3), pod_updated=True) is Location.ACTIVE
    assert queue.get("default/a").priority == 3


def test_update_of_an_unschedulable_pod_still_backing_off_goes_to_backoff(
    queue: SchedulingQueue,
) -> None:
    park(queue, "a", FIT)
    old = queue.get("default/a")
    assert queue.update(old, old, pod_updated=True) is Location.BACKOFF


def test_update_of_an_unschedulable_pod_that_did_not_change_keeps_it(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    park(queue, "a", FIT)
    clock.step(5)
    old = queue.get("default/a")
    assert queue.update(old, replace(old, priority=9), pod_updated=False) is Location.UNSCHEDULABLE
    kept = queue.get("default/a")
    assert kept.priority == 9 and kept.unschedulable_plugins == {FIT}
    assert kept.timestamp == old.timestamp  # still counts toward the leftover flush


def test_update_in_active_resorts(queue: SchedulingQueue, clock: FakeClock) -> None:
    queue.add_many([info("a", 1, clock.now()), info("b", 2, clock.now())])
    old = queue.get("default/a")
    assert queue.update(old, replace(old, priority=5)) is Location.ACTIVE
    assert [queue.pop(timeout=0).pod_key for _ in range(2)] == ["default/a", "default/b"]


def test_update_in_backoff_updates_in_place(queue: SchedulingQueue) -> None:
    backing_off(queue, "a")
    old = queue.get("default/a")
    assert queue.update(old, replace(old, priority=7)) is Location.BACKOFF
    assert queue.get("default/a").priority == 7
    assert queue.get("default/a").timestamp == old.timestamp


def test_update_of_an_unknown_pod_adds_it(queue: SchedulingQueue) -> None:
    assert queue.update(None, info("a", ts=queue.clock.now())) is Location.ACTIVE


def test_update_of_an_in_flight_pod_keeps_one_copy(queue: SchedulingQueue) -> None:
    queue.add(info("a", ts=queue.clock.now()))
    popped = queue.pop(timeout=0)
    assert queue.update(popped, replace(popped, priority=4)) is Location.IN_FLIGHT
    assert queue.pop(timeout=0) is None  # not queued twice
    # The update is recorded for the pod: a rejector registered for pod updates
    # (PodTopologySpread here) retries it soon.
    assert fail(queue, popped, SPREAD) is Location.BACKOFF


def test_update_of_an_in_flight_pod_ignored_by_its_rejector(queue: SchedulingQueue) -> None:
    """NodeResourcesFit registered no pod update here: the update cannot help."""
    queue.add(info("a", ts=queue.clock.now()))
    popped = queue.pop(timeout=0)
    queue.update(popped, replace(popped, priority=4))
    assert fail(queue, popped, FIT) is Location.UNSCHEDULABLE


# --- delete -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "place", ["active", "backoff", "unschedulable", "inflight", "gated"], ids=str
)
def test_delete_from_each_place(queue: SchedulingQueue, place: str) -> None:
    now = queue.clock.now()
    if place == "active":
        queue.add(info("a", ts=now))
    elif place == "backoff":
        backing_off(queue, "a")
    elif place == "unschedulable":
        park(queue, "a", FIT)
    elif place == "inflight":
        queue.add(info("a", ts=now))
        queue.pop(timeout=0)
    else:
        queue.add(info("a", ts=now).with_gate("SchedulingGates"))
    queue.nominator.add_nominated_pod("default/a", "node-1", 0)
    expected = Location.UNSCHEDULABLE if place == "gated" else Location(place)
    assert queue.delete("default/a") is expected
    assert queue.location("default/a") is None
    assert queue.get("default/a") is None
    assert queue.nominator.nominated_node_for_pod("default/a") is None
    assert queue.nominator.nominated_pods_for_node("node-1") == []
    assert queue.pending_pods()[1] == "activeQ:0; backoffQ:0; unschedulablePods:0"
    assert queue.in_flight_pods() == []
    assert queue.delete("default/a") is None


def test_deleted_pod_can_come_back(queue: SchedulingQueue) -> None:
    park(queue, "a", FIT)
    queue.delete("default/a")
    assert queue.add(info("a", ts=queue.clock.now())) is Location.ACTIVE
    assert queue.move_all_to_active_or_backoff_queue(NODE_ADD) == 0
