"""Where finished spans go: an OTLP/HTTP collector, a file of OTLP JSON lines, the console.

Why our own OTLP/HTTP exporter: the SDK's retries a refused connection with exponential
backoff and logs every failure, so a run pointed at a collector that is not there took
5x as long and printed a screenful of exporter logs (issue 26). ``QuietOtlpExporter``
posts each batch once with a short timeout; when the collector cannot be reached it says
so in one warning line, drops batches without trying for ``RETRY_AFTER`` seconds, then
tries again (saying nothing more until it has been reachable again). Spans are
best-effort telemetry: losing some never slows the scheduler.

``JsonLinesExporter`` writes what a collector's file exporter writes: one
``ExportTraceServiceRequest`` per line in OTLP's JSON encoding (lowerCamel field names,
trace and span ids as hex, enums as integers), readable by ``otelcol``'s ``otlpjsonfile``
receiver or ``jq``. ``console_exporter`` prints one line per span to stderr.
"""

from __future__ import annotations

import base64
import gzip as gzip_lib
import json
import logging
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Final

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SpanExporter, SpanExportResult

__all__ = [
    "EXPORT_TIMEOUT",
    "RETRY_AFTER",
    "JsonLinesExporter",
    "QuietOtlpExporter",
    "console_exporter",
    "otlp_json",
]

log = logging.getLogger(__name__)

#: Seconds one POST to the collector may take before the batch is given up.
EXPORT_TIMEOUT: Final = 2.0
#: Seconds batches are dropped untried after the collector could not be reached.
RETRY_AFTER: Final = 30.0
#: Fields of OTLP's JSON encoding that hold ids, hex-encoded (protobuf JSON has base64).
_ID_FIELDS: Final = frozenset({"traceId", "spanId", "parentSpanId"})


class QuietOtlpExporter(SpanExporter):
    """OTLP/HTTP protobuf, one attempt per batch, one warning line per outage."""

    def __init__(self, url: str, *, gzip: bool = False, timeout: float = EXPORT_TIMEOUT) -> None:
        self.url = url
        self.gzip = gzip
        self.timeout = timeout
        #: monotonic time before which batches are dropped untried (an outage)
        self._quiet_until = 0.0
        self._warned = False
        #: batches dropped because the collector could not be reached
        self.dropped_batches = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if time.monotonic() < self._quiet_until:
            self.dropped_batches += 1
            return SpanExportResult.FAILURE
        body = encode_spans(spans).SerializeToString()
        headers = {"Content-Type": "application/x-protobuf"}
        if self.gzip:
            body = gzip_lib.compress(body)
            headers["Content-Encoding"] = "gzip"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                response.read()
        except (OSError, urllib.error.URLError) as err:  # HTTPError is a URLError
            self.dropped_batches += 1
            self._quiet_until = time.monotonic() + RETRY_AFTER
            if not self._warned:
                self._warned = True
                reason = getattr(err, "reason", None) or err
                log.warning(
                    "tracing: cannot export spans to %s (%s); dropping spans, retrying every %g s",
                    self.url,
                    reason,
                    RETRY_AFTER,
                )
            return SpanExportResult.FAILURE
        self._warned = False
        return SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def _hex_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: base64.b64decode(v).hex() if k in _ID_FIELDS and isinstance(v, str) else _hex_ids(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_hex_ids(v) for v in value]
    return value


def otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """One ``ExportTraceServiceRequest`` in OTLP's JSON encoding."""
    from google.protobuf.json_format import MessageToDict

    doc = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    out: dict[str, Any] = _hex_ids(doc)
    return out


class JsonLinesExporter(SpanExporter):
    """Appends one OTLP JSON ``ExportTraceServiceRequest`` line per batch to ``path``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._file: IO[str] | None = self.path.open("a", encoding="utf-8")

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        line = json.dumps(otlp_json(spans), separators=(",", ":")) + "\n"
        with self._lock:
            if self._file is None:
                return SpanExportResult.FAILURE
            self._file.write(line)
            self._file.flush()
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def _one_line(span: ReadableSpan) -> str:
    ctx = span.context
    parent = f"{span.parent.span_id:016x}" if span.parent is not None else "-"
    ms = ((span.end_time or 0) - (span.start_time or 0)) / 1e6
    attrs = " ".join(f"{k}={v!r}" for k, v in (span.attributes or {}).items())
    trace_id = f"{ctx.trace_id:032x}" if ctx is not None else "-"
    span_id = f"{ctx.span_id:016x}" if ctx is not None else "-"
    return f"span {span.name} {ms:.3f} ms trace={trace_id} id={span_id} parent={parent} {attrs}\n"


def console_exporter(out: IO[str] | None = None) -> SpanExporter:
    """Spans printed one line each (name, duration, ids, attributes), to stderr."""
    return ConsoleSpanExporter(out=out or sys.stderr, formatter=_one_line)
