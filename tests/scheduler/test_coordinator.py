"""The coordinator's scheduleOne against a real Redis and Store.

Each test drives the loop by hand through ``coordinator_harness.Harness`` (fixtures ``h``
and ``make_harness`` in ``conftest.py``), so the order of events is the test's, not a
timer's, and a pod in backoff stays there until the test steps the FakeClock.
"""

from __future__ import annotations

import gc
import logging
from typing import Any

import pytest

from cluster_sched.config.load import load_config
from cluster_sched.features import POP_FROM_BACKOFF_Q, FeatureGates
from cluster_sched.gc_policy import survivors_frozen
from cluster_sched.plugins import names
from cluster_sched.queue.types import Location, QueuedPodInfo
from cluster_sched.scheduler.event_handlers import queued_info_for
from cluster_sched.testing.builders import make_node
from tests.scheduler.coordinator_harness import (
    PERMIT,
    PREBIND,
    PROFILE,
    RESERVE,
    T0,
    Harness,
    config,
    node,
    pod,
)

# --------------------------------------------------------------------- the happy path


def test_pod_that_fits_is_assumed_bound_confirmed(h: Harness) -> None:
    h.apply(node("n1"), pod("p"))
    h.start()
    assert h.queue.location("default/p") is Location.ACTIVE

    h.cycle()
    # Assumed before its binding is written: the next cycle already sees it.
    assert h.cache.is_assumed("default/p")
    assert h.cache.pod_node("default/p") == "n1"
    assert h.requested_cpu("n1") == 1000
    assert h.queue.location("default/p") is None

    h.settle()
    assert h.node_of("default/p") == "n1"
    assert not h.cache.is_assumed("default/p"), "the watch's Add confirms the assumed pod"
    assert h.cache.pod_node("default/p") == "n1"
    assert h.requested_cpu("n1") == 1000, "confirmation does not count the pod twice"
    events = h.store.events(key="default/p")
    assert [(e["reason"], e["message"]) for e in events] == [
        ("Scheduled", "Successfully assigned default/p to n1")
    ]
    cond = h.condition("default/p")
    assert cond is not None and cond["status"] == "True"
    assert h.coord.stats.bound_node == {"default/p": "n1"}


def test_done_rides_on_the_next_pop_and_close_sends_what_is_left(h: Harness) -> None:
    """An assumed pod's Done waits for the next pop (no round trip of its own); when the
    coordinator stops, close sends it, so no successor finds the pod left in flight."""
    h.apply(node("n1"), pod("a"), pod("b"))
    h.start()
    first = h.queue.pop(timeout=2.0)
    assert first is not None
    h.coord.schedule_one(first, h.queue.last_pop_cycle)
    assert h.queue.location(first.pod_key) is Location.IN_FLIGHT  # Done owed

    second = h.queue.pop(timeout=2.0)  # carries the first pod's Done
    assert second is not None
    assert h.queue.location(first.pod_key) is None
    h.coord.schedule_one(second, h.queue.last_pop_cycle)
    assert h.queue.location(second.pod_key) is Location.IN_FLIGHT

    h.coord.close()

    assert h.queue.location(second.pod_key) is None
    assert h.queue.counts()[Location.IN_FLIGHT] == 0


def test_deleted_pod_is_skipped(h: Harness) -> None:
    h.apply(node("n1"), pod("p"))
    h.start()
    info = h.queue.pop(timeout=2.0)
    assert info is not None
    # Deleted after the pop; the watch delivers the delete before the cycle starts.
    h.store.delete("Pod", "default/p")
    h.coord.poll_informer()
    h.coord.schedule_one(info, h.queue.last_pop_cycle)
    h.coord.flush_done()
    assert h.cache.get_pod("default/p") is None
    assert h.requested_cpu("n1") == 0
    assert h.coord.binder.pending() == 0
    assert h.queue.location("default/p") is None
    assert h.queue.counts()[Location.IN_FLIGHT] == 0
    assert h.store.events(key="default/p") == []


