"""Events seen while pods were being scheduled (upstream activeQ's inFlightPods and
inFlightEvents), for the in-flight rule of QueueingHints.

A pod whose attempt fails is judged against the events that arrived during its
scheduling cycle: if one of them makes a rejecting plugin's hint say Queue, the pod goes
to backoffQ / activeQ instead of the unschedulable pool (the event may already have
fixed what rejected it).

Batched loop: the coordinator pops up to N pods at once and schedules them one after
another. Each recorded event is tagged with the cycle in progress when it arrived
(``cycle_in_progress``, else the last pop's cycle); the pod of cycle ``c`` considers only
events tagged ``>= c``. An event that arrived while the pod still sat in the popped batch
does not count: serially the pod would still have been in activeQ, where events do not
matter. So every batch size gives every pod the serial answer.

A pod counts as in flight here from its pop until its binding cycle ends (bound, failed
back to the queue, or deleted), as upstream's Done at the end of the binding cycle; the
Redis in-flight set lets go of it earlier, when it is assumed.

This state lives in the coordinator's memory only, by design: it holds old/new objects
for hint functions. Losing it (a restart) loses no pod: the pods in flight then are
requeued by ``requeue_in_flight`` as failed with an error, which retries them anyway.
"""

from __future__ import annotations

import heapq
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cluster_sched.framework.events import ClusterEvent

__all__ = ["MAX_IN_FLIGHT_EVENTS", "MAX_TRACKED_PODS", "InFlightEvents", "RecordedEvent"]

#: Events kept at most; beyond, the oldest are dropped and a pod whose cycle they
#: covered is judged "some event may have helped" (retry after backoff), never stranded.
MAX_IN_FLIGHT_EVENTS = 100_000
#: Pods tracked at most (a pod whose binding end is never reported must not pin the
#: event history forever); the oldest are forgotten first.
MAX_TRACKED_PODS = 50_000


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    #: the scheduling cycle in progress when the event arrived
    tag: int
    event: ClusterEvent
    old: Any
    new: Any


class InFlightEvents:
    """Pods in flight (popped by this process) and the events received meanwhile."""

    def __init__(self, limit: int = MAX_IN_FLIGHT_EVENTS) -> None:
        self._lock = threading.Lock()
        self._pods: dict[str, int] = {}
        #: (cycle, pod) of every pop, a heap: the oldest cycle in flight without a scan
        #: of every pod in flight per finished pod (entries of pods gone or popped again
        #: are dropped when they reach the top)
        self._cycles: list[tuple[int, str]] = []
        self._events: deque[RecordedEvent] = deque()
        self._limit = limit
        #: events tagged up to this cycle were dropped by the limit
        self._dropped_through = -1

    def popped(self, pods: Iterable[tuple[str, int]]) -> None:
        with self._lock:
            for key, cycle in pods:
                self._pods[key] = cycle
                heapq.heappush(self._cycles, (cycle, key))
            while len(self._pods) > MAX_TRACKED_PODS:
                del self._pods[next(iter(self._pods))]

    def any_in_flight(self) -> bool:
        return bool(self._pods)

    def record(self, tag: int, event: ClusterEvent, old: Any = None, new: Any = None) -> bool:
        """Keep the event if some pod is in flight (upstream addEventIfAnyInFlight)."""
        with self._lock:
            if not self._pods:
                return False
            self._events.append(RecordedEvent(tag, event, old, new))
            while len(self._events) > self._limit:
                self._dropped_through = max(self._dropped_through, self._events.popleft().tag)
            return True

    def record_for_pod(
        self, pod_key: str, tag: int, events: Iterable[ClusterEvent], old: Any, new: Any
    ) -> bool:
        """Keep ``events`` if ``pod_key`` itself is in flight (upstream
        addEventsIfPodInFlight: an update of a pod being scheduled)."""
        with self._lock:
            if pod_key not in self._pods:
                return False
        for event in events:
            self.record(tag, event, old, new)
        return True

    def is_in_flight(self, pod_key: str) -> bool:
        return pod_key in self._pods

    def events_for(self, pod_key: str, cycle: int) -> list[RecordedEvent] | None:
        """Events the pod of ``cycle`` must be judged against; None when unknown (not
        popped here, or some of its events were dropped): the caller retries it."""
        with self._lock:
            if pod_key not in self._pods or cycle <= self._dropped_through:
                return None
            return [e for e in self._events if e.tag >= cycle]

    def finished(self, pod_keys: Iterable[str]) -> None:
        """The pods left flight (done, requeued, deleted): forget events no pod still
        in flight can need."""
        with self._lock:
            for key in pod_keys:
                self._pods.pop(key, None)
            if not self._pods:
                self._events.clear()
                self._cycles.clear()
                return
            oldest = self._oldest()
            while self._events and self._events[0].tag < oldest:
                self._events.popleft()

    def _oldest(self) -> int:
        """The smallest cycle of a pod in flight (there is one); under the lock."""
        cycles, pods = self._cycles, self._pods
        while pods.get(cycles[0][1]) != cycles[0][0]:
            heapq.heappop(cycles)
        return cycles[0][0]

    def copy(self) -> InFlightEvents:
        """An independent copy (tests compare two queues fed the same history)."""
        other = InFlightEvents(self._limit)
        with self._lock:
            other._pods = dict(self._pods)
            other._cycles = list(self._cycles)
            other._events = deque(self._events)
            other._dropped_through = self._dropped_through
        return other

    def __len__(self) -> int:
        return len(self._events)
