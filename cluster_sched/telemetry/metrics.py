"""Prometheus metrics with upstream kube-scheduler's names, labels and buckets.

Names, label sets, help texts and bucket layouts follow upstream's
``pkg/scheduler/metrics/metrics.go`` (subsystem ``scheduler``; constants in
``metric_names``), so dashboards and alerts written for kube-scheduler read ours
unchanged:

==============================================================  =======================================
metric                                                           buckets / kind
==============================================================  =======================================
scheduler_schedule_attempts_total{result,profile}                counter
scheduler_scheduling_attempt_duration_seconds{result,profile}    exponential(0.001, 2, 15)
scheduler_scheduling_algorithm_duration_seconds                  exponential(0.001, 2, 15)
scheduler_pending_pods{queue}                                    gauge: active, backoff, unschedulable, gated
scheduler_framework_extension_point_duration_seconds             exponential(0.0001, 2, 12)
    {extension_point,status,profile}
scheduler_plugin_execution_duration_seconds                      exponential(0.00001, 1.5, 20), 10 % of cycles
    {plugin,extension_point,status}
scheduler_plugin_evaluation_total{plugin,extension_point,profile} counter (PreFilter, Filter, PreScore, Score)
scheduler_preemption_attempts_total                              counter, every DefaultPreemption PostFilter run
scheduler_preemption_victims                                     exponential(1, 2, 7)
scheduler_queue_incoming_pods_total{queue,event}                 counter
scheduler_pod_scheduling_attempts                                exponential(1, 2, 5)
scheduler_pod_scheduling_sli_duration_seconds{attempts}          exponential(0.01, 2, 20)
scheduler_permit_wait_duration_seconds{result}                   exponential(0.001, 2, 15)
scheduler_event_handling_duration_seconds{event}                 exponential(0.0001, 2, 12)
scheduler_unschedulable_pods{plugin,profile}                     gauge
scheduler_scheduler_cache_size{type}                             gauge: nodes, pods, assumed_pods
scheduler_inflight_events{event}                                 gauge
==============================================================  =======================================

``scheduler_scheduler_cache_size`` is upstream's exact name (its Name field repeats the
subsystem). The four gauges that describe the scheduler's state (pending pods,
unschedulable pods, cache size, in-flight events) are read when ``/metrics`` is scraped,
from the provider ``watch_state`` registers, rather than kept up to date on the hot
path; without a provider, ``set_pending_all`` feeds pending pods.

Each ``Metrics`` owns its own ``CollectorRegistry`` (never the process-global one), so
two schedulers in one test process do not collide and ``/metrics`` shows only ours.
``Metrics.disabled()`` returns an instance whose methods do nothing, for runs that
serve no metrics: the hot path calls the same methods either way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client import start_http_server as _prom_start_http_server

from cluster_sched.telemetry.metric_names import (
    CACHE_ASSUMED_PODS,
    CACHE_NODES,
    CACHE_PODS,
    EVENT_BACKOFF_COMPLETE,
    EVENT_FORCE_ACTIVATE,
    EVENT_HANDLING_BUCKETS,
    EVENT_POD_ADD,
    EVENT_POD_POPPED,
    EVENT_POD_UPDATE,
    EVENT_SCHEDULE_ATTEMPT_FAILURE,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    EXTENSION_POINT_BUCKETS,
    EXTENSION_POINTS,
    LATENCY_BUCKETS,
    MAX_ATTEMPTS_LABEL,
    PENDING_QUEUES,
    PERMIT_WAIT_BUCKETS,
    PLUGIN_BUCKETS,
    PLUGIN_METRICS_SAMPLE_PERCENT,
    POD_ATTEMPTS_BUCKETS,
    QUEUE_ACTIVE,
    QUEUE_BACKOFF,
    QUEUE_GATED,
    QUEUE_UNSCHEDULABLE,
    RESULT_ERROR,
    RESULT_SCHEDULED,
    RESULT_UNSCHEDULABLE,
    SLI_BUCKETS,
    SUBSYSTEM,
    VICTIM_BUCKETS,
    exponential_buckets,
)
from cluster_sched.telemetry.state_collector import SchedulerState, StateCollector

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

__all__ = [
    "CACHE_ASSUMED_PODS",
    "CACHE_NODES",
    "CACHE_PODS",
    "EVENT_BACKOFF_COMPLETE",
    "EVENT_FORCE_ACTIVATE",
    "EVENT_POD_ADD",
    "EVENT_POD_POPPED",
    "EVENT_POD_UPDATE",
    "EVENT_SCHEDULE_ATTEMPT_FAILURE",
    "EVENT_UNSCHEDULABLE_TIMEOUT",
    "EXTENSION_POINTS",
    "EXTENSION_POINT_BUCKETS",
    "LATENCY_BUCKETS",
    "PENDING_QUEUES",
    "PLUGIN_BUCKETS",
    "PLUGIN_METRICS_SAMPLE_PERCENT",
    "POD_ATTEMPTS_BUCKETS",
    "QUEUE_ACTIVE",
    "QUEUE_BACKOFF",
    "QUEUE_GATED",
    "QUEUE_UNSCHEDULABLE",
    "RESULT_ERROR",
    "RESULT_SCHEDULED",
    "RESULT_UNSCHEDULABLE",
    "SLI_BUCKETS",
    "VICTIM_BUCKETS",
    "Metrics",
    "SchedulerState",
    "attempts_label",
    "exponential_buckets",
]

log = logging.getLogger(__name__)

# Upstream exposes no ``*_created`` series; prometheus_client adds them unless told not
# to. The switch is process-wide, which is fine: this module is the process's only user.
disable_created_metrics()


def attempts_label(attempts: int) -> str:
    """The SLI's ``attempts`` label: the count, capped at ``15+`` (upstream getAttemptsLabel)."""
    return f"{MAX_ATTEMPTS_LABEL}+" if attempts >= MAX_ATTEMPTS_LABEL else str(attempts)


