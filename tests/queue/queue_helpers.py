"""Builders and constants shared by the queue tests: a helper module of the
``tests.queue`` package, imported as ``tests.queue.queue_helpers`` (fixtures built on it
live in ``conftest.py``)."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import redis

from cluster_sched.framework.events import (
    ActionType,
    ClusterEvent,
    EventResource,
)
from cluster_sched.queue import Location, QueuedPodInfo, SchedulingQueue
from cluster_sched.queue.keys import QueueKeys

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


def dump(client: redis.Redis, keys: QueueKeys) -> dict[str, Any]:
    """Every queue key's content, by key role (the prefix stripped)."""
    out: dict[str, Any] = {}
    for name in QueueKeys.__dataclass_fields__:
        key = getattr(keys, name)
        kind = client.type(key).decode()
        if kind == "zset":
            out[name] = client.zrange(key, 0, -1, withscores=True)
        elif kind == "hash":
            out[name] = client.hgetall(key)
        elif kind == "string":
            out[name] = client.get(key)
        elif kind == "list":
            # Wake tokens only say "look again"; one per script run, not per pod, and
            # capped, so a batch may leave fewer than the single calls it replaces.
            out[name] = bool(client.lrange(key, 0, -1))
        else:
            out[name] = kind
    return out


def twin(client: redis.Redis, source: SchedulingQueue, **kwargs: Any) -> SchedulingQueue:
    """A queue under a fresh prefix holding a copy of ``source``'s keys."""
    queue = SchedulingQueue(client, prefix=f"{{b{uuid.uuid4().hex}}}", **kwargs)
    for name in QueueKeys.__dataclass_fields__:
        client.copy(getattr(source.keys, name), getattr(queue.keys, name))
    # The in-flight rule's memory (pods popped, events seen) belongs to the process.
    queue.in_flight_events = source.in_flight_events.copy()
    return queue


class Recorder:
    """Records the (queue, event) pairs a queue's metrics hook is called with."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def __call__(self, queue: str, event: str) -> None:
        self.seen.append((queue, event))
