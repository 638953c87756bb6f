"""Pods a PreEnqueue plugin gates wait in the pool, are never popped, and leave when
the gate opens (an event the gating plugin registered, or an update)."""

from __future__ import annotations

from dataclasses import replace

from cluster_sched.clock import FakeClock
from cluster_sched.queue import Location, QueuedPodInfo, SchedulingQueue
from tests.queue.queue_helpers import GATES, GATES_GONE, NODE_ADD, info


def test_gated_pod_is_never_popped(queue: SchedulingQueue, clock: FakeClock) -> None:
    assert queue.add(info("a", ts=clock.now()).with_gate(GATES)) is Location.UNSCHEDULABLE
    assert queue.pop(timeout=0) is None
    clock.step(3600)
    assert queue.flush_unschedulable_pods_leftover() == 0  # the timeout is no gate event
    assert queue.move_all_to_active_or_backoff_queue(NODE_ADD) == 0
    assert queue.location("default/a") is Location.UNSCHEDULABLE


def test_gate_plugin_event_releases_the_pod_when_pre_enqueue_passes(make_queue) -> None:  # type: ignore[no-untyped-def]
    gated = {"default/a"}

    def pre_enqueue(pod: QueuedPodInfo) -> str | None:
        return GATES if pod.pod_key in gated else None

    queue = make_queue(pre_enqueue=pre_enqueue)
    assert queue.add(info("a", ts=queue.clock.now())) is Location.UNSCHEDULABLE
    assert queue.get("default/a").gating_plugin == GATES
    # The event fires but the gate is still closed: the pod stays.
    assert queue.move_all_to_active_or_backoff_queue(GATES_GONE) == 0
    assert queue.location("default/a") is Location.UNSCHEDULABLE
    gated.clear()
    assert queue.move_all_to_active_or_backoff_queue(GATES_GONE) == 1
    popped = queue.pop(timeout=0)
    assert popped is not None and popped.pod_key == "default/a" and not popped.gated


def test_update_removing_the_gate_releases_the_pod(queue: SchedulingQueue) -> None:
    gated = info("a", ts=queue.clock.now()).with_gate(GATES)
    queue.add(gated)
    released = replace(gated, gated=False, gating_plugin="")
    assert queue.update(gated, released, pod_updated=True) is Location.ACTIVE
    assert queue.pop(timeout=0).pod_key == "default/a"


def test_gated_pod_added_again_stays_put(queue: SchedulingQueue) -> None:
    gated = info("a", ts=queue.clock.now()).with_gate(GATES)
    queue.add(gated)
    assert queue.add(gated) is None
    assert queue.num_unschedulable_pods() == 1