class Metrics:
    """The scheduler's Prometheus metrics in a private registry; one method per event."""

    enabled: bool = True

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        r = self.registry

        def histogram(name: str, doc: str, labels: list[str], buckets: Any) -> Histogram:
            return Histogram(name, doc, labels, subsystem=SUBSYSTEM, buckets=buckets, registry=r)

        def counter(name: str, doc: str, labels: list[str]) -> Counter:
            return Counter(name, doc, labels, subsystem=SUBSYSTEM, registry=r)

        self._attempts = counter(
            "schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod "
            "could not be scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"],
        )
        self._attempt_duration = histogram(
            "scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
            LATENCY_BUCKETS,
        )
        self._algorithm_duration = histogram(
            "scheduling_algorithm_duration_seconds",
            "Scheduling algorithm latency in seconds",
            [],
            LATENCY_BUCKETS,
        )
        self._event_handling = histogram(
            "event_handling_duration_seconds",
            "Event handling latency in seconds.",
            ["event"],
            EVENT_HANDLING_BUCKETS,
        )
        self._extension_point = histogram(
            "framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"],
            EXTENSION_POINT_BUCKETS,
        )
        self._plugin_duration = histogram(
            "plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ["plugin", "extension_point", "status"],
            PLUGIN_BUCKETS,
        )
        self._plugin_evaluation = counter(
            "plugin_evaluation",
            "Number of attempts to schedule pods by each plugin and the extension point "
            "(available only in PreFilter, Filter, PreScore, and Score).",
            ["plugin", "extension_point", "profile"],
        )
        self._preemption_attempts = counter(
            "preemption_attempts", "Total preemption attempts in the cluster till now", []
        )
        self._preemption_victims = histogram(
            "preemption_victims", "Number of selected preemption victims", [], VICTIM_BUCKETS
        )
        self._incoming = counter(
            "queue_incoming_pods",
            "Number of pods added to scheduling queues by event and queue type.",
            ["queue", "event"],
        )
        self._pod_attempts = histogram(
            "pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            [],
            POD_ATTEMPTS_BUCKETS,
        )
        self._sli = histogram(
            "pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the "
            "scheduling queue and might involve multiple scheduling attempts.",
            ["attempts"],
            SLI_BUCKETS,
        )
        self._permit_wait = histogram(
            "permit_wait_duration_seconds",
            "Duration of waiting on permit.",
            ["result"],
            PERMIT_WAIT_BUCKETS,
        )
        self._ep_children: dict[tuple[str, str, str], Any] = {}
        self._evaluation_children: dict[tuple[str, str, str], Any] = {}
        self._state = StateCollector()
        r.register(self._state)
        self._batch_attempts = counter(
            "batch_attempts",
            "Counts of results when we attempt to use batching.",
            ["profile", "result"],
        )
        self._batch_flushed = counter(
            "batch_cache_flushed", "Counts of cache flushes by reason.", ["profile", "reason"]
        )
        self._store_unavailable = Gauge(
            "cluster_sched_store_unavailable",
            "1 while the coordinator waits for an unreachable Redis store, else 0.",
            registry=r,
        )

    @classmethod
    def disabled(cls) -> Metrics:
        """A ``Metrics`` whose every method is a no-op and which registers nothing."""
        return _DISABLED

    # --- scheduling attempts -----------------------------------------------------------

    def observe_attempt(self, result: str, profile: str, seconds: float) -> None:
        """One scheduling attempt ended with ``result`` (scheduled/unschedulable/error)."""
        self._attempts.labels(result=result, profile=profile).inc()
        self._attempt_duration.labels(result=result, profile=profile).observe(seconds)

    def observe_algorithm(self, seconds: float) -> None:
        """Time from snapshot to a selected host (Filter + Score), without binding."""
        self._algorithm_duration.observe(seconds)

    def observe_extension_point(
        self, extension_point: str, status: str, profile: str, seconds: float
    ) -> None:
        """All plugins of one extension point ran in ``seconds`` and ended with ``status``.

        ``status`` is the framework Status code name (Success, Unschedulable, Error, ...).
        """
        key = (extension_point, status, profile)
        child = self._ep_children.get(key)
        if child is None:  # labels() costs microseconds: keep each series' child
            child = self._ep_children[key] = self._extension_point.labels(*key)
        child.observe(seconds)

    def observe_plugin(
        self, plugin: str, extension_point: str, status: str, seconds: float
    ) -> None:
        """One plugin ran at one extension point (called for sampled cycles only)."""
        self._plugin_duration.labels(
            plugin=plugin, extension_point=extension_point, status=status
        ).observe(seconds)

    def plugin_evaluation(self, plugin: str, extension_point: str, profile: str) -> Any:
        """The ``plugin_evaluation_total`` child of one plugin at one point (``.inc(n)``);
        callers keep it, as upstream caches the metric stream per instrumented plugin."""
        return self._plugin_evaluation.labels(
            plugin=plugin, extension_point=extension_point, profile=profile
        )

    def count_evaluations(self, extension_point: str, profile: str, plugins: Iterable[str]) -> None:
        """One ``plugin_evaluation_total`` for each of ``plugins`` at ``extension_point``
        (each series' child kept, as ``observe_extension_point`` keeps its own)."""
        for plugin in plugins:
            key = (plugin, extension_point, profile)
            child = self._evaluation_children.get(key)
            if child is None:
                child = self._evaluation_children[key] = self.plugin_evaluation(*key)
            child.inc()

    def observe_pod_scheduled(self, attempts: int, sli_seconds: float | None = None) -> None:
        """A pod got bound after ``attempts`` attempts, ``sli_seconds`` after it was first
        queued (the SLI; None when unknown)."""
        self._pod_attempts.observe(attempts)
        if sli_seconds is not None:
            self._sli.labels(attempts=attempts_label(attempts)).observe(max(sli_seconds, 0.0))

    def observe_permit_wait(self, result: str, seconds: float) -> None:
        """A pod waited on Permit for ``seconds``; ``result`` is the Status code name."""
        self._permit_wait.labels(result=result).observe(seconds)

    def observe_event_handling(self, event: str, seconds: float) -> None:
        """One watch event (``NodeAdd``, ``AssignedPodDelete``, ...) was handled."""
        self._event_handling.labels(event=event).observe(seconds)

    # --- preemption --------------------------------------------------------------------

    def inc_preemption_attempts(self) -> None:
        """A PostFilter (preemption) plugin ran, whatever it found (upstream's deferred Inc)."""
        self._preemption_attempts.inc()

    def observe_preemption_victims(self, victims: int) -> None:
        """Preemption chose a candidate with ``victims`` pods."""
        self._preemption_victims.observe(victims)

    def observe_preemption(self, victims: int) -> None:
        """One preemption attempt that selected ``victims`` pods (both metrics at once)."""
        self.inc_preemption_attempts()
        self.observe_preemption_victims(victims)

    # --- queue and state ---------------------------------------------------------------

    def set_pending(self, queue: str, count: int) -> None:
        """Set the pending-pods gauge of one queue (active, backoff, unschedulable, gated)."""
        self._state.pending[queue] = count

    def set_pending_all(self, active: int, backoff: int, unschedulable: int, gated: int) -> None:
        """Set all four pending-pods gauges from one queue snapshot (used while no state
        provider is registered)."""
        p = self._state.pending
        p[QUEUE_ACTIVE], p[QUEUE_BACKOFF] = active, backoff
        p[QUEUE_UNSCHEDULABLE], p[QUEUE_GATED] = unschedulable, gated

    def inc_incoming(self, queue: str, event: str, count: int = 1) -> None:
        """``count`` pods entered ``queue`` because of ``event`` (PodAdd, BackoffComplete, ...)."""
        self._incoming.labels(queue=queue, event=event).inc(count)

    def watch_state(self, provider: Callable[[], SchedulerState] | None) -> None:
        """Read the state gauges from ``provider`` at every scrape (None: stop)."""
        self._state.provider = provider
        self._state.frozen = None

    def freeze_state(self) -> None:
        """Read the state once more and keep serving that reading: for a server that
        outlives the scheduler (``run --metrics-linger``)."""
        self._state.frozen = self._state.read()

    def inc_batch(self, kind: str, profile: str, label: str) -> None:
        """OpportunisticBatching: ``kind`` "attempt" counts
        scheduler_batch_attempts_total{result}, "flush"
        scheduler_batch_cache_flushed_total{reason}."""
        if kind == "attempt":
            self._batch_attempts.labels(profile=profile, result=label).inc()
        else:
            self._batch_flushed.labels(profile=profile, reason=label).inc()

    def set_store_unavailable(self, down: bool) -> None:
        """Redis went away (True) or answers again (False)."""
        self._store_unavailable.set(1 if down else 0)

    # --- exposition --------------------------------------------------------------------

    def exposition(self) -> bytes:
        """The registry in Prometheus text format, as ``/metrics`` serves it."""
        return generate_latest(self.registry)

    def start_http_server(self, port: int, addr: str = "127.0.0.1") -> tuple[WSGIServer, int]:
        """Serve ``/metrics`` from a daemon thread; port 0 picks a free one. Loopback
        unless ``addr`` says otherwise: metrics name pods, nodes and plugins.

        Returns the server (call ``shutdown()`` then ``server_close()`` to stop it) and
        the port actually bound.
        """
        server, _thread = _prom_start_http_server(port, addr=addr, registry=self.registry)
        return server, int(server.server_port)