def test_pod_deleted_behind_the_watch_fails_binding_and_is_dropped(h: Harness) -> None:
    """The cycle still sees the pod (the watch lags): the binding finds it gone, the
    assumed pod is forgotten and nothing is requeued."""
    h.apply(node("n1"), pod("p"))
    h.start()
    info = h.queue.pop(timeout=2.0)
    assert info is not None
    h.store.delete("Pod", "default/p")
    h.coord.schedule_one(info, h.queue.last_pop_cycle)
    h.settle()
    assert h.cache.get_pod("default/p") is None
    assert h.requested_cpu("n1") == 0
    assert h.queue.location("default/p") is None
    assert h.queue.counts()[Location.IN_FLIGHT] == 0
    assert h.store.get("Pod", "default/p") is None


def test_terminating_pod_is_skipped(h: Harness) -> None:
    doc = pod("p").manifest()
    doc["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    h.apply(node("n1"))
    h.start()
    h.apply(doc)
    # A terminating pod is never queued; forced through the queue it is skipped.
    assert h.queue.location("default/p") is None
    h.queue.add(QueuedPodInfo("default/p", timestamp=T0))
    h.cycle()
    assert h.cache.get_pod("default/p") is None
    assert h.queue.location("default/p") is None
    assert h.node_of("default/p") is None


def test_pod_of_an_unknown_scheduler_is_ignored(h: Harness) -> None:
    other = pod("p").scheduler_name("someone-else")
    h.apply(node("n1"), other)
    h.start()
    assert h.queue.location("default/p") is None, "not ours: never queued"
    # Even forced through the queue, the cycle leaves it alone.
    h.queue.add(queued_info_for(other.obj(), T0))
    h.cycle()
    h.settle()
    assert h.node_of("default/p") is None
    assert h.cache.get_pod("default/p") is None
    assert h.queue.location("default/p") is None
    assert h.store.events(key="default/p") == []


# --------------------------------------------------------------------- FitError


def _unfit_cluster(h: Harness) -> None:
    h.apply(
        node("small", cpu="1"),
        node("tainted").taint("dedicated", "gpu"),
        node("cordoned").unschedulable(),
        pod("p", cpu="2"),
    )


FIT_ERROR = (
    "0/3 nodes are available: 1 Insufficient cpu, "
    "1 node(s) had untolerated taint(s), 1 node(s) were unschedulable."
)
#: DynamicResources' PostFilter (before DefaultPreemption) for a pod without claims
NO_CLAIMS = "no new claims to deallocate"


def test_fit_error_records_event_condition_and_parks_pod(h: Harness) -> None:
    _unfit_cluster(h)
    h.start()
    h.cycle()

    events = h.store.events(key="default/p", reason="FailedScheduling")
    assert [e["message"] for e in events] == [f"{FIT_ERROR} {NO_CLAIMS}"]
    assert events[0]["type"] == "Warning"
    cond = h.condition("default/p")
    assert cond is not None
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "False",
        "Unschedulable",
        f"{FIT_ERROR} {NO_CLAIMS}",
    )
    # No move request since the pod was popped: it waits in the unschedulable pool,
    # remembering which plugins rejected it.
    assert h.queue.location("default/p") is Location.UNSCHEDULABLE
    info = h.queue.get("default/p")
    assert info.unschedulable_plugins == {
        names.NODE_RESOURCES_FIT,
        names.TAINT_TOLERATION,
        names.NODE_UNSCHEDULABLE,
    }
    assert h.cache.get_pod("default/p") is None
    assert h.node_of("default/p") is None


def test_fit_error_after_a_move_request_goes_to_backoff(h: Harness) -> None:
    """The in-flight events rule: an event during the pod's cycle that a rejecting
    plugin's hint accepts (TaintToleration: a node without taints) may have helped it,
    so it waits out its backoff instead of the unschedulable pool."""
    _unfit_cluster(h)
    h.start()
    info = h.queue.pop(timeout=2.0)
    assert info is not None
    cycle = h.queue.last_pop_cycle
    h.apply(node("another-small", cpu="1"))  # NodeAdd while the pod is in flight
    h.coord.schedule_one(info, cycle)
    assert h.queue.location("default/p") is Location.BACKOFF


