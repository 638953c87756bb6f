"""Names, label values and bucket layouts of the scheduler's metrics, as upstream's
``pkg/scheduler/metrics/metrics.go`` has them (kept apart from ``metrics`` so that
module stays the registry and its methods)."""

from __future__ import annotations

from typing import Final

SUBSYSTEM: Final = "scheduler"


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
PLUGIN_BUCKETS: Final = exponential_buckets(0.00001, 1.5, 20)
"""One plugin at one extension point: 10 µs … ~22 ms, a small factor for resolution."""
SLI_BUCKETS: Final = exponential_buckets(0.01, 2, 20)
"""Queued-to-scheduled SLI: 10 ms … ~88 min."""
EVENT_HANDLING_BUCKETS: Final = EXTENSION_POINT_BUCKETS
"""Event handling latency: 0.1 ms … ~200 ms (upstream's extension-point layout)."""
PERMIT_WAIT_BUCKETS: Final = LATENCY_BUCKETS
"""Waiting on Permit: 1 ms … ~16 s."""

PLUGIN_METRICS_SAMPLE_PERCENT: Final = 10
"""Upstream pluginMetricsSamplePercent: the share of cycles whose plugins are timed."""
MAX_ATTEMPTS_LABEL: Final = 15
"""The SLI's ``attempts`` label is capped here (``15+``), as upstream's getAttemptsLabel."""

CACHE_NODES: Final = "nodes"
CACHE_PODS: Final = "pods"
CACHE_ASSUMED_PODS: Final = "assumed_pods"
"""Values of ``scheduler_scheduler_cache_size``'s ``type`` label."""

EVENT_POD_POPPED: Final = "PodPopped"
"""``scheduler_inflight_events``' event for pods popped and still being scheduled."""

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