class _NoChild:
    """What a disabled ``plugin_evaluation`` returns: ``inc`` does nothing."""

    def inc(self, amount: float = 1) -> None:
        return None


class _DisabledMetrics(Metrics):
    """Metrics switched off: no registry entries, every method returns at once."""

    enabled = False

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)

    def plugin_evaluation(self, plugin: str, extension_point: str, profile: str) -> Any:
        return _NO_CHILD

    def count_evaluations(self, extension_point: str, profile: str, plugins: Iterable[str]) -> None:
        return None

    def inc_batch(self, kind: str, profile: str, label: str) -> None:
        return None

    def set_store_unavailable(self, down: bool) -> None:
        return None


def _noop(self: Metrics, *args: Any, **kwargs: Any) -> None:
    return None


for _name in (
    "observe_attempt",
    "observe_algorithm",
    "observe_extension_point",
    "observe_plugin",
    "observe_pod_scheduled",
    "observe_permit_wait",
    "observe_event_handling",
    "inc_preemption_attempts",
    "observe_preemption_victims",
    "observe_preemption",
    "set_pending",
    "set_pending_all",
    "inc_incoming",
    "watch_state",
    "freeze_state",
):
    setattr(_DisabledMetrics, _name, _noop)

_NO_CHILD: Final = _NoChild()
_DISABLED: Final = _DisabledMetrics()