@pytest.mark.parametrize("gate", [True, False], ids=["PopFromBackoffQ", "gate-off"])
def test_pop_from_backoff_q_schedules_a_backing_off_pod_when_active_q_is_empty(
    make_harness: Any, gate: bool
) -> None:
    """SchedulerPopFromBackoffQ: the pod sent to backoffQ (an event during its cycle)
    is retried at once when nothing else waits, and fits the node that arrived
    meanwhile; with the gate off it waits for its backoff to expire."""
    h = make_harness(features=FeatureGates({POP_FROM_BACKOFF_Q: gate}))
    _unfit_cluster(h)
    h.start()
    info = h.queue.pop(timeout=2.0)
    assert info is not None
    cycle = h.queue.last_pop_cycle
    h.apply(node("another-small", cpu="1"))  # NodeAdd while the pod is in flight
    h.coord.schedule_one(info, cycle)
    assert h.queue.location("default/p") is Location.BACKOFF
    h.apply(node("big", cpu="4"))  # moves nothing: the pod is not in the pool
    assert h.coord.step(pop_timeout=0) is gate
    if not gate:
        h.clock.step(1.0)  # the first backoff is over
        h.queue.flush_backoff_q_completed()
        assert h.coord.step(pop_timeout=0)
    h.settle()
    assert h.node_of("default/p") == "big"


def test_default_profile_fit_error_names_preemption(make_harness: Any) -> None:
    """DEFAULT PROFILE (no config: every upstream default plugin, cross-node included)."""
    h = make_harness(load_config(None))
    _unfit_cluster(h)
    h.start()
    h.cycle()
    (event,) = h.store.events(key="default/p", reason="FailedScheduling")
    assert event["message"].startswith(
        FIT_ERROR + f" {NO_CLAIMS}, preemption: 0/3 nodes are available:"
    )
    assert h.queue.location("default/p") is Location.UNSCHEDULABLE


def test_default_profile_schedules_and_binds(make_harness: Any) -> None:
    """DEFAULT PROFILE (no config)."""
    h = make_harness(load_config(None))
    h.apply(node("n1"), node("n2"), pod("a"), pod("b"), pod("c"))
    h.start()
    for _ in range(3):
        h.cycle()
    h.settle()
    placed = {k: h.node_of(f"default/{k}") for k in "abc"}
    assert all(placed.values()), placed
    assert len(h.store.events(reason="Scheduled")) == 3


# --------------------------------------------------------------------- Reserve / Permit


def test_reserve_failure_unreserves_forgets_and_requeues(make_harness: Any) -> None:
    h = make_harness(config(RESERVE))
    h.apply(node("n1"), pod("p").label("reserve", "reject"))
    h.start()
    h.cycle()
    plugin = h.plugin(RESERVE)
    assert plugin.unreserved == [("default/p", "n1")]
    assert h.cache.get_pod("default/p") is None
    assert h.requested_cpu("n1") == 0
    assert h.coord.binder.pending() == 0
    # upstream: a rejection at Reserve is a FitError on the one chosen node, and the
    # plugin is recorded as the rejector, so the pod waits for an event.
    (event,) = h.store.events(key="default/p", reason="FailedScheduling")
    assert event["message"] == "0/1 nodes are available: 1 reserve said no."
    assert h.queue.location("default/p") is Location.UNSCHEDULABLE
    assert h.queue.get("default/p").unschedulable_plugins == {RESERVE}


def test_permit_reject_unreserves_forgets_and_requeues(make_harness: Any) -> None:
    h = make_harness(config(RESERVE, PERMIT))
    h.apply(node("n1"), pod("p").label("permit", "reject"))
    h.start()
    h.cycle()
    assert h.plugin(RESERVE).reserved == [("default/p", "n1")]
    assert h.plugin(RESERVE).unreserved == [("default/p", "n1")]
    assert h.cache.get_pod("default/p") is None
    assert h.requested_cpu("n1") == 0
    (event,) = h.store.events(key="default/p", reason="FailedScheduling")
    assert event["message"] == "0/1 nodes are available: 1 permit said no."
    assert h.queue.location("default/p") is Location.UNSCHEDULABLE
    assert h.queue.get("default/p").unschedulable_plugins == {PERMIT}


