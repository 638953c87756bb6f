"""One scheduling cycle for one popped pod, and the end of its binding cycle (upstream
schedule_one.go: scheduleOne, schedulingCycle, handleBindingCycleError).

The cycle runs on the coordinator's thread: PreFilter → Filter → PostFilter → Score →
select host (``algorithm.Scheduler``), then assume → Reserve → Permit, and hands the
binding cycle to the binding executor without waiting. Binding outcomes come back to
``finish_binding`` on the same thread, so the cache stays single-threaded.

NominatedNodeNameForExpectation: a pod whose binding will wait on Permit or do PreBind
work (PreBindPreFlight) gets status.nominatedNodeName = its host in the store before it
waits or PreBind runs, telling other components where it is going (a waiting pod here,
the others by their binding cycle: ``BindingJob.nominate``); the bind clears it (the
store's bind, as the API server's), a failed binding cycle clears it here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cluster_sched.api.evolve import evolve
from cluster_sched.api.objects import Pod
from cluster_sched.cache.cache import Cache
from cluster_sched.clock import Clock
from cluster_sched.errors import ClusterSchedError, SchedulerError
from cluster_sched.features import NOMINATED_NODE_NAME_FOR_EXPECTATION
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.diagnosis import Diagnosis, FitError, fit_error_message
from cluster_sched.framework.events import EVENT_ASSIGNED_POD_DELETE
from cluster_sched.framework.instrumentation import (
    RECORD_PLUGIN_METRICS,
    draw_plugin_metrics_sample,
)
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.status import SKIP, SUCCESS, Code, Status
from cluster_sched.queue.scheduling_queue import SchedulingQueue
from cluster_sched.queue.types import QueuedPodInfo
from cluster_sched.scheduler import batching
from cluster_sched.scheduler.algorithm import Scheduler
from cluster_sched.scheduler.attempt import PreFilterError
from cluster_sched.scheduler.binding import BindingExecutor, BindingJob, BindingOutcome
from cluster_sched.scheduler.failure import FailureHandler
from cluster_sched.scheduler.nodesource import NodeSource
from cluster_sched.scheduler.stats import RunStats
from cluster_sched.telemetry.metrics import Metrics
from cluster_sched.telemetry.spans import (
    ATTR_CYCLE,
    ATTR_POD_UID,
    ATTR_PROFILE,
    ATTR_RESULT,
    ATTR_SELECTED_NODE,
    RESULT_ERROR,
    RESULT_SCHEDULED,
    RESULT_UNSCHEDULABLE,
    SCHEDULING_CYCLE,
)
from cluster_sched.telemetry.tracing import Tracing

log = logging.getLogger(__name__)

__all__ = ["SchedulingCycle"]


class SchedulingCycle:
    """``schedule_one`` and ``finish_binding`` over the scheduler's parts.

    ``pods`` is the informer's view of pods; ``refresh`` reads pending watch events (a
    pod popped before our watch saw it); ``done`` acknowledges a pod to the queue (the
    coordinator batches those)."""

    def __init__(
        self,
        *,
        frameworks: Mapping[str, Framework],
        cache: Cache,
        queue: SchedulingQueue,
        algorithm: Scheduler,
        source: NodeSource,
        binder: BindingExecutor,
        failures: FailureHandler,
        pods: Mapping[str, Pod],
        refresh: Callable[[], Any],
        done: Callable[[str], None],
        stats: RunStats,
        clock: Clock,
        tracing: Tracing,
        metrics: Metrics,
    ) -> None:
        self.frameworks = frameworks
        self.cache = cache
        self.queue = queue
        self.algorithm = algorithm
        self.source = source
        self.binder = binder
        self.failures = failures
        self.pods = pods
        self.refresh = refresh
        self.done = done
        self.stats = stats
        self.clock = clock
        self.tracing = tracing
        self.metrics = metrics
        self._cycle_span: Any = None
        #: pods whose nominatedNodeName was set for their binding (NNN for expectation)
        self._expecting: set[str] = set()
        #: plugin-metrics sampling decisions drawn for this batch's pods that a
        #: whole-batch run did not take: their own cycles use them (``draw_sample``)
        self.samples: dict[str, bool] = {}
        #: binding jobs kept for submission together (``hold_bindings``), else None
        self._held: list[BindingJob] | None = None

    def prefetch(self, batch: Sequence[tuple[QueuedPodInfo, int]]) -> None:
        """Ask the shards the batch's first Filter questions in one call each, when
        attempts go to them (``shards.prefetch``): pods still commit one at a time."""
        start = getattr(self.source, "prefetch_batch", None)
        reduce = getattr(self.source, "reduce_batch", None)
        if start is None:
            return
        pods: list[Pod] = []
        for info, _ in batch:
            pod = self.pods.get(info.pod_key)
            if pod is None or pod.node_name or pod.meta.deletion_timestamp is not None:
                break
            pods.append(pod)
        nominated = bool(self.queue.nominator.nominated_pods())
        if self.algorithm.fast is not None:
            # the compiled path's attempts: to the shards' reductions when the dispatch
            # rule says so (``shards.dispatch``), else on the replica
            if reduce is not None and not nominated:
                sent = reduce(
                    self.frameworks,
                    pods,
                    self.cache.snapshot,
                    self.algorithm.next_start_node_index,
                    self.algorithm.percentage_of_nodes_to_score,
                    len(batch),
                    self.algorithm.fast.pre_cycle,
                )
                if sent:
                    self._ask_ahead(len(batch))
            return
        start(
            self.frameworks,
            pods,
            self.cache.snapshot,
            self.algorithm.next_start_node_index,
            self.algorithm.percentage_of_nodes_to_score,
            nominated,
        )

    def _ask_ahead(self, size: int) -> None:
        """The next batch as a pop would now give it (activeQ's head, nothing popped),
        to the shards while this one is committed (``shards.pipeline``)."""
        ahead = getattr(getattr(self.source, "reduced", None), "send_ahead", None)
        peek = getattr(self.queue, "peek_active", None)
        if ahead is None or peek is None:
            return
        pods: list[Pod] = []
        for key in peek(size):
            pod = self.pods.get(key)
            if pod is None or pod.node_name or pod.meta.deletion_timestamp is not None:
                break
            pods.append(pod)
        assert self.algorithm.fast is not None
        ahead(
            self.frameworks,
            pods,
            self.cache.snapshot,
            self.algorithm.percentage_of_nodes_to_score,
            size,
            self.algorithm.fast.pre_cycle,
        )

    def end_batch(self) -> None:
        self.samples.clear()
        end = getattr(self.source, "end_batch", None)
        if end is not None:
            end()

    def draw_sample(self, fwk: Framework, state: CycleState, pod_key: str) -> bool:
        """Whether this attempt times every plugin (metrics on; upstream draws it at the
        cycle's start): a pod a whole-batch run drew for but did not take keeps that
        draw (``samples``), so each attempt is drawn once and 10 % stay 10 %."""
        if not fwk.metrics.enabled:
            return False
        kept = self.samples.pop(pod_key, None)
        if kept is None:
            return draw_plugin_metrics_sample(fwk, state)
        state.write(RECORD_PLUGIN_METRICS, kept)
        return kept

    def schedule_one(self, info: QueuedPodInfo, cycle: int) -> None:
        """One scheduling cycle for a popped pod (upstream scheduleOne's first half)."""
        self.activate_failed_preemptors()
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
        pod = self.pods.get(info.pod_key)
        if pod is None:
            # Added to the queue by another process before our watch saw it.
            self.refresh()
            pod = self.pods.get(info.pod_key)
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
        self.draw_sample(fwk, state, pod.key)
        if self._cycle_span is not None:
            self._cycle_span.set_attributes({ATTR_POD_UID: pod.uid, ATTR_PROFILE: fwk.profile_name})
        nominator = self.queue.nominator
        try:
            result = batching.schedule_pod(
                self.algorithm,
                fwk,
                state,
                pod,
                self.source.table,
                self.cache.snapshot,
                nominator.nominated_pods(),
                self.source,
                cycle=cycle,
                now=self.clock.now(),
            )
        except FitError as fit:
            self._on_fit_error(fwk, state, pod, info, cycle, fit)
            self._attempt_done(fwk, start, RESULT_UNSCHEDULABLE)
            return
        except (PreFilterError, SchedulerError) as exc:
            status = (
                exc.status if isinstance(exc, PreFilterError) else Status(Code.ERROR, (str(exc),))
            )
            self.failures.handle_scheduling_failure(fwk, pod, info, cycle, status, "")
            self._attempt_done(fwk, start, RESULT_ERROR)
            return
        self.metrics.observe_algorithm(time.perf_counter() - start)
        host = result.suggested_host
        assert host is not None
        self.commit(fwk, state, pod, info, cycle, start, host)

    def commit(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        info: QueuedPodInfo,
        cycle: int,
        start: float,
        host: str,
        assumed: Pod | None = None,
    ) -> bool:
        """The cycle once a host is selected: assume, Reserve, Permit, the binding job.
        True if the pod went to its binding cycle (Permit may have it wait); False after
        the failure handler took it (nothing of it stays assumed). ``assumed``: the pod
        on ``host`` already in the cache (a whole-batch run's ``Cache.assume_pods``)."""
        nominator = self.queue.nominator
        if assumed is None:
            assumed = evolve(pod, node_name=host)
            try:
                self.cache.assume_pod(assumed, host)
            except SchedulerError as exc:
                # e.g. an earlier incarnation of the pod (same name) is still assumed:
                # retry with backoff once its binding cycle ends (upstream: Error).
                self.failures.handle_scheduling_failure(
                    fwk, pod, info, cycle, Status(Code.ERROR, (str(exc),)), ""
                )
                self._attempt_done(fwk, start, RESULT_ERROR)
                return False
        s = fwk.run_reserve(state, assumed, host)
        if s.is_success:
            s = fwk.run_permit(state, assumed, host)
        waiting = s.code == Code.WAIT
        if not s.is_success and not waiting:
            self._undo(fwk, state, assumed, host)
            info, s = self._rejected_on_node(info, host, s)
            self.failures.handle_scheduling_failure(fwk, pod, info, cycle, s, "")
            self._attempt_done(
                fwk, start, RESULT_ERROR if s.code == Code.ERROR else RESULT_UNSCHEDULABLE
            )
            return False
        self.done(pod.key)
        if nominator.has_nomination(pod.key):
            nominator.delete_nominated_pod_if_exists(pod.key)
        if state.pods_to_activate:
            self.queue.activate(state.pods_to_activate)
        self._attempt_done(fwk, start, RESULT_SCHEDULED, host)
        nominate = fwk.handle.features.enabled(
            NOMINATED_NODE_NAME_FOR_EXPECTATION
        ) and self._nominate_for_expectation(fwk, state, assumed, host, waiting)
        carrier = self.tracing.carrier_of(self._cycle_span) if self._cycle_span is not None else {}
        job = BindingJob(
            assumed,
            host,
            fwk.profile_name,
            state,
            info,
            cycle,
            waiting=waiting,
            trace_carrier=carrier,
            nominate=nominate,
        )
        if self._held is not None and not waiting:
            self._held.append(job)
        else:
            self.release_bindings(hold=self._held is not None)
            self.binder.submit(job)
        return True

    def hold_bindings(self) -> None:
        """Keep the binding jobs of the next commits until ``release_bindings``: a
        whole-batch run hands its pods' binding cycles over together when it ends (one
        wake-up of the binder and one bind call for the run, instead of the first pod's
        alone while the others commit). Only when the bindings start changes: outcomes
        are read between batches either way. A pod parked by Permit is handed over at
        once, after the jobs held before it (their order kept)."""
        self._held = []

    def release_bindings(self, *, hold: bool = False) -> None:
        """Submit the held jobs in commit order; ``hold``: keep holding after."""
        held, self._held = self._held, ([] if hold else None)
        for job in held or ():
            self.binder.submit(job)

    def activate_failed_preemptors(self) -> None:
        """Preemptors whose async preemption failed go to activeQ (upstream's goroutine
        calls Activate), so the PreEnqueue gate never strands them."""
        fwk = next(iter(self.frameworks.values()), None)
        take = getattr(fwk.handle.preemption_executor, "take_failed", None) if fwk else None
        if take is not None:
            failed = take()
            if failed:
                self.queue.activate(failed)

    def _nominate_for_expectation(
        self, fwk: Framework, state: CycleState, pod: Pod, host: str, waiting: bool
    ) -> bool:
        """upstream bindingCycle's first step: set nominatedNodeName = host when
        WaitOnPermit or some PreBind plugin will do work (otherwise the pod is bound at
        once anyway). A pod that will wait on Permit gets it here, before it waits; for
        the others, True: their binding cycle writes it, before PreBind (``bind_jobs``,
        one round trip per batch of cycles). A failing preflight or write is logged,
        never fatal."""
        preflight = pre_bind_pre_flights(fwk, state, pod, host)
        if preflight.code == Code.ERROR or preflight.is_rejected:
            log.error("PreBindPreFlight failed for %s: %s", pod.key, preflight.message())
            return False
        if not waiting:
            return preflight.is_success
        try:
            self.failures.store.set_nominated_node_name(pod.key, host, pod.uid or None)
        except ClusterSchedError as exc:
            log.error("could not set the nominated node of %s in its binding: %s", pod.key, exc)
            return False
        self._expecting.add(pod.key)
        return False

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
        info = evolve(info, unschedulable_plugins=plugins, pending_plugins=frozenset())
        return info, Status(status.code, (fit_error_message(1, diagnosis),), status.plugin)

    def finish_binding(self, outcome: BindingOutcome) -> None:
        """A binding cycle ended: confirm the assumed pod, or Unreserve + Forget and
        requeue it (upstream handleBindingCycleError)."""
        job = outcome.job
        fwk = self.frameworks[job.profile]
        status = outcome.status
        expected = job.nominate or job.pod.key in self._expecting
        self._expecting.discard(job.pod.key)
        if status.is_success:
            self.cache.finish_binding(job.pod)
            first = job.info.initial_attempt_timestamp
            sli = None if first is None else self.clock.now() - first
            self.metrics.observe_pod_scheduled(job.info.attempts, sli)
            return
        forgotten = self._undo(fwk, job.state, job.pod, job.node_name)
        info = job.info
        if job.waiting and status.plugin in {pl.name for pl in fwk.permit}:
            info, status = self._rejected_on_node(info, job.node_name, status)
        original = self.pods.get(job.pod.key) or evolve(job.pod, node_name="")
        # Forgetting an assumed pod frees its node like a deleted pod (upstream
        # handleBindingCycleError); a rejected pod itself stays unschedulable.
        if forgotten and not status.is_rejected:
            self.queue.move_all_to_active_or_backoff_queue(EVENT_ASSIGNED_POD_DELETE)
        self.failures.handle_scheduling_failure(
            fwk, original, info, job.scheduling_cycle, status, ""
        )
        if expected:
            # upstream: the failure handler's clearNominatedNode
            try:
                self.failures.store.set_nominated_node_name(job.pod.key, "", job.pod.uid or None)
            except ClusterSchedError as exc:
                log.warning("could not clear the nominated node of %s: %s", job.pod.key, exc)
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
        """PostFilter (preemption) for an unschedulable pod, then the failure handler with
        the plugins that rejected it (what its requeue waits for)."""
        diagnosis = fit.diagnosis
        nominated_node = ""
        if fwk.post_filter:
            post, status = fwk.run_post_filter(state, pod, diagnosis.node_to_status)
            if status.reasons:
                diagnosis.post_filter_msg = status.message()
            if post is not None and status.is_success and post.nominated_node_name:
                nominated_node = post.nominated_node_name
                self.stats.on_preempted(list(post.victims), pod.key)
        info = evolve(
            info,
            unschedulable_plugins=frozenset(diagnosis.unschedulable_plugins),
            pending_plugins=frozenset(diagnosis.pending_plugins),
        )
        self.failures.handle_scheduling_failure(
            fwk, pod, info, cycle, Status(Code.UNSCHEDULABLE, (str(fit),)), nominated_node
        )


def pre_bind_pre_flights(fwk: Framework, state: CycleState, pod: Pod, node_name: str) -> Status:
    """upstream RunPreBindPreFlights: Success if some PreBind plugin will do work, Skip
    if every one Skips; a plugin without a preflight counts as doing work."""
    result = SKIP
    for pl in fwk.pre_bind:
        fn = getattr(pl, "pre_bind_pre_flight", None)
        s = fn(state, pod, node_name) if fn is not None else SUCCESS
        if s is None or s.code == Code.SUCCESS:
            result = SUCCESS
        elif s.code != Code.SKIP:
            return s.with_plugin(pl.name)
    return result
