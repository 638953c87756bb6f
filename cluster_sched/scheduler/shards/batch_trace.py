"""The spans of one batch sent to every shard at once (the reduced protocol, ``pipeline``,
and the prefetched first Filter questions, ``prefetch``).

A batch is a ``shardBatch`` span, a root (it is sent at a pop, or ahead of one, not by
one pod's cycle), with its pod, chunk and shard counts; each call of it (one per shard
and chunk) is a ``shardCall`` child from its submission until its reply is read, with
the bytes sent and received as the protocol's counters count them. The span of each pod
whose attempt read an answer of the batch links to the batch (``link``): pods are still
committed one at a time, in their own cycles, so a link, not a parent. Calls whose
answers were never read (a batch dropped, ``pipeline``) end when the batch does, marked
unread. Built only while tracing is on (``start`` gives None otherwise): the untraced
protocol pays one ``is None`` test per call.
"""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span

from cluster_sched.telemetry.spans import (
    ATTR_BATCH_CHUNKS,
    ATTR_BATCH_PODS,
    ATTR_BYTES_RECEIVED,
    ATTR_BYTES_SENT,
    ATTR_CHUNK,
    ATTR_PHASE,
    ATTR_SHARD_COUNT,
    ATTR_SHARD_ID,
    SHARD_BATCH,
    SHARD_CALL,
)
from cluster_sched.telemetry.tracing import Tracing

__all__ = ["ATTR_UNREAD", "BatchTrace"]

ATTR_UNREAD = "scheduler.batch.unread"
"""On a shardCall of a batch whose reply was never read (the batch was dropped)."""


class BatchTrace:
    """A ``shardBatch`` span and its open ``shardCall`` children (module docstring)."""

    __slots__ = ("_calls", "_closed", "_kind", "_tracing", "span")

    def __init__(self, tracing: Tracing, kind: str, pods: int, chunks: int, shards: int) -> None:
        self._tracing = tracing
        self._kind = kind
        self.span: Span = tracing.start_span(
            SHARD_BATCH,
            {
                ATTR_PHASE: kind,
                ATTR_BATCH_PODS: pods,
                ATTR_BATCH_CHUNKS: chunks,
                ATTR_SHARD_COUNT: shards,
            },
            parent=Context(),  # a root: see the module docstring
        )
        self._calls: dict[tuple[int, int], Span] = {}
        self._closed = False

    @staticmethod
    def start(
        tracing: Tracing, kind: str, pods: int, chunks: int, shards: int
    ) -> BatchTrace | None:
        """The batch's trace, or None while tracing is off."""
        if not tracing.enabled:
            return None
        return BatchTrace(tracing, kind, pods, chunks, shards)

    def call(self, chunk: int, shard: int, sent: int | None = None) -> None:
        """Shard ``shard`` was sent chunk ``chunk`` (``sent`` bytes, when known)."""
        attrs: dict[str, str | int] = {
            ATTR_PHASE: self._kind,
            ATTR_SHARD_ID: shard,
            ATTR_CHUNK: chunk,
        }
        if sent is not None:
            attrs[ATTR_BYTES_SENT] = sent
        self._calls[(chunk, shard)] = self._tracing.start_span(SHARD_CALL, attrs, parent=self.span)

    def answered(
        self, chunk: int, shard: int, received: int | None = None, error: str | None = None
    ) -> None:
        """The reply of shard ``shard`` to chunk ``chunk`` was read (or was an error)."""
        span = self._calls.pop((chunk, shard), None)
        if span is None:
            return
        if received is not None:
            span.set_attribute(ATTR_BYTES_RECEIVED, received)
        if error is not None:
            self._tracing.set_error(span, error)
        self._tracing.end(span)

    def link(self) -> None:
        """The current span (the cycle of a pod that read the batch's answer) links to
        the batch."""
        current = trace.get_current_span()
        if current.is_recording():
            current.add_link(self.span.get_span_context())

    def close(self) -> None:
        """End the calls still open (never read: marked) and the batch span. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for span in self._calls.values():
            span.set_attribute(ATTR_UNREAD, True)
            self._tracing.end(span)
        self._calls.clear()
        self._tracing.end(self.span)