def test_permit_wait_then_allow_binds(make_harness: Any) -> None:
    h = make_harness(config(PERMIT))
    h.apply(node("n1"), pod("p").label("permit", "wait"))
    h.start()
    h.cycle()
    fwk = h.coord.frameworks[PROFILE]
    waiting = fwk.handle.waiting_pods.get("default/p")
    assert waiting is not None
    assert h.cache.is_assumed("default/p")
    assert h.coord.binder.pending() == 1
    assert h.node_of("default/p") is None, "nothing is written while Permit waits"
    # The cycle is over: the next pod is scheduled meanwhile, counting the waiting one.
    h.apply(pod("q", cpu="3500m"))
    h.cycle()
    assert h.queue.location("default/q") is Location.UNSCHEDULABLE

    waiting.allow(PERMIT)
    h.settle()
    assert h.node_of("default/p") == "n1"
    assert not h.cache.is_assumed("default/p")
    assert [e["reason"] for e in h.store.events(key="default/p")] == ["Scheduled"]
    assert len(fwk.handle.waiting_pods) == 0


def test_permit_wait_then_reject_requeues(make_harness: Any) -> None:
    h = make_harness(config(RESERVE, PERMIT))
    h.apply(node("n1"), pod("p").label("permit", "wait"))
    h.start()
    h.cycle()
    fwk = h.coord.frameworks[PROFILE]
    fwk.handle.waiting_pods.reject("default/p", PERMIT, "not now")
    h.settle()
    assert h.plugin(RESERVE).unreserved == [("default/p", "n1")]
    assert h.cache.get_pod("default/p") is None
    assert h.requested_cpu("n1") == 0
    assert h.node_of("default/p") is None
    (event,) = h.store.events(key="default/p", reason="FailedScheduling")
    assert event["message"] == "0/1 nodes are available: 1 not now."
    assert h.queue.location("default/p") is Location.UNSCHEDULABLE
    assert h.queue.get("default/p").unschedulable_plugins == {PERMIT}


# --------------------------------------------------------------------- binding failures


@pytest.mark.parametrize("watch_first", [True, False], ids=["watch-first", "outcome-first"])
def test_binding_conflict_forgets_and_ends_bound_once(make_harness: Any, watch_first: bool) -> None:
    """Someone else binds the pod while our binding waits in Permit. Whichever the
    coordinator sees first (the other binding through the watch, or its own failed
    binding), it ends with the pod accounted once, on the node the store says."""
    h = make_harness(config(PERMIT))
    h.apply(node("n1"), node("n2", cpu="2"), pod("p").label("permit", "wait"))
    h.start()
    h.cycle()
    ours = h.cache.pod_node("default/p")
    theirs = "n2" if ours == "n1" else "n1"
    assert h.store.bind("default/p", theirs).ok

    waiting = h.coord.frameworks[PROFILE].handle.waiting_pods.get("default/p")
    if watch_first:
        h.coord.poll_informer()
        assert h.cache.pod_node("default/p") == theirs
    waiting.allow(PERMIT)
    assert h.coord.binder.wait_idle(10.0)
    h.coord.process_binding_outcomes()  # must not raise, whatever the order
    h.coord.poll_informer()
    h.coord.flush_done()

    assert h.node_of("default/p") == theirs
    assert h.cache.pod_node("default/p") == theirs
    assert not h.cache.is_assumed("default/p")
    assert h.requested_cpu(theirs) == 1000
    assert h.requested_cpu(ours) == 0
    assert h.queue.location("default/p") is None
    assert h.store.events(key="default/p", reason="Scheduled") == []


def test_binding_failure_forgets_requeues_and_frees_room(make_harness: Any) -> None:
    """A failed binding cycle releases the node like a deleted pod (upstream
    handleBindingCycleError): pods rejected for lack of room are retried."""
    h = make_harness(config(PREBIND))
    h.apply(node("n1", cpu="2"), pod("a", cpu="2").label("prebind", "fail"))
    h.start()
    h.cycle()  # a assumed on n1, its binding will fail
    h.apply(pod("b", cpu="2"))
    h.cycle()  # b does not fit next to assumed a
    assert h.queue.location("default/b") is Location.UNSCHEDULABLE

    h.settle()
    assert h.cache.get_pod("default/a") is None
    assert h.requested_cpu("n1") == 0
    assert h.node_of("default/a") is None
    (event,) = h.store.events(key="default/a", reason="FailedScheduling")
    assert "volume not ready" in event["message"]
    # a is an error: back off. b was moved by the forget (AssignedPodDelete).
    assert h.queue.location("default/a") is Location.BACKOFF
    assert h.queue.location("default/b") is Location.BACKOFF


