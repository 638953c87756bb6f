"""Values the scheduling queue stores and the pure rules it applies to them.

The queue never holds pod objects (they live in the store); it holds a
:class:`QueuedPodInfo` per pod: the fields that decide *where* the pod waits and *in
which order* it is popped. Everything here is Redis-free so the rules can be tested and
reused (the coordinator computes backoff the same way when it reports metrics).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import msgpack  # type: ignore[import-untyped]

from cluster_sched.api.evolve import evolve
from cluster_sched.errors import StoreError

__all__ = [
    "DEFAULT_POD_INITIAL_BACKOFF_SECONDS",
    "DEFAULT_POD_MAX_BACKOFF_SECONDS",
    "DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_SECONDS",
    "Location",
    "Popped",
    "PreEnqueue",
    "QueuedPodInfo",
    "SortKey",
    "backoff_duration",
    "priority_sort_key",
    "timestamp_tiebreak",
]

#: podInitialBackoffSeconds default: the backoff after the first failed attempt.
DEFAULT_POD_INITIAL_BACKOFF_SECONDS = 1.0
#: podMaxBackoffSeconds default: backoff doubles per attempt up to this.
DEFAULT_POD_MAX_BACKOFF_SECONDS = 10.0
#: podMaxInUnschedulablePodsDuration default: after this long without a helpful event an
#: unschedulable pod is retried anyway (5 minutes).
DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_SECONDS = 300.0

_WIRE_VERSION = 1
_EMPTY = frozenset[str]()


class Location(enum.StrEnum):
    """Where a queued pod is. The values are also the ``queue`` label of
    ``scheduler_queue_incoming_pods_total`` (``in-flight`` pods are not counted there)."""

    ACTIVE = "active"
    BACKOFF = "backoff"
    UNSCHEDULABLE = "unschedulable"
    IN_FLIGHT = "inflight"


@dataclass(frozen=True, slots=True)
class QueuedPodInfo:
    """A pod's place in the scheduling queue (upstream ``framework.QueuedPodInfo``).

    ``timestamp`` is when the pod was last (re-)added: the QueueSort tie-break and the
    base of its backoff. ``attempts`` counts pops. ``unschedulable_plugins`` are the
    plugins that rejected it in its last attempt (empty: it failed for an unknown
    reason, e.g. an error, and any event may help); ``pending_plugins`` rejected it with
    Pending. ``gated`` means a PreEnqueue plugin (``gating_plugin``) holds it back: it
    waits in the unschedulable pool and is never popped. ``nominated_node_name`` is the
    pod's ``status.nominatedNodeName``, restored into the nominator when it is queued.
    """

    pod_key: str
    priority: int = 0
    timestamp: float = 0.0
    attempts: int = 0
    initial_attempt_timestamp: float | None = None
    unschedulable_plugins: frozenset[str] = field(default_factory=frozenset)
    pending_plugins: frozenset[str] = field(default_factory=frozenset)
    gated: bool = False
    gating_plugin: str = ""
    nominated_node_name: str = ""

    def __post_init__(self) -> None:
        # The pod key ends the activeQ member after a NUL; a NUL inside it would let
        # one pod's member be mistaken for another's.
        if not self.pod_key or "\x00" in self.pod_key:
            raise ValueError(f"invalid pod key {self.pod_key!r}")

    @property
    def rejector_plugins(self) -> frozenset[str]:
        """Plugins whose events may make the pod schedulable again."""
        return self.unschedulable_plugins | self.pending_plugins

    def pack(self, initial_attempt_timestamp: float | None = None) -> bytes:
        """msgpack bytes (a versioned array), the form stored in Redis; with
        ``initial_attempt_timestamp``, those of this info with that field set (what
        entering activeQ records, without building the copy)."""
        return msgpack.packb(self.wire(initial_attempt_timestamp), use_bin_type=True)

    def wire(self, initial_attempt_timestamp: float | None = None) -> list[Any]:
        """The array :meth:`pack` encodes, for a caller packing many with one Packer."""
        initial = self.initial_attempt_timestamp
        return [
            _WIRE_VERSION,
            self.pod_key,
            self.priority,
            float(self.timestamp),
            self.attempts,
            initial if initial_attempt_timestamp is None else initial_attempt_timestamp,
            sorted(self.unschedulable_plugins),
            sorted(self.pending_plugins),
            self.gated,
            self.gating_plugin,
            self.nominated_node_name,
        ]

    @classmethod
    def unpack(
        cls, data: bytes, *, attempts: int | None = None, clear_rejectors: bool = False
    ) -> QueuedPodInfo:
        """Inverse of :meth:`pack`; a StoreError if the bytes are not one.

        ``attempts`` replaces the recorded count (the queue keeps the authoritative one
        beside the record) and ``clear_rejectors`` empties the rejecting plugins, as pop
        does for a new attempt: built in one step, because ``dataclasses.replace`` on
        every popped or read pod costs more than the decoding.
        """
        try:
            fields = msgpack.unpackb(data, raw=False)
            if not isinstance(fields, list) or not fields or fields[0] != _WIRE_VERSION:
                raise ValueError("not a version-1 QueuedPodInfo record")
            (_, pod_key, priority, timestamp, recorded, initial, unsched, pending) = fields[:8]
            gated, gating_plugin, nominated = fields[8:11]
            return cls(
                pod_key=str(pod_key),
                priority=int(priority),
                timestamp=float(timestamp),
                attempts=int(recorded if attempts is None else attempts),
                initial_attempt_timestamp=None if initial is None else float(initial),
                unschedulable_plugins=_EMPTY if clear_rejectors else frozenset(unsched),
                pending_plugins=_EMPTY if clear_rejectors else frozenset(pending),
                gated=bool(gated),
                gating_plugin=str(gating_plugin),
                nominated_node_name=str(nominated),
            )
        except (ValueError, TypeError, msgpack.UnpackException) as exc:
            raise StoreError(f"unreadable queued pod record: {exc}") from exc

    def with_gate(self, gating_plugin: str | None) -> QueuedPodInfo:
        """The info after PreEnqueue: gated by ``gating_plugin``, or released if None.

        As upstream, the gating plugin also joins ``unschedulable_plugins`` so that the
        events it registered release the pod.
        """
        if gating_plugin:
            return evolve(
                self,
                gated=True,
                gating_plugin=gating_plugin,
                unschedulable_plugins=self.unschedulable_plugins | {gating_plugin},
            )
        if not self.gated and not self.gating_plugin:
            return self  # immutable: nothing to release (every ungated pod, every add)
        return evolve(self, gated=False, gating_plugin="")


class Popped(NamedTuple):
    """One pod handed to a scheduling cycle: its info (attempts counting this pop,
    rejecting plugins cleared) and the cycle's number, which the failure handler
    passes back to ``add_unschedulable_if_not_present``."""

    info: QueuedPodInfo
    cycle: int


#: The QueueSort plugin's ordering: ``(score, tiebreak)``; activeQ pops the smallest
#: score, and equal scores by smallest ``tiebreak`` compared as UTF-8 bytes. It reads
#: the info's priority and timestamp only (upstream's Less compares those).
SortKey = Callable[[QueuedPodInfo], tuple[float, str]]

#: Runs the profile's PreEnqueue plugins for a pod: returns the name of the plugin that
#: gates it, or None when all pass.
PreEnqueue = Callable[[QueuedPodInfo], str | None]

# Twenty digits hold any non-negative int64 microsecond count; fixed width makes byte
# order equal numeric order.
_TIMESTAMP_DIGITS = 20


def timestamp_tiebreak(timestamp: float) -> str:
    """Fixed-width microseconds since the epoch: sorts as bytes in time order."""
    micros = round(timestamp * 1_000_000)
    if micros < 0:
        raise ValueError(f"queue timestamps must not be negative (got {timestamp})")
    return f"{micros:0{_TIMESTAMP_DIGITS}d}"


def priority_sort_key(info: QueuedPodInfo) -> tuple[float, str]:
    """PrioritySort: higher priority first, then earlier timestamp.

    ``-priority`` is exact as a double (priorities are int32), and the timestamp is a
    fixed-width microsecond string, so Redis' (score, member) order is exactly this
    rule; pod key breaks remaining ties deterministically.
    """
    return (-float(info.priority), timestamp_tiebreak(info.timestamp))


def backoff_duration(attempts: int, initial: float, maximum: float) -> float:
    """Backoff after ``attempts`` attempts: ``initial * 2**(attempts-1)`` capped at
    ``maximum``; a pod never attempted owes no backoff (upstream
    ``calculateBackoffDuration``)."""
    if attempts <= 0:
        return 0.0
    duration = initial
    for _ in range(attempts - 1):
        if duration > maximum - duration:  # doubling would pass the cap
            return maximum
        duration += duration
    return min(duration, maximum)
