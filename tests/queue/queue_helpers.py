"""Builders and constants shared by the queue tests: a helper module of the
``tests.queue`` package, imported as ``tests.queue.queue_helpers`` (fixtures built on it
live in ``conftest.py``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from cluster_sched.framework.events import (
    ActionType,
    ClusterEvent,
    EventResource,
)
from cluster_sched.queue import Location, QueuedPodInfo, SchedulingQueue

#: Start of every test's fake time: far from zero so "now - 5 min" stays positive.
T0 = 1_700_000_000.0

FIT = "NodeResourcesFit"
AFFINITY = "NodeAffinity"
VOLUME = "VolumeBinding"
SPREAD = "PodTopologySpread"
INTER_POD = "InterPodAffinity"
GATES = "SchedulingGates"

NODE_ADD = ClusterEvent(EventResource.NODE, ActionType.ADD)
#: The event that opens the SchedulingGates gate.
GATES_GONE = ClusterEvent(
    EventResource.UNSCHEDULABLE_POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
)

#: A small profile: which plugin wakes on which events.
PLUGIN_EVENTS: dict[str, tuple[ClusterEvent, ...]] = {
    FIT: (
        ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
        ClusterEvent(EventResource.POD, ActionType.DELETE),
    ),
    AFFINITY: (ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),),
    VOLUME: (ClusterEvent(EventResource.PERSISTENT_VOLUME, ActionType.ADD),),
    SPREAD: (ClusterEvent(EventResource.POD, ActionType.ALL),),
    INTER_POD: (ClusterEvent(EventResource.POD, ActionType.ALL),),
    GATES: (ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),),
}


def info(key: str, priority: int = 0, ts: float = T0, **fields: Any) -> QueuedPodInfo:
    """A QueuedPodInfo for pod ``key`` (``ns/name``; a bare name gets ``default/``)."""
    if "/" not in key:
        key = f"default/{key}"
    for name in ("unschedulable_plugins", "pending_plugins"):
        if name in fields:
            fields[name] = frozenset(fields[name])
    return QueuedPodInfo(pod_key=key, priority=priority, timestamp=ts, **fields)


def fail(
    queue: SchedulingQueue,
    popped: QueuedPodInfo,
    *plugins: str,
    cycle: int | None = None,
    pending: tuple[str, ...] = (),
) -> Location | None:
    """Report ``popped``'s attempt as rejected by ``plugins`` (the failure handler's call)."""
    rejected = replace(
        popped, unschedulable_plugins=frozenset(plugins), pending_plugins=frozenset(pending)
    )
    return queue.add_unschedulable_if_not_present(
        rejected, queue.last_pop_cycle if cycle is None else cycle
    )


def park(queue: SchedulingQueue, key: str, *plugins: str, priority: int = 0) -> QueuedPodInfo:
    """Add ``key``, pop it and fail it with ``plugins``: it ends in the unschedulable
    pool (no move request happened during its cycle). Returns the popped info."""
    queue.add(info(key, priority, queue.clock.now()))
    popped = queue.pop(timeout=0)
    assert popped is not None and popped.pod_key.endswith(key)
    fail(queue, popped, *plugins)
    return popped
