"""The requeueing decision table (pure): which event helps which rejected pod."""

from __future__ import annotations

import pytest

from cluster_sched.framework import events as ev
from cluster_sched.framework.events import ActionType, ClusterEvent, EventResource
from cluster_sched.queue import QueuedPodInfo, Strategy
from cluster_sched.queue.requeueing import gate_admits, is_event_of_interest, strategy_for
from tests.queue.queue_helpers import FIT, GATES, NODE_ADD, PLUGIN_EVENTS, VOLUME, info

PV_ADD = ClusterEvent(EventResource.PERSISTENT_VOLUME, ActionType.ADD)
CLASS_ADD = ClusterEvent(EventResource.STORAGE_CLASS, ActionType.ADD)


@pytest.mark.parametrize(
    ("pod", "event", "expected"),
    [
        (info("a", unschedulable_plugins={FIT}), NODE_ADD, Strategy.AFTER_BACKOFF),
        (info("a", unschedulable_plugins={VOLUME}), NODE_ADD, Strategy.SKIP),
        (info("a", unschedulable_plugins={VOLUME}), PV_ADD, Strategy.AFTER_BACKOFF),
        (info("a"), NODE_ADD, Strategy.AFTER_BACKOFF),
        (info("a"), CLASS_ADD, Strategy.AFTER_BACKOFF),
        (
            info("a", unschedulable_plugins={VOLUME}),
            ev.EVENT_UNSCHEDULABLE_TIMEOUT,
            Strategy.AFTER_BACKOFF,
        ),
        (info("a", pending_plugins={FIT}), NODE_ADD, Strategy.IMMEDIATELY),
        (
            info("a", unschedulable_plugins={FIT}, pending_plugins={VOLUME}),
            NODE_ADD,
            Strategy.AFTER_BACKOFF,
        ),
        (
            info("a", unschedulable_plugins={FIT}, pending_plugins={VOLUME}),
            PV_ADD,
            Strategy.IMMEDIATELY,
        ),
        (info("a", unschedulable_plugins={"Unregistered"}), NODE_ADD, Strategy.SKIP),
    ],
    ids=[
        "rejector-registered",
        "rejector-not-registered",
        "other-rejector-registered",
        "unknown-reason",
        "unknown-reason-any-event",
        "wildcard-event",
        "pending-plugin",
        "unschedulable-beats-unmatched-pending",
        "pending-wins",
        "unregistered-plugin",
    ],
)
def test_strategy(pod: QueuedPodInfo, event: ClusterEvent, expected: Strategy) -> None:
    assert strategy_for(pod, event, PLUGIN_EVENTS) is expected


def test_interest() -> None:
    assert is_event_of_interest(NODE_ADD, PLUGIN_EVENTS)
    assert is_event_of_interest(ev.EVENT_FORCE_ACTIVATE, PLUGIN_EVENTS)
    assert not is_event_of_interest(CLASS_ADD, PLUGIN_EVENTS)
    assert not is_event_of_interest(NODE_ADD, {})


def test_gated_pod_moves_only_on_its_gate_plugins_events() -> None:
    gated = info("a").with_gate(GATES)
    gates_gone = ClusterEvent(
        EventResource.UNSCHEDULABLE_POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    )
    assert gate_admits(gated, gates_gone, PLUGIN_EVENTS)
    assert not gate_admits(gated, NODE_ADD, PLUGIN_EVENTS)
    assert not gate_admits(gated, ev.EVENT_UNSCHEDULABLE_TIMEOUT, PLUGIN_EVENTS)
    assert gate_admits(info("b"), NODE_ADD, PLUGIN_EVENTS)
