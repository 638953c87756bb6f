"""The scheduling-cycle coordinator: the one process that runs cycles serially.

It owns the cache (so assume/forget are its alone), pops pods from the shared Redis
queue, runs ``schedule_one`` and hands binding cycles to a BindingExecutor without
waiting. Cluster changes arrive through the informer (the store's event stream) and go
to the cache and the queue via the event handlers. Binding outcomes come back at the top
of the loop, on this thread, before the next cycle.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from cluster_sched.api.objects import Pod
from cluster_sched.cache.cache import Cache
from cluster_sched.clock import Clock, SystemClock
from cluster_sched.config.types import SchedulerConfiguration
from cluster_sched.errors import ClusterSchedError, InvalidObjectError, SchedulerError
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.events import EVENT_ASSIGNED_POD_DELETE, ClusterEvent
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.status import Code, Status
from cluster_sched.queue.scheduling_queue import SchedulingQueue
from cluster_sched.queue.types import Location, QueuedPodInfo
from cluster_sched.scheduler.algorithm import PreFilterError, Scheduler
from cluster_sched.scheduler.binding import (
    BindingExecutor,
    BindingJob,
    BindingOutcome,
    LocalBindingExecutor,
)
from cluster_sched.scheduler.binding_cycle import store_binder
from cluster_sched.scheduler.diagnosis import Diagnosis, FitError, fit_error_message
from cluster_sched.scheduler.event_handlers import EventHandlers, queued_info_for
from cluster_sched.scheduler.informer import Informer, InformerHandlers
from cluster_sched.scheduler.nodesource import LocalSource, NodeSource
from cluster_sched.scheduler.preemption_executor import StorePreemptionExecutor
from cluster_sched.scheduler.sharding import (
    InProcessShardClient,
    ShardClient,
    ShardedSource,
    ShardRouter,
)
from cluster_sched.scheduler.stats import RunStats
from cluster_sched.store.store import Store
from cluster_sched.telemetry.metrics import Metrics
from cluster_sched.telemetry.spans import (
    ATTR_ATTEMPTS,
    ATTR_CYCLE,
    ATTR_POD_NAME,
    ATTR_POD_NAMESPACE,
    ATTR_POD_UID,
    ATTR_PROFILE,
    ATTR_RESULT,
    ATTR_SELECTED_NODE,
    QUEUE_POP,
    RESULT_ERROR,
    RESULT_SCHEDULED,
    RESULT_UNSCHEDULABLE,
    SCHEDULE_POD,
    SCHEDULING_CYCLE,
)
from cluster_sched.telemetry.tracing import DISABLED, Tracing
from workers.shard import ShardCore

log = logging.getLogger(__name__)

#: How often (seconds) the loop reads the event stream while pods keep coming.
INFORMER_POLL_INTERVAL = 0.005
#: queue.done calls are sent together: in-flight bookkeeping may lag by this much.
DONE_BATCH = 32
DONE_INTERVAL = 0.01
#: How often (seconds) the scheduler_pending_pods gauges are refreshed.
GAUGE_INTERVAL = 1.0
#: How often (seconds) assumed pods whose binding never arrived are expired.
CLEANUP_INTERVAL = 1.0


class _NominatedView(Mapping[str, Sequence[Pod]]):
    """node -> pods nominated there, over the coordinator's map without copying it."""

    __slots__ = ("_by_node",)

    def __init__(self, by_node: dict[str, dict[str, Pod]]) -> None:
        self._by_node = by_node

    def __getitem__(self, node: str) -> Sequence[Pod]:
        return list(self._by_node[node].values())

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_node)

    def __len__(self) -> int:
        return len(self._by_node)


