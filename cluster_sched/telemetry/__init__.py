"""Telemetry: OpenTelemetry tracing exported over OTLP, and Prometheus metrics.

Both cost nothing when switched off: ``setup_tracing(None)`` and ``Metrics.disabled()``
return instances whose methods are no-ops, so the scheduling cycle calls them
unconditionally. Span names and attribute keys are in ``spans``.
"""

from cluster_sched.telemetry.metrics import Metrics
from cluster_sched.telemetry.tracing import Tracing, process_tracing, setup_tracing

__all__ = ["Metrics", "Tracing", "process_tracing", "setup_tracing"]
