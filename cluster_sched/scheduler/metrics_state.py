"""A running scheduler wired to its metrics beyond the cycle: the state gauges and
event-handling latency.

``attach_metrics(coord, metrics)`` registers a state provider that ``/metrics`` reads at
scrape time (nothing runs on the hot path for these gauges) and times the informer's
event handlers:

- ``scheduler_pending_pods{queue}``: activeQ (pods in flight are not in it, as
  upstream), backoffQ, the unschedulable pool without gated pods, and the gated pods;
- ``scheduler_unschedulable_pods{plugin,profile}``: queued pods (not in flight, not
  gated) by each plugin that rejected them in their last attempt, Pending included;
  upstream increments when a failed pod is queued and decrements when it is popped,
  which is exactly this count;
- ``scheduler_scheduler_cache_size{type}``: nodes, pods and assumed pods in the cache;
- ``scheduler_inflight_events{event}``: ``PodPopped`` is the pods being scheduled; the
  Redis queue keeps no per-pod log of other in-flight events, so no other series;
- ``scheduler_event_handling_duration_seconds{event}``: one observation per watch event
  (``UnschedulablePodAdd``, ``AssignedPodDelete``, ``NodeUpdate``, ``PersistentVolumeAdd``,
  ...). Queue writes the handlers defer to the end of an informer batch are not in it.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from cluster_sched.config import DEFAULT_SCHEDULER_NAME
from cluster_sched.queue.types import Location
from cluster_sched.scheduler.coordinator import Coordinator
from cluster_sched.telemetry.metric_names import (
    CACHE_ASSUMED_PODS,
    CACHE_NODES,
    CACHE_PODS,
    EVENT_POD_POPPED,
    QUEUE_ACTIVE,
    QUEUE_BACKOFF,
    QUEUE_GATED,
    QUEUE_UNSCHEDULABLE,
)
from cluster_sched.telemetry.metrics import Metrics, SchedulerState

__all__ = ["attach_metrics", "event_label", "read_state"]


def attach_metrics(coord: Coordinator, metrics: Metrics) -> None:
    """Serve ``coord``'s state gauges from ``metrics`` and time its event handlers."""
    if not metrics.enabled:
        return
    metrics.watch_state(lambda: read_state(coord))
    handlers = coord.informer.handlers
    handlers.on_pod = _timed_pair(handlers.on_pod, "Pod", metrics)
    # each of our own bindings is its own AssignedPodAdd observation, as upstream's
    # handler times each event: through the timed ``on_pod``, not as one run
    handlers.on_own_bound = None
    handlers.on_node = _timed_pair(handlers.on_node, "Node", metrics)
    handlers.on_nodes_added = None  # each node its own NodeAdd observation, as on_own_bound
    on_other = handlers.on_other

    def other(kind: str, old: Any, new: Any) -> None:
        start = time.perf_counter()
        try:
            on_other(kind, old, new)
        finally:
            metrics.observe_event_handling(event_label(kind, old, new), time.perf_counter() - start)

    handlers.on_other = other


def read_state(coord: Coordinator) -> SchedulerState:
    """One reading of the queue (two Redis round trips) and the cache."""
    counts = coord.queue.counts()
    infos, _ = coord.queue.pending_pods()
    pods = coord.informer.pods
    gated = 0
    rejected: Counter[tuple[str, str]] = Counter()
    for info in infos:
        if info.gated:
            gated += 1
            continue
        plugins = info.unschedulable_plugins | info.pending_plugins
        if not plugins:
            continue
        pod = pods.get(info.pod_key)
        profile = pod.scheduler_name if pod is not None else DEFAULT_SCHEDULER_NAME
        for plugin in plugins:
            rejected[(plugin, profile)] += 1
    cache = coord.cache
    return SchedulerState(
        pending={
            QUEUE_ACTIVE: counts[Location.ACTIVE],
            QUEUE_BACKOFF: counts[Location.BACKOFF],
            QUEUE_UNSCHEDULABLE: max(counts[Location.UNSCHEDULABLE] - gated, 0),
            QUEUE_GATED: gated,
        },
        cache_size={
            CACHE_NODES: len(cache.nodes),
            CACHE_PODS: len(cache.pod_states),
            CACHE_ASSUMED_PODS: len(cache.assumed),
        },
        unschedulable=dict(rejected),
        inflight_events={EVENT_POD_POPPED: counts[Location.IN_FLIGHT]},
    )


def event_label(resource: str, old: Any, new: Any) -> str:
    """Upstream's event label: resource and action, pods split by assignment
    (``UnschedulablePodAdd``, ``AssignedPodUpdate``, ...)."""
    action = "Add" if old is None else "Delete" if new is None else "Update"
    if resource == "Pod":
        obj = new if new is not None else old
        if new is not None and old is not None and new.node_name and not old.node_name:
            action = "Add"  # the binding arrived: an add for the assigned-pod handler
        resource = "AssignedPod" if obj.node_name else "UnschedulablePod"
    return resource + action


def _timed_pair(
    handler: Callable[[Any, Any], None], resource: str, metrics: Metrics
) -> Callable[[Any, Any], None]:
    def run(old: Any, new: Any) -> None:
        start = time.perf_counter()
        try:
            handler(old, new)
        finally:
            metrics.observe_event_handling(
                event_label(resource, old, new), time.perf_counter() - start
            )

    return run