class Coordinator:
    def __init__(
        self,
        store: Store,
        queue_client: Any,
        config: SchedulerConfiguration,
        *,
        clock: Clock | None = None,
        seed: int | None = None,
        cache: Cache | None = None,
        binding_executor: Callable[[Store, dict[str, Framework]], BindingExecutor] | None = None,
        prefix: str = "{cs}",
        executor: str = "local",
        shards: int = 1,
        shard_clients: Callable[[int], list[ShardClient]] | None = None,
        tracing: Tracing | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        """``executor``: "local" (Filter/Score on the coordinator's table), or "shards"
        (``shards`` partitions, each behind a ShardClient: in-process ShardCores by
        default, Ray actors when ``shard_clients`` builds them)."""
        self.store = store
        self.config = config
        self.tracing = tracing or DISABLED
        self.metrics = metrics or Metrics.disabled()
        self.clock = clock or SystemClock()
        self.rng = random.Random(seed)
        self.source: NodeSource
        if executor == "local":
            self.cache = cache or Cache(clock=self.clock)
            self.source = LocalSource(self.cache.sink.table)  # type: ignore[attr-defined]
        else:
            router = ShardRouter(shards)
            self.cache = Cache(router, clock=self.clock)
            if shard_clients is not None:
                clients = shard_clients(shards)
            else:
                clients = [
                    InProcessShardClient(ShardCore(i, config, seed=seed or 0))
                    for i in range(shards)
                ]
                for client in clients:
                    # in-process shards read the coordinator's cluster-wide facts directly
                    for fwk in client.core.frameworks.values():  # type: ignore[attr-defined]
                        fwk.handle.services["snapshot"] = self.cache
            self.source = ShardedSource(router, clients)
        self.stats = RunStats()
        self.frameworks: dict[str, Framework] = {}
        self.preemption = StorePreemptionExecutor(self)
        for i, profile in enumerate(config.profiles):
            handle = Handle(
                profile_name=profile.scheduler_name, rng=random.Random(self.rng.random())
            )
            handle.binder = store_binder(store)
            handle.services.update(
                snapshot=self.cache,
                cache=self.cache,
                preemption_executor=self.preemption,
                nominated_pods=lambda node: list(self.nominated.get(node, {}).values()),
            )
            fwk = Framework.from_profile(profile, handle=handle, field=f"profiles[{i}]")
            handle.services["framework"] = fwk
            fwk.instrument(self.tracing, self.metrics)
            self.frameworks[profile.scheduler_name] = fwk
        first = next(iter(self.frameworks.values()))
        sort_plugin = first.queue_sort
        plugin_events: dict[str, tuple[ClusterEvent, ...]] = {}
        for fwk in self.frameworks.values():
            plugin_events.update(fwk.events_to_register())
        self.queue = SchedulingQueue(
            queue_client,
            prefix=prefix,
            clock=self.clock,
            sort_key=(lambda info: sort_plugin.sort_key(info.priority, info.timestamp))
            if sort_plugin
            else None,  # type: ignore[arg-type]
            plugin_events=plugin_events,
            pre_enqueue=self._pre_enqueue,
            pod_initial_backoff=float(config.pod_initial_backoff_seconds),
            pod_max_backoff=float(config.pod_max_backoff_seconds),
            on_incoming=self.metrics.inc_incoming if self.metrics.enabled else None,
        )
        self.algorithm = Scheduler(
            config.percentage_of_nodes_to_score, random.Random(self.rng.random())
        )
        self.handlers = EventHandlers(self)
        self.informer = Informer(
            store,
            InformerHandlers(
                on_pod=self.handlers.on_pod,
                on_node=self.handlers.on_node,
                on_other=self.handlers.on_other,
                on_invalid=self._on_invalid,
            ),
        )
        factory = binding_executor or (
            lambda s, f: LocalBindingExecutor(s, f, tracing=self.tracing)
        )
        self.binder: BindingExecutor = factory(store, self.frameworks)
        #: node -> {pod key: pod} nominated there (mirror of the Redis nominator)
        self.nominated: dict[str, dict[str, Pod]] = {}
        self._nominated_node: dict[str, str] = {}
        self._last_poll = 0.0
        self._last_cleanup = 0.0
        self._pending_done: list[str] = []
        self._last_queue_ts = 0.0
        self._last_gauges = 0.0
        self._cycle_span: Any = None
        self._last_done = 0.0
        self.invalid_objects: list[str] = []

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Recover pods a dead coordinator left in flight, then list and watch (the
        initial listing queues every pending pod)."""
        recovered = self.queue.requeue_in_flight(self.clock.now())
        if recovered:
            log.warning("requeued %d pods left in flight by an earlier coordinator", recovered)
        self.informer.list_and_watch()
        self.handlers.flush()

    def close(self) -> None:
        self.binder.close()
        self.queue.close()
        close_source = getattr(self.source, "close", None)
        if close_source is not None:
            close_source()  # shard actors end with the coordinator

    # ------------------------------------------------------------------ helpers

    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        ns = self.cache.namespaces.get(namespace)
        return ns.meta.labels if ns is not None else {}

    def _pre_enqueue(self, info: QueuedPodInfo) -> str | None:
        pod = self.informer.pods.get(info.pod_key)
        if pod is None:
            return None
        fwk = self.frameworks.get(pod.scheduler_name)
        if fwk is None:
            return None
        s = fwk.run_pre_enqueue(pod)
        return None if s.is_success else (s.plugin or "PreEnqueue")

    def queue_add_many(self, pods: list[Pod]) -> None:
        # Strictly increasing timestamps in watch order: QueueSort ties break by arrival,
        # as upstream's per-pod timestamps do, whatever the batching.
        infos = []
        for pod in pods:
            self._last_queue_ts = max(self.clock.now(), self._last_queue_ts + 1e-6)
            infos.append(queued_info_for(pod, self._last_queue_ts))
        self.queue.add_many(infos)
        for pod in pods:
            if pod.nominated_node_name:
                self._set_nominated(pod, pod.nominated_node_name)

    def poll_informer(self, block_ms: int | None = None) -> int:
        """Read new watch events, dispatch them, then apply the batched queue writes."""
        n = self.informer.poll(block_ms=block_ms)
        self.handlers.flush()
        self._last_poll = time.monotonic()
        return n

    def _done(self, pod_key: str) -> None:
        """Queue.done, batched: sent with the next loop turn (in-flight bookkeeping only)."""
        self._pending_done.append(pod_key)

    def flush_done(self, force: bool = True) -> None:
        if (
            not force
            and len(self._pending_done) < DONE_BATCH
            and time.monotonic() - self._last_done < DONE_INTERVAL
        ):
            return
        self._last_done = time.monotonic()
        if self._pending_done:
            keys, self._pending_done = self._pending_done, []
            self.queue.done_many(keys)

    def _on_invalid(self, kind: str, key: str, err: InvalidObjectError) -> None:
        line = str(err) if err.obj else f"{kind} {key}: {err}"
        self.invalid_objects.append(line)
        with contextlib.suppress(ClusterSchedError):
            self.store.record_event(kind, key, "FailedParsing", line, type="Warning")

    def _set_nominated(self, pod: Pod, node: str) -> None:
        self._clear_nominated(pod.key)
        self.nominated.setdefault(node, {})[pod.key] = pod
        self._nominated_node[pod.key] = node

    def _clear_nominated(self, key: str) -> None:
        node = self._nominated_node.pop(key, None)
        if node is None:
            return
        pods = self.nominated.get(node)
        if pods is not None and pods.pop(key, None) is not None and not pods:
            del self.nominated[node]

    def nominated_pods(self) -> Mapping[str, Sequence[Pod]]:
        """A live view (node -> nominated pods), built per node only when read."""
        return _NominatedView(self.nominated)

    # ------------------------------------------------------------------ the loop

    def step(self, pop_timeout: float = 0.05) -> bool:
        """One loop turn: events, binding outcomes, at most one cycle. True if a pod was
        scheduled (or attempted) in this turn."""
        now = time.monotonic()
        self.flush_done(force=False)
        if now - self._last_poll >= INFORMER_POLL_INTERVAL:
            self.poll_informer()
        self.process_binding_outcomes()
        if self.metrics.enabled and now - self._last_gauges >= GAUGE_INTERVAL:
            self._last_gauges = now
            self._update_pending_gauges()
        if now - self._last_cleanup >= CLEANUP_INTERVAL:
            self._last_cleanup = now
            for pod in self.cache.cleanup_assumed_pods():
                log.warning("assumed pod %s expired: its binding never arrived", pod.key)
        pop_started_ns = time.time_ns() if self.tracing.enabled else 0
        info = self.queue.pop(timeout=pop_timeout)
        if info is None:
            self.flush_done()
            self.poll_informer()
            return False
        cycle = self.queue.last_pop_cycle
        if not self.tracing.enabled:
            self.schedule_one(info, cycle)
            return True
        pop_ns = time.time_ns()
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
        return True

    def _update_pending_gauges(self) -> None:
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
            self._finish_binding(outcome)
        return len(outcomes)

    # ------------------------------------------------------------------ scheduleOne

    def schedule_one(self, info: QueuedPodInfo, cycle: int) -> None:
        """One scheduling cycle for a popped pod (upstream scheduleOne's first half)."""
        if not self.tracing.enabled:
            self._schedule_one(info, cycle)
            return
        with self.tracing.span(SCHEDULING_CYCLE, {ATTR_CYCLE: cycle}) as span:
            self._cycle_span = span
            try:
                self._schedule_one(info, cycle)
            finally:
                self._cycle_span = None

    def _schedule_one(self, info: QueuedPodInfo, cycle: int) -> None:
        pod = self.informer.pods.get(info.pod_key)
        if pod is None:
            # Added to the queue by another process before our watch saw it.
            self.poll_informer()
            pod = self.informer.pods.get(info.pod_key)
        if pod is None or pod.meta.deletion_timestamp is not None or pod.node_name:
            # Deleted, being deleted, or already bound: skip (upstream skipPodSchedule).
            self.queue.done(info.pod_key)
            return
        fwk = self.frameworks.get(pod.scheduler_name)
        if fwk is None or self._is_assumed(pod):
            # Not ours, or already assumed by an earlier cycle (upstream skipPodSchedule).
            self.queue.done(info.pod_key)
            return
        start = time.perf_counter()
        self.stats.on_pop(pod.key, self.clock.now())
        state = CycleState()
        if self.tracing.enabled and self._cycle_span is not None:
            self._cycle_span.set_attributes({ATTR_POD_UID: pod.uid, ATTR_PROFILE: fwk.profile_name})
        try:
            result = self.algorithm.schedule_pod(
                fwk, state, pod, self.source.table, self.cache, self.nominated_pods(), self.source
            )
        except FitError as fit:
            self._on_fit_error(fwk, state, pod, info, cycle, fit)
            self._attempt_done(fwk, start, RESULT_UNSCHEDULABLE)
            return
        except (PreFilterError, SchedulerError) as exc:
            status = (
                exc.status if isinstance(exc, PreFilterError) else Status(Code.ERROR, (str(exc),))
            )
            self.handle_scheduling_failure(fwk, pod, info, cycle, status, "")
            self._attempt_done(fwk, start, RESULT_ERROR)
            return
        self.metrics.observe_algorithm(time.perf_counter() - start)
        host = result.suggested_host
        assert host is not None
        assumed = replace(pod, node_name=host)
        try:
            self.cache.assume_pod(assumed, host)
        except SchedulerError as exc:
            # e.g. an earlier incarnation of the pod (same name) is still assumed: retry
            # with backoff once its binding cycle ends (upstream: assume error → Error).
            self.handle_scheduling_failure(
                fwk, pod, info, cycle, Status(Code.ERROR, (str(exc),)), ""
            )
            self._attempt_done(fwk, start, RESULT_ERROR)
            return
        s = fwk.run_reserve(state, assumed, host)
        if s.is_success:
            s = fwk.run_permit(state, assumed, host)
        waiting = s.code == Code.WAIT
        if not s.is_success and not waiting:
            self._undo(fwk, state, assumed, host)
            info, s = self._rejected_on_node(info, host, s)
            self.handle_scheduling_failure(fwk, pod, info, cycle, s, "")
            self._attempt_done(
                fwk, start, RESULT_ERROR if s.code == Code.ERROR else RESULT_UNSCHEDULABLE
            )
            return
        self._done(pod.key)
        if pod.key in self._nominated_node:
            self._clear_nominated(pod.key)
            self.queue.nominator.delete_nominated_pod_if_exists(pod.key)
        if state.pods_to_activate:
            self.queue.activate(state.pods_to_activate)
        self._attempt_done(fwk, start, RESULT_SCHEDULED, host)
        carrier = self.tracing.carrier_of(self._cycle_span) if self._cycle_span is not None else {}
        self.binder.submit(
            BindingJob(
                assumed,
                host,
                fwk.profile_name,
                state,
                info,
                cycle,
                waiting=waiting,
                trace_carrier=carrier,
            )
        )

    def _attempt_done(self, fwk: Framework, start: float, result: str, node: str = "") -> None:
        """Record one attempt: run stats, scheduler_schedule_attempts_total and friends,
        and the cycle span's outcome."""
        seconds = time.perf_counter() - start
        self.stats.attempt_seconds.append(seconds)
        self.metrics.observe_attempt(result, fwk.profile_name, seconds)
        if self._cycle_span is not None:
            attrs = {ATTR_RESULT: result}
            if node:
                attrs[ATTR_SELECTED_NODE] = node
            self._cycle_span.set_attributes(attrs)

    def _is_assumed(self, pod: Pod) -> bool:
        """This very pod (same uid) is assumed: an earlier cycle placed it."""
        if not self.cache.is_assumed(pod.key):
            return False
        assumed = self.cache.get_pod(pod.key)
        return assumed is not None and assumed.uid == pod.uid

    def _undo(self, fwk: Framework, state: CycleState, assumed: Pod, host: str) -> bool:
        """Unreserve + Forget; False if the cache no longer held the pod as assumed (the
        watch confirmed it meanwhile, e.g. someone else bound it): logged, as upstream."""
        fwk.run_unreserve(state, assumed, host)
        try:
            self.cache.forget_pod(assumed)
        except SchedulerError as exc:
            log.error("scheduler cache ForgetPod failed: %s", exc)
            return False
        return True

    @staticmethod
    def _rejected_on_node(
        info: QueuedPodInfo, host: str, status: Status
    ) -> tuple[QueuedPodInfo, Status]:
        """upstream: a rejection at Reserve, Permit or WaitOnPermit is a FitError on the
        one chosen node, its plugin the pod's rejector (so the pod waits for its events)."""
        if not status.is_rejected:
            return info, status
        diagnosis = Diagnosis()
        diagnosis.add_status(host, status)
        plugins = frozenset(diagnosis.unschedulable_plugins)
        info = replace(info, unschedulable_plugins=plugins, pending_plugins=frozenset())
        return info, Status(status.code, (fit_error_message(1, diagnosis),), status.plugin)

    def _finish_binding(self, outcome: BindingOutcome) -> None:
        job = outcome.job
        fwk = self.frameworks[job.profile]
        status = outcome.status
        if status.is_success:
            self.cache.finish_binding(job.pod)
            self.metrics.observe_pod_scheduled(job.info.attempts)
            return
        forgotten = self._undo(fwk, job.state, job.pod, job.node_name)
        info = job.info
        if job.waiting and status.plugin in {pl.name for pl in fwk.permit}:
            info, status = self._rejected_on_node(info, job.node_name, status)
        original = self.informer.pods.get(job.pod.key) or replace(job.pod, node_name="")
        # Forgetting an assumed pod frees its node like a deleted pod (upstream
        # handleBindingCycleError); a rejected pod itself stays unschedulable.
        if forgotten and not status.is_rejected:
            self.queue.move_all_to_active_or_backoff_queue(EVENT_ASSIGNED_POD_DELETE)
        self.handle_scheduling_failure(fwk, original, info, job.scheduling_cycle, status, "")
        if forgotten and status.is_rejected:
            key = job.pod.key
            self.queue.move_all_to_active_or_backoff_queue(
                EVENT_ASSIGNED_POD_DELETE, lambda i: i.pod_key != key
            )

    def _on_fit_error(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        info: QueuedPodInfo,
        cycle: int,
        fit: FitError,
    ) -> None:
        diagnosis = fit.diagnosis
        nominated_node = ""
        if fwk.post_filter:
            post, status = fwk.run_post_filter(state, pod, diagnosis.node_to_status)
            if status.reasons:
                diagnosis.post_filter_msg = status.message()
            if post is not None and status.is_success and post.nominated_node_name:
                nominated_node = post.nominated_node_name
                self.stats.on_preempted(list(post.victims), pod.key)
                self.metrics.observe_preemption(len(post.victims))
        info = replace(
            info,
            unschedulable_plugins=frozenset(diagnosis.unschedulable_plugins),
            pending_plugins=frozenset(diagnosis.pending_plugins),
        )
        self.handle_scheduling_failure(
            fwk, pod, info, cycle, Status(Code.UNSCHEDULABLE, (str(fit),)), nominated_node
        )

    def handle_scheduling_failure(
        self,
        fwk: Framework,
        pod: Pod,
        info: QueuedPodInfo,
        cycle: int,
        status: Status,
        nominated_node: str,
    ) -> None:
        """upstream handleSchedulingFailure: back to the queue with the pod's cycle, the
        nomination recorded, a FailedScheduling event and the PodScheduled condition."""
        self.stats.failed_attempts += 1
        if status.code == Code.ERROR:
            self.stats.errors += 1
            info = replace(info, unschedulable_plugins=frozenset(), pending_plugins=frozenset())
        current = self.informer.pods.get(pod.key)
        if current is None or current.node_name:
            # Deleted meanwhile, or bound by someone else: nothing to requeue.
            self.queue.done(pod.key)
        else:
            self.queue.add_unschedulable_if_not_present(
                replace(
                    info,
                    priority=current.priority,
                    nominated_node_name=nominated_node or info.nominated_node_name,
                ),
                cycle,
            )
        if nominated_node:
            self._set_nominated(pod, nominated_node)
            self.queue.nominator.add_nominated_pod(pod.key, nominated_node, pod.priority)
        message = status.message()
        reason = "Unschedulable" if status.is_rejected else "SchedulerError"
        try:
            self.store.record_event("Pod", pod.key, "FailedScheduling", message, type="Warning")
            self.store.update_pod_status(
                pod.key,
                condition={
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": reason,
                    "message": message,
                },
                nominated_node_name=nominated_node if nominated_node else None,
                pod_uid=pod.uid or None,
            )
        except ClusterSchedError as exc:
            log.warning("could not record the failure of %s: %s", pod.key, exc)