def test_recreated_pod_while_old_binding_in_flight(make_harness: Any, caplog: Any) -> None:
    """A pod deleted and re-created under the same name while its first incarnation
    waits in Permit: the new one must not crash the cycle, and ends up scheduled."""
    h = make_harness(config(PERMIT))
    h.apply(node("n1"), pod("p").label("permit", "wait"))
    h.start()
    h.cycle()
    h.store.delete("Pod", "default/p")
    h.apply(pod("p"))  # a new uid, no Permit wait
    with caplog.at_level(logging.WARNING):
        h.cycle()  # the new pod meets the old incarnation still assumed
    h.settle()
    # The new pod met the old incarnation still assumed: an error, so it backs off (1 s on
    # the FakeClock). The old binding was rejected (its pod was deleted) and forgotten.
    assert h.queue.location("default/p") is Location.BACKOFF
    assert h.node_of("default/p") is None
    h.clock.step(2)
    h.queue.flush_backoff_q_completed()
    assert h.queue.location("default/p") is Location.ACTIVE
    h.cycle()
    h.settle()
    assert h.node_of("default/p") == "n1"
    assert h.requested_cpu("n1") == 1000


# --------------------------------------------------------------------- requeue on events


def test_node_added_later_makes_pod_schedulable(h: Harness) -> None:
    h.apply(node("small", cpu="1"), pod("p", cpu="2"))
    h.start()
    h.cycle()
    assert h.queue.location("default/p") is Location.UNSCHEDULABLE

    h.apply(node("big", cpu="8"))  # NodeAdd moves it out of the pool
    assert h.queue.location("default/p") is Location.BACKOFF
    h.clock.step(2)  # past the first backoff (1 s)
    h.queue.flush_backoff_q_completed()
    assert h.queue.location("default/p") is Location.ACTIVE
    h.cycle()
    h.settle()
    assert h.node_of("default/p") == "big"


def test_deleting_an_assigned_pod_frees_room(h: Harness) -> None:
    h.apply(
        node("n1", cpu="2"),
        node("cordoned", cpu="8").unschedulable(),
        pod("running", cpu="2").node("n1"),
        pod("p", cpu="2"),
    )
    h.apply(make_node("gone").capacity(cpu="8", pods=110).unschedulable())
    h.start()
    h.cycle()
    assert h.queue.location("default/p") is Location.UNSCHEDULABLE
    assert names.NODE_RESOURCES_FIT in h.queue.get("default/p").unschedulable_plugins

    h.store.delete("Pod", "default/running")
    h.coord.poll_informer()
    assert h.cache.get_pod("default/running") is None
    assert h.queue.location("default/p") is Location.BACKOFF
    h.clock.step(2)
    h.queue.flush_backoff_q_completed()
    h.cycle()
    h.settle()
    assert h.node_of("default/p") == "n1"


def test_assigned_pod_delete_does_not_move_pods_it_cannot_help(h: Harness) -> None:
    """Only pods whose rejecting plugins registered AssignedPodDelete move."""
    h.apply(node("cordoned").unschedulable(), pod("running", cpu="1").node("cordoned"), pod("p"))
    h.start()
    h.cycle()
    assert h.queue.get("default/p").unschedulable_plugins == {names.NODE_UNSCHEDULABLE}
    h.store.delete("Pod", "default/running")
    h.coord.poll_informer()
    assert h.queue.location("default/p") is Location.UNSCHEDULABLE


def test_start_freezes_what_the_listing_left_alive(h: Harness) -> None:
    """Under the run's collector policy (``gc_policy.survivors_frozen``), what start-up
    built (the listed nodes and pods) is frozen before the first turn: no collection of
    the scheduling loop walks it (``gc_policy.freeze_started``)."""
    h.apply(node("n1"), pod("p"))
    gc.unfreeze()
    with survivors_frozen():
        h.start()
        frozen = gc.get_freeze_count()
        listed = h.coord.informer.pods["default/p"]
        young = any(o is listed for g in range(3) for o in gc.get_objects(g))
    assert frozen > 0
    assert not young, "the listed pod is still in a generation the collector walks"
