"""Prometheus metrics with upstream kube-scheduler's names, labels and buckets.

Names, label sets, help texts and bucket layouts follow upstream's
``pkg/scheduler/metrics/metrics.go`` (subsystem ``scheduler``), so dashboards and alerts
written for kube-scheduler read ours unchanged:

==============================================================  =======================================
metric                                                           buckets
==============================================================  =======================================
scheduler_schedule_attempts_total{result,profile}                counter
scheduler_scheduling_attempt_duration_seconds{result,profile}    exponential(0.001, 2, 15)
scheduler_scheduling_algorithm_duration_seconds                  exponential(0.001, 2, 15)
scheduler_pending_pods{queue}                                    gauge: active, backoff, unschedulable, gated
scheduler_framework_extension_point_duration_seconds             exponential(0.0001, 2, 12)
    {extension_point,status,profile}
scheduler_preemption_attempts_total                              counter
scheduler_preemption_victims                                     exponential(1, 2, 7)
scheduler_queue_incoming_pods_total{queue,event}                 counter
scheduler_pod_scheduling_attempts                                exponential(1, 2, 5)
==============================================================  =======================================

Each ``Metrics`` owns its own ``CollectorRegistry`` (never the process-global one), so
two schedulers in one test process do not collide and ``/metrics`` shows only ours.
``Metrics.disabled()`` returns an instance whose methods do nothing, for runs that
serve no metrics: the hot path calls the same methods either way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client import start_http_server as _prom_start_http_server

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

__all__ = [
    "EVENT_BACKOFF_COMPLETE",
    "EVENT_FORCE_ACTIVATE",
    "EVENT_POD_ADD",
    "EVENT_POD_UPDATE",
    "EVENT_SCHEDULE_ATTEMPT_FAILURE",
    "EVENT_UNSCHEDULABLE_TIMEOUT",
    "EXTENSION_POINTS",
    "EXTENSION_POINT_BUCKETS",
    "LATENCY_BUCKETS",
    "PENDING_QUEUES",
    "POD_ATTEMPTS_BUCKETS",
    "QUEUE_ACTIVE",
    "QUEUE_BACKOFF",
    "QUEUE_GATED",
    "QUEUE_UNSCHEDULABLE",
    "RESULT_ERROR",
    "RESULT_SCHEDULED",
    "RESULT_UNSCHEDULABLE",
    "VICTIM_BUCKETS",
    "Metrics",
    "exponential_buckets",
]

SUBSYSTEM: Final = "scheduler"

# Upstream exposes no ``*_created`` series; prometheus_client adds them unless told not
# to. The switch is process-wide, which is fine: this module is the process's only user.
disable_created_metrics()


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Upstream's ``metrics.ExponentialBuckets``: ``count`` bounds from ``start``, each ``factor`` times the last."""
    if count < 1 or start <= 0 or factor <= 1:
        raise ValueError(f"bad exponential buckets start={start} factor={factor} count={count}")
    return tuple(start * factor**i for i in range(count))


LATENCY_BUCKETS: Final = exponential_buckets(0.001, 2, 15)
"""Attempt and algorithm latency: 1 ms … ~16 s."""
EXTENSION_POINT_BUCKETS: Final = exponential_buckets(0.0001, 2, 12)
"""Extension-point latency: 0.1 ms … ~200 ms."""
VICTIM_BUCKETS: Final = exponential_buckets(1, 2, 7)
"""Preemption victims per attempt: 1 … 64."""
POD_ATTEMPTS_BUCKETS: Final = exponential_buckets(1, 2, 5)
"""Attempts until a pod is scheduled: 1 … 16."""

RESULT_SCHEDULED: Final = "scheduled"
RESULT_UNSCHEDULABLE: Final = "unschedulable"
RESULT_ERROR: Final = "error"

QUEUE_ACTIVE: Final = "active"
QUEUE_BACKOFF: Final = "backoff"
QUEUE_UNSCHEDULABLE: Final = "unschedulable"
QUEUE_GATED: Final = "gated"
PENDING_QUEUES: Final = (QUEUE_ACTIVE, QUEUE_BACKOFF, QUEUE_UNSCHEDULABLE, QUEUE_GATED)

EVENT_POD_ADD: Final = "PodAdd"
EVENT_POD_UPDATE: Final = "PodUpdate"
EVENT_SCHEDULE_ATTEMPT_FAILURE: Final = "ScheduleAttemptFailure"
EVENT_BACKOFF_COMPLETE: Final = "BackoffComplete"
EVENT_UNSCHEDULABLE_TIMEOUT: Final = "UnschedulableTimeout"
EVENT_FORCE_ACTIVATE: Final = "ForceActivate"
"""Queue-move events as upstream labels them; cluster events use their own labels (NodeAdd, ...)."""

