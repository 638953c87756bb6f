"""The state gauges of ``Metrics`` (pending pods, unschedulable pods by plugin, cache
size, in-flight events), read from the running scheduler when ``/metrics`` is scraped
rather than kept current on the hot path."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from cluster_sched.telemetry.metric_names import (
    CACHE_ASSUMED_PODS,
    CACHE_NODES,
    CACHE_PODS,
    EVENT_POD_POPPED,
    PENDING_QUEUES,
    SUBSYSTEM,
)

__all__ = ["SchedulerState", "StateCollector"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SchedulerState:
    """What the state gauges show, read at scrape time from the running scheduler."""

    #: queue -> pods: active (in flight included), backoff, unschedulable (gated ones
    #: excluded, as upstream), gated
    pending: Mapping[str, int]
    #: nodes / pods / assumed_pods -> count
    cache_size: Mapping[str, int] = field(default_factory=dict)
    #: (plugin, profile) -> queued pods that plugin rejected in their last attempt
    unschedulable: Mapping[tuple[str, str], int] = field(default_factory=dict)
    #: event -> in-flight events (``PodPopped``: pods being scheduled)
    inflight_events: Mapping[str, int] = field(default_factory=dict)


class StateCollector(Collector):
    """The state gauges, read from a provider at scrape time (or the last pushed values)."""

    def __init__(self) -> None:
        self.pending: dict[str, int] = dict.fromkeys(PENDING_QUEUES, 0)
        self.provider: Callable[[], SchedulerState] | None = None
        self.frozen: SchedulerState | None = None

    def read(self) -> SchedulerState:
        if self.frozen is not None:
            return self.frozen
        if self.provider is not None:
            try:
                return self.provider()
            except Exception:  # a scrape must answer even if the store is gone
                log.warning("reading the scheduler state for /metrics failed", exc_info=True)
        return SchedulerState(pending=dict(self.pending))

    def collect(self) -> Iterator[GaugeMetricFamily]:
        state = self.read()
        name = f"{SUBSYSTEM}_"
        pending = GaugeMetricFamily(name + "pending_pods", _HELP_PENDING, labels=["queue"])
        for queue in PENDING_QUEUES:
            pending.add_metric([queue], state.pending.get(queue, 0))
        yield pending
        reasons = GaugeMetricFamily(
            name + "unschedulable_pods", _HELP_UNSCHEDULABLE, labels=["plugin", "profile"]
        )
        for (plugin, profile), count in sorted(state.unschedulable.items()):
            reasons.add_metric([plugin, profile], count)
        yield reasons
        cache = GaugeMetricFamily(
            name + "scheduler_cache_size",
            "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
            labels=["type"],
        )
        for kind in (CACHE_NODES, CACHE_PODS, CACHE_ASSUMED_PODS):
            cache.add_metric([kind], state.cache_size.get(kind, 0))
        yield cache
        inflight = GaugeMetricFamily(
            name + "inflight_events",
            "Number of events currently tracked in the scheduling queue.",
            labels=["event"],
        )
        events = {EVENT_POD_POPPED: 0, **state.inflight_events}
        for event, count in sorted(events.items()):
            inflight.add_metric([event], count)
        yield inflight


_HELP_PENDING: Final = (
    "Number of pending pods, by the queue type. 'active' means number of pods in "
    "activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number "
    "of pods in unschedulablePods that the scheduler attempted to schedule and failed; "
    "'gated' is the number of unschedulable pods that the scheduler never attempted to "
    "schedule because they are gated."
)
_HELP_UNSCHEDULABLE: Final = (
    "The number of unschedulable pods broken down by plugin name. A pod will increment "
    "the gauge for all plugins that caused it to not schedule and so this metric have "
    "meaning only when broken down by plugin."
)
