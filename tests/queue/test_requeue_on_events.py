"""The unschedulable pool: the moveRequestCycle rule, events, leftovers, assigned pods."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cluster_sched.api.objects import Container, ObjectMeta, Pod
from cluster_sched.clock import FakeClock
from cluster_sched.framework import events as ev
from cluster_sched.framework.events import ActionType, ClusterEvent, EventResource
from cluster_sched.queue import Location, SchedulingQueue
from tests.queue.queue_helpers import AFFINITY, FIT, NODE_ADD, SPREAD, VOLUME, fail, info, park

PV_ADD = ClusterEvent(EventResource.PERSISTENT_VOLUME, ActionType.ADD)
STORAGE_CLASS_ADD = ClusterEvent(EventResource.STORAGE_CLASS, ActionType.ADD)


def bound_pod(namespace: str, name: str = "bound") -> Pod:
    return Pod(meta=ObjectMeta(name=name, namespace=namespace), containers=(Container("c"),))


# --- moveRequestCycle ----------------------------------------------------------------


def test_rejected_pod_without_move_request_waits_in_the_pool(queue: SchedulingQueue) -> None:
    queue.add(info("a", ts=queue.clock.now()))
    popped = queue.pop(timeout=0)
    assert fail(queue, popped, FIT) is Location.UNSCHEDULABLE
    assert queue.num_unschedulable_pods() == 1
    assert queue.in_flight_pods() == []


def test_event_during_the_cycle_sends_the_pod_to_backoff(queue: SchedulingQueue) -> None:
    queue.add(info("a", ts=queue.clock.now()))
    popped = queue.pop(timeout=0)
    # An event its rejecting plugin registered arrives while the pod is being scheduled.
    assert queue.move_all_to_active_or_backoff_queue(NODE_ADD) == 0
    assert fail(queue, popped, FIT) is Location.BACKOFF


def test_event_during_the_cycle_for_other_plugins_does_not_count(queue: SchedulingQueue) -> None:
    """QueueingHints: only events the rejecting plugins registered (and their hints
    accept) count; VolumeBinding did not register NodeAdd here."""
    queue.add(info("a", ts=queue.clock.now()))
    popped = queue.pop(timeout=0)
    queue.move_all_to_active_or_backoff_queue(NODE_ADD)
    assert fail(queue, popped, VOLUME) is Location.UNSCHEDULABLE


def test_move_request_before_the_cycle_does_not_count(queue: SchedulingQueue) -> None:
    queue.move_all_to_active_or_backoff_queue(NODE_ADD)  # at cycle 0
    queue.add(info("a", ts=queue.clock.now()))
    popped = queue.pop(timeout=0)  # cycle 1 > move cycle 0
    assert fail(queue, popped, FIT) is Location.UNSCHEDULABLE


def test_event_nobody_registered_is_not_a_move_request(queue: SchedulingQueue) -> None:
    queue.add(info("a", ts=queue.clock.now()))
    popped = queue.pop(timeout=0)
    assert queue.move_all_to_active_or_backoff_queue(STORAGE_CLASS_ADD) == 0
    assert fail(queue, popped, FIT) is Location.UNSCHEDULABLE


def test_pod_failed_by_an_error_always_backs_off(queue: SchedulingQueue) -> None:
    queue.add(info("a", ts=queue.clock.now()))
    popped = queue.pop(timeout=0)
    assert fail(queue, popped) is Location.BACKOFF


def test_pod_already_queued_is_not_added_again(queue: SchedulingQueue) -> None:
    queue.add(info("a", ts=queue.clock.now()))
    assert fail(queue, info("a"), FIT, cycle=0) is None
    assert queue.location("default/a") is Location.ACTIVE


# --- move_all_to_active_or_backoff_queue ----------------------------------------------


def test_event_moves_only_pods_whose_rejectors_registered_it(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    park(queue, "fit", FIT)
    park(queue, "volume", VOLUME)
    park(queue, "unknown")  # no plugin: goes straight to backoff (error path)
    clock.step(60)  # every backoff is over
    assert queue.move_all_to_active_or_backoff_queue(NODE_ADD) == 1
    assert queue.location("default/fit") is Location.ACTIVE
    assert queue.location("default/volume") is Location.UNSCHEDULABLE
    assert queue.move_all_to_active_or_backoff_queue(PV_ADD) == 1
    assert queue.location("default/volume") is Location.ACTIVE


def test_pod_rejected_by_an_unregistered_plugin_waits_for_the_leftover_flush(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    park(queue, "a", "OutOfTreePlugin")
    clock.step(60)
    assert queue.move_all_to_active_or_backoff_queue(NODE_ADD) == 0
    assert queue.move_all_to_active_or_backoff_queue(PV_ADD) == 0
    clock.step(300)
    assert queue.flush_unschedulable_pods_leftover() == 1


def test_pod_still_backing_off_goes_to_backoff(queue: SchedulingQueue, clock: FakeClock) -> None:
    park(queue, "a", FIT)
    clock.step(0.5)  # first attempt owes 1 s
    assert queue.move_all_to_active_or_backoff_queue(NODE_ADD) == 1
    assert queue.location("default/a") is Location.BACKOFF
    clock.step(0.5)
    queue.flush_backoff_q_completed()
    assert queue.location("default/a") is Location.ACTIVE


def test_pending_plugin_event_skips_backoff(queue: SchedulingQueue, clock: FakeClock) -> None:
    queue.add(info("a", ts=clock.now()))
    popped = queue.pop(timeout=0)
    fail(queue, popped, pending=(FIT,))
    assert queue.location("default/a") is Location.UNSCHEDULABLE
    assert queue.move_all_to_active_or_backoff_queue(NODE_ADD) == 1
    assert queue.location("default/a") is Location.ACTIVE  # although it owes backoff


def test_pre_check_narrows_the_candidates(queue: SchedulingQueue, clock: FakeClock) -> None:
    park(queue, "a", FIT)
    park(queue, "b", FIT)
    clock.step(60)
    moved = queue.move_all_to_active_or_backoff_queue(
        NODE_ADD, pre_check=lambda i: i.pod_key == "default/b"
    )
    assert moved == 1
    assert queue.location("default/a") is Location.UNSCHEDULABLE
    assert queue.location("default/b") is Location.ACTIVE


def test_moves_are_counted_with_the_event_label(make_queue, clock: FakeClock) -> None:  # type: ignore[no-untyped-def]
    seen: list[tuple[str, str]] = []
    queue = make_queue(on_incoming=lambda q, e: seen.append((q, e)))
    park(queue, "a", FIT)
    clock.step(60)
    queue.move_all_to_active_or_backoff_queue(NODE_ADD)
    assert seen == [
        ("active", "UnschedulablePodAdd"),
        ("unschedulable", "ScheduleAttemptFailure"),
        ("active", "NodeAdd"),
    ]


# --- leftovers ------------------------------------------------------------------------


def test_leftover_flush_after_five_minutes_not_before(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    park(queue, "a", VOLUME)
    clock.step(300)
    assert queue.flush_unschedulable_pods_leftover() == 0
    assert queue.location("default/a") is Location.UNSCHEDULABLE
    clock.step(0.001)
    assert queue.flush_unschedulable_pods_leftover() == 1
    assert queue.location("default/a") is Location.ACTIVE


def test_leftover_still_backing_off_goes_to_backoff(make_queue, clock: FakeClock) -> None:  # type: ignore[no-untyped-def]
    queue = make_queue(pod_max_in_unschedulable_pods_duration=5.0)
    queue.add(info("a", ts=clock.now()))
    popped = queue.pop(timeout=0)
    fail(queue, replace(popped, attempts=4), VOLUME)  # owes 8 s
    clock.step(6)
    assert queue.flush_unschedulable_pods_leftover() == 1
    assert queue.location("default/a") is Location.BACKOFF


def test_leftover_flush_is_a_move_request(queue: SchedulingQueue, clock: FakeClock) -> None:
    park(queue, "old", VOLUME)
    clock.step(301)
    queue.add(info("new", ts=clock.now()))
    popped = queue.pop(timeout=0)
    assert popped is not None and popped.pod_key == "default/new"
    queue.flush_unschedulable_pods_leftover()
    assert fail(queue, popped, FIT) is Location.BACKOFF


# --- assigned pods ----------------------------------------------------------------------


def test_assigned_pod_added_moves_only_pods_the_predicate_matches(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    park(queue, "wants-web", "InterPodAffinity")
    park(queue, "wants-db", "InterPodAffinity")
    park(queue, "fit", FIT)
    clock.step(60)
    moved = queue.assigned_pod_added(bound_pod("default"), lambda i: i.pod_key.endswith("web"))
    assert moved == 1
    assert queue.location("default/wants-web") is Location.ACTIVE
    assert queue.location("default/wants-db") is Location.UNSCHEDULABLE
    assert queue.location("default/fit") is Location.UNSCHEDULABLE


def test_assigned_pod_moves_spread_pods_of_its_namespace(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    park(queue, "default/spread", SPREAD)
    park(queue, "other/spread", SPREAD)
    clock.step(60)
    assert queue.assigned_pod_added(bound_pod("default"), lambda i: False) == 1
    assert queue.location("default/spread") is Location.ACTIVE
    assert queue.location("other/spread") is Location.UNSCHEDULABLE


def test_assigned_pod_scale_down_moves_like_any_event(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    park(queue, "fit", FIT)
    park(queue, "affinity", AFFINITY)
    clock.step(60)
    scale_down = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_DOWN)
    # FIT registered Pod/Delete only: a scale-down is not its event.
    assert queue.assigned_pod_updated(bound_pod("default"), lambda i: False, scale_down) == 0
    label_change = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.UPDATE_POD_LABEL)
    assert queue.assigned_pod_updated(bound_pod("default"), lambda i: True, label_change) == 0
    delete = ev.EVENT_ASSIGNED_POD_DELETE
    assert queue.move_all_to_active_or_backoff_queue(delete) == 1
    assert queue.location("default/fit") is Location.ACTIVE


@pytest.mark.parametrize("moved_by_scale_down", [True, False], ids=["scale-down", "label"])
def test_assigned_pod_update_routes_by_event(
    make_queue, clock: FakeClock, moved_by_scale_down: bool
) -> None:  # type: ignore[no-untyped-def]
    resize = "Resize"
    queue = make_queue(
        plugin_events={resize: (ClusterEvent(EventResource.POD, ActionType.UPDATE),)}
    )
    park(queue, "a", resize)
    clock.step(60)
    action = (
        ActionType.UPDATE_POD_SCALE_DOWN if moved_by_scale_down else ActionType.UPDATE_POD_LABEL
    )
    event = ClusterEvent(EventResource.ASSIGNED_POD, action)
    # The predicate says "no affinity term matches": only a scale-down moves the pod.
    moved = queue.assigned_pod_updated(bound_pod("default"), lambda i: False, event)
    assert moved == (1 if moved_by_scale_down else 0)
