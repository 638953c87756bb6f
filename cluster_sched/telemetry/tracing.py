"""Tracing facade: OpenTelemetry spans exported over OTLP/HTTP, to a file of OTLP JSON
lines, to the console (``telemetry.exporters``), or nothing at all.

Why a facade: the scheduling cycle opens a dozen spans per pod. With tracing off that must
cost ~nothing, so the disabled ``Tracing`` hands back shared singletons — one context
manager object and OpenTelemetry's own ``INVALID_SPAN`` (a non-recording span whose
methods are no-ops) — and allocates no span objects. ``benchmarks/tracing_overhead.py``
measures both modes. Callers that build attribute dicts should do so under
``if tracing.enabled:`` so the dict is not built either.

Trace context crosses process boundaries (Ray actors and tasks) as a plain
``dict[str, str]`` holding a W3C ``traceparent``: ``current_context_carrier()`` on the
sending side, ``context_from_carrier()`` (to continue as a child) or
``link_from_carrier()`` (to link an asynchronous follow-up, as the binding cycle does) on
the receiving side. Plain dicts survive any serialiser; nothing here needs pickle.

Each process sets up its own exporter: the coordinator with ``setup_tracing``, Ray
workers lazily with ``process_tracing`` (same endpoint resolution, cached per process).

We use a private ``TracerProvider`` rather than the global one: OpenTelemetry allows the
global provider to be set once per process, while tests (and a coordinator restarted
in-process) set tracing up more than once. The *context* is still OpenTelemetry's
process-wide contextvars context, so nesting works across our spans as usual.

Span names and attribute keys live in ``cluster_sched.telemetry.spans``.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Final

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from cluster_sched.telemetry.spans import TRACER_NAME

__all__ = [
    "DEFAULT_SERVICE_NAME",
    "ENDPOINT_ENV",
    "Attributes",
    "Tracing",
    "process_tracing",
    "resolve_endpoint",
    "setup_tracing",
    "traces_url",
]

DEFAULT_SERVICE_NAME: Final = "cluster-sched"
"""``service.name`` resource attribute when the caller names none."""
ENDPOINT_ENV: Final = "OTEL_EXPORTER_OTLP_ENDPOINT"
"""Standard OpenTelemetry variable holding the OTLP base URL (http://host:4318)."""
TRACES_PATH: Final = "/v1/traces"
"""Path of the OTLP/HTTP traces endpoint under the base URL."""

Attributes = Mapping[str, str | bool | int | float | Sequence[str] | Sequence[int]]
"""Span attribute values OpenTelemetry accepts."""

Parent = Context | Span | None
"""Where a new span hangs: an explicit context, a span, or (None) the current context."""

_PROPAGATOR: Final = TraceContextTextMapPropagator()
_NOOP_SPAN: Final[Span] = trace.INVALID_SPAN


class _NoopSpanContextManager(AbstractContextManager[Span]):
    """The one context manager a disabled ``Tracing.span`` returns, every time."""

    __slots__ = ()

    def __enter__(self) -> Span:
        return _NOOP_SPAN

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        return None


_NOOP_CM: Final = _NoopSpanContextManager()


def resolve_endpoint(endpoint: str | None) -> str | None:
    """The OTLP base URL to use: the argument, else $OTEL_EXPORTER_OTLP_ENDPOINT, else None.

    An empty string (flag or env) means "off", so a deployment can disable tracing
    without unsetting a variable.
    """
    if endpoint is None:
        endpoint = os.environ.get(ENDPOINT_ENV)
    endpoint = (endpoint or "").strip()
    return endpoint or None


def traces_url(endpoint: str) -> str:
    """``http://host:4318`` → ``http://host:4318/v1/traces``; a full traces URL is kept."""
    base = endpoint.rstrip("/")
    return base if base.endswith(TRACES_PATH) else base + TRACES_PATH


class Tracing:
    """Tracing switched off. Every method is a no-op returning shared singletons.

    ``setup_tracing`` returns this when there is no endpoint, and ``OtlpTracing`` (the
    enabled subclass) otherwise; callers hold a ``Tracing`` and never branch on the type.
    """

    __slots__ = ()

    enabled: bool = False
    """True when spans are recorded and exported; guard costly attribute building on it."""

    def span(
        self,
        name: str,
        attributes: Attributes | None = None,
        links: Sequence[Link | None] | None = None,
        *,
        parent: Parent = None,
        kind: SpanKind = SpanKind.INTERNAL,
    ) -> AbstractContextManager[Span]:
        """Open a span as the current one for the ``with`` block, and end it on exit.

        An exception leaving the block is recorded on the span and sets its status to
        ERROR, then propagates. ``links`` may hold None entries (what
        ``link_from_carrier`` returns for an empty carrier); they are dropped.
        """
        return _NOOP_CM

    def start_span(
        self,
        name: str,
        attributes: Attributes | None = None,
        links: Sequence[Link | None] | None = None,
        *,
        parent: Parent = None,
        kind: SpanKind = SpanKind.INTERNAL,
        start_time_ns: int | None = None,
    ) -> Span:
        """Start a span without making it current; end it with ``end``.

        For spans whose start and end are not one block: the cycle root, which opens at
        queue pop and closes after Permit, or a span started retroactively at a known time.
        """
        return _NOOP_SPAN

    def end(self, span: Span, end_time_ns: int | None = None) -> None:
        """End a span from ``start_span``."""

    def use_span(self, span: Span) -> AbstractContextManager[Any]:
        """Make ``span`` current for a block (so children nest under it) without ending it."""
        return _NOOP_CM

    def set_error(self, span: Span, description: str) -> None:
        """Mark ``span`` failed: an unschedulable pod is not an error, an internal fault is."""

    def current_context_carrier(self) -> dict[str, str]:
        """The current trace context as ``{"traceparent": ...}``; empty when off."""
        return {}

    def carrier_of(self, span: Span) -> dict[str, str]:
        """``span``'s context as a carrier, whether or not it is current (or ended)."""
        return {}

    def context_from_carrier(self, carrier: Mapping[str, str] | None) -> Context | None:
        """A context to pass as ``parent=`` so the new span continues the sender's trace."""
        return None

    def link_from_carrier(
        self, carrier: Mapping[str, str] | None, attributes: Attributes | None = None
    ) -> Link | None:
        """A link to the span in ``carrier``, or None when the carrier holds no trace."""
        return None

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Export every finished span now; True when the exporter accepted them."""
        return True

    def shutdown(self) -> None:
        """Flush and stop the exporter. Idempotent."""


DISABLED: Final = Tracing()
"""The shared disabled instance."""


class OtlpTracing(Tracing):
    """Tracing switched on: spans batched and exported over OTLP/HTTP protobuf (``endpoint``),
    appended to ``trace_file`` as OTLP JSON lines and/or printed (``console``)."""

    __slots__ = ("_closed", "_lock", "_provider", "_tracer", "endpoint")

    enabled = True

    def __init__(
        self,
        endpoint: str | None,
        service_name: str = DEFAULT_SERVICE_NAME,
        *,
        sampling_rate_per_million: int | None = None,
        gzip: bool = False,
        resource_attributes: Attributes | None = None,
        trace_file: str | None = None,
        console: bool = False,
    ) -> None:
        # Imported here so a process with tracing off never loads the SDK and exporter.
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

        from cluster_sched.telemetry.exporters import (
            JsonLinesExporter,
            QuietOtlpExporter,
            console_exporter,
        )

        self.endpoint = traces_url(endpoint) if endpoint else None
        sampler = None
        if sampling_rate_per_million is not None:
            if not 0 <= sampling_rate_per_million <= 1_000_000:
                raise ValueError(
                    f"sampling_rate_per_million must be in [0, 1000000], got {sampling_rate_per_million}"
                )
            sampler = ParentBased(TraceIdRatioBased(sampling_rate_per_million / 1_000_000))
        resource = Resource.create({"service.name": service_name, **(resource_attributes or {})})
        self._provider = TracerProvider(resource=resource, sampler=sampler, shutdown_on_exit=False)
        exporters: list[Any] = []
        if self.endpoint is not None:
            exporters.append(QuietOtlpExporter(self.endpoint, gzip=gzip))
        if trace_file:
            exporters.append(JsonLinesExporter(trace_file))
        if console:
            exporters.append(console_exporter())
        for exporter in exporters:
            self._provider.add_span_processor(BatchSpanProcessor(exporter))
        self._tracer = self._provider.get_tracer(TRACER_NAME)
        self._lock = threading.Lock()
        self._closed = False
        atexit.register(self.shutdown)

    def span(
        self,
        name: str,
        attributes: Attributes | None = None,
        links: Sequence[Link | None] | None = None,
        *,
        parent: Parent = None,
        kind: SpanKind = SpanKind.INTERNAL,
    ) -> AbstractContextManager[Span]:
        return self._tracer.start_as_current_span(
            name,
            context=_as_context(parent),
            kind=kind,
            attributes=attributes,
            links=_real_links(links),
            record_exception=True,
            set_status_on_exception=True,
        )

    def start_span(
        self,
        name: str,
        attributes: Attributes | None = None,
        links: Sequence[Link | None] | None = None,
        *,
        parent: Parent = None,
        kind: SpanKind = SpanKind.INTERNAL,
        start_time_ns: int | None = None,
    ) -> Span:
        return self._tracer.start_span(
            name,
            context=_as_context(parent),
            kind=kind,
            attributes=attributes,
            links=_real_links(links),
            start_time=start_time_ns,
        )

    def end(self, span: Span, end_time_ns: int | None = None) -> None:
        span.end(end_time=end_time_ns)

    def use_span(self, span: Span) -> AbstractContextManager[Any]:
        return trace.use_span(span, end_on_exit=False)

    def set_error(self, span: Span, description: str) -> None:
        span.set_status(Status(StatusCode.ERROR, description))

    def current_context_carrier(self) -> dict[str, str]:
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier)
        return carrier

    def carrier_of(self, span: Span) -> dict[str, str]:
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier, context=trace.set_span_in_context(span))
        return carrier

    def context_from_carrier(self, carrier: Mapping[str, str] | None) -> Context | None:
        if not carrier:
            return None
        return _PROPAGATOR.extract(carrier)

    def link_from_carrier(
        self, carrier: Mapping[str, str] | None, attributes: Attributes | None = None
    ) -> Link | None:
        if not carrier:
            return None
        span_context = trace.get_current_span(_PROPAGATOR.extract(carrier)).get_span_context()
        if not span_context.is_valid:
            return None
        return Link(span_context, attributes)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self._provider.force_flush(timeout_millis)

    def shutdown(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        atexit.unregister(self.shutdown)
        self._provider.shutdown()


def _as_context(parent: Parent) -> Context | None:
    if parent is None or isinstance(parent, Context):
        return parent
    return trace.set_span_in_context(parent)


def _real_links(links: Sequence[Link | None] | None) -> list[Link] | None:
    if not links:
        return None
    return [link for link in links if link is not None]


def setup_tracing(
    endpoint: str | None,
    service_name: str = DEFAULT_SERVICE_NAME,
    *,
    sampling_rate_per_million: int | None = None,
    gzip: bool = False,
    resource_attributes: Attributes | None = None,
    trace_file: str | None = None,
    console: bool = False,
) -> Tracing:
    """Tracing to ``endpoint`` (from ``--otlp-endpoint``), else $OTEL_EXPORTER_OTLP_ENDPOINT,
    and/or to ``trace_file`` (``--trace-file``: OTLP JSON lines) and the console
    (``--trace-console``: a line per span on stderr).

    ``endpoint`` is the OTLP base URL (``http://localhost:4318``); spans go to
    ``/v1/traces`` under it. With no target at all, returns the shared disabled instance.
    ``sampling_rate_per_million`` mirrors upstream's TracingConfiguration: None samples
    every root (or defers to $OTEL_TRACES_SAMPLER), a number samples that many roots per
    million and children follow their parent's decision.
    """
    resolved = resolve_endpoint(endpoint)
    if resolved is None and not trace_file and not console:
        return DISABLED
    return OtlpTracing(
        resolved,
        service_name,
        sampling_rate_per_million=sampling_rate_per_million,
        gzip=gzip,
        resource_attributes=resource_attributes,
        trace_file=trace_file,
        console=console,
    )


_process_lock = threading.Lock()
_process_tracing: Tracing | None = None


def process_tracing(
    endpoint: str | None = None, service_name: str = DEFAULT_SERVICE_NAME
) -> Tracing:
    """This process's tracing, set up on first call and reused after.

    For code that runs in Ray workers (binding tasks, shard actors): the worker process
    outlives any one task, so it keeps one exporter instead of one per task. Later calls
    return the first instance whatever arguments they pass.
    """
    global _process_tracing
    with _process_lock:
        if _process_tracing is None:
            _process_tracing = setup_tracing(endpoint, service_name)
        return _process_tracing
