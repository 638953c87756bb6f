"""QueueingHints in the queue: hints decide moves out of the pool, the in-flight events
rule (with the batched loop's cycle tags), and SchedulerPopFromBackoffQ."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from cluster_sched.clock import FakeClock
from cluster_sched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from cluster_sched.queue import Location, SchedulingQueue, base
from tests.queue.queue_helpers import FIT, NODE_ADD, SPREAD, fail, info

QueueFactory = Callable[..., SchedulingQueue]
BIG = "big"  # a node object of this name helps; any other does not


def _node_hint(pod: Any, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.QUEUE if new == BIG else QueueingHint.QUEUE_SKIP


def _broken_hint(pod: Any, old: Any, new: Any) -> QueueingHint:
    raise RuntimeError("a buggy hint")


HINTED = {
    FIT: (ClusterEventWithHint(NODE_ADD, _node_hint),),
    SPREAD: (ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.ALL), _node_hint),),
    "Broken": (ClusterEventWithHint(NODE_ADD, _broken_hint),),
}


def _queue(make_queue: QueueFactory, **kwargs: Any) -> SchedulingQueue:
    """Hinted registrations; every pod 'exists' (the lookup returns its key)."""
    return make_queue(plugin_events=HINTED, pod_lookup=lambda key: key, **kwargs)


def _park(queue: SchedulingQueue, name: str, *plugins: str, pending: tuple[str, ...] = ()) -> None:
    queue.add(info(name, ts=queue.clock.now()))
    popped = queue.pop(timeout=0)
    assert popped is not None
    assert fail(queue, popped, *plugins, pending=pending) is Location.UNSCHEDULABLE


# --- moving pods out of the pool -----------------------------------------------------


def test_hint_queue_moves_the_pod_and_queue_skip_leaves_it(make_queue: QueueFactory) -> None:
    queue = _queue(make_queue)
    _park(queue, "a", FIT)
    assert queue.move_all_to_active_or_backoff_queue(NODE_ADD, new="small") == 0
    assert queue.location("default/a") is Location.UNSCHEDULABLE
    assert queue.move_all_to_active_or_backoff_queue(NODE_ADD, new=BIG) == 1
    assert queue.location("default/a") is Location.BACKOFF


def test_one_helpful_change_in_a_burst_is_enough(make_queue: QueueFactory) -> None:
    queue = _queue(make_queue)
    _park(queue, "a", FIT)
    changes = [(None, "small"), (None, BIG), (None, "tiny")]
    assert queue.move_all_to_active_or_backoff_queue(NODE_ADD, changes=changes) == 1


def test_a_hint_that_raises_counts_as_queue(make_queue: QueueFactory) -> None:
    queue = _queue(make_queue)
    _park(queue, "a", "Broken")
    assert queue.move_all_to_active_or_backoff_queue(NODE_ADD, new="small") == 1


def test_queue_from_a_pending_plugin_skips_backoff(make_queue: QueueFactory) -> None:
    queue = _queue(make_queue)
    queue.add(info("a", ts=queue.clock.now()))
    popped = queue.pop(timeout=0)
    assert popped is not None
    assert fail(queue, popped, pending=(FIT,)) is Location.UNSCHEDULABLE
    assert queue.move_all_to_active_or_backoff_queue(NODE_ADD, new=BIG) == 1
    assert queue.location("default/a") is Location.ACTIVE


def test_unknown_pod_object_counts_as_queue(make_queue: QueueFactory) -> None:
    """No object for the hint to judge (the informer lost it): never strand the pod."""
    queue = make_queue(plugin_events=HINTED, pod_lookup=lambda key: None)
    _park(queue, "a", FIT)
    assert queue.move_all_to_active_or_backoff_queue(NODE_ADD, new="small") == 1


def test_pod_update_is_offered_to_the_hints(make_queue: QueueFactory) -> None:
    queue = _queue(make_queue)
    _park(queue, "a", SPREAD)
    stored = queue.get("default/a")
    assert stored is not None
    update = ClusterEvent(EventResource.UNSCHEDULABLE_POD, ActionType.UPDATE_POD_LABEL)
    kwargs = {"events": [update], "old_pod": "before"}
    assert queue.update(stored, stored, new_pod="small", **kwargs) is Location.UNSCHEDULABLE
    assert queue.update(stored, stored, new_pod=BIG, **kwargs) is Location.BACKOFF


# --- the in-flight events rule -------------------------------------------------------


def test_event_during_the_cycle_requeues_the_pod(make_queue: QueueFactory) -> None:
    queue = _queue(make_queue)
    queue.add(info("a", ts=queue.clock.now()))
    popped = queue.pop(timeout=0)
    assert popped is not None
    queue.move_all_to_active_or_backoff_queue(NODE_ADD, new=BIG)
    assert fail(queue, popped, FIT) is Location.BACKOFF


def test_event_during_the_cycle_that_the_hint_skips_does_not(make_queue: QueueFactory) -> None:
    queue = _queue(make_queue)
    queue.add(info("a", ts=queue.clock.now()))
    popped = queue.pop(timeout=0)
    assert popped is not None
    queue.move_all_to_active_or_backoff_queue(NODE_ADD, new="small")
    assert fail(queue, popped, FIT) is Location.UNSCHEDULABLE


def test_event_before_its_cycle_in_the_same_batch_does_not_count(
    make_queue: QueueFactory,
) -> None:
    """Batch [a, b]: a helpful event while a is scheduled (b still waits in the popped
    batch) counts for a, not for b: serially b would still have been in activeQ."""
    queue = _queue(make_queue)
    queue.add_many([info("a", 2, queue.clock.now()), info("b", 1, queue.clock.now())])
    (a, ca), (b, cb) = queue.pop_many(2, timeout=0)
    queue.cycle_in_progress = ca
    queue.move_all_to_active_or_backoff_queue(NODE_ADD, new=BIG)
    assert (
        queue.add_unschedulable_if_not_present(
            replace(a, unschedulable_plugins=frozenset({FIT})), ca
        )
        is Location.BACKOFF
    )
    queue.cycle_in_progress = cb
    assert (
        queue.add_unschedulable_if_not_present(
            replace(b, unschedulable_plugins=frozenset({FIT})), cb
        )
        is Location.UNSCHEDULABLE
    )


def test_event_during_its_own_cycle_in_a_batch_counts(make_queue: QueueFactory) -> None:
    queue = _queue(make_queue)
    queue.add_many([info("a", 2, queue.clock.now()), info("b", 1, queue.clock.now())])
    _a, (b, cb) = queue.pop_many(2, timeout=0)
    queue.cycle_in_progress = cb
    queue.move_all_to_active_or_backoff_queue(NODE_ADD, new=BIG)
    assert (
        queue.add_unschedulable_if_not_present(
            replace(b, unschedulable_plugins=frozenset({FIT})), cb
        )
        is Location.BACKOFF
    )


def test_a_failed_binding_is_judged_with_its_cycle_events(make_queue: QueueFactory) -> None:
    """done() at assume does not end the cycle for the rule: a binding that fails later
    is judged by the events since its pop (upstream calls Done after binding)."""
    queue = _queue(make_queue)
    queue.add(info("a", ts=queue.clock.now()))
    popped = queue.pop(timeout=0)
    assert popped is not None
    cycle = queue.last_pop_cycle
    queue.done(popped.pod_key)  # assumed; the binding cycle runs on
    queue.move_all_to_active_or_backoff_queue(NODE_ADD, new="small")
    assert fail(queue, popped, FIT, cycle=cycle) is Location.UNSCHEDULABLE
    queue.add(info("b", ts=queue.clock.now()))
    popped = queue.pop(timeout=0)
    assert popped is not None
    cycle = queue.last_pop_cycle
    queue.done(popped.pod_key)
    queue.move_all_to_active_or_backoff_queue(NODE_ADD, new=BIG)
    assert fail(queue, popped, FIT, cycle=cycle) is Location.BACKOFF


def test_events_are_forgotten_once_no_pod_is_in_flight(make_queue: QueueFactory) -> None:
    queue = _queue(make_queue)
    queue.add(info("a", ts=queue.clock.now()))
    popped = queue.pop(timeout=0)
    assert popped is not None
    queue.move_all_to_active_or_backoff_queue(NODE_ADD, new=BIG)
    assert len(queue.in_flight_events) == 1
    queue.done(popped.pod_key)
    queue.binding_done(popped.pod_key)
    assert len(queue.in_flight_events) == 0
    queue.move_all_to_active_or_backoff_queue(NODE_ADD, new=BIG)
    assert len(queue.in_flight_events) == 0  # nobody in flight: nothing kept


# --- SchedulerPopFromBackoffQ --------------------------------------------------------


def _backing_off(queue: SchedulingQueue, name: str, *plugins: str) -> None:
    queue.add(info(name, ts=queue.clock.now()))
    popped = queue.pop(timeout=0)
    assert popped is not None
    queue.move_all_to_active_or_backoff_queue(NODE_ADD, new=BIG)  # during its cycle
    assert fail(queue, popped, *plugins) is Location.BACKOFF


def test_backoff_pod_is_popped_at_once_when_active_q_is_empty(
    make_queue: QueueFactory, clock: FakeClock
) -> None:
    queue = _queue(make_queue)
    _backing_off(queue, "a", FIT)
    cycle = queue.scheduling_cycle()
    popped = queue.pop(timeout=0)  # backoff (1 s) not over: the clock has not moved
    assert popped is not None and popped.pod_key == "default/a"
    assert popped.attempts == 2
    assert queue.scheduling_cycle() == cycle + 1
    assert queue.location("default/a") is Location.IN_FLIGHT


def test_active_q_comes_first_and_backoff_pods_come_one_at_a_time(
    make_queue: QueueFactory,
) -> None:
    queue = _queue(make_queue)
    _backing_off(queue, "a", FIT)
    _backing_off(queue, "b", FIT)
    queue.add(info("c", ts=queue.clock.now()))
    assert [p.info.pod_key for p in queue.pop_many(8, timeout=0)] == ["default/c"]
    assert [p.info.pod_key for p in queue.pop_many(8, timeout=0)] == ["default/a"]
    assert [p.info.pod_key for p in queue.pop_many(8, timeout=0)] == ["default/b"]


def test_pods_that_failed_with_an_error_wait_for_their_backoff(
    make_queue: QueueFactory, clock: FakeClock
) -> None:
    queue = _queue(make_queue)
    queue.add(info("a", ts=queue.clock.now()))
    popped = queue.pop(timeout=0)
    assert popped is not None
    assert fail(queue, popped) is Location.BACKOFF  # no rejecting plugin: an error
    assert queue.pop(timeout=0) is None
    clock.step(1.0)
    queue.flush_backoff_q_completed()
    assert queue.pop(timeout=0) is not None


def test_gate_off_backoff_pod_waits_for_its_backoff(
    make_queue: QueueFactory, clock: FakeClock
) -> None:
    queue = _queue(make_queue, pop_from_backoff_q=False)
    _backing_off(queue, "a", FIT)
    assert queue.pop(timeout=0) is None
    clock.step(1.0)
    queue.flush_backoff_q_completed()
    popped = queue.pop(timeout=0)
    assert popped is not None and popped.pod_key == "default/a"


def test_past_the_hint_budget_pods_are_queued_by_registration(
    make_queue: QueueFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A huge burst (waiting pods x changed objects) stops asking hints: the rest of
    the pods move as if every matching registration said Queue."""
    monkeypatch.setattr(base, "MAX_HINT_CALLS_PER_EVENT", 1)
    queue = _queue(make_queue)
    _park(queue, "a", FIT)
    _park(queue, "b", FIT)
    assert queue.move_all_to_active_or_backoff_queue(NODE_ADD, new="small") == 1
