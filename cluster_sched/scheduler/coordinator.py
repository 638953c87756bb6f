"""The scheduling-cycle coordinator: the one process that runs cycles serially.

It owns the cache (so assume/forget are its alone), pops pods from the shared Redis
queue, runs ``schedule_one`` and hands binding cycles to a BindingExecutor without
waiting. Cluster changes arrive through the informer (the store's event stream) and go
to the cache and the queue via the event handlers. Binding outcomes come back at the top
of the loop, on this thread, before the next cycle.

This module is the loop only (upstream Scheduler.Run); the parts are built by
``assembly.new_scheduler`` (upstream scheduler.New), the cycle lives in
``schedule_one``, failures in ``failure``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cluster_sched.cache.cache import Cache
from cluster_sched.clock import Clock
from cluster_sched.config.types import SchedulerConfiguration
from cluster_sched.errors import StoreError
from cluster_sched.framework.runtime import Framework
from cluster_sched.gc_policy import collect_when_idle, freeze_started, note_busy
from cluster_sched.queue.scheduling_queue import SchedulingQueue
from cluster_sched.queue.types import Location, QueuedPodInfo
from cluster_sched.scheduler import whole_batch
from cluster_sched.scheduler.algorithm import Scheduler
from cluster_sched.scheduler.binding import BindingExecutor
from cluster_sched.scheduler.event_handlers import EventHandlers
from cluster_sched.scheduler.failure import FailureHandler
from cluster_sched.scheduler.informer import Informer
from cluster_sched.scheduler.nodesource import NodeSource
from cluster_sched.scheduler.schedule_one import SchedulingCycle
from cluster_sched.scheduler.stats import RunStats
from cluster_sched.store.store import Store
from cluster_sched.telemetry.metrics import Metrics
from cluster_sched.telemetry.spans import (
    ATTR_ATTEMPTS,
    ATTR_CYCLE,
    ATTR_POD_NAME,
    ATTR_POD_NAMESPACE,
    QUEUE_POP,
    SCHEDULE_POD,
)
from cluster_sched.telemetry.tracing import Tracing

if TYPE_CHECKING:
    from cluster_sched.framework.handle import NominatedPods

log = logging.getLogger(__name__)


def _never(pod_key: str) -> bool:
    return False


#: How often (seconds) the loop reads the event stream while pods keep coming.
INFORMER_POLL_INTERVAL = 0.02
#: How often (seconds) the scheduler_pending_pods gauges are refreshed.
GAUGE_INTERVAL = 1.0
#: How often (seconds) assumed pods whose binding never arrived are expired.
CLEANUP_INTERVAL = 1.0


@dataclass(slots=True)
class SchedulerParts:
    """Everything ``new_scheduler`` builds, handed to the loop in one piece."""

    store: Store
    config: SchedulerConfiguration
    clock: Clock
    cache: Cache
    source: NodeSource
    frameworks: dict[str, Framework]
    queue: SchedulingQueue
    algorithm: Scheduler
    informer: Informer
    handlers: EventHandlers
    binder: BindingExecutor
    failures: FailureHandler
    stats: RunStats
    tracing: Tracing
    metrics: Metrics


#: Pods popped per Redis round trip (``--batch-size``); 1 is the plain serial loop.
DEFAULT_BATCH_SIZE = 64


class Coordinator:
    def __init__(self, parts: SchedulerParts, *, batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        if batch_size < 1:
            raise ValueError(f"batch size must be at least 1, got {batch_size}")
        self.batch_size = batch_size
        self.parts = parts
        self.store = parts.store
        self.config = parts.config
        self.clock = parts.clock
        self.cache = parts.cache
        self.source = parts.source
        self.frameworks = parts.frameworks
        self.queue = parts.queue
        self.algorithm = parts.algorithm
        self.informer = parts.informer
        self.handlers = parts.handlers
        self.binder = parts.binder
        self.failures = parts.failures
        self.stats = parts.stats
        self.tracing = parts.tracing
        self.metrics = parts.metrics
        self._last_poll = 0.0
        #: Seconds between two informer reads inside a batch; the virtual-time driver sets
        #: it to infinity and reads the watch itself between batches, so which events a
        #: batch sees never depends on wall-clock timing (runs repeat exactly).
        self.informer_poll_interval = INFORMER_POLL_INTERVAL
        self._last_cleanup = 0.0
        self._last_gauges = 0.0
        #: consecutive same-shape pods of a batch decided in one kernel call
        #: (``whole_batch``); off, each takes its own cycle (the same decisions)
        self.whole_batch = True
        self.cycle = SchedulingCycle(
            frameworks=parts.frameworks,
            cache=parts.cache,
            queue=parts.queue,
            algorithm=parts.algorithm,
            source=parts.source,
            binder=parts.binder,
            failures=parts.failures,
            pods=parts.informer.pods,
            refresh=self.poll_informer,
            done=self.done,
            stats=parts.stats,
            clock=parts.clock,
            tracing=parts.tracing,
            metrics=parts.metrics,
        )

    @property
    def invalid_objects(self) -> list[str]:
        """One line per stored object that failed to parse (reported, never fatal)."""
        return self.handlers.invalid_objects

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Recover pods a dead coordinator left in flight and the nominations in Redis,
        then list and watch (the initial listing queues every pending pod)."""
        recovered = self.queue.requeue_in_flight(self.clock.now())
        if recovered:
            log.warning("requeued %d pods left in flight by an earlier coordinator", recovered)
        self.queue.nominator.load()
        self.informer.list_and_watch()
        self.handlers.flush()
        preload = getattr(self.source, "preload", None)
        if preload is not None:  # shards that batches may go to take the cluster now
            preload(self.batch_size, self.cycle.algorithm.percentage_of_nodes_to_score)
        freeze_started()  # the cluster just loaded is walked by no collection (gc_policy)

    def close(self) -> None:
        self.binder.close()
        try:  # Done calls no pop carried: a successor would requeue those pods otherwise
            self.flush_done()
        except StoreError as exc:  # Redis gone: the successor's requeue_in_flight copes
            log.warning("could not finish the last scheduling cycles: %s", exc)
        self.queue.close()
        close_source = getattr(self.source, "close", None)
        if close_source is not None:
            close_source()  # shard actors end with the coordinator

    # ------------------------------------------------------------------ helpers

    def nominated_pods(self) -> NominatedPods:
        """node -> nominated pods: the nominator's live view."""
        return self.queue.nominator.nominated_pods()

    def poll_informer(self, block_ms: int | None = None) -> int:
        """Read new watch events, dispatch them, then apply the batched queue writes."""
        n = self.informer.poll(block_ms=block_ms)
        self.handlers.flush()
        self._last_poll = time.monotonic()
        return n

    def done(self, pod_key: str) -> None:
        """Queue.done for a pod its cycle assumed: sent with the next pop, in the same
        script run (in-flight bookkeeping only; no round trip of its own)."""
        self.queue.done_later(pod_key)

    def flush_done(self) -> None:
        """Send the pending Done calls now (the loop is idle or stopping)."""
        self.queue.flush_done()

    # ------------------------------------------------------------------ the loop

    def housekeeping(self) -> None:
        """What the loop does between two cycles: watch events (at most every
        INFORMER_POLL_INTERVAL), binding outcomes, gauges, expiry."""
        now = time.monotonic()
        if now - self._last_poll >= self.informer_poll_interval:
            self.poll_informer()
        self.process_binding_outcomes()
        if self.metrics.enabled and now - self._last_gauges >= GAUGE_INTERVAL:
            self._last_gauges = now
            self.update_pending_gauges()
        if now - self._last_cleanup >= CLEANUP_INTERVAL:
            self._last_cleanup = now
            for pod in self.cache.cleanup_assumed_pods():
                log.warning("assumed pod %s expired: its binding never arrived", pod.key)

    def step(self, pop_timeout: float = 0.05) -> bool:
        """One loop turn: housekeeping, then one batch of up to ``batch_size`` cycles.
        True if a pod was scheduled (or attempted) in this turn.

        A batch is popped in one Redis round trip, in the order single pops would give,
        each pod with its own cycle; the pods are then scheduled one at a time, with the
        same housekeeping between two pods as between two serial pops. While pod k is
        handled, the queue records move requests at pod k's cycle (``cycle_in_progress``),
        which is the counter a serial scheduler would show, so every pod's requeue
        decision is the serial one. A pod that enters activeQ during the batch (an event
        moved it, its failed attempt sent it straight back, it arrived) and sorts before
        some of the batch's pods would be popped before them serially: those go back to
        activeQ as if never popped (``unpop_overtaken``) and a later turn pops them
        again, in serial order.
        """
        self.housekeeping()
        pop_started_ns = time.time_ns() if self.tracing.enabled else 0
        batch = self.queue.pop_many(self.batch_size, timeout=0)
        if not batch and self.poll_informer():
            # activeQ was empty but the watch had news (new pods, moves): take those
            # before blocking, so a burst of arrivals is not made to wait for the timer.
            batch = self.queue.pop_many(self.batch_size, timeout=0)
        if not batch and pop_timeout > 0:
            batch = self.queue.pop_many(self.batch_size, timeout=pop_timeout)
        if not batch:
            self.flush_done()
            self.poll_informer()
            self.source.sync_when_idle()
            collect_when_idle()
            return False
        note_busy()
        pop_ns = time.time_ns() if self.tracing.enabled else 0
        try:
            if len(batch) > 1:
                self.cycle.prefetch(batch)
            writes = self.queue.active_writes
            # a pod the shards were asked about takes its own cycle, which reads their
            # answer: a whole-batch run stops before it (it would decide it on the replica,
            # the same decision, the shards' work wasted)
            asked = getattr(self.source, "asked", _never)
            k = 0
            while k < len(batch):
                if k:
                    self.housekeeping()
                    if self.queue.active_writes != writes:
                        writes = self.queue.active_writes
                        batch = batch[: k + self.queue.unpop_overtaken(batch[k:])]
                        if k == len(batch):
                            break
                if self.whole_batch and not self.tracing.enabled:
                    end = len(batch)
                    if asked is not _never:
                        end = next((j for j in range(k, end) if asked(batch[j][0].pod_key)), end)
                    handled = whole_batch.schedule_run(self.cycle, batch[k:end]) if end > k else 0
                    if handled:
                        k += handled
                        continue
                info, cycle = batch[k]
                self.queue.cycle_in_progress = cycle
                if self.tracing.enabled:
                    self._traced_schedule_one(info, cycle, pop_started_ns, pop_ns)
                else:
                    self.schedule_one(info, cycle)
                k += 1
        finally:
            self.queue.cycle_in_progress = None
            self.cycle.end_batch()
        return True

    def _traced_schedule_one(
        self, info: QueuedPodInfo, cycle: int, pop_started_ns: int, pop_ns: int
    ) -> None:
        """schedule_one under its SchedulePod root span; the batch's pop is each pod's
        queuePop child (one round trip served them all)."""
        root = self.tracing.start_span(
            SCHEDULE_POD,
            {
                ATTR_POD_NAMESPACE: info.pod_key.split("/", 1)[0],
                ATTR_POD_NAME: info.pod_key.split("/", 1)[1],
                ATTR_CYCLE: cycle,
                ATTR_ATTEMPTS: info.attempts,
            },
            start_time_ns=pop_started_ns,
        )
        try:
            with self.tracing.use_span(root):
                self.tracing.end(
                    self.tracing.start_span(QUEUE_POP, start_time_ns=pop_started_ns),
                    end_time_ns=pop_ns,
                )
                self.schedule_one(info, cycle)
        finally:
            self.tracing.end(root)

    def schedule_one(self, info: QueuedPodInfo, cycle: int) -> None:
        self.cycle.schedule_one(info, cycle)

    def update_pending_gauges(self) -> None:
        counts = self.queue.counts()
        self.metrics.set_pending_all(
            counts[Location.ACTIVE] + counts[Location.IN_FLIGHT],
            counts[Location.BACKOFF],
            counts[Location.UNSCHEDULABLE],
            0,
        )

    def process_binding_outcomes(self) -> int:
        outcomes = self.binder.poll()
        for outcome in outcomes:
            self.cycle.finish_binding(outcome)
        return len(outcomes)
