"""A real OTLP/HTTP trace receiver for tests: what Jaeger would get, decoded to plain values.

Tests of tracing must see exactly what leaves the process over the wire — parenting,
links and attributes included — without running Jaeger. This is a threaded
``http.server`` on 127.0.0.1 (a free port) that accepts ``POST /v1/traces`` carrying a
protobuf ``ExportTraceServiceRequest`` (gzip or deflate ``Content-Encoding`` honoured; OTLP
JSON accepted too) and keeps every span as a frozen ``ReceivedSpan``.

Usage::

    with OtlpReceiver() as rx:
        tracing = setup_tracing(rx.endpoint)
        ...
        spans = rx.wait_for(lambda spans: any(s.name == "bindingCycle" for s in spans))

``wait_for`` is a liveness bound, not a timing assertion: it returns as soon as the
predicate holds and only fails when nothing arrives at all within the (generous) timeout.
"""

from __future__ import annotations

import gzip
import threading
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

__all__ = ["DEFAULT_WAIT_SECONDS", "OtlpReceiver", "ReceivedSpan"]

DEFAULT_WAIT_SECONDS: Final = 30.0
"""Upper bound ``wait_for`` waits by default; generous because CI machines stall."""
TRACES_PATH: Final = "/v1/traces"


@dataclass(frozen=True, slots=True)
class ReceivedSpan:
    """One exported span, ids as lowercase hex (``parent_span_id`` is "" for a root)."""

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    attributes: Mapping[str, Any]
    links: tuple[tuple[str, str], ...]
    """(trace_id, span_id) of each linked span."""
    service_name: str
    kind: int
    status_code: int
    """0 unset, 1 ok, 2 error (OTLP ``Status.StatusCode``)."""
    start_time_ns: int
    end_time_ns: int
    scope: str
    """Instrumentation scope (tracer) name."""

    @property
    def is_root(self) -> bool:
        return not self.parent_span_id


def _any_value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return tuple(_any_value(v) for v in value.array_value.values)
    if kind == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    return getattr(value, kind)


def _attributes(pairs: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    kv: KeyValue
    for kv in pairs:
        out[kv.key] = _any_value(kv.value)
    return out


def decode_request(request: ExportTraceServiceRequest) -> list[ReceivedSpan]:
    """Flatten resource → scope → span nesting into ``ReceivedSpan`` values."""
    spans: list[ReceivedSpan] = []
    for resource_spans in request.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        service = str(resource.get("service.name", ""))
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    ReceivedSpan(
                        name=span.name,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        attributes=_attributes(span.attributes),
                        links=tuple(
                            (link.trace_id.hex(), link.span_id.hex()) for link in span.links
                        ),
                        service_name=service,
                        kind=span.kind,
                        status_code=span.status.code,
                        start_time_ns=span.start_time_unix_nano,
                        end_time_ns=span.end_time_unix_nano,
                        scope=scope_spans.scope.name,
                    )
                )
    return spans


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        if self.path.split("?", 1)[0] != TRACES_PATH:
            self._reply(404, b"not found", "text/plain")
            return
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            encoding = (self.headers.get("Content-Encoding") or "").lower()
            if encoding == "gzip":
                body = gzip.decompress(body)
            elif encoding == "deflate":
                body = zlib.decompress(body)
            content_type = (self.headers.get("Content-Type") or "").split(";", 1)[0].strip()
            if content_type == "application/json":
                request = json_format.Parse(body, ExportTraceServiceRequest())
            else:
                request = ExportTraceServiceRequest.FromString(body)
        except Exception as exc:  # a malformed export is the test's finding, not a crash
            self.server.receiver._record_error(f"{type(exc).__name__}: {exc}")
            self._reply(400, str(exc).encode(), "text/plain")
            return
        self.server.receiver._add(decode_request(request))
        self._reply(200, ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf")

    def _reply(self, code: int, payload: bytes, content_type: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        return


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    receiver: OtlpReceiver


class OtlpReceiver:
    """In-process OTLP/HTTP traces endpoint; a context manager that starts and stops it."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._host = host
        self._port = port
        self._cond = threading.Condition()
        self._spans: list[ReceivedSpan] = []
        self._errors: list[str] = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> OtlpReceiver:
        if self._server is not None:
            return self
        server = _Server((self._host, self._port), _Handler)
        server.receiver = self
        self._server = server
        # A short poll interval keeps stop() quick; serve_forever checks it between polls.
        self._thread = threading.Thread(
            target=server.serve_forever, args=(0.05,), name="otlp-receiver", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> OtlpReceiver:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- where to send -----------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("OtlpReceiver is not started")
        return int(self._server.server_address[1])

    @property
    def endpoint(self) -> str:
        """OTLP base URL, as ``--otlp-endpoint`` / $OTEL_EXPORTER_OTLP_ENDPOINT take it."""
        return f"http://{self._host}:{self.port}"

    # --- what arrived ------------------------------------------------------------------

    def spans(self) -> list[ReceivedSpan]:
        """Every span received so far, in arrival order."""
        with self._cond:
            return list(self._spans)

    def errors(self) -> list[str]:
        """Decode failures of malformed exports (each answered with HTTP 400)."""
        with self._cond:
            return list(self._errors)

    def clear(self) -> None:
        with self._cond:
            self._spans.clear()
            self._errors.clear()

    def wait_for(
        self,
        predicate: Callable[[list[ReceivedSpan]], bool],
        timeout: float = DEFAULT_WAIT_SECONDS,
    ) -> list[ReceivedSpan]:
        """Block until ``predicate(spans)`` holds and return the spans; TimeoutError if not."""
        with self._cond:
            if self._cond.wait_for(lambda: predicate(list(self._spans)), timeout):
                return list(self._spans)
            names = sorted({s.name for s in self._spans})
        raise TimeoutError(f"spans never satisfied the predicate; received names: {names}")

    def _add(self, spans: list[ReceivedSpan]) -> None:
        with self._cond:
            self._spans.extend(spans)
            self._cond.notify_all()

    def _record_error(self, message: str) -> None:
        with self._cond:
            self._errors.append(message)
            self._cond.notify_all()