EXTENSION_POINTS: Final = (
    "PreFilter",
    "Filter",
    "PreFilterExtensionAddPod",
    "PreFilterExtensionRemovePod",
    "PostFilter",
    "PreScore",
    "Score",
    "ScoreExtensionNormalize",
    "PreBind",
    "Bind",
    "PostBind",
    "Reserve",
    "Unreserve",
    "Permit",
)
"""Upstream's values of the ``extension_point`` label."""


class Metrics:
    """The scheduler's Prometheus metrics in a private registry; one method per event."""

    enabled: bool = True

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        r = self.registry
        self._attempts = Counter(
            "schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod "
            "could not be scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"],
            subsystem=SUBSYSTEM,
            registry=r,
        )
        self._attempt_duration = Histogram(
            "scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
            subsystem=SUBSYSTEM,
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self._algorithm_duration = Histogram(
            "scheduling_algorithm_duration_seconds",
            "Scheduling algorithm latency in seconds",
            subsystem=SUBSYSTEM,
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self._pending = Gauge(
            "pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in "
            "activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number "
            "of pods in unschedulablePods that the scheduler attempted to schedule and failed; "
            "'gated' is the number of unschedulable pods that the scheduler never attempted to "
            "schedule because they are gated.",
            ["queue"],
            subsystem=SUBSYSTEM,
            registry=r,
        )
        self._extension_point = Histogram(
            "framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"],
            subsystem=SUBSYSTEM,
            buckets=EXTENSION_POINT_BUCKETS,
            registry=r,
        )
        self._preemption_attempts = Counter(
            "preemption_attempts",
            "Total preemption attempts in the cluster till now",
            subsystem=SUBSYSTEM,
            registry=r,
        )
        self._preemption_victims = Histogram(
            "preemption_victims",
            "Number of selected preemption victims",
            subsystem=SUBSYSTEM,
            buckets=VICTIM_BUCKETS,
            registry=r,
        )
        self._incoming = Counter(
            "queue_incoming_pods",
            "Number of pods added to scheduling queues by event and queue type.",
            ["queue", "event"],
            subsystem=SUBSYSTEM,
            registry=r,
        )
        self._pod_attempts = Histogram(
            "pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            subsystem=SUBSYSTEM,
            buckets=POD_ATTEMPTS_BUCKETS,
            registry=r,
        )
        self._store_unavailable = Gauge(
            "cluster_sched_store_unavailable",
            "1 while the coordinator waits for an unreachable Redis store, else 0.",
            registry=r,
        )
        # Upstream shows every queue from the start, zero included.
        for queue in PENDING_QUEUES:
            self._pending.labels(queue=queue).set(0)

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
        self._extension_point.labels(
            extension_point=extension_point, status=status, profile=profile
        ).observe(seconds)

    def observe_pod_scheduled(self, attempts: int) -> None:
        """A pod got bound after ``attempts`` scheduling attempts."""
        self._pod_attempts.observe(attempts)

    # --- preemption --------------------------------------------------------------------

    def observe_preemption(self, victims: int) -> None:
        """One preemption attempt (PostFilter) that selected ``victims`` pods."""
        self._preemption_attempts.inc()
        self._preemption_victims.observe(victims)

    # --- queue -------------------------------------------------------------------------

    def set_pending(self, queue: str, count: int) -> None:
        """Set the pending-pods gauge of one queue (active, backoff, unschedulable, gated)."""
        self._pending.labels(queue=queue).set(count)

    def set_pending_all(self, active: int, backoff: int, unschedulable: int, gated: int) -> None:
        """Set all four pending-pods gauges from one queue snapshot."""
        self._pending.labels(queue=QUEUE_ACTIVE).set(active)
        self._pending.labels(queue=QUEUE_BACKOFF).set(backoff)
        self._pending.labels(queue=QUEUE_UNSCHEDULABLE).set(unschedulable)
        self._pending.labels(queue=QUEUE_GATED).set(gated)

    def inc_incoming(self, queue: str, event: str, count: int = 1) -> None:
        """``count`` pods entered ``queue`` because of ``event`` (PodAdd, BackoffComplete, ...)."""
        self._incoming.labels(queue=queue, event=event).inc(count)

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


class _DisabledMetrics(Metrics):
    """Metrics switched off: no registry entries, every method returns at once."""

    enabled = False

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)

    def observe_attempt(self, result: str, profile: str, seconds: float) -> None:
        return None

    def observe_algorithm(self, seconds: float) -> None:
        return None

    def observe_extension_point(
        self, extension_point: str, status: str, profile: str, seconds: float
    ) -> None:
        return None

    def observe_pod_scheduled(self, attempts: int) -> None:
        return None

    def observe_preemption(self, victims: int) -> None:
        return None

    def set_pending(self, queue: str, count: int) -> None:
        return None

    def set_pending_all(self, active: int, backoff: int, unschedulable: int, gated: int) -> None:
        return None

    def inc_incoming(self, queue: str, event: str, count: int = 1) -> None:
        return None

    def set_store_unavailable(self, down: bool) -> None:
        return None


_DISABLED: Final = _DisabledMetrics()
